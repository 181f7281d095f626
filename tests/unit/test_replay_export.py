"""`croupier replay` and `croupier export` without a broker: the pure replay core and the exporters on logs
produced by the services on the in-memory bus, and the CLI's output and error paths."""

from __future__ import annotations

import asyncio
import io
import json
import random
from datetime import datetime, timedelta, timezone

import msgspec
import pytest
from typer.testing import CliRunner

from baccarat.table import Limits, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.commands import CloseBetting, LoadShoe, OpenRound, PlaceBet
from contracts.envelope import Envelope
from contracts.events import (
    BetSettled,
    CardDealt,
    CardDrawn,
    LedgerPosted,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    ShoeLoaded,
)
from croupier import replay as replay_mod
from croupier.cli import app
from croupier.export import PARQUET_COLUMNS, jsonl_line, parquet_table, write_jsonl, write_parquet
from croupier.log import LogRecord
from croupier.replay import ReplayError, TableStory, iso, money, parse_time, render, replay
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.runtime.core import command
from tests.services.helpers import floor_bus

UTC = timezone.utc
SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
EVIL = "[bold red]evil[/bold red]"  # a player id that Rich would take for markup
STREAMS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.PROJECTION_LEDGER,
           T.PROJECTION_ALERTS)


async def _floor() -> list[LogRecord]:
    """T1: one whole 8-deck shoe (with the projection, so the ledger is there). T2: two rounds, then a round
    by hand with rejected bets (over the tie limit, a wager not offered, a late bet) by a player whose id
    looks like Rich markup."""
    bus, _ = floor_bus(seed=11)
    bus.add(ProjectionCore())
    fio = MemoryFloorIO(bus)
    await TableDealer(fio, "T1", punto_banco_full(), SEATS, random.Random(1), Clock()).run(shoes=1)
    clock = Clock(start=datetime(2026, 1, 2, tzinfo=UTC))
    cfg = punto_banco_full(limits={Wager.TIE: Limits(500, 10_000)})
    t2 = TableDealer(fio, "T2", cfg, [Seat(1, EVIL), Seat(2, "p2")], random.Random(2), clock)
    await t2.open_table()
    await fio.send(T.SHOE_COMMANDS, command("T2", "load", clock(), LoadShoe(shoe_id="S", cut_at=40)))
    assert await t2.play_round("S", "S-1") and await t2.play_round("S", "S-2")
    await fio.send(T.DEALING_COMMANDS, command("T2", "open-3", clock(), OpenRound(round_id="S-3", shoe_id="S")))

    def bet(cid: str, wager: str, cents: int) -> object:
        return command("T2", cid, clock(), PlaceBet(round_id="S-3", seat=1, player_id=EVIL, wager=wager,
                                                    amount_cents=cents))

    for b in (bet("ok", "banker", 2500), bet("over", "tie", 20_000), bet("nope", "dragon_7", 500)):
        await fio.send(T.WAGERING_BETS, b)  # type: ignore[arg-type]
    await fio.send(T.WAGERING_COMMANDS, command("T2", "close-3", clock(), CloseBetting(round_id="S-3")))
    await fio.send(T.WAGERING_BETS, bet("late", "player", 2500))  # type: ignore[arg-type]
    out = []
    for stream in STREAMS:
        for rec in bus.topics.get(stream, []):
            env = decode_event(rec.value)
            out.append(LogRecord(rec.topic, rec.partition, rec.offset,
                                 int(env.occurred_at.timestamp() * 1000) + 7, env))
    return out


@pytest.fixture(scope="module")
def records() -> list[LogRecord]:
    return asyncio.run(_floor())


@pytest.fixture(scope="module")
def envs(records: list[LogRecord]) -> list[Envelope]:
    return [r.env for r in records]


def _of(envs: list[Envelope], table: str, kind: type, round_id: str | None = None) -> list[Envelope]:
    return [e for e in envs if e.table_id == table and isinstance(e.payload, kind)
            and (round_id is None or getattr(e.payload, "round_id", None) == round_id)]


