"""KIP-447 on aiokafka: input offsets sent in a transaction with the consumer group's metadata, so that the group
coordinator fences a member of an old generation, and offsets fetched with ``require_stable``.

aiokafka 0.14 sends TxnOffsetCommit v0 (group id only: the broker cannot tell a zombie from the group's current
member) and OffsetFetch v1–v3 (no ``require_stable``). Kafka's message definitions
(``clients/src/main/resources/common/message/{TxnOffsetCommit,OffsetFetch}{Request,Response}.json`` in
``kafka-clients``) give what the newer versions carry:

* **TxnOffsetCommit v3** (API key 28; the first flexible version: compact strings and arrays, tagged fields) adds
  ``GenerationIdOrMemberEpoch``, ``MemberId`` and ``GroupInstanceId``. The group coordinator checks them as it
  checks a plain offset commit and answers ``ILLEGAL_GENERATION`` (22), ``UNKNOWN_MEMBER_ID`` (25) or
  ``FENCED_INSTANCE_ID`` (82) to a stale member. v4 has the same fields and may answer ``TRANSACTION_ABORTABLE``
  (120, KIP-890); v5 is for KIP-890 part 2 transactions (version 2: the coordinator adds the offsets partition
  itself; sent only by a producer :mod:`services.runtime.transaction_v2` switched over), v6 names topics by
  id. This module sends v4 where the broker offers it, else v3 (v5 under version 2), and never anything older.
* **OffsetFetch v7** (API key 9, flexible since v6) adds ``RequireStable``: while a transaction holding offsets for
  a partition is open, the coordinator answers that partition with ``UNSTABLE_OFFSET_COMMIT`` (88, retriable).

What it offers: :func:`group_metadata` (a consumer's group id, generation, member id and group instance id),
:func:`send_offsets_to_transaction` (AddOffsetsToTxn then TxnOffsetCommit v3+, through the producer's own
transaction machinery: its sender task, its coordinator lookups, its retries), :func:`offset_fetch_stable` (a
new owner's committed offsets, waiting for an open transaction of the old owner), :func:`require_kip447` (the
check at start: every broker must offer the versions; never a silent fall back to v0).

The rest of a transaction stays aiokafka's (``begin_transaction``, ``send``, ``commit_transaction``,
``abort_transaction``). One group per transaction, as in aiokafka. After a fencing error
(:data:`FENCED_ERRORS`) the transaction can only be aborted: ``abort_transaction()`` then sends EndTxn(ABORT),
which writes the abort markers of everything the transaction wrote (aiokafka's own abortable-error path forgets
the transaction's partitions and so sends no EndTxn at all, leaving the transaction open on the broker until its
timeout; this module keeps them: see :func:`_abortable_error`).
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, Self

import aiokafka.errors as Errors
from aiokafka.client import ConnectionGroup, CoordinationType
from aiokafka.errors import (
    BrokerResponseError,
    IllegalOperation,
    IncompatibleBrokerVersion,
    KafkaTimeoutError,
)
from aiokafka.producer.sender import TxnOffsetCommitHandler
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)
from aiokafka.structs import OffsetAndMetadata, TopicPartition
from aiokafka.util import commit_structure_validate

from services.runtime.transaction_v2 import concurrent_backoff, find_coordinator

log = logging.getLogger(__name__)

TXN_OFFSET_COMMIT_KEY = 28
OFFSET_FETCH_KEY = 9
ADD_OFFSETS_TO_TXN_KEY = 25

#: (API name, oldest version this module needs) per API key: what :func:`require_kip447` checks
REQUIRED_VERSIONS: Mapping[int, tuple[str, int]] = {
    TXN_OFFSET_COMMIT_KEY: ("TxnOffsetCommit", 3),
    OFFSET_FETCH_KEY: ("OffsetFetch", 7),
    ADD_OFFSETS_TO_TXN_KEY: ("AddOffsetsToTxn", 0),
}


# --- errors ------------------------------------------------------------------------------------------------


class Kip447Unsupported(IncompatibleBrokerVersion):
    """A broker lacks a request version KIP-447 needs; the message names the API, its key, the version needed
    and what the broker offers (e.g. ``TxnOffsetCommit (API key 28) v3+ needed ..., broker 1 at
    127.0.0.1:9092 offers v0-v2``)."""


class FencedInstanceIdError(BrokerResponseError):
    """FENCED_INSTANCE_ID (82): another member joined with this static member's ``group.instance.id``."""

    errno = 82
    message = "FENCED_INSTANCE_ID"
    description = "The broker rejected this static consumer since another consumer with the same group.instance.id"


