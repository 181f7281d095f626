"""Quiet logs after an expected fencing (issue 28, item 10).

On ordinary rebalances a task's old producer is fenced. Its ``stop()`` then raised before closing its client,
leaving connections for the garbage collector ("Unclosed AIOKafkaConnection" at error level), and the futures
of a failed transaction's records got ``ProducerFenced`` after no one awaited them ("Future exception was
never retrieved"). Both are caught here through the event loop's exception handler, where asyncio reports them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import ProducerFenced

from contracts import topics as T
from services.runtime.producers import stop_quietly
from tests.services.runtime_fakes import committed
from tests.services.test_dead_letter_bounds import BETS, _tasks
from tests.services.test_task_commits import Record


@contextlib.contextmanager
def _reported() -> Any:
    """What asyncio reports to the loop's exception handler meanwhile (messages)."""
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    before = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: seen.append(ctx["message"]))
    try:
        yield seen
    finally:
        loop.set_exception_handler(before)


class FencedProducer:
    """A fenced producer: its sender task died of ProducerFenced, ``stop()`` raises it before the client
    closes (as aiokafka's does)."""

    def __init__(self, sender: asyncio.Task[Any]):
        self._sender = type("Sender", (), {"sender_task": sender})()
        self.client = self
        self.closed = False

    async def stop(self) -> None:
        raise ProducerFenced()

    async def close(self) -> None:
        self.closed = True


@pytest.mark.asyncio
async def test_a_fenced_producer_is_closed_and_its_senders_error_retrieved():
    async def sender() -> None:
        raise ProducerFenced()

    with _reported() as seen:
        task = asyncio.ensure_future(sender())
        await asyncio.wait([task])
        prod = FencedProducer(task)
        await stop_quietly(prod)
        assert prod.closed
        del task, prod
        gc.collect()
        await asyncio.sleep(0)
    assert seen == []


@pytest.mark.asyncio
async def test_a_failed_transactions_record_futures_leave_no_unretrieved_error():
    from tests.services.test_dead_letter_bounds import LimitedProducer

    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[Any]] = []

    class Fenced(LimitedProducer):
        async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
            fut = loop.create_future()
            pending.append(fut)
            return fut

        async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
            raise ProducerFenced()

    tasks = _tasks(Fenced())
    with _reported() as seen:
        await committed(tasks, [Record(BETS, 0, 1, b"T1", b"\xff")])  # a dead letter: one record sent
        assert tasks.state[0] == "restoring" and len(pending) == 1
        pending.pop().set_exception(ProducerFenced())  # the broker's answer, after the transaction failed
        gc.collect()
        await asyncio.sleep(0)
        gc.collect()
    assert seen == []


class RealTxnFenced:
    """A producer with aiokafka's own transaction manager and transaction context, fenced while it adds the
    offsets (as the broker's ``AddOffsetsToTxn`` answer ``ProducerFenced`` does): the sender task dies and
    ``fatal_error`` sets the error on the offsets' future and on the transaction's waiter. aiokafka's context
    then leaves the transaction without awaiting that waiter (a fatal state cannot abort), which asyncio logged
    at error level as "Future exception was never retrieved" in the CI's chaos run (settlement-2)."""

    def __init__(self) -> None:
        from aiokafka.producer.transaction_manager import TransactionManager

        self._txn_manager = TransactionManager("t.wagering.task-0", 60_000)
        self._txn_manager.set_pid_and_epoch(1, 0)

    def transaction(self) -> Any:
        from aiokafka.producer.producer import TransactionContext

        return TransactionContext(self)

    async def begin_transaction(self) -> None:
        self._txn_manager.begin_transaction()

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int = 0) -> Any:
        raise AssertionError("no record in this transaction")

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        fut = self._txn_manager.add_offsets_to_txn(offsets, group_id)
        self._txn_manager.fatal_error(ProducerFenced())  # the sender task died of the broker's answer
        await asyncio.shield(fut)


@pytest.mark.asyncio
async def test_a_fenced_transactions_waiter_leaves_no_unretrieved_error():
    tasks = _tasks(RealTxnFenced())  # type: ignore[arg-type]
    tp = TopicPartition(BETS, 0)
    with _reported() as seen:
        tasks._uncommitted[0] = {tp: 5}  # a quiet task's deferred offsets, committed alone
        tasks._deferred_since[0] = 0.0
        assert await tasks.flush_deferred(now=10.0) == 0
        assert tasks.state[0] == "restoring" and tasks.fenced == 1
        tasks.producers.clear()  # the restore closes it; nothing else holds its transaction's waiter
        gc.collect()
        await asyncio.sleep(0)
        gc.collect()
    assert seen == []


async def test_a_dropped_fenced_future_is_logged_at_info_and_any_other_error_still_reaches_the_old_handler():
    """CI's chaos run still logged "Future exception was never retrieved … ProducerFenced" at error level on
    four instances: futures aiokafka fails after the task has handled the fencing. The service's loop logs
    those at info (``fenced_future_dropped``); any other dropped error still goes to the previous handler."""
    from services.runtime.producers import quiet_fenced_futures

    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    infos: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def info(self, event: str, **kw: Any) -> None:
            infos.append((event, kw))

    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _lp, ctx: seen.append(ctx))
    try:
        quiet_fenced_futures(loop, Log())
        quiet_fenced_futures(loop, Log())  # a second service in the process: installed once
        for exc in (ProducerFenced(), RuntimeError("a real bug")):
            fut = loop.create_future()
            fut.set_exception(exc)
            del fut
            gc.collect()
        await asyncio.sleep(0)
        assert [e for e, _ in infos] == ["fenced_future_dropped"]
        assert [type(c["exception"]).__name__ for c in seen] == ["RuntimeError"]
        assert "never retrieved" in seen[0]["message"]
    finally:
        loop.set_exception_handler(old)
