"""Version 2 transactions on aiokafka (:mod:`services.runtime.transaction_v2`): which clusters qualify, the wire
layouts (encoded, then decoded back field by field), the transaction manager's bookkeeping, and the produce and
EndTxn handlers' reading of answers. The broker's side: tests/system/test_transaction_v2_kafka.py and the
``txn-v2`` runs of tests/system/test_kip447.py."""

from __future__ import annotations

import io
import struct
import types
from typing import Any

import pytest
from aiokafka.errors import ConcurrentTransactions, NotLeaderForPartitionError
from aiokafka.producer.transaction_manager import TransactionManager, TransactionState
from aiokafka.protocol.types import CompactArray, CompactString, Int16, TaggedFields
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from services.runtime import kip447
from services.runtime import transaction_v2 as V2

ALL = {0: (0, 13), 26: (0, 5), 28: (0, 5)}


def test_missing_names_each_lack() -> None:
    features = {"transaction.version": 2, "metadata.version": 27}
    assert V2.missing(ALL, features) == []
    assert V2.missing({**ALL, 0: (3, 11)}, features) == ["Produce v12 not offered (v3-v11)"]
    assert V2.missing({26: (0, 4), 28: (0, 5)}, features) == ["Produce v12 not offered", "EndTxn v5 not offered (v0-v4)"]
    assert V2.missing(ALL, {"transaction.version": 1}) == ["transaction.version is 1, 2 needed"]
    assert V2.missing(ALL, {}) == ["transaction.version is 0, 2 needed"]
    # a broker past v12 that no longer offers it (min above 12): not usable either
    assert V2.missing({**ALL, 0: (13, 14)}, features) == ["Produce v12 not offered (v13-v14)"]


def test_finalized_features_read_from_the_tagged_field() -> None:
    raw = CompactArray(("name", CompactString("utf-8")), ("max", Int16), ("min", Int16), ("tags", TaggedFields)).encode(
        [("metadata.version", 27, 27, {}), ("transaction.version", 2, 2, {})])
    assert V2.finalized_features({0: b"\x01", V2.FINALIZED_FEATURES_TAG: raw}) == {
        "metadata.version": 27, "transaction.version": 2}
    assert V2.finalized_features({}) == {}


def test_api_versions_v3_reads_a_v0_response_header() -> None:
    req = V2.ApiVersionsRequestV3().prepare({})
    assert (req.API_KEY, req.API_VERSION, req.FLEXIBLE_VERSION) == (18, 3, True)
    assert req.parse_response_header(io.BytesIO(struct.pack(">i", 7))).correlation_id == 7  # no tag buffer after it


def test_produce_v12_layout() -> None:
    req = V2.ProduceRequestV12("tid", -1, 30000, [("t", [(3, bytearray(b"REC"))])]).prepare(ALL)
    assert (req.API_KEY, req.API_VERSION) == (0, 12)
    body = req.encode()
    # compact string "tid" (len+1=4), acks -1, timeout, 1 topic (2), "t", 1 partition (2), index 3,
    # compact bytes b"REC" (len+1=4), partition tags, topic tags, request tags
    assert body == (b"\x04tid" + struct.pack(">hi", -1, 30000) + b"\x02\x02t\x02" + struct.pack(">i", 3)
                    + b"\x04REC" + b"\x00\x00\x00")
    assert V2.ProduceRequest_v12.SCHEMA.decode(io.BytesIO(body)) == ("tid", -1, 30000, [("t", [(3, b"REC", {})], {})], {})
    with pytest.raises(V2.TransactionV2Unsupported, match=r"Produce \(API key 0\) v12 needed .* offers v0-v11"):
        V2.ProduceRequestV12("tid", -1, 1, []).prepare({**ALL, 0: (0, 11)})


def test_end_txn_v5_layout() -> None:
    req = V2.EndTxnRequestV5("tid", 4001, 7, True).prepare(ALL)
    assert req.encode() == b"\x04tid" + struct.pack(">qh?", 4001, 7, True) + b"\x00"
    resp = V2.EndTxnResponse_v5.decode(io.BytesIO(struct.pack(">ihqh", 0, 0, 4001, 8) + b"\x00"))
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (0, 4001, 8)
    with pytest.raises(V2.TransactionV2Unsupported, match="EndTxn"):
        V2.EndTxnRequestV5("tid", 1, 1, False).prepare({26: (0, 4)})


