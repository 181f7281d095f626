"""What the gateway has read: :class:`EventIndex`, the events by what caused them and by round, bounded, with
waiting for an answer to be whole."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.envelope import Envelope
from contracts.events import TableOpened

#: how often a waiting request re-checks its answer without news (seconds)
POLL_S = 0.1


@dataclass
class _Caused:
    """Events one cause produced in one stream, and the reader's fetch that read the last of them."""

    events: list[Envelope] = field(default_factory=list)
    tp: Any = None
    fetch: int = 0
    last_seq: int = 0


class EventIndex:
    """The events the gateway has read, by what caused them and by round (bounded: the latest
    ``causes_kept`` causes and ``rounds_kept`` rounds are held, the oldest forgotten first; a retry of a
    request whose answer was forgotten waits and gets a 504), with waiting.

    A service publishes all the events of one decision in one transaction, with consecutive ``seq`` in its
    stream; :meth:`caused` says whether all of them have been read: the reader has since caught up with the
    partition's last stable offset (:meth:`caught_up`), or read a later event of the table's stream, or the
    source has no partitions (the in-memory bus delivers whole decisions)."""

    def __init__(self, causes_kept: int = 20_000, rounds_kept: int = 500):
        self._causes: OrderedDict[tuple[str, str, str], _Caused] = OrderedDict()
        self._rounds: OrderedDict[tuple[str, str], list[Envelope]] = OrderedDict()
        self._caught_up: dict[Any, int] = {}
        self._last_seq: dict[tuple[str, str], int] = {}
        self.causes_kept = causes_kept
        self.rounds_kept = rounds_kept
        self.changed = asyncio.Condition()
        #: the tables a ``TableOpened`` was read for
        self.tables: set[str] = set()
        #: whether :attr:`tables` holds every table opened in the log so far (the Kafka reader scans the
        #: dealing events from their start; the in-memory bus reads everything)
        self.tables_complete = True
        #: the reader's last failure (``"<type>: <message>"``), None while it reads cleanly
        self.reader_error: str | None = None

    def add(self, env: Envelope, tp: Any = None, fetch: int = 0) -> None:
        """Index one event read in fetch number ``fetch`` from partition ``tp`` (None: a whole decision)."""
        if isinstance(env.payload, TableOpened):
            self.tables.add(env.table_id)
        key = (env.table_id, env.stream, env.causation_id)
        c = self._causes.get(key)
        if c is None:
            c = self._causes[key] = _Caused()
            if len(self._causes) > self.causes_kept:
                self._causes.popitem(last=False)
        if all(e.event_id != env.event_id for e in c.events):  # a re-delivered event is the same event
            c.events.append(env)
        c.tp, c.fetch = tp, fetch
        c.last_seq = max(c.last_seq, env.seq)
        sk = (env.table_id, env.stream)
        self._last_seq[sk] = max(self._last_seq.get(sk, 0), env.seq)
        rid = env.round_id or getattr(env.payload, "round_id", None)
        if rid:
            rkey = (env.table_id, rid)
            evs = self._rounds.get(rkey)
            if evs is None:
                evs = self._rounds[rkey] = []
                if len(self._rounds) > self.rounds_kept:
                    self._rounds.popitem(last=False)
            if all(e.event_id != env.event_id for e in evs):
                evs.append(env)

    def caught_up(self, tp: Any, fetch: int) -> None:
        """The reader's fetch ``fetch`` left it at ``tp``'s last stable offset: every transaction it had
        started reading is complete."""
        self._caught_up[tp] = fetch

    def caused(self, table_id: str, stream: str, cause_id: str) -> tuple[list[Envelope], bool]:
        """``(events, complete)``: the events of ``stream`` caused by ``cause_id`` at ``table_id`` read so
        far, and whether the decision is known to be whole."""
        c = self._causes.get((table_id, stream, cause_id))
        if c is None:
            return [], False
        done = (c.tp is None or self._caught_up.get(c.tp, -1) >= c.fetch
                or self._last_seq.get((table_id, stream), 0) > c.last_seq)  # the stream's next decision is here
        return list(c.events), done

    def round_events(self, table_id: str, round_id: str) -> list[Envelope]:
        """Every event read of the round at the table, in arrival order."""
        return list(self._rounds.get((table_id, round_id), ()))

    async def notify(self) -> None:
        """Wake every waiter (after a batch was indexed)."""
        async with self.changed:
            self.changed.notify_all()

    async def wait_for(self, ready: Callable[[], Any], timeout_s: float) -> Any:
        """The first truthy ``ready()``, re-checked after every batch (and every :data:`POLL_S`); raises
        ``TimeoutError`` after ``timeout_s`` seconds."""
        got = ready()
        if got:
            return got

        async def _wait() -> Any:
            async with self.changed:
                while True:
                    got = ready()
                    if got:
                        return got
                    try:  # re-checked at least every POLL_S: a readiness may depend on time (SETTLE_S)
                        await asyncio.wait_for(self.changed.wait(), POLL_S)
                    except TimeoutError:
                        pass

        return await asyncio.wait_for(_wait(), timeout_s)
