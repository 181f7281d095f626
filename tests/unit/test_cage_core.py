"""The cage core alone: each bad input refused with its reason code and nothing booked; the tray expected
follows every buy-in, settled round, commission collected, fill and credit."""

from __future__ import annotations

import pytest

from contracts import topics as T
from contracts.cage import (
    BoughtIn,
    BuyIn,
    CountDropBox,
    CreditLineSet,
    DrawMarker,
    DropBoxCounted,
    FillReceived,
    HandOverCredit,
    IssueFill,
    ReceiveCredit,
    ReceiveFill,
    RecordCloser,
    RecordOpener,
    RedeemChips,
    RemoveDropBox,
    RequestCredit,
    RequestFill,
    SetCreditLine,
    SettleMarker,
    ShiftClosed,
)
from contracts.events import CommissionAccrued, CommissionCollected, PlayerLeft, PlayerSeated, RoundSettled
from services.cage.counts import chips_for, count_problem
from services.runtime.core import command
from tests.cagedesk import AT, Desk, chips

OPENER = RecordOpener(shift_id="S1", gaming_day="2026-01-01", pit="P1", chips=chips((2_500, 20), (500, 100)),
                      total_cents=100_000, supervisor_id="sup-1")


def open_desk() -> Desk:
    d = Desk()
    d.send(OPENER)
    d.feed(PlayerSeated(seat=1, player_id="alice"), T.WAGERING_EVENTS)
    return d


def settled(table_result: int, stakes: int = 0, payouts: int = 0, commission: int = 0) -> RoundSettled:
    return RoundSettled(round_id="R", bets=1, stakes=stakes, payouts=payouts, commission=commission,
                        table_result=table_result)


def test_counts_add_up_or_are_refused():
    assert count_problem(chips((2_500, 4), (500, 10)), 15_000) is None
    assert count_problem(chips((2_500, 4), (500, 10)), 15_001)[0] == "count_mismatch"
    assert count_problem(chips((2_500, 4), (2_500, 1)), 12_500)[0] == "invalid_count"
    assert count_problem(chips((0, 4)), 0)[0] == "invalid_count"
    assert count_problem(chips((500, -1)), -500)[0] == "invalid_count"
    assert chips_for(13_700, (10_000, 2_500, 500, 100)) == chips((10_000, 1), (2_500, 1), (500, 2), (100, 2))
    assert chips_for(105, (100,)) == chips((100, 1), (1, 5))


def test_opener_refusals():
    d = Desk()
    assert d.refused(RecordOpener(shift_id="S1", gaming_day="d", chips=chips((2_500, 4)), total_cents=10_001,
                                  supervisor_id="sup-1")) == "count_mismatch"
    assert d.refused(RecordOpener(shift_id="S1", gaming_day="d", chips=chips((2_500, 4)), total_cents=10_000,
                                  supervisor_id="dealer-1")) == "same_person"
    assert d.refused(RecordOpener(shift_id="S1", gaming_day="d", chips=chips((2_500, 4)), total_cents=10_000,
                                  supervisor_id="sup-1", role="supervisor")) == "role_not_permitted"
    d.send(OPENER)
    assert d.refused(OPENER) == "shift_already_opened"  # a second opener for the shift
    s2 = RecordOpener(shift_id="S2", gaming_day="d", chips=[], total_cents=0, supervisor_id="sup-1")
    assert d.refused(s2) == "shift_open"
    d.send(RecordCloser(shift_id="S1", chips=OPENER.chips, total_cents=100_000, supervisor_id="sup-1"))
    assert d.refused(OPENER) == "shift_already_opened"  # not even after its closer


