"""The audit catches tampering: realistic logs from the in-memory floor are clean; copies of them with one
thing changed (a card, a payout, a dropped or duplicated event, the reveal, a result, a rule) are not, each
with the expected kind of discrepancy. The original log stays clean throughout (the events are frozen
Structs; every tampered log is a copy made with ``msgspec.structs.replace``)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace
from typer.testing import CliRunner

from baccarat.money import CommissionMode
from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.commands import CloseBetting, CollectCommission, OpenRound, PlaceBet, VoidRound, WithdrawBet
from contracts.envelope import Envelope, event_id
from contracts.events import (
    BetPlaced,
    BetSettled,
    BettingClosed,
    CardDealt,
    CardDrawn,
    CommissionAccrued,
    BetRejected,
    CommandRejected,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    ShoeBurned,
    ShoeClosed,
)
from croupier.audit import AuditReport, UndecodableRecord, UnknownEvent, audit
from croupier.cli import app
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from tests.services.helpers import events, floor_bus
from tests.budget import examples

SEATS = [Seat(i, f"player-{i}") for i in range(1, 7)]
TABLES = {"T1": punto_banco_full(), "T2": no_vig_dragon(panda=True),
          "A1": punto_banco_full(commission_mode=CommissionMode.ACCRUE)}
MONEY_FIELDS = ("stake", "win", "commission", "payout")


async def _floor() -> tuple[list[Envelope], dict[str, object]]:
    bus, _ = floor_bus(seed=31)
    io = MemoryFloorIO(bus)
    runs = {}
    for tid, cfg in TABLES.items():
        runs[tid] = await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
    # then, at the accrual table: commission collected, a withdrawn bet, a round voided before "No more bets"
    clock = Clock(datetime(2026, 2, 1, tzinfo=UTC))
    n = iter(range(1, 1000))

    async def send(topic: str, payload: object, cid: str | None = None, actor: str | None = None) -> None:
        await io.send(topic, command("A1", cid or f"extra-{next(n)}", clock(), payload,  # type: ignore[arg-type]
                                     actor=actor))

    await send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=1))
    from contracts.commands import CloseShoe, LoadShoe

    await send(T.SHOE_COMMANDS, LoadShoe(shoe_id="A1-shoe-2", cut_at=70))
    await send(T.DEALING_COMMANDS, OpenRound(round_id="W", shoe_id="A1-shoe-2"))
    await send(T.WAGERING_BETS, PlaceBet(round_id="W", seat=1, player_id="player-1", wager="banker", amount_cents=5000))
    await send(T.WAGERING_BETS, PlaceBet(round_id="W", seat=2, player_id="player-2", wager="player",
                                             amount_cents=5000), cid="taken-back")
    await send(T.WAGERING_BETS, WithdrawBet(round_id="W", bet_id="taken-back"), actor="player-2")
    await send(T.WAGERING_COMMANDS, CloseBetting(round_id="W"))
    await send(T.DEALING_COMMANDS, OpenRound(round_id="V", shoe_id="A1-shoe-2"))
    await send(T.WAGERING_BETS, PlaceBet(round_id="V", seat=3, player_id="player-3", wager="tie", amount_cents=2500))
    await send(T.DEALING_COMMANDS, VoidRound(round_id="V", reason="dealer error"))
    await send(T.SHOE_COMMANDS, CloseShoe(shoe_id="A1-shoe-2"))
    return events(bus), runs


@pytest.fixture(scope="module")
def floor() -> tuple[list[Envelope], dict[str, object]]:
    return asyncio.run(_floor())


@pytest.fixture(scope="module")
def log(floor) -> list[Envelope]:  # type: ignore[no-untyped-def]
    return floor[0]


# ---- helpers ------------------------------------------------------------------------------------------------
def kinds(rep: AuditReport) -> set[str]:
    return {d.kind for d in rep.discrepancies or []}


def index(log: list[Envelope], match: Callable[[Envelope], bool], nth: int = 0) -> int:
    """Index of the ``nth`` envelope (from the middle of the log when nth < 0 is not given) that matches."""
    found = [i for i, e in enumerate(log) if match(e)]
    assert found, "no such event"
    return found[nth]


def of(kind: type, table: str = "T1", **attrs: object) -> Callable[[Envelope], bool]:
    return lambda e: (e.table_id == table and isinstance(e.payload, kind)
                      and all(getattr(e.payload, k) == v for k, v in attrs.items()))


def with_payload(log: list[Envelope], i: int, **changes: object) -> list[Envelope]:
    """A copy of the log with the payload of event ``i`` changed."""
    copy = list(log)
    copy[i] = replace(log[i], payload=replace(log[i].payload, **changes))
    return copy


def without(log: list[Envelope], i: int) -> list[Envelope]:
    return log[:i] + log[i + 1:]


def middle_round(log: list[Envelope], table: str = "T1") -> str:
    rounds = [e.payload.round_id for e in log if e.table_id == table and isinstance(e.payload, RoundResolved)]
    return rounds[len(rounds) // 2]


# ---- clean logs ------------------------------------------------------------------------------------------
def test_the_floor_log_is_clean_and_everything_was_checked(floor):
    log, runs = floor
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.tables == 3 and rep.events == len(log)
    assert rep.shoes_verified == 4 and rep.rounds_pending == 0
    assert rep.rounds_checked == sum(r.rounds for r in runs.values()) + 1  # and round W
    assert rep.bets_checked == sum(r.bets for r in runs.values()) + 2  # W's banker bet and V's voided tie bet
    kinds_seen = {type(e.payload).__name__ for e in log}
    assert {"CommissionAccrued", "CommissionCollected", "BetWithdrawn", "RoundVoided"} <= kinds_seen


def test_filters_by_table_and_shoe(floor):
    log, runs = floor
    t1 = audit(log, table_id="T1")
    assert t1.clean and t1.tables == 1 and t1.shoes_verified == 1
    assert (t1.rounds_checked, t1.bets_checked) == (runs["T1"].rounds, runs["T1"].bets)  # type: ignore[attr-defined]
    shoe = audit(log, shoe_id="A1-shoe-2")
    assert shoe.clean and shoe.shoes_verified == 1 and shoe.rounds_checked == 1 and shoe.bets_checked == 2


@pytest.mark.parametrize("stopped", ["wagering", "shoe", "settlement"])
async def test_a_live_logs_tail_is_pending_not_a_discrepancy(stopped):
    # the log read while a round is in play: no cards yet (the shoe service is down), or the round resolved
    # and its settlements not out yet (the settlement service is down)
    bus, hosts = floor_bus(seed=2)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "L1", punto_banco_full(), SEATS, random.Random(2), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe

    await io.send(T.SHOE_COMMANDS, command("L1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=40)))
    for n in range(1, 4):
        assert await dealer.play_round("S", f"S-{n}")
    bus.remove(hosts[stopped])
    at = datetime(2026, 1, 2, tzinfo=UTC)
    await io.send(T.DEALING_COMMANDS, command("L1", "open-4", at, OpenRound(round_id="S-4", shoe_id="S")))
    await io.send(T.WAGERING_BETS, command("L1", "bet-4", at, PlaceBet(
        round_id="S-4", seat=1, player_id="player-1", wager="banker", amount_cents=2500)))
    await io.send(T.WAGERING_COMMANDS, command("L1", "close-4", at, CloseBetting(round_id="S-4")))
    log = events(bus)
    assert any(isinstance(e.payload, RoundResolved) and e.payload.round_id == "S-4" for e in log) == (
        stopped == "settlement")
    # the round opened in every case; with wagering down its betting never even opened
    assert any(isinstance(e.payload, RoundOpened) and e.payload.round_id == "S-4" for e in log)
    rep = audit(log)
    assert rep.clean and rep.rounds_pending == 1, [str(d) for d in rep.discrepancies]
    assert rep.bets_checked == sum(1 for e in log if isinstance(e.payload, BetSettled))


def test_a_round_left_unsettled_before_the_tail_is_a_discrepancy(log):
    # a forger drops a whole round's settlements and renumbers the stream so that no seq is missing
    rid = middle_round(log)
    settle = [e for e in log if e.table_id == "T1" and e.stream == T.SETTLEMENT_EVENTS]
    kept = [e for e in settle if e.round_id != rid]
    renumbered = [replace(e, seq=n, event_id=event_id(T.SETTLEMENT_EVENTS, "T1", n)) for n, e in enumerate(kept, 1)]
    forged = [e for e in log if not (e.table_id == "T1" and e.stream == T.SETTLEMENT_EVENTS)] + renumbered
    rep = audit(forged)
    assert kinds(rep) == {"settlement_count", "round_settled_count"} and rep.rounds_pending == 0


def renumbered(log: list[Envelope], table: str, drop: Callable[[Envelope], bool]) -> list[Envelope]:
    """The log without the events ``drop`` selects, the table's streams renumbered so that no seq is missing
    (what a forger, or a runtime that lost a whole round, leaves)."""
    out: list[Envelope] = []
    next_seq: dict[str, int] = {}
    for e in log:
        if e.table_id != table:
            out.append(e)
        elif not drop(e):
            n = next_seq[e.stream] = next_seq.get(e.stream, 0) + 1
            out.append(replace(e, seq=n, event_id=event_id(e.stream, table, n)))
    return out


def test_a_round_opened_but_never_dealt_before_the_tail_is_a_discrepancy(log):
    # the round opened, its bets were taken, then nothing: no "No more bets", no card, no result, no settlement,
    # while the table went on to later rounds (issue 8: rounds never resolved after an instance joined)
    rid = middle_round(log)
    gone = (CardDealt, PointsAnnounced, RoundResolved, BettingClosed)
    forged = renumbered(log, "T1", lambda e: e.round_id == rid and (
        isinstance(e.payload, gone) or e.stream == T.SETTLEMENT_EVENTS))
    rep = audit(forged)
    # the shoe's cards for the round are still in the log: cards drawn without "No more bets" (issue 9)
    assert kinds(rep) == {"round_not_dealt", "card_before_no_more_bets"} and rep.rounds_pending == 0
    assert [d.where for d in rep.discrepancies if d.kind == "round_not_dealt"] == [rid]
    drawn = [e for e in log if e.table_id == "T1" and isinstance(e.payload, CardDrawn) and e.round_id == rid]
    assert len([d for d in rep.discrepancies if d.kind == "card_before_no_more_bets"]) == len(drawn) >= 4


def test_a_round_dealt_but_never_settled_before_the_tail_is_a_discrepancy(log):
    # resolved, but without a closed book and no settlement at all, while later rounds were settled
    rid = middle_round(log)
    forged = renumbered(log, "T1", lambda e: e.round_id == rid and (
        isinstance(e.payload, BettingClosed) or e.stream == T.SETTLEMENT_EVENTS))
    rep = audit(forged)
    # and its cards were dealt without "No more bets" (issue 9)
    assert kinds(rep) == {"round_not_settled", "card_before_no_more_bets"} and rep.rounds_pending == 0
    assert [d.where for d in rep.discrepancies if d.kind == "round_not_settled"] == [rid]


async def test_a_persons_refused_command_is_the_floor_working_and_a_system_failure_is_not():
    bus, _ = floor_bus(seed=5)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "R1", punto_banco_full(), SEATS, random.Random(5), Clock())
    await dealer.open_table()
    from contracts.commands import CloseShoe, LoadShoe

    at = datetime(2026, 1, 2, tzinfo=UTC)
    await io.send(T.SHOE_COMMANDS, command("R1", "load", at, LoadShoe(shoe_id="S", cut_at=40)))
    assert await dealer.play_round("S", "S-1")
    # people's mistakes, each refused with a reason: a bet after "No more bets", a round on a shoe the table
    # never loaded, a bet on a round that was never opened, and "Open round" after the pit closed the shoe
    # (issue 28: the audit called that last one "the floor is broken" and exited 1)
    late = datetime(2026, 1, 3, tzinfo=UTC)
    await io.send(T.WAGERING_BETS, command("R1", "late", at, PlaceBet(
        round_id="S-1", seat=1, player_id="player-1", wager="banker", amount_cents=2500)))
    await io.send(T.DEALING_COMMANDS, command("R1", "open-x", at, OpenRound(round_id="X-1", shoe_id="other")))
    await io.send(T.WAGERING_BETS, command("R1", "bet-x", at, PlaceBet(
        round_id="nowhere", seat=1, player_id="player-1", wager="banker", amount_cents=2500)))
    await io.send(T.SHOE_COMMANDS, command("R1", "close", late, CloseShoe(shoe_id="S")))
    await io.send(T.DEALING_COMMANDS, command("R1", "open-after-close", late + timedelta(seconds=1),
                                              OpenRound(round_id="S-2", shoe_id="S")))
    log = events(bus)
    rejected = sorted((type(e.payload).__name__, e.payload.reason) for e in log
                      if isinstance(e.payload, (CommandRejected, BetRejected)))
    assert rejected == [("BetRejected", "betting_closed"), ("BetRejected", "unknown_round"),
                        ("CommandRejected", "no_open_shoe"), ("CommandRejected", "no_open_shoe")]
    rep = audit(log)
    assert rep.clean and rep.broken_rejections == {}, [str(d) for d in rep.discrepancies]
    assert rep.refused == {"no_open_shoe": 2, "unknown_round": 1} and rep.to_dict()["refused"] == rep.refused
    # the system failing: the dealing service refuses a round on the very shoe in play, and wagering a bet on a
    # round dealing had opened (records a broken service would write: copies of the refusals above, re-aimed)
    def again(model: Envelope, **changes: object) -> Envelope:
        seq = 1 + max(e.seq for e in log if e.table_id == "R1" and e.stream == model.stream)
        return replace(model, seq=seq, event_id=event_id(model.stream, "R1", seq),
                       occurred_at=at + timedelta(milliseconds=5), round_id=changes.get("round_id", model.round_id),
                       payload=replace(model.payload, **{k: v for k, v in changes.items() if k != "round_id"}))

    no_shoe = next(e for e in log if isinstance(e.payload, CommandRejected) and e.round_id == "X-1")
    bad_open = again(no_shoe, round_id="X-2", detail="shoe S is not the table's open shoe")
    unknown = next(e for e in log if isinstance(e.payload, BetRejected) and e.payload.reason == "unknown_round")
    bad_bet = again(unknown, round_id="S-1")
    for broken, reason in ((bad_open, "no_open_shoe"), (bad_bet, "unknown_round")):
        rep = audit(log + [broken])
        assert not rep.clean and kinds(rep) == {"floor_broken"} and rep.broken_rejections == {reason: 1}
        assert [d.where for d in rep.discrepancies] == [f"{broken.stream}#{broken.seq}"]
        assert rep.refused == {"no_open_shoe": 2, "unknown_round": 1}


# ---- tampering ---------------------------------------------------------------------------------------------
def test_a_changed_card_is_caught(log):
    i = index(log, of(CardDrawn, round_id=middle_round(log)))
    card = log[i].payload.card
    other = ("2" if card[0] != "2" else "3") + card[1]
    rep = audit(with_payload(log, i, card=other))
    assert {"card_not_in_order", "outcome_mismatch", "dealt_card_mismatch"} <= kinds(rep)
    assert any(d.kind == "card_not_in_order" and card in d.detail and other in d.detail for d in rep.discrepancies)
    assert audit(log).clean


def test_a_round_rewritten_consistently_is_still_caught_by_the_shoes_commitment(log):
    # same value, other suit: the hands, points and settlements all still agree; only the reveal betrays it
    rid = middle_round(log)
    i = index(log, of(CardDrawn, round_id=rid, card_number=1))
    card = log[i].payload.card
    other = card[0] + ("s" if card[1] != "s" else "h")
    forged = with_payload(log, i, card=other)
    j = index(forged, of(CardDealt, round_id=rid), 0)
    forged = with_payload(forged, j, card=other)
    k = index(forged, of(RoundResolved, round_id=rid))
    forged = with_payload(forged, k, player_cards=[other] + forged[k].payload.player_cards[1:])
    assert kinds(audit(forged)) == {"card_not_in_order"}


def test_a_changed_payout_is_caught(log):
    i = index(log, of(BetSettled, round_id=middle_round(log)))
    rep = audit(with_payload(log, i, payout=log[i].payload.payout + 100))
    assert kinds(rep) == {"settlement_mismatch", "round_totals"}
    # named at the record, with the bet in its sentence
    mismatch = [d for d in rep.discrepancies if d.kind == "settlement_mismatch"]
    assert [d.where for d in mismatch] == [f"settlement.events#{log[i].seq}"]
    assert mismatch[0].detail.startswith(f"bet {log[i].payload.bet_id} (") and mismatch[0].round_id == log[i].round_id


@pytest.mark.parametrize("stream", [T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS])
def test_a_dropped_event_leaves_a_seq_gap(log, stream):
    mine = [i for i, e in enumerate(log) if e.table_id == "T2" and e.stream == stream]
    i = mine[len(mine) // 2]
    rep = audit(without(log, i))
    gaps = [d for d in rep.discrepancies if d.kind == "seq_gap"]
    assert [(d.table_id, d.where) for d in gaps] == [("T2", f"{stream}#{log[i].seq}")]


def test_a_dropped_settlement_is_caught_as_a_bet_not_settled(log):
    i = index(log, of(BetSettled, round_id=middle_round(log)))
    rep = audit(without(log, i))
    assert {"seq_gap", "settlement_count", "round_totals"} <= kinds(rep)
    assert any(d.kind == "settlement_count" and d.where == log[i].payload.bet_id and "never settled" in d.detail
               for d in rep.discrepancies)


def test_a_duplicated_event_is_caught(log):
    i = index(log, of(BetSettled, round_id=middle_round(log)))
    rep = audit(log[:i + 1] + [log[i]] + log[i + 1:])
    assert kinds(rep) == {"duplicate_seq", "bet_settled_twice"}
    dup = [d for d in rep.discrepancies if d.kind == "duplicate_seq"]
    assert len(dup) == 1 and dup[0].where == f"settlement.events#{log[i].seq}"
    assert dup[0].detail == "the same seq appears twice (an identical copy of bet_settled)"
    forged = replace(log[i], payload=replace(log[i].payload, seat=99), causation_id="forged")
    dup = [d for d in audit(log[:i + 1] + [forged] + log[i + 1:]).discrepancies if d.kind == "duplicate_seq"]
    assert [d.detail for d in dup] == [
        (f"the same seq appears twice (two different bet_settled: causation_id {log[i].causation_id!r} then "
         f"'forged'; payload.seat {log[i].payload.seat} then 99)")]


def test_a_tampered_reveal_is_caught(log):
    i = index(log, of(ShoeClosed, table="T2"))
    order = list(log[i].payload.order)
    j = next(k for k in range(1, len(order)) if order[k] != order[0])
    order[0], order[j] = order[j], order[0]
    rep = audit(with_payload(log, i, order=order))
    assert kinds(rep) == {"commitment_mismatch"}
    assert audit(with_payload(log, i, salt="00" + log[i].payload.salt[2:] if log[i].payload.salt[:2] != "00"
                              else "11" + log[i].payload.salt[2:])).discrepancies[0].kind == "commitment_mismatch"


def test_a_flipped_winner_is_caught(log):
    i = index(log, of(RoundResolved, round_id=middle_round(log)))
    winner = log[i].payload.winner
    flipped = {"player": "banker", "banker": "player", "tie": "banker"}[winner]
    rep = audit(with_payload(log, i, winner=flipped))
    assert kinds(rep) == {"outcome_mismatch"}
    assert f"winner: recorded {flipped!r}, rules give {winner!r}" in rep.discrepancies[0].detail


def test_a_changed_drawing_rule_is_caught(log):
    i = index(log, of(CardDealt, rule="table_1"))
    rep = audit(with_payload(log, i, rule="table_2"))
    assert kinds(rep) == {"draw_reason_mismatch"}


def test_a_changed_table_cell_is_caught(log):
    i = index(log, of(CardDealt, rule="table_2"))
    rep = audit(with_payload(log, i, row=(log[i].payload.row + 1) % 8))
    assert kinds(rep) == {"draw_reason_mismatch"}


def test_changed_points_announced_is_caught(log):
    i = index(log, of(PointsAnnounced, round_id=middle_round(log)))
    rep = audit(with_payload(log, i, player_points=(log[i].payload.player_points + 1) % 10))
    assert kinds(rep) == {"points_mismatch"}


def test_a_changed_bet_book_is_caught(log):
    i = index(log, lambda e: e.table_id == "T1" and isinstance(e.payload, BettingClosed) and len(e.payload.bets) > 1)
    bets = list(log[i].payload.bets)
    bets[0] = replace(bets[0], amount_cents=bets[0].amount_cents * 2)
    rep = audit(with_payload(log, i, bets=bets))
    assert {"book_mismatch", "settlement_mismatch"} <= kinds(rep)
    rep = audit(with_payload(log, i, bets=bets[1:]))  # a bet left out of the book
    assert {"book_mismatch", "unknown_bet_settled", "round_totals"} <= kinds(rep)


def test_changed_commission_bookkeeping_is_caught(log):
    i = index(log, of(CommissionAccrued, table="A1"), nth=3)
    assert kinds(audit(with_payload(log, i, amount_cents=log[i].payload.amount_cents + 1))) == {"commission_mismatch"}
    assert kinds(audit(with_payload(log, i, owed_cents=log[i].payload.owed_cents - 5))) == {"commission_mismatch"}
    j = index(log, of(RoundSettled, table="A1", round_id=log[i].payload.round_id))
    assert kinds(audit(with_payload(log, j, table_result=log[j].payload.table_result + 1))) == {"round_totals"}


def test_a_card_from_another_shoe_or_a_forged_event_id_is_caught(log):
    i = index(log, of(RoundResolved, round_id=middle_round(log)))
    assert kinds(audit(with_payload(log, i, shoe_id="T1-shoe-9"))) == {"shoe_mismatch"}
    copy = list(log)
    copy[i] = replace(log[i], event_id=event_id(T.DEALING_EVENTS, "T1", log[i].seq + 1))
    assert kinds(audit(copy)) == {"bad_event_id"}


def test_changed_shoe_bookkeeping_is_caught(log):
    i = index(log, of(CardDrawn, table="T2"), nth=40)
    assert kinds(audit(with_payload(log, i, cards_left=log[i].payload.cards_left + 1))) == {"shoe_bookkeeping"}
    assert kinds(audit(with_payload(log, i, cutting_card_out=True))) == {"shoe_bookkeeping"}
    j = index(log, of(ShoeClosed, table="T2"))
    assert kinds(audit(with_payload(log, j, cards_dealt=log[j].payload.cards_dealt - 1))) == {"shoe_bookkeeping"}


def test_a_changed_burn_is_caught(log):
    i = index(log, of(ShoeBurned, table="T2"))
    b = log[i].payload
    assert "burn_mismatch" in kinds(audit(with_payload(log, i, burned=list(reversed(b.burned)) + ["Kd"])))


def test_undecodable_records_are_discrepancies_and_unknown_types_only_counted(log):
    bad = UndecodableRecord("T1", "settlement.events", 2, 17, "JSON is malformed")
    rep = audit(log, undecodable=[bad])
    assert kinds(rep) == {"undecodable_record"} and rep.undecodable_records == 1
    assert str(rep.discrepancies[0]) == "T1 undecodable_record settlement.events[2]@17: JSON is malformed"
    assert audit(log, table_id="T2", undecodable=[bad]).clean  # another table's record
    # a newer producer's event of a type this version does not know: skipped, counted, and it holds its seq
    i = index(log, of(BetSettled, round_id=middle_round(log)))
    newer = UnknownEvent("T1", T.SETTLEMENT_EVENTS, log[i].seq, log[i].event_id, "bet_insured")
    hidden = without(log, i)
    assert "seq_gap" in kinds(audit(hidden))
    rep = audit(hidden, unknown=[newer])
    assert "seq_gap" not in kinds(rep) and rep.unknown_types == {"bet_insured": 1}
    last = max(e.seq for e in log if e.table_id == "T2" and e.stream == T.DEALING_EVENTS)
    tail = UnknownEvent("T2", T.DEALING_EVENTS, last + 1, event_id(T.DEALING_EVENTS, "T2", last + 1), "dealer_sneezed")
    rep = audit(log, unknown=[tail])
    assert rep.clean and rep.unknown_types == {"dealer_sneezed": 1}
    dup = audit(log, unknown=[replace_seq(tail, last)])
    held = next(e for e in log if e.table_id == "T2" and e.stream == T.DEALING_EVENTS and e.seq == last)
    assert [d.detail for d in dup.discrepancies] == [
        (f"the same seq appears twice (different events: {held.payload.__struct_config__.tag} and dealer_sneezed "
         "(a type this version does not know))")]


def replace_seq(u: UnknownEvent, seq: int) -> UnknownEvent:
    from dataclasses import replace as dc_replace

    return dc_replace(u, seq=seq, event_id=event_id(u.stream, u.table_id, seq))


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_changing_any_money_field_of_any_settlement_is_caught(log, data):
    settled = [i for i, e in enumerate(log) if isinstance(e.payload, BetSettled)]
    i = data.draw(st.sampled_from(settled), label="event")
    field = data.draw(st.sampled_from(MONEY_FIELDS), label="field")
    delta = data.draw(st.integers(-1_000_000, 1_000_000).filter(bool), label="delta")
    rep = audit(with_payload(log, i, **{field: getattr(log[i].payload, field) + delta}))
    assert "settlement_mismatch" in kinds(rep) and any(d.where == f"settlement.events#{log[i].seq}"
                                                       for d in rep.discrepancies)


def test_the_original_log_is_still_clean(log):
    assert audit(log).clean


# ---- the command line's errors without a broker ----------------------------------------------------------
def test_cli_unreachable_broker_is_one_line_and_exit_1():
    r = CliRunner().invoke(app, ["audit", "--bootstrap", "127.0.0.1:1"])
    assert r.exit_code == 1, r.output
    err = r.stderr.strip()
    assert err.startswith("error: cannot reach Kafka at 127.0.0.1:1") and "\n" not in err
    assert "Traceback" not in r.output


async def test_a_round_refused_no_open_shoe_that_opens_when_tried_again_is_the_floor_working():
    bus, _ = floor_bus(seed=6)
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "R2", punto_banco_full(), SEATS, random.Random(6), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe

    at = datetime(2026, 1, 2, tzinfo=UTC)
    # the dealer opens round S-1 before the dealing service has heard of shoe S (it lags the shoe's stream)
    await io.send(T.DEALING_COMMANDS, command("R2", "early", at, OpenRound(round_id="S-1", shoe_id="S")))
    await io.send(T.SHOE_COMMANDS, command("R2", "load", at, LoadShoe(shoe_id="S", cut_at=40)))
    assert await dealer.play_round("S", "S-1")  # tried again: it opens, is dealt and settled
    log = events(bus)
    assert [e.payload.reason for e in log if isinstance(e.payload, CommandRejected)] == ["no_open_shoe"]
    rep = audit(log)
    assert rep.clean and rep.broken_rejections == {}, [str(d) for d in rep.discrepancies]
    assert rep.refused == {"no_open_shoe": 1}
    # a round on a shoe the table never loaded is the dealer's slip, refused with its reason: the floor worked
    await io.send(T.DEALING_COMMANDS, command("R2", "never", at, OpenRound(round_id="S-9", shoe_id="T")))
    rep = audit(events(bus))
    assert rep.clean and rep.broken_rejections == {} and rep.refused == {"no_open_shoe": 2}


# ---- the order of play (issue 9, finding 1): no bet after a card, no card before "No more bets" ----------
def _round_events(log: list[Envelope], rid: str, kind: type) -> list[Envelope]:
    return [e for e in log if e.table_id == "T1" and e.round_id == rid and isinstance(e.payload, kind)]


def test_a_late_bet_injected_after_the_first_card_is_caught(log):
    from datetime import timedelta

    rid = middle_round(log)
    first = min(e.occurred_at for e in _round_events(log, rid, CardDrawn))
    model = _round_events(log, rid, BetPlaced)[0]
    late = replace(model, occurred_at=first + timedelta(milliseconds=1),
                   payload=replace(model.payload, bet_id="late-bet", amount_cents=100_000))
    at = index(log, lambda e: e is _round_events(log, rid, BettingClosed)[0]) + 1
    # inserted after the closed book, the wagering stream renumbered so that no seq is missing or doubled
    forged = log[:at] + [late] + log[at:]
    n = 0
    out: list[Envelope] = []
    for e in forged:
        if e.table_id == "T1" and e.stream == T.WAGERING_EVENTS:
            n += 1
            e = replace(e, seq=n, event_id=event_id(e.stream, "T1", n))
        out.append(e)
    rep = audit(out)
    # after the book closed too: the wagering service refuses any bet then (issue 28)
    assert kinds(rep) == {"bet_after_first_card", "bet_after_book_closed"}
    assert [d.detail.split()[1] for d in rep.discrepancies] == ["late-bet", "late-bet"]


def test_a_card_moved_before_no_more_bets_is_caught(log):
    from datetime import timedelta

    rid = middle_round(log)
    close = _round_events(log, rid, BettingClosed)[0].occurred_at
    i = index(log, lambda e: e.table_id == "T1" and e.round_id == rid and isinstance(e.payload, CardDrawn)
              and e.payload.card_number == 1)
    forged = list(log)
    forged[i] = replace(log[i], occurred_at=close - timedelta(microseconds=1))
    rep = audit(forged)
    assert kinds(rep) == {"card_before_no_more_bets"}
    assert [d.where for d in rep.discrepancies] == [f"shoe.events#{log[i].seq}"]
