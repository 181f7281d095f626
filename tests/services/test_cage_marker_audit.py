"""The audit's marker check on a live floor (issue 23, ``croupier/audit_cage.py``): a marker buy-in between its
steps at the end of the log is in flight, a ``marker_unsettled`` notice and no discrepancy; a forged
``MarkerIssued`` or a forged marker ``BoughtIn`` is still a ``marker_mismatch`` at its record. bob ($500 line)
signs a $300 marker at T1, booked; then a $100 one at T2, taken step by step on the in-memory bus."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec

from contracts import topics as T
from contracts.cage import (
    CAGE_KEY,
    BoughtIn,
    BuyIn,
    MarkerIssued,
    MarkerRequested,
    SetCreditLine,
    ShiftClosed,
)
from contracts.envelope import Envelope, event_id
from croupier.audit import audit
from croupier.audit_cage import check_cage
from croupier.log import cage_key_last
from tests.services.helpers import events
from tests.services.test_cage_statement import Floor


async def _floor() -> Floor:
    f = Floor()
    for table in ("T1", "T2"):
        await f.open_table(table, f"{table}-s1", 100_000, "pit-1", [(2, "bob")])
    f.cage(CAGE_KEY, SetCreditLine(player_id="bob", line_cents=50_000), "cashier-1")
    f.cage("T1", BuyIn(buy_in_id="M1", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    await f.bus.pump()
    return f


def _has(f: Floor, kind: type, bid: str) -> bool:
    return any(isinstance(e.payload, kind) and e.payload.buy_in_id == bid for e in events(f.bus, T.CAGE_EVENTS))


async def _until(f: Floor, kind: type, bid: str) -> None:
    """Deliver one record at a time until ``kind`` of buy-in ``bid`` is on the log, and no further."""
    while not _has(f, kind, bid):
        assert await f.bus.pump(limit=1) == 1


def findings(log: list[Envelope]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    found: list[tuple[str, str, str]] = []
    notes: list[tuple[str, str, str]] = []
    check_cage(log, lambda t, k, w, d: found.append((t, k, w)), notice=lambda t, k, w, d: notes.append((t, k, w)))
    return found, notes


def where(log: list[Envelope], kind: type, bid: str) -> str:
    (e,) = [e for e in log if isinstance(e.payload, kind) and e.payload.buy_in_id == bid]
    return f"cage.events#{e.seq}"


def appended(log: list[Envelope], table: str, payload: object) -> list[Envelope]:
    """``log`` with ``payload`` written at ``table``'s next ``seq`` of ``cage.events`` (a forged record)."""
    seq = max(e.seq for e in log if e.table_id == table and e.stream == T.CAGE_EVENTS) + 1
    like = next(e for e in log if e.table_id == table and e.stream == T.CAGE_EVENTS)
    forged = msgspec.structs.replace(like, seq=seq, event_id=event_id(T.CAGE_EVENTS, table, seq), payload=payload)
    return [*log, forged]


async def test_a_marker_in_flight_is_a_notice_not_a_discrepancy():
    f = await _floor()
    f.cage("T2", BuyIn(buy_in_id="M2", seat=2, player_id="bob", method="marker", amount_cents=10_000), "dealer-1")
    # step 1 on the log: T2 holds the chips, the cage has not decided
    await _until(f, MarkerRequested, "M2")
    log = events(f.bus, T.CAGE_EVENTS)
    assert findings(log) == ([], [("T2", "marker_unsettled", where(log, MarkerRequested, "M2"))])
    # step 2 on the log: issued at CAGE, T2's BoughtIn not yet (was a marker_mismatch "no BoughtIn there")
    await _until(f, MarkerIssued, "M2")
    log = events(f.bus, T.CAGE_EVENTS)
    assert not _has(f, BoughtIn, "M2")
    assert findings(log) == ([], [(CAGE_KEY, "marker_unsettled", where(log, MarkerIssued, "M2"))])
    # the whole audit: clean, the notice beside it, in its report and its JSON
    rep = audit(events(f.bus, T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS,
                       T.CAGE_EVENTS))
    assert rep.clean and [(d.table_id, d.kind) for d in rep.notices] == [(CAGE_KEY, "marker_unsettled")]
    assert rep.to_dict()["notices"][0]["where"] == where(log, MarkerIssued, "M2")
    # in any order across tables the same
    assert findings(log[::-1]) == findings(log)
    # step 3: booked, no notice left
    await f.bus.pump()
    assert findings(events(f.bus, T.CAGE_EVENTS)) == ([], [])


