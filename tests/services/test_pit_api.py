"""The query API's pit, cage and surveillance endpoints (services/projection/pit_api.py): the hand-made day of
tests/unit/test_pit_views.py through the API (exact JSON and CSV bytes; 401/403/410/422), and whole shoes of
a simulated floor on the in-memory bus, where the endpoints agree to the cent with the ledger and with the
settlement service's RoundSettled totals, every closed shoe is verified, and a rebuild holds the same figures."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from baccarat.money import CommissionMode
from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.events import AdvantageBetFlagged, BetSettled, RoundSettled
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.api import create_api
from services.projection.core import ProjectionCore
from services.projection.pit_state import day_and_hour
from services.runtime.host import NullPublisher, ServiceHost
from services.runtime.settings import Settings
from tests.services.helpers import events, floor_bus
from tests.unit.test_pit_views import DAY, hand_made_day

TOKENS = {"dealer": "dealer-token-0123456789", "analyst": "analyst-token-0123456789",
          "cage": "cage-token-0123456789", "pit": "pit-token-0123456789",
          "surveillance": "surveillance-token-0123456789", "bettor": "bettor-token-0123456789"}
LEDGER = {"cage", "pit", "surveillance"}
CAGE_PATHS = ["/tables/T1/cage", "/cage/hourly", "/cage/hourly.csv", "/cage/hourly?table_id=T2"]
SURVEILLANCE_PATHS = ["/surveillance/players", "/surveillance/shoes", "/surveillance/irregularities"]
OWN = {T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS}


def _auth(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


@pytest.fixture(scope="module")
def client() -> TestClient:
    host = ServiceHost(ProjectionCore(), Settings(), NullPublisher())
    for e in hand_made_day():
        (host.runner.apply_own if e.stream in OWN else host.runner.absorb_input)(e)
    return TestClient(create_api(host, TOKENS))


@pytest.mark.parametrize("path", CAGE_PATHS + SURVEILLANCE_PATHS)
def test_each_pit_endpoint_by_role(client, path):
    sep = "&" if "?" in path else "?"
    path = f"{path}{sep}gaming_day={DAY}"
    allowed = LEDGER if path.startswith(("/tables", "/cage")) else {"surveillance"}
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"Authorization": "Bearer " + TOKENS["cage"][:-1] + "x"}).status_code == 401
    for role in TOKENS:
        assert client.get(path, headers=_auth(role)).status_code == (200 if role in allowed else 403), role


def test_the_hourly_csv_through_the_api(client):
    r = client.get(f"/cage/hourly.csv?gaming_day={DAY}&table_id=T1", headers=_auth("cage"))
    assert r.status_code == 200 and r.headers["content-type"] == "text/csv; charset=utf-8"
    assert r.headers["content-disposition"] == f'attachment; filename="croupier-hourly-{DAY}-T1.csv"'
    assert r.content == (
        b"table_id,gaming_day,hour_start_utc,hour_end_utc,rounds,drop_cents,win_cents,hold_pct\r\n"
        b"T1,2026-03-02,2026-03-02T07:00:00Z,2026-03-02T08:00:00Z,2,18000,-12500,-69.44\r\n"
        b"T1,2026-03-02,2026-03-02T09:00:00Z,2026-03-02T10:00:00Z,1,20000,20000,100.00\r\n"  # r4 voided: no round
        b"T1,2026-03-02,2026-03-02T15:00:00Z,2026-03-02T16:00:00Z,1,3000,-2850,-95.00\r\n")
    j = client.get(f"/cage/hourly?gaming_day={DAY}", headers=_auth("pit")).json()
    assert j["hold_rounding"] == "half_even"
    assert [(r["table_id"], r["hour"], r["win_cents"]) for r in j["rows"]] == [
        ("T1", 1, -12_500), ("T1", 3, 20_000), ("T1", 9, -2_850), ("T2", 2, -9_500), ("T2", 5, -2_850)]


def test_the_cage_view_through_the_api(client):
    v = client.get(f"/tables/T2/cage?gaming_day={DAY}", headers=_auth("cage")).json()
    assert v["day"]["win_cents"] == v["ledger_table_result_cents"] == -12_350
    assert [(c["player_id"], c["owed_cents"], c["collected_cents"], c["outstanding_cents"])
            for c in v["commission"]] == [("dave", 650, 500, 150)]
    assert client.get("/tables/NOPE/cage", headers=_auth("cage")).status_code == 404


def test_gaming_days_are_checked(client):
    assert client.get("/cage/hourly?gaming_day=tuesday", headers=_auth("cage")).status_code == 422
    r = client.get("/cage/hourly?gaming_day=2026-02-27", headers=_auth("cage"))
    assert r.status_code == 410 and "no longer held" in r.json()["detail"]
    # the day before the latest is still held, and a day to come is simply empty
    assert client.get("/cage/hourly?gaming_day=2026-03-01", headers=_auth("cage")).json()["rows"][0]["hour"] == 23
    assert client.get("/cage/hourly?gaming_day=2026-03-09", headers=_auth("cage")).json()["rows"] == []
    assert client.get("/surveillance/players?threshold_cents=0", headers=_auth("surveillance")).status_code == 422


def test_surveillance_through_the_api(client):
    s = _auth("surveillance")
    j = client.get(f"/surveillance/players?gaming_day={DAY}", headers=s).json()
    assert (j["threshold_cents"], j["raised"]) == (5_000, 1)
    assert [(p["rank"], p["player_id"], p["expected_gain_cents"], p["raised"]) for p in j["players"]] == [
        (1, "alice", 5_500, True), (2, "bob", 400, False)]
    j = client.get(f"/surveillance/players?gaming_day={DAY}&threshold_cents=300&raised_only=true", headers=s).json()
    assert [p["player_id"] for p in j["players"]] == ["alice", "bob"] and j["raised"] == 2
    j = client.get(f"/surveillance/players?gaming_day={DAY}&raised_only=true", headers=s).json()
    assert [p["player_id"] for p in j["players"]] == ["alice"]
    irr = client.get(f"/surveillance/irregularities?gaming_day={DAY}", headers=s).json()
    assert [(t["table_id"], t["voided_total"], t["irregularities_total"]) for t in irr["tables"]] == [("T1", 1, 1)]
    assert client.get(f"/surveillance/shoes?gaming_day={DAY}", headers=s).json() == {"gaming_day": DAY, "shoes": []}


def test_the_floor_by_role(client):
    at = "2026-03-02T15:30:00Z"
    public = client.get(f"/floor?at={at}")
    assert public.status_code == 200
    assert [set(t) for t in public.json()["tables"]] == [{"table_id", "variant", "shoe_id", "cards_out",
                                                         "rounds_this_shoe", "last_result"}] * 2
    for role in ("dealer", "analyst", "bettor"):
        assert client.get(f"/floor?at={at}", headers=_auth(role)).json() == public.json()
    assert "alice" not in public.text and "drop" not in public.text
    assert client.get("/floor", headers={"Authorization": "Bearer not-a-token-0123456789"}).status_code == 401
    for role in LEDGER:
        j = client.get(f"/floor?at={at}", headers=_auth(role)).json()
        assert j["shift"]["shift"] == 2 and j["totals"]["day"]["win_cents"] == -7_700
        assert [(t["table_id"], t["shift"]["win_cents"], t["open_alerts"]) for t in j["tables"]] == [
            ("T1", -2_850, 1), ("T2", 0, 1)]
        assert "alice" not in json_text(j)  # a count, never who
    naive = client.get("/floor?at=2026-03-02T15:30:00", headers=_auth("pit")).json()
    assert naive["at"] == "2026-03-02T15:30:00Z"
    assert client.get("/floor?at=soon").status_code == 422


def json_text(j: object) -> str:
    import json

    return json.dumps(j)


def test_the_openapi_document_lists_the_endpoints_and_their_security(client):
    doc = client.get("/openapi.json").json()
    for path in ("/tables/{table_id}/cage", "/cage/hourly", "/cage/hourly.csv", *SURVEILLANCE_PATHS):
        assert doc["paths"][path]["get"]["security"] == [{"bearer": []}], path
    assert "text/csv" in doc["paths"]["/cage/hourly.csv"]["get"]["responses"]["200"]["content"]


# ---- a simulated floor -----------------------------------------------------------------------------------
SEATS = [Seat(i, f"player-{i}") for i in range(1, 6)]
TABLES = {"P1": punto_banco_full(), "D2": no_vig_dragon(panda=True),
          "A3": punto_banco_full(commission_mode=CommissionMode.ACCRUE)}


@pytest.fixture(scope="module")
def floor():
    import asyncio

    async def run():
        bus, _ = floor_bus(seed=41)
        proj = bus.add(ProjectionCore())
        io = MemoryFloorIO(bus)
        for tid, cfg in TABLES.items():
            await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
        return bus, proj

    return asyncio.run(run())


def test_the_floor_endpoints_agree_with_the_ledger_and_the_settlements(floor):
    bus, proj = floor
    client = TestClient(create_api(proj, TOKENS))
    settled = [e for e in events(bus, T.SETTLEMENT_EVENTS) if isinstance(e.payload, RoundSettled)]
    day = day_and_hour(settled[0].occurred_at, 6)[0]
    assert {day_and_hour(e.occurred_at, 6)[0] for e in settled} == {day}  # a shoe each, within the hour
    cage = _auth("cage")
    for tid in TABLES:
        ledger = proj.runner.tables[tid].state.ledger
        win = sum(e.payload.table_result for e in settled if e.table_id == tid)
        drop = sum(e.payload.stake for e in events(bus, T.SETTLEMENT_EVENTS) if e.table_id == tid
                   and isinstance(e.payload, BetSettled) and e.payload.category != "round_voided")
        v = client.get(f"/tables/{tid}/cage?gaming_day={day}", headers=cage).json()
        assert v["day"]["win_cents"] == v["ledger_table_result_cents"] == ledger.table_result(tid) == win
        assert v["day"]["drop_cents"] == drop > 0
        assert v["day"]["rounds"] == sum(1 for e in settled if e.table_id == tid)
        assert sum(r["win_cents"] for r in v["hours"]) == win and sum(s["drop_cents"] for s in v["shifts"]) == drop
        # commission: what was deducted or accrued is the ledger's commission account for the day
        commission = ledger.balances(gaming_day=day).get(f"table:{tid}:commission", 0)
        assert v["commission_totals"]["owed_cents"] == commission
        if tid == "A3":
            assert commission > 0 and v["commission_totals"]["deducted_cents"] == 0
            assert v["commission_totals"]["outstanding_cents"] == -sum(
                c for a, c in ledger.balances().items() if a.endswith(":commission_owed"))
    floor_ = client.get("/floor", params={"at": settled[-1].occurred_at.isoformat()}, headers=_auth("pit")).json()
    assert floor_["totals"]["day"]["win_cents"] == sum(e.payload.table_result for e in settled)
    shoes = client.get(f"/surveillance/shoes?gaming_day={day}", headers=_auth("surveillance")).json()["shoes"]
    assert sorted(s["table_id"] for s in shoes) == sorted(TABLES)
    assert {(s["commitment"], s["cards"]) for s in shoes} == {("verified", "verified")}
    flagged = [e for e in events(bus, T.PROJECTION_ALERTS) if isinstance(e.payload, AdvantageBetFlagged)]
    ranking = client.get(f"/surveillance/players?gaming_day={day}&threshold_cents=1",
                         headers=_auth("surveillance")).json()
    assert sum(p["flagged_bets"] for p in ranking["players"]) == len(flagged) > 0
    assert sum(p["expected_gain_cents"] for p in ranking["players"]) == sum(
        e.payload.expected_gain_cents for e in flagged)
    gains = [p["expected_gain_cents"] for p in ranking["players"]]
    assert gains == sorted(gains, reverse=True)


async def test_a_rebuild_holds_the_same_pit_figures(floor):
    bus, proj = floor
    fresh = bus.add(ProjectionCore())
    bus.remove(fresh)

    async def read(topic):
        return list(bus.topics.get(topic, []))

    await fresh.rebuild(read)
    for tid in TABLES:
        assert fresh.runner.tables[tid].state.pit == proj.runner.tables[tid].state.pit