class UnstableOffsetCommitError(BrokerResponseError):
    """UNSTABLE_OFFSET_COMMIT (88, retriable): a transaction holding offsets for the partition is still open."""

    errno = 88
    message = "UNSTABLE_OFFSET_COMMIT"
    description = "There are unstable offsets that need to be cleared."
    retriable = True


class TransactionAbortableError(BrokerResponseError):
    """TRANSACTION_ABORTABLE (120, KIP-890): the transaction can only be aborted."""

    errno = 120
    message = "TRANSACTION_ABORTABLE"
    description = "The server encountered an error with the transaction; the client can abort it."


#: what a zombie's TxnOffsetCommit gets: its transaction can only be aborted, and the member must rejoin
FENCED_ERRORS: tuple[type[BrokerResponseError], ...] = (
    Errors.IllegalGenerationError,
    Errors.UnknownMemberIdError,
    FencedInstanceIdError,
)

_ABORTABLE: dict[int, type[BrokerResponseError]] = {
    e.errno: e for e in (*FENCED_ERRORS, TransactionAbortableError)  # type: ignore[attr-defined]
}
_COORDINATOR_MOVED = (Errors.NotCoordinatorError, Errors.CoordinatorNotAvailableError)


def _error_for(code: int) -> type[BrokerResponseError]:
    if code == UnstableOffsetCommitError.errno:
        return UnstableOffsetCommitError
    return _ABORTABLE.get(code) or Errors.for_code(code)


# --- the version check -------------------------------------------------------------------------------------


def check_versions(versions: Mapping[int, tuple[int, int]], where: str) -> None:
    """Raise :class:`Kip447Unsupported` unless ``versions`` (API key -> (min, max) as ApiVersions answers) offers
    every API of :data:`REQUIRED_VERSIONS` at its version or newer; ``where`` names the broker in the message.
    Pure: the unit tests call it with made-up answers."""
    problems = []
    for key, (name, needed) in REQUIRED_VERSIONS.items():
        offered = versions.get(key)
        if offered is None:
            problems.append(f"{name} (API key {key}) v{needed}+ needed for KIP-447, {where} does not offer it")
        elif offered[1] < needed:
            problems.append(f"{name} (API key {key}) v{needed}+ needed for KIP-447, {where} offers "
                            f"v{offered[0]}-v{offered[1]}")
    if problems:
        raise Kip447Unsupported("; ".join(problems))


async def require_kip447(client: Any) -> None:
    """Check every broker the started aiokafka ``client`` knows (a producer's ``client``, a consumer's
    ``_client``) against :data:`REQUIRED_VERSIONS`, from the ApiVersions answer of a connection to it; raises
    :class:`Kip447Unsupported` naming the API, the version needed and the broker's offer. Remembered on the
    client once every broker was checked. A broker that cannot be reached (a node of a cluster killed or
    restarting) is passed by, and checked at the next call, so that a restore during a node's restart is not
    refused for it (before, it failed and was retried until the node was back: 4 ``restore_failed`` in a
    three-broker chaos run); a request that later goes to a broker without the versions still raises
    :class:`Kip447Unsupported` (:func:`_newest_struct`), never a silent fall back. Raises NodeNotReadyError when
    no broker can be reached."""
    if getattr(client, "_croupier_kip447_checked", False):
        return
    if client.get_random_node() is None:
        await client.bootstrap()
    brokers = sorted(client.cluster.brokers(), key=lambda b: b.nodeId)
    unreachable = []
    for broker in brokers:
        try:
            conn = await client._get_conn(broker.nodeId)
        except Errors.KafkaError:
            conn = None
        if conn is None:
            unreachable.append(f"broker {broker.nodeId} at {broker.host}:{broker.port}")
            continue
        check_versions(conn._versions, f"broker {broker.nodeId} at {broker.host}:{broker.port}")
    if brokers and len(unreachable) == len(brokers):
        raise Errors.NodeNotReadyError("; ".join(unreachable))
    client._croupier_kip447_checked = not unreachable


