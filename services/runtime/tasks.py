"""Tasks: one partition number of a service, restored, fenced and committed on its own (Kafka Streams' model).

A table's records sit at the same partition number *p* in every topic (same partition count, keyed by
table id), and :class:`~services.runtime.assignor.TableTaskAssignor` gives *p* of every subscribed topic to
one member. That member runs **task p**:

* **Fenced writer.** Task *p* writes only through a transactional producer whose id is derived from the
  service and *p* (``<group prefix>.<topic prefix><service>.task-<p>``), never from the instance. The next
  owner's ``init_transactions`` bumps the producer epoch, aborts the old owner's open transaction and makes
  its next write fail (``ProducerFenced``): a paused or partitioned member that lost *p* can never write to
  it again, and two instances started with the same configuration never fence each other's live work.
* **Consumed once.** Each batch of *p*'s records is handled and everything it caused (events, commands to
  other services, dead letters, snapshots) is written in one transaction **together with the batch's input
  offsets** (``send_offsets_to_transaction``). A restart resumes at the committed offsets; nothing is
  replayed and nothing is skipped. A batch whose transaction fails is never skipped: the task is restored
  from the log and re-reads the batch from its first record.
* **Restored, not rebuilt.** On assignment (and after a failed transaction) the task's tables are restored
  from the latest checkpoint on ``<service>.snapshots`` (:mod:`services.runtime.snapshot`), then the tail:
  own streams from the checkpoint to their end, input streams from the checkpoint to the committed offsets.
  Without a usable snapshot it reads from offset zero. Restores run in the background, yield to the event
  loop between chunks (heartbeats go on) and keep the partition paused until done; other tasks keep working.
* **Sticky.** A rebalance revokes every partition (aiokafka rebalances eagerly); a task assigned back to the
  same member keeps its state and producer (if anyone else had taken it meanwhile, the producer is fenced,
  the next transaction fails and the task is restored).

A **replica** (the query API run apart: ``transactional=False``) runs the same tasks without producers: it
restores from the projection's snapshots and the tail, then follows the inputs from the checkpoint's
offsets; it commits nothing and writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections import deque
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.partitioner import murmur2

from contracts import topics as T
from contracts.codecs import encode
from contracts.envelope import DeadLetter
from services.runtime import snapshot as S
from services.runtime.core import Decision
from services.runtime.host import ServiceHost
from services.runtime.producers import retrieve_later, retrieve_transaction_error, stop_quietly
from services.runtime.logging import get_logger
from services.runtime.metrics import LIVE, ServiceMetrics
from services.runtime.settings import Settings

#: records folded between two returns to the event loop during a restore
RESTORE_CHUNK = 500
#: tasks restored at once, each by its own worker with its own reader consumer. A killed instance's tasks
#: all move to the survivors at one rebalance, and after a broker restart every task restores; one after
#: another they took 0.27 s each (median; 0.94 s p90) in a chaos run, so the last of six waited seconds
#: behind the others (``bench/chaos.py``'s stall lines). A task is never restored by two workers at once.
RESTORE_WORKERS = 4
#: a batch that caused nothing (input events folded, no event, command or dead letter) commits no
#: transaction of its own: its offsets ride with the task's next transaction, or are committed alone once
#: the oldest of them is this old (s) or this many records wait (a restart re-reads at most that much)
DEFER_MAX_S = 1.0
DEFER_MAX_RECORDS = 1000
#: the longest a command waits for the task to read what another topic's log held when the command was read
#: (``ServiceCore.catch_up``; s): past it the command is decided anyway, with a warning (that topic's
#: leader is away, say: its records cannot be read, and the table must not wait for them for ever)
CATCH_UP_MAX_S = 2.0
#: a task whose transactions have failed for this long without one succeeding is *stuck* (s): readiness
#: reports it (``/health/ready`` 503, :meth:`Tasks.stuck`), so a partition that stopped advancing is seen
STUCK_AFTER_S = 30.0


def partition_of(table_id: str, partitions: int) -> int:
    """The partition of a table's records: murmur2 of the UTF-8 key, as every Kafka client's default
    partitioner (Java's and aiokafka's) computes it."""
    return (murmur2(T.key(table_id)) & 0x7FFFFFFF) % partitions


def snapshot_topic(service: str) -> str:
    """Base name of a service's compacted snapshot topic."""
    return f"{service}.snapshots"


def _log_time(record: Any) -> int | None:
    """The broker's append time (ms) of a record of a ``LogAppendTime`` topic (timestamp type 1), else None:
    a producer-chosen timestamp is the sender's claim, never the log's time."""
    return record.timestamp if getattr(record, "timestamp_type", 0) == 1 else None


def _unpublishable(e: BaseException) -> bool:
    """An error no retry can fix: the outcome of a record is too large or malformed for the broker, or
    encoding it failed (not a connection, timeout or fencing problem)."""
    from aiokafka.errors import KafkaError

    if isinstance(e, KafkaError):
        return not getattr(e, "retriable", False) and type(e).__name__ in (
            "MessageSizeTooLargeError", "RecordTooLargeError", "RecordListTooLargeError", "InvalidRecord",
            "CorruptRecordException", "InvalidTopicError", "InvalidRequestError")
    return isinstance(e, (ValueError, TypeError, OverflowError))


