"""The state restorer: a task's tables rebuilt from its latest checkpoint and the log's tail, in the background.

Kafka Streams' ``StoreChangelogReader`` restores a task's stores from their changelogs before the task runs.
Here, on assignment (and after a failed transaction), task *p* is **fenced** (a new producer), its tables are
installed from the latest checkpoint on ``<service>.snapshots`` (:mod:`services.runtime.snapshot`), then the
tail is folded: own streams from the checkpoint to their end, input streams from the checkpoint to the
committed offsets. Without a usable snapshot it reads from offset zero, never a misread.

:data:`RESTORE_WORKERS` workers restore queued tasks concurrently, each through its own reader consumer; a task
is never restored by two workers at once (one enqueued again while it restores is restored once more after,
if it still needs it). The partition stays paused until its restore is done; folds return to the event loop
every :data:`RESTORE_CHUNK` records, so heartbeats continue and other tasks keep working.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from services.runtime import snapshot as S
from services.runtime.kafka import topic_partitions
from services.runtime.kip447 import offset_fetch_stable
from services.runtime.record_collector import TaskFailed, producer_dead

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: records folded between two returns to the event loop during a restore
RESTORE_CHUNK = 500
#: tasks restored at once, each by its own worker with its own reader consumer. A killed instance's tasks
#: all move to the survivors at one rebalance, and after a broker restart every task restores; one after
#: another they took 0.27 s each (median; 0.94 s p90) in a chaos run, so the last of six waited seconds
#: behind the others (``bench/chaos.py``'s stall lines). A task is never restored by two workers at once.
RESTORE_WORKERS = 4
#: how long one poll of a restore reader waits for records (ms) before the loop looks at its position again.
#: A range that ends in a transaction's commit marker (every own stream's tail after a checkpoint: the
#: marker follows the checkpoint's offsets) brings no record, yet the fetch moves the position past it;
#: ``getmany`` only returns at its timeout then, so 500 ms cost every restore from a fresh checkpoint half
#: a second per own stream (issue 25: a SIGTERM'd instance's tables waited for it on the survivor)
READ_POLL_MS = 20
#: ``exactly_once_v2``: the longest a restore waits for the previous owner's open transaction holding the task's
#: offsets (s; it ends by commit, abort or the broker's transaction timeout, ``CROUPIER_TRANSACTION_TIMEOUT_MS``);
#: then the restore fails and is retried
STABLE_OFFSETS_TIMEOUT_S = 30.0


def install(runner: Any, slots: list[tuple[S.TableSnapshot, Any]]) -> None:
    """Put decoded table snapshots (``(snapshot, state)`` pairs) into ``runner``'s slots: the state and the
    runner's seq counters and remembered command ids, as the checkpoint left them."""
    for snap, state in slots:
        slot = runner.slot(snap.table_id)
        slot.state = state
        slot.seq = dict(snap.seq)
        slot.input_seq = dict(snap.input_seq)
        slot.causes = dict(snap.causes)
        slot.last_event_id = snap.last_event_id


def decode_checkpoint(raw_cp: bytes, tables: list[bytes], version: str, state_type: Any,
                      ) -> tuple[S.Checkpoint, list[tuple[S.TableSnapshot, Any]]] | None:
    """A checkpoint and its tables' snapshots decoded, or None when the checkpoint is of another version.
    Raises ``ValueError`` (or msgspec's errors) for a table of another version or an undecodable record."""
    cp = S.decode_checkpoint(raw_cp)
    if cp.version != version:
        return None
    slots = []
    for raw in tables:
        snap = S.decode_table(raw)
        if snap.version != version:
            raise ValueError(f"table snapshot of version {snap.version}")
        slots.append((snap, S.decode_state(snap.state, state_type)))
    return cp, slots


