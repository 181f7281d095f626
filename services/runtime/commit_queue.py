"""The commit queue: a task's next batch is fetched and decided while its last transaction commits.

Before this, a batch's records were decided and every task's transaction awaited before the consumer fetched
again, so a service reading a busy floor waited one transaction's round trips per batch, and a card's odds
waited behind the transactions of the batches before it (``bench/projection.py``: "read" was nearly all of a
card's delay). Now each task has at most one transaction in flight: what the batches decided meanwhile is
**queued** (their decisions, dead letters and input offsets merged, in order) and committed together in the
task's next transaction, once the one in flight is committed. Kafka Streams' stream threads commit so too:
records are processed while the producer sends, and one commit carries everything since the last.

Exactly-once stays:

* a task's transactions are committed one after another, in the order their records were decided;
* a transaction carries the offsets of exactly the records whose outcome it writes (or of records that
  caused nothing), so a restart resumes after the last committed outcome, never before nor after it;
* when a transaction fails, the task is restored (:meth:`TaskManager.restore_after_failure`) and what was
  queued behind it is dropped, never committed: the restore reads those records again from the committed
  offsets and decides them again;
* a checkpoint is taken when a transaction begins, with everything decided so far in that transaction
  or queued before it, so its tables' states and input offsets agree: deciding a batch never yields to the
  event loop under the transactional runtime, and no checkpoint of a task begins while its state holds a
  batch not yet queued (:attr:`StreamTask.unqueued`: a batch waiting for room in a full queue, issue 30;
  the checkpoint, still due, goes with the task's next transaction);
* whatever must see no transaction in flight (a revocation's checkpoint, a restore's hand-over, a stop)
  first drains the queue (:meth:`drain`), under the host's lock; the deferred offsets' flusher passes a busy task
  by (its transaction in flight carries them: no batch is deferred while one is).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: a task whose queue holds this many records waits for its transaction in flight before it queues more
#: (the consumer then fetches no more: the queue is bounded, and so is what a restore re-reads)
MAX_QUEUED_RECORDS = 1000


@dataclass
class Queued:
    """What a task's batches decided since its transaction in flight began: committed together next."""

    decisions: list[Any] = field(default_factory=list)
    letters: list[Any] = field(default_factory=list)
    #: input partition -> next offset after the queued records
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    records: int = 0
    batches: int = 0
    #: the prompt transactions of the queued records (:mod:`services.runtime.prompt_lane`)
    waits: list[Any] = field(default_factory=list)

    def add(self, decisions: list[Any], letters: list[Any], offsets: dict[TopicPartition, int],
            records: int, waits: list[Any] | None = None) -> None:
        """Queue one batch's outcome (``records``: how many input records it handled; ``waits``: its prompt
        transactions)."""
        self.decisions.extend(decisions)
        self.waits.extend(waits or ())
        self.letters.extend(letters)
        for tp, off in offsets.items():
            self.offsets[tp] = max(self.offsets.get(tp, 0), off)
        self.records += records
        self.batches += 1


class CommitQueue:
    """The queued outcomes of one service instance's tasks and the committer of each (``tasks``: the
    :class:`TaskManager` whose stream task commits them)."""

    def __init__(self, tasks: TaskManager):
        self.tasks = tasks
        #: a task's transactions begin at most this often (s): the core's ``commit_interval_ms`` (Kafka Streams'
        #: ``commit.interval.ms``; 0, the default, begins each as soon as the one before is committed). What is
        #: decided meanwhile is queued and merged, so a service off the dealing path (the projection: ledger
        #: entries and offsets; its odds go by the prompt lane) commits fewer, larger transactions
        core = tasks.host.core
        # a core whose prompt stream is turned off (``CROUPIER_PROMPT_STREAMS=0``) has its prompt events in these
        # transactions: they begin at once, as before
        prompt_off = getattr(core, "prompt_stream", None) is not None and getattr(tasks, "prompt", None) is None
        self.interval_s = 0.0 if prompt_off else getattr(core, "commit_interval_ms", 0) / 1000
        #: task p -> when (monotonic s) its last transaction began
        self.began: dict[int, float] = {}
        #: task p -> what waits for its transaction in flight
        self.queued: dict[int, Queued] = {}
        #: task p -> its committer (running while a transaction of p is in flight or queued)
        self.committers: dict[int, asyncio.Task[None]] = {}
        #: transactions that carried more than one batch's outcome
        self.merged = 0

    def busy(self, p: int) -> bool:
        """Whether task ``p`` has a transaction in flight (its next outcome must queue behind it)."""
        c = self.committers.get(p)
        return c is not None and not c.done()

    async def submit(self, p: int, decisions: list[Any], letters: list[Any], offsets: dict[TopicPartition, int],
                     records: int, waits: list[Any] | None = None) -> None:
        """Queue a batch's outcome of task ``p`` (``waits``: its prompt transactions, awaited before its
        offsets go) and make sure its committer runs; returns at once, unless :data:`MAX_QUEUED_RECORDS`
        records are queued already (then once the transaction in flight is done)."""
        q = self.queued.get(p)
        if q is not None and q.records >= MAX_QUEUED_RECORDS:
            await self.drain(p)
            if self.tasks.state.get(p) != "ready":  # it failed meanwhile: the restore re-reads this batch
                self.tasks.host.uncollect(letters)
                return
        self.queued.setdefault(p, Queued()).add(decisions, letters, offsets, records, waits)
        if not self.busy(p):
            self.committers[p] = asyncio.create_task(self._run(p), name=f"{self.tasks.service}-commit-{p}")

    async def _run(self, p: int) -> None:
        m = self.tasks
        try:
            while p in self.queued:
                if self.interval_s:  # nothing queued: no wait (a drain, a stop, a revocation never waits for it)
                    wait = self.began.get(p, 0.0) + self.interval_s - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                q = self.queued.pop(p, None)
                if q is None:
                    break
                self.began[p] = time.monotonic()
                if m.state.get(p) != "ready":  # revoked or restoring: the records are read again
                    m.host.uncollect(q.letters)
                    continue
                self.merged += q.batches > 1
                if not await m.stream.commit_outcome(p, q.decisions, q.letters, q.offsets, q.records,
                                                     waits=q.waits):
                    dropped = self.queued.pop(p, None)  # decided after the failed one: read again after the restore
                    if dropped is not None:
                        m.host.uncollect(dropped.letters)
                    return
        except Exception as e:  # noqa: BLE001 - never lose a task silently: restore it, as after any failure
            m.log.error("committer_failed", task=p, error=f"{type(e).__name__}: {e}")
            dropped = self.queued.pop(p, None)
            if dropped is not None:
                m.host.uncollect(dropped.letters)
            if m.state.get(p) == "ready":
                m.restore_after_failure(p)

    async def drain(self, p: int | None = None) -> None:
        """Wait until task ``p``'s (default: every task's) queued outcomes are committed, or dropped after a
        failure. Called under the host's lock, so no batch is queued meanwhile."""
        for q in ([p] if p is not None else list(self.committers)):
            c = self.committers.get(q)
            if c is not None:
                await asyncio.shield(c)
                if self.committers.get(q) is c:
                    del self.committers[q]

    async def stop(self) -> None:
        """Let every transaction in flight finish (a graceful stop)."""
        await self.drain()