def test_fill_and_credit_refusals_and_their_order():
    d = Desk()
    assert d.refused(RequestFill(fill_id="F1", chips=chips((2_500, 4)), total_cents=10_000)) == "table_closed"
    d.send(OPENER)
    assert d.refused(RequestFill(fill_id="F1", chips=chips((2_500, 4)), total_cents=10_000, role="dealer")) \
        == "role_not_permitted"
    assert d.refused(RequestFill(fill_id="F1", chips=chips((2_500, 4)), total_cents=9_000)) == "count_mismatch"
    assert d.refused(ReceiveFill(fill_id="F1", supervisor_id="sup-1")) == "unknown_fill"
    d.send(RequestFill(fill_id="F1", chips=chips((2_500, 4)), total_cents=10_000), actor="sup-1")
    assert d.refused(ReceiveFill(fill_id="F1", supervisor_id="sup-1")) == "fill_not_issued"
    assert d.refused(IssueFill(fill_id="F1", runner_id="sec-1", role="dealer")) == "role_not_permitted"
    d.send(IssueFill(fill_id="F1", runner_id="sec-1"), actor="cashier-1")
    assert d.state.shift.fills["F1"].status == "issued"  # an open fill
    assert d.state.shift.tray_cents == 100_000
    assert d.refused(ReceiveFill(fill_id="F1", supervisor_id="dealer-1")) == "same_person"
    out = d.send(ReceiveFill(fill_id="F1", supervisor_id="sup-1"))
    assert [(e.total_cents, e.tray_cents) for e in out if isinstance(e, FillReceived)] == [(10_000, 110_000)]
    assert d.refused(ReceiveFill(fill_id="F1", supervisor_id="sup-1")) == "fill_not_issued"  # not twice
    # a credit larger than the tray holds
    assert d.refused(RequestCredit(credit_id="C1", chips=chips((10_000, 12)), total_cents=120_000)) \
        == "credit_exceeds_tray"
    d.send(RequestCredit(credit_id="C1", chips=chips((10_000, 1)), total_cents=10_000), actor="sup-1")
    assert d.refused(RequestCredit(credit_id="C1", chips=chips((10_000, 1)), total_cents=10_000)) == "duplicate_slip"
    assert d.refused(ReceiveCredit(credit_id="C1")) == "credit_not_handed_over"
    d.send(HandOverCredit(credit_id="C1", runner_id="sec-1"))
    assert d.state.shift.tray_cents == 100_000
    d.send(ReceiveCredit(credit_id="C1"), actor="cashier-1")
    assert d.state.shift.credits["C1"].status == "received"
    # a fill for a closed table
    d.send(RecordCloser(shift_id="S1", chips=OPENER.chips, total_cents=100_000, supervisor_id="sup-1"))
    assert d.refused(RequestFill(fill_id="F2", chips=chips((2_500, 4)), total_cents=10_000)) == "table_closed"


def test_credit_handed_over_cannot_exceed_the_tray_at_that_moment():
    d = open_desk()
    d.send(RequestCredit(credit_id="C1", chips=chips((10_000, 9)), total_cents=90_000), actor="sup-1")
    d.send(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=20_000))
    assert d.refused(HandOverCredit(credit_id="C1", runner_id="sec-1")) == "credit_exceeds_tray"


def test_buy_in_refusals_and_markers_within_the_line():
    d = open_desk()
    assert d.refused(BuyIn(buy_in_id="B1", seat=2, player_id="alice", method="cash", amount_cents=10_000)) \
        == "player_not_seated"
    assert d.refused(BuyIn(buy_in_id="B1", seat=1, player_id="bob", method="cash", amount_cents=10_000)) \
        == "player_not_seated"
    assert d.refused(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="iou", amount_cents=10_000)) \
        == "unknown_method"
    assert d.refused(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=0)) \
        == "invalid_amount"
    assert d.refused(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=10_000,
                           cash=chips((10_000, 2)))) == "count_mismatch"
    assert d.refused(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=100_100)) \
        == "tray_short"
    # no credit line: no marker; a line of $500: two markers of $300 are one too many
    assert d.refused(BuyIn(buy_in_id="M1", seat=1, player_id="alice", method="marker", amount_cents=30_000)) \
        == "over_credit_line"
    assert d.refused(SetCreditLine(player_id="alice", line_cents=50_000, role="dealer"), table="CAGE") \
        == "role_not_permitted"
    # a credit line is casino-wide: set at the cage's key, not at a table's
    assert d.refused(SetCreditLine(player_id="alice", line_cents=50_000), actor="cashier-1") == "cage_only"
    d.send(SetCreditLine(player_id="alice", line_cents=50_000, role="cage_cashier"), actor="cashier-1",
           table="CAGE")
    out = d.send(BuyIn(buy_in_id="M1", seat=1, player_id="alice", method="marker", amount_cents=30_000))
    assert [(e.tray_cents, e.marker_balance_cents) for e in out if isinstance(e, BoughtIn)] == [(70_000, 30_000)]
    assert d.refused(BuyIn(buy_in_id="M2", seat=1, player_id="alice", method="marker", amount_cents=30_000)) \
        == "over_credit_line"
    # chips brought from elsewhere: exchanged, tray and box unchanged
    d.send(BuyIn(buy_in_id="X1", seat=1, player_id="alice", method="chips", amount_cents=25_000))
    assert d.state.shift.tray_cents == 70_000 and d.state.boxes["S1"] == [30_000, 0]
    d.feed(PlayerLeft(seat=1, player_id="alice"), T.WAGERING_EVENTS)
    assert d.refused(BuyIn(buy_in_id="B9", seat=1, player_id="alice", method="cash", amount_cents=100)) \
        == "player_not_seated"


