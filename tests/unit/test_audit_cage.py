"""The audit re-derives the cage's statements from ``cage.events``: a clean shift is clean; a tampered count, a
forged fill, a slip's amount changed, a closer's or a soft count's figures edited are each a discrepancy of
its own kind at its record (``cage.events#seq``). The log: one table's shift on the in-memory floor (a fill,
cash and marker buy-ins, a high roller), its closer and soft count."""

from __future__ import annotations

import asyncio

import pytest
from msgspec.structs import replace

from contracts import topics as T
from contracts.cage import (
    ChipCount,
    DropBoxCounted,
    FillIssued,
    FillReceived,
    ShiftClosed,
    ShiftOpened,
)
from contracts.envelope import Envelope, event_id
from croupier.audit import audit
from services.cage.statement import statements
from tests.cagefloor import shift_on_floor
from tests.services.helpers import events

ALL = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)


async def _floor() -> list[Envelope]:
    return events(await shift_on_floor("A1", seed=23), *ALL)


@pytest.fixture(scope="module")
def log() -> list[Envelope]:
    return asyncio.run(_floor())


def cage_findings(envs: list[Envelope]) -> list[tuple[str, str]]:
    rep = audit(envs, table_id="A1")
    return [(d.kind, d.where) for d in rep.discrepancies or []]


def first(envs: list[Envelope], kind: type) -> int:
    return next(i for i, e in enumerate(envs) if isinstance(e.payload, kind) and e.table_id == "A1")


def edited(envs: list[Envelope], kind: type, **changes: object) -> tuple[list[Envelope], str]:
    """``envs`` with the first ``kind`` record's payload changed in place (same seq and id: a rewritten
    record), and its position."""
    i = first(envs, kind)
    out = list(envs)
    out[i] = replace(envs[i], payload=replace(envs[i].payload, **changes))
    return out, f"cage.events#{envs[i].seq}"


def test_a_clean_shift_is_clean_and_balances(log):  # type: ignore[no-untyped-def]
    (st,) = statements(log)
    assert st.closed and st.counted and st.fill_slips >= 1 and st.drop_markers + st.drop_cash > 0
    assert st.variance == 0
    assert cage_findings(log) == []


def test_a_tampered_opener_count(log):  # type: ignore[no-untyped-def]
    i = first(log, ShiftOpened)
    total = log[i].payload.total_cents
    envs, where = edited(log, ShiftOpened, total_cents=total + 2_500)  # a rack of $25s that was never there
    assert cage_findings(envs) == [("cage_count_mismatch", where)]


def test_a_tampered_soft_count(log):  # type: ignore[no-untyped-def]
    i = first(log, DropBoxCounted)
    e = log[i].payload
    # $100 of notes taken from the box, the record made to add up: fewer $100 notes, cash and drop less $100
    cash = [ChipCount(c.denomination_cents, c.count - (c.denomination_cents == 10_000)) for c in e.cash]
    assert sum(c.denomination_cents * c.count for c in cash) == e.cash_cents - 10_000
    envs, where = edited(log, DropBoxCounted, cash=cash, cash_cents=e.cash_cents - 10_000,
                         drop_cents=e.drop_cents - 10_000)
    assert cage_findings(envs) == [("drop_mismatch", where)]
    envs, where = edited(log, DropBoxCounted, counters=e.counters[:2])
    assert cage_findings(envs) == [("count_team_too_small", where)]


