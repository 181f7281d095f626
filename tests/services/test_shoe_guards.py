"""The shoe refuses what no round asked for (issue 28, items 4 and 6), on the in-memory floor.

A forged ``DrawCard`` (numbered 10^18, or for a round still taking bets) once drew a real card, and the pit's
``CloseShoe`` between "No more bets" and the deal voided the round for want of cards. Now each is a
``CommandRejected`` with a reason code, no card leaves the shoe, and the round is dealt as it would have been.
"""

from __future__ import annotations

from datetime import datetime, timezone

from baccarat.table import punto_banco
from contracts import topics as T
from contracts.commands import CloseBetting, CloseShoe, DrawCard, LoadShoe, OpenRound, OpenTable, VoidRound
from contracts.events import CardDrawn, CommandRejected, RoundResolved, RoundVoided, ShoeClosed
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import floor_bus, payloads

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


class Floor:
    """Table G1 on the in-memory floor with shoe GS (seeded), a round R1 open for betting."""

    def __init__(self) -> None:
        self.bus, _ = floor_bus(seed=3)
        self.n = 0

    def send(self, topic: str, payload, actor: str | None = None) -> str:  # type: ignore[no-untyped-def]
        self.n += 1
        cid = f"g{self.n}"
        self.bus.send(topic, command("G1", cid, AT, payload, actor=actor))
        return cid

    async def opened(self) -> "Floor":
        self.send(T.DEALING_COMMANDS, OpenTable(config=table_spec(punto_banco())))
        self.send(T.SHOE_COMMANDS, LoadShoe(shoe_id="GS", cut_at=100))
        await self.bus.pump()
        self.send(T.DEALING_COMMANDS, OpenRound(round_id="R1", shoe_id="GS"))
        await self.bus.pump()
        return self

    def rejected(self, cid: str) -> list[str]:
        return [e.reason for e in payloads(self.bus, T.SHOE_EVENTS, CommandRejected) if e.command_id == cid]

    def drawn(self) -> list[CardDrawn]:
        return payloads(self.bus, T.SHOE_EVENTS, CardDrawn)


async def test_a_draw_out_of_bounds_or_while_betting_is_refused_and_draws_no_card():
    f = await Floor().opened()
    huge = f.send(T.SHOE_DRAWS, DrawCard(shoe_id="GS", round_id="R1", card_number=10**18), actor="")
    early = f.send(T.SHOE_DRAWS, DrawCard(shoe_id="GS", round_id="R1", card_number=1), actor="")
    other = f.send(T.SHOE_DRAWS, DrawCard(shoe_id="GS", round_id="R9", card_number=1), actor="")
    zero = f.send(T.SHOE_DRAWS, DrawCard(shoe_id="GS", round_id="R1", card_number=0), actor="")
    await f.bus.pump()
    assert f.rejected(huge) == ["card_out_of_bounds"] and f.rejected(zero) == ["card_out_of_bounds"]
    assert f.rejected(early) == ["round_not_dealing"] and f.rejected(other) == ["round_not_dealing"]
    assert f.drawn() == []
    # the round is then dealt from the first card after the burn, as if nothing had been sent
    f.send(T.WAGERING_COMMANDS, CloseBetting(round_id="R1"))
    await f.bus.pump()
    (resolved,) = payloads(f.bus, T.DEALING_EVENTS, RoundResolved)
    drawn = f.drawn()
    assert [d.card_number for d in drawn] == list(range(1, len(drawn) + 1)) and 4 <= len(drawn) <= 6
    assert list(resolved.player_cards) + list(resolved.banker_cards) != []
    # after the result no further card leaves the shoe for that round
    late = f.send(T.SHOE_DRAWS, DrawCard(shoe_id="GS", round_id="R1", card_number=6), actor="")
    await f.bus.pump()
    assert len(drawn) == 6 or f.rejected(late) == ["round_not_dealing"]
    assert len(f.drawn()) == len(drawn)


async def test_close_shoe_mid_round_is_refused_and_the_round_is_dealt():
    f = await Floor().opened()
    betting = f.send(T.SHOE_COMMANDS, CloseShoe(shoe_id="GS"))
    await f.bus.pump()
    assert f.rejected(betting) == ["round_in_play"]
    # "No more bets", and the pit's CloseShoe read before the dealing service's draws: refused too
    f.send(T.WAGERING_COMMANDS, CloseBetting(round_id="R1"))
    closing = f.send(T.SHOE_COMMANDS, CloseShoe(shoe_id="GS"))
    await f.bus.pump()
    assert f.rejected(closing) == ["round_in_play"]
    assert payloads(f.bus, T.SHOE_EVENTS, ShoeClosed) == []
    assert payloads(f.bus, T.DEALING_EVENTS, RoundVoided) == []
    assert [r.round_id for r in payloads(f.bus, T.DEALING_EVENTS, RoundResolved)] == ["R1"]
    # between rounds the shoe closes
    after = f.send(T.SHOE_COMMANDS, CloseShoe(shoe_id="GS"))
    await f.bus.pump()
    assert f.rejected(after) == [] and len(payloads(f.bus, T.SHOE_EVENTS, ShoeClosed)) == 1


async def test_a_voided_round_lets_the_shoe_close():
    f = await Floor().opened()
    f.send(T.DEALING_COMMANDS, VoidRound(round_id="R1", reason="dealer_error"))
    await f.bus.pump()
    assert [v.round_id for v in payloads(f.bus, T.DEALING_EVENTS, RoundVoided)] == ["R1"]
    cid = f.send(T.SHOE_COMMANDS, CloseShoe(shoe_id="GS"))
    await f.bus.pump()
    assert f.rejected(cid) == [] and len(payloads(f.bus, T.SHOE_EVENTS, ShoeClosed)) == 1
