"""The order of play is the deciders' (issue 9, findings 1 and 2): no card of a round before its "No more
bets", no bet made or withdrawn once a card of the round exists, and every card the rules did not call for
recorded as an ``Irregularity`` naming the rule, handled by ``irregularity_handling``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from msgspec.structs import replace

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard, SeatPlayer, WithdrawBet
from contracts.events import (
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BetWithdrawn,
    CardDealt,
    CommandRejected,
    Irregularity,
    RoundResolved,
    RoundSettled,
    RoundVoided,
)
from croupier.audit import audit
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import events, floor_bus, payloads

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Table:
    """A physical-shoe table on the in-memory bus; every command one second after the last (the log's
    times order the audit's checks)."""

    def __init__(self, handling: str = "void_round"):
        self.bus, self.hosts = floor_bus()
        self.n = 0
        self.seated = False
        spec = replace(table_spec(punto_banco_full()), irregularity_handling=handling)
        self.send(T.DEALING_COMMANDS, OpenTable(config=spec))
        self.send(T.SHOE_COMMANDS, LoadShoe(shoe_id="PS", physical=True))

    def send(self, topic: str, payload, cid: str | None = None, actor: str | None = None) -> str:  # type: ignore[no-untyped-def]
        self.n += 1
        cid = cid or f"c{self.n}"
        self.bus.send(topic, command("P1", cid, START + timedelta(seconds=self.n), payload, actor=actor))
        return cid

    def read(self, n: int, card: str, hand: str = "", round_id: str = "R1") -> None:
        self.send(T.SHOE_COMMANDS, ReadCard(shoe_id="PS", round_id=round_id, card_number=n, card=card, hand=hand))

    def bet(self, wager: str, cents: int, round_id: str = "R1", cid: str | None = None) -> str:
        return self.send(T.WAGERING_BETS, PlaceBet(round_id=round_id, seat=1, player_id="p", wager=wager,
                                                        amount_cents=cents), cid)

    async def pump(self) -> None:
        await self.bus.pump()
        if not self.seated:  # the table is open now: register its one player
            self.seated = True
            self.send(T.WAGERING_COMMANDS, SeatPlayer(seat=1, player_id="p"))
            await self.bus.pump()


async def _early_nine(handling: str) -> Table:
    """Finding 1: round R1 open, a $25 Banker bet, the reader reports a 9 on the Player's Hand before "No
    more bets", then a $1,000 Player bet, then "No more bets"."""
    t = Table(handling)
    await t.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R1", shoe_id="PS"))
    await t.pump()
    t.bet("banker", 2500, cid="before")
    await t.pump()
    t.read(1, "9s", "player")
    await t.pump()
    t.bet("player", 100_000, cid="late")
    await t.pump()
    t.send(T.WAGERING_BETS, WithdrawBet(round_id="R1", bet_id="before"), "withdraw", actor="p")
    await t.pump()
    t.send(T.WAGERING_COMMANDS, CloseBetting(round_id="R1"), "close")
    await t.pump()
    return t


async def test_finding_1_a_bet_after_a_card_read_before_no_more_bets_is_refused_and_the_round_voided():
    t = await _early_nine("void_round")
    (irr,) = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert (irr.kind, irr.card, irr.card_number, irr.disposition, irr.rule) == (
        "card_before_no_more_bets", "9s", 1, "round_voided", "13:69F-3.2(d), 3.7(b)")
    assert [v.round_id for v in payloads(t.bus, T.DEALING_EVENTS, RoundVoided)] == ["R1"]
    # the voided round's book closed as it stood: the late bet and the late "No more bets" are refused
    assert [(r.command_id, r.reason) for r in payloads(t.bus, T.WAGERING_EVENTS, BetRejected)] == [
        ("late", "betting_closed"), ("withdraw", "betting_closed")]
    assert [(r.command_id, r.reason) for r in payloads(t.bus, T.WAGERING_EVENTS, CommandRejected)] == [
        ("close", "betting_closed")]
    # the $25 bet is returned, nothing is paid on the 9
    assert [(s.bet_id, s.result, s.payout) for s in payloads(t.bus, T.SETTLEMENT_EVENTS, BetSettled)] == [
        ("before", "void", 2500)]
    assert payloads(t.bus, T.DEALING_EVENTS, CardDealt) == []
    # cards the reader reports for the voided round are not the round's either: each one is recorded
    t.read(2, "2c", "banker")
    await t.pump()
    kinds = [(i.kind, i.card_number, i.disposition) for i in payloads(t.bus, T.DEALING_EVENTS, Irregularity)]
    assert kinds[1:] == [("card_after_round_ended", 2, "discarded")]
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_finding_1_record_only_refuses_the_bet_cards_dealt_and_discards_the_card():
    t = await _early_nine("record_only")
    (irr,) = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert (irr.kind, irr.card_number, irr.disposition) == ("card_before_no_more_bets", 1, "discarded")
    assert [(r.command_id, r.reason) for r in payloads(t.bus, T.WAGERING_EVENTS, BetRejected)] == [
        ("late", "cards_dealt"), ("withdraw", "cards_dealt")]
    # "No more bets" after the card is harmless: it closes the book with the one bet made before the card
    assert payloads(t.bus, T.WAGERING_EVENTS, CommandRejected) == []
    # the round is dealt from the cards read after "No more bets" (2 on): Player 2+K=2, Banker 3+5=8 natural
    for n, card in enumerate(["2d", "3h", "Kd", "5c"], 2):
        t.read(n, card)
    await t.pump()
    (res,) = payloads(t.bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.player_cards, res.banker_cards, res.winner) == (["2d", "Kd"], ["3h", "5c"], "banker")
    assert [(s.bet_id, s.result, s.payout) for s in payloads(t.bus, T.SETTLEMENT_EVENTS, BetSettled)] == [
        ("before", "win", 4875)]
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_finding_1_the_audit_flags_the_late_bet_if_it_were_in_the_log():
    """What landed main did (the $1,000 bet accepted after the 9 and paid $2,000), put back into the log:
    the audit reports ``bet_after_first_card``."""
    from contracts.envelope import event_id

    t = await _early_nine("record_only")
    log = events(t.bus)
    refused = next(e for e in log if isinstance(e.payload, BetRejected) and e.payload.command_id == "late")
    placed = next(e for e in log if isinstance(e.payload, BetPlaced))
    forged_bet = replace(placed, seq=refused.seq, event_id=refused.event_id, occurred_at=refused.occurred_at,
                         causation_id="late",
                         payload=replace(placed.payload, bet_id="late", wager="player", amount_cents=100_000))
    forged = [forged_bet if e is refused else e for e in log]
    rep = audit(forged)
    assert {d.kind for d in rep.discrepancies} >= {"bet_after_first_card"}
    assert any("bet late placed" in d.detail for d in rep.discrepancies)
    assert event_id(T.WAGERING_EVENTS, "P1", refused.seq) == forged_bet.event_id


async def _open_closed(handling: str) -> Table:
    t = Table(handling)
    await t.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R1", shoe_id="PS"))
    await t.pump()
    t.bet("player", 2500, cid="b1")
    t.send(T.WAGERING_COMMANDS, CloseBetting(round_id="R1"))
    await t.pump()
    return t


@pytest.mark.parametrize("handling", ["void_round", "record_only"])
async def test_finding_2_a_card_read_to_the_wrong_hand_is_an_irregularity(handling):
    t = await _open_closed(handling)
    t.read(1, "4s", "banker")  # the first card goes to the Player's Hand (13:69F-3.7)
    await t.pump()
    (irr,) = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert (irr.kind, irr.card_number, irr.rule) == ("card_on_wrong_hand", 1, "13:69F-3.7")
    if handling == "void_round":
        assert irr.disposition == "round_voided"
        assert [v.round_id for v in payloads(t.bus, T.DEALING_EVENTS, RoundVoided)] == ["R1"]
        assert [(s.result, s.payout) for s in payloads(t.bus, T.SETTLEMENT_EVENTS, BetSettled)] == [("void", 2500)]
    else:
        assert irr.disposition == "dealt_by_the_rules"
        for n, card in enumerate(["Kd", "3d", "5d", "Qs"], 2):  # Player 7 stands; Banker 5 draws a queen
            t.read(n, card)
        await t.pump()
        dealt = payloads(t.bus, T.DEALING_EVENTS, CardDealt)
        assert (dealt[0].card, dealt[0].hand) == ("4s", "player")
        (res,) = payloads(t.bus, T.DEALING_EVENTS, RoundResolved)
        assert (res.player_points, res.banker_points, res.winner) == (7, 5, "player")
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


@pytest.mark.parametrize("handling", ["void_round", "record_only"])
async def test_finding_2_a_fifth_card_after_both_hands_stood_is_a_live_irregularity(handling):
    """Player 7, Banker 7 stand (Tables 1 and 2): a fifth card on the Banker's Hand is recorded at once and
    discarded whatever the setting (the round is settled); the result stands and the audit is clean."""
    t = await _open_closed(handling)
    for n, (card, hand) in enumerate([("3s", "player"), ("3h", "banker"), ("4d", "player"), ("4c", "banker"),
                                      ("9h", "banker")], 1):
        t.read(n, card, hand)
    await t.pump()
    (irr,) = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert (irr.kind, irr.card, irr.card_number, irr.disposition) == ("card_after_round_ended", "9h", 5, "discarded")
    (res,) = payloads(t.bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.player_points, res.banker_points, res.winner, res.cards_required) == (7, 7, "tie", 4)
    assert [s.payouts for s in payloads(t.bus, T.SETTLEMENT_EVENTS, RoundSettled)] == [2500]
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_a_card_out_of_order_is_an_irregularity_and_a_bankers_third_before_the_players_is_the_wrong_hand():
    t = await _open_closed("record_only")
    t.read(1, "4s")
    t.read(3, "3d")  # card 2 skipped
    await t.pump()
    (irr,) = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert (irr.kind, irr.card_number, irr.disposition, irr.rule) == ("card_out_of_order", 3, "discarded",
                                                                      "13:69F-3.7")
    # the round goes on with cards 2, 4, 5: Player 4s Ac = 5 draws (Table 1), Banker Kd 5d = 5; card 6 is the
    # Player's third but the reader puts it on the Banker's Hand (a Banker third before the Player's)
    for n, card in [(2, "Kd"), (4, "Ac"), (5, "5d")]:
        t.read(n, card)
    await t.pump()
    t.read(6, "Ah", "banker")
    await t.pump()
    irr = payloads(t.bus, T.DEALING_EVENTS, Irregularity)
    assert [(i.kind, i.card_number, i.disposition) for i in irr][1:] == [(
        "card_on_wrong_hand", 6, "dealt_by_the_rules")]
    assert "Table 1" in irr[1].rule or "3.9" in irr[1].rule
    dealt = payloads(t.bus, T.DEALING_EVENTS, CardDealt)
    assert [(d.card, d.hand) for d in dealt] == [("4s", "player"), ("Kd", "banker"), ("Ac", "player"),
                                                  ("5d", "banker"), ("Ah", "player")]
    (res,) = payloads(t.bus, T.DEALING_EVENTS, RoundResolved)  # Banker 5 stands on a Player third of 1
    assert (res.player_points, res.banker_points, res.winner) == (6, 5, "player")
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_a_bet_the_log_holds_after_no_more_bets_is_returned_by_the_call_even_if_read_first():
    """Bets and the call travel on two topics, so a bet appended after "No more bets" can be read before it.
    By the log's time it is late (13:69F-3.2(d)): the call returns it (``BetWithdrawn`` ``betting_closed``),
    the book holds only the bets before the call, and the audit is clean; a bet at the very time of the call
    stands."""
    t = Table()
    await t.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R1", shoe_id="PS"))
    await t.pump()
    t.bet("banker", 2500, cid="early")
    t.n += 5  # the call at +5 s, read after the bet appended at +10 s; a bet at the call's own second
    close_at = START + timedelta(seconds=t.n + 1)
    t.n += 4
    t.bet("player", 100_000, cid="after-call")
    t.bus.send(T.WAGERING_BETS, command("P1", "at-call", close_at, PlaceBet(
        round_id="R1", seat=1, player_id="p", wager="tie", amount_cents=500)))
    await t.pump()
    t.bus.send(T.WAGERING_COMMANDS, command("P1", "close", close_at, CloseBetting(round_id="R1")))
    await t.pump()
    for i, card in enumerate(("2s", "9s", "3s", "Ks"), 1):  # Player 5, Banker 9: a natural
        t.read(i, card)
    await t.pump()
    assert [b.bet_id for b in payloads(t.bus, T.WAGERING_EVENTS, BetPlaced)] == ["early", "after-call", "at-call"]
    assert [(w.bet_id, w.reason) for w in payloads(t.bus, T.WAGERING_EVENTS, BetWithdrawn)] == [
        ("after-call", "betting_closed")]
    assert [b.bet_id for b in payloads(t.bus, T.WAGERING_EVENTS, BettingClosed)[0].bets] == ["early", "at-call"]
    assert sorted(s.bet_id for s in payloads(t.bus, T.SETTLEMENT_EVENTS, BetSettled)) == ["at-call", "early"]
    rep = audit(events(t.bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_the_audit_flags_a_book_holding_a_bet_placed_after_its_call():
    t = Table()
    await t.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R1", shoe_id="PS"))
    await t.pump()
    t.bet("banker", 2500, cid="early")
    t.send(T.WAGERING_COMMANDS, CloseBetting(round_id="R1"))
    await t.pump()
    for i, card in enumerate(("2s", "9s", "3s", "Ks"), 1):
        t.read(i, card)
    await t.pump()
    log = events(t.bus)
    assert audit(log).clean
    i = next(i for i, e in enumerate(log) if isinstance(e.payload, BetPlaced))
    close = next(e for e in log if isinstance(e.payload, BettingClosed))
    forged = list(log)
    forged[i] = replace(log[i], occurred_at=close.occurred_at + timedelta(milliseconds=1))
    rep = audit(forged)
    assert {d.kind for d in rep.discrepancies} == {"bet_after_no_more_bets"}
    assert [d.where for d in rep.discrepancies] == [f"wagering.events#{close.seq}"]
