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


async def test_physical_shoe_reads_are_checked_and_dealt_by_the_rules():
    bus, _ = floor_bus()
    n = iter(range(1, 1000))

    def cmd(payload):  # type: ignore[no-untyped-def]
        return command("P1", f"c{next(n)}", AT, payload)

    bus.send(T.DEALING_COMMANDS, cmd(OpenTable(config=table_spec(punto_banco_full()))))
    bus.send(T.SHOE_COMMANDS, cmd(LoadShoe(shoe_id="PS", physical=True)))
    await bus.pump()
    bus.send(T.DEALING_COMMANDS, cmd(OpenRound(round_id="R1", shoe_id="PS")))
    await bus.pump()
    bus.send(T.WAGERING_COMMANDS, cmd(PlaceBet(round_id="R1", seat=1, player_id="p", wager="player", amount_cents=2500)))
    bus.send(T.WAGERING_COMMANDS, cmd(CloseBetting(round_id="R1")))
    await bus.pump()
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
