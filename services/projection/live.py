"""The pit's live pages fed from the projection's folds: what each table is doing now, and a bounded fan-out.

:class:`LiveFeed` observes every event the projection host folds (:attr:`services.runtime.core.Runner.observers`)
and does two cheap things on the fold's path, nothing more: it keeps a small per-table view of the round in
play that the projection state does not hold (:class:`TableLive`: the cards with the rule behind each, the
points, the result, the bets and their settlement, the seats, recent voided rounds), and it marks the table
*dirty*. A separate task (:meth:`LiveFeed.run`) wakes on dirty tables, renders what each kind of subscriber
sees once per wake (a subscriber's ``key``: its page, its role's view and filters; the surveillance odds
are rendered only for a surveillance key), and offers the frames to every subscriber's bounded queue. A
subscriber whose queue is full is dropped (its stream ends; the browser's ``EventSource`` reconnects and
renders the whole state again), so a slow client never slows the fold or another client.

Readiness (``ready``: the projection restored and the broker answering) is checked every second; when it
turns true again every table is rendered again (a restore from a snapshot replaces states without folding).
Bounded: per table the round in play, the last :data:`ROUNDS_KEPT` rounds, the last :data:`VOIDS_KEPT`
voided rounds and each seat's players; per subscriber :data:`QUEUE_FRAMES` frames.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from contracts.envelope import Envelope
from contracts.events import (
    AdvantageBetFlagged,
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    CardDealt,
    CommissionAccrued,
    CommissionCollected,
    Irregularity,
    OddsUpdated,
    PlayerLeft,
    PlayerSeated,
    PointsAnnounced,
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
from services.projection.live_game import ChemLive, GameLive, fold_game
from services.runtime.logging import get_logger

log = get_logger("projection.live")

#: finished rounds kept per table (the table page's history)
ROUNDS_KEPT = 5
#: voided rounds kept per table (the surveillance page)
VOIDS_KEPT = 20
#: bet refusals kept per round (a late bet shows its reason)
REFUSALS_KEPT = 20
#: frames a subscriber may have waiting before it is dropped
QUEUE_FRAMES = 256
#: the least time between two renders of the same tables (seconds): folds in between are coalesced
COALESCE_S = 0.005
#: how often a stream says it is alive and whether the projection is ready (seconds)
HEARTBEAT_S = 2.0


@dataclass
class RoundLive:
    """One round as the projection has folded it. Money in cents; ``cards``: ``{card, hand, position, rule,
    why}`` in the order dealt; ``status``: ``betting`` | ``dealing`` | ``resolved`` | ``voided`` | ``settled``."""

    round_id: str
    shoe_id: str = ""
    number: int = 0
    status: str = "betting"
    bets: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    withdrawn: list[dict[str, Any]] = field(default_factory=list)
    book_closed: bool = False
    cards: list[dict[str, Any]] = field(default_factory=list)
    points: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    voided: str = ""
    irregularities: list[dict[str, Any]] = field(default_factory=list)
    settlements: list[dict[str, Any]] = field(default_factory=list)
    settled: dict[str, Any] | None = None
    #: chemin de fer: the Banker, the bank, the Dominant Player, the options (:mod:`services.projection.live_game`)
    chem: ChemLive | None = None


@dataclass
class TableLive:
    """What a table is doing now: the round in play (or the last one), a few rounds before it, the seats
    (``{seat: [player ids]}``), commission owed per ``(seat, player)`` (cents), voided rounds
    (``(round_id, reason)``), whether the current shoe is closed, physical, burned, finished."""

    table_id: str
    round: RoundLive | None = None
    history: deque[RoundLive] = field(default_factory=lambda: deque(maxlen=ROUNDS_KEPT))
    seats: dict[int, list[str]] = field(default_factory=dict)
    owed: dict[tuple[int, str], int] = field(default_factory=dict)
    voids: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=VOIDS_KEPT))
    shoe_id: str = ""
    shoe_closed: bool = False
    #: the current shoe is read by a physical shoe's reader (its burn and cards entered by the dealer)
    shoe_physical: bool = False
    #: the current shoe's burn is done (the first round may open)
    shoe_burned: bool = False
    #: the current shoe's cutting card came out and its last round is dealt (``ShoeFinished``): no round may
    #: open; the dealer closes it (reason ``end_of_shoe``)
    shoe_finished: bool = False
    opened: bool = False
    #: the game dealt and, at a curator table, who holds the shoe (:class:`services.projection.live_game.GameLive`)
    game: GameLive = field(default_factory=GameLive)

    def round_of(self, round_id: str) -> RoundLive | None:
        """The round ``round_id`` if held (in play or recent)."""
        if self.round is not None and self.round.round_id == round_id:
            return self.round
        return next((r for r in self.history if r.round_id == round_id), None)

    def fold(self, env: Envelope) -> None:
        """Take one event (any stream the projection reads); unknown kinds change nothing."""
        self._fold(env)
        fold_game(self, env)

    def _fold(self, env: Envelope) -> None:
        p = env.payload
        if isinstance(p, TableOpened):
            self.opened = True
        elif isinstance(p, ShoeLoaded):
            self.shoe_id, self.shoe_closed, self.shoe_finished = p.shoe_id, False, False
            self.shoe_physical, self.shoe_burned = p.source == "physical", False
        elif isinstance(p, ShoeBurned):
            if p.shoe_id == self.shoe_id:
                self.shoe_burned = True
        elif isinstance(p, ShoeClosed):
            if p.shoe_id == self.shoe_id:
                self.shoe_closed = True
        elif isinstance(p, ShoeFinished):
            if p.shoe_id == self.shoe_id:
                self.shoe_finished = True
        elif isinstance(p, PlayerSeated):
            players = self.seats.setdefault(p.seat, [])
            if p.player_id not in players:
                players.append(p.player_id)
        elif isinstance(p, PlayerLeft):
            players = self.seats.get(p.seat, [])
            if p.player_id in players:
                players.remove(p.player_id)
            if not players:
                self.seats.pop(p.seat, None)
        elif isinstance(p, CommissionAccrued):
            self.owed[(p.seat, p.player_id)] = p.owed_cents
        elif isinstance(p, CommissionCollected):
            self.owed.pop((p.seat, p.player_id), None)
        elif isinstance(p, RoundOpened):
            if self.round is not None and self.round.round_id != p.round_id:
                self.history.appendleft(self.round)
            if self.round is None or self.round.round_id != p.round_id:
                self.round = RoundLive(p.round_id)
            self.round.shoe_id, self.round.number = p.shoe_id, p.number
        else:
            rid = getattr(p, "round_id", None)
            r = self.round_of(rid) if rid else None
            if r is None:
                return
            self._fold_round(r, p)

    def _fold_round(self, r: RoundLive, p: Any) -> None:
        if isinstance(p, BettingOpened):
            return
        if isinstance(p, BetPlaced):
            r.bets.append({"bet_id": p.bet_id, "seat": p.seat, "player_id": p.player_id, "wager": p.wager,
                           "amount_cents": p.amount_cents})
        elif isinstance(p, BetRejected):
            r.refused = (r.refused + [{"seat": p.seat, "reason": p.reason, "detail": p.detail,
                                       "command_id": p.command_id}])[-REFUSALS_KEPT:]
        elif isinstance(p, BetWithdrawn):
            r.withdrawn.append({"bet_id": p.bet_id, "reason": getattr(p, "reason", "")})
            r.bets = [b for b in r.bets if b["bet_id"] != p.bet_id]
        elif isinstance(p, BettingClosed):
            r.book_closed = True
            r.bets = [{"bet_id": b.bet_id, "seat": b.seat, "player_id": b.player_id, "wager": b.wager,
                       "amount_cents": b.amount_cents} for b in p.bets]
            r.status = "dealing" if r.status == "betting" else r.status
        elif isinstance(p, CardDealt):
            r.cards.append({"card": p.card, "hand": p.hand, "position": p.position, "rule": p.rule,
                            "why": p.why, "source": p.source})
            r.status = "dealing" if r.status in ("betting", "dealing") else r.status
        elif isinstance(p, PointsAnnounced):
            r.points = {"player": p.player_points, "banker": p.banker_points, "natural": p.natural}
        elif isinstance(p, Irregularity):
            r.irregularities.append({"kind": p.kind, "detail": getattr(p, "detail", "")})
        elif isinstance(p, RoundResolved):
            r.result = {"winner": p.winner, "player_cards": list(p.player_cards),
                        "banker_cards": list(p.banker_cards), "player_points": p.player_points,
                        "banker_points": p.banker_points, "player_natural": p.player_natural,
                        "banker_natural": p.banker_natural, "dragon_7": p.dragon_7,
                        "panda_8": getattr(p, "panda_8", False)}
            if r.status != "settled":
                r.status = "resolved"
        elif isinstance(p, RoundVoided):
            r.voided, r.status = p.reason, "voided"
            self.voids.appendleft((r.round_id, p.reason))
        elif isinstance(p, BetSettled):
            r.settlements.append({"bet_id": p.bet_id, "seat": p.seat, "player_id": p.player_id, "wager": p.wager,
                                  "stake": p.stake, "result": p.result, "category": p.category,
                                  "payout": p.payout, "commission": p.commission,
                                  "commission_accrued": p.commission_accrued})
        elif isinstance(p, RoundSettled):
            r.settled = {"bets": p.bets, "stakes": p.stakes, "payouts": p.payouts, "commission": p.commission,
                         "table_result": p.table_result}
            if r.status != "voided":
                r.status = "settled"


class Subscriber:
    """One live stream: ``key`` says what it is shown (the same key, the same frames); ``queue`` holds at
    most :data:`QUEUE_FRAMES` frames, ``None`` last when the stream must end (dropped or closing)."""

    def __init__(self, key: Hashable, size: int = QUEUE_FRAMES):
        self.key = key
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=size)
        self.dropped = False

    def offer(self, frame: str) -> bool:
        """Queue ``frame``; False (and the stream ended) when the queue is full: the client is too slow."""
        if self.dropped:
            return False
        try:
            self.queue.put_nowait(frame)
            return True
        except asyncio.QueueFull:
            self.end()
            self.dropped = True
            return False

    def end(self) -> None:
        """End the stream: drop what waits, leave ``None``."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


