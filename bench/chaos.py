"""Chaos benchmark (issue 8): every service instance its own process, a floor at full speed, seeded faults,
then an independent check of the raw topics, ``croupier audit`` and a fresh projection replica.

Run: ``.venv/bin/python bench/chaos.py [--rounds 300] [--faults 15] [--max-seconds 600] [--tables 6]
[--instances 2] [--seed 1] [--fault-kinds K1,K2] [--own-broker PORT] [--brokers N] [--bootstrap HOST:PORT]
[--prefix P] [--keep-topics]``
(bootstrap default: ``KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:19092``; ``--own-broker PORT`` starts a
broker of this run's own on PORT (controller on PORT+1, data in /tmp/croupier-chaos-kafka-PORT, emptied when
the run starts and kept after it), kills it once with ``kill -9`` mid-run, and stops it at the end; the
shared broker is never touched; ``--brokers 3`` makes it a three-node KRaft cluster from ``kafka.sh start
--brokers 3`` (nodes on PORT, PORT+2, PORT+4, default PORT 29100; replication 3, min ISR 2) whose nodes are
killed with ``kill -9`` and restarted one at a time, the active controller every other time).

What it does and how the stall is measured: :mod:`croupier.chaos`; what is checked: :mod:`croupier.rawcheck`.
The last line is exactly ``chaos: rounds=<n> faults=<k> lost=<x> doubled=<y> seq_conflicts=<z>
ledger_diff_cents=<c> audit=<clean|dirty> stall_p99_s=<s>``. Exit status 0 only when every figure is zero,
the audit clean, the replica's ledger equal to the published one, no broken-floor rejection or dead letter,
and at least ``--rounds`` rounds were settled; 1 otherwise.

At the end the run's topics and consumer groups are deleted from the shared broker when the run passed
(``--keep-topics`` keeps them); a failed run keeps them for the investigation and says how to delete them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from croupier.chaos import ChaosConfig, report_lines, run_chaos
from croupier.chaos_model import FAULT_WEIGHTS
from croupier.topics import cleanup
from services.runtime.settings import Settings


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    if not (os.environ.get("CROUPIER_VAULT_KEYS") or os.environ.get("CROUPIER_VAULT_KEY_FILE")):
        import secrets

        from contracts.vault import new_key_entry

        # a vault key for this run only, inherited by every shoe service process it starts
        os.environ["CROUPIER_VAULT_KEYS"] = new_key_entry("chaos-1", secrets.token_bytes(32))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=300, help="rounds to settle before stopping (default 300)")
    ap.add_argument("--faults", type=int, default=15, help="faults to inject before stopping (default 15)")
    ap.add_argument("--max-seconds", type=float, default=600.0, help="stop the floor after this long (default 600)")
    ap.add_argument("--tables", type=int, default=6)
    ap.add_argument("--instances", type=int, default=2, help="instances of each service (default 2)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the faults and the players")
    ap.add_argument("--fault-gap", type=float, nargs=2, default=(2.0, 6.0), metavar=("MIN_S", "MAX_S"))
    ap.add_argument("--own-broker", type=int, default=None, metavar="PORT")
    ap.add_argument("--brokers", type=int, default=1, help="nodes of the own broker: a KRaft cluster whose nodes are "
                    "killed and restarted one at a time (default 1; >1 implies --own-broker 29100)")
    ap.add_argument("--fault-kinds", default=None, metavar="K1,K2",
                    help="inject only these kinds, drawn uniformly (e.g. broker, kill9, sigterm, sigstop; default: "
                    "every kind with its weight, croupier.chaos_model.FAULT_WEIGHTS)")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    ap.add_argument("--prefix", default=None, help="topic prefix (default: a new chaos<hex>.)")
    ap.add_argument("--replica-port", type=int, default=18931)
    ap.add_argument("--keep-topics", action="store_true", help="do not delete this run's topics at the end")
    a = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in a.fault_kinds.split(",")) if a.fault_kinds else None
    known = {*FAULT_WEIGHTS, "sigstop_long", "broker"}
    if kinds is not None and (bad := [k for k in kinds if k not in known]):  # an unknown kind would inject nothing
        ap.error(f"--fault-kinds: unknown {', '.join(bad)}; known: {', '.join(sorted(known))}")
    if kinds is not None and "broker" in kinds and a.own_broker is None and a.brokers == 1:
        ap.error("--fault-kinds broker kills this run's own broker: add --own-broker PORT or --brokers N")
    prefix = a.prefix or f"chaos{uuid.uuid4().hex[:8]}."
    if not prefix.endswith("."):
        prefix += "."
    cfg = ChaosConfig(bootstrap=a.bootstrap, prefix=prefix, rounds=a.rounds, min_faults=a.faults,
                      max_seconds=a.max_seconds, tables=a.tables, instances=a.instances, seed=a.seed,
                      fault_gap_s=tuple(a.fault_gap), own_broker=a.own_broker, replica_port=a.replica_port,
                      brokers=a.brokers,
                      fault_kinds=kinds)
    if a.brokers > 1 and a.own_broker is None:
        a.own_broker = cfg.own_broker = 29100
    # a SIGTERM (a CI timeout, `kill`) stops the run as Ctrl-C does: the harness's finally blocks stop every
    # process it started (they run in sessions of their own, so no signal reaches them otherwise)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        res = asyncio.run(run_chaos(cfg, out=lambda s: print(s, flush=True)))
    except KeyboardInterrupt:
        print("chaos: interrupted; every process this run started was stopped", file=sys.stderr, flush=True)
        return 130
    if a.own_broker is None:  # an own broker was stopped with its data (/tmp/croupier-chaos-kafka-PORT)
        settings = replace(Settings.from_env(), bootstrap_servers=a.bootstrap, topic_prefix=prefix)
        asyncio.run(cleanup(settings, prefix, keep=a.keep_topics or not res.ok,
                            out=lambda s: print(s, flush=True)))
    for line in report_lines(res):  # the chaos: line stays the last
        print(line, flush=True)
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