def test_txn_offset_commit_v5_only_for_a_version_2_transaction() -> None:
    meta = kip447.GroupMetadata("g", 3, "m-1", None)
    offsets = {TopicPartition("in", 1): OffsetAndMetadata(42, "")}
    v5 = kip447.TxnOffsetCommitRequestV5("tid", 9, 2, meta, offsets).prepare({28: (0, 6)})
    assert v5.API_VERSION == 5
    assert kip447.TxnOffsetCommitRequest("tid", 9, 2, meta, offsets).prepare({28: (0, 6)}).API_VERSION == 4
    assert v5.encode() == kip447.TxnOffsetCommitRequest("tid", 9, 2, meta, offsets).prepare({28: (0, 4)}).encode()
    with pytest.raises(kip447.Kip447Unsupported, match="v5 needed"):
        kip447.TxnOffsetCommitRequestV5("tid", 9, 2, meta, offsets).prepare({28: (0, 4)})


def _manager() -> V2.TransactionManagerV2:
    txn = TransactionManager("tid", 60000)
    txn.set_pid_and_epoch(4001, 0)
    txn.__class__ = V2.TransactionManagerV2
    return txn  # type: ignore[return-value]


async def test_manager_counts_partitions_and_offsets_without_add_requests() -> None:
    txn = _manager()
    tp = TopicPartition("out", 0)
    txn.begin_transaction()
    assert txn.is_empty_transaction()
    txn.maybe_add_partition_to_txn(tp)
    assert txn.partitions_to_add() == set() and txn.txn_partitions == {tp}
    assert not txn.is_empty_transaction()
    fut = txn.add_offsets_to_txn({TopicPartition("in", 0): OffsetAndMetadata(5, "")}, "g")
    assert txn.consumer_group_to_add() is None  # never an AddOffsetsToTxn
    assert txn.offsets_to_commit() == ({TopicPartition("in", 0): OffsetAndMetadata(5, "")}, "g")
    assert txn._txn_consumer_group == "g"  # in the transaction once sent: an abort sends EndTxn
    txn.offset_committed(TopicPartition("in", 0), 5, "g")
    assert fut.done() and txn.offsets_to_commit() is None
    txn.increment_sequence_number(tp, 3)
    txn.committing_transaction()
    txn.next_epoch(4001, 1)
    txn.complete_transaction()
    assert (txn.producer_id, txn.producer_epoch, txn.sequence_number(tp)) == (4001, 1, 0)
    assert txn.state is TransactionState.READY and txn.is_empty_transaction()


async def test_nothing_to_add_ahead_under_version_2() -> None:
    from services.runtime.producers import add_partition_ahead

    txn = _manager()
    txn.begin_transaction()
    add_partition_ahead(types.SimpleNamespace(_txn_manager=txn), TopicPartition("odds", 0))
    assert txn.is_empty_transaction()  # a primed transaction holds nothing: its abort sends no EndTxn


class _Batch:
    def __init__(self) -> None:
        self.result: Any = None
        self.error: Any = None

    def done(self, offset: int, timestamp: int, log_start_offset: int) -> None:
        self.result = (offset, timestamp, log_start_offset)

    def failure(self, exception: Any) -> None:
        self.error = exception

    def expired(self) -> bool:
        return False


def _sender(txn: Any) -> Any:
    return types.SimpleNamespace(_txn_manager=txn, _retry_backoff=0.01, client=None, _acks=-1,
                                 _request_timeout_ms=30000)


def _produce_answer(parts: list[tuple[int, int]]) -> Any:
    body = V2.ProduceResponse_v12.SCHEMA.encode(
        ([("out", [(p, code, 100 + p, -1, 0, [], None, {}) for p, code in parts], {})], 0, {}))
    return V2.ProduceResponse_v12.decode(io.BytesIO(body))


async def test_produce_answer_read_by_partition() -> None:
    done, retried, failed = _Batch(), _Batch(), _Batch()
    handler = V2.ProduceV2Handler(_sender(_manager()), {TopicPartition("out", 0): done, TopicPartition("out", 1): retried,
                                                         TopicPartition("out", 2): failed})
    handler._client = types.SimpleNamespace(force_metadata_update=lambda: None)
    handler.handle_response(_produce_answer([(0, 0), (1, ConcurrentTransactions.errno), (2, 47)]))
    assert done.result == (100, -1, 0)
    assert handler._to_reenqueue == [retried] and retried.error is None  # CONCURRENT_TRANSACTIONS: sent again
    assert type(failed.error).__name__ == "ProducerFenced"  # INVALID_PRODUCER_EPOCH (47): fenced
    other = _Batch()
    handler = V2.ProduceV2Handler(_sender(_manager()), {TopicPartition("out", 0): other})
    handler._client = types.SimpleNamespace(force_metadata_update=lambda: None)
    handler.handle_response(_produce_answer([(0, NotLeaderForPartitionError.errno)]))
    assert handler._to_reenqueue == [other]  # aiokafka's own rule for a retriable error


