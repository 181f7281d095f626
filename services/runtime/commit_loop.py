"""The commit loop: when a task's input offsets are committed, with what, and its checkpoints.

Kafka Streams' ``TaskExecutor`` commits a task's offsets on ``commit.interval.ms``, not after every record.
Here every transaction of task *p* carries its batch's input offsets (``send_offsets_to_transaction``) and,
when one is due, a checkpoint of the tables it changed (:mod:`services.runtime.snapshot`). A batch that caused
nothing (input events only folded: no event, command or dead letter) commits no transaction of its own: its
offsets are **deferred** and ride with the task's next transaction, or are committed alone by a flusher once
the oldest of them is :data:`DEFER_MAX_S` old, or once :data:`DEFER_MAX_RECORDS` records wait. This is safe
because those records wrote nothing: a restart that reads them again folds them again (events are
deduplicated by seq) and decides nothing again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime import snapshot as S
from services.runtime.assignor import partition_of
from services.runtime.core import Decision
from services.runtime.producers import retrieve_later, retrieve_transaction_error
from services.runtime.record_collector import TaskFailed, producer_dead

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: a batch that caused nothing (input events folded, no event, command or dead letter) commits no
#: transaction of its own: its offsets ride with the task's next transaction, or are committed alone once
#: the oldest of them is this old (s) or this many records wait (a restart re-reads at most that much)
DEFER_MAX_S = 1.0
DEFER_MAX_RECORDS = 1000


class CommitLoop:
    """Task transactions of one service instance's tasks (``tasks``: the :class:`TaskManager` whose state,
    producers and host they read): deferred offsets, due checkpoints and the flusher of quiet tasks."""

    def __init__(self, tasks: TaskManager):
        self.tasks = tasks
        #: task p -> input offsets of batches that caused nothing, not committed yet (they go with the
        #: task's next transaction); when the first of them was deferred (monotonic s) and how many records
        self.uncommitted: dict[int, dict[TopicPartition, int]] = {}
        self.deferred_since: dict[int, float] = {}
        self.deferred_records: dict[int, int] = {}
        #: task p -> the prompt transactions of its deferred batches (:mod:`services.runtime.prompt_lane`):
        #: the transaction that commits their offsets waits for them
        self.deferred_waits: dict[int, list[Any]] = {}
        self.flusher: asyncio.Task[None] | None = None
        #: task p -> monotonic s of its latest checkpoint, and records handled since
        self.last_checkpoint: dict[int, float] = {}
        self.since_checkpoint: dict[int, int] = {}
        self.checkpoints = 0

    # -- deferred offsets ----------------------------------------------------------------------------
    def checkpoint_due(self, p: int) -> bool:
        """Whether task ``p``'s next transaction carries a checkpoint (its interval or record count is up)."""
        s = self.tasks.settings
        return self.tasks.version is not None and (
            time.monotonic() - self.last_checkpoint.get(p, 0.0) >= s.snapshot_interval_s
            or self.since_checkpoint.get(p, 0) >= s.snapshot_every_records)

    def may_defer(self, p: int, records: int) -> bool:
        """Whether the offsets of a batch of task ``p`` that caused nothing may wait for a later transaction:
        not when a checkpoint is due, nor when the deferred offsets are :data:`DEFER_MAX_S` old or
        :data:`DEFER_MAX_RECORDS` records (then this batch's transaction commits them all)."""
        if self.checkpoint_due(p):
            return False
        since = self.deferred_since.get(p)
        if since is not None and time.monotonic() - since >= DEFER_MAX_S:
            return False
        return self.deferred_records.get(p, 0) + records < DEFER_MAX_RECORDS

    def defer(self, p: int, offsets: dict[TopicPartition, int], records: int, waits: list[Any] | None = None,
              ) -> None:
        """Keep a batch's ``offsets`` (``records`` records that caused nothing in the task's transaction; their
        prompt events' transactions: ``waits``) for task ``p``'s next transaction, and make sure the flusher
        runs (a quiet table's offsets are committed too)."""
        if waits:
            self.deferred_waits.setdefault(p, []).extend(waits)
        pending = self.uncommitted.setdefault(p, {})
        for tp, off in offsets.items():
            pending[tp] = max(pending.get(tp, 0), off)
        self.deferred_since.setdefault(p, time.monotonic())
        self.deferred_records[p] = self.deferred_records.get(p, 0) + records
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.create_task(self._flush_loop(), name=f"{self.tasks.service}-flush")
        self.since_checkpoint[p] = self.since_checkpoint.get(p, 0) + records

    def _committed(self, p: int, offsets: dict[TopicPartition, int]) -> None:
        """Task ``p``'s deferred offsets up to ``offsets`` are committed: forget them (all of them, unless
        some were deferred beyond while the transaction was in flight)."""
        pending = self.uncommitted.get(p, {})
        for tp in [tp for tp, off in pending.items() if off <= offsets.get(tp, 0)]:
            del pending[tp]
        if not pending:
            self.forget(p)

    def forget(self, p: int) -> None:
        """Drop task ``p``'s deferred offsets (a restore reads them again from the committed offsets)."""
        self.uncommitted.pop(p, None)
        self.deferred_waits.pop(p, None)
        self.deferred_since.pop(p, None)
        self.deferred_records.pop(p, None)

    async def flush_deferred(self, now: float | None = None) -> int:
        """Commit, alone, the deferred offsets of every ready task whose oldest deferral is at least
        :data:`DEFER_MAX_S` old (a quiet table's last input events, which no later batch will carry).
        Returns the number of those transactions that committed; a failed one restores its task. Run every
        :data:`DEFER_MAX_S` by the flusher, started by the first deferral and stopped by :meth:`stop`.

        Each due task's offsets go to its committer (:class:`~services.runtime.commit_queue.CommitQueue`) as an
        outcome with nothing else, and the tasks' transactions run concurrently, each through its own producer.
        The host's lock is held only to choose and queue them, never while they commit (issue 30): before,
        every batch of the instance, of any task, waited for the slowest of these transactions (a card's odds
        waited up to a transaction's round trips in ``bench/projection.py``'s "queue" and "read"). A batch of
        a task whose flush is in flight is queued behind it, as behind any transaction of its task."""
        m = self.tasks
        now = time.monotonic() if now is None else now
        async with m.host.lock:
            due = [p for p, since in sorted(self.deferred_since.items())
                   if m.state.get(p) == "ready" and now - since >= DEFER_MAX_S and self.uncommitted.get(p)
                   and not m.queue.busy(p)]  # never two transactions on one producer: the one in flight carries them
            pending = {p: dict(self.uncommitted[p]) for p in due}
            for p in due:  # the committer's transaction takes the deferred offsets (:meth:`commit`)
                await m.queue.submit(p, [], [], {}, 0)
            committers = [m.queue.committers[p] for p in due]
        await asyncio.gather(*(asyncio.shield(c) for c in committers), return_exceptions=True)
        # committed: those offsets are no longer deferred (a failure keeps them and restores the task)
        return sum(1 for p in due if m.state.get(p) == "ready" and all(
            self.uncommitted.get(p, {}).get(tp, off + 1) > off for tp, off in pending[p].items()))

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(DEFER_MAX_S)
            try:
                await self.flush_deferred()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - never let the flusher die; the next batch commits anyway
                self.tasks.log.warning("deferred_flush_failed", error=f"{type(e).__name__}: {e}")

    async def stop(self) -> None:
        """Stop the flusher (deferred offsets not committed are read again by the next owner)."""
        if self.flusher is not None:
            self.flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.flusher
            self.flusher = None

    # -- transactions ----------------------------------------------------------------------------------
    def checkpoint_records(self, p: int, offsets: dict[TopicPartition, int], force: bool = False,
                           ) -> list[tuple[bytes, bytes]]:
        """Snapshot records of task ``p``'s changed tables and its checkpoint, if one is due now (or
        ``force``): ``(key, value)`` pairs for the snapshot topic, empty when none is due or a snapshot is
        over :data:`services.runtime.snapshot.MAX_RECORD_BYTES` (never half a checkpoint)."""
        m = self.tasks
        if m.version is None or not (force or self.checkpoint_due(p)):
            return []
        runner = m.host.runner
        changed = [t for t in runner.touched if partition_of(t, m.partitions) == p and t in runner.tables]
        out: list[tuple[bytes, bytes]] = []
        for t in changed:
            slot = runner.tables[t]
            out.append((T.key(t), S.encode(S.TableSnapshot(
                version=m.version, table_id=t, state=S.encode_state(slot.state), seq=dict(slot.seq),
                input_seq=dict(slot.input_seq), causes=dict(slot.causes), last_event_id=slot.last_event_id))))
        too_large = [t for (_, v), t in zip(out, changed) if len(v) > S.MAX_RECORD_BYTES]
        if too_large:  # the previous checkpoint stays valid, the tail grows a little
            m.log.warning("checkpoint_skipped_snapshot_too_large", task=p, tables=too_large)
            return []
        positions = {**m.positions.get(p, {}), **offsets}
        cp = S.Checkpoint(version=m.version, partition=p, own=dict(m.own_next.get(p, {})),
                          inputs={m.settings.base(tp.topic): off for tp, off in positions.items()},
                          tables=len(changed))
        out.append((S.CHECKPOINT_KEY, S.encode(cp)))
        return out

    async def commit(self, p: int, decisions: list[Decision], letters: list[Any],
                     offsets: dict[TopicPartition, int], handled: int = 0, force_checkpoint: bool = False,
                     waits: list[Any] | None = None, alone: bool = False) -> None:
        """Write a batch's decisions, dead letters, due checkpoint (none while the task's state holds a batch not
        yet queued: :attr:`StreamTask.unqueued`) and input ``offsets`` (with the deferred ones) in one transaction of task ``p``'s producer; ``handled``: the batch's records. Raises
        :class:`TaskFailed` without a live producer, else whatever the producer raises (the caller restores
        the task); the failed transaction's futures are retrieved, never "Future exception was never
        retrieved". ``waits``: the prompt transactions of the batch's records, awaited (with the deferred
        batches' ones) before the offsets go (:mod:`services.runtime.prompt_lane`). ``alone``: a record retried
        alone after a failure (``exactly_once_v2``: in a transaction of its own, never with other tasks').

        Under ``exactly_once_v2`` the offsets always include the task's current positions of the input
        partitions the batch did not move: the group coordinator fences only a transaction that sends offsets
        (KIP-447), so a transaction with none (a restore's reactions, a revocation's checkpoint) of a member
        that lost the task would commit."""
        m = self.tasks
        prod = m.producers.get(p)
        if prod is None:
            raise TaskFailed(f"task {p} has no producer")
        if producer_dead(prod):  # never begin a transaction on a fenced producer: restore (a new one)
            raise TaskFailed(f"task {p}: its producer is fenced")
        deferred = dict(self.uncommitted.get(p) or {})
        # the deferred batches' prompt transactions: this one carries their offsets (kept on a failure: the
        # task is restored, and forgets them)
        waits = [*self.deferred_waits.get(p, ()), *(waits or ())]
        if deferred:  # other batches' offsets that caused nothing: committed with this transaction
            offsets = {tp: max(deferred.get(tp, 0), offsets.get(tp, 0)) for tp in {*deferred, *offsets}}
        if m.collector.v2:  # never a transaction without offsets: those are the ones the generation fences
            offsets = {**m.positions.get(p, {}), **offsets}
        own = {m.host.core.own_stream, *m.host.core.private_streams}
        # never a snapshot of a task whose state holds a batch not in this transaction nor queued (one waiting
        # for room in a full commit queue): the checkpoint, still due, goes with the task's next transaction
        checkpoint = [] if p in m.stream.unqueued else self.checkpoint_records(p, offsets, force_checkpoint)
        runner = m.host.runner
        # the checkpoint holds the tables as of now: a table changed while its transaction is in flight (the
        # commit queue decides the next batch meanwhile) is marked again and goes into the next one
        snapped = {t for t in runner.touched if partition_of(t, m.partitions) == p} if checkpoint else set()
        runner.touched.difference_update(snapped)
        t0 = time.perf_counter()
        futs: list[tuple[str | None, Any]] = []
        try:
            await m.collector.transaction(prod, p, decisions, letters, checkpoint, offsets, futs, waits, alone=alone)
        except BaseException:
            runner.touched.update(snapped)
            for _, f in futs:  # the records' futures fail later (ProducerFenced...): their error is the
                retrieve_later(f)  # transaction's, raised here, never "Future exception was never retrieved"
            retrieve_transaction_error(prod)  # so is the transaction waiter's, which aiokafka leaves unawaited
            raise
        metas = [f.result() for _, f in futs]
        m.host.metrics.transaction(time.perf_counter() - t0, bool(checkpoint))
        if p in self.deferred_waits:  # those this one awaited are committed
            left = [w for w in self.deferred_waits[p] if not w.done()]
            if left:
                self.deferred_waits[p] = left
            else:
                del self.deferred_waits[p]
        if deferred:
            self._committed(p, offsets)
        nxt = m.own_next.setdefault(p, {})
        for (stream, _), meta in zip(futs, metas):
            if stream in own:
                nxt[stream] = max(nxt.get(stream, 0), meta.offset + 1)
        if checkpoint:
            self.checkpoints += 1
            m.snapshot_at[p] = time.time()
            self.last_checkpoint[p] = time.monotonic()
            self.since_checkpoint[p] = 0
        else:
            self.since_checkpoint[p] = self.since_checkpoint.get(p, 0) + handled

