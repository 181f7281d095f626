"""Transactions without AddPartitionsToTxn and AddOffsetsToTxn: Kafka's transaction protocol version 2 (KIP-890
part 2) on aiokafka.

A transaction of aiokafka 0.14 (Kafka's version 1 protocol) costs its producer four round trips one after another
to the coordinators, with the records' Produce beside the second: AddPartitionsToTxn (the records' partitions
join the transaction before any is written), AddOffsetsToTxn (the group's offsets partition joins it),
TxnOffsetCommit, EndTxn. ``bench/pipeline.py --trace`` showed the services' instance producers with a
transaction in flight 90-98 % of the timed phase, 19-20 ms each, the offsets' two requests 11-13 ms of that: a
service's rate at full speed was its transactions' length.

Under version 2 (a cluster whose finalized feature ``transaction.version`` is 2: Kafka 4.0+, the default of a
storage formatted by 4.x, as ``infra/kafka/kafka.sh`` does) the partition leader adds a partition to the
transaction when a **Produce v12+** writes to it, and the group coordinator adds the offsets partition when a
**TxnOffsetCommit v5+** arrives. A transaction is then Produce, TxnOffsetCommit and **EndTxn v5** (the group
commit sends the offsets once the records are answered: sent side by side, the broker adds one at a time per
transactional id and answers the other NETWORK_EXCEPTION, ``bench/txn_v2.py``); EndTxn's answer carries the
producer's **next epoch**: version 2 bumps the epoch at the end of every
transaction (a zombie's late write of an ended transaction is fenced by it), and the idempotent sequence numbers
start again at 0 for the new epoch. (Message definitions: ``ProduceRequest.json`` v12, ``EndTxnResponse.json``
v5 ``ProducerId``/``ProducerEpoch``, ``TxnOffsetCommitRequest.json`` v5, in ``kafka-clients``; Java's
``TransactionManager`` under ``isTransactionV2Enabled``.)

What this module adds to one started aiokafka transactional producer (:func:`enable_transaction_v2`):

* its transaction manager (:class:`TransactionManagerV2`) counts a partition in the transaction as soon as a
  record is sent to it, and a group's offsets as soon as their TxnOffsetCommit goes (so an abort always sends
  EndTxn: the coordinator may hold them), and never asks for AddPartitionsToTxn or AddOffsetsToTxn;
* its sender sends Produce v12 (:class:`ProduceRequestV12`; CONCURRENT_TRANSACTIONS, the previous transaction's
  markers not yet written, is retried like any retriable produce error: the batch keeps its sequence) and EndTxn
  v5, taking the new producer id and epoch from the answer and resetting the sequences;
* the KIP-447 offsets (:func:`services.runtime.kip447.send_offsets_to_transaction`) go as TxnOffsetCommit v5
  (the transaction manager's ``implicit_add``), with the group's metadata as before: fencing by generation
  stays.

It is used only when the brokers offer Produce v12, EndTxn v5 and TxnOffsetCommit v5 and the cluster's
finalized ``transaction.version`` is 2 or more (ApiVersions v3's ``FinalizedFeatures``, :func:`cluster_support`);
otherwise the producer keeps aiokafka's version 1 requests, with a log line saying why. As in Java's client, a
partition counts as in the transaction from its first send: committing a transaction none of whose records
reached the broker is refused (INVALID_TXN_STATE, fatal to the producer), so commit only once the records'
sends succeeded (the group commit does); aborting such a transaction is accepted (its epoch is bumped). The plain
``producer.send_offsets_to_transaction`` (a group id without metadata) has no version 2 form here: under
version 2 it fails the transaction with a clear error (the runtime sends offsets only with group metadata).
"""

from __future__ import annotations

import asyncio
import io
import logging
import types
from collections import defaultdict
from typing import Any

import aiokafka.errors as Errors
from aiokafka.client import CoordinationType
from aiokafka.errors import ConcurrentTransactions, IncompatibleBrokerVersion, ProducerFenced
from aiokafka.producer.sender import EndTxnHandler, SendProduceReqHandler
from aiokafka.producer.transaction_manager import PidAndEpoch, TransactionManager
from aiokafka.protocol.api import Request, RequestStruct, Response, ResponseHeader_v0
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactBytes,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)
from aiokafka.structs import TopicPartition