def _position(consumer: Any, tp: TopicPartition) -> int | None:
    """The consumer's position on ``tp`` (past transaction markers, unlike the offsets of the records
    handled) without a request, or None when it has none yet. aiokafka's public ``position()`` is a
    coroutine that waits for one; a scrape must not wait, so this reads the subscription state it reads."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(tp)
    except Exception:  # noqa: BLE001 - not assigned (any more), or another aiokafka
        return None
    if state is None or not getattr(state, "has_valid_position", False):
        return None
    return int(state.position)


def _end(consumer: Any, tp: TopicPartition) -> int | None:
    """The last stable offset of ``tp`` as last fetched (the high watermark when the broker gave none), or
    None when not known (never fetched, or no longer assigned)."""
    try:
        end = consumer.last_stable_offset(tp)
        if end is None or end < 0:
            end = consumer.highwater(tp)
    except Exception:  # noqa: BLE001 - revoked meanwhile
        return None
    return None if end is None else int(end)


def producer_dead(prod: Any) -> bool:
    """Whether a transactional producer is in aiokafka's fatal state (fenced, or an unrecoverable error):
    no transaction can begin on it again, only a new producer (``init_transactions``) serves the task.
    False for a missing producer or one whose last transaction was merely aborted. aiokafka has no public
    accessor for it, so this reads the transaction manager's state (as :func:`_position` reads the
    subscription state)."""
    manager = getattr(prod, "_txn_manager", None)
    state = getattr(manager, "state", None)
    return getattr(state, "name", "") == "FATAL_ERROR"


class TaskFailed(Exception):
    """A task's transaction failed; the task is being restored (its batch will be re-read)."""


def in_log_order(records: list[Any], first: Collection[str] = ()) -> list[Any]:
    """One task's records of several topics, each topic's in offset order, interleaved by record timestamp;
    of records of two topics at one timestamp (milliseconds), those of the topics in ``first`` (full names)
    go first, the others in the batch's order.

    A service reads more than one command topic (the wagering service: the console's ``wagering.commands``
    and the bettors' ``wagering.bets``), and a batch holds them topic by topic. Interleaving by timestamp
    (the broker's append time on command topics) decides a bet appended before the dealer's "No more bets"
    before the call, as the log's time says it came, when both are in one batch. Across batches a record
    of one topic can be read before an earlier one of the other (it came in an earlier fetch): a core
    that must not decide so names the pair in ``catch_up`` and the task waits for the other topic
    (:meth:`Tasks.caught_up`); the wagering service's "No more bets" also returns a bet the log holds
    after the call, read before it. Each topic's own order is kept whatever its timestamps (``heapq.merge`` takes every input in
    order), so an event stream is never reordered.
    """
    by_topic: dict[str, list[Any]] = {}
    for r in records:
        by_topic.setdefault(r.topic, []).append(r)
    if len(by_topic) < 2:
        return records
    return list(heapq.merge(*by_topic.values(), key=lambda r: (r.timestamp, r.topic not in first)))


