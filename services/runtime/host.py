"""A service host: the :class:`~services.runtime.core.Runner` wired to messages, a publisher and the log.

It decodes each message (garbage goes to the service's dead-letter topic with the error and the original
bytes; a well-formed message of an unknown type is skipped and logged), decides or folds it, publishes the
resulting decision, then lets the core react until nothing more is due. :meth:`rebuild` replays the
service's own events and its inputs from offset zero before anything new is handled.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Awaitable, Callable, Protocol

import structlog

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event
from contracts.envelope import DeadLetter
from services.runtime.core import Decision, Runner, ServiceCore
from services.runtime.logging import get_logger
from services.runtime.metrics import ServiceMetrics
from services.runtime.settings import Settings

MAX_REACTIONS = 1000


class Publisher(Protocol):
    async def publish(self, decision: Decision) -> None: ...

    async def dead_letter(self, letter: DeadLetter) -> None: ...


async def publish_all(publisher: Publisher, decisions: list[Decision]) -> None:
    """Publish several decisions, in one transaction when the publisher can."""
    many = getattr(publisher, "publish_many", None)
    if many is not None:
        await many(decisions)
        return
    for d in decisions:
        await publisher.publish(d)


class NullPublisher:
    """Publishes nothing: for a read-only replica (e.g. the query API alone) that folds but never writes."""

    async def publish(self, decision: Decision) -> None:
        return None

    async def dead_letter(self, letter: DeadLetter) -> None:
        return None


Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The wall clock (only for dead letters' ``received_at``; events take their time from commands)."""
    return datetime.now(timezone.utc)


def set_aside_by(letters: list[Any]) -> set[tuple[str, int, int]]:
    """``(topic, partition, offset)`` of the records a service's dead letters (raw records of its dead-letter
    topic) set aside before: a rebuild never decides them again. An undecodable letter is passed over."""
    from contracts.codecs import decode_dead_letter

    out: set[tuple[str, int, int]] = set()
    for rec in letters:
        try:
            letter = decode_dead_letter(rec.value)
        except Exception:  # noqa: BLE001 - not a letter of ours: nothing to set aside
            continue
        out.add((letter.topic, letter.partition, letter.offset))
    return out


