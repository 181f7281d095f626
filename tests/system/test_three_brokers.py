"""A floor on a three-broker KRaft cluster (issue 25) survives its brokers dying one at a time.

The test starts its own cluster with the project's script (``kafka.sh start --brokers 3``: three combined
broker+controller nodes on free ports, data in a tmp dir, plain listeners; replication 3 and
``min.insync.replicas`` 2 for every topic and the internal ones), creates the floor's topics replicated three
times, runs one instance of every service as its own process and deals a short floor at four tables
(:func:`croupier.chaos.run_chaos` with broker faults only). Meanwhile nodes are killed with ``kill -9`` and
restarted 2–5 s later, one node down at a time, the first the active KRaft controller (the floor stops after
its rounds and one kill). Then, from the raw
topics alone (:mod:`croupier.rawcheck`, which uses nothing of the services): nothing lost or doubled, no seq
held twice or missing, the ledger equal to the settlements, every round opened was settled; ``croupier audit``
clean and a fresh projection replica's ledger equal; and the longest stall of any table around a broker kill
below :data:`STALL_BOUND_S`.

Size: ``CROUPIER_3B_ROUNDS`` (default 6 rounds), ``CROUPIER_3B_SECONDS`` (bound on the floor, 300; in a
parallel CI run beside other system tests it dealt 7 rounds in 509 s, every invariant clean). Time: the
cluster's start dominates (three JVMs at once: 112 s on the loaded machine, where the whole test took 14 min
for 4 rounds; on a quiet one the JVMs start in seconds, not measured here).
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest

from croupier.chaos import ChaosConfig, report_lines, run_chaos
from tests.system.conftest import SECURITY_ENV

ROUNDS = int(os.environ.get("CROUPIER_3B_ROUNDS", "6"))
#: the longest stall (s) a table may show around a broker kill. What it is made of: the killed node's
#: partitions move their leadership once the controller sees its session lapse (broker.session.timeout.ms
#: 9 s; a killed active controller costs a KRaft election first), the consumer groups whose coordinator was on
#: it rejoin (aiokafka rebalances eagerly: every task of the service is revoked and restored). Measured: 68.8 s
#: (fault: the active controller; the restore wave after it: median 67 s) on the two-core machine shared with
#: seven other engineers' work, load average 30-47. Not yet measured on a quiet machine.
STALL_BOUND_S = float(os.environ.get("CROUPIER_3B_STALL_BOUND_S", "90"))


def _free_base(span: int = 6) -> int:
    """A port p with p..p+span-1 free on 127.0.0.1 (the three nodes' client and controller ports)."""
    for _ in range(200):
        base = 29200 + (uuid.uuid4().int % 700) * 1
        socks = []
        try:
            for p in range(base, base + span):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no six free ports in 29200-29906")


@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java 17+ to run the brokers (infra/kafka/kafka.sh)")
async def test_a_floor_on_three_brokers_loses_nothing_when_they_die_one_at_a_time(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch):
    # three JVMs starting at once on a shared two-core machine took up to 5 minutes (kafka.sh: 240 s for a node)
    monkeypatch.setenv("KAFKA_START_TIMEOUT", os.environ.get("KAFKA_START_TIMEOUT", "600"))
    # the cluster is plain: the session broker's security settings (CI's SASL_SSL) are not for it, nor for
    # the service processes started under it
    for name in SECURITY_ENV:
        monkeypatch.delenv(name, raising=False)
    cfg = ChaosConfig(bootstrap="", prefix=f"threeb{uuid.uuid4().hex[:8]}.", rounds=ROUNDS, min_faults=1,
                      max_seconds=float(os.environ.get("CROUPIER_3B_SECONDS", "300")), tables=4, instances=1,
                      seed=5, fault_gap_s=(4.0, 6.0), own_broker=_free_base(), brokers=3,
                      broker_dir=tmp_path / "kafka", fault_kinds=("broker",), workdir=tmp_path / "run",
                      replica_port=18000 + uuid.uuid4().int % 1000)
    lines: list[str] = []
    res = await run_chaos(cfg, out=lines.append)
    report = "\n".join(lines + report_lines(res))
    kills = [f for f in res.faults if f.kind in ("controller_kill9", "broker_kill9")]
    assert kills and kills[0].kind == "controller_kill9", report
    r = res.raw
    assert r.rounds_settled >= ROUNDS and r.rounds_opened == r.rounds_settled, report
    assert (r.lost, r.doubled, r.seq_conflicts, r.ledger_diff_cents) == (0, 0, 0, 0), report
    assert dict(r.broken_rejections) == {} and dict(r.dlq_records) == {} and r.undecodable == 0, report
    assert r.bets_accepted == r.bets_settled > 0, report
    assert res.audit_clean and res.replica_diff_cents == 0 and res.floor_errors == [], report
    assert res.stall_p99_s <= STALL_BOUND_S, report
