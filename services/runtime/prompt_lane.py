"""The prompt lane: a service's prompt stream published in short transactions of its own, ahead of the batch's.

A task's transaction carries its batch's events and input offsets: five round trips (AddPartitionsToTxn,
Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn), and the next batch's outcome waits behind it
(:mod:`services.runtime.commit_queue`). For the projection's odds that wait was most of a card's delay to
its odds at the tail (issue 30: ``bench/projection.py``'s "to txn" and "txn"). A service may name one own
stream its **prompt stream** (``ServiceCore.prompt_stream``; the projection's ``projection.odds``): the events a
batch decides for it are sent at once by a second fenced transactional producer of the task
(``<task's id>.prompt``, :meth:`RecordCollector.open`) in a transaction of their own (three round trips, no
offsets), one in flight per task; those decided while its records are sent join it, the later ones queue
behind it, all in decision order.

Exactly-once stays, for these reasons:

* **fenced as the task is**: a task's restore opens both of its producers, so the next owner's
  ``init_transactions`` aborts the old owner's open prompt transaction and fences its producer; a paused
  member that lost the task writes nothing a ``read_committed`` reader sees;
* **not lost**: the transaction that commits a batch's input offsets (or the one that carries them when they
  were deferred) waits, before its offsets go, for the prompt transactions of that batch and of every batch
  before it (:attr:`Prompted.done`): it aborts when one failed, the task is restored and its records are read
  again and decided again;
* **not twice**: a prompt transaction can commit while the offsets of its inputs do not (a crash between
  the two); the restore folds the task's own streams, the prompt stream included, to their end *after* the
  fence, then the input records after the committed offsets are read again: the core must publish nothing
  for them that its own stream already holds (the projection: ``ProjectionState.odds_sent``, which a
  test checks by replaying such a tail).

**Primed transactions.** A prompt transaction's first round trip, AddPartitionsToTxn, does not depend on its
events: the task's prompt stream partition is always ``p``. So once a prompt transaction committed, the
task's committer begins the next one at once and adds the partition (:func:`~services.runtime.producers.add_partition_ahead`)
while it waits: the next prompt events go straight to Produce and EndTxn, two round trips on a card's path
instead of three. A primed transaction holds nothing back: a partition without records of an open
transaction has no last stable offset to hold. It is ended empty (aborted: nothing was sent in it) and primed
again after :data:`PRIME_REFRESH_S` without prompt events, well inside the prompt producer's transaction timeout
(aiokafka's 60 s), and left ended once the task published nothing for :data:`PRIME_KEEP_S` (an idle task
writes nothing; its next prompt transaction pays the round trip again). A reset or stop ends it before the
producer closes; whatever a killed instance left primed, the next owner's ``init_transactions`` aborts as it
aborts any open transaction of the task's id.

Nothing else changes: a checkpoint still holds the tables as its transaction begins (their prompt events
already decided; ``own_next`` of the prompt stream only moves once they are committed, so a restore reads
them again, which folds nothing twice), and the records after a failed transaction, decided one at a time,
go in the task's transaction as before (no prompt lane while a task is careful).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from contracts import topics as T
from contracts.codecs import encode
from services.runtime.core import Decision
from services.runtime.producers import add_partition_ahead, retrieve_later, retrieve_transaction_error
from services.runtime.record_collector import TaskFailed, producer_dead

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: times prompt events queued while a prompt transaction sends its records may join it before it commits (then
#: it commits, and what is queued waits for the next one: a busy task's transaction stays short)
MAX_JOINED = 3
#: a primed prompt transaction (begun, its partition added, nothing sent) is ended and primed again after this
#: long without prompt events (s): well inside the prompt producer's transaction timeout (aiokafka's 60 s), past
#: which the coordinator would abort it and fence the producer
PRIME_REFRESH_S = 10.0
#: a task's committer keeps a transaction primed while the task published prompt events within this long (s)
PRIME_KEEP_S = 60.0
#: how long ending a primed transaction (its refresh, a reset, a stop) waits for the broker (s); past it the
#: committer leaves it to the producer's close and the next ``init_transactions`` of the task's id
END_PRIMED_TIMEOUT_S = 2.0


def split(decisions: list[Decision], stream: str) -> tuple[list[Decision], list[Decision]]:
    """``decisions`` cut in two: (the rest, for the task's transaction; the events of ``stream``), each
    ``Decision`` keeping its table; a decision left with nothing is dropped from its side."""
    rest: list[Decision] = []
    prompt: list[Decision] = []
    for d in decisions:
        mine = tuple(e for e in d.events if e.stream == stream)
        if not mine:
            rest.append(d)
            continue
        prompt.append(Decision(d.table_id, events=mine))
        left = replace(d, events=tuple(e for e in d.events if e.stream != stream))
        if left:
            rest.append(left)
    return rest, prompt


@dataclass
class Prompted:
    """Prompt events of one task waiting for their transaction; ``done`` resolves once it committed (or
    fails with its error, or :class:`TaskFailed` when they were dropped before it began)."""

    decisions: list[Decision] = field(default_factory=list)
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class PromptLane:
    """The prompt transactions of one service instance's tasks (``tasks``: the :class:`TaskManager` whose
    record collector, state and host they use; ``stream``: the base name of the prompt stream)."""

    def __init__(self, tasks: TaskManager, stream: str):
        self.tasks = tasks
        self.stream = stream
        #: task p -> prompt events decided since its prompt transaction in flight began
        self.queued: dict[int, Prompted] = {}
        #: task p -> its prompt committer (running while a prompt transaction of p is in flight or queued)
        self.committers: dict[int, asyncio.Task[None]] = {}
        #: task p -> (its prompt producer, loop time primed) of the transaction begun for its next prompt events
        self.primed: dict[int, tuple[Any, float]] = {}
        #: task p -> set when prompt events are queued for it: wakes its committer waiting with a primed transaction
        self.wakes: dict[int, asyncio.Event] = {}
        #: tasks whose committer is to end (a reset, a stop): it ends its primed transaction and returns
        self.closing: set[int] = set()
        #: prompt transactions committed, the events they carried, and the times queued events joined one
        self.transactions = 0
        self.events = 0
        self.joins = 0
        #: transactions primed, and primed ones ended empty (refreshed, reset, stopped, left idle)
        self.primes = 0
        self.ended_empty = 0

    def submit(self, p: int, decisions: list[Decision]) -> asyncio.Future[None]:
        """Queue task ``p``'s prompt ``decisions`` (from :func:`split`) and make sure its committer runs;
        returns the future of the transaction that will carry them (shared with the others queued now)."""
        q = self.queued.get(p)
        if q is None:
            q = self.queued[p] = Prompted()
            retrieve_later(q.done)  # a failure is the task's (restored); nobody may await a dropped one
        q.decisions.extend(decisions)
        self.closing.discard(p)
        self._wake(p).set()
        c = self.committers.get(p)
        if c is None or c.done():
            self.committers[p] = asyncio.create_task(self._run(p), name=f"{self.tasks.service}-prompt-{p}")
        return q.done

    def _wake(self, p: int) -> asyncio.Event:
        w = self.wakes.get(p)
        if w is None:
            w = self.wakes[p] = asyncio.Event()
        return w

    async def _run(self, p: int) -> None:
        """Task ``p``'s committer: its queued prompt events in transactions one after another, each primed
        transaction kept (refreshed) while the task is ready and published within :data:`PRIME_KEEP_S`; ends
        (its primed transaction ended) on a reset, a stop, a failure or an idle task."""
        m = self.tasks
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            q = self.queued.pop(p, None)
            if q is None:
                if p in self.closing or m.state.get(p) != "ready" or loop.time() - last > PRIME_KEEP_S:
                    await self._end_primed(p)
                    if p in self.queued and p not in self.closing:
                        continue  # queued while it ended: this committer carries them
                    return
                wake = self._wake(p)
                wake.clear()
                try:
                    await asyncio.wait_for(wake.wait(), PRIME_REFRESH_S)
                except TimeoutError:
                    if await self._end_primed(p) and p not in self.closing and m.state.get(p) == "ready":
                        await self._prime(p)
                continue
            joined = [q]  # and what joins it while its records are sent (:meth:`_commit`)
            try:
                if m.state.get(p) != "ready":  # revoked or restoring: the restore reads the records again
                    raise TaskFailed(f"task {p} is not ready: its prompt events are decided again")
                await self._commit(p, joined)
            except Exception as e:  # noqa: BLE001 - fenced, broker away...: restore the task, fail the waits
                for j in joined:
                    if not j.done.done():
                        j.done.set_exception(e)
                self.drop(p, e)
                if m.state.get(p) == "ready":
                    m.transaction_failed(e)
                    m.log.warning("prompt_transaction_failed", task=p, error=f"{type(e).__name__}: {e}")
                    m.restore_after_failure(p)
                return
            for j in joined:
                j.done.set_result(None)
            last = loop.time()
            if p not in self.closing and m.state.get(p) == "ready" and m.settings.prime_transactions:
                await self._prime(p)

    def _live(self, p: int) -> Any:
        """Task ``p``'s prompt producer when it can carry a transaction (present, not fenced), else None."""
        prod = self.tasks.collector.prompt_producers.get(p)
        return None if prod is None or producer_dead(prod) else prod

    async def _prime(self, p: int) -> bool:
        """Begin task ``p``'s next prompt transaction and add its partition of the prompt stream now
        (:func:`~services.runtime.producers.add_partition_ahead`); False when it could not (no live producer,
        an error: logged, nothing primed, the next prompt transaction begins as before)."""
        from aiokafka import TopicPartition

        prod = self._live(p)
        if prod is None:
            return False
        try:
            await prod.begin_transaction()
            add_partition_ahead(prod, TopicPartition(self.tasks.settings.topic(self.stream), p))
        except Exception as e:  # noqa: BLE001 - only ahead of time: the next transaction begins on its own
            self.tasks.log.info("prompt_prime_failed", task=p, error=f"{type(e).__name__}: {e}")
            return False
        self.primed[p] = (prod, asyncio.get_running_loop().time())
        self.primes += 1
        return True

    async def _end_primed(self, p: int) -> bool:
        """Abort task ``p``'s primed transaction (nothing was sent in it), waiting at most
        :data:`END_PRIMED_TIMEOUT_S`; True once it ended, False when none was primed on the task's live
        producer or it did not end in time (left to the producer's close and the next ``init_transactions``)."""
        primed = self.primed.pop(p, None)
        prod = self._live(p)
        if primed is None or primed[0] is not prod:
            return False
        try:
            await asyncio.wait_for(prod.abort_transaction(), END_PRIMED_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - the broker away, the producer fenced: its next use tells
            retrieve_transaction_error(prod)
            self.tasks.log.info("prompt_primed_end_failed", task=p, error=f"{type(e).__name__}: {e}")
            return False
        self.ended_empty += 1
        return True

    async def _commit(self, p: int, joined: list[Prompted]) -> None:
        """One prompt transaction of task ``p``: the events of ``joined`` to the prompt stream's partition
        ``p``; returns once committed (``own_next`` of the stream then moves past them). Prompt events queued
        while its records are sent **join it** (appended to ``joined``), at most :data:`MAX_JOINED` times, so
        they go with its commit instead of waiting for it and a transaction of their own."""
        m = self.tasks
        prod = m.collector.prompt_producers.get(p)
        if prod is None or producer_dead(prod):
            raise TaskFailed(f"task {p} has no live prompt producer")
        topic = m.settings.topic(self.stream)
        futs: list[Any] = []
        primed = self.primed.pop(p, None)
        try:
            if primed is None or primed[0] is not prod:
                await prod.begin_transaction()
            try:
                i = 0
                while i < len(joined):
                    for d in joined[i].decisions:
                        key = T.key(d.table_id)
                        for env in d.events:
                            futs.append(await prod.send(topic, encode(env), key=key, partition=p))
                    i += 1
                    await asyncio.gather(*futs)
                    if len(joined) <= MAX_JOINED and m.state.get(p) == "ready" \
                            and (more := self.queued.pop(p, None)) is not None:
                        joined.append(more)
            except BaseException:
                if not producer_dead(prod):  # as aiokafka's transaction() context: a fatal state cannot abort
                    await prod.abort_transaction()
                raise
            await prod.commit_transaction()
        except BaseException:
            for f in futs:
                retrieve_later(f)
            retrieve_transaction_error(prod)
            raise
        if futs:
            nxt = m.own_next.setdefault(p, {})
            nxt[self.stream] = max(nxt.get(self.stream, 0), max(f.result().offset for f in futs) + 1)
        self.transactions += 1
        self.events += len(futs)
        self.joins += len(joined) - 1
        for j in joined:
            m.host.log_published(j.decisions)

    def drop(self, p: int, error: BaseException | None = None) -> None:
        """Forget task ``p``'s queued prompt events (never sent: a restore decides them again); the
        transactions waiting for them fail with ``error`` (default :class:`TaskFailed`)."""
        q = self.queued.pop(p, None)
        if q is not None and not q.done.done():
            q.done.set_exception(error or TaskFailed(f"task {p}: its prompt events were dropped"))

    async def reset(self, p: int) -> None:
        """Drop task ``p``'s queued prompt events and wait for its prompt transaction in flight to end (a
        restore's hand-over, a task moved away: called under the host's lock, so none is queued meanwhile)."""
        self.drop(p)
        self.closing.add(p)
        self._wake(p).set()
        c = self.committers.pop(p, None)
        if c is not None:
            await asyncio.gather(asyncio.shield(c), return_exceptions=True)
        self.primed.pop(p, None)  # a producer the restore already replaced: its close ended it

    async def stop(self) -> None:
        """Let every prompt transaction in flight finish (a stop); what is queued behind them still goes, then
        each committer ends its primed transaction."""
        for p in list(self.committers):
            self.closing.add(p)
            self._wake(p).set()
        await asyncio.gather(*(asyncio.shield(c) for c in list(self.committers.values())), return_exceptions=True)
        self.primed.clear()
