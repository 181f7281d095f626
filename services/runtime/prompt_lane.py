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
from services.runtime.producers import retrieve_later, retrieve_transaction_error
from services.runtime.record_collector import TaskFailed, producer_dead

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: times prompt events queued while a prompt transaction sends its records may join it before it commits (then
#: it commits, and what is queued waits for the next one: a busy task's transaction stays short)
MAX_JOINED = 3


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
        #: prompt transactions committed, the events they carried, and the times queued events joined one
        self.transactions = 0
        self.events = 0
        self.joins = 0

    def submit(self, p: int, decisions: list[Decision]) -> asyncio.Future[None]:
        """Queue task ``p``'s prompt ``decisions`` (from :func:`split`) and make sure its committer runs;
        returns the future of the transaction that will carry them (shared with the others queued now)."""
        q = self.queued.get(p)
        if q is None:
            q = self.queued[p] = Prompted()
            retrieve_later(q.done)  # a failure is the task's (restored); nobody may await a dropped one
        q.decisions.extend(decisions)
        c = self.committers.get(p)
        if c is None or c.done():
            self.committers[p] = asyncio.create_task(self._run(p), name=f"{self.tasks.service}-prompt-{p}")
        return q.done

    async def _run(self, p: int) -> None:
        m = self.tasks
        while (q := self.queued.pop(p, None)) is not None:
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
        try:
            async with prod.transaction():
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
        c = self.committers.pop(p, None)
        if c is not None:
            await asyncio.gather(asyncio.shield(c), return_exceptions=True)

    async def stop(self) -> None:
        """Let every prompt transaction in flight finish (a stop); what is queued behind them still goes."""
        await asyncio.gather(*(asyncio.shield(c) for c in list(self.committers.values())), return_exceptions=True)