# ---- one round -------------------------------------------------------------------------------------------
def test_round_timeline_lists_its_cards_rules_positions_and_settlements(envs):
    rid = "T1-shoe-1-round-3"
    v = replay(envs, "T1", round_id=rid)
    assert (v["view"], v["round_id"], v["shoe_id"], v["number"], v["status"]) == ("round", rid, "T1-shoe-1", 3,
                                                                                  "settled")
    kinds = [e["event"] for e in v["timeline"]]
    # the story in order: opened, bets, "No more bets", four cards, the points, the third card, result, money
    assert kinds[:2] == ["round_opened", "betting_opened"]
    close = kinds.index("betting_closed")
    assert set(kinds[2:close]) == {"bet_placed"} and close == 2 + v["bets_placed"]
    assert kinds[close + 1:close + 5] == ["card"] * 4
    assert kinds[close + 5] == "points_announced"
    assert kinds[close + 6:close + 7] == ["card"]
    assert kinds[close + 7] == "round_resolved"
    assert set(kinds[close + 8:-1]) == {"bet_settled"} and kinds[-1] == "round_settled"

    cards = [e for e in v["timeline"] if e["event"] == "card"]
    # concrete: this seeded shoe's third round (Player 6s Kd, Banker 7d 8s As: a tie at 6)
    assert [(c["card"], c["hand"], c["hand_position"], c["rule"]) for c in cards] == [
        ("6s", "player", 1, "initial"), ("7d", "banker", 1, "initial"), ("Kd", "player", 2, "initial"),
        ("8s", "banker", 2, "initial"), ("As", "banker", 3, "table_2")]
    assert [c["shoe_position"] for c in cards] == [20, 21, 22, 23, 24]
    assert [c["cards_left"] for c in cards] == [395, 394, 393, 392, 391]
    assert cards[0]["why"] == "Player card 1: initial deal (13:69F-3.7)"
    assert "Table 2 row 5 column stood" in cards[4]["why"] and (cards[4]["row"], cards[4]["column"]) == (5, "stood")
    # and the same as the log says, card by card: CardDealt in order joined with CardDrawn by number
    dealt = [e.payload for e in _of(envs, "T1", CardDealt, rid)]
    drawn = sorted((e.payload for e in _of(envs, "T1", CardDrawn, rid)), key=lambda d: d.card_number)
    assert [(c["card"], c["why"], c["shoe_position"]) for c in cards] == [
        (d.card, d.why, w.position) for d, w in zip(dealt, drawn)]
    pts = next(e for e in v["timeline"] if e["event"] == "points_announced")
    assert (pts["player_points"], pts["banker_points"], pts["natural"]) == (6, 5, False)
    res = v["result"]
    assert (res["winner"], res["player_cards"], res["banker_cards"], res["cards_required"]) == (
        "tie", ["6s", "Kd"], ["7d", "8s", "As"], 5)

    settled = [e for e in v["timeline"] if e["event"] == "bet_settled"]
    want = [e.payload for e in _of(envs, "T1", BetSettled, rid)]
    assert [(s["bet_id"], s["wager"], s["stake"], s["result"], s["payout"], s["commission"]) for s in settled] == [
        (w.bet_id, w.wager, w.stake, w.result, w.payout, w.commission) for w in want]
    by_wager = {(s["seat"], s["wager"]): s for s in settled}
    assert (by_wager[(1, "player")]["result"], by_wager[(1, "player")]["payout"]) == ("void", 49_000)  # push
    assert (by_wager[(1, "tie")]["result"], by_wager[(1, "tie")]["payout"]) == ("win", 4_500)  # 8 to 1
    assert by_wager[(1, "cards_5")]["payout"] == 24_000 and by_wager[(1, "cards_6")]["result"] == "lose"
    total = v["total"]
    assert (total["bets"], total["stakes"], total["payouts"], total["table_result"]) == (10, 129_500, 134_500,
                                                                                         -5_000)
    book = next(e for e in v["timeline"] if e["event"] == "betting_closed")
    assert book["count"] == 10 and book["total_cents"] == 129_500 and v["book"] == book["bets"]