log = logging.getLogger(__name__)

PRODUCE_KEY, END_TXN_KEY, TXN_OFFSET_COMMIT_KEY, API_VERSIONS_KEY = 0, 26, 28, 18
#: (API name, version) per API key: what a version 2 transaction sends
REQUIRED_VERSIONS = {PRODUCE_KEY: ("Produce", 12), END_TXN_KEY: ("EndTxn", 5),
                     TXN_OFFSET_COMMIT_KEY: ("TxnOffsetCommit", 5)}
#: the cluster feature, and its level from which the protocol above applies
FEATURE, FEATURE_LEVEL = "transaction.version", 2

_TAGS = ("tags", TaggedFields)

#: s a version 2 TxnOffsetCommit answered CONCURRENT_TRANSACTIONS waits before it is sent again (the group
#: coordinator's add of the offsets partition met the previous transaction's markers, not yet written: a few
#: ms); each further such answer in a row doubles it, up to :data:`CONCURRENT_MAX_BACKOFF_S`
CONCURRENT_FIRST_BACKOFF_S = 0.002
CONCURRENT_MAX_BACKOFF_S = 0.02


async def find_coordinator(sender: Any, kind: Any, key: str) -> int | None:
    """``sender._find_coordinator(kind, key)`` (aiokafka's lookup, which retries a coordinator not available, a
    node not ready and a timeout), but None after the sender's backoff where it raised ``KafkaError`` from a
    closed connection (the node it asked was killed meanwhile: aiokafka raises that out of its sender routine,
    ending the producer; seen in three-broker chaos runs). The caller returns and its step is taken again by the
    sender (the offsets or the commit are still pending). Other errors propagate."""
    try:
        return int(await sender._find_coordinator(kind, key))
    except Errors.KafkaError as exc:
        if not isinstance(exc.__cause__, Errors.KafkaConnectionError) or isinstance(
                exc, (Errors.GroupAuthorizationFailedError, Errors.TransactionalIdAuthorizationFailed)):
            raise
        log.warning("coordinator lookup for %r lost its connection (%r): asked again", str(key), exc.__cause__)
        await asyncio.sleep(sender._retry_backoff)
        return None


def concurrent_backoff(sender: Any, concurrent: bool) -> float | None:
    """The wait before a request answered CONCURRENT_TRANSACTIONS (``concurrent``) is sent again by ``sender``
    (doubling from :data:`CONCURRENT_FIRST_BACKOFF_S` for answers in a row); None, and the count reset, for
    any other answer."""
    if not concurrent:
        sender._croupier_v2_concurrent = 0
        return None
    n = getattr(sender, "_croupier_v2_concurrent", 0)
    sender._croupier_v2_concurrent = n + 1
    return min(CONCURRENT_FIRST_BACKOFF_S * 2 ** n, CONCURRENT_MAX_BACKOFF_S)


# --- the wire ----------------------------------------------------------------------------------------------


class ApiVersionsResponse_v3(Response):
    """ApiVersions response v3 (flexible body, but a v0 response header, as every ApiVersions response):
    ``api_keys`` = [(key, min, max, tags)]; the tagged field 2 holds the finalized features."""

    API_KEY = API_VERSIONS_KEY
    API_VERSION = 3
    SCHEMA = Schema(
        ("error_code", Int16),
        ("api_keys", CompactArray(("api_key", Int16), ("min_version", Int16), ("max_version", Int16), _TAGS)),
        ("throttle_time_ms", Int32),
        _TAGS,
    )


class ApiVersionsRequest_v3(RequestStruct):
    """ApiVersions request v3: the client's software name and version."""

    FLEXIBLE_VERSION = True
    API_KEY = API_VERSIONS_KEY
    API_VERSION = 3
    RESPONSE_TYPE = ApiVersionsResponse_v3
    SCHEMA = Schema(("client_software_name", CompactString("utf-8")),
                    ("client_software_version", CompactString("utf-8")), _TAGS)

    def parse_response_header(self, read_buffer: Any) -> Any:
        return ResponseHeader_v0.decode(read_buffer)  # KIP-511: the broker may not know the version asked