class ServiceHost:
    """Runs one service's core against messages."""

    def __init__(self, core: ServiceCore[Any], settings: Settings, publisher: Publisher,
                 clock: Clock = utc_now):
        self.core = core
        self.settings = settings
        self.publisher = publisher
        self.runner: Runner[Any] = Runner(core)
        self.clock = clock
        self.log = get_logger(core.name)
        #: the service's Prometheus counters (:mod:`services.runtime.metrics`); a replica's are relabelled
        self.metrics = ServiceMetrics(core.name)
        self.dead_letters = 0
        self.skipped = 0
        #: commands dropped because their id had already caused an event (retries, re-sent commands)
        self.duplicate_commands = 0
        #: (topic, partition, offset) of records already dead-lettered or skipped: a replay after a
        #: restart or reassignment must not dead-letter (or count) the same record twice
        self._set_aside: set[tuple[str, int, int]] = set()
        #: decisions of the batch being handled (batch mode), published together by :meth:`handle_batch`
        self._batch: list[Decision] | None = None
        #: dead letters of the batch being collected (:meth:`collect`): written in the batch's transaction
        self._letters: list[DeadLetter] | None = None
        #: set when a batch could not be published: the state ran ahead of the log and must be rebuilt
        self.stale = False
        #: log each published event at debug rather than info (the projection writes two odds per card)
        self.quiet_events = getattr(core, "quiet_events", False)
        #: the partition a table's records belong on (set by the Kafka runtime, :class:`Tasks`); None on the
        #: in-memory bus, whose topics have one partition
        self.partition_of: Callable[[str], int] | None = None
        #: handling and rebuilding take turns: a rebuild (on a partition assignment) and a handler must never
        #: run at once, or they would interleave two transactions on one producer
        self.lock = asyncio.Lock()

    @property
    def subscribed_topics(self) -> list[str]:
        """Full names of the topics the service consumes: its commands then its inputs."""
        base = list(self.core.command_streams) + list(self.core.input_streams)
        return [self.settings.topic(t) for t in base]

    async def _publish(self, decision: Decision) -> None:
        if decision and self._batch is not None:
            enqueue = getattr(self.publisher, "enqueue", None)
            if enqueue is not None:  # a publisher without transactions sends at once; the batch awaits delivery
                await enqueue(decision)
            self.runner.commit(decision)
            self._batch.append(decision)
            return
        if decision:
            await self.publisher.publish(decision)
            self.runner.commit(decision)
            self._log_events(decision)

    def _log_events(self, decision: Decision) -> None:
        self.metrics.published(decision.events)
        log = self.log.debug if self.quiet_events else self.log.info
        for env in decision.events:
            log("event", type=env.payload.__struct_config__.tag, table_id=env.table_id, round_id=env.round_id,
                event_id=env.event_id, seq=env.seq)

    async def _react(self, table_id: str, last: Any) -> None:
        for _ in range(MAX_REACTIONS):
            decision = self.runner.react(table_id, last)
            if not decision:
                return
            await self._publish(decision)
        self.log.error("reaction_loop", table_id=table_id)

    async def _dead_letter(self, topic: str, partition: int, offset: int, key: bytes | None, body: bytes,
                           error: str) -> None:
        if (topic, partition, offset) in self._set_aside:
            return
        self._set_aside.add((topic, partition, offset))
        self.dead_letters += 1
        self.metrics.dead_letter(error.split(":", 1)[0].replace(" ", "_"))
        self.log.warning("dead_letter", topic=topic, partition=partition, offset=offset, error=error)
        letter = DeadLetter.of(service=self.core.name, topic=topic, partition=partition, offset=offset, key=key,
                               error=error, original=body, received_at=self.clock())
        if self._letters is not None:
            self._letters.append(letter)
            return
        await self.publisher.dead_letter(letter)

    async def handle(self, topic: str, partition: int, offset: int, key: bytes | None, body: bytes) -> None:
        """Handle one record of a subscribed topic (full name)."""
        if self._batch is not None:  # inside handle_batch, which holds the lock
            await self._handle(topic, partition, offset, key, body)
            return
        async with self.lock:
            try:
                await self._handle(topic, partition, offset, key, body)
            except BaseException:
                self.metrics.settle(False)  # not published: redelivered, and counted then
                raise
            self.metrics.settle(True)  # published as decided

    async def _handle(self, topic: str, partition: int, offset: int, key: bytes | None, body: bytes,
                      logged_ms: int | None = None) -> None:
        t0 = time.perf_counter()
        base = self.settings.base(topic)
        kind = await self._handle_record(base, topic, partition, offset, key, body, logged_ms)
        self.metrics.handled(base, kind, time.perf_counter() - t0)

    async def _handle_record(self, base: str, topic: str, partition: int, offset: int, key: bytes | None,
                             body: bytes, logged_ms: int | None) -> str:
        """Handle one record; returns its message type tag (``undecodable`` or ``unknown`` without one)."""
        is_command = base in self.core.command_streams
        try:
            msg = decode_command(body) if is_command else decode_event(body)
        except UnknownMessageType as e:
            if (topic, partition, offset) not in self._set_aside:
                self._set_aside.add((topic, partition, offset))
                self.skipped += 1
                self.metrics.ignored("unknown_type")
                self.log.warning("unknown_message_type_skipped", topic=topic, offset=offset, type=e.type_name)
            return "unknown"
        except Undecodable as e:
            await self._dead_letter(topic, partition, offset, key, body, f"undecodable: {e}")
            return "undecodable"
        # whatever is logged while this record is handled (a client's line too) names its table and round
        round_id = getattr(msg.payload, "round_id", None) if is_command else getattr(msg, "round_id", None)
        bound = (structlog.contextvars.bind_contextvars(table_id=msg.table_id, round_id=round_id) if round_id
                 else structlog.contextvars.bind_contextvars(table_id=msg.table_id))
        try:
            return await self._handle_decoded(msg, is_command, base, topic, partition, offset, key, body, logged_ms)
        finally:
            structlog.contextvars.reset_contextvars(**bound)

    async def _handle_decoded(self, msg: Any, is_command: bool, base: str, topic: str, partition: int, offset: int,
                              key: bytes | None, body: bytes, logged_ms: int | None) -> str:
        kind = str(msg.payload.__struct_config__.tag)
        misrouted = self._misrouted(msg.table_id, partition, key)
        if misrouted:
            await self._dead_letter(topic, partition, offset, key, body, f"misrouted: {misrouted}")
            return kind
        try:
            if is_command:
                logged = datetime.fromtimestamp(logged_ms / 1000, timezone.utc) if logged_ms is not None else None
                skew = self.settings.max_clock_skew_s
                decision = self.runner.decide(msg, logged,  # type: ignore[arg-type]
                                              timedelta(seconds=skew) if skew > 0 else None,
                                              route=T.ROUTES[base])
                if not decision:
                    self.duplicate_commands += 1
                    self.metrics.ignored("duplicate_command")
                    self.log.info("duplicate_command", table_id=msg.table_id, command_id=msg.command_id)
                else:
                    self.metrics.decided(kind, decision.events)
                await self._publish(decision)
                await self._react(msg.table_id, None if not decision.events else decision.events[-1])
            else:
                if self.runner.absorb_input(msg):  # type: ignore[arg-type]
                    await self._react(msg.table_id, msg)
                else:
                    self.metrics.ignored("duplicate_event")
        except Exception as e:  # a bug must not become a crash loop: dead-letter the message and go on
            self.log.exception("handler_failed", topic=topic, offset=offset)
            await self._dead_letter(topic, partition, offset, key, body, f"handler failed: {type(e).__name__}: {e}")
        return kind

    def _misrouted(self, table_id: str, partition: int, key: bytes | None) -> str:
        """Why a record of ``table_id`` is not where its table's records are (its key is not the table id, or
        its partition is not the one the table id maps to), else "". Every table's records are keyed by its
        id: a record elsewhere was written by hand, to reach a task that does not own the table."""
        if key is not None and key != T.key(table_id):
            return f"key {key[:64]!r} is not table {table_id!r}'s"
        if self.partition_of is not None and partition != (want := self.partition_of(table_id)):
            return f"on partition {partition}, table {table_id!r} is on partition {want}"
        return ""

    async def handle_batch(self, records: list[tuple[str, int, int, bytes | None, bytes]]) -> int:
        """Handle several records, then publish everything they caused in one transaction.

        Returns the number of decisions published. If publishing fails the state has run ahead of the log:
        :attr:`stale` is set and the caller must :meth:`rebuild` before handling more.
        """
        async with self.lock:
            return await self._handle_batch(records)

    async def _handle_batch(self, records: list[tuple[str, int, int, bytes | None, bytes]]) -> int:
        self._batch = []
        try:
            for topic, partition, offset, key, body in records:
                await self._handle(topic, partition, offset, key, body)
            decisions = self._batch
        finally:
            self._batch = None
        if not decisions:
            self.metrics.settle(True)  # dead letters, if any, went out as they were made
            return 0
        try:
            flush = getattr(self.publisher, "flush", None)
            if flush is not None:
                await flush()
            else:
                await publish_all(self.publisher, decisions)
        except Exception:
            self.stale = True
            self.metrics.settle(False)
            self.log.exception("batch_publish_failed", decisions=len(decisions))
            return 0
        self.metrics.settle(True)
        for d in decisions:
            self._log_events(d)
        return len(decisions)

    async def collect(self, records: list[tuple[Any, ...]]) -> tuple[list[Decision], list[DeadLetter]]:
        """Handle records without publishing: the decisions they caused (already folded into the state, in
        order) and the dead letters they made. ``records``: (topic, partition, offset, key, value[, broker
        append time in ms of a command record]). The caller publishes both in one transaction together with
        the records' offsets, or, if that fails, restores the state from the log (it has run ahead).
        The caller holds :attr:`lock`."""
        self._batch, self._letters = [], []
        try:
            for rec in records:
                await self._handle(*rec)
            return self._batch, self._letters
        finally:
            self._batch, self._letters = None, None

    def uncollect(self, letters: list[DeadLetter]) -> None:
        """The transaction that carried ``letters`` (made by :meth:`collect`) failed: forget that their
        records were set aside, so that the re-read dead-letters them again (else the re-read would skip them
        as already set aside, and they would be in no dead-letter topic: a silent drop)."""
        for letter in letters:
            if (letter.topic, letter.partition, letter.offset) in self._set_aside:
                self._set_aside.discard((letter.topic, letter.partition, letter.offset))
                self.dead_letters -= 1

    async def collect_reactions(self, table_ids: list[str]) -> list[Decision]:
        """Whatever the given tables' states make due now (after a restore), folded and returned for the
        caller to publish. The caller holds :attr:`lock`."""
        self._batch, self._letters = [], []
        try:
            for table_id in table_ids:
                await self._react(table_id, None)
            return self._batch
        finally:
            self._batch, self._letters = None, None

    def fold_own(self, value: bytes) -> bool:
        """Fold one raw record of an own stream (restore). False if undecodable, unknown or a duplicate."""
        try:
            env = decode_event(value)
        except (UnknownMessageType, Undecodable):
            return False
        return self.runner.apply_own(env)

    def fold_input(self, value: bytes) -> bool:
        """Fold one raw record of an input stream (restore). False if undecodable, unknown or a duplicate."""
        try:
            env = decode_event(value)
        except (UnknownMessageType, Undecodable):
            return False
        return self.runner.absorb_input(env)

    def log_published(self, decisions: list[Decision]) -> None:
        """Log the events of decisions that are now published."""
        for d in decisions:
            self._log_events(d)

    async def rebuild(self, read: Callable[[str], Awaitable[list[Any]]]) -> int:
        """Forget every table and replay: own events, then inputs, then whatever reactions are due.

        ``read(full_topic)`` returns the records to replay. Returns the number of records folded.
        """
        async with self.lock:
            return await self._rebuild(read)

    async def _rebuild(self, read: Callable[[str], Awaitable[list[Any]]]) -> int:
        t0 = time.perf_counter()
        self.runner.reset()
        self.stale = False
        n = 0
        from contracts.topics import dlq

        self._set_aside.update(set_aside_by(await read(self.settings.topic(dlq(self.core.name)))))
        for stream in (*self.core.private_streams, self.core.own_stream):
            for rec in await read(self.settings.topic(stream)):
                n += self.fold_own(rec.value)
        for stream in self.core.input_streams:
            for rec in await read(self.settings.topic(stream)):
                n += self.fold_input(rec.value)
        for table_id in list(self.runner.tables):
            await self._react(table_id, None)
        self.metrics.restored(time.perf_counter() - t0, "rebuild")
        self.log.info("rebuilt", records=n, tables=len(self.runner.tables))
        return n

    def open_rounds(self) -> dict[str, int]:
        """``{table id: rounds open}`` by the core's own measure (``core.open_rounds(state)``: the dealing
        service's round in play, the settlement service's rounds not settled yet); empty for a core
        that has none. Read on the event loop's thread."""
        measure = getattr(self.core, "open_rounds", None)
        if measure is None:
            return {}
        return {t: measure(slot.state) for t, slot in list(self.runner.tables.items())}