def test_round_ledger_entries_balance_and_cover_the_book(envs):
    rid = "T1-shoe-1-round-2"
    v = replay(envs, "T1", round_id=rid)
    ledger = v["ledger"]
    want = [e.payload.entry_id for e in _of(envs, "T1", LedgerPosted, rid)]
    assert [x["entry_id"] for x in ledger] == want and ledger
    assert all(sum(line["amount_cents"] for line in x["lines"]) == 0 for x in ledger)
    kinds = [x["kind"] for x in ledger]
    assert kinds.count("stake_taken") == len(v["book"]) == 6
    assert kinds.count("bet_won") + kinds.count("bet_lost") + kinds.count("bet_voided") == 6
    assert kinds.count("commission_deducted") == 1  # the one winning banker bet
    # without the projection's streams the ledger is "not in the log", not "empty"
    bare = [e for e in envs if e.stream != T.PROJECTION_LEDGER]
    assert replay(bare, "T1", round_id=rid)["ledger"] is None


def test_rejections_late_bets_and_no_markup_injection(envs):
    v = replay(envs, "T2", round_id="S-3")
    rej = [e for e in v["timeline"] if e["event"] == "bet_rejected"]
    assert [(r["command_id"], r["reason"], r["seat"], r["player_id"], r["wager"], r["amount_cents"])
            for r in rej] == [("over", "over_table_max", 1, EVIL, "tie", 20_000),
                              ("nope", "wager_not_offered", 1, EVIL, "dragon_7", 500),
                              ("late", "betting_closed", 1, EVIL, "player", 2_500)]
    kinds = [e["event"] for e in v["timeline"]]
    # the late bet is told after the money of the round, the others before "No more bets"
    assert kinds.index("betting_closed") < kinds.index("card")
    assert kinds.index("betting_closed") > max(i for i, k in enumerate(kinds) if k == "bet_rejected"
                                               and v["timeline"][i]["command_id"] != "late")
    assert kinds[-1] == "bet_rejected" and v["timeline"][-1]["command_id"] == "late"
    assert v["bets_placed"] == 1 and v["bets_rejected"] == 3
    assert [x["kind"] for x in v["ledger"]].count("stake_taken") == 1
    from rich.console import Console

    con = Console(file=io.StringIO(), width=200, highlight=False)
    render(v, con)
    text = con.file.getvalue()
    assert EVIL in text and "over_table_max" in text and "wager_not_offered" in text


# ---- a shoe, the table at a moment, the whole table -------------------------------------------------------
def test_shoe_has_every_round_and_its_load_cut_burn_and_verified_reveal(envs):
    v = replay(envs, "T1", shoe_id="T1-shoe-1")
    opened = [e.payload.round_id for e in _of(envs, "T1", RoundOpened)]
    assert [r["round_id"] for r in v["rounds"]] == opened and len(opened) > 60
    assert all(r["status"] == "settled" for r in v["rounds"])
    loaded = _of(envs, "T1", ShoeLoaded)[0].payload
    assert v["loaded"]["commitment"] == loaded.commitment and v["loaded"]["cards"] == 416
    assert v["cut"]["cut_at"] > 0 and v["burn"]["exposed"]
    assert v["closed"]["commitment_verified"] is True and len(v["closed"]["order"]) == 416
    assert v["dealt"] == len(_of(envs, "T1", CardDrawn)) == v["closed"]["cards_dealt"] - v["burned"]
    assert v["cards_left"] == 416 - v["burned"] - v["dealt"] and v["cutting_card_out"]
    assert v["finished"]["rounds"] == len(opened) and v["status"] == "closed"


