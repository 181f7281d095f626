"""The task manager: the tasks one service instance runs, created and dropped as its assignment changes.

A table's records sit at the same partition number *p* in every topic (same partition count, keyed by
table id), and :class:`~services.runtime.assignor.TableTaskAssignor` gives *p* of every subscribed topic to
one member. That member runs **task p** (Kafka Streams' model, and its names):

* the **task manager** (this module, Kafka Streams' ``TaskManager``): the consumer's rebalance listener; it
  holds each task's state (restoring, ready), positions and producer, keeps a task assigned back to the same
  member (**sticky**: aiokafka rebalances eagerly, every rebalance revokes everything), checkpoints on
  revocation and drops a task that moved;
* the **stream task** (:mod:`services.runtime.stream_task`): a batch's records of task *p* decided and
  committed with their input offsets in one transaction; a failed transaction is never skipped;
* the **partition group** (:mod:`services.runtime.partition_group`): a task's records taken in the log's
  time, and a command waiting for another topic (``max.task.idle.ms``);
* the **record collector** (:mod:`services.runtime.record_collector`): each task's fenced transactional
  producer, and what one transaction writes;
* the **commit loop** (:mod:`services.runtime.commit_loop`): deferred offsets, checkpoints, the flusher;
* the **commit queue** (:mod:`services.runtime.commit_queue`): a task's next batches decided while its last
  transaction commits, and committed together next;
* the **state restorer** (:mod:`services.runtime.state_restorer`): restore workers, from the latest
  checkpoint and the log's tail, in the background.

A **replica** (the query API run apart: ``transactional=False``) runs the same tasks without producers: it
restores from the projection's snapshots and the tail, then follows the inputs from the checkpoint's
offsets; it commits nothing and writes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition

from services.runtime import snapshot as S
from services.runtime.assignor import partition_of
from services.runtime.commit_loop import CommitLoop
from services.runtime.commit_queue import CommitQueue
from services.runtime.host import ServiceHost
from services.runtime.kip447 import group_metadata
from services.runtime.logging import get_logger
from services.runtime.metrics import LIVE, ServiceMetrics
from services.runtime.partition_group import PartitionGroup, end, position
from services.runtime.prompt_lane import PromptLane
from services.runtime.record_collector import RecordCollector, is_fenced
from services.runtime.settings import Settings
from services.runtime.state_restorer import StateRestorer
from services.runtime.stream_task import StreamTask

#: a task whose transactions have failed for this long without one succeeding is *stuck* (s): readiness
#: reports it (``/health/ready`` 503, :meth:`TaskManager.stuck`), so a partition that stopped advancing is seen
STUCK_AFTER_S = 30.0
#: the longest a stopping instance waits for its tasks' last transactions (s, :meth:`TaskManager.hand_over`);
#: then it closes its producers and leaves anyway (the next owner's ``init_transactions`` aborts what is
#: open, and it reads those records again). Well inside a pod's default 30 s grace and the chaos run's 10 s.
HAND_OVER_MAX_S = 5.0


class TaskManager(ConsumerRebalanceListener):  # type: ignore[misc]
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
        self.log = get_logger(self.service)
        self.consumer: AIOKafkaConsumer | None = None
        self.partitions = settings.partitions
        #: task p -> "restoring" | "ready" | "revoked"
        self.state: dict[int, str] = {}
        #: task p -> {input topic partition: next offset}, as committed (or, for a replica, as read)
        self.positions: dict[int, dict[TopicPartition, int]] = {}
        #: task p -> {own base stream: next offset} (where a checkpoint's own tail starts)
        self.own_next: dict[int, dict[str, int]] = {}
        #: task p -> wall time (Unix seconds) of its latest checkpoint: written here, or restored from
        self.snapshot_at: dict[int, float] = {}
        #: an assignment is held (False from a revocation until the next assignment, and before the first)
        self._assigned = False
        #: (member id, generation) of the last assignment (:meth:`on_partitions_assigned`); None before it
        self._owned_under: tuple[str, int] | None = None
        #: revocations and assignments so far: a restore begun before one of them read the log as another
        #: owner may have left it, and is done again (:meth:`StateRestorer.restore`)
        self.rebalances = 0
        #: task p -> when (monotonic s) its transactions began failing without one succeeding since
        self._failing_since: dict[int, float] = {}
        #: set by :meth:`hand_over`: batches are no longer decided (the instance is leaving its group)
        self.closing = False
        self.aborts = 0
        self.fenced = 0
        prompt = getattr(host.core, "prompt_stream", None) if transactional and settings.prompt_streams else None
        self.collector = RecordCollector(settings, self.service, group_id, prompt=prompt is not None,
                                         metadata=lambda: group_metadata(self.consumer))
        #: the prompt stream's lane (:mod:`services.runtime.prompt_lane`), None without one
        self.prompt = PromptLane(self, prompt) if prompt is not None else None
        self.group = PartitionGroup(self)
        self.commits = CommitLoop(self)
        self.queue = CommitQueue(self)
        for group_commit in self.collector.group_commits:  # its next transaction waits for what is queued
            group_commit.more_queued = lambda p: p in self.queue.queued
        self.restorer = StateRestorer(self)
        self.stream = StreamTask(self)

    # -- the parts' entry points (tests replace ``_enqueue``, ``_commit`` and ``restore``) -------------
    def _enqueue(self, p: int) -> None:
        self.restorer.enqueue(p)

    async def _commit(self, p: int, decisions: list[Any], letters: list[Any], offsets: dict[TopicPartition, int],
                      handled: int = 0, force_checkpoint: bool = False, waits: list[Any] | None = None,
                      alone: bool = False) -> None:
        await self.commits.commit(p, decisions, letters, offsets, handled, force_checkpoint, waits, alone)

    async def restore(self, p: int, worker: int = 0) -> None:
        """Restore task ``p`` (:meth:`StateRestorer.restore`)."""
        await self.restorer.restore(p, worker)

    async def flush_deferred(self, now: float | None = None) -> int:
        """Commit the deferred offsets of quiet tasks (:meth:`CommitLoop.flush_deferred`)."""
        return await self.commits.flush_deferred(now)

    async def caught_up(self, ordered: dict[int, list[Any]]) -> dict[int, list[Any]]:
        """Cut each task's records before a command that must wait (:meth:`PartitionGroup.caught_up`)."""
        return await self.group.caught_up(ordered)

    @property
    def producers(self) -> dict[int, AIOKafkaProducer]:
        """Task p -> its transactional producer (the record collector's)."""
        return self.collector.producers

    @producers.setter
    def producers(self, value: dict[int, AIOKafkaProducer]) -> None:
        self.collector.producers = value

    def transactional_id(self, p: int) -> str:
        """The producer id of task ``p``: derived from service and partition, never from the instance."""
        return self.collector.transactional_id(p)

    # -- counters, for tests and benches -------------------------------------------------------------
    @property
    def held(self) -> int:
        """Batches cut before a command that waited for another topic (:attr:`PartitionGroup.held`)."""
        return self.group.held

    @property
    def restores(self) -> int:
        """Restores completed."""
        return self.restorer.restores

    @property
    def restored_from_snapshot(self) -> int:
        """Restores completed from a checkpoint (not from offset zero)."""
        return self.restorer.restored_from_snapshot

    @property
    def checkpoints(self) -> int:
        """Checkpoints written."""
        return self.commits.checkpoints

    # -- names ---------------------------------------------------------------------------------------
    @property
    def input_topics(self) -> list[str]:
        """Full names of the consumed topics (commands first, then input event streams)."""
        return self.host.subscribed_topics

    def _tps(self, p: int) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in self.input_topics]

    def tables_of(self, p: int) -> list[str]:
        """The tables of task ``p`` in the host's state."""
        return [t for t in self.host.runner.tables if partition_of(t, self.partitions) == p]

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
            last = end(c, tp)
            pos = position(c, tp)
            if pos is None:
                pos = self.positions.get(tp.partition, {}).get(tp)
            if last is None or pos is None:
                continue
            out[(self.settings.base(tp.topic), tp.partition)] = max(0, last - pos)
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

    async def hand_over(self) -> None:
        """Commit everything and close every producer, before the consumer leaves its group (a graceful stop:
        SIGTERM; issue 25). Kafka Streams' order on close: commit every task, close the producers, then the
        consumer sends its LeaveGroup, so the next owner's rebalance starts at once (not after the session
        timeout), restores from a checkpoint taken now (nothing to fold) and finds no transaction of ours
        open (its ``init_transactions`` waits for none to be aborted, and no write of ours is fenced).

        From the call on, batches the consumer still hands over are not decided (:meth:`on_records` returns:
        their offsets are never committed, so the next owner reads them). Restores are stopped; the
        transactions in flight are awaited; every ready task with deferred offsets or tables changed since
        its checkpoint commits one transaction with them and a checkpoint, the tasks concurrently. A task whose
        commit fails (fenced, broker away) is logged ``hand_over_commit_failed`` and left to the next owner,
        who reads its records again; all of it takes at most :data:`HAND_OVER_MAX_S` (then
        ``hand_over_timeout``); nothing raises. Logs ``handed_over`` with the tasks committed and the
        milliseconds it took. A replica commits nothing and only stops restoring."""
        t0 = time.monotonic()
        self.closing = True
        await self.restorer.stop()
        await self.commits.stop()
        committed: list[int] = []

        async def commit_all() -> None:
            async with self.host.lock:
                await self.queue.drain()
                due = [p for p, st in sorted(self.state.items()) if st == "ready" and (
                    (self.version is not None and self.commits.since_checkpoint.get(p, 0) > 0)
                    or self.commits.uncommitted.get(p))]
                outcomes = await asyncio.gather(*(self._commit(p, [], [], {}, force_checkpoint=True) for p in due),
                                                return_exceptions=True)
                for p, outcome in zip(due, outcomes):
                    if isinstance(outcome, BaseException):
                        self.log.info("hand_over_commit_failed", task=p, error=f"{type(outcome).__name__}: {outcome}")
                    else:
                        committed.append(p)

        if self.transactional:
            try:  # a broker away must not hold a stopping instance (an orchestrator kills it after its grace)
                await asyncio.wait_for(commit_all(), HAND_OVER_MAX_S)
            except TimeoutError:
                self.log.warning("hand_over_timeout", seconds=HAND_OVER_MAX_S, committed=committed)
        await self.collector.close_all()
        self.log.info("handed_over", tasks=sorted(self.state), committed=committed,
                      ms=round((time.monotonic() - t0) * 1000, 1))

    async def stop(self) -> None:
        """Stop restoring and close every producer (after :meth:`hand_over` on a graceful stop; alone, the
        next owner restores more, and reads again the few input records whose offsets were deferred)."""
        await self.commits.stop()
        await self.queue.stop()
        if self.prompt is not None:
            await self.prompt.stop()
        await self.restorer.stop()
        await self.collector.close_all()
        self.state.clear()
        self._assigned = False
        LIVE.untrack(self)

    def transaction_failed(self, e: BaseException) -> bool:
        """Count a failed task transaction (``aborts``, ``fenced`` and the metrics); whether it was fenced."""
        fenced = is_fenced(e)
        self.aborts += 1
        self.fenced += fenced
        self.host.metrics.aborted(fenced)
        return fenced

    def restore_after_failure(self, p: int) -> None:
        """Task ``p``'s transaction failed, so its state ran ahead of the log: pause it and restore it (its
        consumer then seeks back to the committed offsets)."""
        self._failing_since.setdefault(p, time.monotonic())
        self.state[p] = "restoring"
        if self.consumer is not None:
            self.consumer.pause(*self._tps(p))
        self._enqueue(p)

    # -- rebalance listener --------------------------------------------------------------------------
    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        # eager rebalancing revokes everything; wait for the batch in flight, keep state for stickiness, and
        # checkpoint what changed (Kafka Streams commits on revoke), so whoever gets a task restores little
        self._assigned = False
        self.rebalances += 1
        async with self.host.lock:
            await self.queue.drain()  # every transaction in flight committed (or failed) first
            due = []
            for p in sorted({tp.partition for tp in revoked}):
                if self.state.get(p) == "restoring":
                    self.state[p] = "revoked"
                elif self.state.get(p) == "ready" and self.transactional and (
                        (self.version is not None and self.commits.since_checkpoint.get(p, 0) > 0)
                        or self.commits.uncommitted.get(p)):
                    due.append(p)
            # the checkpoints' transactions (each carries its task's deferred offsets too) concurrently, each
            # through its task's producer: the whole group's rebalance waits for this member's revocation, so
            # one after another every hand-over waited for each task's transaction in turn (issue 25)
            outcomes = await asyncio.gather(*(self._commit(p, [], [], {}, force_checkpoint=True) for p in due),
                                            return_exceptions=True)
            for p, outcome in zip(due, outcomes):
                if isinstance(outcome, Exception):  # fenced or away: the next owner restores more
                    self.log.info("checkpoint_on_revoke_failed", task=p,
                                  error=f"{type(outcome).__name__}: {outcome}")
                    # its producer may be fenced for good (a fatal state no transaction can leave): if
                    # the task comes back to this member it is restored with a new one, never reused
                    self.state[p] = "revoked"
                elif isinstance(outcome, BaseException):
                    raise outcome

    def _held_throughout(self) -> bool:
        """Whether this member held its assignment through every generation since its last one: the same
        member id, and a generation one more than then. Otherwise (it was dropped from the group, its session
        expired, and rejoined as a new member, or a generation went by without it) another member may have
        owned its tasks meanwhile and committed past their state: Kafka Streams' tasks *lost*
        (``onPartitionsLost``, which aiokafka's listener lacks). A consumer whose group metadata cannot be
        read (a test's) counts as held throughout. Records this assignment's (member id, generation)."""
        try:
            meta = group_metadata(self.consumer)
        except ValueError:
            return True
        before, self._owned_under = self._owned_under, (meta.member_id, meta.generation_id)
        return before is not None and before == (meta.member_id, meta.generation_id - 1)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        numbers = {tp.partition for tp in assigned}
        self._group_consumer()
        self.rebalances += 1
        async with self.host.lock:
            await self.queue.drain()
            for p in [p for p in self.state if p not in numbers]:
                await self._drop(p)
            before = self._owned_under
            lost = [] if self._held_throughout() else sorted(p for p in numbers if self.state.get(p) == "ready")
            if lost:  # under exactly_once_v2 nothing would fence them (the new generation is valid): restore
                self.log.warning("tasks_lost", tasks=lost, owned_under=before, now=self._owned_under)
            new = []
            for p in sorted(numbers):
                if self.state.get(p) == "ready" and p not in lost:
                    continue  # sticky: same owner throughout, same producer
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
        self.group.waits.pop(p, None)
        self._failing_since.pop(p, None)
        self.commits.forget(p)
        self.snapshot_at.pop(p, None)
        self.host.runner.reset(self.tables_of(p))
        if self.prompt is not None:
            await self.prompt.reset(p)
        await self.collector.close(p)

    # -- batches -------------------------------------------------------------------------------------
    async def on_records(self, records: Iterable[Any]) -> None:
        """Handle a batch from the consumer: per task, one transaction with the batch's offsets. A task's
        records are taken in the order of the log's time (:func:`~services.runtime.partition_group.in_log_order`).

        The tasks of one batch commit concurrently (each through its own producer: their transactions are
        independent), and without being awaited here: a task's outcome is committed behind its transaction in
        flight (:mod:`services.runtime.commit_queue`), so the next batch is fetched and decided meanwhile.
        Decisions are made one task at a time (:attr:`StreamTask.deciding`). A revocation, a restore's
        hand-over and a stop drain the queue under the host's lock first (the flusher passes a busy task by)."""
        if self.closing:
            return  # handed over: these offsets are never committed, the next owner reads the records
        by_task: dict[int, list[Any]] = {}
        for r in records:
            by_task.setdefault(r.partition, []).append(r)
        async with self.host.lock:
            if self.closing:  # handed over while this batch waited for the lock
                return
            ordered = self.group.order(by_task)
            if self.group.catch_up:
                ordered = await self.caught_up(ordered)
            if len(ordered) == 1:
                (p, recs), = ordered.items()
                await self.stream.process(p, recs)
                return
            outcomes = await asyncio.gather(*(self.stream.process(p, recs) for p, recs in ordered.items()),
                                            return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