async def test_a_forged_marker_issued_is_found():
    f = await _floor()
    log = events(f.bus, T.CAGE_EVENTS)
    # a marker issued at CAGE for T2 that no table asked for: bob's outstanding made to carry it
    forged = appended(log, CAGE_KEY, MarkerIssued(table_id="T2", buy_in_id="M7", player_id="bob",
                                                  amount_cents=10_000, outstanding_cents=40_000, line_cents=50_000))
    assert findings(forged) == ([(CAGE_KEY, "marker_mismatch", f"cage.events#{forged[-1].seq}")], [])
    # one T2 asked for but then refused; one issued while T2's shift closed without it
    f.cage("T2", BuyIn(buy_in_id="M2", seat=2, player_id="bob", method="marker", amount_cents=10_000), "dealer-1")
    await _until(f, MarkerIssued, "M2")
    log = events(f.bus, T.CAGE_EVENTS)
    closed = appended(log, "T2", ShiftClosed(shift_id="T2-s1", chips=[], total_cents=0, counted_by="d",
                                             attested_by="s", expected_cents=0, game_result_cents=0, rounds=0,
                                             tray_variance_cents=0))
    assert findings(closed)[0] == [(CAGE_KEY, "marker_mismatch", where(log, MarkerIssued, "M2"))]
    # of another amount than the table asked for
    bigger = [msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, amount_cents=20_000,
                                                                          outstanding_cents=50_000))
              if isinstance(e.payload, MarkerIssued) and e.payload.buy_in_id == "M2" else e for e in log]
    assert findings(bigger) == ([(CAGE_KEY, "marker_mismatch", where(log, MarkerIssued, "M2"))], [])


async def test_a_forged_marker_bought_in_is_found():
    f = await _floor()
    log = events(f.bus, T.CAGE_EVENTS)
    assert findings(log) == ([], [])
    # a marker booked at T2 that the cage never issued (and no reservation before it)
    forged = appended(log, "T2", BoughtIn(buy_in_id="M8", shift_id="T2-s1", seat=2, player_id="bob", method="marker",
                                          amount_cents=20_000, tray_cents=80_000, by="dealer-1",
                                          marker_balance_cents=50_000))
    assert findings(forged) == ([("T2", "marker_mismatch", f"cage.events#{forged[-1].seq}")], [])
    # T1's booked marker with the cage's MarkerIssued gone (the reverse of in flight: no log's state, the
    # reader reads the cage key last): the BoughtIn is found, not taken for a marker in flight
    gone = [e for e in log if not isinstance(e.payload, MarkerIssued)]
    assert findings(gone) == ([("T1", "marker_mismatch", where(log, BoughtIn, "M1"))], [])
    assert findings(gone[::-1]) == findings(gone)


def test_the_reader_takes_the_cage_key_last():
    """:func:`croupier.log.cage_key_last`: what a later read of the cage key's partition adds past the first read:
    the cage key's events only (another table on that partition stays at the first read's cut)."""
    def rec(offset: int, table: str) -> tuple[SimpleNamespace, SimpleNamespace]:
        return SimpleNamespace(topic="cage.events", partition=3, offset=offset), SimpleNamespace(table_id=table)

    first = [rec(0, CAGE_KEY), rec(1, "T9"), (SimpleNamespace(topic="cage.events", partition=1, offset=7),
                                              SimpleNamespace(table_id="T1"))]
    again = [rec(0, CAGE_KEY), rec(2, CAGE_KEY), rec(3, "T9"), rec(4, CAGE_KEY)]
    assert cage_key_last(first, again, "cage.events") == 2  # type: ignore[arg-type]
    assert [(r.offset, e.table_id) for r, e in first] == [(0, CAGE_KEY), (1, "T9"), (7, "T1"), (2, CAGE_KEY),
                                                          (4, CAGE_KEY)]


async def test_a_marker_booked_before_casino_wide_credit_is_not_a_finding():
    """A log spanning the change: a marker ``BoughtIn`` at T2 written before casino-wide lines (no steps, its
    time before the log's first marker step) is not matched against ``CAGE``; the same record at the
    log's end (a forgery) is."""
    from datetime import timedelta

    f = await _floor()
    log = events(f.bus, T.CAGE_EVENTS)
    first = min(e.occurred_at for e in log if isinstance(e.payload, (MarkerRequested, MarkerIssued)))
    old = appended(log, "T2", BoughtIn(buy_in_id="OLD-1", shift_id="T2-s1", seat=2, player_id="bob", method="marker",
                                       amount_cents=20_000, tray_cents=80_000, by="dealer-1",
                                       marker_balance_cents=20_000))
    old[-1] = msgspec.structs.replace(old[-1], occurred_at=first - timedelta(hours=1))
    assert findings(old) == ([], [])
    old[-1] = msgspec.structs.replace(old[-1], occurred_at=first)
    assert findings(old) == ([("T2", "marker_mismatch", f"cage.events#{old[-1].seq}")], [])


async def test_a_marker_issued_over_the_line_with_its_line_edited_is_found():
    """bob's line is $500 at CAGE; a $300 marker issued with its stated line edited to $200 (or a marker
    made to pass a line it stated larger than the one set) is found at its record."""
    f = await _floor()
    log = events(f.bus, T.CAGE_EVENTS)
    for line in (20_000, 90_000):
        edited = [msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, line_cents=line))
                  if isinstance(e.payload, MarkerIssued) else e for e in log]
        assert findings(edited) == ([(CAGE_KEY, "marker_mismatch", where(log, MarkerIssued, "M1"))], [])