class ApiVersionsRequestV3(Request[ApiVersionsRequest_v3]):
    API_KEY = API_VERSIONS_KEY
    ALLOW_UNKNOWN_API_VERSION = True

    def build(self, request_struct_class: type[Any]) -> Any:
        return request_struct_class("croupier", "1", {})

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        return self.build(ApiVersionsRequest_v3)


#: the tagged field of ApiVersions v3+ holding the finalized features: [(name, max_level, min_level, tags)]
FINALIZED_FEATURES_TAG = 2
_FINALIZED = CompactArray(("name", CompactString("utf-8")), ("max_version_level", Int16),
                          ("min_version_level", Int16), _TAGS)


def finalized_features(tags: dict[int, bytes]) -> dict[str, int]:
    """The cluster's finalized features (name -> level) from an ApiVersions v3+ response's tagged fields; empty
    when the broker sent none."""
    raw = tags.get(FINALIZED_FEATURES_TAG)
    if raw is None:
        return {}
    return {name: level for name, level, _, _ in _FINALIZED.decode(io.BytesIO(raw)) or ()}


class ProduceResponse_v12(Response):
    """Produce response v12 (flexible): ``responses`` = [(name, [(index, error_code, base_offset,
    log_append_time_ms, log_start_offset, record_errors, error_message, tags)], tags)]."""

    API_KEY = PRODUCE_KEY
    API_VERSION = 12
    SCHEMA = Schema(
        ("responses", CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_responses", CompactArray(
                ("index", Int32), ("error_code", Int16), ("base_offset", Int64), ("log_append_time_ms", Int64),
                ("log_start_offset", Int64),
                ("record_errors", CompactArray(("batch_index", Int32),
                                               ("batch_index_error_message", CompactString("utf-8")), _TAGS)),
                ("error_message", CompactString("utf-8")),
                _TAGS,
            )),
            _TAGS,
        )),
        ("throttle_time_ms", Int32),
        _TAGS,
    )


class ProduceRequest_v12(RequestStruct):
    """Produce request v12 (flexible): the transactional id, acks, timeout and ``topic_data`` = [(name,
    [(index, records, tags)], tags)]: a transactional write that adds its partitions to the transaction."""

    FLEXIBLE_VERSION = True
    API_KEY = PRODUCE_KEY
    API_VERSION = 12
    RESPONSE_TYPE = ProduceResponse_v12
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("acks", Int16),
        ("timeout_ms", Int32),
        ("topic_data", CompactArray(
            ("name", CompactString("utf-8")),
            ("partition_data", CompactArray(("index", Int32), ("records", CompactBytes), _TAGS)),
            _TAGS,
        )),
        _TAGS,
    )


class ProduceRequestV12(Request[ProduceRequest_v12]):
    """Produce v12 of ``topics`` = [(topic, [(partition, record batch bytes)])]; raises
    IncompatibleBrokerVersion on a broker without v12."""

    API_KEY = PRODUCE_KEY

    def __init__(self, transactional_id: str | None, required_acks: int, timeout: int,
                 topics: list[tuple[str, list[tuple[int, Any]]]]) -> None:
        self._transactional_id = transactional_id
        self._required_acks = required_acks
        self._timeout = timeout
        self._topics = topics

    @property
    def required_acks(self) -> int:
        return self._required_acks

    def build(self, request_struct_class: type[Any]) -> Any:
        data = [(topic, [(p, bytes(records), {}) for p, records in parts], {}) for topic, parts in self._topics]
        return request_struct_class(self._transactional_id, self._required_acks, self._timeout, data, {})

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        _require(versions, PRODUCE_KEY)
        return self.build(ProduceRequest_v12)


class EndTxnResponse_v5(Response):
    """EndTxn response v5: the error, and the producer id and epoch for the next transaction (-1, -1 on an
    error)."""

    API_KEY = END_TXN_KEY
    API_VERSION = 5
    SCHEMA = Schema(("throttle_time_ms", Int32), ("error_code", Int16), ("producer_id", Int64),
                    ("producer_epoch", Int16), _TAGS)


