"""The raw-topic checker (croupier/rawcheck.py) on a real in-memory floor (the four services and the
projection, records as they were written): clean as dealt, and each kind of failure a cluster can produce
(a copy at the same seq, another event at a taken seq, a lost or doubled settlement, a ledger off by cents, an
unanswered command, a dead letter, a broken-floor rejection) moves exactly its own figure. And the stall
measure of the chaos harness, on hand-made timestamps."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace as moved
from datetime import UTC, datetime

import pytest
from msgspec.structs import replace

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event, encode
from contracts.commands import LoadShoe, PlaceBet
from contracts.envelope import event_id
from contracts.events import BetSettled, LedgerLine, LedgerPosted
from croupier.chaos import Fault, restore_waves, stall_lines, stall_p99
from croupier.rawcheck import RawRecord, RawReport, check
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.runtime.core import command
from tests.services.helpers import floor_bus

SEATS = [Seat(i, f"player-{i}") for i in range(1, 5)]
ROUNDS = 4


async def _floor() -> dict[str, list[RawRecord]]:
    bus, _ = floor_bus(seed=9)
    bus.add(ProjectionCore())
    io = MemoryFloorIO(bus)
    at = datetime(2026, 1, 2, tzinfo=UTC)
    for tid in ("K1", "K2"):
        dealer = TableDealer(io, tid, punto_banco_full(), SEATS, random.Random(tid), Clock())
        await dealer.open_table()
        await io.send(T.SHOE_COMMANDS, command(tid, f"{tid}-load", at, LoadShoe(shoe_id=f"{tid}-S", cut_at=40)))
        for n in range(1, ROUNDS + 1):
            assert await dealer.play_round(f"{tid}-S", f"{tid}-S-{n}")
    return {topic: [RawRecord(topic, r.partition, r.offset, r.key, r.value, 1000 * r.offset) for r in recs]
            for topic, recs in bus.topics.items()}


@pytest.fixture(scope="module")
def records() -> dict[str, list[RawRecord]]:
    return asyncio.run(_floor())


def changed(records: dict[str, list[RawRecord]], topic: str, recs: list[RawRecord]) -> dict[str, list[RawRecord]]:
    return {**records, topic: recs}


def settlement_at(records: dict[str, list[RawRecord]], nth: int = 3) -> int:
    found = [i for i, r in enumerate(records[T.SETTLEMENT_EVENTS]) if isinstance(decode_event(r.value).payload, BetSettled)]
    return found[nth]


def figures(rep: RawReport) -> tuple[int, int, int, int, int, int]:
    return (rep.lost, rep.doubled, rep.seq_duplicates_identical, rep.seq_duplicates_different, rep.seq_gaps,
            rep.ledger_diff_cents)


def test_the_floor_as_dealt_is_clean_and_everything_counted(records):
    rep = check(records)
    assert rep.clean, [str(f) for f in rep.findings[:5]]
    assert figures(rep) == (0, 0, 0, 0, 0, 0)
    assert (rep.rounds_opened, rep.rounds_resolved, rep.rounds_settled) == (2 * ROUNDS, 2 * ROUNDS, 2 * ROUNDS)
    settled = sum(isinstance(decode_event(r.value).payload, BetSettled) for r in records[T.SETTLEMENT_EVENTS])
    assert rep.bets_accepted == rep.bets_settled == settled > 0
    # one stake_taken and one settlement per bet, plus one entry per deducted commission
    assert 2 * settled <= rep.ledger_entries <= 3 * settled
    assert sorted(rep.progress_ms) == ["K1", "K2"]


def test_an_identical_copy_at_the_same_seq_is_a_seq_conflict_not_a_doubling(records):
    recs = list(records[T.SETTLEMENT_EVENTS])
    i = settlement_at(records)
    rep = check(changed(records, T.SETTLEMENT_EVENTS, recs[:i + 1] + [recs[i]] + recs[i + 1:]))
    assert figures(rep) == (0, 0, 1, 0, 0, 0) and not rep.clean


def test_another_event_at_a_taken_seq_is_a_different_seq_conflict(records):
    recs = list(records[T.SETTLEMENT_EVENTS])
    i = settlement_at(records)
    env = decode_event(recs[i].value)
    other = replace(env, causation_id="a zombie's", payload=replace(env.payload, odds="1:1 (zombie)"))
    rep = check(changed(records, T.SETTLEMENT_EVENTS, recs + [moved(recs[i], value=encode(other))]))
    assert figures(rep) == (0, 0, 0, 1, 0, 0)


def test_a_lost_settlement_is_lost_with_its_gap_and_the_ledger_no_longer_agrees(records):
    recs = list(records[T.SETTLEMENT_EVENTS])
    i = settlement_at(records)
    s = decode_event(recs[i].value).payload
    rep = check(changed(records, T.SETTLEMENT_EVENTS, recs[:i] + recs[i + 1:]))
    assert (rep.lost, dict(rep.lost_by_kind), rep.seq_gaps, rep.doubled) == (1, {"bet_unsettled": 1}, 1, 0)
    # the ledger posted it (the projection saw it), the settlements no longer imply it
    assert rep.ledger_diff_cents > 0 and s.stake > 0


def test_a_second_settlement_of_a_bet_is_doubled(records):
    recs = list(records[T.SETTLEMENT_EVENTS])
    i = settlement_at(records)
    env = decode_event(recs[i].value)
    last = max(decode_event(r.value).seq for r in recs if r.key == recs[i].key)
    again = replace(env, seq=last + 1, event_id=event_id(T.SETTLEMENT_EVENTS, env.table_id, last + 1))
    rep = check(changed(records, T.SETTLEMENT_EVENTS, recs + [moved(recs[i], value=encode(again))]))
    assert (rep.doubled, dict(rep.doubled_by_kind), rep.seq_conflicts) == (1, {"bet_settled": 1}, 0)
    assert rep.ledger_diff_cents > 0  # the ledger never posted the second one


def test_the_odds_of_a_point_published_again_at_the_next_seq_are_doubled(records):
    recs = list(records[T.PROJECTION_ODDS])
    env = decode_event(recs[7].value)
    last = max(decode_event(r.value).seq for r in recs if r.key == recs[7].key)
    again = replace(env, seq=last + 1, event_id=event_id(T.PROJECTION_ODDS, env.table_id, last + 1))
    rep = check(changed(records, T.PROJECTION_ODDS, recs + [moved(recs[7], value=encode(again))]))
    assert (rep.doubled, dict(rep.doubled_by_kind), rep.seq_conflicts) == (1, {"odds_updated": 1}, 0)
    # an update of a point not published before is not a doubling (nor a seq conflict)
    fresh = replace(again, payload=replace(env.payload, step=env.payload.step + 1000))
    rep = check(changed(records, T.PROJECTION_ODDS, recs + [moved(recs[7], value=encode(fresh))]))
    assert (rep.doubled, rep.seq_conflicts) == (0, 0)


def test_a_ledger_entry_moved_by_cents_is_a_ledger_diff_of_exactly_those_cents(records):
    recs = list(records[T.PROJECTION_LEDGER])
    i = next(i for i, r in enumerate(recs) if len(decode_event(r.value).payload.lines) == 2)
    env = decode_event(recs[i].value)
    p = env.payload
    assert isinstance(p, LedgerPosted)
    a, b = p.lines
    lines = [LedgerLine(a.account, a.amount_cents + 100), LedgerLine(b.account, b.amount_cents - 100)]
    forged = replace(env, payload=replace(p, lines=lines))
    rep = check(changed(records, T.PROJECTION_LEDGER, recs[:i] + [moved(recs[i], value=encode(forged))] + recs[i + 1:]))
    assert figures(rep) == (0, 0, 0, 0, 0, 200)


def test_an_unanswered_command_is_lost_and_a_dead_letter_counted(records):
    at = datetime(2026, 1, 3, tzinfo=UTC)
    cmd = command("K1", "never-answered", at, PlaceBet(round_id="K1-S-1", seat=1, player_id="p", wager="banker",
                                                       amount_cents=2500))
    recs = records[T.WAGERING_COMMANDS] + [RawRecord(T.WAGERING_COMMANDS, 0, 10**6, b"K1", encode(cmd), 0)]
    rep = check({**changed(records, T.WAGERING_COMMANDS, recs),
                 T.dlq("wagering"): [RawRecord(T.dlq("wagering"), 0, 0, b"K1", b"{}", 0)]})
    assert dict(rep.lost_by_kind) == {"command_unanswered": 1} and dict(rep.dlq_records) == {"wagering.dlq": 1}
    assert not rep.clean


async def test_broken_floor_rejections_are_counted():
    bus, _ = floor_bus(seed=3)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "B1", punto_banco_full(), SEATS, random.Random(3), Clock())
    await dealer.open_table()
    at = datetime(2026, 1, 2, tzinfo=UTC)
    await io.send(T.WAGERING_BETS, command("B1", "lost-bet", at, PlaceBet(
        round_id="nowhere", seat=1, player_id="p", wager="banker", amount_cents=2500)))
    recs = {t: [RawRecord(t, r.partition, r.offset, r.key, r.value, 0) for r in rs] for t, rs in bus.topics.items()}
    rep = check(recs)
    assert dict(rep.broken_rejections) == {"unknown_round": 1} and rep.lost == 0 and not rep.clean


def test_the_stall_is_the_gap_around_each_fault_at_each_table():
    progress = {"A": [0, 1000, 2000, 9000, 10000], "B": [0, 500, 1500, 2500, 3500]}
    faults = [Fault(1500, "kill9", "x"), Fault(2200, "sigstop", "y")]
    # fault 1: A 1000..2000 (1 s), B 1500..2500 (1 s); fault 2: A 2000..9000 (7 s), B 1500..2500 (1 s)
    assert stall_p99(faults, progress, end_ms=12000) == 7.0
    # a table that never moves again after a fault stalls until the end of the floor
    assert stall_p99([Fault(4000, "kill9", "x")], {"B": progress["B"]}, end_ms=12000) == 8.5
    assert stall_p99([], progress, end_ms=12000) == 0.0


def test_the_chaos_audit_opens_the_vault_with_the_runs_keys(monkeypatch):
    """The harness's ``croupier audit`` gets the run's vault keys as a mode-600 key file, so "audit clean"
    includes every sealed shoe order opened and checked against its reveal."""
    import os
    import stat
    import subprocess
    from types import SimpleNamespace

    from contracts.vault import VaultKeys, new_key_entry
    from croupier.chaos import ChaosConfig, run_audit

    entries = [new_key_entry("old-1", bytes(32)), new_key_entry("new-2", bytes(range(32)))]
    monkeypatch.delenv("CROUPIER_VAULT_KEY_FILE", raising=False)
    monkeypatch.setenv("CROUPIER_VAULT_KEYS", ",".join(entries))
    seen: dict[str, object] = {}

    def fake_run(cmd, **kw):
        path = cmd[cmd.index("--vault-key-file") + 1]
        seen["mode"] = stat.S_IMODE(os.stat(path).st_mode)
        seen["ids"] = [k for k, _ in VaultKeys.from_file(path).keys]
        return SimpleNamespace(returncode=0, stdout="audit: 0 discrepancies: clean\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    clean, out = run_audit(ChaosConfig(bootstrap="127.0.0.1:1", prefix="p."))
    assert clean and out == "audit: 0 discrepancies: clean"
    assert seen == {"mode": 0o600, "ids": ["old-1", "new-2"]}

    monkeypatch.delenv("CROUPIER_VAULT_KEYS")
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: SimpleNamespace(
        returncode=int("--vault-key-file" in cmd), stdout="", stderr=""))
    assert run_audit(ChaosConfig(bootstrap="127.0.0.1:1", prefix="p."))[0]  # no keys: no key file option


def test_the_stall_report_gives_each_fault_kinds_stalls_and_the_faults_inside_the_longest_gaps():
    progress = {"A": [0, 1000, 2000, 9000, 10000], "B": [0, 500, 1500, 2500, 3500]}
    faults = [Fault(1500, "kill9", "dealing-1"), Fault(2200, "sigstop", "shoe-2"), Fault(8000, "kill9", "wagering-1")]
    lines = stall_lines(faults, progress, end_ms=12000, worst=2)
    # kill9: A 1.0 (1000..2000) and 7.0 (2000..9000), B 1.0 and 8.5 (3500..end); sigstop: A 7.0, B 1.0
    assert lines[0] == ("stall by fault kind (s, over fault x table): "
                        "kill9 n=4 p50=1.0 p99=8.5 max=8.5; sigstop n=2 p50=1.0 p99=7.0 max=7.0")
    # the pairs whose gap held no other fault: kill9 A 1.0, B 8.5 (A 2000..9000 and B 1500..2500 also hold
    # the sigstop at 2200 or the kill9 at 1500); sigstop: none (both its gaps hold a kill9)
    assert lines[1] == ("  the same, gaps holding no other fault (one fault's own cost): "
                        "kill9 n=2 p50=1.0 p99=8.5 max=8.5")
    # the longest gaps, each once, with every fault inside it (s from the gap's start)
    assert lines[2] == "  stall 8.5 s at B: kill9 wagering-1 +4.5"
    assert lines[3] == "  stall 7.0 s at A: sigstop shoe-2 +0.2, kill9 wagering-1 +6.0"
    assert len(lines) == 4
    assert stall_lines([], progress, end_ms=12000) == []


def test_a_restore_wave_runs_from_the_assignment_to_the_last_of_its_tasks_restored():
    def line(ts: str, event: str, **kw: object) -> str:
        import json

        return json.dumps({"event": event, "timestamp": f"2026-12-02T20:00:{ts}Z", **kw})

    lines = [
        line("00.000", "assigned", tasks=[0, 1, 2], restoring=[0, 1, 2]),
        line("00.400", "restored", task=1, seconds=0.4),
        "not json at all",
        line("00.500", "catch_up_wait", task=0),
        line("01.250", "restored", task=0, seconds=1.25),
        line("01.500", "restored", task=2, seconds=1.5),
        line("02.000", "restored", task=2, seconds=0.1),  # a later restore (a failed transaction): no wave
        line("10.000", "assigned", tasks=[0, 1, 2, 3], restoring=[3]),
        line("10.300", "restored", task=3, seconds=0.3),
        line("20.000", "assigned", tasks=[4, 5], restoring=[4, 5]),
        line("20.100", "restored", task=4, seconds=0.1),
        line("30.000", "assigned", tasks=[], restoring=[]),  # task 5 never restored before it moved on
    ]
    assert restore_waves(lines) == [(1.5, 3), (0.3, 1)]