def test_at_between_two_rounds_shows_the_finished_round_and_none_in_progress(envs):
    settled2 = _of(envs, "T1", RoundSettled, "T1-shoe-1-round-2")[0].occurred_at
    opened3 = _of(envs, "T1", RoundOpened, "T1-shoe-1-round-3")[0].occurred_at
    assert settled2 < opened3
    at = settled2 + (opened3 - settled2) / 2
    v = replay(envs, "T1", at=at)
    assert v["view"] == "at" and v["round_in_progress"] is None
    done = v["last_finished_round"]
    assert done["round_id"] == "T1-shoe-1-round-2" and done["status"] == "settled"
    assert done["timeline"][-1]["event"] == "round_settled"
    assert v["config"]["spec"]["variant"] == "punto_banco" and "tie" in v["config"]["spec"]["wagers"]
    shoe = v["shoe"]
    drawn = [e.payload for e in _of(envs, "T1", CardDrawn) if e.occurred_at <= at]
    assert shoe["shoe_id"] == "T1-shoe-1" and shoe["status"] == "in_play" and shoe["closed"] is None
    assert shoe["dealt"] == len(drawn) == 9 and shoe["cards_left"] == drawn[-1].cards_left
    assert shoe["seen"][1:] == [d.card for d in drawn] and shoe["rounds_played"] == 2


def test_at_during_betting_shows_the_round_so_far(envs):
    rid = "T1-shoe-1-round-3"
    placed = [e for e in envs if e.table_id == "T1" and e.round_id == rid and type(e.payload).__name__ == "BetPlaced"]
    at = placed[2].occurred_at + timedelta(milliseconds=1)
    v = replay(envs, "T1", at=at)
    ip = v["round_in_progress"]
    assert ip["round_id"] == rid and ip["status"] == "betting"
    assert [e["event"] for e in ip["timeline"]] == ["round_opened", "betting_opened"] + ["bet_placed"] * 3
    assert ip["result"] is None and ip["total"] is None
    assert v["last_finished_round"]["round_id"] == "T1-shoe-1-round-2"


def test_summary_one_line_per_round(envs):
    v = replay(envs, "T1")
    resolved = {e.payload.round_id: e.payload for e in _of(envs, "T1", RoundResolved)}
    sums = {e.payload.round_id: e.payload for e in _of(envs, "T1", RoundSettled)}
    assert [r["round_id"] for r in v["rounds"]] == list(resolved)
    for r in v["rounds"]:
        res, s = resolved[r["round_id"]], sums[r["round_id"]]
        assert (r["winner"], r["player_points"], r["banker_points"], r["banker_cards"]) == (
            res.winner, res.player_points, res.banker_points, res.banker_cards)
        assert (r["bets"], r["stakes"], r["payouts"], r["table_result"]) == (s.bets, s.stakes, s.payouts,
                                                                             s.table_result)
    assert v["totals"]["table_result"] == sum(s.table_result for s in sums.values())
    assert [s["shoe_id"] for s in v["shoes"]] == ["T1-shoe-1"] and v["shoes"][0]["commitment_verified"]
    # the dealer's last OpenRound was refused (end of shoe): told, outside any round
    assert [o["reason"] for o in v["outside_rounds"]] == ["shoe_complete"]
    assert msgspec.json.decode(msgspec.json.encode(v)) == v  # JSON-ready as it is


# ---- bad input --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,message", [
    ({"round_id": "T1-shoe-1-round-999"}, "unknown round 'T1-shoe-1-round-999' at table T1: 83 rounds, from "
                                          "T1-shoe-1-round-1 to T1-shoe-1-round-83"),
    ({"shoe_id": "T1-shoe-2"}, "unknown shoe 'T1-shoe-2' at table T1: 1 shoe(s): T1-shoe-1"),
    ({"at": datetime(2025, 12, 31, 23, 0, tzinfo=UTC)}, "is outside the log of table T1: its events span "
                                                         "2026-01-01T00:00:00.010000Z to 2026-01-01T00:00:07.450000Z"),
    ({"at": datetime(2026, 1, 1, 0, 0, 8, tzinfo=UTC)}, "2026-01-01T00:00:08Z is outside the log"),
    ({"round_id": "x", "shoe_id": "y"}, "give one of --round, --shoe or --at"),
])
def test_unknown_ids_and_times_outside_the_log(envs, kwargs, message):
    with pytest.raises(ReplayError) as e:
        replay(envs, "T1", **kwargs)
    assert message in str(e.value)


