"""Send an action's command once per request id and wait for what it caused (the library the HTTP API and
``croupier table`` both use).

:class:`CommandGateway` turns a request (an action of :mod:`services.command_api.actions`, a request id, the
table) into a command envelope whose ``command_id`` derives from the request id (the same request id gives the
same command id: the services drop a retry of a command id from the same principal), sends it on its topic
under the topic's writer principal, and waits until the deciding service's events caused by that command id
are all in (:class:`EventIndex`): the :class:`Answer` is ``accepted`` with them, or ``rejected`` with the
reason code of the ``CommandRejected`` / ``BetRejected`` / ``CardReadRefused``. A request id already answered
gets the same answer again without sending anything; the same request id with another request is refused
(:class:`RequestIdReused`), also by a gateway that never answered the first (a new ``croupier table``
process, a restarted API): the events the log holds for the command id must be what this command would cause
(:func:`caused_by`), and a service's ``command_id_reused`` refusal says so too; no answer within the timeout
raises :class:`AnswerTimeout` (the command may still be decided: retry with the same request id). A command
for a table no ``TableOpened`` was read for is refused :class:`UnknownTable` (404; not ``open_table``); while
the reader is failing, requests answer :class:`ReaderFailed` (503). A betting terminal's action (``place_bet``,
``withdraw_bet``, ``decide_option``) for a player the caller's bettor credential is not bound to is refused
:class:`NotYourPlayer` (403) before anything is sent.

Transports (:class:`CommandBus`): :class:`KafkaCommandBus` (aiokafka: an idempotent producer per writer
principal, one ``read_committed`` reader of the four event topics, no consumer group) and
:class:`MemoryCommandBus` (the in-memory bus of :mod:`services.runtime.memory`, for tests). Time enters through
the injected ``clock``; nothing here draws an id.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, KafkaTimeoutError

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event, encode
from contracts.commands import PassShoe
from contracts.envelope import CommandEnvelope, Envelope, derived_command_id
from contracts.events import (
    BankSettled,
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    CardDealt,
    CardReadRefused,
    CommandRejected,
    DominantPlayerChosen,
    Irregularity,
    OptionDecided,
    OptionOffered,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoePassed,
    TableOpened,
)
from services.command_api.actions import BETTOR_ACTIONS, InvalidAction, Planned, allowed, to_command
from services.runtime.core import command as envelope_of
from services.runtime.logging import get_logger
from services.runtime.memory import MemoryBus
from services.runtime.settings import Settings
from services.runtime.tasks import partition_of

log = get_logger("command_api")
#: the event topics the gateway reads (the console principal may read all four)
WATCHED = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
#: a request id: what a client chooses to make a retry recognisable
REQUEST_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
DEFAULT_TIMEOUT_S = 10.0
#: the shortest bound on a command's delivery to the broker, even for a request that waits less (seconds)
MIN_DELIVERY_S = 0.5
#: answers remembered for retries (the oldest is forgotten first)
ANSWERS_KEPT = 10_000
#: a decision whose count of events is not known beforehand is taken as whole this long after its first
#: event was read, if the reader has not said so sooner (seconds)
SETTLE_S = 2.0
#: the least a round's view waits for the reader to catch up with every partition (seconds)
CATCH_UP_S = 2.0
#: how often it checks the reader's positions meanwhile (seconds)
CATCH_UP_POLL_S = 0.02
#: how often a waiting request re-checks its answer without news (seconds)
POLL_S = 0.1
#: how long the Kafka reader waits after a failed fetch before fetching again (seconds)
READ_RETRY_S = 1.0


class CommandApiError(Exception):
    """Base of the gateway's errors; ``status`` is the HTTP status, ``reason`` a stable code."""

    status = 400
    reason = "bad_request"

    def __init__(self, detail: str, field: str = ""):
        super().__init__(detail)
        self.detail = detail
        self.field = field


class BadRequest(CommandApiError):
    """Input that cannot become a command (422): an unknown profile, a refused configuration, a field outside
    the contracts' bounds. Nothing was sent."""

    status = 422

    def __init__(self, reason: str, detail: str, field: str = ""):
        super().__init__(detail, field)
        self.reason = reason


class Forbidden(CommandApiError):
    """The role may not send this action (403). Nothing was sent."""

    status = 403
    reason = "role_not_allowed"


class OrderNotAllowed(Forbidden):
    """A ``pass_shoe`` whose ``ordered_by`` is not the caller's role's own (403): the pit orders as the
    ``floorman``; the dealer orders as the ``dealer`` or enters the curator's own pass (``""``). Nothing was
    sent."""

    reason = "ordered_by_not_allowed"


class NotYourPlayer(Forbidden):
    """A betting terminal's action (``place_bet``, ``withdraw_bet``, ``decide_option``) naming a player its
    credential is not bound to (403): a bettor credential acts only for its own player(s)
    (:mod:`services.runtime.credentials`). Nothing was sent."""

    reason = "not_your_player"


class UnknownTable(CommandApiError):
    """A command for a table the gateway has read no ``TableOpened`` of (404; ``open_table`` excepted).
    Nothing was sent."""

    status = 404
    reason = "unknown_table"