def test_the_tray_follows_rounds_and_commission_collected():
    d = open_desk()
    d.send(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=40_000))
    d.feed(settled(10_500, 30_000, 19_500, 500), T.SETTLEMENT_EVENTS)  # deducted commission: all in the tray
    assert d.state.shift.tray_cents == 70_500
    # an accrual table: 250 accrued reaches the tray only when collected
    d.feed(CommissionAccrued(seat=1, player_id="alice", amount_cents=250, owed_cents=250), T.SETTLEMENT_EVENTS)
    d.feed(settled(-4_750, 5_000, 10_000, 250), T.SETTLEMENT_EVENTS)
    assert d.state.shift.tray_cents == 65_500 and d.state.shift.game_result_cents == 5_750
    d.feed(CommissionCollected(seat=1, player_id="alice", amount_cents=250), T.SETTLEMENT_EVENTS)
    assert d.state.shift.tray_cents == 65_750
    out = d.send(RecordCloser(shift_id="S1", chips=chips((250, 263)), total_cents=65_750, supervisor_id="sup-1"))
    (c,) = out
    assert isinstance(c, ShiftClosed)
    assert (c.expected_cents, c.game_result_cents, c.rounds, c.tray_variance_cents) == (65_750, 5_750, 2, 0)


def test_drop_box_removal_and_soft_count():
    d = open_desk()
    d.send(BuyIn(buy_in_id="B1", seat=1, player_id="alice", method="cash", amount_cents=40_000))
    assert d.refused(RemoveDropBox(shift_id="S1"), actor="ct-1") == "shift_not_closed"
    d.send(RecordCloser(shift_id="S1", chips=chips((500, 120)), total_cents=60_000, supervisor_id="sup-1"))
    count = CountDropBox(shift_id="S1", cash=chips((10_000, 4)), cash_cents=40_000, markers=0, markers_cents=0,
                         counters=["ct-2", "ct-3"])
    assert d.refused(count, actor="ct-1") == "box_not_removed"
    assert d.refused(RemoveDropBox(shift_id="S1", role="dealer"), actor="ct-1") == "role_not_permitted"
    d.send(RemoveDropBox(shift_id="S1"), actor="ct-1")
    assert d.refused(RemoveDropBox(shift_id="S1"), actor="ct-1") == "box_already_removed"
    # a count by a role that may not count, by too small a team, that does not add up
    assert d.refused(CountDropBox(shift_id="S1", cash=count.cash, cash_cents=40_000, markers=0, markers_cents=0,
                                  counters=["ct-2", "ct-3"], role="security"), actor="ct-1") == "role_not_permitted"
    assert d.refused(CountDropBox(shift_id="S1", cash=count.cash, cash_cents=40_000, markers=0, markers_cents=0,
                                  counters=["ct-1", "ct-2"]), actor="ct-1") == "count_team_too_small"
    assert d.refused(CountDropBox(shift_id="S1", cash=count.cash, cash_cents=45_000, markers=0, markers_cents=0,
                                  counters=["ct-2", "ct-3"]), actor="ct-1") == "count_mismatch"
    (e,) = d.send(count, actor="ct-1")
    assert isinstance(e, DropBoxCounted)
    assert (e.drop_cents, e.expected_cents, e.drop_variance_cents, e.counters) == (40_000, 40_000, 0,
                                                                                   ["ct-1", "ct-2", "ct-3"])
    assert d.refused(count, actor="ct-1") == "box_already_counted"
    assert d.refused(CountDropBox(shift_id="S9", cash=[], cash_cents=0, markers=0, markers_cents=0,
                                  counters=["a", "b"]), actor="ct-1") == "unknown_shift"


