"""The record collector: each task's fenced transactional producer and what one transaction writes.

Kafka Streams' ``RecordCollector`` (with its ``StreamsProducer``) sends a task's output records and commits its
input offsets in the task's transaction. Here task *p* writes only through a transactional producer whose id
is derived from the service and *p* (``<group prefix>.<topic prefix><service>.task-<p>``), never from the
instance: the next owner's ``init_transactions`` bumps the producer epoch, aborts the old owner's open
transaction and makes its next write fail (``ProducerFenced``). A paused or partitioned member that lost *p*
can never write to it again, and two instances started with the same configuration never fence each other.

A fenced producer is in aiokafka's fatal state (:func:`producer_dead`): no transaction begins on it again,
the task is restored with a new one, and the old one is stopped quietly (:mod:`services.runtime.producers`).

Under ``exactly_once_v2`` (``CROUPIER_PROCESSING_GUARANTEE``; issue 25) the instance has one producer instead,
its id unique to the process, and its tasks' outcomes go in one transaction
(:mod:`services.runtime.group_commit`) whose input offsets carry the consumer group's generation and member id
(KIP-447): the group coordinator refuses them from a member that lost its tasks, and that transaction aborts.
The prompt stream keeps a producer per task, fenced by its id: its transactions carry no offsets.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaProducer, TopicPartition

from contracts import topics as T
from contracts.codecs import encode
from services.runtime.assignor import partition_of
from services.runtime.core import Decision
from services.runtime.group_commit import GroupCommit, Part
from services.runtime.kip447 import require_kip447, send_offsets_to_transaction
from services.runtime.producers import stop_quietly
from services.runtime.settings import Settings
from services.runtime.snapshot import snapshot_topic
from services.runtime.transaction_v2 import enable_transaction_v2

#: :attr:`Settings.processing_guarantee` of one producer per instance, fenced by the group's generation (KIP-447)
EXACTLY_ONCE_V2 = "exactly_once_v2"

#: the largest record batch a task's producer builds (bytes): under the broker's default ``message.max.bytes``
#: (1 MiB) per batch; a larger single record (a snapshot) still goes alone in a batch of its own size
TXN_BATCH_BYTES = 512 * 1024


#: s the first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS waits before it is sent again; each further
#: answer in a row doubles it, up to aiokafka's own 20 ms (:func:`quick_concurrent_retry`)
CONCURRENT_TXN_FIRST_BACKOFF_S = 0.002
CONCURRENT_TXN_MAX_BACKOFF_S = 0.02


def quick_concurrent_retry() -> None:
    """Make aiokafka retry a transaction's first AddPartitionsToTxn soon after a CONCURRENT_TRANSACTIONS answer:
    :data:`CONCURRENT_TXN_FIRST_BACKOFF_S`, doubled at each such answer in a row of the same producer, at most
    :data:`CONCURRENT_TXN_MAX_BACKOFF_S`. Idempotent; process-wide (every aiokafka producer of the process).

    Why (issue 30): the transaction coordinator answers CONCURRENT_TRANSACTIONS to the next transaction's
    AddPartitionsToTxn until the previous commit's markers are written, which takes a few ms on a quiet broker
    (EndTxn is answered once PREPARE_COMMIT is logged, before the markers). A task whose committer begins its
    next transaction at once (``commit_queue.py``: the batches decided meanwhile) met it in 20-40 % of its
    transactions (``bench/projection.py``'s wire breakdown), and aiokafka 0.14 then sleeps a fixed 20 ms
    (``sender.BACKOFF_OVERRIDE``, KAFKA-5477's figure), several times the wait; a card's odds waited that
    sleep, and the one of the transaction ahead of them. The doubling keeps the retries of a slow broker few
    (about log2(wait / 2 ms) + wait / 20 ms). aiokafka has no option for it: this wraps
    ``AddPartitionsToTxnHandler.handle_response`` (the backoff it returns; nothing else changes)."""
    from aiokafka.errors import ConcurrentTransactions
    from aiokafka.producer import sender as aks

    handler = aks.AddPartitionsToTxnHandler
    if getattr(handler, "_croupier_quick_retry", False):
        return
    original = handler.handle_response

    def handle_response(self: Any, resp: Any) -> Any:
        backoff = original(self, resp)
        owner = self._sender
        concurrent = any(code == ConcurrentTransactions.errno for _, parts in resp.errors for _, code in parts)
        if concurrent and backoff == aks.BACKOFF_OVERRIDE:  # the first AddPartitionsToTxn of the transaction
            n = getattr(owner, "_croupier_concurrent", 0)
            owner._croupier_concurrent = n + 1
            return min(CONCURRENT_TXN_FIRST_BACKOFF_S * 2 ** n, CONCURRENT_TXN_MAX_BACKOFF_S)
        owner._croupier_concurrent = 0
        return backoff

    handler.handle_response = handle_response  # type: ignore[method-assign]
    handler._croupier_quick_retry = True  # type: ignore[attr-defined]


class TaskFailed(Exception):
    """A task's transaction failed; the task is being restored (its batch will be re-read)."""


def producer_dead(prod: Any) -> bool:
    """Whether a transactional producer is in aiokafka's fatal state (fenced, or an unrecoverable error):
    no transaction can begin on it again, only a new producer (``init_transactions``) serves the task.
    False for a missing producer or one whose last transaction was merely aborted. aiokafka has no public
    accessor for it, so this reads the transaction manager's state."""
    manager = getattr(prod, "_txn_manager", None)
    state = getattr(manager, "state", None)
    return getattr(state, "name", "") == "FATAL_ERROR"


def is_fenced(e: BaseException) -> bool:
    """Whether a transaction's error says another producer took the task's transactional id."""
    return "Fenced" in type(e).__name__ or "Epoch" in type(e).__name__


def unpublishable(e: BaseException) -> bool:
    """An error no retry can fix: the outcome of a record is too large or malformed for the broker, or
    encoding it failed (not a connection, timeout or fencing problem)."""
    from aiokafka.errors import KafkaError

    if isinstance(e, KafkaError):
        return not getattr(e, "retriable", False) and type(e).__name__ in (
            "MessageSizeTooLargeError", "RecordTooLargeError", "RecordListTooLargeError", "InvalidRecord",
            "CorruptRecordException", "InvalidTopicError", "InvalidRequestError")
    return isinstance(e, (ValueError, TypeError, OverflowError))


class RecordCollector:
    """The producers of one service instance's tasks (``producers``: task p -> its producer) and the
    transaction that writes a batch's outcome.

    ``settings``: topic names and client options; ``service``: the writing service (its dead-letter and
    snapshot topics, and the transactional ids); ``group_id``: the consumer group the offsets go to;
    ``prompt``: each task has a second producer, for its prompt stream (``prompt_producers``,
    :mod:`services.runtime.prompt_lane`), opened and closed with the first.
    """

    def __init__(self, settings: Settings, service: str, group_id: str, prompt: bool = False,
                 metadata: Callable[[], Any] | None = None):
        self.settings = settings
        self.service = service
        self.group_id = group_id
        self.prompt = prompt
        self.producers: dict[int, AIOKafkaProducer] = {}
        self.prompt_producers: dict[int, AIOKafkaProducer] = {}
        #: ``exactly_once_v2``: the instance's producers (one by default; task p's is ``p % n``, every opened
        #: task's entry in ``producers`` is it), each with its tasks' transactions grouped
        #: (:mod:`services.runtime.group_commit`) and fenced by the consumer group's generation, read by
        #: ``metadata`` when a transaction's offsets go
        self.v2 = settings.processing_guarantee == EXACTLY_ONCE_V2
        self.metadata = metadata
        n = max(1, settings.instance_producers) if self.v2 else 0
        self.shared: list[AIOKafkaProducer | None] = [None] * n
        self._locks = [asyncio.Lock() for _ in range(n)]
        # the offsets' sender looked up at each call (a trace's wrap of ``_send_offsets``, bench/hoptrace.py, is seen)
        self.group_commits = [GroupCommit(lambda prod, offsets: self._send_offsets(prod, offsets), producer_dead,
                                          service) for _ in range(n)]
        #: the instance producers' transactional id: unique to this process (its instance name and a random
        #: token, as Kafka Streams' process id; ``-<i>`` after it for the i-th of several), so twins started
        #: with one configuration never fence each other by id; a new producer after a fatal error takes the
        #: same id (its ``init_transactions`` ends the old one's open transaction at once)
        self.instance_id = f"{settings.transactional_id(service)}.{secrets.token_hex(4)}"

    @property
    def instance_producer(self) -> AIOKafkaProducer | None:
        """The instance's (first) producer under ``exactly_once_v2``, once started; None otherwise."""
        return self.shared[0] if self.shared else None

    @property
    def group_commit(self) -> GroupCommit | None:
        """The group commit of the instance's (first) producer under ``exactly_once_v2``; None otherwise."""
        return self.group_commits[0] if self.group_commits else None

    def transactional_id(self, p: int) -> str:
        """The producer id of task ``p``: derived from service and partition, never from the instance."""
        s = self.settings
        return f"{s.group_prefix}.{s.topic_prefix}{self.service}.task-{p}"

    async def open(self, p: int) -> None:
        """Close task ``p``'s producers if any and start new ones (the prompt stream's too, when the service
        has one): their ``init_transactions`` fence the previous owner's and complete its open transactions.
        Under ``exactly_once_v2`` the task writes through the instance's producer (:meth:`instance`; the
        previous owner is fenced by the group's generation instead) and only its prompt producer is new.
        Raises what a start raises (fenced, moved away, the broker away; :class:`~services.runtime.kip447.Kip447Unsupported`
        for a broker without KIP-447), having closed the new producers' connections."""
        await self.close(p)
        quick_concurrent_retry()
        self.producers[p] = await (self.instance(p) if self.v2 else self._start(self.transactional_id(p),
                                                                                      protocol_v2=False))
        if self.prompt:
            self.prompt_producers[p] = await self._start(self.transactional_id(p) + ".prompt", protocol_v2=True)

    async def instance(self, p: int = 0) -> AIOKafkaProducer:
        """The instance producer task ``p`` writes through (``exactly_once_v2``; the ``p % n``-th), started on
        first use and again once fenced (a transaction the broker timed out, an unrecoverable error). Raises
        what a start raises, and :class:`~services.runtime.kip447.Kip447Unsupported` naming the request and
        version a broker lacks: never a silent fall back to offsets the broker cannot fence."""
        i = p % len(self.shared)
        async with self._locks[i]:
            prod = self.shared[i]
            if prod is not None and not producer_dead(prod):
                return prod
            self.shared[i] = None
            if prod is not None:
                await stop_quietly(prod)
            tid = self.instance_id if i == 0 else f"{self.instance_id}-{i}"
            prod = await self._start(tid, protocol_v2=True, transaction_timeout_ms=self.settings.transaction_timeout_ms)
            try:
                await require_kip447(prod.client)
            except BaseException:
                await stop_quietly(prod)
                raise
            self.shared[i] = prod
            return prod

    async def _send_offsets(self, prod: Any, offsets: dict[TopicPartition, int]) -> None:
        if self.metadata is None:
            raise RuntimeError("exactly_once_v2 needs the consumer group's metadata")
        await send_offsets_to_transaction(prod, offsets, self.metadata())

    async def _start(self, transactional_id: str, *, protocol_v2: bool, **options: Any) -> AIOKafkaProducer:
        """A started transactional producer; ``protocol_v2``: it runs version 2 transactions where the cluster
        has them and ``Settings.transaction_v2`` (the instance's and the prompt producers; not the per-task ones
        of ``exactly_once``, which send offsets without the group's metadata)."""
        prod = AIOKafkaProducer(**self.settings.client_options(), **options, transactional_id=transactional_id,
                                enable_idempotence=True, acks="all", linger_ms=0,
                                max_request_size=16 * 1024 * 1024,  # snapshots; the broker caps events
                                # a transaction's records for one partition in one batch, so one produce
                                # request: aiokafka keeps one request in flight per broker, and a batch
                                # of 16 KiB (its default: six OddsUpdated) made a transaction of 40 odds
                                # wait for seven produce round trips, one after another
                                max_batch_size=TXN_BATCH_BYTES,
                                # the broker's transaction verification (KIP-890) answers a produce now
                                # and then with a transient NOT_ENOUGH_REPLICAS (aiokafka #1172; see
                                # bench/rawloop.py RetryCount): retry soon
                                retry_backoff_ms=10)
        try:
            await prod.start()
            if protocol_v2 and self.settings.transaction_v2:
                await enable_transaction_v2(prod)
        except BaseException:  # never leave it open (its connections)
            await stop_quietly(prod)
            raise
        return prod

    async def close(self, p: int) -> None:
        """Stop task ``p``'s producers quietly, whatever their state (fenced included); nothing without one.
        The instance's producers stay (other tasks write through them): :meth:`close_all` stops them."""
        prod = self.producers.pop(p, None)
        if prod is not None and all(prod is not shared for shared in self.shared):
            await stop_quietly(prod)
        prompt = self.prompt_producers.pop(p, None)
        if prompt is not None:
            await stop_quietly(prompt)

    async def close_all(self) -> None:
        """Stop every task's producers and the instance's (a graceful stop)."""
        for p in {*self.producers, *self.prompt_producers}:
            await self.close(p)
        for i, prod in enumerate(self.shared):
            self.shared[i] = None
            if prod is not None:
                await stop_quietly(prod)

    async def transaction(self, prod: Any, p: int, decisions: list[Decision], letters: list[Any],
                          checkpoint: list[tuple[bytes, bytes]], offsets: dict[TopicPartition, int],
                          futs: list[tuple[str | None, Any]], waits: list[Any] | None = None, *,
                          alone: bool = False) -> None:
        """One transaction of task ``p`` on ``prod``: the decisions' events and commands, the dead letters,
        the checkpoint's ``(key, value)`` records and the input ``offsets`` (next offset per input partition).
        Each record's future is appended to ``futs`` as sent, with the own stream of each event (None for the
        others); returns once every record is acknowledged and the transaction committed. ``waits``: the
        prompt transactions of these records (:mod:`services.runtime.prompt_lane`), awaited before the
        offsets go: one that failed aborts this one. Under ``exactly_once_v2`` this is the task's part of the
        instance's next transaction (:class:`~services.runtime.group_commit.GroupCommit`; ``alone``: in one of
        its own). Raises whatever the producer raises (the caller retrieves ``futs``' errors)."""
        async def write(on: Any) -> None:
            await self.write(on, p, decisions, letters, checkpoint, futs)

        if self.group_commits:
            await self.group_commits[p % len(self.group_commits)].commit(
                Part(prod, p, write, offsets, futs, list(waits or ()), alone))
            return
        async with prod.transaction():
            await write(prod)
            if waits:  # never the offsets of records whose prompt events are not committed
                await asyncio.gather(*waits)
            if offsets:
                await prod.send_offsets_to_transaction(offsets, self.group_id)
            await asyncio.gather(*(f for _, f in futs))

    async def write(self, prod: Any, p: int, decisions: list[Decision], letters: list[Any],
                    checkpoint: list[tuple[bytes, bytes]], futs: list[tuple[str | None, Any]]) -> None:
        """Send task ``p``'s records of one transaction on ``prod`` (whose transaction is open): the
        decisions' events and commands, the dead letters and the checkpoint; each future appended to ``futs``."""
        s = self.settings
        for d in decisions:
            key = T.key(d.table_id)
            for env in d.events:
                futs.append((env.stream, await prod.send(s.topic(env.stream), encode(env), key=key, partition=p)))
            for send in d.sends:  # a command for another table goes to that table's partition (same txn)
                to = send.command.table_id
                futs.append((None, await prod.send(
                    s.topic(send.topic), encode(send.command), key=T.key(to),
                    partition=p if to == d.table_id else partition_of(to, s.partitions))))
        for letter in letters:
            letter_key = letter.key.encode() if letter.key else None
            futs.append((None, await prod.send(s.topic(T.dlq(self.service)), encode(letter), key=letter_key,
                                               partition=p)))
        for snap_key, value in checkpoint:
            futs.append((None, await prod.send(s.topic(snapshot_topic(self.service)), value, key=snap_key,
                                               partition=p)))