# --- the wire: TxnOffsetCommit v3/v4 -----------------------------------------------------------------------

_TAGS = ("tags", TaggedFields)


class TxnOffsetCommitResponse_v3(Response):
    """TxnOffsetCommit response v3 (flexible): ``topics`` = [(name, [(partition_index, error_code, tags)],
    tags)]."""

    API_KEY = TXN_OFFSET_COMMIT_KEY
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(("partition_index", Int32), ("error_code", Int16), _TAGS)),
            _TAGS,
        )),
        _TAGS,
    )


class TxnOffsetCommitResponse_v4(Response):
    """TxnOffsetCommit response v4: v3's fields (KIP-890 adds the TRANSACTION_ABORTABLE code only)."""

    API_KEY = TXN_OFFSET_COMMIT_KEY
    API_VERSION = 4
    SCHEMA = TxnOffsetCommitResponse_v3.SCHEMA


class TxnOffsetCommitRequest_v3(RequestStruct):
    """TxnOffsetCommit request v3 (flexible): the transaction, the group's generation, member id and group
    instance id (None for a dynamic member), and ``topics`` = [(name, [(partition_index, committed_offset,
    committed_leader_epoch, committed_metadata, tags)], tags)]; offsets are the *next* offset to read."""

    FLEXIBLE_VERSION = True
    API_KEY = TXN_OFFSET_COMMIT_KEY
    API_VERSION = 3
    RESPONSE_TYPE = TxnOffsetCommitResponse_v3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("group_id", CompactString("utf-8")),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("committed_offset", Int64),
                ("committed_leader_epoch", Int32),
                ("committed_metadata", CompactString("utf-8")),
                _TAGS,
            )),
            _TAGS,
        )),
        _TAGS,
    )


class TxnOffsetCommitRequest_v4(RequestStruct):
    """TxnOffsetCommit request v4: the fields of v3."""

    FLEXIBLE_VERSION = True
    API_KEY = TXN_OFFSET_COMMIT_KEY
    API_VERSION = 4
    RESPONSE_TYPE = TxnOffsetCommitResponse_v4
    SCHEMA = TxnOffsetCommitRequest_v3.SCHEMA


class TxnOffsetCommitRequest_v5(RequestStruct):
    """TxnOffsetCommit request v5: the fields of v3; the group coordinator adds the group's offsets partition to
    the transaction itself (KIP-890 part 2: no AddOffsetsToTxn; :mod:`services.runtime.transaction_v2`)."""

    FLEXIBLE_VERSION = True
    API_KEY = TXN_OFFSET_COMMIT_KEY
    API_VERSION = 5
    RESPONSE_TYPE = TxnOffsetCommitResponse_v4
    SCHEMA = TxnOffsetCommitRequest_v3.SCHEMA


def _newest_struct(request: Request[Any], versions: Mapping[int, tuple[int, int]]) -> type[RequestStruct]:
    """The newest of ``request``'s struct classes the connection's broker accepts, else
    :class:`Kip447Unsupported` (aiokafka's own ``prepare`` would say "has not yet been added")."""
    name, needed = REQUIRED_VERSIONS[request.API_KEY]
    offered = versions.get(request.API_KEY)
    if offered is not None:
        for struct_class in reversed(request._CLASSES):
            if offered[0] <= struct_class.API_VERSION <= offered[1]:
                return struct_class
    shown = "nothing" if offered is None else f"v{offered[0]}-v{offered[1]}"
    raise Kip447Unsupported(f"{name} (API key {request.API_KEY}) v{needed}+ needed for KIP-447, the broker "
                            f"offers {shown}")


