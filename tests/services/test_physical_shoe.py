"""A physical shoe dealt by hand: cards are read, checked against what is left, and dealt by the rules."""

from __future__ import annotations

from datetime import datetime, timezone

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard
from contracts.events import CardDealt, CardReadRefused, RoundResolved, RoundSettled, ShoeLoaded
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import floor_bus, payloads

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


async def _open_physical_round(wagers: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A table with a physical shoe, round R1 open, ``wagers`` bet by seat 1 ($25 each), "No more bets" called.
    Returns the bus and the command factory (ids c1, c2, ...)."""
    bus, _ = floor_bus()
    n = iter(range(1, 1000))

    def cmd(payload):  # type: ignore[no-untyped-def]
        return command("P1", f"c{next(n)}", AT, payload)

    bus.send(T.DEALING_COMMANDS, cmd(OpenTable(config=table_spec(punto_banco_full()))))
    bus.send(T.SHOE_COMMANDS, cmd(LoadShoe(shoe_id="PS", physical=True)))
    await bus.pump()
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R1", shoe_id="PS")))
    await bus.pump()
    for wager in wagers:
        bus.send(T.WAGERING_COMMANDS, cmd(PlaceBet(round_id="R1", seat=1, player_id="p", wager=wager,
                                                   amount_cents=2500)))
    bus.send(T.WAGERING_COMMANDS, cmd(CloseBetting(round_id="R1")))
    await bus.pump()
    return bus, cmd


async def test_physical_shoe_reads_are_checked_and_dealt_by_the_rules():
    bus, cmd = await _open_physical_round(("player",))
    loaded = payloads(bus, T.SHOE_EVENTS, ShoeLoaded)
    assert loaded[0].source == "physical" and loaded[0].commitment == ""
    assert payloads(bus, T.DEALING_EVENTS, CardDealt) == []  # waiting for the reader
    # the round from the digest's vector 3: A,3,4,3,6,4 (Banker 6 draws on 6); all eight aces of spades...
    for i, card in enumerate(["As", "3h", "4d", "3c", "6s", "4h"], 1):
        bus.send(T.SHOE_COMMANDS, cmd(ReadCard(shoe_id="PS", round_id="R1", card_number=i, card=card)))
    await bus.pump()
    resolved = payloads(bus, T.DEALING_EVENTS, RoundResolved)
    assert [(r.player_points, r.banker_points, r.winner, r.cards_required) for r in resolved] == [(1, 0, "player", 6)]
    assert [s.payouts for s in payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)] == [5000]
    # an 8-deck shoe holds eight aces of spades and one is out: the ninth read is impossible, refused
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R2", shoe_id="PS")))
    await bus.pump()
    bus.send(T.WAGERING_COMMANDS, cmd(CloseBetting(round_id="R2")))
    await bus.pump()
    for i in range(1, 9):
        bus.send(T.SHOE_COMMANDS, cmd(ReadCard(shoe_id="PS", round_id="R2", card_number=i, card="As")))
    await bus.pump()
    refused = payloads(bus, T.SHOE_EVENTS, CardReadRefused)
    assert [(r.card_number, r.card) for r in refused] == [(8, "As")]
    assert "already been dealt" in refused[0].reason
    # the round itself went on with the cards it needed (four aces: 2 - 2, a tie after third cards)
    r2 = [r for r in payloads(bus, T.DEALING_EVENTS, RoundResolved) if r.round_id == "R2"]
    assert [(r.player_cards, r.banker_cards) for r in r2] == [(["As", "As", "As"], ["As", "As", "As"])]


async def _physical_round(cards_and_hands):  # type: ignore[no-untyped-def]
    bus, cmd = await _open_physical_round(("banker", "cards_5", "cards_4"))
    for i, (card, hand) in enumerate(cards_and_hands, 1):
        bus.send(T.SHOE_COMMANDS, cmd(ReadCard(shoe_id="PS", round_id="R1", card_number=i, card=card, hand=hand)))
    await bus.pump()
    return bus


async def test_unauthorised_player_third_card_becomes_the_bankers_third():
    """Player 7 stands, Banker 4 must draw (stood column): a fifth card put on the Player's Hand becomes the
    Banker's third card (13:69F-3.12(a)); the card-count wager counts the 5 required cards."""
    from contracts.events import BetSettled, Irregularity

    from croupier.audit import audit
    from tests.services.helpers import events

    bus = await _physical_round([("3s", "player"), ("2h", "banker"), ("4d", "player"), ("2c", "banker"),
                                 ("5h", "player")])
    irr = payloads(bus, T.DEALING_EVENTS, Irregularity)
    assert [(i.kind, i.card, i.card_number, i.disposition) for i in irr] == [
        ("unauthorised_player_third_card", "5h", 5, "banker_third")]
    (res,) = payloads(bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.player_cards, res.banker_cards, res.player_points, res.banker_points, res.winner,
            res.cards_required) == (["3s", "4d"], ["2h", "2c", "5h"], 7, 9, "banker", 5)
    dealt = payloads(bus, T.DEALING_EVENTS, CardDealt)
    assert (dealt[-1].hand, dealt[-1].rule, dealt[-1].column) == ("banker", "table_2", "stood")
    assert "3.12(a)" in dealt[-1].source
    results = {s.wager: s.result for s in payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)}
    assert results == {"banker": "win", "cards_5": "win", "cards_4": "lose"}
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_unauthorised_player_third_card_after_both_stand_is_discarded():
    from contracts.events import BetSettled, Irregularity

    from croupier.audit import audit
    from tests.services.helpers import events

    bus = await _physical_round([("3s", "player"), ("3h", "banker"), ("4d", "player"), ("4c", "banker"),
                                 ("9h", "player")])
    irr = payloads(bus, T.DEALING_EVENTS, Irregularity)
    assert [(i.card, i.disposition) for i in irr] == [("9h", "discarded")]
    (res,) = payloads(bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.player_points, res.banker_points, res.winner, res.cards_required) == (7, 7, "tie", 4)
    results = {s.wager: s.result for s in payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)}
    assert results == {"banker": "void", "cards_5": "lose", "cards_4": "win"}
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]