@pytest.mark.parametrize("tag", ["record_opener", "count_drop_box", "issue_fill"])
def test_every_cage_command_has_its_roles(tag):
    from services.cage.core import ROLES
    assert ROLES[tag]
    assert set(ROLES) == set(T.ROUTES[T.CAGE_COMMANDS].commands) | set(T.ROUTES[T.CAGE_MARKERS].commands)


def test_casino_wide_credit_is_decided_at_the_cage_key():
    """CAGE's decide step: a $500 line, markers at two tables against it, a repayment that makes room,
    a repayment beyond the outstanding refused (it never goes below zero)."""
    d = Desk("T1")
    for t in ("T1", "T2"):
        d.send(OPENER, table=t)
        d.feed(PlayerSeated(seat=1, player_id="alice"), T.WAGERING_EVENTS, table=t)
    d.send(SetCreditLine(player_id="alice", line_cents=50_000), actor="cashier-1", table="CAGE")

    def marker(table: str, bid: str, cents: int) -> list:
        return d.send(BuyIn(buy_in_id=bid, seat=1, player_id="alice", method="marker", amount_cents=cents),
                      table=table)

    out = marker("T1", "M1", 30_000)
    assert [type(e).__name__ for e in out] == ["MarkerRequested", "BoughtIn"]
    assert (out[1].tray_cents, out[1].marker_balance_cents) == (70_000, 30_000)
    assert d.at("CAGE").markers == {"alice": 30_000} and d.at("T1").reserved == {}
    # $300 at T2 would make $600 outstanding across the two tables: refused, nothing booked at T2 or CAGE
    assert d.refused(BuyIn(buy_in_id="M2", seat=1, player_id="alice", method="marker", amount_cents=30_000),
                     table="T2") == "over_credit_line"
    draw = [e.payload for e in d.log if e.table_id == "CAGE"][-1]
    assert (draw.command, draw.reason) == ("draw_marker", "over_credit_line") and "60000" in draw.detail
    assert (d.at("T2").shift.tray_cents, d.at("T2").boxes["S1"], d.at("T2").reserved) == (100_000, [0, 0], {})
    assert d.at("CAGE").markers == {"alice": 30_000}
    # $200 fits the line exactly
    assert marker("T2", "M3", 20_000)[-1].marker_balance_cents == 50_000
    assert d.at("CAGE").markers == {"alice": 50_000} and d.at("T2").boxes["S1"] == [20_000, 0]
    # a repayment at the window: the outstanding falls, a new marker passes again
    repay = RedeemChips(redemption_id="R1", player_id="alice", amount_cents=25_000, method="marker_redemption")
    (paid,) = d.send(repay, actor="cashier-1", table="CAGE")
    assert (paid.marker_balance_cents, d.at("CAGE").markers) == (25_000, {"alice": 25_000})
    assert d.refused(RedeemChips(redemption_id="R2", player_id="alice", amount_cents=25_001,
                                 method="marker_redemption"), actor="cashier-1", table="CAGE") == "over_outstanding"
    assert d.refused(RedeemChips(redemption_id="R2", player_id="bob", amount_cents=100, method="marker_redemption"),
                     actor="cashier-1", table="CAGE") == "over_outstanding"  # nothing owed: never below zero
    assert marker("T1", "M4", 25_000)[-1].marker_balance_cents == 50_000
    (paid,) = d.send(RedeemChips(redemption_id="R3", player_id="alice", amount_cents=50_000,
                                 method="marker_redemption"), actor="cashier-1", table="CAGE")
    assert paid.marker_balance_cents == 0 and d.at("CAGE").markers == {"alice": 0}
    # the line can be lowered; the markers' steps belong to their keys
    d.send(SetCreditLine(player_id="alice", line_cents=10_000), actor="cashier-1", table="CAGE")
    assert d.refused(BuyIn(buy_in_id="M5", seat=1, player_id="alice", method="marker", amount_cents=12_500),
                     table="T1") == "over_credit_line"
    route = T.ROUTES[T.CAGE_MARKERS]
    wrong = d.runner.decide(command("T1", "x1", AT, DrawMarker(table_id="T1", buy_in_id="M6", player_id="alice",
                                                                  amount_cents=100), actor=""), route=route)
    stray = d.runner.decide(command("T1", "x2", AT, SettleMarker(buy_in_id="M9", issued=True), actor=""),
                            route=route)
    assert [(e.payload.command, e.payload.reason) for e in wrong.events + stray.events] == \
        [("draw_marker", "cage_only"), ("settle_marker", "unknown_buy_in")]
    # a console may not send the cage's own commands (cage.commands does not carry them)
    forged = d.runner.decide(command("CAGE", "x3", AT, DrawMarker(table_id="T1", buy_in_id="M7", player_id="alice",
                                                                  amount_cents=100)), route=T.ROUTES[T.CAGE_COMMANDS])
    assert [e.payload.reason for e in forged.events] == ["wrong_topic"]


