"""Each service's FastStream handler under ``TestKafkaBroker`` (in memory: fast, no offsets, no replay)."""

from __future__ import annotations

from datetime import datetime, timezone

from faststream.kafka import TestKafkaBroker

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_dead_letter, encode
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable, PlaceBet, SeatPlayer
from contracts.envelope import Envelope, event_id
from contracts.events import (
    BetLine,
    BetPlaced,
    BetRejected,
    PlayerSeated,
    BetSettled,
    BettingClosed,
    BettingOpened,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    ShoeBurned,
    ShoeLoaded,
    TableOpened,
)
from services.runtime.app import build_app
from services.runtime.core import Decision, command
from services.runtime.settings import Settings
from services.runtime.translate import table_spec
from tests.services.helpers import make_cores

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
SETTINGS = Settings(bootstrap_servers="localhost:9092")
SPEC = table_spec(punto_banco_full())


class Capture:
    """A publisher that keeps what the service would have written."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self.letters: list = []

    async def publish(self, decision: Decision) -> None:
        self.decisions.append(decision)

    async def dead_letter(self, letter) -> None:  # type: ignore[no-untyped-def]
        self.letters.append(letter)

    @property
    def events(self) -> list:
        return [e.payload for d in self.decisions for e in d.events]

    @property
    def sends(self) -> list:
        return [s for d in self.decisions for s in d.sends]


def app_for(name: str) -> tuple[object, Capture]:
    cap = Capture()
    extra = (T.SHOE_DRAWS,) if name == "dealing" else ()
    _, broker, _ = build_app(make_cores()[name], SETTINGS, publisher=cap, extra_topics=extra)  # type: ignore[arg-type]
    return broker, cap


def ev(stream: str, seq: int, payload, table: str = "T1", round_id: str | None = None) -> bytes:  # type: ignore[no-untyped-def]
    return encode(Envelope(event_id=event_id(stream, table, seq), stream=stream, table_id=table, seq=seq,
                           causation_id=f"c{seq}", correlation_id=round_id or table, occurred_at=AT,
                           round_id=round_id, payload=payload))


async def test_shoe_handler_loads_a_shoe_with_commitment_and_burn():
    broker, cap = app_for("shoe")
    async with TestKafkaBroker(broker) as br:
        await br.publish(encode(command("T1", "c1", AT, LoadShoe(shoe_id="S", cut_at=40))), T.SHOE_COMMANDS, key=b"T1")
    kinds = [type(p).__name__ for p in cap.events]
    assert kinds == ["ShoeOrderEncrypted", "ShoeLoaded", "ShoeCut", "ShoeBurned"]
    loaded = cap.events[1]
    assert isinstance(loaded, ShoeLoaded) and loaded.cards == 416 and len(loaded.commitment) == 64
    burned = cap.events[3]
    assert isinstance(burned, ShoeBurned) and 1 <= burned.burned_count <= 10


async def test_dealing_handler_opens_table_and_refuses_a_round_without_a_shoe():
    broker, cap = app_for("dealing")
    async with TestKafkaBroker(broker) as br:
        await br.publish(encode(command("T1", "c1", AT, OpenTable(config=SPEC))), T.DEALING_COMMANDS, key=b"T1")
        await br.publish(encode(command("T1", "c2", AT, OpenRound(round_id="R1", shoe_id="S"))),
                         T.DEALING_COMMANDS, key=b"T1")
    assert isinstance(cap.events[0], TableOpened)
    assert cap.events[1].reason == "no_open_shoe"


async def test_wagering_handler_opens_betting_on_round_opened_and_takes_bets():
    broker, cap = app_for("wagering")
    async with TestKafkaBroker(broker) as br:
        await br.publish(ev(T.DEALING_EVENTS, 1, TableOpened(config=SPEC)), T.DEALING_EVENTS, key=b"T1")
        await br.publish(ev(T.DEALING_EVENTS, 2, RoundOpened(round_id="R1", shoe_id="S", number=1), round_id="R1"),
                         T.DEALING_EVENTS, key=b"T1")
        await br.publish(encode(command("T1", "s3", AT, SeatPlayer(seat=3, player_id="p"))), T.WAGERING_COMMANDS,
                         key=b"T1")
        await br.publish(encode(command("T1", "b1", AT, PlaceBet(round_id="R1", seat=3, player_id="p", wager="tie",
                                                                 amount_cents=1000))), T.WAGERING_BETS, key=b"T1")
        await br.publish(encode(command("T1", "b2", AT, PlaceBet(round_id="R1", seat=3, player_id="p", wager="tie",
                                                                 amount_cents=1))), T.WAGERING_BETS, key=b"T1")
        await br.publish(encode(command("T1", "c", AT, CloseBetting(round_id="R1"))), T.WAGERING_COMMANDS, key=b"T1")
    assert [type(p) for p in cap.events] == [BettingOpened, PlayerSeated, BetPlaced, BetRejected, BettingClosed]
    assert cap.events[3].reason == "under_table_min"
    assert [b.bet_id for b in cap.events[4].bets] == ["b1"]


async def test_settlement_handler_settles_when_book_and_result_meet():
    broker, cap = app_for("settlement")
    book = BettingClosed(round_id="R1", bets=[BetLine(bet_id="b1", seat=1, player_id="p", wager="banker",
                                                      amount_cents=2000)])
    result = RoundResolved(round_id="R1", shoe_id="S", player_cards=["Tc", "5d", "Td"], banker_cards=["3h", "Ks", "4c"],
                           player_points=5, banker_points=7, winner="banker", player_natural=False,
                           banker_natural=False, cards_required=6, dragon_7=True, panda_8=False)
    async with TestKafkaBroker(broker) as br:
        await br.publish(ev(T.DEALING_EVENTS, 1, TableOpened(config=SPEC)), T.DEALING_EVENTS, key=b"T1")
        await br.publish(ev(T.DEALING_EVENTS, 2, RoundOpened(round_id="R1", shoe_id="S", number=1)),
                         T.DEALING_EVENTS, key=b"T1")
        await br.publish(ev(T.DEALING_EVENTS, 3, result, round_id="R1"), T.DEALING_EVENTS, key=b"T1")
        assert cap.events == []  # the book has not arrived yet
        await br.publish(ev(T.WAGERING_EVENTS, 1, book, round_id="R1"), T.WAGERING_EVENTS, key=b"T1")
        await br.publish(ev(T.WAGERING_EVENTS, 1, book, round_id="R1"), T.WAGERING_EVENTS, key=b"T1")  # redelivered
    settled, summary = cap.events
    assert isinstance(settled, BetSettled) and (settled.result, settled.payout, settled.commission) == ("win", 3900, 100)
    assert isinstance(summary, RoundSettled) and summary.table_result == 2000 - 3900  # the house lost $19


async def test_garbage_is_dead_lettered_by_the_handler():
    broker, cap = app_for("wagering")
    async with TestKafkaBroker(broker) as br:
        await br.publish(b"{not json", T.WAGERING_COMMANDS, key=b"T1")
    assert len(cap.letters) == 1 and cap.letters[0].original == b"{not json"
    assert decode_dead_letter(encode(cap.letters[0])).error.startswith("undecodable")