class GroupMetadata(NamedTuple):
    """A consumer group member's identity at one moment (Java's ``ConsumerGroupMetadata``): the group id, the
    generation it joined (-1: not in a generation), its member id ("" before the first join) and its static
    ``group.instance.id`` (None for a dynamic member)."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


class TxnOffsetCommitRequest(Request[TxnOffsetCommitRequest_v3 | TxnOffsetCommitRequest_v4]):
    """TxnOffsetCommit v3+ with the group metadata: ``offsets`` maps TopicPartition to OffsetAndMetadata (the
    next offset to read, and a metadata string); the leader epoch is sent as -1 (unknown). Prepared as v4 where
    the broker offers it, else v3; a broker offering neither raises :class:`Kip447Unsupported` on send."""

    API_KEY = TXN_OFFSET_COMMIT_KEY

    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int, metadata: GroupMetadata,
                 offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self._transactional_id = transactional_id
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._metadata = metadata
        self._offsets = offsets

    def topics(self) -> list[tuple[str, list[tuple[int, int, int, str, dict[int, bytes]]], dict[int, bytes]]]:
        """The request's ``topics`` field: topics and partitions in sorted order, leader epoch -1."""
        by_topic: dict[str, list[tuple[int, int, int, str, dict[int, bytes]]]] = defaultdict(list)
        for tp, om in sorted(self._offsets.items()):
            by_topic[tp.topic].append((tp.partition, om.offset, -1, om.metadata, {}))
        return [(topic, parts, {}) for topic, parts in by_topic.items()]

    def build(self, request_struct_class: type[Any]) -> Any:
        m = self._metadata
        return request_struct_class(self._transactional_id, m.group_id, self._producer_id, self._producer_epoch,
                                    m.generation_id, m.member_id, m.group_instance_id, self.topics(), {})

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        return self.build(_newest_struct(self, versions))


class TxnOffsetCommitRequestV5(TxnOffsetCommitRequest):
    """:class:`TxnOffsetCommitRequest` as v5 only (a version 2 transaction: the offsets partition joins the
    transaction with this request); a broker without v5 raises :class:`Kip447Unsupported` on send."""

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        offered = versions.get(TXN_OFFSET_COMMIT_KEY)
        if offered is None or not offered[0] <= 5 <= offered[1]:
            raise Kip447Unsupported(f"TxnOffsetCommit (API key {TXN_OFFSET_COMMIT_KEY}) v5 needed for a version 2 "
                                    f"transaction, the broker offers {offered}")
        return self.build(TxnOffsetCommitRequest_v5)


# --- the wire: OffsetFetch v7 ------------------------------------------------------------------------------


class OffsetFetchResponse_v7(Response):
    """OffsetFetch response v7 (flexible): ``topics`` = [(name, [(partition_index, committed_offset,
    committed_leader_epoch, metadata, error_code, tags)], tags)] and a top-level ``error_code``."""

    API_KEY = OFFSET_FETCH_KEY
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partitions", CompactArray(
                ("partition_index", Int32),
                ("committed_offset", Int64),
                ("committed_leader_epoch", Int32),
                ("metadata", CompactString("utf-8")),
                ("error_code", Int16),
                _TAGS,
            )),
            _TAGS,
        )),
        ("error_code", Int16),
        _TAGS,
    )


class OffsetFetchRequest_v7(RequestStruct):
    """OffsetFetch request v7 (flexible): one group, ``topics`` = [(name, [partition_index], tags)] (None: every
    partition the group committed) and ``require_stable``."""

    FLEXIBLE_VERSION = True
    API_KEY = OFFSET_FETCH_KEY
    API_VERSION = 7
    RESPONSE_TYPE = OffsetFetchResponse_v7
    SCHEMA = Schema(
        ("group_id", CompactString("utf-8")),
        ("topics", CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_indexes", CompactArray(Int32)),
            _TAGS,
        )),
        ("require_stable", Boolean),
        _TAGS,
    )