class RequestIdReused(CommandApiError):
    """The request id was used for another request (409): the gateway's own answers say so, or the events the
    first command under this id caused (read from the log) are not what this request's command would cause,
    or the service refused this one ``command_id_reused``. Nothing was sent in the first two cases when the
    gateway had read the first use before sending; otherwise the second command was sent and the service
    refused it (it changes nothing)."""

    status = 409
    reason = "request_id_reused"


class ReaderFailed(CommandApiError):
    """The gateway's reader of the event topics is failing (503): answers cannot be read. Nothing was sent
    when it was failing before the send; otherwise the command may be decided: retry with the same request
    id once the reader recovers."""

    status = 503
    reason = "reader_failed"


class AnswerTimeout(CommandApiError):
    """No answer within the timeout (504): the command was sent and may still be decided; a retry with the
    same request id sends nothing new and waits again."""

    status = 504
    reason = "timeout"


class BrokerUnavailable(CommandApiError):
    """The command could not be handed to the broker (503); it may or may not have been appended: retry with
    the same request id (a retry of a command already in the log is dropped by its service)."""

    status = 503
    reason = "broker_unavailable"


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """What a command caused. ``status``: ``accepted`` | ``rejected``; ``reason``/``detail``: the rejection's
    code and words (empty when accepted); ``events``: the deciding service's events caused by the command,
    in log order, as plain envelopes (``payload`` tagged by ``type``; a burn's face-down cards are left out:
    surveillance information). ``bet_id``/``shoe_id``/``round_id``: the ids the command carries, for the
    next request."""

    request_id: str
    command_id: str
    action: str
    table_id: str
    status: str
    reason: str = ""
    detail: str = ""
    shoe_id: str = ""
    round_id: str = ""
    bet_id: str = ""
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """True unless the service refused the command."""
        return self.status == "accepted"


def plain_event(env: Envelope) -> dict[str, Any]:
    """An envelope as plain JSON values (``msgspec.to_builtins``), with a burn's face-down cards removed
    (``ShoeBurned.burned`` is surveillance information; ``burned_count`` stays)."""
    out: dict[str, Any] = msgspec.to_builtins(env)
    if isinstance(env.payload, ShoeBurned):
        out["payload"].pop("burned", None)
    return out  # type: ignore[no-any-return]


def _refusal(events: list[Envelope]) -> tuple[str, str] | None:
    for e in events:
        p = e.payload
        if isinstance(p, (CommandRejected, BetRejected)):
            return p.reason, p.detail
        if isinstance(p, CardReadRefused):
            return "card_read_refused", p.reason
    return None


# ---- what the gateway has read -------------------------------------------------------------------------------
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


class CommandBus(Protocol):
    """Where commands go and events come from."""

    index: EventIndex

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        """Publish ``cmd`` on ``topic`` (base name) as the ``writer`` principal kind, acknowledged within
        ``timeout_s`` seconds (None: unbounded) or never delivered (raises ``KafkaError``)."""
        ...

    async def settle(self) -> None:
        """Let what was sent be decided and read (the in-memory bus pumps; Kafka does nothing)."""
        ...

    async def catch_up(self, timeout_s: float) -> None:
        """Wait (up to ``timeout_s``) until every event appended before the call has been read, on every
        partition read (the in-memory bus: :meth:`settle`)."""
        ...


class MemoryCommandBus:
    """The gateway on a :class:`~services.runtime.memory.MemoryBus` (tests): each send is delivered at once,
    every decision read whole."""

    def __init__(self, bus: MemoryBus):
        self.bus = bus
        self.index = EventIndex()
        self._seen: dict[str, int] = {}
        #: every command sent, with its topic and writer (tests count them)
        self.sent: list[tuple[str, str, CommandEnvelope]] = []

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        self.sent.append((topic, writer, cmd))
        self.bus.send(topic, cmd)

    async def settle(self) -> None:
        await self.bus.pump()
        for topic in WATCHED:
            recs = self.bus.topics.get(topic, [])
            for rec in recs[self._seen.get(topic, 0):]:
                try:
                    self.index.add(decode_event(rec.value))
                except (UnknownMessageType, Undecodable):
                    continue
            self._seen[topic] = len(recs)
        await self.index.notify()

    async def catch_up(self, timeout_s: float) -> None:
        await self.settle()