class EndTxnRequest_v5(RequestStruct):
    """EndTxn request v5 (flexible): the transaction, and whether it commits."""

    FLEXIBLE_VERSION = True
    API_KEY = END_TXN_KEY
    API_VERSION = 5
    RESPONSE_TYPE = EndTxnResponse_v5
    SCHEMA = Schema(("transactional_id", CompactString("utf-8")), ("producer_id", Int64),
                    ("producer_epoch", Int16), ("committed", Boolean), _TAGS)


class EndTxnRequestV5(Request[EndTxnRequest_v5]):
    """EndTxn v5 (the epoch bumped by the coordinator, the new one answered)."""

    API_KEY = END_TXN_KEY

    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool) -> None:
        self._fields = (transactional_id, producer_id, producer_epoch, committed, {})

    def build(self, request_struct_class: type[Any]) -> Any:
        return request_struct_class(*self._fields)

    def prepare(self, versions: dict[int, tuple[int, int]]) -> Any:
        _require(versions, END_TXN_KEY)
        return self.build(EndTxnRequest_v5)


class TransactionV2Unsupported(IncompatibleBrokerVersion):
    """A broker lacks a request version the version 2 protocol needs (the message names it)."""


def _require(versions: dict[int, tuple[int, int]], key: int) -> None:
    name, needed = REQUIRED_VERSIONS[key]
    offered = versions.get(key)
    if offered is None or not offered[0] <= needed <= offered[1]:
        shown = "nothing" if offered is None else f"v{offered[0]}-v{offered[1]}"
        raise TransactionV2Unsupported(f"{name} (API key {key}) v{needed} needed for transaction version 2, "
                                       f"the broker offers {shown}")


# --- which clusters ----------------------------------------------------------------------------------------


def missing(versions: dict[int, tuple[int, int]], features: dict[str, int]) -> list[str]:
    """What one broker (its ApiVersions answer: API key -> (min, max), and the finalized features) lacks for
    version 2 transactions, as readable reasons; empty when it has everything. Pure (unit-tested)."""
    out = []
    for key, (name, needed) in REQUIRED_VERSIONS.items():
        offered = versions.get(key)
        if offered is None or not offered[0] <= needed <= offered[1]:
            out.append(f"{name} v{needed} not offered" + ("" if offered is None else
                                                          f" (v{offered[0]}-v{offered[1]})"))
    level = features.get(FEATURE, 0)
    if level < FEATURE_LEVEL:
        out.append(f"{FEATURE} is {level}, {FEATURE_LEVEL} needed")
    return out


async def cluster_support(client: Any) -> list[str]:
    """Ask a broker the started aiokafka ``client`` knows (ApiVersions v3 on its connection; the first in node
    order that answers) and return what keeps version 2 transactions from being used (empty: nothing). One
    broker is enough: a feature level is finalized only once every registered broker supports it (the
    controller refuses it otherwise), so a finalized ``transaction.version`` 2 means every broker has the
    request versions too; a broker down meanwhile (a node restarting) does not keep a producer from starting.
    Remembered on the client. Raises NodeNotReadyError when no broker answers."""
    cached = getattr(client, "_croupier_txn_v2_missing", None)
    if cached is not None:
        return list(cached)
    if client.get_random_node() is None:
        await client.bootstrap()
    tried = []
    for broker in sorted(client.cluster.brokers(), key=lambda b: b.nodeId):
        try:
            conn = await client._get_conn(broker.nodeId)
            resp = None if conn is None else await conn.send(ApiVersionsRequestV3())
        except Errors.KafkaError as e:
            tried.append(f"broker {broker.nodeId}: {type(e).__name__}")
            continue
        if resp is None:
            tried.append(f"broker {broker.nodeId}: no connection")
            continue
        if resp.error_code:
            reasons = [f"broker {broker.nodeId}: ApiVersions v3 answered error {resp.error_code}"]
        else:
            versions = {key: (lo, hi) for key, lo, hi, _ in resp.api_keys}
            reasons = [f"broker {broker.nodeId}: {r}" for r in missing(versions, finalized_features(resp.tags))]
        client._croupier_txn_v2_missing = tuple(reasons)
        return reasons
    raise Errors.NodeNotReadyError(f"no broker answered ApiVersions ({'; '.join(tried) or 'none known'})")


