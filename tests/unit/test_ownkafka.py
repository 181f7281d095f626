"""The own-broker helpers of the chaos bench and the three-broker test (croupier.ownkafka), and the replication
factor a floor's topics get (croupier.topics.replication_from_env)."""

from __future__ import annotations

from pathlib import Path

import pytest

from croupier.ownkafka import OwnKafka
from croupier.topics import replication_from_env

# Shortened from a real three-node run (Kafka 4.4): node 1 won epoch 3, node 3 follows it; node 2 had led epoch 1.
LEADER = ("[2026-12-03T20:10:12,125] INFO  [RaftManager id={n}] Completed transition to Leader(localVoterNode="
          "VoterNode(voterKey=ReplicaKey(id={n}, directoryId=ytrj)), epoch={e}, epochStartOffset=1) from "
          "CandidateState(localId={n}, epoch={e}, electionTimeoutMs=1519) (org.apache.kafka.raft.QuorumState)")
FOLLOWER = ("[2026-12-03T20:10:13,006] INFO  [RaftManager id={n}] Completed transition to FollowerState("
            "fetchTimeoutMs=2000, epoch={e}, leader={l}, leaderEndpoints=Endpoints(endpoints={{}}), voters=[1, 2, 3]) "
            "from UnattachedState(epoch={e}, leaderId=OptionalInt.empty) (org.apache.kafka.raft.QuorumState)")
UNATTACHED = ("[2026-12-03T20:10:14,000] INFO  [RaftManager id={n}] Completed transition to UnattachedState(epoch={e}, "
              "leaderId=OptionalInt.empty, voters=[1, 2, 3]) from FollowerState(epoch=3, leader=1) (x)")


def _logs(root: Path, per_node: dict[int, list[str]]) -> OwnKafka:
    k = OwnKafka(29100, root, brokers=3)
    for node, lines in per_node.items():
        (root / f"node-{node}" / "logs").mkdir(parents=True)
        (root / f"node-{node}" / "logs" / "server.log").write_text("\n".join(lines) + "\n")
    return k


def test_active_controller_is_the_leader_of_the_highest_epoch(tmp_path: Path):
    k = _logs(tmp_path, {1: [LEADER.format(n=1, e=3)], 2: [LEADER.format(n=2, e=1), FOLLOWER.format(n=2, e=3, l=1)],
                         3: [FOLLOWER.format(n=3, e=3, l=1)]})
    assert k.active_controller() == 1


def test_a_follower_names_a_newer_leader_whose_own_log_is_gone(tmp_path: Path):
    # node 1 led epoch 3, was killed; node 2 won epoch 4 (its log rotated away), node 3 follows it
    k = _logs(tmp_path, {1: [LEADER.format(n=1, e=3)], 3: [FOLLOWER.format(n=3, e=4, l=2),
                                                          UNATTACHED.format(n=3, e=5)]})
    assert k.active_controller() == 2


def test_no_leader_yet(tmp_path: Path):
    assert _logs(tmp_path, {1: [UNATTACHED.format(n=1, e=0)]}).active_controller() is None
    assert OwnKafka(29100, tmp_path / "none", brokers=3).active_controller() is None


def test_ports_bootstrap_and_dirs(tmp_path: Path):
    k = OwnKafka(29100, tmp_path, brokers=3)
    assert k.bootstrap == "127.0.0.1:29100,127.0.0.1:29102,127.0.0.1:29104"
    assert k.node_dir(2) == tmp_path / "node-2" and k.env["KAFKA_CONTROLLER_PORT"] == "29101"
    one = OwnKafka(29100, tmp_path, brokers=1)
    assert one.bootstrap == "127.0.0.1:29100" and one.node_dir(1) == tmp_path
    with pytest.raises(ValueError):
        k.start_node(4)
    with pytest.raises(ValueError):
        OwnKafka(29100, tmp_path, brokers=0)


@pytest.mark.parametrize(("brokers", "env", "want"), [
    (1, {}, 1), (2, {}, 2), (3, {}, 3), (5, {}, 3), (0, {}, 1),
    (3, {"CROUPIER_REPLICATION_FACTOR": "2"}, 2), (1, {"CROUPIER_REPLICATION_FACTOR": " 1 "}, 1),
])
def test_replication_follows_the_cluster_size(brokers: int, env: dict[str, str], want: int):
    assert replication_from_env(brokers, env) == want


@pytest.mark.parametrize("raw", ["three", "0", "4", "-1"])
def test_a_bad_replication_factor_is_refused(raw: str):
    with pytest.raises(ValueError, match="CROUPIER_REPLICATION_FACTOR"):
        replication_from_env(3, {"CROUPIER_REPLICATION_FACTOR": raw})