#: renders ``(key, table ids)`` into SSE frames (text ``event: ...\\ndata: ...\\n\\n``)
Render = Callable[[Hashable, list[str]], list[str]]


class LiveFeed:
    """Observes a projection runner's folds and fans rendered frames out to subscribers.

    ``tables()``: the table ids held now (the runner's); ``ready()``: whether the projection is ready;
    ``render``: see :data:`Render` (set with :meth:`set_render` before :meth:`run`). Everything runs on the
    event loop; :meth:`observe` only records and marks."""

    def __init__(self, tables: Callable[[], Iterable[str]], ready: Callable[[], bool] = lambda: True):
        self.tables = tables
        self.ready = ready
        self.live: dict[str, TableLive] = {}
        self.subscribers: set[Subscriber] = set()
        self.closed = False
        self.render: Render | None = None
        #: frames offered, subscribers dropped for being slow (counters, for tests and benchmarks)
        self.offered = 0
        self.drops = 0
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._was_ready: bool | None = None

    def attach(self, runner: Any) -> LiveFeed:
        """Observe ``runner``'s folds (:attr:`~services.runtime.core.Runner.observers`)."""
        runner.observers.append(self.observe)
        return self

    def table(self, table_id: str) -> TableLive:
        """The live view of ``table_id`` (an empty one for a table not seen)."""
        got = self.live.get(table_id)
        if got is None:
            got = self.live[table_id] = TableLive(table_id)
        return got

    def observe(self, env: Envelope) -> None:
        """One folded event: update the table's live view, mark the table. Never raises."""
        try:
            if not isinstance(env.payload, OddsUpdated | AdvantageBetFlagged):
                self.table(env.table_id).fold(env)
        except Exception:  # a view's failure must not fail the projection's fold
            log.exception("live_fold_failed", table_id=env.table_id, event_id=env.event_id)
        self._dirty.add(env.table_id)
        self._wake.set()

    def mark_all(self) -> None:
        """Render every table again (readiness came back, a snapshot was restored)."""
        self._dirty.update(self.tables())
        self._wake.set()

    def set_render(self, render: Render) -> None:
        self.render = render

    def subscribe(self, key: Hashable) -> Subscriber:
        """A new stream for ``key``."""
        sub = Subscriber(key)
        if self.closed:
            sub.end()
        else:
            self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)

    def close(self) -> None:
        """End every stream (the server is stopping) and the fan-out."""
        self.closed = True
        for sub in list(self.subscribers):
            sub.end()
        self.subscribers.clear()
        self._wake.set()

    def fan_out(self) -> int:
        """Render the dirty tables once per key and offer the frames; returns the frames offered."""
        dirty, self._dirty = sorted(self._dirty), set()
        if not dirty or not self.subscribers or self.render is None:
            return 0
        frames: dict[Hashable, list[str]] = {}
        n = 0
        for sub in list(self.subscribers):
            got = frames.get(sub.key)
            if got is None:
                try:
                    got = frames[sub.key] = self.render(sub.key, dirty)
                except Exception:  # a rendering bug must not end every stream
                    log.exception("live_render_failed", key=str(sub.key))
                    got = frames[sub.key] = []
            for frame in got:
                if not sub.offer(frame):
                    self.drops += 1
                    self.subscribers.discard(sub)
                    log.info("live_subscriber_dropped", key=str(sub.key), reason="queue_full")
                    break
                n += 1
        self.offered += n
        return n

    async def run(self) -> None:
        """The fan-out task: until :meth:`close`, wake on dirty tables (coalescing :data:`COALESCE_S`), and
        once a second check readiness (back to ready: every table again)."""
        ticker = asyncio.create_task(self._tick())
        try:
            while not self.closed:
                await self._wake.wait()
                self._wake.clear()
                if self.closed:
                    break
                await asyncio.sleep(COALESCE_S)
                self.fan_out()
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    async def _tick(self) -> None:
        while not self.closed:
            ready = bool(self.ready())
            if ready and self._was_ready is False:
                self.mark_all()
            self._was_ready = ready
            await asyncio.sleep(1.0)


__all__ = ["COALESCE_S", "HEARTBEAT_S", "LiveFeed", "RoundLive", "Subscriber", "TableLive"]