class OffsetFetchRequest(Request[OffsetFetchRequest_v7]):
    """OffsetFetch v7 of ``group_id``'s committed offsets of ``partitions`` with ``require_stable`` (default
    true); a broker without v7 raises :class:`Kip447Unsupported` on send (v8+ batch groups: not needed here)."""

    API_KEY = OFFSET_FETCH_KEY

    def __init__(self, group_id: str, partitions: Iterable[TopicPartition], *, require_stable: bool = True) -> None:
        self._group_id = group_id
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in sorted(set(partitions)):
            by_topic[tp.topic].append(tp.partition)
        self._topics: list[tuple[str, list[int], dict[int, bytes]]] = [(t, ps, {}) for t, ps in by_topic.items()]
        self._require_stable = require_stable

    def build(self, request_struct_class: type[Any]) -> Any:
        return request_struct_class(self._group_id, self._topics, self._require_stable, {})

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        return self.build(_newest_struct(self, versions))


# --- group metadata and the transaction --------------------------------------------------------------------


def group_metadata(consumer: Any) -> GroupMetadata:
    """The group metadata of a started aiokafka consumer that has a ``group_id``, read from its coordinator now
    (a rebalance changes it: read it when the batch's offsets are sent, as Java's ``consumer.groupMetadata()``).
    Raises ValueError for a consumer without a group."""
    coordinator: Any = getattr(consumer, "_coordinator", None)
    if getattr(consumer, "_group_id", None) is None or not hasattr(coordinator, "generation"):
        raise ValueError("KIP-447 group metadata needs a started consumer with a group_id")
    return GroupMetadata(coordinator.group_id, coordinator.generation, coordinator.member_id,
                         coordinator._group_instance_id)


class _GroupKey(str):
    """The group id as aiokafka's transaction manager queues it (a str: its AddOffsetsToTxn and bookkeeping
    use it unchanged), carrying the metadata the TxnOffsetCommit v3 needs."""

    metadata: GroupMetadata

    def __new__(cls, metadata: GroupMetadata) -> Self:
        key = super().__new__(cls, metadata.group_id)
        key.metadata = metadata
        return key


def _abortable_error(txn_manager: Any, exc: BaseException) -> None:
    """aiokafka's ``error_transaction`` (the transaction can only be aborted; pending offset futures fail with
    ``exc``) without its forgetting: it clears the transaction's partitions and group, so the abort that follows
    sees an "empty" transaction and sends no EndTxn, and the broker keeps the transaction open (its records
    undecided, a read_committed reader stalled at them) until the transaction timeout; a next transaction of
    the same producer would even join it. Keeping them makes ``abort_transaction()`` write the abort markers.
    The transaction waiter's exception is marked retrieved (the caller sees ``exc`` from its offsets). A
    transaction already in error keeps its first error (aiokafka would set a second one on the done waiter)."""
    if txn_manager.wait_for_transaction_end().done():
        return
    partitions = set(txn_manager.txn_partitions)
    group = txn_manager._txn_consumer_group
    txn_manager.error_transaction(exc)
    txn_manager.txn_partitions.update(partitions)
    txn_manager._txn_consumer_group = group
    txn_manager.wait_for_transaction_end().exception()  # retrieved: abort_transaction replaces the waiter


class FencedTxnOffsetCommitHandler(TxnOffsetCommitHandler):
    """aiokafka's TxnOffsetCommit handler sending v3+ with the group metadata: its coordinator and retry
    handling are aiokafka's (the v3 response is handed to it in v0's shape); a fencing answer
    (:data:`FENCED_ERRORS`, or TRANSACTION_ABORTABLE) makes the transaction abortable and fails the offsets'
    future with that error, naming the group, generation and member."""

    def __init__(self, sender: Any, offsets: dict[TopicPartition, OffsetAndMetadata], group_id: _GroupKey) -> None:
        super().__init__(sender, offsets, group_id)
        self._metadata = group_id.metadata

    def create_request(self) -> TxnOffsetCommitRequest:
        txn = self._sender._txn_manager
        # a version 2 transaction (services.runtime.transaction_v2): v5, which adds the offsets partition itself
        cls = TxnOffsetCommitRequestV5 if getattr(txn, "implicit_add", False) else TxnOffsetCommitRequest
        return cls(txn.transactional_id, txn.producer_id, txn.producer_epoch, self._metadata, dict(self._offsets))

    def handle_response(self, resp: Any) -> float | None:
        if getattr(self._sender._txn_manager, "implicit_add", False):  # a version 2 transaction (v5)
            concurrent = any(code == Errors.ConcurrentTransactions.errno
                             for _, partitions, _ in resp.topics for _, code, _ in partitions)
            backoff = concurrent_backoff(self._sender, concurrent)
            if backoff is not None:  # the previous transaction's markers are being written: soon again
                return backoff
        for topic, partitions, _ in resp.topics:
            for partition, code, _ in partitions:
                error = _ABORTABLE.get(code)
                if error is not None:
                    m = self._metadata
                    exc = error(f"TxnOffsetCommit of {topic}-{partition} for group {m.group_id!r} generation "
                                f"{m.generation_id} member {m.member_id!r} instance {m.group_instance_id!r}")
                    log.warning("KIP-447 offset commit fenced: %r", exc)
                    _abortable_error(self._sender._txn_manager, exc)
                    return None
        as_v0 = types.SimpleNamespace(errors=[(topic, [(p, code) for p, code, _ in parts])
                                              for topic, parts, _ in resp.topics])
        return super().handle_response(as_v0)