async def test_end_txn_answer_gives_the_next_epoch() -> None:
    txn = _manager()
    txn.begin_transaction()
    txn.maybe_add_partition_to_txn(TopicPartition("out", 0))
    txn.increment_sequence_number(TopicPartition("out", 0), 2)
    txn.committing_transaction()
    handler = V2.EndTxnV2Handler(_sender(txn), 1)
    req = handler.create_request().prepare(ALL)
    assert V2.EndTxnRequest_v5.SCHEMA.decode(io.BytesIO(req.encode())) == ("tid", 4001, 0, True, {})
    assert handler.handle_response(types.SimpleNamespace(error_code=ConcurrentTransactions.errno)) == 0.01
    assert txn.state is TransactionState.COMMITTING_TRANSACTION  # retried, not ended
    assert handler.handle_response(types.SimpleNamespace(error_code=0, producer_id=5002, producer_epoch=0)) is None
    # the epoch overflowed: a new producer id, epoch 0, sequences from 0
    assert (txn.producer_id, txn.producer_epoch, txn.state) == (5002, 0, TransactionState.READY)
    assert txn.sequence_number(TopicPartition("out", 0)) == 0


@pytest.mark.parametrize(("errno", "commit", "answered"), [
    (48, True, r"EndTxn \(commit\) of 'tid' producer 4001 epoch 0 answered INVALID_TXN_STATE"),
    (-1, False, r"EndTxn \(abort\) of 'tid' producer 4001 epoch 0 answered UNKNOWN_SERVER_ERROR"),
])
async def test_end_txn_answers_that_leave_the_outcome_unknown_stop_the_producer_as_a_fencing(
        errno: int, commit: bool, answered: str) -> None:
    from aiokafka.errors import InvalidTxnState, ProducerFenced, UnknownError

    assert (InvalidTxnState.errno, UnknownError.errno) == (48, -1)
    txn = _manager()
    txn.begin_transaction()
    if commit:
        txn.committing_transaction()
    else:
        txn.aborting_transaction()
    handler = V2.EndTxnV2Handler(_sender(txn), int(commit))
    with pytest.raises(ProducerFenced, match=answered):
        handler.handle_response(types.SimpleNamespace(error_code=errno))
    assert issubclass(V2.TransactionStateLost, ProducerFenced)  # re-raised by aiokafka's sender routine as such


def test_concurrent_backoff_doubles_and_resets() -> None:
    sender = types.SimpleNamespace()
    assert [V2.concurrent_backoff(sender, True) for _ in range(6)] == [0.002, 0.004, 0.008, 0.016, 0.02, 0.02]
    assert V2.concurrent_backoff(sender, False) is None
    assert V2.concurrent_backoff(sender, True) == 0.002


async def test_a_plain_group_offset_commit_fails_a_version_2_transaction() -> None:
    txn = _manager()
    txn.begin_transaction()
    fut = txn.add_offsets_to_txn({TopicPartition("in", 0): OffsetAndMetadata(5, "")}, "plain-group")
    offsets, group = txn.offsets_to_commit()
    await kip447._do_txn_offset_commit(_sender(txn), offsets, group)
    with pytest.raises(Exception, match="group's metadata only"):
        await fut
    assert txn.state is TransactionState.ABORTABLE_ERROR


def _features(level: int) -> bytes:
    return CompactArray(("name", CompactString("utf-8")), ("max", Int16), ("min", Int16), ("tags", TaggedFields)).encode(
        [("transaction.version", level, level, {})])


class _Conn:
    def __init__(self, level: int) -> None:
        self.level = level
        self.asked: list[int] = []

    async def send(self, request: Any) -> Any:
        self.asked.append(request.prepare({}).API_VERSION)
        return types.SimpleNamespace(error_code=0, api_keys=[(k, lo, hi, {}) for k, (lo, hi) in ALL.items()],
                                     tags={V2.FINALIZED_FEATURES_TAG: _features(self.level)})