class StateRestorer:
    """The restore workers of one service instance's tasks (``tasks``: the :class:`TaskManager` whose state,
    host, producers and consumer they use)."""

    def __init__(self, tasks: TaskManager):
        self.tasks = tasks
        self.queue: asyncio.Queue[int] = asyncio.Queue()
        self.queued: set[int] = set()
        self.workers: list[asyncio.Task[None]] = []
        self.readers: dict[int, AIOKafkaConsumer] = {}  # worker index -> its reader
        self.active: set[int] = set()  # tasks a worker is restoring now
        self.again: set[int] = set()  # tasks enqueued again while being restored: restored once more after
        self.known_topics: set[str] = set()
        self.restores = 0
        self.restored_from_snapshot = 0
        #: the latest restores' durations (s), for tests and benches; the metrics keep the histogram
        self.restore_seconds: deque[float] = deque(maxlen=256)

    def enqueue(self, p: int) -> None:
        """Queue task ``p`` for a restore (once; again after its current restore, if one is running) and
        make sure :data:`RESTORE_WORKERS` workers run."""
        if p in self.active:
            self.again.add(p)
        elif p not in self.queued:
            self.queued.add(p)
            self.queue.put_nowait(p)
        self.workers = [w for w in self.workers if not w.done()]
        while len(self.workers) < RESTORE_WORKERS:
            used = {int(w.get_name().rsplit("-", 1)[1]) for w in self.workers}
            i = min(set(range(RESTORE_WORKERS)) - used)
            self.workers.append(asyncio.create_task(self._loop(i), name=f"{self.tasks.service}-restore-{i}"))

    async def _loop(self, worker: int = 0) -> None:
        m = self.tasks
        backoff = 0.2
        while True:
            p = await self.queue.get()
            self.queued.discard(p)
            if m.state.get(p) not in ("restoring",):
                continue
            self.active.add(p)
            failed: Exception | None = None
            try:
                await m.restore(p, worker)
                backoff = 0.2
            except Exception as e:  # noqa: BLE001 - broker away, fenced while restoring, ...: retry later
                failed = e
            finally:  # before any wait: another worker may take p meanwhile, and mark it its own
                self.active.discard(p)
                again = p in self.again
                self.again.discard(p)
            if failed is not None:
                m.log.warning("restore_failed", task=p, error=f"{type(failed).__name__}: {failed}",
                              retry_s=backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
            if (failed is not None or again) and m.state.get(p) == "restoring":
                m._enqueue(p)

    async def stop(self) -> None:
        """Cancel the workers and stop their readers."""
        for w in self.workers:
            w.cancel()
        for w in self.workers:
            try:
                await w
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        self.workers = []
        self.active.clear()
        self.again.clear()
        for reader in self.readers.values():
            await reader.stop()
        self.readers = {}

    # -- reading ---------------------------------------------------------------------------------------
    async def reader(self, worker: int = 0) -> AIOKafkaConsumer:
        """Restore worker ``worker``'s reader (``read_committed``; started at its first use)."""
        reader = self.readers.get(worker)
        if reader is None:
            # a short fetch wait: every re-assignment waits for the fetch in flight (500 ms by default)
            reader = AIOKafkaConsumer(**self.tasks.settings.client_options(), enable_auto_commit=False,
                                      isolation_level="read_committed", auto_offset_reset="earliest",
                                      fetch_max_wait_ms=10, max_partition_fetch_bytes=17 * 1024 * 1024)
            await reader.start()
            self.readers[worker] = reader
        return reader

    async def read_range(self, topic: str, p: int, start: int, stop: int | None = None, worker: int = 0,
                         ) -> AsyncIterator[list[Any]]:
        """Committed records of ``topic`` (full name) partition ``p`` from offset ``start`` up to ``stop``
        (default: the end as of the call), in chunks of at most :data:`RESTORE_CHUNK`, read by restore worker
        ``worker``'s reader. Yields nothing for a missing topic."""
        reader = await self.reader(worker)
        tp = TopicPartition(topic, p)
        end = await self.end_offset(topic, p, worker)
        stop = end if stop is None else min(stop, end)
        if start >= stop:
            return
        reader.assign([tp])  # only to read: an (re-)assignment waits for the fetch in flight
        reader.seek(tp, start)
        while await reader.position(tp) < stop:
            batch = await reader.getmany(tp, timeout_ms=READ_POLL_MS, max_records=RESTORE_CHUNK)
            recs = [r for r in batch.get(tp, []) if r.offset < stop]
            if recs:
                yield recs
            await asyncio.sleep(0)

    async def end_offset(self, topic: str, p: int, worker: int = 0) -> int:
        """The end offset of ``topic`` (full name) partition ``p``; 0 for a missing topic (never created by
        reading it)."""
        reader = await self.reader(worker)
        tp = TopicPartition(topic, p)
        if topic not in self.known_topics:
            if not await topic_partitions(reader._client, topic):  # this topic's metadata alone
                return 0
            self.known_topics.add(topic)
        return (await reader.end_offsets([tp]))[tp]

    async def load_snapshots(self, p: int, worker: int = 0) -> S.Checkpoint | None:
        """Install the tables of task ``p``'s latest checkpoint into the host (read by restore worker
        ``worker``); the checkpoint, or None (none, another version, or undecodable: a full rebuild)."""
        m = self.tasks
        if m.version is None:
            return None
        latest: dict[bytes, bytes] = {}
        cp_time: float | None = None
        topic = m.settings.topic(S.snapshot_topic(m.snapshots_of))
        async for chunk in self.read_range(topic, p, 0, worker=worker):
            for r in chunk:
                if r.key is not None and r.value is not None:
                    latest[r.key] = r.value
                    if r.key == S.CHECKPOINT_KEY:
                        cp_time = r.timestamp / 1000
        raw_cp = latest.pop(S.CHECKPOINT_KEY, None)
        m.snapshot_at.pop(p, None)
        if raw_cp is None:
            return None
        try:
            decoded = decode_checkpoint(raw_cp, list(latest.values()), m.version, m.host.core.state_type)
        except Exception as e:  # noqa: BLE001 - undecodable: full rebuild, never a misread
            m.log.warning("snapshot_unreadable", task=p, error=f"{type(e).__name__}: {e}")
            return None
        if decoded is None:
            m.log.warning("snapshot_version_ignored", task=p, found=S.decode_checkpoint(raw_cp).version,
                          expected=m.version)
            return None
        cp, slots = decoded
        install(m.host.runner, slots)
        if cp_time is not None:
            m.snapshot_at[p] = cp_time
        return cp

    async def fold_tail(self, p: int, cp: S.Checkpoint | None, committed: dict[TopicPartition, int | None],
                        worker: int, marks: dict[str, float], t0: float) -> tuple[int, dict[str, int]]:
        """Fold task ``p``'s own streams from the checkpoint ``cp`` (or zero) to their end and its input
        streams from the checkpoint to the ``committed`` offsets (a replica: none); returns the records
        folded and the next offset of each own stream. ``marks`` gets the times since ``t0``."""
        m = self.tasks
        n = 0
        own_next: dict[str, int] = {}
        core = m.host.core
        for stream in (*core.private_streams, core.own_stream):
            topic = m.settings.topic(stream)
            start = cp.own.get(stream, 0) if cp else 0
            end = await self.end_offset(topic, p, worker)
            async for chunk in self.read_range(topic, p, start, end, worker):
                for r in chunk:
                    n += m.host.fold_own(r.value)
            own_next[stream] = max(end, start)
        marks["own"] = time.monotonic() - t0
        for stream in core.input_streams:
            topic = m.settings.topic(stream)
            start = cp.inputs.get(stream, 0) if cp else 0
            stop = committed.get(TopicPartition(topic, p)) if m.transactional else start
            if stop is None or stop <= start:
                continue
            async for chunk in self.read_range(topic, p, start, stop, worker):
                for r in chunk:
                    n += m.host.fold_input(r.value)
        marks["inputs"] = time.monotonic() - t0
        return n, own_next

    async def publish_due(self, p: int, cp: S.Checkpoint | None, n: int) -> None:
        """After task ``p``'s fold of ``n`` records: publish the reactions due now (the caller holds the
        host's lock), with a checkpoint at once after a long fold, so the next restore starts here. Raises
        :class:`TaskFailed` when the producer was fenced meanwhile (the restore is retried, a new one)."""
        m = self.tasks
        decisions = await m.host.collect_reactions(m.tables_of(p))
        long_fold = cp is None and n > 0 or n >= m.settings.snapshot_every_records
        if m.transactional and decisions:
            await m._commit(p, decisions, [], {}, force_checkpoint=long_fold)
            m.host.metrics.settle(True)
            m.host.log_published(decisions)
        elif m.transactional and long_fold and m.version is not None:
            try:
                await m._commit(p, [], [], {}, force_checkpoint=True)
            except Exception as e:  # noqa: BLE001 - only a cache: serve now, checkpoint later
                m.log.warning("checkpoint_failed", task=p, error=f"{type(e).__name__}: {e}")
                if producer_dead(m.producers.get(p)):  # fenced: restore again (a new producer)
                    raise TaskFailed(f"task {p}: producer fenced during its restore") from e

    async def restore(self, p: int, worker: int = 0) -> None:
        """Fence task ``p``'s previous writer, restore its tables, publish what is due, then resume it
        (reading through restore worker ``worker``'s reader; the caller makes sure no other restore of
        ``p`` runs meanwhile). A restore overtaken by a revocation or an assignment publishes nothing and
        leaves ``p`` restoring (the assignment queued it again: ``restore_overtaken``). Raises
        :class:`TaskFailed` without a group consumer, else what the broker raises (the worker retries)."""
        m = self.tasks
        t0 = time.monotonic()
        rebalances = m.rebalances
        consumer = m._group_consumer()
        if consumer is None:
            raise TaskFailed("no group consumer yet")
        tps = m._tps(p)
        if m.transactional:  # init_transactions: fences the old owner, completes its transaction (exactly_once;
            await m.collector.open(p)  # under exactly_once_v2 the group's generation fences it, see below)
        marks = {"fence": time.monotonic() - t0}
        committed: dict[TopicPartition, int | None] = {}
        if m.transactional and m.collector.v2:  # waits while an old owner's transaction holds offsets of p
            stable = await offset_fetch_stable(consumer, tps, timeout_s=STABLE_OFFSETS_TIMEOUT_S)
            committed = {tp: (off if off >= 0 else None) for tp, off in stable.items()}
        elif m.transactional:
            for tp in tps:
                committed[tp] = await consumer.committed(tp)
        marks["committed"] = time.monotonic() - t0
        async with m.host.lock:
            await m.queue.drain(p)  # a transaction of p still in flight ends (it fails: fenced) before the reset
            if m.prompt is not None:  # so does a prompt one; what was queued behind it is decided again
                await m.prompt.reset(p)
            m.host.runner.reset(m.tables_of(p))
        cp = await self.load_snapshots(p, worker)
        marks["snapshot"] = time.monotonic() - t0
        n, own_next = await self.fold_tail(p, cp, committed, worker, marks, t0)
        positions: dict[TopicPartition, int] = {}
        for tp in tps:
            c = committed.get(tp)
            if c is None:
                c = cp.inputs.get(m.settings.base(tp.topic), 0) if (cp and not m.transactional) else 0
            positions[tp] = c
        async with m.host.lock:
            if m.state.get(p) != "restoring":
                return  # revoked meanwhile
            if m.rebalances != rebalances:
                # a rebalance came while it read: the offsets and the log it read may predate another
                # member's transactions on p (one that held p meanwhile). Publishing from it wrote a table's
                # events twice (a chaos run, 2026-12-05: a restore begun after a failed transaction, just
                # before this member rejoined, finished after the assignment that gave p back to it); the
                # assignment queued p again, so that restore, begun after it, takes its place
                m.log.info("restore_overtaken", task=p, seconds=round(time.monotonic() - t0, 3))
                return
            m.own_next[p] = own_next
            m.positions[p] = positions
            m.commits.forget(p)  # whatever was deferred is read again from the committed offsets
            await self.publish_due(p, cp, n)
            for tp, off in positions.items():
                consumer.seek(tp, off)
            m.commits.last_checkpoint[p] = time.monotonic()
            m.commits.since_checkpoint[p] = n
            m.state[p] = "ready"
            consumer.resume(*tps)
        dt = time.monotonic() - t0
        self.restores += 1
        self.restored_from_snapshot += cp is not None
        self.restore_seconds.append(dt)
        m.host.metrics.restored(dt, "snapshot" if cp is not None else "log")
        m.log.info("restored", task=p, records=n, tables=len(m.tables_of(p)),
                   from_snapshot=cp is not None, seconds=round(dt, 3),
                   marks={k: round(v, 3) for k, v in marks.items()})