async def _do_txn_offset_commit(sender: Any, offsets: dict[TopicPartition, OffsetAndMetadata],
                                group_id: str) -> None:
    """The sender's TxnOffsetCommit step (installed on one producer's sender by :func:`_install`): v3+ with the
    metadata for a group queued by :func:`send_offsets_to_transaction`; aiokafka's own v0 step for a plain
    group id queued by ``producer.send_offsets_to_transaction``."""
    if not isinstance(group_id, _GroupKey):
        if getattr(sender._txn_manager, "implicit_add", False):  # no AddOffsetsToTxn went: v0 would be refused
            _abortable_error(sender._txn_manager, IllegalOperation(
                "a version 2 transaction sends offsets with the group's metadata only (kip447.send_offsets_to_"
                "transaction); producer.send_offsets_to_transaction(offsets, group_id) is not supported"))
            return
        await sender._kip447_plain_offset_commit(offsets, group_id)
        return
    if not offsets:
        return
    try:
        # a lookup whose connection closed (a node killed) is asked again, not raised out of the sender routine
        node_id = await find_coordinator(sender, CoordinationType.GROUP, group_id)
    except Errors.GroupAuthorizationFailedError as exc:
        _abortable_error(sender._txn_manager, exc)
        return
    if node_id is not None:
        await FencedTxnOffsetCommitHandler(sender, offsets, group_id).do(node_id)


def _install(producer: Any) -> None:
    sender = producer._sender
    if getattr(sender, "_kip447_plain_offset_commit", None) is None:
        sender._kip447_plain_offset_commit = sender._do_txn_offset_commit
        sender._do_txn_offset_commit = types.MethodType(_do_txn_offset_commit, sender)


async def send_offsets_to_transaction(producer: Any, offsets: Mapping[TopicPartition, Any],
                                      metadata: GroupMetadata) -> None:
    """Add ``offsets`` (TopicPartition -> next offset to read, as int, (offset, metadata) or OffsetAndMetadata)
    of ``metadata``'s group to the started transactional aiokafka ``producer``'s open transaction:
    AddOffsetsToTxn, then TxnOffsetCommit v3+ with the generation, member id and group instance id, both through
    the producer's sender (its coordinator lookups and retries). Returns when the group coordinator accepted
    them; they become the group's committed offsets when the transaction commits.

    Raises: IllegalOperation (not transactional, or no transaction open); ValueError for metadata the broker
    could not fence (generation < 0 or no member id: a consumer that has not joined) or bad offsets;
    :class:`Kip447Unsupported` when a broker lacks the versions (checked once per client, see
    :func:`require_kip447`); one of :data:`FENCED_ERRORS` (or TransactionAbortableError) when the coordinator
    fences the member, after which the transaction can only be aborted (``producer.abort_transaction()``, which
    then writes the abort markers); aiokafka's ProducerFenced and authorization errors as its own call does."""
    txn = producer._txn_manager
    if txn is None or txn.transactional_id is None:
        raise IllegalOperation("KIP-447 offsets need a transactional producer (transactional_id)")
    if not txn.is_in_transaction():
        raise IllegalOperation("Not in the middle of a transaction")
    if metadata.generation_id < 0 or not metadata.member_id:
        raise ValueError(f"group metadata the broker cannot fence (not joined?): {metadata!r}")
    formatted = commit_structure_validate(dict(offsets))
    await require_kip447(producer.client)
    _install(producer)
    fut = txn.add_offsets_to_txn(formatted, _GroupKey(metadata))
    await asyncio.shield(fut)


