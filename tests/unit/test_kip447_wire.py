"""The KIP-447 wire (:mod:`services.runtime.kip447`) without a broker: the bytes of TxnOffsetCommit v3/v4 and
OffsetFetch v7 for known inputs (field by field from Kafka's message definitions), their responses decoded, the
version check's errors, and the abortable error that keeps the transaction's partitions so the abort is sent.
The broker's side (fencing, require_stable) is tests/system/test_kip447.py."""

from __future__ import annotations

import struct

import pytest
from aiokafka.producer.transaction_manager import TransactionManager, TransactionResult, TransactionState
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from services.runtime.kip447 import (
    GroupMetadata,
    Kip447Unsupported,
    OffsetFetchRequest,
    OffsetFetchResponse_v7,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse_v3,
    _abortable_error,
    check_versions,
    send_offsets_to_transaction,
)

BROKER_44 = {28: (0, 6), 9: (1, 10), 25: (0, 4)}  # what the project's Kafka 4.4 broker answers to ApiVersions


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def cstr(s: str | None) -> bytes:
    """A compact (nullable) string: length + 1 as an unsigned varint (all < 128 here), then UTF-8."""
    return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()


NO_TAGS = b"\x00"


def txn_commit(**fields: object) -> TxnOffsetCommitRequest:
    meta = GroupMetadata("grp", 7, "member-1", fields.pop("instance", None))  # type: ignore[arg-type]
    offsets = {TopicPartition("t", 1): OffsetAndMetadata(42, ""), TopicPartition("t", 0): OffsetAndMetadata(9, "m"),
               TopicPartition("a", 3): OffsetAndMetadata(0, "")}
    return TxnOffsetCommitRequest("tx-1", 1001, 3, meta, offsets)


def test_txn_offset_commit_v3_bytes_for_a_known_input() -> None:
    struct_ = txn_commit().prepare({28: (0, 3)})
    assert struct_.API_VERSION == 3
    expected = (
        cstr("tx-1") + cstr("grp") + i64(1001) + i16(3)
        + i32(7) + cstr("member-1") + cstr(None)  # generation, member id, no group instance id
        + b"\x03"  # two topics, sorted: a, t
        + cstr("a") + b"\x02" + i32(3) + i64(0) + i32(-1) + cstr("") + NO_TAGS + NO_TAGS
        + cstr("t") + b"\x03"
        + i32(0) + i64(9) + i32(-1) + cstr("m") + NO_TAGS
        + i32(1) + i64(42) + i32(-1) + cstr("") + NO_TAGS
        + NO_TAGS
        + NO_TAGS
    )
    assert struct_.encode() == expected
    # the flexible request header (v2): api key 28, version 3, correlation id, client id (a plain string), tags
    assert struct_.build_request_header(5, "c").encode() == i16(28) + i16(3) + i32(5) + i16(1) + b"c" + NO_TAGS


def test_txn_offset_commit_sends_the_newest_version_up_to_4_and_the_static_instance_id() -> None:
    struct_ = txn_commit(instance="table-1").prepare(BROKER_44)
    assert struct_.API_VERSION == 4  # v5 needs KIP-890 part 2 transactions, v6 topic ids
    assert cstr("member-1") + cstr("table-1") + b"\x03" + cstr("a") in struct_.encode()


@pytest.mark.parametrize("versions, shown", [({28: (0, 2)}, "offers v0-v2"), ({}, "offers nothing")])
def test_txn_offset_commit_never_falls_back_below_v3(versions: dict[int, tuple[int, int]], shown: str) -> None:
    with pytest.raises(Kip447Unsupported) as raised:
        txn_commit().prepare(versions)
    assert str(raised.value).endswith(f"TxnOffsetCommit (API key 28) v3+ needed for KIP-447, the broker {shown}")


def test_offset_fetch_v7_bytes_with_require_stable() -> None:
    request = OffsetFetchRequest("grp", [TopicPartition("t", 2), TopicPartition("t", 0)])
    struct_ = request.prepare(BROKER_44)
    assert struct_.API_VERSION == 7
    assert struct_.encode() == (cstr("grp") + b"\x02" + cstr("t") + b"\x03" + i32(0) + i32(2) + NO_TAGS
                                + b"\x01" + NO_TAGS)  # require_stable true
    unstable = OffsetFetchRequest("grp", [TopicPartition("t", 0)], require_stable=False).prepare(BROKER_44)
    assert unstable.encode().endswith(b"\x00" + NO_TAGS)
    with pytest.raises(Kip447Unsupported, match=r"OffsetFetch \(API key 9\) v7\+ needed .* offers v1-v6"):
        request.prepare({9: (1, 6)})


def test_responses_decode() -> None:
    txn = (i32(0) + b"\x02" + cstr("t") + b"\x03" + i32(0) + i16(0) + NO_TAGS + i32(1) + i16(22) + NO_TAGS
           + NO_TAGS + NO_TAGS)
    assert TxnOffsetCommitResponse_v3.decode(txn).topics == [("t", [(0, 0, {}), (1, 22, {})], {})]
    fetch = (i32(0) + b"\x02" + cstr("t") + b"\x02" + i32(0) + i64(17) + i32(-1) + cstr("") + i16(88) + NO_TAGS
             + NO_TAGS + i16(0) + NO_TAGS)
    decoded = OffsetFetchResponse_v7.decode(fetch)
    assert decoded.topics == [("t", [(0, 17, -1, "", 88, {})], {})] and decoded.error_code == 0