class KafkaCommandBus:
    """The gateway on a real broker.

    ``writers``: connection settings per writer principal kind (``console``, ``bettor``; e.g. from
    :func:`writer_settings`), so each command topic is written by its one writer on a secured broker; a kind
    not given writes with ``settings``. The reader connects as the ``console`` writer if given (the console
    principal may read the four event topics), else as the ``bettor`` writer, else with ``settings``.
    ``tables``: read only these tables'
    partitions (the command line: one table); None: every partition. ``since``: start reading at this time
    (``offsets_for_times``: a retry from a new process finds the answer its first attempt got); None: at
    the end. ``streams``: the event topics to read (default the four; a principal that may read fewer, such
    as ``bettor``, reads only those its answers come on).
    """

    def __init__(self, settings: Settings, writers: Mapping[str, Settings] | None = None,
                 tables: list[str] | None = None, since: datetime | None = None,
                 streams: Iterable[str] = WATCHED):
        self.settings = settings
        self.streams = tuple(streams)
        self.writers = dict(writers or {})
        self.tables = tables
        self.since = since
        self.index = EventIndex()
        self._producers: dict[str, AIOKafkaProducer] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self._fetch = 0
        self._tps: list[TopicPartition] = []

    async def start(self) -> None:
        """Connect the producers and the reader; returns once the reader's positions are fixed (before any
        command is sent). Raises aiokafka's errors for a broker that cannot be reached."""
        for kind in ("console", "bettor"):
            p = self._producer(kind)
            await p.start()
            self._producers[kind] = p
        reader = self.writers.get("console") or self.writers.get("bettor") or self.settings
        self._consumer = AIOKafkaConsumer(**reader.client_options(), enable_auto_commit=False,
                                          isolation_level="read_committed", auto_offset_reset="earliest")
        await self._consumer.start()
        n = self.settings.partitions
        parts = sorted({partition_of(t, n) for t in self.tables}) if self.tables else list(range(n))
        tps = [TopicPartition(self.settings.topic(t), p) for t in self.streams for p in parts]
        self._consumer.assign(tps)
        if self.since is None:
            await self._consumer.seek_to_end(*tps)
        else:
            ms = int(self.since.timestamp() * 1000)
            found = await self._consumer.offsets_for_times({tp: ms for tp in tps})
            ends = await self._consumer.end_offsets(tps)
            for tp in tps:
                at = found.get(tp)
                self._consumer.seek(tp, at.offset if at is not None else ends[tp])
        for tp in tps:
            await self._consumer.position(tp)
        self._tps = tps
        await self._scan_tables(reader, parts)
        self._task = asyncio.create_task(self._read(tps))

    async def _scan_tables(self, reader: Settings, parts: list[int]) -> None:
        """Read the dealing events of ``parts`` from their start up to their end as of now and note every
        table a ``TableOpened`` was read for (:attr:`EventIndex.tables`: the gateway answers 404 for a
        table it has not seen opened, and a table opened before this reader's ``since`` is still known).
        Raises aiokafka's errors for a broker that cannot be reached."""
        self.index.tables_complete = False
        scan = AIOKafkaConsumer(**reader.client_options(), enable_auto_commit=False,
                                isolation_level="read_committed", auto_offset_reset="earliest")
        await scan.start()
        try:
            tps = [TopicPartition(self.settings.topic(T.DEALING_EVENTS), p) for p in parts]
            scan.assign(tps)
            await scan.seek_to_beginning(*tps)
            ends = await scan.end_offsets(tps)
            left = {tp for tp in tps if ends[tp] > 0}
            while left:
                batch = await scan.getmany(*left, timeout_ms=200)
                for records in batch.values():
                    for rec in records:
                        if rec.value is None or b"table_opened" not in rec.value:
                            continue  # only a TableOpened matters here: not decoded
                        try:
                            env = decode_event(rec.value)
                        except (UnknownMessageType, Undecodable):
                            continue
                        if isinstance(env.payload, TableOpened):
                            self.index.tables.add(env.table_id)
                for tp in list(left):
                    if await scan.position(tp) >= ends[tp]:
                        left.discard(tp)
        finally:
            await scan.stop()
        self.index.tables_complete = True

    async def _read(self, tps: list[TopicPartition]) -> None:
        """Index every event read, forever (until cancelled). A failure never ends it: a broker's error
        (``KafkaError``) or any other exception (a record the index cannot take, a bug) is logged
        (``command_api_read_failed``, with the traceback for a non-Kafka one) and recorded in
        :attr:`EventIndex.reader_error`, so waiting requests answer 503 ``reader_failed`` rather than time
        out; the next fetch read without a failure clears it."""
        assert self._consumer is not None
        c = self._consumer
        while True:
            failed: str | None = None
            try:
                batch = await c.getmany(timeout_ms=100)
                self._fetch += 1
                for tp, records in batch.items():
                    for rec in records:
                        try:
                            self.index.add(decode_event(rec.value), tp, self._fetch)
                        except (UnknownMessageType, Undecodable):
                            continue
                        except Exception as e:  # one record the index cannot take: the rest are read
                            failed = f"{type(e).__name__}: {e}"
                            log.exception("command_api_read_failed", error=failed, topic=tp.topic,
                                          partition=tp.partition, offset=rec.offset)
                for tp in tps:
                    lso = c.last_stable_offset(tp)
                    if lso is not None and lso >= 0 and await c.position(tp) >= lso:
                        self.index.caught_up(tp, self._fetch)
            except KafkaError as e:  # the broker went away: keep trying
                failed = f"{type(e).__name__}: {e}"
                log.warning("command_api_read_failed", error=failed)
            except Exception as e:  # not the broker's: logged with its traceback, and reading goes on
                failed = f"{type(e).__name__}: {e}"
                log.exception("command_api_read_failed", error=failed)
            self.index.reader_error = failed
            await self.index.notify()
            if failed is not None:
                await asyncio.sleep(READ_RETRY_S)

    async def send(self, topic: str, cmd: CommandEnvelope, writer: str, timeout_s: float | None = None) -> None:
        """Append ``cmd`` to ``topic`` as ``writer``, acknowledged within ``timeout_s`` (None: unbounded) or
        never: a command the broker did not acknowledge in time is abandoned with its producer
        (:meth:`_abandon`: its buffered batches failed, its connections closed; an idempotent aiokafka
        producer would retry it forever and deliver it whenever the broker came back), so the caller's
        retry is the only copy. Raises ``KafkaTimeoutError`` after ``timeout_s``, aiokafka's errors for a
        broker that refused it."""
        kind = writer if writer in self._producers or writer in ("console", "bettor") else "console"
        producer = self._producers.get(kind)
        try:
            async with asyncio.timeout(timeout_s):
                if producer is None:  # abandoned after a failed delivery: a fresh one (a new producer id)
                    producer = self._producers[kind] = self._producer(kind)
                    await producer.start()
                await producer.send_and_wait(self.settings.topic(topic), encode(cmd), key=T.key(cmd.table_id))
        except TimeoutError:
            await self._abandon(kind, producer)
            raise KafkaTimeoutError(f"the broker did not acknowledge the command within {timeout_s:g} s; it "
                                    "was dropped (never delivered later)") from None
        except BaseException:
            await self._abandon(kind, producer)
            raise

    def _producer(self, kind: str) -> AIOKafkaProducer:
        return AIOKafkaProducer(**self.writers.get(kind, self.settings).client_options(),
                                enable_idempotence=True, linger_ms=0)

    async def _abandon(self, kind: str, producer: AIOKafkaProducer | None) -> None:
        """Drop ``producer`` without delivering what it still holds: its batches fail
        (``KafkaTimeoutError``), its sender stops, its connections close. The next send starts a new one."""
        if self._producers.get(kind) is producer:
            self._producers.pop(kind, None)
        if producer is None:
            return
        abandoned = KafkaTimeoutError("abandoned: not acknowledged in time")
        acc = getattr(producer, "_message_accumulator", None)
        if acc is not None:
            acc.fail_all(abandoned)
        sender = getattr(producer, "_sender", None)
        task = getattr(sender, "sender_task", None)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        producer._closed = True  # its stop() would wait to flush what was failed here
        with contextlib.suppress(Exception):
            await producer.client.close()
        log.warning("command_api_producer_abandoned", writer=kind)

    async def settle(self) -> None:
        return None

    async def catch_up(self, timeout_s: float) -> None:
        """Wait until the reader has read, on every partition it reads, up to where that partition ended
        (its last stable offset) when this was called, so a round's events on one topic are not shown without
        those of the others (the partitions are fetched in no set order); returns after ``timeout_s``
        regardless, or at once on a broker's error (the view is then what was read)."""
        c = self._consumer
        if c is None or not self._tps:
            return
        try:
            async with asyncio.timeout(timeout_s):
                ends = await c.end_offsets(self._tps)  # read_committed: the last stable offsets
                # a record's position moves on only once the reader holds it: it indexes a batch without awaiting
                for tp, end in ends.items():
                    while await c.position(tp) < end:
                        await asyncio.sleep(CATCH_UP_POLL_S)
        except (TimeoutError, KafkaError):
            pass

    async def stop(self) -> None:
        """Stop the reader and the producers."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        if self._consumer is not None:
            await self._consumer.stop()
        for p in self._producers.values():
            await p.stop()


class MissingWriterCredential(ValueError):
    """On a secured broker, no password for a principal the command API writes as."""


def writer_settings(base: Settings, environ: Mapping[str, str] | None = None,
                    kinds: Iterable[str] = ("console", "bettor")) -> dict[str, Settings]:
    """Connection settings per writer principal kind the command API writes as (``kinds``: ``console``,
    ``bettor``; only those it will write, e.g. the one of a single command-line action).

    On a plain broker: ``{}`` (everything is written with ``base``). On a secured one each kind connects as
    its own principal with the password from ``CROUPIER_KAFKA_PASSWORD_<KIND>`` or from the
    ``KAFKA_CREDENTIALS_FILE`` that ``infra/kafka/kafka.sh start --secure`` writes (``NAME=value`` lines);
    ``base`` itself serves a kind it already connects as. Raises :class:`MissingWriterCredential` naming the
    variable for a kind with no password (a clear error at start, not a refused write later)."""
    env = os.environ if environ is None else environ
    if not base.secured:
        return {}
    known: dict[str, str] = {}
    path = env.get("KAFKA_CREDENTIALS_FILE", "")
    if path:
        try:
            for line in Path(path).read_text().splitlines():
                k, sep, v = line.strip().partition("=")
                if sep and k.startswith("CROUPIER_KAFKA_PASSWORD_"):
                    known[k] = v
        except OSError as e:
            raise MissingWriterCredential(f"KAFKA_CREDENTIALS_FILE={path}: {e.strerror or e}") from None
    known.update({k: v for k, v in env.items() if k.startswith("CROUPIER_KAFKA_PASSWORD_") and v})
    out: dict[str, Settings] = {}
    for kind in kinds:
        var = f"CROUPIER_KAFKA_PASSWORD_{kind.upper()}"
        if known.get(var):
            out[kind] = base.as_principal(kind, known[var], base.sasl_mechanism or "SCRAM-SHA-512")
        elif base.sasl_username == kind:
            out[kind] = base
        else:
            raise MissingWriterCredential(
                f"the command API writes {'wagering.bets' if kind == 'bettor' else 'the console topics'} as "
                f"the {kind} principal: set {var} or KAFKA_CREDENTIALS_FILE (kafka.sh start --secure prints it)")
    return out


# ---- the gateway -----------------------------------------------------------------------------------------
def command_id_for(writer: str, table_id: str, request_id: str) -> str:
    """The command id of a request: a UUIDv5 of (writer principal kind, table, request id); the same request
    id at the same table under the same principal is the same command."""
    return derived_command_id("command-api", writer, table_id, request_id)


def check_command(cmd: CommandEnvelope) -> None:
    """Raise :class:`BadRequest` (``out_of_bounds``, naming the field) unless the contracts' decoder takes
    ``cmd`` as it will arrive (a command it refuses would be dead-lettered, never answered)."""
    try:
        decode_command(encode(cmd))
    except (Undecodable, UnknownMessageType) as e:
        where = str(e).rsplit("at `", 1)
        raise BadRequest("out_of_bounds", str(e), where[1].rstrip("`") if len(where) == 2 else "") from None


#: command fields that an event of its decision carries under the same name with the same value
_SAME_FIELDS = ("round_id", "shoe_id", "seat", "player_id", "wager", "amount_cents", "bet_id", "card_number",
                "card", "cut_at", "config", "exposed", "banker_seat", "banker_player_id", "bank_cents", "hand",
                "draw")
#: the reason a service gives a second, different command under a command id its principal already used
REUSED = "command_id_reused"


def _reuse_refusal(env: Envelope) -> bool:
    return isinstance(env.payload, CommandRejected) and env.payload.reason == REUSED


def caused_by(planned: Planned, events: Iterable[Envelope]) -> bool:
    """Whether ``events`` (the deciding service's events of one cause, as read from the log) could have been
    caused by ``planned``'s command: each event's ``actor`` is the command's, a ``CommandRejected`` names its
    command type, and every field of :data:`_SAME_FIELDS` that the command sets (not None or ``""``) and an
    event carries has the same value (a void's or a shoe close's ``reason``, a pass's order, too). False
    means the request id was used for another command (its events are not this one's)."""
    cmd = planned.command
    tag = type(cmd).__struct_config__.tag
    want: dict[str, Any] = msgspec.to_builtins(cmd)
    for e in events:
        p = e.payload
        if e.actor is not None and e.actor != planned.actor:
            return False
        if isinstance(p, CommandRejected):
            if p.command != tag:
                return False
            continue
        got: dict[str, Any] = msgspec.to_builtins(p)
        for f in _SAME_FIELDS:
            if f in got and want.get(f) not in (None, ""):
                if f == "wager":  # a placed bet records the wager's name, a refused one the words sent
                    if str(got[f]).strip().lower() != want[f].strip().lower():
                        return False
                elif got[f] != want[f]:
                    return False
        if isinstance(p, (RoundVoided, ShoeClosed)) and "reason" in want and p.reason != want["reason"]:
            return False
        if isinstance(p, ShoePassed) and isinstance(cmd, PassShoe) \
                and p.reason != (f"{cmd.ordered_by}_ordered" if cmd.ordered_by else "curator_passed"):
            return False
    return True


def _reused(request_id: str, table_id: str) -> RequestIdReused:
    return RequestIdReused(f"request id {request_id!r} was used at table {table_id} for another request: a retry "
                           "must repeat the request, a new request needs a new id")


@dataclass
class _Entry:
    digest: str
    done: asyncio.Future[Answer]


class CommandGateway:
    """Requests in, answers out, one command per request id.

    ``bus``: the transport (:class:`KafkaCommandBus`, started; or :class:`MemoryCommandBus`). ``clock``: the
    time each command claims (``issued_at``; the events take the broker's append time). ``timeout_s``: how
    long :meth:`submit` waits for an answer by default."""

    def __init__(self, bus: CommandBus, clock: Callable[[], datetime], timeout_s: float = DEFAULT_TIMEOUT_S,
                 answers_kept: int = ANSWERS_KEPT):
        self.bus = bus
        self.clock = clock
        self.timeout_s = timeout_s
        self.answers_kept = answers_kept
        self._answers: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()

    def plan(self, action: Any, table_id: str, request_id: str) -> tuple[Planned, CommandEnvelope]:
        """The command an action becomes and its envelope; raises :class:`BadRequest` (nothing is sent). The
        table is not checked here (:meth:`submit` does: :class:`UnknownTable`)."""
        if not re.fullmatch(REQUEST_ID_PATTERN, request_id):
            raise BadRequest("invalid_request_id", f"request id {request_id!r} must be 1-64 letters, digits, "
                                                   "'.', '_', ':' or '-', starting with a letter or digit",
                             "request_id")
        # the derived ids (a shoe or round the request leaves to the API) come from the request id alone
        derived = hashlib.blake2b(f"{table_id}/{request_id}".encode(), digest_size=8).hexdigest()
        try:
            planned = to_command(action, derived)
        except InvalidAction as e:
            raise BadRequest(e.reason, e.detail, e.field) from None
        cid = command_id_for(planned.writer, table_id, request_id)
        env = envelope_of(table_id, cid, self.clock(), planned.command,
                          correlation_id=getattr(planned.command, "round_id", "") or "", actor=planned.actor)
        check_command(env)
        return planned, env

    async def submit(self, action: Any, table_id: str, request_id: str, role: str | None = None,
                     timeout_s: float | None = None, players: Iterable[str] | None = None) -> Answer:
        """Send ``action`` at ``table_id`` once for ``request_id`` and answer what it caused.

        ``role``: the caller's role, checked against :data:`~services.command_api.actions.ROLE_ACTIONS`
        (None: not checked, for the command line, which the broker's credentials authorise). ``players``: the
        players the caller's bettor credential is bound to; with a ``role``, a betting terminal's action
        (:data:`~services.command_api.actions.BETTOR_ACTIONS`) must name one of them (None: none). Raises
        :class:`Forbidden` (:class:`OrderNotAllowed`: a ``pass_shoe`` ordered as another role;
        :class:`NotYourPlayer`: a bettor's action for a player not its own), :class:`BadRequest`,
        :class:`UnknownTable` (no ``TableOpened`` read for ``table_id``; ``open_table`` excepted) or
        :class:`RequestIdReused` before anything is sent (a reuse learnt from the log only after sending
        is a :class:`RequestIdReused` too), :class:`ReaderFailed` while the reader is failing, and
        :class:`AnswerTimeout` after ``timeout_s`` (default :attr:`timeout_s`) without a whole answer, and
        :class:`BrokerUnavailable` when the broker did not take the command.
        A rejection is an :class:`Answer` with ``status == "rejected"``, not an exception."""
        planned, env = self.plan(action, table_id, request_id)
        if role is not None and not allowed(role, planned.action):
            raise Forbidden(f"the {role} role may not send {planned.action}")
        if role is not None and planned.action in BETTOR_ACTIONS:
            mine = frozenset(players or ())
            if planned.actor not in mine:
                raise NotYourPlayer(
                    f"this bettor credential acts for {', '.join(repr(p) for p in sorted(mine))}, not for "
                    f"{planned.actor!r}: nothing was sent" if mine else
                    f"this bettor credential is bound to no player, so it may not act for {planned.actor!r} "
                    "(give each terminal a bettor:<player_id>=<token> credential); nothing was sent", "player_id")
        if role is not None and isinstance(planned.command, PassShoe):
            # 13:69F-3.11(a)2: the pit orders the pass as the floorman; the dealer orders it as the dealer or
            # enters the curator's own pass; neither speaks for the other
            may = {"pit": ("floorman",), "dealer": ("dealer", "")}.get(role, ())
            if planned.command.ordered_by not in may:
                raise OrderNotAllowed(f"the {role} role may not pass the shoe with ordered_by="
                                      f"{planned.command.ordered_by!r} (allowed: "
                                      f"{', '.join(repr(m) for m in may) or 'none'})", "ordered_by")
        if planned.action != "open_table":
            await self._known_table(table_id)
        key = (planned.writer, table_id, request_id)
        digest = hashlib.blake2b(planned.action.encode() + b"\0" + planned.actor.encode() + b"\0"
                                 + msgspec.json.encode(planned.command), digest_size=8).hexdigest()
        entry = self._answers.get(key)
        if entry is not None:
            if entry.digest != digest:
                raise _reused(request_id, table_id)
            if entry.done.done() and entry.done.exception() is None:
                return entry.done.result()
            if not entry.done.done():
                return await asyncio.shield(entry.done)
        entry = _Entry(digest, asyncio.get_running_loop().create_future())
        self._answers[key] = entry
        self._answers.move_to_end(key)
        while len(self._answers) > self.answers_kept:
            self._answers.popitem(last=False)
        try:
            answer = await self._send_and_wait(planned, env, request_id, timeout_s)
        except BaseException as e:
            entry.done.set_exception(e if isinstance(e, Exception) else AnswerTimeout(str(e)))
            entry.done.exception()  # retrieved: a timeout is not kept as the answer, a retry waits again
            if isinstance(e, RequestIdReused) and self._answers.get(key) is entry:
                del self._answers[key]  # the id belongs to the first request: its retry must still be answered
            raise
        entry.done.set_result(answer)
        return answer

    async def _known_table(self, table_id: str) -> None:
        """Raise :class:`UnknownTable` unless a ``TableOpened`` of ``table_id`` was read (and
        :class:`ReaderFailed` while the reader is failing)."""
        index = self.bus.index
        if table_id in index.tables:
            return
        await self.bus.settle()
        if index.reader_error is not None:
            raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): nothing was sent; "
                               "retry later")
        if table_id not in index.tables:
            raise UnknownTable(f"table {table_id!r} was never opened (no TableOpened read): open it first "
                               "(open_table); nothing was sent", "table_id")

    async def _send_and_wait(self, planned: Planned, env: CommandEnvelope, request_id: str,
                             timeout_s: float | None) -> Answer:
        wait = self.timeout_s if timeout_s is None else timeout_s
        index = self.bus.index
        table_id, cid, stream = env.table_id, env.command_id, planned.answer_stream
        if index.reader_error is not None:
            raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): {planned.action} was "
                               "not sent; retry with the same request id later")
        await self.bus.settle()
        first, _ = index.caused(table_id, stream, cid)
        first = [e for e in first if not _reuse_refusal(e)]
        if first and not caused_by(planned, first):  # the id's first command is in the log: another one
            raise _reused(request_id, table_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        try:  # the delivery is bounded by the request's wait: a command not delivered then is dropped
            await self.bus.send(planned.topic, env, planned.writer, timeout_s=max(MIN_DELIVERY_S, wait))
        except (KafkaError, OSError) as e:
            raise BrokerUnavailable(f"{planned.action} (command {cid}) could not be handed to the broker "
                                    f"({type(e).__name__}: {e}): it will not be delivered later; retry with the "
                                    "same request id once the broker is back") from None
        await self.bus.settle()

        first_seen: list[float] = []

        def whole(cause: str, where: str, ends: frozenset[str] | None) -> list[Envelope] | None:
            """The decision's events once all are in: its last event is here (or a refusal, always alone);
            when its count is not known, once the index says so, or :data:`SETTLE_S` after the first."""
            if index.reader_error is not None:
                raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): {planned.action} "
                                   f"(command {cid}) may still be decided; retry with the same request id later")
            evs, done = index.caused(table_id, where, cause)
            if where == stream and cause == cid:
                own = [e for e in evs if not _reuse_refusal(e)]
                if len(own) < len(evs) and not own:  # the service says the id's first command was another
                    raise _reused(request_id, table_id)
                if not caused_by(planned, own):  # the id's first command, read now: another one
                    raise _reused(request_id, table_id)
                evs = own
            if not evs:
                return None
            if _refusal(evs) is not None:
                return evs
            if ends is not None:
                return evs if any(e.payload.__struct_config__.tag in ends for e in evs) else None
            first_seen[:1] = first_seen[:1] or [loop.time()]
            return evs if done or loop.time() - first_seen[0] >= SETTLE_S else None

        try:
            events = await index.wait_for(lambda: whole(cid, stream, planned.ends_with),
                                          max(0.0, deadline - loop.time()))
            refusal = _refusal(events)
            if refusal is None and planned.then_betting_opened:
                opened = next(e for e in events if isinstance(e.payload, RoundOpened))
                events = events + await index.wait_for(
                    lambda: [e for e in (whole(opened.event_id, T.WAGERING_EVENTS, frozenset({"betting_opened"})) or [])
                             if isinstance(e.payload, BettingOpened)],
                    max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise AnswerTimeout(f"no answer to {planned.action} (command {cid}) at table {table_id} within "
                                f"{wait:g} s: the command may still be decided; retry with the same request id "
                                "to get its answer without a second command") from None
        c = planned.command
        return Answer(request_id=request_id, command_id=cid, action=planned.action, table_id=table_id,
                      status="rejected" if refusal else "accepted",
                      reason=refusal[0] if refusal else "", detail=refusal[1] if refusal else "",
                      shoe_id=getattr(c, "shoe_id", "") or "", round_id=getattr(c, "round_id", "") or "",
                      bet_id=cid if planned.action == "place_bet" else getattr(c, "bet_id", "") or "",
                      events=[plain_event(e) for e in events])

    async def round_view(self, table_id: str, round_id: str, wait_s: float = 0.0,
                         until: str = "settled") -> dict[str, Any]:
        """The round as the gateway has read it: ``status`` (``unknown`` | ``betting`` | ``betting_closed`` |
        ``dealing`` | ``resolved`` | ``voided`` | ``settled``), the cards dealt (hand, position, the rule cell
        behind each), the points announced, the result, irregularities, the closed bet book, the bets withdrawn
        (``reason`` ``betting_closed``: a bet the log holds after "No more bets", though its answer was
        ``BetPlaced``, returned by the call), each bet's settlement and the round's totals (cents). Chemin de
        fer: ``bank`` (the Banker's seat and player, ``bank_cents``), ``dominant_player``, ``options`` (each
        ``OptionOffered`` with its ``offered_at`` and ``deadline``, the log's times, and ``decided``: ``{draw,
        by}`` or None), ``option_pending`` (the one awaiting a decision, or None: the table clock may send
        ``expire_option`` from its deadline on) and ``bank_settled`` (``BankSettled``); None or empty at the
        other games. Waits up to ``wait_s`` for ``until`` (``option``: an option pending, or the round's end;
        ``settled``: the
        ``RoundSettled``; ``resolved``: the result or a void). Never raises for an unknown round: its status
        is ``unknown`` (the gateway reads from its start only; ``croupier replay`` reads the whole log)."""
        index = self.bus.index

        def reached() -> bool:
            kinds = tuple(type(e.payload) for e in index.round_events(table_id, round_id))
            ended = RoundResolved in kinds or RoundVoided in kinds or RoundSettled in kinds
            if until == "resolved":
                return ended
            if until == "option":  # an option awaiting its decision, or none to come
                return ended or kinds.count(OptionOffered) > kinds.count(OptionDecided)
            return RoundSettled in kinds

        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        await self.bus.catch_up(max(CATCH_UP_S, wait_s))  # all that is in the log now, on every topic
        if wait_s > 0 and not reached():
            try:
                await index.wait_for(reached, max(0.0, deadline - loop.time()))
            except TimeoutError:
                pass
            # reached on one topic: the round's events on the others, appended before, are read too
            await self.bus.catch_up(max(CATCH_UP_S, deadline - loop.time()))
        evs = index.round_events(table_id, round_id)
        view: dict[str, Any] = {"table_id": table_id, "round_id": round_id, "status": "unknown", "shoe_id": "",
                                "cards": [], "points": None, "result": None, "voided": None,
                                "irregularities": [], "bets": None, "withdrawn": [], "settlements": [],
                                "settled": None, "bank": None, "dominant_player": None, "options": [],
                                "option_pending": None, "bank_settled": None}
        order = {"unknown": 0, "betting": 1, "betting_closed": 2, "dealing": 3, "resolved": 4, "voided": 4,
                 "settled": 5}

        def status(s: str) -> None:
            if order[s] > order[view["status"]]:
                view["status"] = s

        for e in evs:
            p = e.payload
            plain = msgspec.to_builtins(p)
            if isinstance(p, RoundOpened):
                view["shoe_id"] = p.shoe_id
                if p.banker_player_id:
                    view["bank"] = {"seat": p.banker_seat, "player_id": p.banker_player_id,
                                    "bank_cents": p.bank_cents}
                status("betting")
            elif isinstance(p, DominantPlayerChosen):
                view["dominant_player"] = plain
            elif isinstance(p, OptionOffered):
                offered_at = e.occurred_at
                view["options"].append({**plain, "offered_at": msgspec.to_builtins(offered_at),
                                        "deadline": msgspec.to_builtins(
                                            offered_at + timedelta(seconds=p.option_seconds)),
                                        "decided": None})
                view["option_pending"] = view["options"][-1]
            elif isinstance(p, OptionDecided):
                for o in reversed(view["options"]):
                    if o["hand"] == p.hand and o["decided"] is None:
                        o["decided"] = {"draw": p.draw, "by": p.by}
                        break
                view["option_pending"] = None
            elif isinstance(p, BankSettled):
                view["bank_settled"] = plain
            elif isinstance(p, BettingOpened):
                status("betting")
            elif isinstance(p, BetWithdrawn):
                view["withdrawn"].append(plain)
            elif isinstance(p, BettingClosed):
                view["bets"] = plain["bets"]
                status("betting_closed")
            elif isinstance(p, CardDealt):
                view["cards"].append(plain)
                status("dealing")
            elif isinstance(p, PointsAnnounced):
                view["points"] = plain
            elif isinstance(p, Irregularity):
                view["irregularities"].append(plain)
            elif isinstance(p, RoundResolved):
                view["result"] = plain
                status("resolved")
            elif isinstance(p, RoundVoided):
                view["voided"] = plain
                status("voided")
            elif isinstance(p, BetSettled):
                view["settlements"].append(plain)
            elif isinstance(p, RoundSettled):
                view["settled"] = plain
                status("settled")
        return view


def bets_of(index: EventIndex, table_id: str, round_id: str, players: Iterable[str]) -> list[dict[str, Any]]:
    """The bets ``players`` placed in the round, as the gateway has read them, in the order placed: ``bet_id``,
    ``seat``, ``player_id``, ``wager``, ``amount_cents``, ``status`` (``placed`` | ``withdrawn`` | ``settled``)
    and, once settled, ``result``, ``category``, ``payout`` and ``commission`` (cents). What a betting terminal
    shows its players (only theirs: another player's bets are not a terminal's to see)."""
    mine = frozenset(players)
    out: dict[str, dict[str, Any]] = {}
    for e in index.round_events(table_id, round_id):
        p = e.payload
        if isinstance(p, BetPlaced) and p.player_id in mine:
            out[p.bet_id] = {"bet_id": p.bet_id, "seat": p.seat, "player_id": p.player_id, "wager": p.wager,
                             "amount_cents": p.amount_cents, "status": "placed", "result": None, "category": None,
                             "payout": None, "commission": None}
        elif isinstance(p, BetWithdrawn) and p.bet_id in out:
            out[p.bet_id]["status"] = "withdrawn"
        elif isinstance(p, BetSettled) and p.bet_id in out:
            out[p.bet_id].update(status="settled", result=p.result, category=p.category, payout=p.payout,
                                 commission=p.commission)
    return list(out.values())


def since_for(now: datetime, lookback_s: float) -> datetime:
    """Where a fresh reader starts so that a retry finds its first attempt's answer: ``lookback_s`` before
    ``now``."""
    return now - timedelta(seconds=lookback_s)
