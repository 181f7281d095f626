"""The retry of a transaction's first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS
(``record_collector.quick_concurrent_retry``, issue 30): 2 ms, doubled at each such answer in a row, at most
aiokafka's 20 ms; any other answer resets it. Exercised on aiokafka's own handler with a recorded response."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import ConcurrentTransactions, NoError, NotCoordinatorError
from aiokafka.producer import sender as aks
from aiokafka.producer.transaction_manager import TransactionManager

from services.runtime import record_collector as rc

TP = TopicPartition("t.projection.odds", 3)


def sender() -> SimpleNamespace:
    """What the handler reads of aiokafka's ``Sender``: a transaction manager in a transaction with ``TP``
    to add, the producer's retry backoff (10 ms, as the tasks' producers) and the coordinator's reset."""
    txn = TransactionManager("t.projection.task-3", 60_000)
    txn.set_pid_and_epoch(7, 0)
    txn.begin_transaction()
    txn.maybe_add_partition_to_txn(TP)
    return SimpleNamespace(_txn_manager=txn, _retry_backoff=0.01, _coordinator_dead=lambda kind: None)


def answer(error: type) -> SimpleNamespace:
    return SimpleNamespace(errors=[(TP.topic, [(TP.partition, error.errno)])])


@pytest.mark.asyncio
async def test_concurrent_transactions_is_retried_after_2_ms_doubling_to_20_and_reset_by_another_answer():
    rc.quick_concurrent_retry()
    rc.quick_concurrent_retry()  # idempotent: wrapped once
    s = sender()
    handler = aks.AddPartitionsToTxnHandler(s, [TP])
    backoffs = [handler.handle_response(answer(ConcurrentTransactions)) for _ in range(6)]
    assert backoffs == pytest.approx([0.002, 0.004, 0.008, 0.016, 0.02, 0.02])  # before: 0.02 each time
    assert handler.handle_response(answer(NotCoordinatorError)) == pytest.approx(0.01)  # not ours: aiokafka's
    assert handler.handle_response(answer(ConcurrentTransactions)) == pytest.approx(0.002)  # reset
    assert handler.handle_response(answer(NoError)) is None
    assert TP in s._txn_manager._txn_partitions
    # once a partition is in the transaction, aiokafka's own backoff (the producer's 10 ms) stays
    s._txn_manager.maybe_add_partition_to_txn(TopicPartition(TP.topic, 4))
    assert handler.handle_response(SimpleNamespace(errors=[(TP.topic, [(4, ConcurrentTransactions.errno)])])) \
        == pytest.approx(0.01)