class Tasks(ConsumerRebalanceListener):  # type: ignore[misc]
    """The tasks one service instance runs, driven by its consumer's assignments and batches.

    ``host``: the service logic (one :class:`ServiceHost` holding every table of every task);
    ``group_id``: the consumer group (offsets are committed to it inside transactions);
    ``transactional``: False for a read-only replica; ``snapshots_of``: whose snapshots to restore from
    (default the host's service; a replica of the projection reads the projection's).
    """

    def __init__(self, host: ServiceHost, settings: Settings, group_id: str, *, transactional: bool = True,
                 snapshots_of: str | None = None):
        self.host = host
        self.settings = settings
        # a record on a partition its table does not map to is dead-lettered, never decided (a task would
        # decide on a table it does not own, and its restore would never see the events)
        host.partition_of = lambda table_id: partition_of(table_id, settings.partitions)
        self.group_id = group_id
        self.transactional = transactional
        self.service = host.core.name
        self.snapshots_of = snapshots_of or self.service
        if not transactional:  # a replica's metrics are its own, apart from the service's
            host.metrics = ServiceMetrics(f"{self.service}-replica")
        self.version = S.state_version(host.core)
        self._same_time_first = frozenset(settings.topic(t) for t in host.core.same_time_first)
        #: command topic -> the topics read up to their end (as when the command was read) before deciding it
        self._catch_up: dict[str, tuple[str, ...]] = {}
        for cmd_topic, first_topic in host.core.catch_up:
            full = settings.topic(cmd_topic)
            self._catch_up[full] = (*self._catch_up.get(full, ()), settings.topic(first_topic))
        #: task p -> {(topic, offset) of a command waiting: (ends to reach, monotonic s when first read)}
        self._waits: dict[int, dict[tuple[str, int], tuple[dict[TopicPartition, int], float]]] = {}
        #: batches cut before a command because another topic was not read far enough (it is read again)
        self.held = 0
        self.log = get_logger(self.service)
        self.consumer: AIOKafkaConsumer | None = None
        self.partitions = settings.partitions
        #: task p -> "restoring" | "ready"
        self.state: dict[int, str] = {}
        self.producers: dict[int, AIOKafkaProducer] = {}
        #: task p -> {input topic partition: next offset}, as committed (or, for a replica, as read)
        self.positions: dict[int, dict[TopicPartition, int]] = {}
        #: task p -> {own base stream: next offset} (where a checkpoint's own tail starts)
        self.own_next: dict[int, dict[str, int]] = {}
        self._last_checkpoint: dict[int, float] = {}
        #: task p -> wall time (Unix seconds) of its latest checkpoint: written here, or restored from
        self.snapshot_at: dict[int, float] = {}
        #: an assignment is held (False from a revocation until the next assignment, and before the first)
        self._assigned = False
        self._since_checkpoint: dict[int, int] = {}
        self._queue: asyncio.Queue[int] = asyncio.Queue()
        self._queued: set[int] = set()
        self._workers: list[asyncio.Task[None]] = []
        self._readers: dict[int, AIOKafkaConsumer] = {}  # worker index -> its reader
        self._active: set[int] = set()  # tasks a worker is restoring now
        self._again: set[int] = set()  # tasks enqueued again while being restored: restored once more after
        self._known_topics: set[str] = set()
        self.restores = 0
        self.restored_from_snapshot = 0
        #: the latest restores' durations (s), for tests and benches; the metrics keep the histogram
        self.restore_seconds: deque[float] = deque(maxlen=256)
        self.aborts = 0
        self.fenced = 0
        self.checkpoints = 0
        #: tasks whose last transaction failed: their next records go one per transaction
        self._careful: set[int] = set()
        #: (topic, offset) of records whose single-record transaction failed, and how often
        self._strikes: dict[int, dict[tuple[str, int], int]] = {}
        #: records that failed alone twice with an error no retry can fix: dead-lettered when next read
        self._poison: dict[int, dict[tuple[str, int], str]] = {}
        #: poison records whose dead letter could not be written either: skipped (offsets only) when next
        #: read, logged at error level with their size and digest, so the partition still advances
        self._unletterable: dict[int, set[tuple[str, int]]] = {}
        #: task p -> when (monotonic s) its transactions began failing without one succeeding since
        self._failing_since: dict[int, float] = {}
        #: held while the host decides one task's records (tasks of a batch commit concurrently)
        self._deciding = asyncio.Lock()
        #: task p -> input offsets of batches that caused nothing, not committed yet (they go with the
        #: task's next transaction); when the first of them was deferred (monotonic s) and how many records
        self._uncommitted: dict[int, dict[TopicPartition, int]] = {}
        self._deferred_since: dict[int, float] = {}
        self._deferred_records: dict[int, int] = {}
        self._flusher: asyncio.Task[None] | None = None

    # -- names ---------------------------------------------------------------------------------------
    @property
    def input_topics(self) -> list[str]:
        """Full names of the consumed topics (commands first, then input event streams)."""
        return self.host.subscribed_topics

    def _tps(self, p: int) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in self.input_topics]

    def transactional_id(self, p: int) -> str:
        """The producer id of task ``p``: derived from service and partition, never from the instance."""
        s = self.settings
        return f"{s.group_prefix}.{s.topic_prefix}{self.service}.task-{p}"

    @property
    def ready(self) -> bool:
        """True when the consumer holds an assignment and every assigned task is restored."""
        return self.consumer is not None and bool(self.state) and all(v == "ready" for v in self.state.values())

    @property
    def assignment_held(self) -> bool:
        """False between a revocation and the next assignment (a rebalance: aiokafka revokes everything, and
        a group member whose broker went away rejoins so), and before the first assignment. :attr:`ready`
        stays True meanwhile (a sticky task keeps its state); readiness checks both."""
        return self._assigned

    def lag(self) -> dict[tuple[str, int], int]:
        """``{(base topic, partition): records}`` not yet consumed of each assigned input partition: the
        partition's last stable offset (records of open transactions are not consumable yet; the high
        watermark when the broker gave none) minus the consumer's position. Both as last known from the
        consumer's fetches (no request is made): a paused partition's end is the one seen before it paused.
        Empty without a consumer or assignment."""
        c = self.consumer
        if c is None:
            return {}
        out: dict[tuple[str, int], int] = {}
        try:
            assigned = list(c.assignment())
        except Exception:  # noqa: BLE001 - a consumer stopping or rejoining: nothing to report now
            return {}
        for tp in assigned:
            end = _end(c, tp)
            pos = _position(c, tp)
            if pos is None:
                pos = self.positions.get(tp.partition, {}).get(tp)
            if end is None or pos is None:
                continue
            out[(self.settings.base(tp.topic), tp.partition)] = max(0, end - pos)
        return out

    def stuck(self, now: float | None = None) -> dict[int, float]:
        """``{task: seconds}`` of the held tasks whose transactions have failed for at least
        :data:`STUCK_AFTER_S` without one succeeding (``now``: monotonic seconds): a partition that does not
        advance (a record whose outcome cannot be written and is not yet set aside, a broker refusing the
        task's producer). Readiness is refused while any is (:func:`services.runtime.ops.readiness`)."""
        now = time.monotonic() if now is None else now
        return {p: round(now - since, 1) for p, since in list(self._failing_since.items())
                if p in self.state and now - since >= STUCK_AFTER_S}

    def snapshot_ages(self, now: float) -> dict[int, float]:
        """``{task: seconds}`` since each held task's latest checkpoint (``now``: Unix seconds), for a
        service that writes checkpoints; a task restored without one (from offset zero) is absent until it
        writes its first. Empty for a replica (it writes none)."""
        if not self.transactional or self.version is None:
            return {}
        return {p: max(0.0, now - at) for p, at in list(self.snapshot_at.items()) if p in self.state}

    def tables_of(self, p: int) -> list[str]:
        """The tables of task ``p`` in the host's state."""
        return [t for t in self.host.runner.tables if partition_of(t, self.partitions) == p]

    # -- lifecycle -----------------------------------------------------------------------------------
    def bind(self, consumer: Any) -> None:
        """Attach the group consumer (the FastStream subscriber's), or a callable that returns it once it
        exists (the first assignment may come before the subscriber has handed its consumer out)."""
        if callable(consumer) and not isinstance(consumer, AIOKafkaConsumer):
            self._consumer_getter = consumer
        else:
            self.consumer = consumer

    def _group_consumer(self) -> AIOKafkaConsumer | None:
        if self.consumer is None and getattr(self, "_consumer_getter", None) is not None:
            self.consumer = self._consumer_getter()
        return self.consumer

    def observe(self) -> None:
        """Export this instance's gauges (:data:`services.runtime.metrics.LIVE`) until :meth:`stop`: called
        when its service starts (a module-level app that never starts exports nothing)."""
        LIVE.track(self)

    async def stop(self) -> None:
        """Stop restoring and close every producer (a graceful stop; the next owner restores, and reads
        again the few input records whose offsets were deferred)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._flusher
            self._flusher = None
        for w in self._workers:
            w.cancel()
        for w in self._workers:
            try:
                await w
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        self._workers = []
        self._active.clear()
        self._again.clear()
        for p in list(self.producers):
            await self._close_producer(p)
        for reader in self._readers.values():
            await reader.stop()
        self._readers = {}
        self.state.clear()
        self._assigned = False
        LIVE.untrack(self)

    async def _close_producer(self, p: int) -> None:
        prod = self.producers.pop(p, None)
        if prod is not None:
            await stop_quietly(prod)

    # -- rebalance listener --------------------------------------------------------------------------
    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        # eager rebalancing revokes everything; wait for the batch in flight, keep state for stickiness, and
        # checkpoint what changed (Kafka Streams commits on revoke), so whoever gets a task restores little
        self._assigned = False
        async with self.host.lock:
            for p in sorted({tp.partition for tp in revoked}):
                if self.state.get(p) == "restoring":
                    self.state[p] = "revoked"
                elif self.state.get(p) == "ready" and self.transactional and (
                        (self.version is not None and self._since_checkpoint.get(p, 0) > 0)
                        or self._uncommitted.get(p)):
                    try:  # the checkpoint's transaction carries the deferred offsets too
                        await self._commit(p, [], [], {}, force_checkpoint=True)
                    except Exception as e:  # noqa: BLE001 - fenced or away: the next owner restores more
                        self.log.info("checkpoint_on_revoke_failed", task=p, error=f"{type(e).__name__}: {e}")
                        # its producer may be fenced for good (a fatal state no transaction can leave): if
                        # the task comes back to this member it is restored with a new one, never reused
                        self.state[p] = "revoked"

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        numbers = {tp.partition for tp in assigned}
        self._group_consumer()
        async with self.host.lock:
            for p in [p for p in self.state if p not in numbers]:
                await self._drop(p)
            new = []
            for p in sorted(numbers):
                if self.state.get(p) == "ready":
                    continue  # sticky: same owner, same producer; a fence would show at the next commit
                self.state[p] = "restoring"
                new.append(p)
            if new and self.consumer is not None:
                self.consumer.pause(*[tp for p in new for tp in self._tps(p) if tp in assigned])
            self._assigned = True
        for p in new:
            self._enqueue(p)
        self.log.info("assigned", tasks=sorted(numbers), restoring=new)

    async def _drop(self, p: int) -> None:
        """Task ``p`` moved away: forget its tables and close its producer."""
        self.state.pop(p, None)
        self.positions.pop(p, None)
        self._waits.pop(p, None)
        self._failing_since.pop(p, None)
        self._forget_deferred(p)
        self.snapshot_at.pop(p, None)
        self.host.runner.reset(self.tables_of(p))
        await self._close_producer(p)

    # -- restore -------------------------------------------------------------------------------------
    def _enqueue(self, p: int) -> None:
        """Queue task ``p`` for a restore (once; again after its current restore, if one is running) and
        make sure :data:`RESTORE_WORKERS` workers run."""
        if p in self._active:
            self._again.add(p)
        elif p not in self._queued:
            self._queued.add(p)
            self._queue.put_nowait(p)
        self._workers = [w for w in self._workers if not w.done()]
        while len(self._workers) < RESTORE_WORKERS:
            used = {int(w.get_name().rsplit("-", 1)[1]) for w in self._workers}
            i = min(set(range(RESTORE_WORKERS)) - used)
            self._workers.append(asyncio.create_task(self._restore_loop(i), name=f"{self.service}-restore-{i}"))

    async def _restore_loop(self, worker: int = 0) -> None:
        backoff = 0.2
        while True:
            p = await self._queue.get()
            self._queued.discard(p)
            if self.state.get(p) not in ("restoring",):
                continue
            self._active.add(p)
            failed: Exception | None = None
            try:
                await self.restore(p, worker)
                backoff = 0.2
            except Exception as e:  # noqa: BLE001 - broker away, fenced while restoring, ...: retry later
                failed = e
            finally:  # before any wait: another worker may take p meanwhile, and mark it its own
                self._active.discard(p)
                again = p in self._again
                self._again.discard(p)
            if failed is not None:
                self.log.warning("restore_failed", task=p, error=f"{type(failed).__name__}: {failed}",
                                 retry_s=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
            if (failed is not None or again) and self.state.get(p) == "restoring":
                self._enqueue(p)

    async def _reader_consumer(self, worker: int = 0) -> AIOKafkaConsumer:
        """Restore worker ``worker``'s reader (started at its first use)."""
        reader = self._readers.get(worker)
        if reader is None:
            # a short fetch wait: every re-assignment waits for the fetch in flight (500 ms by default)
            reader = AIOKafkaConsumer(**self.settings.client_options(), enable_auto_commit=False,
                                      isolation_level="read_committed", auto_offset_reset="earliest",
                                      fetch_max_wait_ms=10, max_partition_fetch_bytes=17 * 1024 * 1024)
            await reader.start()
            self._readers[worker] = reader
        return reader

    async def read_range(self, topic: str, p: int, start: int, stop: int | None = None, worker: int = 0,
                         ) -> AsyncIterator[list[Any]]:
        """Committed records of ``topic`` (full name) partition ``p`` from offset ``start`` up to ``stop``
        (default: the end as of the call), in chunks, read by restore worker ``worker``'s reader. Yields
        nothing for a missing topic."""
        reader = await self._reader_consumer(worker)
        tp = TopicPartition(topic, p)
        end = await self._end_offset(topic, p, worker)
        stop = end if stop is None else min(stop, end)
        if start >= stop:
            return
        reader.assign([tp])  # only to read: an (re-)assignment waits for the fetch in flight
        reader.seek(tp, start)
        while await reader.position(tp) < stop:
            batch = await reader.getmany(tp, timeout_ms=500, max_records=RESTORE_CHUNK)
            recs = [r for r in batch.get(tp, []) if r.offset < stop]
            if recs:
                yield recs
            await asyncio.sleep(0)

    async def _end_offset(self, topic: str, p: int, worker: int = 0) -> int:
        reader = await self._reader_consumer(worker)
        tp = TopicPartition(topic, p)
        if topic not in self._known_topics:
            if topic not in await reader.topics():
                return 0  # never create a topic by reading it
            self._known_topics.add(topic)
        return (await reader.end_offsets([tp]))[tp]

    async def _load_snapshots(self, p: int, worker: int = 0) -> S.Checkpoint | None:
        """Install the tables of task ``p``'s latest checkpoint into the host (read by restore worker
        ``worker``); the checkpoint, or None."""
        if self.version is None:
            return None
        latest: dict[bytes, bytes] = {}
        cp_time: float | None = None
        topic = self.settings.topic(snapshot_topic(self.snapshots_of))
        async for chunk in self.read_range(topic, p, 0, worker=worker):
            for r in chunk:
                if r.key is not None and r.value is not None:
                    latest[r.key] = r.value
                    if r.key == S.CHECKPOINT_KEY:
                        cp_time = r.timestamp / 1000
        raw_cp = latest.pop(S.CHECKPOINT_KEY, None)
        self.snapshot_at.pop(p, None)
        if raw_cp is None:
            return None
        try:
            cp = S.decode_checkpoint(raw_cp)
            if cp.version != self.version:
                self.log.warning("snapshot_version_ignored", task=p, found=cp.version, expected=self.version)
                return None
            slots = []
            for raw in latest.values():
                snap = S.decode_table(raw)
                if snap.version != self.version:
                    raise ValueError(f"table snapshot of version {snap.version}")
                slots.append((snap, S.decode_state(snap.state, self.host.core.state_type)))
        except Exception as e:  # noqa: BLE001 - undecodable: full rebuild, never a misread
            self.log.warning("snapshot_unreadable", task=p, error=f"{type(e).__name__}: {e}")
            return None
        runner = self.host.runner
        for snap, state in slots:
            slot = runner.slot(snap.table_id)
            slot.state = state
            slot.seq = dict(snap.seq)
            slot.input_seq = dict(snap.input_seq)
            slot.causes = dict(snap.causes)
            slot.last_event_id = snap.last_event_id
        if cp_time is not None:
            self.snapshot_at[p] = cp_time
        return cp

    async def restore(self, p: int, worker: int = 0) -> None:
        """Fence task ``p``'s previous writer, restore its tables, publish what is due, then resume it
        (reading through restore worker ``worker``'s reader; the caller makes sure no other restore of
        ``p`` runs meanwhile)."""
        t0 = time.monotonic()
        if self._group_consumer() is None:
            raise TaskFailed("no group consumer yet")
        assert self.consumer is not None
        tps = self._tps(p)
        if self.transactional:
            await self._close_producer(p)
            prod = AIOKafkaProducer(**self.settings.client_options(), transactional_id=self.transactional_id(p),
                                    enable_idempotence=True, acks="all", linger_ms=0,
                                    max_request_size=16 * 1024 * 1024,  # snapshots; the broker caps events
                                    # the broker's transaction verification (KIP-890) answers a produce now
                                    # and then with a transient NOT_ENOUGH_REPLICAS (aiokafka #1172; see
                                    # bench/rawloop.py RetryCount): retry soon
                                    retry_backoff_ms=10)
            try:
                await prod.start()  # init_transactions: fences the old owner and completes its open transaction
            except BaseException:  # fenced, moved away or the broker away: never leave it open (its connections)
                await stop_quietly(prod)
                raise
            self.producers[p] = prod
        marks = {"fence": time.monotonic() - t0}
        committed: dict[TopicPartition, int | None] = {}
        if self.transactional:
            for tp in tps:
                committed[tp] = await self.consumer.committed(tp)
        marks["committed"] = time.monotonic() - t0
        runner = self.host.runner
        async with self.host.lock:
            runner.reset(self.tables_of(p))
        cp = await self._load_snapshots(p, worker)
        marks["snapshot"] = time.monotonic() - t0
        n = 0
        own_next: dict[str, int] = {}
        core = self.host.core
        for stream in (*core.private_streams, core.own_stream):
            topic = self.settings.topic(stream)
            start = cp.own.get(stream, 0) if cp else 0
            end = await self._end_offset(topic, p, worker)
            async for chunk in self.read_range(topic, p, start, end, worker):
                for r in chunk:
                    n += self.host.fold_own(r.value)
            own_next[stream] = max(end, start)
        marks["own"] = time.monotonic() - t0
        for stream in core.input_streams:
            topic = self.settings.topic(stream)
            tp = TopicPartition(topic, p)
            start = cp.inputs.get(stream, 0) if cp else 0
            stop = committed.get(tp) if self.transactional else start
            if stop is None or stop <= start:
                continue
            async for chunk in self.read_range(topic, p, start, stop, worker):
                for r in chunk:
                    n += self.host.fold_input(r.value)
        marks["inputs"] = time.monotonic() - t0
        positions: dict[TopicPartition, int] = {}
        for tp in tps:
            c = committed.get(tp)
            if c is None:
                base = self.settings.base(tp.topic)
                c = cp.inputs.get(base, 0) if (cp and not self.transactional) else 0
            positions[tp] = c
        async with self.host.lock:
            if self.state.get(p) != "restoring":
                return  # revoked meanwhile
            self.own_next[p] = own_next
            self.positions[p] = positions
            self._forget_deferred(p)  # whatever was deferred is read again from the committed offsets
            decisions = await self.host.collect_reactions(self.tables_of(p))
            # a long fold is worth a checkpoint at once, so the next restore starts here
            long_fold = cp is None and n > 0 or n >= self.settings.snapshot_every_records
            if self.transactional and decisions:
                await self._commit(p, decisions, [], {}, force_checkpoint=long_fold)
                self.host.metrics.settle(True)
                self.host.log_published(decisions)
            elif self.transactional and long_fold and self.version is not None:
                try:
                    await self._commit(p, [], [], {}, force_checkpoint=True)
                except Exception as e:  # noqa: BLE001 - only a cache: serve now, checkpoint later
                    self.log.warning("checkpoint_failed", task=p, error=f"{type(e).__name__}: {e}")
                    if producer_dead(self.producers.get(p)):  # fenced: restore again (a new producer)
                        raise TaskFailed(f"task {p}: producer fenced during its restore") from e
            for tp, off in positions.items():
                self.consumer.seek(tp, off)
            self._last_checkpoint[p] = time.monotonic()
            self._since_checkpoint[p] = n
            self.state[p] = "ready"
            self.consumer.resume(*tps)
        dt = time.monotonic() - t0
        self.restores += 1
        self.restored_from_snapshot += cp is not None
        self.restore_seconds.append(dt)
        self.host.metrics.restored(dt, "snapshot" if cp is not None else "log")
        self.log.info("restored", task=p, records=n, tables=len(self.tables_of(p)),
                      from_snapshot=cp is not None, seconds=round(dt, 3),
                      marks={k: round(v, 3) for k, v in marks.items()})

    # -- batches -------------------------------------------------------------------------------------
    async def on_records(self, records: Iterable[Any]) -> None:
        """Handle a batch from the consumer: per task, one transaction with the batch's offsets. A task's
        records are taken in the order of the log's time (:func:`in_log_order`).

        The tasks of one batch commit concurrently (each through its own producer: their transactions are
        independent), so a batch that spans k tasks costs about one transaction's round trips, not k. Their
        decisions are made one task at a time (:attr:`_deciding`). The host's lock is held for the whole
        batch, so a revocation or a restore's hand-over still waits for every transaction in flight."""
        by_task: dict[int, list[Any]] = {}
        for r in records:
            by_task.setdefault(r.partition, []).append(r)
        async with self.host.lock:
            ordered = {p: in_log_order(recs, self._same_time_first) for p, recs in by_task.items()}
            if self._catch_up:
                ordered = await self.caught_up(ordered)
            if len(ordered) == 1:
                (p, recs), = ordered.items()
                await self._process(p, recs)
                return
            outcomes = await asyncio.gather(*(self._process(p, recs) for p, recs in ordered.items()),
                                            return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def caught_up(self, ordered: dict[int, list[Any]]) -> dict[int, list[Any]]:
        """Each task's records of a batch (in log order), cut before the first command that must wait for
        another topic (``ServiceCore.catch_up``): a command of topic C is decided only once the task has read
        topic W (same partition) up to W's end as it was when the command was first read (one ListOffsets
        request per batch, for the commands read for the first time; ``read_committed``: the last stable
        offset). A cut task's consumer seeks back to the first record not taken of each topic, so the
        command and what follows it are read again with W's missing records, and decided in log order.

        Why: the wagering service reads the dealer's "No more bets" on ``wagering.commands`` and the bets on
        ``wagering.bets``. On a cluster the two partitions are led by different brokers and come in
        different fetches, so the call can be read before a bet the log holds before it; decided in read
        order, that bet in time was refused ``betting_closed``. Kafka Streams waits on such a task too
        (``max.task.idle.ms``, KIP-695), by known lag and a timer; asking for W's end when the command is read
        makes the wait exact. A bet not yet acknowledged to its bettor (not replicated) when the call is read
        is not waited for.

        A command waits at most :data:`CATCH_UP_MAX_S` from its first read, then is decided anyway (logged
        ``catch_up_timeout``); when the ends cannot be asked (the broker away, or no answer within
        :data:`CATCH_UP_MAX_S`: the host's lock is held meanwhile, so every table of the instance waits) it
        is decided at once, logged ``catch_up_unknown``. Tasks not ready, and records already handled, are
        left to :meth:`_process`."""
        c = self.consumer
        if c is None:
            return ordered
        firsts: dict[int, list[tuple[int, Any]]] = {}
        ask: set[TopicPartition] = set()
        for p, recs in ordered.items():
            if self.state.get(p) != "ready":
                continue
            positions = self.positions.get(p, {})
            waits = self._waits.setdefault(p, {})
            for i, r in enumerate(recs):
                if r.topic in self._catch_up and r.offset >= positions.get(TopicPartition(r.topic, p), 0):
                    firsts.setdefault(p, []).append((i, r))
                    if (r.topic, r.offset) not in waits:
                        ask.update(TopicPartition(w, p) for w in self._catch_up[r.topic])
        if not firsts:
            return ordered
        ends: dict[TopicPartition, int] = {}
        if ask:
            try:  # bounded: the host's lock is held, so every table of this instance waits for the answer
                ends = await asyncio.wait_for(c.end_offsets(sorted(ask)), CATCH_UP_MAX_S)
            except Exception as e:  # noqa: BLE001 - broker away or silent: decide now, not stall the tables
                self.log.warning("catch_up_unknown", error=f"{type(e).__name__}: {e}")
                return ordered
        now = time.monotonic()
        out = dict(ordered)
        for p, cmds in firsts.items():
            waits = self._waits[p]
            for i, r in cmds:
                key = (r.topic, r.offset)
                need, since = waits.setdefault(key, ({tp: ends[tp] for tp in (TopicPartition(w, p) for w in
                                                      self._catch_up[r.topic]) if tp in ends}, now))
                behind = {}
                for tp, end in need.items():
                    pos = _position(c, tp)
                    if pos is not None and pos < end:
                        behind[tp.topic] = end - pos
                if behind and now - since < CATCH_UP_MAX_S:
                    recs = ordered[p]
                    first_offset: dict[str, int] = {}
                    for rest in recs[i:]:  # each topic's records in offset order: its first is its lowest
                        first_offset.setdefault(rest.topic, rest.offset)
                    for topic, offset in first_offset.items():
                        c.seek(TopicPartition(topic, p), offset)
                    out[p] = recs[:i]
                    self.held += 1
                    self.log.debug("catch_up_wait", task=p, topic=r.topic, offset=r.offset, behind=behind)
                    break
                if behind:
                    self.log.warning("catch_up_timeout", task=p, topic=r.topic, offset=r.offset, behind=behind,
                                     waited_s=round(now - since, 3))
                del waits[key]
        return {p: recs for p, recs in out.items() if recs}

    async def _process(self, p: int, recs: list[Any]) -> None:
        """Task ``p``'s records of one batch (the caller holds the host's lock)."""
        if self.state.get(p) != "ready":
            return  # not ours, or being restored: the restore seeks back to the committed offsets
        positions = self.positions.setdefault(p, {})
        fresh = [r for r in recs if r.offset >= positions.get(TopicPartition(r.topic, p), 0)]
        if not fresh:
            return
        if p not in self._careful:
            await self._handle_and_commit(p, fresh)
            return
        # after a failed transaction: one record per transaction, so a record whose outcome can never
        # be published is found, dead-lettered, and the partition goes on
        for r in fresh:
            if not await self._handle_and_commit(p, [r], single=True):
                return
        self._careful.discard(p)

    async def _handle_and_commit(self, p: int, recs: list[Any], single: bool = False) -> bool:
        """Handle ``recs`` of task ``p`` and commit what they caused with their offsets. False (and the task
        is being restored) when the transaction failed."""
        offsets: dict[TopicPartition, int] = {}
        for r in recs:
            tp = TopicPartition(r.topic, p)
            offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
        poison = self._poison.get(p, {})
        lettered = False  # this transaction carries a poison record's dead letter
        if single and (recs[0].topic, recs[0].offset) in poison:
            r = recs[0]
            error = poison[(r.topic, r.offset)]
            decisions: list[Decision] = []
            letter = DeadLetter.of(service=self.service, topic=r.topic, partition=p, offset=r.offset, key=r.key,
                                   error=f"unpublishable outcome: {error}", original=r.value or b"",
                                   received_at=self.host.clock())
            if (r.topic, r.offset) in self._unletterable.get(p, set()):
                # its letter failed too: the record is passed over (offsets only), never the partition stopped
                self.host.metrics.dead_letter("unletterable")
                self.log.error("record_skipped_unletterable", topic=r.topic, partition=p, offset=r.offset,
                               size=letter.original_size, sha256=letter.original_sha256, error=letter.error)
                letters = []
            else:
                lettered = True
                self.host.dead_letters += 1
                self.host.metrics.dead_letter("unpublishable")
                self.log.error("dead_letter_unpublishable", topic=r.topic, partition=p, offset=r.offset,
                               error=letter.error)
                letters = [letter]
        else:
            async with self._deciding:  # the host collects one batch at a time
                decisions, letters = await self.host.collect(
                    [(r.topic, r.partition, r.offset, r.key, r.value, _log_time(r)) for r in recs])
        if not self.transactional:
            self.positions[p].update(offsets)
            self.host.metrics.settle(True)
            return True
        if not decisions and not letters and not single and self._may_defer(p, len(recs)):
            pending = self._uncommitted.setdefault(p, {})
            for tp, off in offsets.items():
                pending[tp] = max(pending.get(tp, 0), off)
            self._deferred_since.setdefault(p, time.monotonic())
            self._deferred_records[p] = self._deferred_records.get(p, 0) + len(recs)
            if self._flusher is None or self._flusher.done():  # a quiet table's offsets are committed too
                self._flusher = asyncio.create_task(self._flush_loop(), name=f"{self.service}-flush")
            self._since_checkpoint[p] = self._since_checkpoint.get(p, 0) + len(recs)
            self.positions[p].update(offsets)
            self.host.metrics.settle(True)
            return True
        try:
            await self._commit(p, decisions, letters, offsets, len(recs))
        except Exception as e:  # noqa: BLE001 - fenced, broker away, record too large...: restore, re-read
            self.host.metrics.settle(False)
            self.host.uncollect(letters)
            self.aborts += 1
            fenced = "Fenced" in type(e).__name__ or "Epoch" in type(e).__name__
            self.fenced += fenced
            self.host.metrics.aborted(fenced)
            self.log.warning("transaction_failed", task=p, error=f"{type(e).__name__}: {e}",
                             records=len(recs), fenced=fenced)
            if lettered and not fenced and _unpublishable(e):  # not even its letter can be written
                self._unletterable.setdefault(p, set()).add((recs[0].topic, recs[0].offset))
            elif single and not fenced and _unpublishable(e):
                key = (recs[0].topic, recs[0].offset)
                strikes = self._strikes.setdefault(p, {})
                strikes[key] = strikes.get(key, 0) + 1
                if strikes[key] >= 2:  # the same record failed alone twice: its outcome cannot be written
                    self._poison.setdefault(p, {})[key] = f"{type(e).__name__}: {e}"
            self._careful.add(p)
            self._restore_after_failure(p)
            return False
        self.positions[p].update(offsets)
        self._failing_since.pop(p, None)
        self._poison.get(p, {}).pop((recs[0].topic, recs[0].offset), None)
        self._unletterable.get(p, set()).discard((recs[0].topic, recs[0].offset))
        self.host.metrics.settle(True)
        self.host.log_published(decisions)
        return True

    def _restore_after_failure(self, p: int) -> None:
        """Task ``p``'s transaction failed, so its state ran ahead of the log: pause it and restore it (its
        consumer then seeks back to the committed offsets)."""
        self._failing_since.setdefault(p, time.monotonic())
        self.state[p] = "restoring"
        if self.consumer is not None:
            self.consumer.pause(*self._tps(p))
        self._enqueue(p)

    async def flush_deferred(self, now: float | None = None) -> int:
        """Commit, alone, the deferred offsets of every ready task whose oldest deferral is at least
        :data:`DEFER_MAX_S` old (a quiet table's last input events, which no later batch will carry).
        Returns the number of transactions; a failed one restores its task. Run every
        :data:`DEFER_MAX_S` by a flusher task, started by the first deferral and stopped by :meth:`stop`."""
        now = time.monotonic() if now is None else now
        n = 0
        async with self.host.lock:
            for p, since in sorted(self._deferred_since.items()):
                if self.state.get(p) != "ready" or now - since < DEFER_MAX_S or not self._uncommitted.get(p):
                    continue
                try:
                    await self._commit(p, [], [], {})
                    self._failing_since.pop(p, None)
                    n += 1
                except Exception as e:  # noqa: BLE001 - fenced or broker away: restore, as after any failure
                    fenced = "Fenced" in type(e).__name__ or "Epoch" in type(e).__name__
                    self.aborts += 1
                    self.fenced += fenced
                    self.host.metrics.aborted(fenced)
                    self.log.warning("deferred_offsets_commit_failed", task=p, error=f"{type(e).__name__}: {e}",
                                     fenced=fenced)
                    self._restore_after_failure(p)
        return n

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(DEFER_MAX_S)
            try:
                await self.flush_deferred()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - never let the flusher die; the next batch commits anyway
                self.log.warning("deferred_flush_failed", error=f"{type(e).__name__}: {e}")

    def _checkpoint_due(self, p: int) -> bool:
        s = self.settings
        return self.version is not None and (
            time.monotonic() - self._last_checkpoint.get(p, 0.0) >= s.snapshot_interval_s
            or self._since_checkpoint.get(p, 0) >= s.snapshot_every_records)

    def _may_defer(self, p: int, records: int) -> bool:
        """Whether the offsets of a batch of task ``p`` that caused nothing may wait for a later transaction:
        not when a checkpoint is due, nor when the deferred offsets are :data:`DEFER_MAX_S` old or
        :data:`DEFER_MAX_RECORDS` records (then this batch's transaction commits them all)."""
        if self._checkpoint_due(p):
            return False
        since = self._deferred_since.get(p)
        if since is not None and time.monotonic() - since >= DEFER_MAX_S:
            return False
        return self._deferred_records.get(p, 0) + records < DEFER_MAX_RECORDS

    def _forget_deferred(self, p: int) -> None:
        self._uncommitted.pop(p, None)
        self._deferred_since.pop(p, None)
        self._deferred_records.pop(p, None)

    def _checkpoint_records(self, p: int, offsets: dict[TopicPartition, int], force: bool = False,
                            ) -> list[tuple[bytes, bytes]]:
        """Snapshot records of task ``p``'s changed tables and its checkpoint, if one is due now (or
        ``force``)."""
        if self.version is None:
            return []
        if not (force or self._checkpoint_due(p)):
            return []
        s = self.settings
        runner = self.host.runner
        changed = [t for t in runner.touched if partition_of(t, self.partitions) == p and t in runner.tables]
        out: list[tuple[bytes, bytes]] = []
        for t in changed:
            slot = runner.tables[t]
            out.append((T.key(t), S.encode(S.TableSnapshot(
                version=self.version, table_id=t, state=S.encode_state(slot.state), seq=dict(slot.seq),
                input_seq=dict(slot.input_seq), causes=dict(slot.causes), last_event_id=slot.last_event_id))))
        too_large = [t for (_, v), t in zip(out, changed) if len(v) > S.MAX_RECORD_BYTES]
        if too_large:  # never half a checkpoint: the previous one stays valid, the tail grows a little
            self.log.warning("checkpoint_skipped_snapshot_too_large", task=p, tables=too_large)
            return []
        positions = {**self.positions.get(p, {}), **offsets}
        cp = S.Checkpoint(version=self.version, partition=p, own=dict(self.own_next.get(p, {})),
                          inputs={s.base(tp.topic): off for tp, off in positions.items()}, tables=len(changed))
        out.append((S.CHECKPOINT_KEY, S.encode(cp)))
        return out

    async def _transaction(self, prod: Any, p: int, decisions: list[Decision], letters: list[Any],
                           checkpoint: list[tuple[bytes, bytes]], offsets: dict[TopicPartition, int],
                           futs: list[tuple[str | None, Any]]) -> None:
        """One transaction of task ``p``: the records (their futures appended to ``futs`` as sent, with the own
        stream of each event) and the input offsets; returns once every record is acknowledged."""
        s = self.settings
        async with prod.transaction():
            for d in decisions:
                key = T.key(d.table_id)
                for env in d.events:
                    futs.append((env.stream, await prod.send(s.topic(env.stream), encode(env), key=key, partition=p)))
                for send in d.sends:
                    futs.append((None, await prod.send(s.topic(send.topic), encode(send.command), key=key,
                                                       partition=p)))
            for letter in letters:
                key = letter.key.encode() if letter.key else None
                futs.append((None, await prod.send(s.topic(T.dlq(self.service)), encode(letter), key=key,
                                                   partition=p)))
            for key, value in checkpoint:
                futs.append((None, await prod.send(s.topic(snapshot_topic(self.service)), value, key=key,
                                                   partition=p)))
            if offsets:
                await prod.send_offsets_to_transaction(offsets, self.group_id)
            await asyncio.gather(*(f for _, f in futs))

    async def _commit(self, p: int, decisions: list[Decision], letters: list[Any],
                      offsets: dict[TopicPartition, int], handled: int = 0, force_checkpoint: bool = False,
                      ) -> None:
        """Write a batch's decisions, dead letters, due checkpoint and input offsets in one transaction of
        task ``p``'s producer (raises whatever the producer raises; the caller restores the task)."""
        prod = self.producers.get(p)
        if prod is None:
            raise TaskFailed(f"task {p} has no producer")
        if producer_dead(prod):  # never begin a transaction on a fenced producer: restore (a new one)
            raise TaskFailed(f"task {p}: its producer is fenced")
        deferred = self._uncommitted.get(p)
        if deferred:  # earlier batches' offsets that caused nothing: committed with this transaction
            offsets = {**deferred, **offsets}
        own = {self.host.core.own_stream, *self.host.core.private_streams}
        checkpoint = self._checkpoint_records(p, offsets, force_checkpoint)
        t0 = time.perf_counter()
        futs: list[tuple[str | None, Any]] = []
        try:
            await self._transaction(prod, p, decisions, letters, checkpoint, offsets, futs)
        except BaseException:
            for _, f in futs:  # the records' futures fail later (ProducerFenced...): their error is the
                retrieve_later(f)  # transaction's, raised here, never "Future exception was never retrieved"
            retrieve_transaction_error(prod)  # so is the transaction waiter's, which aiokafka leaves unawaited
            raise
        metas = [f.result() for _, f in futs]
        self.host.metrics.transaction(time.perf_counter() - t0, bool(checkpoint))
        if deferred:
            self._forget_deferred(p)
        nxt = self.own_next.setdefault(p, {})
        for (stream, _), meta in zip(futs, metas):
            if stream in own:
                nxt[stream] = max(nxt.get(stream, 0), meta.offset + 1)
        if checkpoint:
            self.checkpoints += 1
            self.snapshot_at[p] = time.time()
            self._last_checkpoint[p] = time.monotonic()
            self._since_checkpoint[p] = 0
            runner = self.host.runner
            runner.touched.difference_update([t for t in list(runner.touched)
                                              if partition_of(t, self.partitions) == p])
        else:
            self._since_checkpoint[p] = self._since_checkpoint.get(p, 0) + handled
