"""The demo's floor: which game each table deals (:data:`FLOORS`), what the dashboard shows of a table
(:class:`TableBoard`) and of the floor (:class:`FloorRun`), and the demo's dealers, whose seated players have
bankrolls (cents) and whose table has an advantage player (:class:`DemoDealer`, :class:`ChemDemoDealer`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from baccarat.table import TableConfig, no_vig_dragon, profile, punto_banco_full
from contracts.events import (
    BankSettled,
    BetSettled,
    CardDrawn,
    RoundResolved,
    RoundSettled,
    ShoeBurned,
    ShoeLoaded,
)
from services.floor.advantage import AdvantagePlayer
from services.floor.bettors import Seat
from services.floor.chemin import ChemTableDealer
from services.floor.dealer import TableDealer, TableRun


def _standard_table(n: int) -> tuple[str, TableConfig]:
    if n % 3 == 0:
        return "no-vig D7", no_vig_dragon(panda=True)
    return "standard", punto_banco_full()


#: the games of the ``mixed`` floor, table after table: (dashboard label, configuration). Punto banco is
#: dealt from a shoe its curator holds and passes (13:69F-3.6(b), 3.11); casino night by its profile
#: (13:47-20.20, Table 2 as the bank's rule); chemin de fer (13:69F-4) by its profile, the participants
#: holding the bank in turn (:mod:`services.floor.chemin`).
MIXED_GAMES: tuple[tuple[str, Callable[[], TableConfig]], ...] = (
    ("punto banco+curator", lambda: profile("punto_banco_curator")),
    ("no-vig D7", lambda: profile("no_vig_dragon_7")),
    ("casino night", lambda: profile("casino_night")),
    ("chemin de fer", lambda: profile("chemin_de_fer")),
)


def _mixed_table(n: int) -> tuple[str, TableConfig]:
    label, make = MIXED_GAMES[(n - 1) % len(MIXED_GAMES)]
    return label, make()


#: ``--floor`` name -> the game of table ``n`` (1-based): (dashboard label, configuration)
FLOORS: dict[str, Callable[[int], tuple[str, TableConfig]]] = {
    "standard": _standard_table,
    "mixed": _mixed_table,
}


@dataclass
class Bankroll:
    """A seated player's chips, in cents; bets stop when they run out."""

    seat: Seat
    cents: int


@dataclass
class TableBoard:
    """What the dashboard shows of one table."""

    table_id: str
    config: TableConfig
    game: str = ""
    shoe: int = 0
    round: int = 0
    last: str = ""
    results: str = ""
    done: bool = False
    ap_bets: int = 0
    table_result: int = 0


@dataclass
class FloorRun:
    """The floor: every table's board and its dealer's running totals (:class:`TableRun`)."""

    tables: dict[str, TableBoard] = field(default_factory=dict)
    runs: list[TableRun] = field(default_factory=list)

    def total(self, name: str) -> int:
        """Sum of a :class:`TableRun` counter (``rounds``, ``bets``, ``stakes``, ``payouts``, …) over tables."""
        return sum(getattr(r, name) for r in self.runs)

    @property
    def rounds(self) -> int:
        return self.total("rounds")


class DemoDealer(TableDealer):
    """A table dealer whose seated players have bankrolls and whose table has an advantage player."""

    def __init__(self, *a: object, bankrolls: list[Bankroll], ap: AdvantagePlayer, board: TableBoard,
                 run: FloorRun, pause_s: float, **kw: object):
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.bankrolls = {b.seat.seat: b for b in bankrolls}
        self.ap = ap
        self.board = board
        self.floor = run
        self.pause_s = pause_s

    async def open_table(self) -> None:
        await super().open_table()
        await self.seat_players([Seat(self.ap.seat, self.ap.player_id)])  # the advantage player sits down too

    async def play_shoe(self, number: int) -> None:
        self.board.shoe = number
        self.board.results = ""
        self.ap.new_shoe(self.config.shoe.decks)
        await super().play_shoe(number)

    async def play_round(self, shoe_id: str, round_id: str) -> bool:
        # what the advantage player has seen so far: the burn's exposed card and every card drawn
        for e in self.io.log.by_table[self.table_id][getattr(self, "_seen_upto", 0):]:
            p = e.payload
            if isinstance(p, ShoeLoaded):
                self.ap.new_shoe(p.rules.decks)
            elif isinstance(p, ShoeBurned):
                self.ap.saw(p.exposed)
            elif isinstance(p, CardDrawn):
                self.ap.saw(p.card)
        self._seen_upto = len(self.io.log.by_table[self.table_id])
        if self.pause_s:
            await asyncio.sleep(self.pause_s)
        return await super().play_round(shoe_id, round_id)

    def extra_bets(self, round_id: str) -> list:  # type: ignore[type-arg]
        bet = self.ap.bet(self.config, round_id)
        if bet is not None:
            self.board.ap_bets += 1
        return [bet] if bet else []

    def seated(self) -> list[Seat]:
        return [b.seat for b in self.bankrolls.values() if b.cents >= 2_500]


class ChemDemoDealer(DemoDealer, ChemTableDealer):
    """The demo's dealer at a chemin de fer table: the seated players (with bankrolls) hold the bank in turn and
    wager against it (:class:`services.floor.chemin.ChemTableDealer`); the advantage player only watches."""


def _settle_bankrolls(dealer: DemoDealer, round_env) -> None:  # type: ignore[no-untyped-def]
    board = dealer.board
    s = round_env.payload
    assert isinstance(s, RoundSettled)
    rid = s.round_id
    for e in reversed(dealer.io.log.by_table[dealer.table_id]):
        p = e.payload
        if isinstance(p, BetSettled) and p.round_id == rid:
            b = dealer.bankrolls.get(p.seat)
            if b is not None:
                b.cents += p.payout - p.stake - (p.commission if p.commission_accrued else 0)
        elif isinstance(p, BankSettled) and p.round_id == rid:  # chemin de fer: the Banker's side
            b = dealer.bankrolls.get(p.seat)
            if b is not None:
                b.cents += p.won_cents - p.commission_cents
        elif isinstance(p, RoundSettled) and p.round_id != rid:
            break
    board.table_result += s.table_result
    board.round += 1
    for e in reversed(dealer.io.log.by_table[dealer.table_id]):
        p = e.payload
        if isinstance(p, RoundResolved) and p.round_id == rid:
            letter = {"banker": "B", "player": "P", "tie": "T"}[p.winner]
            board.results += letter
            board.last = f"{letter}  P{p.player_points} B{p.banker_points}" + (" D7" if p.dragon_7 else "") + (
                " P8" if p.panda_8 else "")
            break
