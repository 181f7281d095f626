"""The console's steps at a chemin de fer table and a curator table (13:69F-4.8, 3.6(b), 3.11(a)), folded from
the dealing service's events as the live feed folds them (services.projection.live_game), cell by cell."""

from __future__ import annotations

from datetime import timedelta

import msgspec

from baccarat.table import profile
from contracts.events import (
    BankSettled,
    BettingClosed,
    CardsCalled,
    DominantPlayerChosen,
    OptionDecided,
    OptionOffered,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    ShoeBurned,
    ShoeKept,
    ShoeOffered,
    ShoePassed,
    TableOpened,
)
from services.projection.console_steps import ConsoleSteps, console_steps
from services.projection.live import TableLive
from services.runtime.translate import table_spec
from tests.unit.test_console_steps import AT, RESOLVED, SEATING, fold, shoe, step


def _table(name: str, source: str = "csprng") -> TableLive:
    return fold(TableLive("T1"), TableOpened(config=table_spec(profile(name))), shoe(source),
                ShoeBurned(shoe_id="S1", exposed="5d", burned_count=5))


def test_a_chemin_de_fer_round_the_bank_the_dominant_player_cards_and_an_option():
    live = _table("chemin_de_fer")
    assert live.game.chemin and step(live) == (("open_round", "close_shoe", *SEATING), "open_round")
    fold(live, RoundOpened(round_id="R1", shoe_id="S1", number=1, banker_seat=2, banker_player_id="p-2",
                           bank_cents=100_000))
    c = live.round.chem  # type: ignore[union-attr]
    assert (c.banker_seat, c.banker_player_id, c.bank_cents) == (2, "p-2", 100_000)
    fold(live, BettingClosed(round_id="R1", bets=[]))
    s = live_steps(live)
    assert (s.valid, s.next) == (("void_round",), None) and "Dominant Player" in s.phase
    fold(live, DominantPlayerChosen(round_id="R1", seat=1, player_id="p-1", wager_cents=100_000, rule="banco"))
    assert c.dominant == {"seat": 1, "player_id": "p-1", "wager_cents": 100_000, "rule": "banco"}
    assert step(live) == (("void_round",), None)  # "Cards" is called by the dealing service itself
    fold(live, CardsCalled(round_id="R1", banker_seat=2, banker_player_id="p-2"))
    assert c.cards_called and live_steps(live).phase == '"Cards": the Banker deals'
    fold(live, OptionOffered(round_id="R1", hand="player", cell="player_5", row=5, column="", seat=1,
                             player_id="p-1", option_seconds=30, default_draw=True))
    assert c.option is not None and c.option["deadline"] == AT + timedelta(seconds=30)
    # the dealer's console: the table clock's expiry only; the terminal: the decision
    assert step(live) == (("expire_option", "void_round"), None)
    assert step(live, "bettor") == (("decide_option",), "decide_option")
    assert "seat 1 (p-1) draws or stands; by default draw" in live_steps(live).phase
    fold(live, OptionDecided(round_id="R1", hand="player", cell="player_5", draw=False, by="default", seat=1,
                             player_id="p-1"))
    assert c.option is None and c.decided[0]["by"] == "default"
    assert step(live) == (("void_round",), None) and step(live, "bettor") == ((), None)
    fold(live, RESOLVED, BankSettled(round_id="R1", seat=2, player_id="p-2", bank_cents=100_000,
                                      wagers_cents=100_000, won_cents=-100_000, commission_cents=0,
                                      commission_accrued=False, bank_after_cents=0))
    assert c.bank == {"won_cents": -100_000, "commission_cents": 0, "bank_after_cents": 0}


def test_a_physical_chemin_de_fer_shoe_reads_cards_once_cards_is_called():
    live = _table("chemin_de_fer", "physical")
    fold(live, RoundOpened(round_id="R1", shoe_id="S1", number=1, banker_seat=2, banker_player_id="p-2",
                           bank_cents=100_000), BettingClosed(round_id="R1", bets=[]),
         DominantPlayerChosen(round_id="R1", seat=1, player_id="p-1", wager_cents=500, rule="highest_wager"))
    assert step(live) == (("void_round",), None)  # no card before "Cards" (4.8(d))
    fold(live, CardsCalled(round_id="R1", banker_seat=2, banker_player_id="p-2"))
    s = live_steps(live)
    assert (s.valid, s.next) == (("read_card", "void_round"), "read_card") and "the Banker, seat 2" in s.phase


def test_a_curator_table_offer_keep_and_the_forced_pass():
    live = _table("punto_banco_curator")
    assert step(live) == (("offer_shoe", "open_round", "close_shoe", *SEATING), "offer_shoe")
    fold(live, ShoeOffered(seat=3, player_id="p-3"))
    assert step(live) == (("open_round", "pass_shoe", "close_shoe", *SEATING), "open_round")
    banker_wins = RoundResolved(round_id="R1", shoe_id="S1", player_cards=["2c", "3c"], banker_cards=["9h", "Kd"],
                                player_points=5, banker_points=9, winner="banker", player_natural=False,
                                banker_natural=True, cards_required=4, dragon_7=False, panda_8=False)
    settled = RoundSettled(round_id="R1", bets=0, stakes=0, payouts=0, commission=0, table_result=0)
    fold(live, RoundOpened(round_id="R1", shoe_id="S1", number=1), BettingClosed(round_id="R1", bets=[]),
         banker_wins, settled)
    assert live.game.due == "R1"  # the Banker's Hand won: the curator's option (3.11(a))
    assert step(live) == (("keep_shoe", "pass_shoe", "open_round", "close_shoe", *SEATING), "keep_shoe")
    fold(live, ShoeKept(round_id="R1", seat=3, player_id="p-3", reason="curator_kept"))
    assert step(live)[1] == "open_round" and live.game.last_move == "kept by seat 3 (p-3)"
    # the Banker's Hand loses round 2: no option, the shoe passed by rule (3.11(a)1)
    fold(live, RoundOpened(round_id="R2", shoe_id="S1", number=2), BettingClosed(round_id="R2", bets=[]),
         msgspec.structs.replace(RESOLVED, round_id="R2"),
         ShoePassed(round_id="R2", from_seat=3, from_player_id="p-3", to_seat=5, to_player_id="p-5",
                    reason="banker_lost"),
         RoundSettled(round_id="R2", bets=0, stakes=0, payouts=0, commission=0, table_result=0))
    assert live.game.holder == (5, "p-5") and live.game.due == ""
    assert "must pass" in live.game.last_move
    assert step(live) == (("open_round", "pass_shoe", "close_shoe", *SEATING), "open_round")


def test_a_table_without_a_curator_offers_no_shoe():
    live = _table("punto_banco")
    assert not live.game.curator_table and "offer_shoe" not in step(live)[0]


def live_steps(live: TableLive) -> ConsoleSteps:
    return console_steps(live)
