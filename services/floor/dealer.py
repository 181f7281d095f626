"""A simulated dealer: runs one table through whole shoes, round after round, as a floor would.

On opening the table it registers the seated players (``SeatPlayer``) and, for each shoe: load it (a CSPRNG shuffle by the shoe service, or a supplied order), then rounds until the
dealing service refuses the next one (end of shoe); for each round: open it, wait for betting to open,
place the seated players' bets (each from the player's betting terminal, on ``wagering.bets``), call "No more bets", wait for the round to be settled. Close the shoe
(the reveal). Ids derive from an injected run id (:mod:`services.floor.ids`), so a second run of the same tables
on the same topics is not taken for retries of the first; time comes from an injected clock, randomness from an
injected ``random.Random``.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Callable

from baccarat.table import TableConfig
from contracts import topics as T
from contracts.commands import (
    CloseBetting,
    CloseShoe,
    Command,
    KeepShoe,
    LoadShoe,
    OfferShoe,
    OpenRound,
    OpenTable,
    PassShoe,
    PlaceBet,
    SeatPlayer,
)
from contracts.envelope import Envelope
from contracts.events import (
    BettingOpened,
    CommandRejected,
    PlayerSeated,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeKept,
    ShoeOffered,
    ShoePassed,
    TableOpened,
)
from contracts.tables import ShoeSpec
from services.floor import ids
from services.floor.bettors import Seat, bets_for_round
from services.floor.io import FloorIO
from services.runtime.core import command
from services.runtime.translate import table_spec

if TYPE_CHECKING:  # pragma: no cover
    from services.floor.cage import CageClerk


RETRIES = 100
RETRY_DELAY_S = 0.05


class Clock:
    """A deterministic clock: starts at ``start`` and moves ``step`` per reading (tests, replays)."""

    def __init__(self, start: datetime | None = None, step: timedelta = timedelta(milliseconds=10)):
        self.now = start or datetime(2026, 1, 1, tzinfo=timezone.utc)
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


@dataclass
class TableRun:
    """What one table did: rounds played and their settlements' totals (cents)."""

    table_id: str
    shoes: int = 0
    rounds: int = 0
    bets: int = 0
    stakes: int = 0
    payouts: int = 0
    commission: int = 0
    table_result: int = 0
    round_ids: list[str] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)
    last_winner: str = ""
    #: at a table with a curator: the shoe kept / passed after a round, by reason (``curator_kept``,
    #: ``banker_lost``, ``curator_passed``, ``dealer_ordered``, ...)
    curator_decisions: dict[str, int] = field(default_factory=dict)
    #: chemin de fer: the option decisions taken, by option cell (:mod:`services.floor.chemin`)
    option_decisions: dict[str, int] = field(default_factory=dict)

    def count(self, settled: RoundSettled) -> None:
        """Add one round's ``RoundSettled`` to the totals (cents)."""
        self.rounds += 1
        self.bets += settled.bets
        self.stakes += settled.stakes
        self.payouts += settled.payouts
        self.commission += settled.commission
        self.table_result += settled.table_result
        self.round_ids.append(settled.round_id)


