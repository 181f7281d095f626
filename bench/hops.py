"""A round's hops from the log itself: the record timestamps of one round's records, read back from the
topics after a run (issue 25), for the services and for the raw loop (``bench/rawloop.py``) alike.

A hop's time is the difference of two records' timestamps: the command topics take the broker's append time
(``LogAppendTime``, :data:`contracts.topics.COMMAND_TOPIC_CONFIG`); event topics and the raw loop's topics
carry the producer's create time, which aiokafka stamps when ``send`` is called (inside the writer's open
transaction, just after the decision). Every client runs on this host, so one clock. A hop thus holds the
previous writer's transaction commit, the fetch that brings the record to the next reader, its dispatch and
its decision, up to the send of what it caused: what a dealer waits, hop by hop.

The hops of "No more bets" (``CloseBetting``) to settled, in the names the brief uses:

* ``close->BettingClosed``: the wagering service (the command's append time to ``BettingClosed``);
* ``BettingClosed->1st CardDrawn``: dealing reads it and writes ``DrawCard``, the shoe draws (two hops);
* ``cards``: the first ``CardDrawn`` to the last (0 for a four-card round when the four are one batch);
* ``last card->RoundResolved``: dealing deals the last card and resolves the round (its ``CardDealt`` and
  ``RoundResolved`` are written in one transaction);
* ``RoundResolved->settled``: the settlement service (its ``BetSettled`` and ``RoundSettled``);
* ``close->settled``: the sum, on the log's clock.

The raw loop's records carry their remaining route, so its hops are taken from the same positions on the
route (:func:`raw_round_hops`).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import msgspec
from aiokafka import AIOKafkaConsumer, TopicPartition

HOPS = ("close->BettingClosed", "BettingClosed->1st CardDrawn", "cards (1st->last CardDrawn)",
        "last card->RoundResolved", "RoundResolved->settled", "close->settled")


class _Payload(msgspec.Struct):
    type: str = ""
    round_id: str | None = None


class _Probe(msgspec.Struct):
    """An event or command envelope, only what a hop needs (round id, payload type)."""

    round_id: str | None = None
    payload: _Payload = msgspec.field(default_factory=_Payload)


_probe = msgspec.json.Decoder(_Probe)


async def read_topics(options: dict[str, Any], topics: Iterable[str], partitions: int,
                      timeout: float = 30.0) -> list[tuple[str, int, bytes]]:
    """Every committed record of ``topics`` (``partitions`` each), from the beginning to the current end:
    ``(topic, timestamp ms, value)``. ``options``: the client options (bootstrap, security)."""
    consumer = AIOKafkaConsumer(**options, enable_auto_commit=False, isolation_level="read_committed",
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        out: list[tuple[str, int, bytes]] = []

        async def drain() -> None:
            while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
                batch = await consumer.getmany(timeout_ms=200, max_records=5000)
                for recs in batch.values():
                    out.extend((r.topic, r.timestamp, r.value or b"") for r in recs)

        await asyncio.wait_for(drain(), timeout)
        return out
    finally:
        await consumer.stop()


def service_round_hops(records: list[tuple[str, int, bytes]], rounds: set[str]) -> dict[str, dict[str, float]]:
    """Per round of ``rounds``: its hops (:data:`HOPS`, seconds) from the services' records (the command and
    event topics of the close path). A round whose records are not all there is left out."""
    stamps: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for _topic, ts, value in records:
        try:
            env = _probe.decode(value)
        except msgspec.DecodeError:
            continue
        rid = env.round_id or env.payload.round_id
        if rid in rounds:
            stamps[rid][env.payload.type].append(ts)
    out: dict[str, dict[str, float]] = {}
    for rid, by in stamps.items():
        need = ("close_betting", "betting_closed", "card_drawn", "round_resolved", "round_settled")
        if not all(by.get(k) for k in need):
            continue
        close, closed = min(by["close_betting"]), min(by["betting_closed"])
        drawn = sorted(by["card_drawn"])
        resolved, settled = min(by["round_resolved"]), max(by["round_settled"] + by.get("bet_settled", []))
        out[rid] = _hops(close, closed, drawn[0], drawn[-1], resolved, settled)
    return out


def raw_round_hops(records: list[tuple[str, int, bytes]], rounds: set[str]) -> dict[str, dict[str, float]]:
    """Per round of ``rounds``: its hops (:data:`HOPS`, seconds) from the raw loop's records: the floor's
    "No more bets" record and each stage's output, ordered by the route still to go (the longest first):
    close, BettingClosed (to dealing), DrawCard (to the shoe), CardDrawn (to dealing), ... RoundResolved (to
    settlement), settled (to the floor)."""
    from bench.rawloop import Hop  # the raw loop's record shape

    dec = msgspec.msgpack.Decoder(Hop)
    by_round: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _topic, ts, value in records:
        try:
            hop = dec.decode(value)
        except msgspec.DecodeError:
            continue
        if hop.kind == "settled" and hop.round in rounds:
            by_round[hop.round].append((len(hop.route), ts))
    out: dict[str, dict[str, float]] = {}
    for rid, recs in by_round.items():
        ts = [t for _, t in sorted(recs, key=lambda x: -x[0])]
        if len(ts) < 6:  # close, closed, draw, drawn, resolved, settled at least
            continue
        # ts: close, closed, draw, drawn(1st), [draw, drawn]*, resolved, settled
        out[rid] = _hops(ts[0], ts[1], ts[3], ts[-3], ts[-2], ts[-1])
    return out


def _hops(close: int, closed: int, first_drawn: int, last_drawn: int, resolved: int, settled: int,
          ) -> dict[str, float]:
    ms = (closed - close, first_drawn - closed, last_drawn - first_drawn, resolved - last_drawn,
          settled - resolved, settled - close)
    return {name: v / 1000 for name, v in zip(HOPS, ms)}