def test_a_forged_fill(log):  # type: ignore[no-untyped-def]
    cage = [e for e in log if e.stream == T.CAGE_EVENTS and e.table_id == "A1"]
    last = cage[-1]
    got = next(e for e in cage if isinstance(e.payload, FillReceived))
    seq = last.seq + 1
    forged = replace(got, seq=seq, event_id=event_id(T.CAGE_EVENTS, "A1", seq), causation_id="forged",
                     payload=replace(got.payload, fill_id="F-FORGED"))
    assert cage_findings([*log, forged]) == [("cage_out_of_shift", f"cage.events#{seq}")]  # after the closer
    # forged inside the shift: a receipt with no slip requested or issued (the records after it renumbered)
    i = log.index(got)
    later = [e for e in log[i + 1:] if e.stream == T.CAGE_EVENTS and e.table_id == "A1"]
    renumbered = [replace(e, seq=e.seq + 1, event_id=event_id(T.CAGE_EVENTS, "A1", e.seq + 1)) for e in later]
    inserted = replace(got, seq=got.seq + 1, event_id=event_id(T.CAGE_EVENTS, "A1", got.seq + 1),
                       payload=replace(got.payload, fill_id="F-FORGED"))
    envs = [e for e in log if e not in later and e is not got] + [got, inserted, *renumbered]
    assert ("fill_forged", f"cage.events#{got.seq + 1}") in cage_findings(envs)
    assert [k for k, _ in cage_findings(envs)] == ["fill_forged"]


def test_a_fill_received_for_more_than_was_issued(log):  # type: ignore[no-untyped-def]
    i = first(log, FillReceived)
    envs, where = edited(log, FillReceived, total_cents=log[i].payload.total_cents + 50_000)
    assert cage_findings(envs) == [("slip_amount_mismatch", where)]
    envs, where = edited(log, FillIssued, total_cents=log[first(log, FillIssued)].payload.total_cents - 100)
    found = cage_findings(envs)
    assert found[0] == ("slip_amount_mismatch", where) and len(found) == 1


def test_an_edited_closer(log):  # type: ignore[no-untyped-def]
    i = first(log, ShiftClosed)
    envs, where = edited(log, ShiftClosed, tray_variance_cents=log[i].payload.tray_variance_cents + 2_000)
    assert cage_findings(envs) == [("tray_mismatch", where)]


def test_the_cage_windows_own_key_is_not_counted_as_a_table(log):  # type: ignore[no-untyped-def]
    # the cage window's transactions (chips redeemed) are keyed "CAGE" on cage.events alone: no table played there
    assert {e.table_id for e in log} == {"A1", "CAGE"}  # the shift's patrons redeem chips at the window
    assert {e.stream for e in log if e.table_id == "CAGE"} == {"cage.events"}
    assert audit(log).tables == 1


def test_each_shifts_game_result_is_re_derived_from_the_settlements(log):  # type: ignore[no-untyped-def]
    from contracts.events import CommissionAccrued, RoundSettled

    closer = log[first(log, ShiftClosed)].payload
    settled = [e.payload for e in log if isinstance(e.payload, RoundSettled) and e.table_id == "A1"]
    # the floor's shift: its opener before any round, its closer after the last; every round is the shift's
    assert log[first(log, ShiftOpened)].payload.last_round_id == "" and closer.last_round_id == settled[-1].round_id
    assert closer.rounds == len(settled) > 0
    # stakes taken − payouts (net of commission deducted) + commission accrued
    accrued = sum(e.payload.amount_cents for e in log if isinstance(e.payload, CommissionAccrued))
    assert closer.game_result_cents == sum(r.stakes - r.payouts for r in settled) + accrued == -51_750
    # a closer whose game result was edited by $50 (the tray expected and its variance made to agree): the
    # statement's count variance hides it; the settlements do not
    envs, where = edited(log, ShiftClosed, game_result_cents=closer.game_result_cents + 5_000)
    assert cage_findings(envs) == [("game_result_mismatch", where)]
    envs, where = edited(log, ShiftClosed, rounds=closer.rounds - 1)
    assert cage_findings(envs) == [("game_result_mismatch", where)]
    # a closer that names an earlier round as its last: the rounds after it are not the shift's
    envs, where = edited(log, ShiftClosed, last_round_id=settled[-2].round_id)
    assert cage_findings(envs) == [("game_result_mismatch", where)]
    # an opener naming a round never settled at the table
    envs, where = edited(log, ShiftOpened, last_round_id="R-NEVER")
    assert cage_findings(envs) == [("game_result_mismatch", where)]
    # the cage's events alone (no settlements read): no game result to compare, nothing found
    cage_only = [e for e in envs if e.stream == T.CAGE_EVENTS]
    assert [k for k, _ in cage_findings(cage_only)] == []