def test_unknown_table_and_unparseable_times(envs):
    with pytest.raises(ReplayError, match="no events for table 'T9'"):
        TableStory(envs, "T9")
    with pytest.raises(ReplayError, match="cannot read 'yesterday' as a time"):
        parse_time("yesterday")
    assert parse_time("2026-01-01T00:00:05") == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)  # naive: UTC
    assert parse_time("2026-01-01T01:00:05+01:00") == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert parse_time("2026-01-01T00:00:05.25Z") == datetime(2026, 1, 1, 0, 0, 5, 250_000, tzinfo=UTC)
    assert iso(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
    assert (money(-123_456), money(5), money(0)) == ("-1,234.56", "0.05", "0.00")


# ---- export -------------------------------------------------------------------------------------------------
def test_jsonl_round_trip(records):
    buf = io.BytesIO()
    t1 = [r for r in records if r.env.table_id == "T1"]
    assert write_jsonl(t1, buf) == len(t1)
    lines = buf.getvalue().splitlines()
    assert len(lines) == len(t1)
    for line, rec in zip(lines, t1):
        assert decode_event(line) == rec.env  # the envelope, exactly
        d = json.loads(line)
        assert (d["topic"], d["partition"], d["offset"], d["kafka_timestamp_ms"]) == (
            rec.topic, rec.partition, rec.offset, rec.timestamp_ms)
    assert {json.loads(x)["stream"] for x in lines} >= {T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS,
                                                         T.SETTLEMENT_EVENTS, T.PROJECTION_LEDGER}
    # the wire bytes are kept as they are: the line is the encoded envelope plus four fields
    from contracts.codecs import encode

    assert jsonl_line(t1[0]).startswith(encode(t1[0].env)[:-1] + b',"topic":')


def test_parquet_rows_and_columns(records, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    t1 = [r for r in records if r.env.table_id == "T1"]
    path = tmp_path / "t1.parquet"
    assert write_parquet(t1, str(path)) == len(t1)
    table = pq.read_table(path)
    assert table.num_rows == len(t1) and tuple(table.column_names) == PARQUET_COLUMNS
    rows = table.to_pylist()
    for row, rec in zip(rows, t1):
        env = rec.env
        assert (row["event_id"], row["stream"], row["seq"], row["round_id"], row["topic"], row["offset"],
                row["kafka_timestamp_ms"]) == (env.event_id, env.stream, env.seq, env.round_id, rec.topic,
                                               rec.offset, rec.timestamp_ms)
        assert row["occurred_at"] == env.occurred_at
        assert row["type"] == json.loads(row["payload_json"])["type"]
    assert parquet_table(t1[:3]).num_rows == 3


# ---- the CLI (Kafka replaced by the in-memory log; the unreachable broker for real) --------------------------
runner = CliRunner()


@pytest.fixture
def fake_kafka(monkeypatch, records):
    async def read_table(settings, table_id, **_):  # type: ignore[no-untyped-def]
        return [r for r in records if r.env.table_id == table_id]

    async def known_tables(settings, **_):  # type: ignore[no-untyped-def]
        return ["T1", "T2"]

    monkeypatch.setattr(replay_mod, "read_table", read_table)
    monkeypatch.setattr(replay_mod, "known_tables", known_tables)


def _one_line_error(r, code: int, message: str) -> None:  # type: ignore[no-untyped-def]
    assert r.exit_code == code, (r.exit_code, r.output)
    err = r.stderr.strip()
    assert err.startswith("error:") and "\n" not in err and message in err, err
    assert "Traceback" not in r.output and r.stdout == ""


def test_cli_replay_json_and_human(fake_kafka, envs):
    r = runner.invoke(app, ["replay", "--table", "T1", "--round", "T1-shoe-1-round-3", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == replay(envs, "T1", round_id="T1-shoe-1-round-3")
    r = runner.invoke(app, ["replay", "--table", "T1", "--round", "T1-shoe-1-round-3"])
    assert r.exit_code == 0, r.output
    assert "Round T1-shoe-1-round-3" in r.stdout and "round total" in r.stdout
    r = runner.invoke(app, ["replay", "--table", "T2", "--at", "2026-01-02T00:00:00.1"])
    assert r.exit_code == 0, r.output
    assert "Table T2 at 2026-01-02 00:00:00.100" in r.stdout
    r = runner.invoke(app, ["replay", "--table", "T2", "--shoe", "S", "--json"])
    assert r.exit_code == 0 and [x["round_id"] for x in json.loads(r.stdout)["rounds"]] == ["S-1", "S-2", "S-3"]
    r = runner.invoke(app, ["replay", "--table", "T2"])
    assert r.exit_code == 0 and "S-3" in r.stdout and "3 round(s), 3 settled" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--table", "T9"], "no events for table 'T9': the log has 2 table(s): T1, T2"),
    (["--table", "T1", "--round", "nope"], "unknown round 'nope' at table T1: 83 rounds, from T1-shoe-1-round-1"),
    (["--table", "T1", "--shoe", "nope"], "unknown shoe 'nope' at table T1: 1 shoe(s): T1-shoe-1"),
    (["--table", "T1", "--at", "2030-01-01T00:00:00Z"], "its events span 2026-01-01T00:00:00.010000Z to "),
    (["--table", "T1", "--at", "tuesday"], "cannot read 'tuesday' as a time"),
    (["--table", "T1", "--round", "a", "--at", "2026-01-01"], "give one of --round, --shoe or --at"),
])
def test_cli_replay_bad_input_is_one_line_exit_2(fake_kafka, args, message):
    _one_line_error(runner.invoke(app, ["replay", *args]), 2, message)


@pytest.mark.parametrize("command", [["replay", "--table", "T1"],
                                     ["export", "--table", "T1", "--format", "jsonl", "--out", "-"]])
def test_cli_unreachable_broker_is_one_line_exit_1(command):
    r = runner.invoke(app, [*command, "--bootstrap", "127.0.0.1:1", "--prefix", "nowhere."])
    _one_line_error(r, 1, "cannot reach Kafka at 127.0.0.1:1")


def test_cli_export_jsonl_parquet_and_stdout(fake_kafka, records, tmp_path, monkeypatch):
    t1 = [r for r in records if r.env.table_id == "T1"]
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["export", "--table", "T1", "--format", "jsonl"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"exported {len(t1)} events of table T1 to T1.jsonl (jsonl): shoe.events ")
    assert len(r.stdout.strip().splitlines()) == 1
    lines = (tmp_path / "T1.jsonl").read_bytes().splitlines()
    assert [decode_event(x) for x in lines] == [x.env for x in t1]
    r = runner.invoke(app, ["export", "--table", "T2", "--format", "jsonl", "--out", "-"])
    assert r.exit_code == 0, r.output
    t2 = [x.env for x in records if x.env.table_id == "T2"]
    assert [decode_event(x) for x in r.stdout_bytes.splitlines()] == t2
    assert r.stderr.startswith(f"exported {len(t2)} events of table T2 to stdout")
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from croupier.parquet import read_directory

    # parquet: a directory of typed tables, one per event type
    r = runner.invoke(app, ["export", "--table", "T1", "--format", "parquet", "--out", str(tmp_path / "x")])
    assert r.exit_code == 0, r.output
    back = read_directory(tmp_path / "x")
    assert sum(len(v) for v in back.values()) == len(t1) and len(back) >= 15
    assert sorted(x.env.event_id for v in back.values() for x in v) == sorted(x.env.event_id for x in t1)
    # parquet-json: the former layout, one file, the payload as JSON text
    r = runner.invoke(app, ["export", "--table", "T1", "--format", "parquet-json", "--out",
                            str(tmp_path / "x.parquet")])
    assert r.exit_code == 0, r.output
    table = pq.read_table(tmp_path / "x.parquet")
    assert table.num_rows == len(t1) and table.column_names == list(PARQUET_COLUMNS)
    _one_line_error(runner.invoke(app, ["export", "--table", "T1", "--format", "csv"]), 2, "unknown format 'csv': jsonl, parquet or parquet-json")
    _one_line_error(runner.invoke(app, ["export", "--table", "T9", "--format", "jsonl"]), 2,
                    "no events for table 'T9'")
    _one_line_error(runner.invoke(app, ["export", "--table", "T1", "--format", "jsonl", "--out",
                                        str(tmp_path / "no" / "such" / "dir.jsonl")]), 2, "cannot write")
