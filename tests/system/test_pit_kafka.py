"""The pit's, cage's and surveillance's endpoints on a real broker: a short floor (two tables, a shoe of 12
rounds each, closed), then the cage's day, hours and CSV agree to the cent with the ledger and with the
settlement service's RoundSettled totals read back from Kafka, and both closed shoes are verified."""

from __future__ import annotations

import asyncio
import csv
import io
import random

import httpx

from baccarat.money import CommissionMode
from baccarat.table import punto_banco_full
from contracts.events import BetSettled, RoundSettled, ShoeClosed
from services.floor.dealer import Clock, TableDealer
from services.projection.api import create_api
from services.projection.pit_state import day_and_hour
from tests.system.test_floor_kafka import SEATS, Floor

TOKENS = {"cage": "cage-token-0123456789", "surveillance": "surveillance-token-0123456789"}
TABLES = {"K1": punto_banco_full(), "K2": punto_banco_full(commission_mode=CommissionMode.ACCRUE)}


async def test_a_short_floors_cage_figures_agree_with_the_ledger_and_the_settlements(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap, projection=True)
    await floor.start()
    try:
        dealers = [TableDealer(floor.io, tid, cfg, SEATS, random.Random(tid), Clock(), timeout=60,
                               rounds_per_shoe=12) for tid, cfg in TABLES.items()]
        runs = await asyncio.gather(*(d.run(shoes=1) for d in dealers))
        assert all(r.rounds == 12 for r in runs), runs
        log = await floor.log()
        settled = [e for e in log if isinstance(e.payload, RoundSettled)]
        assert len(settled) == 24 and sum(isinstance(e.payload, ShoeClosed) for e in log) == 2
        days = {day_and_hour(e.occurred_at, 6)[0] for e in settled}
        host = floor.services["projection"].host
        for _ in range(200):  # the projection may still be folding the last round and the close
            states = {t: host.runner.tables[t].state for t in TABLES if t in host.runner.tables}
            if len(states) == 2 and all(len(s.pit.closed_shoes) == 1 and
                                        sum(h.rounds for f in s.pit.days.values() for h in f.hours.values()) == 12
                                        for s in states.values()):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the projection did not fold the floor")
        api = create_api(host, TOKENS)
        cage = {"Authorization": f"Bearer {TOKENS['cage']}"}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://croupier") as client:
            for tid in TABLES:
                win = sum(e.payload.table_result for e in settled if e.table_id == tid)
                drop = sum(e.payload.stake for e in log if e.table_id == tid and isinstance(e.payload, BetSettled)
                           and e.payload.category != "round_voided")
                ledger = host.runner.tables[tid].state.ledger
                got_win = got_drop = csv_win = 0
                for day in sorted(days):
                    v = (await client.get(f"/tables/{tid}/cage", params={"gaming_day": day}, headers=cage)).json()
                    assert v["day"]["win_cents"] == v["ledger_table_result_cents"]
                    got_win, got_drop = got_win + v["day"]["win_cents"], got_drop + v["day"]["drop_cents"]
                    r = await client.get("/cage/hourly.csv", params={"gaming_day": day, "table_id": tid}, headers=cage)
                    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
                    csv_win += sum(int(row["win_cents"]) for row in csv.DictReader(io.StringIO(r.text)))
                assert got_win == csv_win == win == ledger.table_result(tid)
                assert got_drop == drop > 0
            shoes = (await client.get("/surveillance/shoes", params={"gaming_day": max(days)},
                                      headers={"Authorization": f"Bearer {TOKENS['surveillance']}"})).json()
            assert sorted((s["table_id"], s["commitment"], s["cards"]) for s in shoes["shoes"]) == [
                ("K1", "verified", "verified"), ("K2", "verified", "verified")]
    finally:
        await floor.stop()
