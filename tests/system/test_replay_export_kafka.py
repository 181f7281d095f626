"""`croupier replay` and `croupier export` against a real broker: two tables play a few rounds (with the
projection, so the cage ledger is in the log), then the CLI reads them back from Kafka."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter

from typer.testing import CliRunner

from baccarat.table import Limits, no_vig_dragon, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.commands import CloseBetting, LoadShoe, OpenRound, PlaceBet
from contracts.events import (
    BetPlaced,
    BetSettled,
    BettingOpened,
    CardDealt,
    CardDrawn,
    LedgerPosted,
    RoundOpened,
    RoundSettled,
)
from croupier.cli import app
from croupier.log import EVENT_STREAMS, PROJECTION_STREAMS, read_events
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from tests.system.test_floor_kafka import Floor

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
ROUNDS = 3
runner = CliRunner()


async def _cli(*args: str):  # type: ignore[no-untyped-def]
    """The CLI runs its own event loop: run it in a thread."""
    return await asyncio.to_thread(runner.invoke, app, list(args))


async def _play(floor: Floor, tid: str, cfg) -> list[str]:  # type: ignore[no-untyped-def]
    """ROUNDS rounds by the simulated dealer; round 2 by hand, with a bet over the tie maximum."""
    clock = Clock()
    dealer = TableDealer(floor.io, tid, cfg, SEATS, random.Random(tid), clock, timeout=60)
    await dealer.open_table()
    await dealer.seat_players([Seat(9, "whale")])  # a registered player, who does not bet every round
    shoe = f"{tid}-S"
    await floor.io.send(T.SHOE_COMMANDS, command(tid, f"{tid}-load", clock(), LoadShoe(shoe_id=shoe, cut_at=60)))
    rounds = [f"{shoe}-{n}" for n in range(1, ROUNDS + 1)]
    for rid in rounds:
        if not rid.endswith("-2"):
            assert await dealer.play_round(shoe, rid)
            continue
        since = floor.io.log.mark(tid)
        await floor.io.send(T.DEALING_COMMANDS, command(tid, f"{rid}-open", clock(), OpenRound(round_id=rid,
                                                                                              shoe_id=shoe)))
        await floor.io.wait(tid, lambda e, rid=rid: isinstance(e.payload, BettingOpened)
                            and e.payload.round_id == rid, since, 60)
        for cid, seat, player, wager, cents in ((f"{tid}-ok", 1, "player-1", "banker", 2_500),
                                                (f"{tid}-big-tie", 9, "whale", "tie", 50_000)):
            await floor.io.send(T.WAGERING_BETS, command(tid, cid, clock(), PlaceBet(
                round_id=rid, seat=seat, player_id=player, wager=wager, amount_cents=cents)))
        await floor.io.send(T.WAGERING_COMMANDS, command(tid, f"{rid}-close", clock(), CloseBetting(round_id=rid)))
        await floor.io.wait(tid, lambda e, rid=rid: isinstance(e.payload, RoundSettled)
                            and e.payload.round_id == rid, since, 60)
    return rounds


async def test_replay_and_export_read_two_tables_back_from_kafka(kafka_bootstrap: str, tmp_path):
    floor = Floor(kafka_bootstrap, projection=True)
    await floor.start()
    try:
        tables = {"RX1": punto_banco_full(limits={Wager.TIE: Limits(500, 10_000)}),
                  "RX2": no_vig_dragon(panda=True)}
        played = dict(zip(tables, await asyncio.gather(*(_play(floor, t, c) for t, c in tables.items()))))
        s = floor.settings
        # the projection publishes the ledger after the fact: wait for the last round's settlement entries
        for _ in range(150):
            led = await read_events(s, "RX1", (T.PROJECTION_LEDGER,))
            if any(isinstance(r.env.payload, LedgerPosted) and r.env.payload.round_id == played["RX1"][-1]
                   and r.env.payload.kind.startswith("bet_") for r in led):
                break
            await asyncio.sleep(0.1)
        log = {t: [r.env for r in await read_events(s, t, EVENT_STREAMS + PROJECTION_STREAMS)] for t in tables}
    finally:
        await floor.stop()
    kafka = ["--bootstrap", kafka_bootstrap, "--prefix", s.topic_prefix]

    # the whole table, one line per round
    r = await _cli("replay", "--table", "RX1", "--json", *kafka)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert [x["round_id"] for x in summary["rounds"]] == played["RX1"]
    assert all(x["status"] == "settled" for x in summary["rounds"])
    sums = [e.payload for e in log["RX1"] if isinstance(e.payload, RoundSettled)]
    assert summary["totals"]["table_result"] == sum(x.table_result for x in sums)

    # one round: its cards with their rules and shoe positions, its rejection, settlements and ledger
    rid = played["RX1"][1]
    r = await _cli("replay", "--table", "RX1", "--round", rid, "--json", *kafka)
    assert r.exit_code == 0, r.output
    v = json.loads(r.stdout)
    dealt = [e.payload for e in log["RX1"] if isinstance(e.payload, CardDealt) and e.payload.round_id == rid]
    drawn = sorted((e.payload for e in log["RX1"] if isinstance(e.payload, CardDrawn) and e.payload.round_id == rid),
                   key=lambda d: d.card_number)
    cards = [e for e in v["timeline"] if e["event"] == "card"]
    assert [(c["card"], c["hand"], c["rule"], c["why"], c["shoe_position"]) for c in cards] == [
        (d.card, d.hand, d.rule, d.why, w.position) for d, w in zip(dealt, drawn)] and len(cards) >= 4
    rej = [e for e in v["timeline"] if e["event"] == "bet_rejected"]
    assert [(x["command_id"], x["reason"], x["player_id"], x["amount_cents"]) for x in rej] == [
        ("RX1-big-tie", "over_table_max", "whale", 50_000)]
    settled = [e["bet_id"] for e in v["timeline"] if e["event"] == "bet_settled"]
    assert settled == [e.payload.bet_id for e in log["RX1"] if isinstance(e.payload, BetSettled)
                       and e.payload.round_id == rid]
    placed = [e.payload.bet_id for e in log["RX1"] if isinstance(e.payload, BetPlaced) and e.payload.round_id == rid]
    assert sorted(settled) == sorted(placed) and v["total"]["bets"] == len(placed)
    assert v["ledger"] and [x["kind"] for x in v["ledger"]].count("stake_taken") == len(placed)

    # the other table between its first and second rounds: the first finished, nothing in progress
    first = next(e for e in log["RX2"] if isinstance(e.payload, RoundSettled)).occurred_at
    r = await _cli("replay", "--table", "RX2", "--at", first.isoformat(), *kafka)
    assert r.exit_code == 0, r.output
    assert "no round in progress" in r.stdout and f"last finished round: {played['RX2'][0]}" in r.stdout
    r = await _cli("replay", "--table", "RX2", "--shoe", "RX2-S", *kafka)
    assert r.exit_code == 0, r.output
    assert "Shoe RX2-S at table RX2: in_play, 3 round(s)" in r.stdout and "source csprng" in r.stdout

    # bad input against the broker: one line, exit 2. The CLI runs in this process, where the floor's services
    # ran: a JSON log line they left pending (a NotEnoughReplicas retry's repeat count, flushed at the next log
    # call) may land in the same captured stderr, so only the CLI's own lines are compared
    r = await _cli("replay", "--table", "RX9", *kafka)
    own = [line for line in r.stderr.splitlines() if line.strip() and not line.startswith("{")]
    assert r.exit_code == 2 and own == [f"error: no events for table 'RX9' under topic prefix "
                                        f"'{s.topic_prefix}': the log has 2 table(s): RX1, RX2 "
                                        "(did you mean RX2?)"], r.stderr
    r = await _cli("replay", "--table", "RX1", "--round", "RX1-S-9", *kafka)
    assert r.exit_code == 2 and "3 round(s): RX1-S-1, RX1-S-2, RX1-S-3" in r.stderr

    # export: every event of the table, decodable, with where it sits in Kafka
    out = tmp_path / "rx2.jsonl"
    r = await _cli("export", "--table", "RX2", "--format", "jsonl", "--out", str(out), *kafka)
    assert r.exit_code == 0, r.output
    lines = out.read_bytes().splitlines()
    assert [decode_event(x) for x in lines] == log["RX2"]
    assert r.stdout.startswith(f"exported {len(lines)} events of table RX2 to {out} (jsonl)")
    meta = [json.loads(x) for x in lines]
    assert {m["topic"] for m in meta} >= {s.topic(t) for t in EVENT_STREAMS} | {s.topic(T.PROJECTION_LEDGER)}
    assert len({m["partition"] for m in meta}) == 1 and all(m["kafka_timestamp_ms"] > 0 for m in meta)
    # typed Parquet of every table (no --table), read back with DuckDB and into the contract structs
    import duckdb

    from croupier.parquet import read_directory

    out = tmp_path / "floor"
    r = await _cli("export", "--format", "parquet", "--out", str(out), *kafka)
    assert r.exit_code == 0, r.output
    every = log["RX1"] + log["RX2"]
    counts = Counter(type(e.payload).__name__ for e in every)
    assert r.stdout.startswith(f"exported {len(every)} events of 2 table(s) to {out} (parquet): ")
    for name, n in counts.items():
        assert duckdb.sql(f"select count(*) from '{out}/{name}.parquet'").fetchall() == [(n,)], name
    settled = [e.payload for e in every if isinstance(e.payload, BetSettled)]
    assert duckdb.sql(f"select sum(payout), count(distinct table_id) from '{out}/BetSettled.parquet'").fetchall() == [
        (sum(x.payout for x in settled), 2)]
    back = read_directory(out)
    assert sorted((x.env for v in back.values() for x in v), key=lambda e: (e.table_id, e.stream, e.seq)) == sorted(
        every, key=lambda e: (e.table_id, e.stream, e.seq))
    # one shoe of one table from its second round on (occurred_at), as JSON lines
    since = next(e for e in log["RX1"] if isinstance(e.payload, RoundOpened)
                 and e.payload.round_id == played["RX1"][1]).occurred_at
    r = await _cli("export", "--table", "RX1", "--shoe", "RX1-S", "--since", since.isoformat(), "--format", "jsonl",
                   "--out", str(tmp_path / "rx1.jsonl"), *kafka)
    assert r.exit_code == 0, r.output
    got = [decode_event(x) for x in (tmp_path / "rx1.jsonl").read_bytes().splitlines()]
    assert got and all(e.occurred_at >= since for e in got)
    assert {e.payload.round_id for e in got if isinstance(e.payload, BetSettled)} == set(played["RX1"][1:])