# --- the new owner's offset fetch --------------------------------------------------------------------------


async def fetch_offsets(client: Any, group_id: str, partitions: Iterable[TopicPartition], *,
                        require_stable: bool = True) -> dict[TopicPartition, tuple[int, int]]:
    """One OffsetFetch v7 to ``group_id``'s coordinator through the started aiokafka ``client``: TopicPartition
    -> (committed offset, -1 when none; the partition's error code, 88 = UNSTABLE_OFFSET_COMMIT while an open
    transaction holds offsets for it). Raises the top-level error (e.g. NotCoordinatorError), FindCoordinator's
    errors and :class:`Kip447Unsupported`."""
    node_id = await client.coordinator_lookup(CoordinationType.GROUP, group_id)
    request = OffsetFetchRequest(group_id, partitions, require_stable=require_stable)
    resp = await client.send(node_id, request, group=ConnectionGroup.COORDINATION)
    if resp.error_code:
        raise _error_for(resp.error_code)(f"OffsetFetch of group {group_id!r}")
    return {TopicPartition(topic, p): (offset, code)
            for topic, parts, _ in resp.topics for p, offset, _epoch, _meta, code, _ in parts}


async def offset_fetch_stable(source: Any, partitions: Iterable[TopicPartition], *, group_id: str | None = None,
                              timeout_s: float = 60.0, backoff_s: float = 0.05,
                              on_unstable: Callable[[list[TopicPartition]], None] | None = None,
                              ) -> dict[TopicPartition, int]:
    """The committed offsets (TopicPartition -> next offset to read, -1 when the group committed none) of
    ``partitions``, as a new owner must read them: OffsetFetch v7 with ``require_stable``, asked again every
    ``backoff_s`` seconds while a partition answers UNSTABLE_OFFSET_COMMIT (an old owner's transaction holding
    its offsets is open: it ends by commit, abort or the broker's transaction timeout) or the coordinator moved
    or is loading (``on_unstable``, if given, is called with the sorted unstable partitions before each such
    wait). ``source`` is a started aiokafka consumer (its client and group id) or client (then
    ``group_id`` is required). Raises KafkaTimeoutError naming the partitions still unstable after
    ``timeout_s``, :class:`Kip447Unsupported`, and any other broker error."""
    client = getattr(source, "_client", source)
    group = group_id if group_id is not None else getattr(source, "_group_id", None)
    if not group:
        raise ValueError("offset_fetch_stable needs a group id (a consumer's, or group_id=)")
    wanted = set(partitions)
    await require_kip447(client)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    waiting: object = "nothing yet"
    while True:
        try:
            answer = await fetch_offsets(client, group, wanted)
        except (*_COORDINATOR_MOVED, Errors.CoordinatorLoadInProgressError) as exc:
            waiting = exc
        else:
            errors = {tp: code for tp, (_, code) in answer.items() if code}
            hard = {tp: code for tp, code in errors.items() if not _error_for(code).retriable}
            if hard:
                tp, code = min(hard.items())
                raise _error_for(code)(f"OffsetFetch of group {group!r}, {tp.topic}-{tp.partition}")
            if not errors and set(answer) >= wanted:
                return {tp: answer[tp][0] for tp in wanted}
            waiting = sorted(errors)
            unstable = [tp for tp, code in errors.items() if code == UnstableOffsetCommitError.errno]
            if unstable and on_unstable is not None:
                on_unstable(sorted(unstable))
        if loop.time() >= deadline:
            raise KafkaTimeoutError(f"offsets of group {group!r} still unstable after {timeout_s} s: {waiting}")
        await asyncio.sleep(backoff_s)