def test_the_version_check_names_each_missing_api_and_the_version_needed() -> None:
    check_versions(BROKER_44, "broker 1")  # the project's broker passes
    with pytest.raises(Kip447Unsupported) as raised:
        check_versions({28: (0, 2), 9: (0, 5)}, "broker 2 at h:9092")
    assert str(raised.value) == (
        "Kip447Unsupported: TxnOffsetCommit (API key 28) v3+ needed for KIP-447, broker 2 at h:9092 offers v0-v2; "
        "OffsetFetch (API key 9) v7+ needed for KIP-447, broker 2 at h:9092 offers v0-v5; "
        "AddOffsetsToTxn (API key 25) v0+ needed for KIP-447, broker 2 at h:9092 does not offer it")


async def test_a_fenced_transaction_keeps_what_its_abort_must_mark() -> None:
    txn = TransactionManager("tx-1", 60_000)
    txn.set_pid_and_epoch(1001, 3)
    txn.begin_transaction()
    tp = TopicPartition("out", 0)
    txn.maybe_add_partition_to_txn(tp)
    txn.partition_added(tp)
    txn.consumer_group_added("grp")
    offsets_done = txn.add_offsets_to_txn({TopicPartition("in", 0): OffsetAndMetadata(5, "")}, "grp")

    _abortable_error(txn, RuntimeError("fenced"))

    assert txn.state is TransactionState.ABORTABLE_ERROR
    with pytest.raises(RuntimeError, match="fenced"):
        offsets_done.result()
    assert not txn.is_empty_transaction()  # aiokafka's error_transaction alone leaves it "empty": no EndTxn
    _abortable_error(txn, RuntimeError("again"))  # a second answer of the same transaction: the first error stays
    with pytest.raises(RuntimeError, match="fenced"):
        txn.committing_transaction()  # what commit_transaction() raises now
    txn.aborting_transaction()
    assert txn.needs_transaction_commit() is TransactionResult.ABORT
    txn.complete_transaction()  # as the sender does when EndTxn(ABORT) is answered
    assert txn.state is TransactionState.READY and txn.is_empty_transaction()


class _Producer:
    def __init__(self, txn: TransactionManager | None) -> None:
        self._txn_manager = txn


async def test_send_offsets_refuses_what_the_broker_could_not_fence() -> None:
    from aiokafka.errors import IllegalOperation

    offsets = {TopicPartition("in", 0): 1}
    joined = GroupMetadata("grp", 3, "member-1")
    with pytest.raises(IllegalOperation, match="transactional"):
        await send_offsets_to_transaction(_Producer(None), offsets, joined)
    txn = TransactionManager("tx-1", 60_000)
    txn.set_pid_and_epoch(1001, 3)
    with pytest.raises(IllegalOperation, match="Not in the middle of a transaction"):
        await send_offsets_to_transaction(_Producer(txn), offsets, joined)
    txn.begin_transaction()
    for unjoined in (GroupMetadata("grp", -1, ""), GroupMetadata("grp", 3, "")):
        with pytest.raises(ValueError, match="cannot fence"):
            await send_offsets_to_transaction(_Producer(txn), offsets, unjoined)


class _Conn:
    def __init__(self, versions: dict[int, tuple[int, int]]) -> None:
        self._versions = versions


class _Broker:
    def __init__(self, node: int) -> None:
        self.nodeId, self.host, self.port = node, "h", 9090 + node


class _Client:
    """What :func:`require_kip447` reads of an aiokafka client: the brokers and each connection's versions."""

    def __init__(self, by_node: dict[int, dict[int, tuple[int, int]] | None]) -> None:
        self.by_node = by_node
        self.cluster = self
        self.asked: list[int] = []

    def brokers(self) -> list[_Broker]:
        return [_Broker(n) for n in self.by_node]

    def get_random_node(self) -> int:
        return next(iter(self.by_node))

    async def _get_conn(self, node: int) -> _Conn | None:
        self.asked.append(node)
        versions = self.by_node[node]
        return None if versions is None else _Conn(versions)


async def test_the_start_check_asks_every_broker_once() -> None:
    from services.runtime.kip447 import require_kip447

    old = {**BROKER_44, 28: (0, 2)}  # a broker of a cluster not yet upgraded
    client = _Client({1: BROKER_44, 2: old, 3: BROKER_44})
    with pytest.raises(Kip447Unsupported, match=r"^Kip447Unsupported: TxnOffsetCommit \(API key 28\) v3\+ needed "
                       r"for KIP-447, broker 2 at h:9092 offers v0-v2$"):
        await require_kip447(client)
    client.by_node[2] = BROKER_44
    await require_kip447(client)
    await require_kip447(client)  # remembered: not asked again
    assert client.asked == [1, 2, 1, 2, 3]


async def test_a_broker_down_is_checked_later_and_all_down_is_an_error() -> None:
    from aiokafka.errors import NodeNotReadyError

    from services.runtime.kip447 import require_kip447

    client = _Client({1: BROKER_44, 2: None, 3: BROKER_44})  # node 2 killed, restarting
    await require_kip447(client)  # the producer may start
    assert client.asked == [1, 2, 3]
    client.by_node[2] = {**BROKER_44, 28: (0, 2)}  # back, and (say) not upgraded: the next check names it
    with pytest.raises(Kip447Unsupported, match="broker 2 at h:9092 offers v0-v2"):
        await require_kip447(client)
    with pytest.raises(NodeNotReadyError, match="broker 1 at h:9091; broker 2 at h:9092"):
        await require_kip447(_Client({1: None, 2: None}))
