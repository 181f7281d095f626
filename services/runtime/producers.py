"""Closing a task's producers quietly (issue 28, item 10), and adding a partition to a transaction ahead of
its records (:func:`add_partition_ahead`, issue 30).

A fenced producer is expected on every ordinary rebalance (the task's new owner fences the old one). Two
aiokafka behaviours turned that into error-level lines: a fenced producer's ``stop()`` raises before it closes
its client, so its connections were found by the garbage collector ("Unclosed AIOKafkaConnection",
"Unclosed AIOKafkaProducer"); and the futures of a failed transaction's records got the ``ProducerFenced``
error after no one awaited them ("Future exception was never retrieved"), and so did the transaction's own
waiter, which aiokafka's context leaves unawaited once the producer is fenced. The helpers below close and retrieve
what the task already handled.
"""

from __future__ import annotations

import contextlib
from typing import Any


def add_partition_ahead(prod: Any, tp: Any) -> None:
    """Have ``prod``'s open transaction add partition ``tp`` (a ``TopicPartition``) now: its sender sends the
    AddPartitionsToTxn at once, ahead of any record, where aiokafka otherwise adds a partition when the first
    record for it is sent (one more round trip on that record's path, muted until answered). A record sent to
    ``tp`` later in the transaction goes straight to its Produce. Raises aiokafka's ``AssertionError`` outside
    a transaction; aiokafka has no public call for this (``TransactionManager.maybe_add_partition_to_txn``,
    0.14: an ``AttributeError`` names a newer aiokafka that moved it, and
    tests/system/test_prompt_odds_kafka.py fails on the real producer). Nothing for a producer running
    version 2 transactions (:mod:`services.runtime.transaction_v2`): its Produce adds the partition itself,
    so there is no round trip to take off the path."""
    if getattr(prod._txn_manager, "implicit_add", False):
        return
    prod._txn_manager.maybe_add_partition_to_txn(tp)


def retrieve_later(fut: Any) -> None:
    """Mark ``fut``'s outcome as seen once it has one: a record's future of a failed transaction gets the
    transaction's error (``ProducerFenced`` after an expected fencing) when no one awaits it any more; asyncio
    would log it at error level, "Future exception was never retrieved". The error is the transaction's,
    raised and logged where it failed."""
    def seen(f: Any) -> None:
        if not f.cancelled():
            f.exception()

    if hasattr(fut, "add_done_callback"):
        fut.add_done_callback(seen)


def retrieve_batches(prod: Any) -> None:
    """Mark the error of each of ``prod``'s failed record batches as seen. When a fenced producer's sender task
    dies, aiokafka's ``fail_all`` sets ``ProducerFenced`` on every pending batch's drain waiter
    (``MessageAccumulator`` batches' ``_drain_waiter``), which only a ``flush()`` awaits, and ``stop()`` does
    not flush a producer whose sender is dead: one error-level "Future exception was never retrieved ...
    ProducerFenced" per batch of the fenced transaction (CI's chaos run, settlement-2, issue 28; reproduced by
    tests/system/test_fenced_quiet.py). The error is the transaction's, already raised to the task. aiokafka has
    no public accessor for the batches; nothing happens without them."""
    acc = getattr(prod, "_message_accumulator", None)
    batches = [b for q in (getattr(acc, "_batches", None) or {}).values() for b in q]
    batches += list(getattr(acc, "_pending_batches", None) or ())
    for b in batches:
        for fut in (getattr(b, "_drain_waiter", None), getattr(b, "future", None)):
            if fut is not None:
                retrieve_later(fut)


def retrieve_transaction_error(prod: Any) -> None:
    """Mark the error of ``prod``'s transaction as seen: a fenced producer's sender task dies, and aiokafka's
    ``fatal_error`` sets ``ProducerFenced`` on the transaction's waiter (``_txn_manager._transaction_waiter``).
    Its ``transaction()`` context then leaves without awaiting that waiter (a fatal state cannot abort), so
    asyncio logged it at error level, "Future exception was never retrieved" (the CI's chaos run,
    settlement-2, issue 28). The error is the one the failed ``send_offsets_to_transaction`` or record already
    raised to the task. aiokafka has no public accessor for the waiter; nothing happens without one. The
    batches' errors are retrieved too (:func:`retrieve_batches`)."""
    waiter = getattr(getattr(prod, "_txn_manager", None), "_transaction_waiter", None)
    if waiter is not None:
        retrieve_later(waiter)
    retrieve_batches(prod)  # the same error on the failed transaction's record batches


async def stop_quietly(prod: Any) -> None:
    """Stop a producer whatever state it is in: a fenced producer's ``stop()`` raises the error its sender
    task died of before its client is closed, which left its connections to be found by the garbage collector
    ("Unclosed AIOKafkaConnection" / "Unclosed AIOKafkaProducer" at error level on ordinary rebalances). Its
    client is closed then too, and the sender task's error is retrieved (it is the fencing the task already
    handled)."""
    try:
        await prod.stop()
    except Exception:  # noqa: BLE001 - a fenced or disconnected producer still closes
        with contextlib.suppress(Exception):
            await prod.client.close()
    retrieve_transaction_error(prod)
    sender = getattr(getattr(prod, "_sender", None), "sender_task", None)
    if sender is not None and sender.done():
        retrieve_later(sender)


def quiet_fenced_futures(loop: Any, log: Any) -> None:
    """Make ``loop`` log a never-awaited future that failed with ``ProducerFenced`` at info level
    (``fenced_future_dropped``) instead of asyncio's error-level "Future exception was never retrieved".

    Why: the helpers above retrieve the futures the runtime knows of, but aiokafka also sets the fencing on
    futures it makes after the task has handled it (a fenced producer's transaction waiter is replaced when a
    second error lands on it; seen in CI's chaos run on dealing, settlement and shoe instances). Every such
    future carries the fencing the task already met, logged, and recovered from by restoring (a new producer).
    Any other unhandled exception still goes to the loop's previous handler (asyncio's default: error level)."""
    from aiokafka.errors import ProducerFenced

    previous = loop.get_exception_handler()
    if getattr(previous, "quiet_fenced", False):
        return  # installed already (several services in one process)

    def handler(lp: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, ProducerFenced) and "never retrieved" in str(context.get("message", "")):
            log.info("fenced_future_dropped", error=f"{type(exc).__name__}: {exc}")
            return
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    handler.quiet_fenced = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)