def test_a_marker_awaiting_the_cage_holds_its_chips_and_the_closer():
    d = open_desk()
    d.send(SetCreditLine(player_id="alice", line_cents=100_000), actor="cashier-1", table="CAGE")
    step1 = d.runner.decide(command("T1", "b1", AT, BuyIn(buy_in_id="M1", seat=1, player_id="alice",
                                                           method="marker", amount_cents=60_000)),
                            route=T.ROUTES[T.CAGE_COMMANDS])
    d.runner.commit(step1)
    (send,) = step1.sends
    assert (send.topic, send.command.table_id, send.command.correlation_id) == (T.CAGE_MARKERS, "CAGE", "b1")
    assert d.state.reserved_cents == 60_000 and d.state.shift.tray_cents == 100_000  # held, not booked
    assert d.refused(BuyIn(buy_in_id="B2", seat=1, player_id="alice", method="cash", amount_cents=50_000)) \
        == "tray_short"
    assert d.refused(RequestCredit(credit_id="C1", chips=chips((10_000, 5)), total_cents=50_000), actor="sup-1") \
        == "credit_exceeds_tray"
    assert d.refused(RecordCloser(shift_id="S1", chips=OPENER.chips, total_cents=100_000, supervisor_id="sup-1")) \
        == "marker_pending"
    step2 = d.runner.decide(send.command, route=T.ROUTES[T.CAGE_MARKERS])
    d.runner.commit(step2)
    step3 = d.runner.decide(step2.sends[0].command, route=T.ROUTES[T.CAGE_MARKERS])
    d.runner.commit(step3)
    (booked,) = [e for e in step3.events]
    assert isinstance(booked.payload, BoughtIn) and booked.correlation_id == "b1"
    assert (d.state.reserved, d.state.shift.tray_cents) == ({}, 40_000)
    # delivered twice (a re-send after a restore): decided once
    assert not d.runner.decide(step2.sends[0].command, route=T.ROUTES[T.CAGE_MARKERS])


def test_a_credit_line_set_at_a_table_before_lines_were_casino_wide():
    """A log written before casino-wide lines holds ``CreditLineSet`` at a table's key. Replayed, it folds
    into that table's state and decides nothing: a marker is decided at ``CAGE``, where the patron has no
    line, and is refused ``over_credit_line`` with a detail that says so (not carried over: the cage sets the
    line again, at the cage), nothing booked; once set at ``CAGE`` the marker passes."""
    from contracts.envelope import Envelope, event_id
    from services.cage.core import CageCore

    d = Desk("T1")
    d.send(OPENER)
    d.feed(PlayerSeated(seat=1, player_id="alice"), T.WAGERING_EVENTS)
    old = CreditLineSet(player_id="alice", line_cents=50_000, by="cashier-1")
    d.runner.slot("T1").state = CageCore().evolve(d.at("T1"), Envelope(
        event_id=event_id(T.CAGE_EVENTS, "T1", 99), stream=T.CAGE_EVENTS, table_id="T1", seq=99,
        causation_id="old", correlation_id="old", occurred_at=AT, payload=old))
    assert d.at("T1").lines == {"alice": 50_000} and d.at("CAGE").lines == {}
    marker = BuyIn(buy_in_id="M1", seat=1, player_id="alice", method="marker", amount_cents=30_000)
    assert d.refused(marker) == "over_credit_line"
    refusal = [e.payload for e in d.log if e.table_id == "T1"][-1]
    assert "alice has no credit line at CAGE" in refusal.detail and "not carried over" in refusal.detail
    assert (d.at("T1").shift.tray_cents, d.at("T1").reserved) == (100_000, {})
    d.send(SetCreditLine(player_id="alice", line_cents=50_000), actor="cashier-1", table="CAGE")
    assert d.send(marker)[-1].marker_balance_cents == 30_000
