"""The stream task: one task's records of a batch handled and committed, and what a failed transaction leaves.

Kafka Streams' ``StreamTask`` processes one partition group's records and commits what they caused. Here task
*p*'s records of a batch are decided by the host (one task at a time) and everything they caused (events,
commands to other services, dead letters, a due checkpoint) is written in one transaction **together with
the batch's input offsets** (:class:`~services.runtime.commit_loop.CommitLoop`), or, when they caused nothing,
their offsets are deferred. A failed transaction is never skipped: the task is restored from the log and its
consumer seeks back to the committed offsets. The records after a failure go one per transaction; a record
that fails alone twice with an error no retry can fix is dead-lettered with the error and its bytes, and one
whose dead letter cannot be written either is passed over (offsets only), so the partition still advances.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition

from contracts.envelope import DeadLetter
from services.runtime.core import Decision
from services.runtime.prompt_lane import split
from services.runtime.record_collector import unpublishable

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager


def log_time(record: Any) -> int | None:
    """The broker's append time (ms) of a record of a ``LogAppendTime`` topic (timestamp type 1), else None:
    a producer-chosen timestamp is the sender's claim, never the log's time."""
    return record.timestamp if getattr(record, "timestamp_type", 0) == 1 else None


def next_offsets(recs: list[Any], p: int) -> dict[TopicPartition, int]:
    """The next offset of each input partition after ``recs`` (task ``p``'s records)."""
    offsets: dict[TopicPartition, int] = {}
    for r in recs:
        tp = TopicPartition(r.topic, p)
        offsets[tp] = max(offsets.get(tp, 0), r.offset + 1)
    return offsets


class StreamTask:
    """The processing of one service instance's tasks (``tasks``: the :class:`TaskManager` whose host,
    state, positions and commit loop it uses); the per-task failure records are kept here, by task p."""

    def __init__(self, tasks: TaskManager):
        self.tasks = tasks
        #: tasks whose last transaction failed: their next records go one per transaction
        self.careful: set[int] = set()
        #: (topic, offset) of records whose single-record transaction failed, and how often
        self.strikes: dict[int, dict[tuple[str, int], int]] = {}
        #: records that failed alone twice with an error no retry can fix: dead-lettered when next read
        self.poison: dict[int, dict[tuple[str, int], str]] = {}
        #: poison records whose dead letter could not be written either: skipped (offsets only) when next
        #: read, logged at error level with their size and digest, so the partition still advances
        self.unletterable: dict[int, set[tuple[str, int]]] = {}
        #: held while the host decides one task's records (tasks of a batch commit concurrently)
        self.deciding = asyncio.Lock()
        #: tasks whose state holds a batch's decisions not yet queued for a transaction (waiting for room in
        #: a full commit queue, or decided just now): no checkpoint of them begins meanwhile, since it would
        #: hold that state without the batch's offsets and outputs, and a restore from it would take the
        #: batch's records, read again, for duplicates (input seqs) and never write what they caused
        self.unqueued: set[int] = set()

    async def process(self, p: int, recs: list[Any]) -> None:
        """Task ``p``'s records of one batch (the caller holds the host's lock); nothing for a task not
        ready (not ours, or being restored: the restore seeks back to the committed offsets)."""
        m = self.tasks
        if m.state.get(p) != "ready":
            return
        positions = m.positions.setdefault(p, {})
        fresh = [r for r in recs if r.offset >= positions.get(TopicPartition(r.topic, p), 0)]
        if not fresh:
            return
        if p not in self.careful:
            await self.handle_and_commit(p, fresh)
            return
        # after a failed transaction: one record per transaction, so a record whose outcome can never
        # be published is found, dead-lettered, and the partition goes on
        for r in fresh:
            if not await self.handle_and_commit(p, [r], single=True):
                return
        self.careful.discard(p)

    def _letter(self, p: int, r: Any) -> tuple[list[DeadLetter], bool]:
        """The dead letter of poison record ``r`` of task ``p`` (with whether one is written): none for a
        record whose letter failed too (passed over, logged with its size and digest)."""
        m = self.tasks
        letter = DeadLetter.of(service=m.service, topic=r.topic, partition=p, offset=r.offset, key=r.key,
                               error=f"unpublishable outcome: {self.poison[p][(r.topic, r.offset)]}",
                               original=r.value or b"", received_at=m.host.clock())
        if (r.topic, r.offset) in self.unletterable.get(p, set()):
            m.host.metrics.dead_letter("unletterable")
            m.log.error("record_skipped_unletterable", topic=r.topic, partition=p, offset=r.offset,
                        size=letter.original_size, sha256=letter.original_sha256, error=letter.error)
            return [], False
        m.host.dead_letters += 1
        m.host.metrics.dead_letter("unpublishable")
        m.log.error("dead_letter_unpublishable", topic=r.topic, partition=p, offset=r.offset, error=letter.error)
        return [letter], True

    async def handle_and_commit(self, p: int, recs: list[Any], single: bool = False) -> bool:
        """Handle ``recs`` of task ``p`` and commit what they caused with their offsets (``single``: one
        record after a failure, committed before this returns: False, and the task is being restored, when
        its transaction failed). A batch's outcome is queued, committed behind the task's transaction in flight
        (:class:`~services.runtime.commit_queue.CommitQueue`, which restores the task if it fails): True."""
        self.unqueued.add(p)
        try:
            return await self._handle_and_commit(p, recs, single)
        finally:
            self.unqueued.discard(p)

    async def _handle_and_commit(self, p: int, recs: list[Any], single: bool) -> bool:
        m = self.tasks
        offsets = next_offsets(recs, p)
        lettered = False  # this transaction carries a poison record's dead letter
        if single and (recs[0].topic, recs[0].offset) in self.poison.get(p, {}):
            decisions: list[Decision] = []
            letters, lettered = self._letter(p, recs[0])
        else:
            async with self.deciding:  # the host collects one batch at a time
                decisions, letters = await m.host.collect(
                    [(r.topic, r.partition, r.offset, r.key, r.value, log_time(r)) for r in recs])
        if not m.transactional:
            m.positions[p].update(offsets)
            m.host.metrics.settle(True)
            return True
        waits: list[Any] = []
        if m.prompt is not None and not single:  # the prompt stream's events go at once, in their own transaction
            decisions, prompt = split(decisions, m.prompt.stream)
            if prompt:
                waits.append(m.prompt.submit(p, prompt))
        if single:  # after a failure: alone, once nothing is in flight
            await m.queue.drain(p)
        elif not decisions and not letters and not m.queue.busy(p) and m.commits.may_defer(p, len(recs)):
            m.commits.defer(p, offsets, len(recs), waits)
            m.positions[p].update(offsets)
            m.host.metrics.settle(True)
            return True
        else:  # committed behind the task's transaction in flight, if any (:mod:`services.runtime.commit_queue`)
            await m.queue.submit(p, decisions, letters, offsets, len(recs), waits)
            return True
        self.unqueued.discard(p)  # this transaction carries the batch: a checkpoint in it holds its offsets
        return await self.commit_outcome(p, decisions, letters, offsets, len(recs), first=recs[0], single=single,
                                         lettered=lettered)

    async def commit_outcome(self, p: int, decisions: list[Decision], letters: list[Any],
                             offsets: dict[TopicPartition, int], records: int, first: Any = None,
                             single: bool = False, lettered: bool = False, waits: list[Any] | None = None,
                             ) -> bool:
        """Commit what ``records`` input records of task ``p`` decided with their ``offsets`` (``first``:
        the first of them, after a failure the one alone; ``waits``: their prompt transactions). False (and
        the task is being restored) when the transaction failed."""
        m = self.tasks
        try:
            await m._commit(p, decisions, letters, offsets, records, waits=waits, alone=single)
        except Exception as e:  # noqa: BLE001 - fenced, broker away, record too large...: restore, re-read
            m.host.metrics.settle(False)
            m.host.uncollect(letters)
            if m.state.get(p) != "ready":  # already being restored (its prompt transaction failed first)
                return False
            fenced = m.transaction_failed(e)
            m.log.warning("transaction_failed", task=p, error=f"{type(e).__name__}: {e}",
                          records=records, fenced=fenced)
            if first is not None:
                self._strike(p, first, e, single=single, lettered=lettered, fenced=fenced)
            self.careful.add(p)
            m.restore_after_failure(p)
            return False
        m.positions.setdefault(p, {}).update(offsets)
        m._failing_since.pop(p, None)
        if first is not None:
            self.poison.get(p, {}).pop((first.topic, first.offset), None)
            self.unletterable.get(p, set()).discard((first.topic, first.offset))
        m.host.metrics.settle(True)
        m.host.log_published(decisions)
        return True

    def _strike(self, p: int, r: Any, e: BaseException, *, single: bool, lettered: bool, fenced: bool) -> None:
        """Count a failed transaction against record ``r`` of task ``p``: a record that failed alone twice
        with an error no retry can fix is poison (dead-lettered when next read); a poison record whose dead
        letter failed the same way is unletterable (passed over when next read)."""
        if fenced or not unpublishable(e):
            return
        key = (r.topic, r.offset)
        if lettered:  # not even its letter can be written
            self.unletterable.setdefault(p, set()).add(key)
        elif single:
            strikes = self.strikes.setdefault(p, {})
            strikes[key] = strikes.get(key, 0) + 1
            if strikes[key] >= 2:  # the same record failed alone twice: its outcome cannot be written
                self.poison.setdefault(p, {})[key] = f"{type(e).__name__}: {e}"