# --- the producer's half -----------------------------------------------------------------------------------


class TransactionManagerV2(TransactionManager):
    """aiokafka's transaction manager for version 2 transactions: a partition is in the transaction once a
    record is sent to it, a group's offsets once their TxnOffsetCommit (v5) is sent; nothing waits for
    AddPartitionsToTxn or AddOffsetsToTxn. ``implicit_add`` tells :mod:`services.runtime.kip447` to send
    TxnOffsetCommit v5."""

    implicit_add = True

    def maybe_add_partition_to_txn(self, tp: TopicPartition) -> None:
        if self.transactional_id is None:
            return
        assert self.is_in_transaction()
        self._txn_partitions.add(tp)

    def consumer_group_to_add(self) -> None:
        return None

    def offsets_to_commit(self) -> Any:
        for group_id, offsets, _ in self._pending_txn_offsets:
            # in the transaction from now on: the coordinator may add the offsets partition even if the
            # answer is lost, so an abort must send EndTxn
            self._txn_consumer_group = group_id
            return offsets, group_id
        return None

    def next_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """The coordinator ended the transaction and answered the producer id and epoch of the next one (a
        new id once the epoch would overflow): take them, sequences from 0 again."""
        self._pid_and_epoch = PidAndEpoch(producer_id, producer_epoch)
        self._sequence_numbers.clear()


class ProduceV2Handler(SendProduceReqHandler):
    """aiokafka's produce handler sending Produce v12; the answer is read in v8's shape by aiokafka's own
    rules, CONCURRENT_TRANSACTIONS retried as a retriable error."""

    def create_request(self) -> ProduceRequestV12:
        topics: dict[str, list[tuple[int, Any]]] = defaultdict(list)
        for tp, batch in self._batches.items():
            topics[tp.topic].append((tp.partition, batch.get_data_buffer()))
        txn = self._sender._txn_manager
        return ProduceRequestV12(txn.transactional_id if txn is not None else None, self._sender._acks,
                                 self._sender._request_timeout_ms, list(topics.items()))

    def handle_response(self, response: Any) -> None:
        as_v8 = types.SimpleNamespace(API_VERSION=8, topics=[
            (name, [(p, code, offset, ts, lso, [(i, m) for i, m, _ in errs or ()], msg)
                    for p, code, offset, ts, lso, errs, msg, _ in parts])
            for name, parts, _ in response.responses])
        super().handle_response(as_v8)

    def _can_retry(self, error: Any, batch: Any) -> bool:
        if isinstance(error, ConcurrentTransactions):  # the previous transaction's markers are being written
            return True
        return bool(super()._can_retry(error, batch))


class TransactionStateLost(ProducerFenced):
    """A version 2 EndTxn answered INVALID_TXN_STATE: the coordinator holds this transaction in no state the
    request can end (seen under ``bench/chaos.py --brokers 3`` when a node was killed while an EndTxn was in
    flight: the retry, sent to the next coordinator, found the transaction already ended, or ended by a
    timeout); or UNKNOWN_SERVER_ERROR (:data:`_STATE_LOST`). Whether it committed is not known here: the
    producer is done for (as after a fencing), its tasks are restored from the committed offsets, which say."""


#: EndTxn answers after which whether the transaction committed is not known here (error code -> what it
#: means): :class:`TransactionStateLost`. UNKNOWN_SERVER_ERROR was answered to version 2 EndTxns in a long
#: ``bench/chaos.py --brokers 3`` run (2026-12-05), each time while a node was down; Java's client
#: (kafka-clients 4.4, ``TransactionManager.EndTxnHandler``) ends the producer on it too (a fatal error, as
#: for every EndTxn error it does not name).
_STATE_LOST = {
    Errors.InvalidTxnState.errno: "INVALID_TXN_STATE: the coordinator no longer holds this transaction open "
                                  "(ended, or timed out, while the request was retried)",
    Errors.UnknownError.errno: "UNKNOWN_SERVER_ERROR: the coordinator failed to end it, and whether it "
                               "committed is not known",
}