class _Client:
    def __init__(self, conns: dict[int, Any]) -> None:
        self.conns = conns
        self.cluster = types.SimpleNamespace(brokers=lambda: [types.SimpleNamespace(nodeId=n, host="h", port=n)
                                                               for n in sorted(conns, reverse=True)])

    def get_random_node(self) -> int:
        return 1

    async def _get_conn(self, node: int) -> Any:
        return self.conns[node]


async def test_cluster_support_asks_the_first_broker_that_answers_once() -> None:
    answering = _Conn(2)
    client = _Client({1: None, 2: answering, 3: _Conn(1)})  # node 1 down (restarting)
    assert await V2.cluster_support(client) == []
    assert answering.asked == [3]  # ApiVersions v3, from node 2 only
    assert await V2.cluster_support(client) == [] and answering.asked == [3]  # remembered on the client
    assert await V2.cluster_support(_Client({1: _Conn(1)})) == ["broker 1: transaction.version is 1, 2 needed"]
    with pytest.raises(Exception, match="no broker answered ApiVersions"):
        await V2.cluster_support(_Client({1: None, 2: None}))


async def test_a_coordinator_lookup_whose_connection_closes_is_asked_again() -> None:
    """aiokafka's ``_find_coordinator`` raises ``KafkaError`` from a closed connection (a node killed while it
    was asked): the offsets' step returns after the backoff, the offsets still queued, so the sender asks again;
    any other error still propagates."""
    from aiokafka.errors import KafkaConnectionError, KafkaError

    txn = _manager()
    txn.begin_transaction()
    meta = kip447.GroupMetadata("g", 3, "m-1", None)
    txn.add_offsets_to_txn({TopicPartition("in", 0): OffsetAndMetadata(5, "")}, kip447._GroupKey(meta))
    offsets, group = txn.offsets_to_commit()
    sender = _sender(txn)
    sender._retry_backoff = 0.001

    async def lost(kind: Any, key: str) -> int:
        raise KafkaError("lookup failed") from KafkaConnectionError("Connection at 127.0.0.1:29102 closed")

    sender._find_coordinator = lost
    await kip447._do_txn_offset_commit(sender, offsets, group)
    assert txn.offsets_to_commit() == (offsets, group) and txn.is_in_transaction()  # still queued, not failed

    async def other(kind: Any, key: str) -> int:
        raise KafkaError("something else") from ValueError("x")

    sender._find_coordinator = other
    with pytest.raises(KafkaError, match="something else"):
        await kip447._do_txn_offset_commit(sender, offsets, group)


async def test_an_end_txn_whose_coordinator_lookup_lost_its_connection_is_sent_later() -> None:
    from aiokafka.errors import KafkaConnectionError, KafkaError

    txn = _manager()
    txn.begin_transaction()
    txn.maybe_add_partition_to_txn(TopicPartition("out", 0))
    txn.committing_transaction()
    sender = _sender(txn)
    sender._retry_backoff = 0.001

    async def flushed() -> None:
        return None

    async def lost(kind: Any, key: str) -> int:
        raise KafkaError("lookup failed") from KafkaConnectionError("closed")

    sender._message_accumulator = types.SimpleNamespace(flush_for_commit=flushed)
    sender._find_coordinator = lost
    await V2._do_txn_commit(sender, 1)
    assert txn.state is TransactionState.COMMITTING_TRANSACTION  # not failed: the sender sends EndTxn again
    assert txn.needs_transaction_commit() == 1


async def test_a_cluster_without_version_2_keeps_version_1_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    V2._WARNED.clear()

    def producer() -> Any:
        txn = TransactionManager("tid", 60000)
        txn.set_pid_and_epoch(1, 0)
        return types.SimpleNamespace(_txn_manager=txn, client=_Client({1: _Conn(1)}), _sender=object())

    first, second = producer(), producer()
    with caplog.at_level("WARNING", logger="services.runtime.transaction_v2"):
        assert await V2.enable_transaction_v2(first) is False
        assert await V2.enable_transaction_v2(second) is False
    assert not V2.uses_transaction_v2(first) and type(first._txn_manager) is TransactionManager
    warned = [r.getMessage() for r in caplog.records if "version 2 not used" in r.getMessage()]
    assert warned == [("transaction version 2 not used (transactions send AddPartitionsToTxn and AddOffsetsToTxn): "
                       "broker 1: transaction.version is 1, 2 needed")]
