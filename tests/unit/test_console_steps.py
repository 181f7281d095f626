"""The console's steps: at each moment of a table's life, the actions offered and the next one, cell by cell,
folded from the events the live feed folds (services.projection.live.TableLive)."""

from __future__ import annotations

from datetime import UTC, datetime

from baccarat.table import profile
from contracts.envelope import Envelope
from contracts.events import (
    BettingClosed,
    CardDealt,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeFinished,
    ShoeLoaded,
    TableOpened,
)
from contracts.tables import ShoeSpec
from services.projection.console_steps import console_steps
from services.projection.live import TableLive
from services.runtime.translate import table_spec

AT = datetime(2026, 12, 1, tzinfo=UTC)
SEATING = ("seat_player", "leave_seat", "collect_commission")


def fold(live: TableLive, *payloads: object) -> TableLive:
    for n, p in enumerate(payloads):
        live.fold(Envelope(event_id=f"e{n}", stream="x", table_id="T1", seq=n + 1, causation_id="c",
                           correlation_id="T1", occurred_at=AT, payload=p))  # type: ignore[arg-type]
    return live


def step(live: TableLive | None, role: str = "dealer") -> tuple[tuple[str, ...], str | None]:
    s = console_steps(live, role)
    return s.valid, s.next


def shoe(source: str, shoe_id: str = "S1") -> ShoeLoaded:
    return ShoeLoaded(shoe_id=shoe_id, rules=ShoeSpec(), cards=416, source=source)


def card(rid: str, n: int) -> CardDealt:
    return CardDealt(round_id=rid, card="9h", hand="player", position=n, rule="initial", source="", why="")


RESOLVED = RoundResolved(round_id="R1", shoe_id="S1", player_cards=["9h", "Kd"], banker_cards=["2c", "3c"],
                         player_points=9, banker_points=5, winner="player", player_natural=True,
                         banker_natural=False, cards_required=4, dragon_7=False, panda_8=False)


def test_a_shuffled_shoe_step_by_step():
    live = TableLive("T1")
    assert step(None) == (("open_table",), "open_table")
    assert step(live) == (("open_table",), "open_table")
    fold(live, TableOpened(config=table_spec(profile("punto_banco"))))
    assert step(live) == (("load_shoe", *SEATING), "load_shoe")
    fold(live, shoe("csprng"), ShoeBurned(shoe_id="S1", exposed="5d", burned_count=5))
    assert step(live) == (("open_round", "close_shoe", *SEATING), "open_round")
    fold(live, RoundOpened(round_id="R1", shoe_id="S1", number=1))
    assert step(live) == (("no_more_bets", "void_round", *SEATING), "no_more_bets")
    assert step(live, "bettor") == (("place_bet",), "place_bet")
    fold(live, BettingClosed(round_id="R1", bets=[]))
    assert step(live) == (("void_round",), None)  # the dealing service deals: nothing to do but wait
    assert step(live, "bettor") == ((), None)
    fold(live, card("R1", 1), RESOLVED)
    assert step(live) == ((), None)  # resolved: the settlement follows by itself
    fold(live, RoundSettled(round_id="R1", bets=0, stakes=0, payouts=0, commission=0, table_result=0))
    assert step(live) == (("open_round", "close_shoe", *SEATING), "open_round")
    fold(live, ShoeClosed(shoe_id="S1", reason="end_of_shoe", cards_dealt=400))
    assert step(live) == (("load_shoe", *SEATING), "load_shoe")


def test_a_physical_shoe_waits_for_its_burn_and_each_card_read():
    live = fold(TableLive("T1"), TableOpened(config=table_spec(profile("punto_banco"))), shoe("physical"))
    assert step(live) == (("read_burn", "close_shoe", *SEATING), "read_burn")
    fold(live, ShoeBurned(shoe_id="S1", exposed="5d", burned_count=5), RoundOpened(round_id="R1", shoe_id="S1",
                                                                                  number=1))
    fold(live, BettingClosed(round_id="R1", bets=[]))
    assert step(live) == (("read_card", "void_round"), "read_card")
    fold(live, card("R1", 1), card("R1", 2))
    assert step(live) == (("read_card", "void_round"), "read_card")
    fold(live, RESOLVED)
    assert step(live) == ((), None)


def test_a_voided_round_is_followed_by_the_next_round_and_a_new_shoe_by_its_burn():
    live = fold(TableLive("T1"), TableOpened(config=table_spec(profile("punto_banco"))), shoe("csprng"),
                ShoeBurned(shoe_id="S1", exposed="5d", burned_count=5), RoundOpened(round_id="R1", shoe_id="S1",
                                                                                   number=1))
    fold(live, RoundVoided(round_id="R1", reason="card exposed"))
    assert step(live)[1] == "open_round"
    fold(live, shoe("physical", "S2"))  # a round of the old shoe is not this shoe's
    assert step(live)[1] == "read_burn"
    fold(live, ShoeBurned(shoe_id="S2", exposed="5d", burned_count=5))
    assert step(live)[1] == "open_round"


def test_a_finished_shoe_offers_only_its_close_at_the_end_of_shoe():
    """The cutting card out and the last round dealt (``ShoeFinished``, emitted with the last round's result):
    once that round is settled the next step is the end-of-shoe close, not a round the dealing service would
    refuse (``shoe_complete``); a ``ShoeFinished`` of another shoe changes nothing; the next shoe starts over."""
    live = fold(TableLive("T1"), TableOpened(config=table_spec(profile("punto_banco"))), shoe("csprng"),
                ShoeBurned(shoe_id="S1", exposed="5d", burned_count=5), RoundOpened(round_id="R1", shoe_id="S1",
                                                                                   number=1),
                BettingClosed(round_id="R1", bets=[]), card("R1", 1))
    fold(live, ShoeFinished(shoe_id="S0", rounds=1))
    assert not live.shoe_finished
    fold(live, RESOLVED, ShoeFinished(shoe_id="S1", rounds=1))
    assert step(live) == ((), None)  # the last round settles first
    fold(live, RoundSettled(round_id="R1", bets=0, stakes=0, payouts=0, commission=0, table_result=0))
    assert step(live) == (("end_shoe", *SEATING), "end_shoe")
    assert console_steps(live).phase == "end of shoe: the cutting card is out; close the shoe"
    fold(live, ShoeClosed(shoe_id="S1", reason="end_of_shoe", cards_dealt=24))
    assert step(live) == (("load_shoe", *SEATING), "load_shoe")
    fold(live, shoe("csprng", "S2"), ShoeBurned(shoe_id="S2", exposed="5d", burned_count=5))
    assert not live.shoe_finished and step(live)[1] == "open_round"
