"""The record collector (``services/runtime/record_collector.py``): each task's fenced producer and what
one transaction writes, exercised with a recording producer and aiokafka's own transaction manager."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import (InvalidProducerEpoch, KafkaConnectionError, MessageSizeTooLargeError,
                             ProducerFenced)
from aiokafka.producer.transaction_manager import TransactionManager

from contracts import topics as T
from contracts.envelope import DeadLetter
from services.runtime.producers import retrieve_transaction_error
from services.runtime.settings import Settings
from services.runtime.record_collector import RecordCollector, is_fenced, producer_dead, unpublishable
from tests.services.runtime_fakes import RecordingProducer, settings


def test_the_transactional_id_is_the_services_and_the_partitions_never_the_instances():
    a = RecordCollector(Settings(bootstrap_servers="x:1", topic_prefix="t.", instance="a"), "wagering", "g")
    b = RecordCollector(Settings(bootstrap_servers="x:1", topic_prefix="t.", instance="b"), "wagering", "g")
    assert a.transactional_id(3) == b.transactional_id(3) == "croupier.t.wagering.task-3"
    assert a.transactional_id(2) == "croupier.t.wagering.task-2"


@pytest.mark.asyncio
async def test_one_transaction_writes_letters_then_the_checkpoint_then_the_offsets():
    c = RecordCollector(settings(), "wagering", "t.wagering")
    prod = RecordingProducer()
    letter = DeadLetter.of(service="wagering", topic="t.wagering.bets", partition=2, offset=7, key=b"T1",
                           error="undecodable", original=b"\xff", received_at=None)
    futs: list = []
    offsets = {TopicPartition("t.wagering.bets", 2): 8}
    await c.transaction(prod, 2, [], [letter], [(b"T1", b"snap"), (b"__checkpoint__", b"cp")], offsets, futs)
    assert prod.sent == [(f"t.{T.dlq('wagering')}", 2, b"T1"), ("t.wagering.snapshots", 2, b"T1"),
                         ("t.wagering.snapshots", 2, b"__checkpoint__")]
    assert prod.offsets == [(offsets, "t.wagering")]
    assert prod.committed == 1
    assert [stream for stream, _ in futs] == [None, None, None]  # none of them is an own event


@pytest.mark.asyncio
async def test_a_transaction_without_offsets_sends_none():
    c = RecordCollector(settings(), "wagering", "g")
    prod = RecordingProducer()
    await c.transaction(prod, 0, [], [], [], {}, [])
    assert prod.offsets == [] and prod.sent == [] and prod.committed == 1


@pytest.mark.asyncio
async def test_a_fenced_producer_is_dead_an_aborted_one_is_not():
    manager = TransactionManager("t", 60_000)
    manager.set_pid_and_epoch(1, 0)
    prod = type("P", (), {"_txn_manager": manager})()
    assert not producer_dead(prod)
    manager.begin_transaction()
    manager.error_transaction(KafkaConnectionError())  # abortable
    assert not producer_dead(prod)
    manager.fatal_error(ProducerFenced())
    assert producer_dead(prod)
    assert not producer_dead(None)
    retrieve_transaction_error(prod)  # the fatal error's waiter, as a failed commit retrieves it


def test_which_errors_are_fencing_and_which_no_retry_can_fix():
    assert is_fenced(ProducerFenced()) and is_fenced(InvalidProducerEpoch())
    assert not is_fenced(KafkaConnectionError())
    assert unpublishable(MessageSizeTooLargeError()) and unpublishable(ValueError("bad"))
    assert not unpublishable(ProducerFenced()) and not unpublishable(KafkaConnectionError())


@pytest.mark.asyncio
async def test_closing_a_task_stops_its_producer_and_forgets_it():
    c = RecordCollector(settings(), "wagering", "g")
    prod = RecordingProducer()
    c.producers[1] = prod  # type: ignore[assignment]
    await c.close(1)
    assert prod.stopped and c.producers == {}
    await c.close(1)  # nothing without one


@pytest.mark.asyncio
async def test_a_command_for_another_key_goes_to_that_keys_partition_in_the_same_transaction():
    """The cage's marker buy-in: a table's task sends ``DrawMarker`` keyed ``CAGE``. It must land on CAGE's
    partition under CAGE's key (before, every send went to the sending task's partition under the table's key,
    where the cage's ``CAGE`` task never reads it and the table's task dead-letters it ``misrouted``); a
    command for the same table (the dealing service's ``DrawCard``) stays on the task's own partition."""
    from contracts.cage import DrawMarker
    from contracts.commands import DrawCard
    from services.runtime.assignor import partition_of
    from services.runtime.core import Decision, Send, command
    from tests.cagedesk import AT

    s = settings()
    c = RecordCollector(s, "cage", "g")
    prod = RecordingProducer()
    p = partition_of("T1", s.partitions)
    assert partition_of("CAGE", s.partitions) != p  # else the test could not tell
    draw = command("CAGE", "d1", AT, DrawMarker(table_id="T1", buy_in_id="M1", player_id="bob", amount_cents=100),
                   actor="")
    card = command("T1", "c1", AT, DrawCard(shoe_id="S", round_id="R", card_number=1), actor="")
    await c.transaction(prod, p, [Decision("T1", (), (Send(T.CAGE_MARKERS, draw), Send(T.SHOE_DRAWS, card)))],
                        [], [], {}, [])
    assert prod.sent == [(f"t.{T.CAGE_MARKERS}", partition_of("CAGE", s.partitions), b"CAGE"),
                         (f"t.{T.SHOE_DRAWS}", p, b"T1")]
    assert prod.committed == 1
