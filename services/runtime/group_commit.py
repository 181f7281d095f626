"""Group commit: the tasks of one instance commit through one producer, what they commit at once in one transaction.

Under ``exactly_once_v2`` (Kafka Streams' name; issue 25) a service instance has one transactional producer,
fenced by the consumer group's generation (KIP-447: :func:`services.runtime.kip447.send_offsets_to_transaction`),
instead of one per task fenced by its id. A producer has one transaction open at a time, so the tasks'
transactions are **grouped**: each task's committer hands its outcome (a :class:`Part`: its records' writer, its
input offsets, the prompt transactions it waits for) to :meth:`GroupCommit.commit`; parts handed over while a
transaction is in flight wait, and the next transaction carries all of them, in the order they came. A round's
hops then cost one transaction per instance and batch instead of one per task.

What each task is promised stays what its own transaction promised:

* a part's records and offsets commit together, or not at all: a transaction that fails fails **every** part in
  it (each task is restored, as after its own failure);
* a task's parts commit in the order it handed them over (one transaction in flight per task already:
  :mod:`services.runtime.commit_queue`; parts are taken in arrival order);
* a part marked ``alone`` (a record retried alone after a failure: :class:`~services.runtime.stream_task.StreamTask`)
  goes in a transaction of its own, so an error no retry can fix is blamed on that record only, never on
  another task's record that shared its transaction;
* every transaction sends input offsets with the group's metadata read when they go, so a member of an old
  generation (paused past its session, or whose tasks moved) has its transaction refused and aborted: the
  caller makes sure each part carries at least its task's current positions (:class:`CommitLoop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition

from services.runtime.transaction_v2 import uses_transaction_v2

#: the most parts one transaction carries (a floor's instance rarely has more tasks than this with outcomes
#: at once; more wait for the next transaction, so one transaction's records stay bounded)
MAX_PARTS = 64

#: after a transaction, the most event-loop turns the next one waits for the tasks it carried that have more
#: queued to hand that over (:meth:`GroupCommit._run`); each task's committer needs a few turns to wake
MAX_HANDOVER_TURNS = 8


@dataclass
class Part:
    """One task's outcome handed to the instance's transaction.

    ``prod``: the producer it was decided for (a part for a producer replaced meanwhile fails with it);
    ``p``: the task; ``write``: sends its records on a producer (appending their futures to ``futs``);
    ``offsets``: its input offsets (next offset per partition); ``waits``: prompt transactions awaited before
    the offsets go; ``alone``: in a transaction of its own."""

    prod: Any
    p: int
    write: Callable[[Any], Awaitable[None]]
    offsets: dict[TopicPartition, int]
    futs: list[tuple[str | None, Any]]
    waits: list[Any] = field(default_factory=list)
    alone: bool = False
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class GroupCommit:
    """The instance's transactions: ``send_offsets(prod, offsets)`` adds a transaction's input offsets with the
    group's current metadata (KIP-447); ``dead(prod)`` tells a producer no transaction can begin on (fenced);
    ``service``: whose (for logs and traces)."""

    def __init__(self, send_offsets: Callable[[Any, dict[TopicPartition, int]], Awaitable[None]],
                 dead: Callable[[Any], bool], service: str = ""):
        self.service = service
        self.send_offsets = send_offsets
        self.dead = dead
        self.pending: list[Part] = []
        self.runner: asyncio.Task[None] | None = None
        #: whether task p has an outcome queued behind the part it has in the transaction in flight (set by
        #: its :class:`~services.runtime.task_manager.TaskManager`: the commit queue's view); the next
        #: transaction waits a few turns for those to be handed over instead of leaving them for the one after
        self.more_queued: Callable[[int], bool] = lambda p: False
        #: event-loop turns spent waiting for such hand-overs, and the parts that arrived while waiting
        self.handover_turns = 0
        self.handed_over = 0
        #: transactions run, and the parts they carried (parts / transactions: tasks per transaction)
        self.transactions = 0
        self.parts = 0

    async def commit(self, part: Part) -> None:
        """Commit ``part`` in the instance's next transaction; returns once it committed. Raises what the
        transaction raised (the same error for every part it carried): the producer's, a prompt transaction's,
        a fencing (:data:`services.runtime.kip447.FENCED_ERRORS`), or ``RuntimeError`` for a dead producer.
        A caller cancelled meanwhile does not cancel the transaction (other tasks' parts are in it)."""
        self.pending.append(part)
        if self.runner is None or self.runner.done():
            self.runner = asyncio.create_task(self._run(), name="group-commit")
        await asyncio.shield(part.done)

    def take(self) -> list[Part]:
        """The parts of the next transaction: the longest run at the head of the queue of parts for one
        producer, none of them ``alone`` (at most :data:`MAX_PARTS`); an ``alone`` part at the head by itself."""
        head = self.pending[0]
        n = 1
        if not head.alone:
            while (n < len(self.pending) and n < MAX_PARTS and not self.pending[n].alone
                   and self.pending[n].prod is head.prod):
                n += 1
        batch, self.pending = self.pending[:n], self.pending[n:]
        return batch

    async def _run(self) -> None:
        # no yield before the first take: the committers of one batch's tasks all hand their parts over in the
        # turn that started this runner, before it runs
        while self.pending:
            batch = self.take()
            try:
                await self.transaction(batch)
            except BaseException as e:
                for part in batch:
                    if not part.done.done():
                        part.done.set_exception(e)
                        part.done.exception()  # retrieved here too: a cancelled caller never awaits it
                if isinstance(e, asyncio.CancelledError):
                    raise
            else:
                for part in batch:
                    if not part.done.done():
                        part.done.set_result(None)
                await self._await_handovers(batch)

    async def _await_handovers(self, batch: list[Part]) -> None:
        """Let the tasks of the committed ``batch`` that have more queued (decided while it was in flight) hand
        it over before the next transaction begins: their committers wake only now, a few event-loop turns
        later, and a transaction begun at once would leave them for the one after it, a whole transaction more
        of waiting and one more transaction. At most :data:`MAX_HANDOVER_TURNS` turns (a turn of a quiet loop
        is microseconds); none when no task of the batch has anything queued."""
        expected = {part.p for part in batch if self.more_queued(part.p)}
        for _ in range(MAX_HANDOVER_TURNS):
            if not expected or len(self.pending) >= MAX_PARTS:
                return
            await asyncio.sleep(0)
            self.handover_turns += 1
            arrived = expected & {part.p for part in self.pending}
            self.handed_over += len(arrived)
            expected -= arrived

    async def transaction(self, batch: list[Part]) -> None:
        """One transaction of ``batch``'s producer with every part's records, then (once their prompt
        transactions committed) all their offsets, then the commit."""
        prod = batch[0].prod
        if self.dead(prod):
            raise RuntimeError("the instance's producer is fenced: its tasks are restored with a new one")
        self.transactions += 1
        self.parts += len(batch)
        async with prod.transaction():
            for part in batch:
                await part.write(prod)
            if uses_transaction_v2(prod):
                # version 2: the records' partitions and the offsets' partition join the transaction through
                # their own requests; sent side by side, the broker answers the older of the two additions
                # NETWORK_EXCEPTION (one at a time per transactional id) and the client retries it 10 ms later:
                # a transaction's p90 14.9 ms against 4.3 when the offsets wait for the records (bench/txn_v2.py)
                await asyncio.gather(*(f for part in batch for _, f in part.futs))
            waits = [w for part in batch for w in part.waits]
            if waits:  # never the offsets of records whose prompt events are not committed
                await asyncio.gather(*waits)
            offsets: dict[TopicPartition, int] = {}
            for part in batch:
                for tp, off in part.offsets.items():
                    offsets[tp] = max(offsets.get(tp, 0), off)
            if offsets:
                await self.send_offsets(prod, offsets)
            await asyncio.gather(*(f for part in batch for _, f in part.futs))