class EndTxnV2Handler(EndTxnHandler):
    """aiokafka's EndTxn handler sending v5 and taking the next producer epoch from the answer. An
    INVALID_TXN_STATE or UNKNOWN_SERVER_ERROR answer (:data:`_STATE_LOST`) raises :class:`TransactionStateLost`
    (a ProducerFenced: the sender stops the producer as after a fencing) where aiokafka's raised the error out
    of its sender routine ("Unexpected error in sender routine", the same end for the producer, with a
    traceback, and a KafkaError its caller cannot tell from any other)."""

    def create_request(self) -> EndTxnRequestV5:
        txn = self._sender._txn_manager
        return EndTxnRequestV5(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                               bool(self._commit_result))

    def handle_response(self, resp: Any) -> float | None:
        if resp.error_code == 0:
            txn = self._sender._txn_manager
            if resp.producer_id >= 0:
                txn.next_epoch(resp.producer_id, resp.producer_epoch)
            txn.complete_transaction()
            return None
        why = _STATE_LOST.get(resp.error_code)
        if why is not None:
            txn = self._sender._txn_manager
            raise TransactionStateLost(
                f"EndTxn ({'commit' if self._commit_result else 'abort'}) of {txn.transactional_id!r} producer "
                f"{txn.producer_id} epoch {txn.producer_epoch} answered {why}")
        return super().handle_response(resp)  # type: ignore[no-any-return]


async def _send_produce_req(sender: Any, node_id: int, batches: dict[TopicPartition, Any]) -> None:
    await ProduceV2Handler(sender, batches).do(node_id)
    sender._in_flight.remove(node_id)
    for tp in batches:
        sender._muted_partitions.remove(tp)


async def _do_txn_commit(sender: Any, commit_result: Any) -> None:
    await sender._message_accumulator.flush_for_commit()
    txn = sender._txn_manager
    if txn.is_empty_transaction():
        txn.complete_transaction()
        return
    node_id = await find_coordinator(sender, CoordinationType.TRANSACTION, txn.transactional_id)
    if node_id is not None:
        await EndTxnV2Handler(sender, commit_result).do(node_id)


#: the reasons :func:`enable_transaction_v2` has logged in this process
_WARNED: set[str] = set()


async def enable_transaction_v2(producer: Any) -> bool:
    """Make the started transactional aiokafka ``producer`` (no transaction open) run version 2 transactions,
    if every broker supports them (:func:`cluster_support`); returns whether it does. Otherwise logs the
    reasons (once per process) and leaves the producer as it was. Raises ValueError for a producer that is not
    transactional or has a transaction open; aiokafka's connection errors."""
    txn = producer._txn_manager
    if txn is None or txn.transactional_id is None:
        raise ValueError("transaction version 2 is for a transactional producer")
    if isinstance(txn, TransactionManagerV2):
        return True
    if txn.is_in_transaction():
        raise ValueError("transaction version 2 is switched on between transactions")
    client = producer.client
    reasons = await cluster_support(client)
    if reasons:
        said = "; ".join(reasons)
        if said not in _WARNED:  # once per process and reason, not per producer (a projection starts 12)
            _WARNED.add(said)
            log.warning("transaction version 2 not used (transactions send AddPartitionsToTxn and "
                        "AddOffsetsToTxn): %s", said)
        return False
    txn.__class__ = TransactionManagerV2
    sender = producer._sender
    sender._send_produce_req = types.MethodType(_send_produce_req, sender)
    sender._do_txn_commit = types.MethodType(_do_txn_commit, sender)
    return True


def uses_transaction_v2(producer: Any) -> bool:
    """Whether ``producer`` runs version 2 transactions (:func:`enable_transaction_v2`)."""
    return isinstance(getattr(producer, "_txn_manager", None), TransactionManagerV2)
