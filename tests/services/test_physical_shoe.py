"""A physical shoe dealt by hand: cards are read, checked against what is left, and dealt by the rules."""

from __future__ import annotations

from datetime import datetime, timezone

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable, PlaceBet, ReadCard, SeatPlayer
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
    bus.send(T.WAGERING_COMMANDS, cmd(SeatPlayer(seat=1, player_id="p")))
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R1", shoe_id="PS")))
    await bus.pump()
    for wager in wagers:
        bus.send(T.WAGERING_BETS, cmd(PlaceBet(round_id="R1", seat=1, player_id="p", wager=wager,
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


# ---- a physical shoe records its cut and its burn (issue 9, finding 8) -----------------------------------
async def test_a_physical_shoe_records_the_cut_and_reads_the_burn():
    from contracts.commands import ReadBurn
    from contracts.events import CardDrawn, CommandRejected, ShoeBurned, ShoeCut

    from croupier.audit import audit
    from tests.services.helpers import events

    bus, _ = floor_bus()
    n = iter(range(1, 1000))

    def cmd(payload, cid=None):  # type: ignore[no-untyped-def]
        return command("P1", cid or f"c{next(n)}", AT, payload)

    bus.send(T.DEALING_COMMANDS, cmd(OpenTable(config=table_spec(punto_banco_full()))))
    bus.send(T.SHOE_COMMANDS, cmd(LoadShoe(shoe_id="PS", physical=True, cut_at=150)))
    await bus.pump()
    assert [c.cut_at for c in payloads(bus, T.SHOE_EVENTS, ShoeCut)] == [150]
    # refused burns, each with its reason code: too few cards after a 7, an impossible card, not a card
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="PS", exposed="7h", burned=["2c"] * 6), "short"))
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="PS", exposed="3h", burned=["9d"] * 9), "nine-9d"))
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="PS", exposed="Zz", burned=[]), "garbage"))
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="XX", exposed="As", burned=["2c"]), "other-shoe"))
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="PS", exposed="2h", burned=["Qs"] * 2), "good"))
    await bus.pump()
    rejected = {r.command_id: r.reason for r in payloads(bus, T.SHOE_EVENTS, CommandRejected)}
    assert rejected == {"short": "burn_count_mismatch", "nine-9d": "impossible_card", "garbage": "invalid_card",
                        "other-shoe": "no_open_shoe"}
    # the one good burn was recorded; a second one is refused
    burns = payloads(bus, T.SHOE_EVENTS, ShoeBurned)
    assert [(b.exposed, b.burned_count, b.burned) for b in burns] == [("2h", 2, ["Qs", "Qs"])]
    bus.send(T.SHOE_COMMANDS, cmd(ReadBurn(shoe_id="PS", exposed="As", burned=["2c"]), "again"))
    await bus.pump()
    assert [r.reason for r in payloads(bus, T.SHOE_EVENTS, CommandRejected) if r.command_id == "again"] == [
        "burn_done"]
    # the round's cards come after the burn: positions 3.., and the burned queens count against the shoe
    bus.send(T.WAGERING_COMMANDS, cmd(SeatPlayer(seat=1, player_id="p")))
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R1", shoe_id="PS")))
    await bus.pump()
    bus.send(T.WAGERING_BETS, cmd(PlaceBet(round_id="R1", seat=1, player_id="p", wager="player",
                                               amount_cents=2500)))
    bus.send(T.WAGERING_COMMANDS, cmd(CloseBetting(round_id="R1")))
    await bus.pump()
    for i, card in enumerate(["4s", "Kd", "3d", "5d", "Qs"], 1):  # Player 7 stands; Banker 5 draws a queen
        bus.send(T.SHOE_COMMANDS, cmd(ReadCard(shoe_id="PS", round_id="R1", card_number=i, card=card)))
    await bus.pump()
    drawn = payloads(bus, T.SHOE_EVENTS, CardDrawn)
    assert [(d.card, d.position, d.cards_left) for d in drawn] == [
        ("4s", 3, 412), ("Kd", 4, 411), ("3d", 5, 410), ("5d", 6, 409), ("Qs", 7, 408)]
    (res,) = payloads(bus, T.DEALING_EVENTS, RoundResolved)
    assert (res.player_points, res.banker_points, res.winner) == (7, 5, "player")
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]


async def test_a_restarted_shoe_service_rebuilds_the_physical_burn():
    from contracts.commands import ReadBurn
    from contracts.events import CardReadRefused, ShoeBurned
    from services.shoe.core import ShoeCore
    from tests.services.helpers import seeded_entropy
    from tests.vaultkeys import seeded_vault

    bus, hosts = floor_bus()
    bus.send(T.SHOE_COMMANDS, command("P1", "load", AT, LoadShoe(shoe_id="PS", physical=True)))
    # after a 9 the rule burns nine cards: the eight 9 of diamonds of an 8-deck shoe and a 2 of clubs
    bus.send(T.SHOE_COMMANDS, command("P1", "burn", AT, ReadBurn(shoe_id="PS", exposed="9s",
                                                                 burned=["9d"] * 8 + ["2c"])))
    await bus.pump()
    assert [b.burned_count for b in payloads(bus, T.SHOE_EVENTS, ShoeBurned)] == [9]
    # a restarted shoe service folds the log: the eight 9d are out, so a read of a ninth is refused
    bus.remove(hosts["shoe"])
    fresh = bus.add(ShoeCore(seeded_entropy(2), seeded_vault(2)))
    await bus.rebuild(fresh)
    bus.send(T.SHOE_COMMANDS, command("P1", "read", AT, ReadCard(shoe_id="PS", round_id="R1", card_number=1,
                                                                 card="9d")))
    await bus.pump()
    refused = payloads(bus, T.SHOE_EVENTS, CardReadRefused)
    assert [(r.card, "already been dealt" in r.reason) for r in refused] == [("9d", True)]
