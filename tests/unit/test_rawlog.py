"""The one raw-log reader (services/rawlog.py): read to the end offsets taken at the start, in offset order per
partition; records sorted by their decoding, each once; the partition of a table as Kafka's clients compute it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from types import SimpleNamespace

import msgspec
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition

from contracts import topics as T
from contracts.codecs import encode
from contracts.commands import SeatPlayer
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import PlayerSeated
from services import rawlog

AT = datetime(2026, 12, 1, tzinfo=timezone.utc)


class FakeConsumer:
    """Partitions of records; a fetch returns at most two records of each pending partition. ``late`` records
    are appended to a partition once its end offset was asked for (a live log growing while it is read)."""

    def __init__(self, logs: dict[TopicPartition, list[bytes]], late: dict[TopicPartition, list[bytes]] | None = None):
        self.logs = {tp: list(v) for tp, v in logs.items()}
        self.late = late or {}
        self.at: dict[TopicPartition, int] = {}
        self.fetches = 0

    def assign(self, tps):  # type: ignore[no-untyped-def]
        self.assigned = list(tps)

    async def seek_to_beginning(self, *tps):  # type: ignore[no-untyped-def]
        for tp in tps:
            self.at[tp] = 0

    async def end_offsets(self, tps):  # type: ignore[no-untyped-def]
        ends = {tp: len(self.logs[tp]) for tp in tps}
        for tp, more in self.late.items():
            self.logs[tp] += more
        return ends

    async def position(self, tp):  # type: ignore[no-untyped-def]
        return self.at[tp]

    async def getmany(self, *tps, timeout_ms=0):  # type: ignore[no-untyped-def]
        self.fetches += 1
        out = {}
        for tp in tps:
            i = self.at[tp]
            recs = [SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=o, key=b"T1", value=v)
                    for o, v in enumerate(self.logs[tp][i:i + 2], start=i)]
            if recs:
                out[tp] = recs
                self.at[tp] = i + len(recs)
        return out


def _read(consumer: FakeConsumer, tps: list[TopicPartition]) -> list[tuple[TopicPartition, list[int]]]:
    async def run() -> list[tuple[TopicPartition, list[int]]]:
        return [(tp, [r.offset for r in recs]) async for tp, recs in rawlog.read_to_end(consumer, tps)]

    return asyncio.run(run())


def test_read_to_end_reads_every_partition_to_the_end_offsets_taken_at_the_start() -> None:
    a, b, empty = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    c = FakeConsumer({a: [b"a0", b"a1", b"a2"], b: [b"b0"], empty: []}, late={a: [b"a3", b"a4"], b: [b"b1"]})
    got = _read(c, [a, b, empty])
    per = {tp: [o for t, offs in got if t == tp for o in offs] for tp in (a, b, empty)}
    # appended after the start: not read (a3, a4, b1), though a fetch returned a3 with a2
    assert per == {a: [0, 1, 2], b: [0], empty: []}
    assert c.assigned == [a, b, empty]
    assert c.fetches == 2


def test_read_to_end_of_nothing_reads_nothing() -> None:
    assert _read(FakeConsumer({}), []) == []
    tp = TopicPartition("t", 0)
    c = FakeConsumer({tp: []})
    assert _read(c, [tp]) == [] and c.fetches == 0


def _event(table: str, seq: int) -> bytes:
    return encode(Envelope(event_id=f"e{seq}", stream=T.DEALING_EVENTS, table_id=table, seq=seq, causation_id="c",
                           correlation_id="", occurred_at=AT, payload=PlayerSeated(seat=1, player_id="p")))


def _rec(value: bytes | None, offset: int) -> SimpleNamespace:
    return SimpleNamespace(topic="t", partition=0, offset=offset, key=b"T1", value=value)


def test_decode_records_sorts_each_record_once_and_keeps_one_tables_messages() -> None:
    unknown = msgspec.json.decode(_event("T1", 3))
    unknown["payload"]["type"] = "from_a_newer_version"
    unknown_other = dict(unknown, table_id="T2")
    records = [_rec(_event("T1", 1), 0), _rec(_event("T2", 1), 1), _rec(b"not json", 2),
               _rec(msgspec.json.encode(unknown), 3), _rec(msgspec.json.encode(unknown_other), 4),
               _rec(_event("T1", 2), 5)]
    got = rawlog.decode_records(records, table_id="T1")
    assert [(r.offset, e.table_id, e.seq) for r, e in got.ok] == [(0, "T1", 1), (5, "T1", 2)]
    assert [(f.record.offset, f.key) for f in got.undecodable] == [(2, "T1")]
    assert [(u.record.offset, u.type_name) for u in got.unknown] == [(3, "from_a_newer_version")]
    every = rawlog.decode_records(records)  # every table
    assert [r.offset for r, _ in every.ok] == [0, 1, 5] and [u.record.offset for u in every.unknown] == [3, 4]


def test_decode_records_with_the_command_decoder() -> None:
    from contracts.codecs import decode_command

    cmd = encode(CommandEnvelope(command_id="c1", table_id="T1", issued_at=AT,
                                 payload=SeatPlayer(seat=1, player_id="p")))
    got = rawlog.decode_records([_rec(cmd, 0), _rec(_event("T1", 1), 1)], decode_command)
    assert [(r.offset, type(c.payload).__name__) for r, c in got.ok] == [(0, "SeatPlayer")]
    assert [f.record.offset for f in got.undecodable + got.unknown] == [1]  # an event is not a command


def test_partition_for_is_the_kafka_clients_partition_of_the_tables_key() -> None:
    for n in (1, 3, 12):
        for table in ("T1", "T2", "baccarat-07", "chemin-1"):
            want = DefaultPartitioner()(T.key(table), list(range(n)), list(range(n)))
            assert rawlog.partition_for(table, n) == want
