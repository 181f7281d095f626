"""A short chaos run against a real broker (issue 8): two instances of every service as separate processes,
a floor at full speed, seeded faults (``kill -9``, SIGTERM, SIGSTOP with at least one longer than the session
timeout, targeted kills, an instance added), then the raw-topic check, ``croupier audit`` and a fresh
projection replica must all find nothing: no bet lost or settled twice, no seq held twice or missing, the
ledger equal to the settlements to the cent, the replica's ledger equal to the published one.

Size (environment): ``CROUPIER_CHAOS_ROUNDS`` (default 40), ``CROUPIER_CHAOS_FAULTS`` (15),
``CROUPIER_CHAOS_SECONDS`` (bound on the floor, 300), ``CROUPIER_CHAOS_TABLES`` (6). The floor stops once it
has settled the rounds and seen the faults: about 2–4 minutes on a two-core machine with the services on TLS.
Alone, a loaded CI run dealt 138 rounds under 39 faults in 180 s; sharing the machine with three other system
tests (``.ci/run``'s workers) it deals a third of that, so CI asks for 40 rounds (every table several rounds
through the faults) and leaves the long runs to ``bench/chaos.py``.

Expected to fail until the runtime for a cluster (co-partitioned assignment, fenced producers) is merged."""

from __future__ import annotations

import os
import uuid

import pytest

from croupier.chaos import ChaosConfig, report_lines, run_chaos

ROUNDS = int(os.environ.get("CROUPIER_CHAOS_ROUNDS", "40"))
FAULTS = int(os.environ.get("CROUPIER_CHAOS_FAULTS", "15"))


@pytest.mark.parametrize("guarantee", ["exactly_once", "exactly_once_v2"])
async def test_a_chaos_run_loses_doubles_and_conflicts_nothing(kafka_bootstrap, guarantee, monkeypatch):
    # the instances are processes started with this environment: a producer per task, or one per instance
    # fenced by the group's generation (KIP-447, issue 25)
    monkeypatch.setenv("CROUPIER_PROCESSING_GUARANTEE", guarantee)
    cfg = ChaosConfig(bootstrap=kafka_bootstrap, prefix=f"chaostest{uuid.uuid4().hex[:8]}.", rounds=ROUNDS,
                      min_faults=FAULTS, max_seconds=float(os.environ.get("CROUPIER_CHAOS_SECONDS", "300")),
                      tables=int(os.environ.get("CROUPIER_CHAOS_TABLES", "6")), seed=11, fault_gap_s=(4.0, 10.0),
                      replica_port=18000 + uuid.uuid4().int % 1000)
    lines: list[str] = []
    res = await run_chaos(cfg, out=lines.append)
    report = "\n".join(lines + report_lines(res))
    kinds = {f.kind for f in res.faults}
    assert len(res.faults) >= FAULTS and {"add_instance", "sigstop"} <= kinds, report
    assert any(f.kind == "sigstop" and float(f.detail.split()[1]) > 10 for f in res.faults), report
    r = res.raw
    assert r.rounds_settled >= ROUNDS and r.rounds_opened == r.rounds_settled, report
    assert (r.lost, r.doubled, r.seq_conflicts, r.ledger_diff_cents) == (0, 0, 0, 0), report
    assert dict(r.broken_rejections) == {} and dict(r.dlq_records) == {} and r.undecodable == 0, report
    assert r.bets_accepted == r.bets_settled > 0, report
    assert res.audit_clean and res.replica_diff_cents == 0 and res.floor_errors == [], report
    assert res.line().endswith(f"lost=0 doubled=0 seq_conflicts=0 ledger_diff_cents=0 audit=clean "
                               f"stall_p99_s={res.stall_p99_s:.1f}"), report