class TableDealer:
    """Drives one table through ``FloorIO``.

    ``run_id``: the namespace of this run's command, shoe and round ids (:mod:`services.floor.ids`; raises
    :class:`~services.floor.ids.BadRunId` outside its pattern); ``""`` for the un-namespaced ids of a prefix
    used once. ``timeout``: seconds to wait for each awaited event (:class:`~services.floor.io.FloorTimeout`
    after it); ``open_timeout``: for the answer to the first command, ``OpenTable`` (default ``timeout``).
    ``rounds_per_shoe``: close each shoe after that many rounds (None: deal it to the cutting card).
    """

    def __init__(self, io: FloorIO, table_id: str, config: TableConfig, seats: list[Seat], rng: random.Random,
                 clock: Callable[[], datetime], *, timeout: float = 60.0, open_timeout: float | None = None,
                 run_id: str = "", rounds_per_shoe: int | None = None,
                 shoe_order: Callable[[int], list[str]] | None = None,
                 on_round: Callable[[TableRun, Envelope], None] | None = None, cage: CageClerk | None = None):
        self.io = io
        self.table_id = table_id
        self.config = config
        self.seats = seats
        self.rng = rng
        self.clock = clock
        self.timeout = timeout
        self.open_timeout = timeout if open_timeout is None else open_timeout
        self.run_id = ids.check_run_id(run_id) if run_id else ""
        if rounds_per_shoe is not None and rounds_per_shoe < 1:
            raise ValueError(f"rounds_per_shoe must be at least 1, got {rounds_per_shoe}")
        self.rounds_per_shoe = rounds_per_shoe
        self.shoe_order = shoe_order
        self.on_round = on_round
        #: the cage side of the shift (opener, buy-ins, fills, credits, closer, drop count), if any
        self.cage = cage
        self.run_state = TableRun(table_id)
        #: the dealer's id: the actor of every console command this dealer sends
        self.dealer_id = f"dealer-{table_id}"
        #: the curator holding the shoe (seat, player id), at a table with a curator
        self.curator: tuple[int, str] | None = None
        self._n = 0

    def _id(self) -> str:
        self._n += 1
        return ids.command_id(self.table_id, self.run_id, self._n)

    async def _send(self, topic: str, payload: Command, correlation: str = "", actor: str = "") -> str:
        """Send ``payload`` as ``actor`` (default: this dealer); returns the command id."""
        cid = self._id()
        await self.io.send(topic, command(self.table_id, cid, self.clock(), payload, correlation,
                                          actor=actor or self.dealer_id))
        return cid

    def _rejected(self, cid: str) -> Callable[[Envelope], bool]:
        return lambda e: isinstance(e.payload, CommandRejected) and e.payload.command_id == cid

    async def open_table(self) -> None:
        since = self.io.log.mark(self.table_id)
        cid = await self._send(T.DEALING_COMMANDS, OpenTable(config=table_spec(self.config)))
        env = await self.io.wait(self.table_id, lambda e: e.causation_id == cid, since, self.open_timeout)
        if not isinstance(env.payload, TableOpened):
            raise RuntimeError(f"{self.table_id}: table refused: {env.payload}")
        if self.cage is not None:
            await self.cage.open_shift(self)
        await self.seat_players(self.seats)
        if self.config.curator and self.seats:
            await self.offer_shoe(self.seats[0])

    async def offer_shoe(self, seat: Seat) -> None:
        """Offer the shoe to ``seat``'s player, who becomes the curator (13:69F-3.6(b)); the dealing service
        learns of the registry from ``wagering.events``, which may lag: ``unknown_player`` is retried."""
        for attempt in range(RETRIES):
            since = self.io.log.mark(self.table_id)
            cid = await self._send(T.DEALING_COMMANDS, OfferShoe(seat=seat.seat, player_id=seat.player_id))

            def answer(e: Envelope, cid: str = cid) -> bool:
                return e.causation_id == cid

            env = await self.io.wait(self.table_id, answer, since, self.timeout)
            if isinstance(env.payload, ShoeOffered):
                self.curator = (seat.seat, seat.player_id)
                return
            assert isinstance(env.payload, CommandRejected)
            if env.payload.reason != "unknown_player" or attempt == RETRIES - 1:
                raise RuntimeError(f"{self.table_id}: offering the shoe refused: {env.payload}")
            await asyncio.sleep(RETRY_DELAY_S)

    async def curator_decides(self, round_id: str, since: int) -> None:
        """After ``round_id`` at a table with a curator: the shoe passed by rule when the Banker's Hand lost
        (the dealing service's ``ShoePassed`` with the result); otherwise the curator keeps it (most rounds),
        passes it, or now and then the dealer orders it passed (13:69F-3.11(a))."""
        if self.curator is None:
            return
        res = await self.io.wait(self.table_id, lambda e: isinstance(e.payload, (RoundResolved, RoundVoided))
                                 and e.payload.round_id == round_id, since, self.timeout)
        if isinstance(res.payload, RoundVoided):  # a voided round asks no decision
            return
        assert isinstance(res.payload, RoundResolved)
        if res.payload.winner == "player":  # 3.11(a)1: the pass is recorded with the result
            env = await self.io.wait(self.table_id, lambda e: isinstance(e.payload, ShoePassed)
                                     and e.payload.round_id == round_id, since, self.timeout)
        else:
            x = self.rng.random()
            mark = self.io.log.mark(self.table_id)
            if x < 0.03:
                cid = await self._send(T.DEALING_COMMANDS, PassShoe(round_id=round_id, ordered_by="dealer"),
                                       round_id)
            elif x < 0.15:
                cid = await self._send(T.DEALING_COMMANDS, PassShoe(round_id=round_id), round_id,
                                       actor=self.curator[1])
            else:
                cid = await self._send(T.DEALING_COMMANDS, KeepShoe(round_id=round_id), round_id,
                                       actor=self.curator[1])
            env = await self.io.wait(self.table_id, lambda e: e.causation_id == cid, mark, self.timeout)
        p = env.payload
        if isinstance(p, CommandRejected):
            raise RuntimeError(f"{self.table_id}: the curator's decision refused: {p}")
        assert isinstance(p, (ShoeKept, ShoePassed))
        self.run_state.curator_decisions[p.reason] = self.run_state.curator_decisions.get(p.reason, 0) + 1
        if isinstance(p, ShoePassed):
            self.curator = (p.to_seat, p.to_player_id) if p.to_seat else None

    async def seat_players(self, seats: list[Seat]) -> None:
        """Register each seat's player at this table (the player registry) and wait until they are seated."""
        for s in seats:
            since = self.io.log.mark(self.table_id)
            cid = await self._send(T.WAGERING_COMMANDS, SeatPlayer(seat=s.seat, player_id=s.player_id))
            env = await self.io.wait(self.table_id, lambda e: e.causation_id == cid, since, self.timeout)
            if not isinstance(env.payload, PlayerSeated) and not (
                    isinstance(env.payload, CommandRejected) and env.payload.reason == "already_seated"):
                raise RuntimeError(f"{self.table_id}: seating {s.player_id} refused: {env.payload}")
            if self.cage is not None:
                await self.cage.seat(self, s.seat, s.player_id)

    async def play_shoe(self, number: int) -> None:
        shoe_id = ids.shoe_id(self.table_id, self.run_id, number)
        rules = self.config.shoe
        spec = ShoeSpec(decks=rules.decks, end_card_offset=rules.end_card_offset, burn=rules.burn.value,
                        end_of_shoe=rules.end_of_shoe.value, min_cut_depth=rules.min_cut_depth)
        size = rules.size
        cut = self.rng.randint(rules.min_cut_depth, size - rules.min_cut_depth)
        order = self.shoe_order(number) if self.shoe_order else []
        since = self.io.log.mark(self.table_id)
        cid = await self._send(T.SHOE_COMMANDS, LoadShoe(shoe_id=shoe_id, rules=spec, order=order, cut_at=cut))
        env = await self.io.wait(self.table_id, lambda e: (isinstance(e.payload, ShoeBurned) and
                                                           e.payload.shoe_id == shoe_id) or self._rejected(cid)(e),
                                 since, self.timeout)
        if isinstance(env.payload, CommandRejected):
            raise RuntimeError(f"{self.table_id}: shoe refused: {env.payload.detail}")
        self.run_state.shoes += 1
        n = 0
        while self.rounds_per_shoe is None or n < self.rounds_per_shoe:
            n += 1
            if not await self.play_round(shoe_id, ids.round_id(shoe_id, n)):
                break
        since = self.io.log.mark(self.table_id)
        await self._send(T.SHOE_COMMANDS, CloseShoe(shoe_id=shoe_id))
        await self.io.wait(self.table_id, lambda e: isinstance(e.payload, ShoeClosed) and e.payload.shoe_id == shoe_id,
                           since, self.timeout)

    async def play_round(self, shoe_id: str, round_id: str) -> bool:
        """One round; False when the dealing service refuses to open it (the shoe is finished)."""
        for attempt in range(RETRIES):
            since = self.io.log.mark(self.table_id)
            cid = await self._send(T.DEALING_COMMANDS, OpenRound(round_id=round_id, shoe_id=shoe_id), round_id)
            env = await self.io.wait(
                self.table_id,
                lambda e: (isinstance(e.payload, BettingOpened) and e.payload.round_id == round_id)
                or self._rejected(cid)(e),
                since, self.timeout)
            if not isinstance(env.payload, CommandRejected):
                break
            # the dealing service learns of a new shoe from the shoe's stream, which may lag the floor's
            # view by a few milliseconds: a just-loaded shoe is retried, anything else ends the shoe
            if env.payload.reason != "no_open_shoe" or attempt == RETRIES - 1:
                self.run_state.rejections.append(env.payload.reason)
                return False
            await asyncio.sleep(RETRY_DELAY_S)
        bets = bets_for_round(self.rng, self.config, round_id, self.seated()) + self.extra_bets(round_id)
        if self.cage is not None:  # every patron holds the chips he bets; the tray can pay the worst case
            bets = await self.cage.before_bets(self, bets)
        for bet in bets:
            await self._send(T.WAGERING_BETS, bet, round_id, actor=bet.player_id)
        await self._send(T.WAGERING_COMMANDS, CloseBetting(round_id=round_id), round_id)
        env = await self.io.wait(
            self.table_id, lambda e: isinstance(e.payload, RoundSettled) and e.payload.round_id == round_id,
            since, self.timeout)
        s = env.payload
        assert isinstance(s, RoundSettled)
        self.run_state.count(s)
        if self.cage is not None:
            self.cage.after_round(self, round_id, since)
            await self.cage.between_rounds(self)
        if self.config.curator:
            await self.curator_decides(round_id, since)
        if self.on_round:
            self.on_round(self.run_state, env)
        return True

    def seated(self) -> list[Seat]:
        """The players betting this round (all seats by default)."""
        return self.seats

    def extra_bets(self, round_id: str) -> list[PlaceBet]:
        """Further bets for the round (none by default; the demo's advantage player)."""
        return []

    async def run(self, shoes: int = 1) -> TableRun:
        await self.open_table()
        for i in range(1, shoes + 1):
            await self.play_shoe(i)
        if self.cage is not None:
            await self.cage.close_shift(self)
        return self.run_state
