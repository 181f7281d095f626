"""The cage's pages in the pit app on the in-memory bus: shift statements (HTML, JSON, CSV), the desk's fills,
credits and the count team's entry (only the actions valid now, by role; refusals shown with the cage's
reason code, nothing booked), ratings and the currency reporting list, and who may see each."""

from __future__ import annotations

import re

import httpx
import pytest

from baccarat.money import format_cents
from contracts import topics as T
from contracts.cage import (
    CreditLineSet,
    CreditRequested,
    DropBoxCounted,
    FillIssued,
    FillReceived,
    FillRequested,
    RecordCloser,
    RecordOpener,
)
from contracts.events import CommandRejected
from croupier.cage_pages import MemoryCageLog
from croupier.pit import create_pit_app
from services.cage.core import CageCore
from services.cage.patrons import currency, ratings
from services.cage.statement import statements
from services.projection.cage_desk import build_command, parse_count
from services.projection.core import ProjectionCore
from services.runtime.core import command
from services.runtime.credentials import Credentials
from tests.cagedesk import AT, chips
from tests.cagefloor import shift_on_floor
from tests.services.helpers import events, floor_bus

TOKENS = {"dealer": "dealer-token-0123456789", "bettor": "bettor-token-0123456789",
          "cage": "cage-token-01234567890", "pit": "pit-token-012345678901",
          "surveillance": "surveillance-token-0123", "analyst": "analyst-token-01234567",
          "count_team": "count-team-token-012345"}
BASE = "http://pit.test"
FORM = {"Origin": BASE, "Content-Type": "application/x-www-form-urlencoded"}
ALL = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)


async def floor():  # type: ignore[no-untyped-def]
    """A table's whole shift on the floor driver (a fill, a high roller's cash), and table T9 with an opener
    only ($1,000: forty $25 chips), for the desk."""
    bus, _ = floor_bus(7)
    projection = bus.add(ProjectionCore())
    bus.add(CageCore())
    await shift_on_floor("T1", seed=1, high_roller_cents=1_200_000, bus=bus)
    log = MemoryCageLog(bus)
    got = await log.send(command("T9", "open-T9", AT, RecordOpener(
        shift_id="T9-s1", gaming_day="2026-01-01", pit="pit-2", chips=chips((2_500, 40)), total_cents=100_000,
        supervisor_id="sup-1"), actor="dl-9"))
    assert [type(e.payload).__name__ for e in got] == ["ShiftOpened"]
    pit = create_pit_app(projection, Credentials(TOKENS), ready=lambda: True, replay=False, cage_log=log)
    return bus, pit, log


@pytest.fixture
async def env():  # type: ignore[no-untyped-def]
    return await floor()


def client(pit) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=pit.app), base_url=BASE, follow_redirects=False)


async def as_role(pit, role: str) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    c = client(pit)
    r = await c.post("/login", content=f"token={TOKENS[role]}&next=/", headers=FORM)
    assert r.status_code == 303, r.text
    return c


def bearer(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


def forms(html: str) -> list[str]:
    """The desk's action forms on a page: ``<table>/<action>[-<slip>]`` of each."""
    return re.findall(r'id="act-([^"]+)"', html)


async def act(c: httpx.AsyncClient, table: str, action: str, **fields: str) -> httpx.Response:
    from urllib.parse import urlencode

    return await c.post(f"/cage/desk/{table}/{action}", content=urlencode(fields), headers=FORM)


def outcome(r: httpx.Response) -> str:
    m = re.search(r'id="outcome" class="(\w+)" data-reason="([^"]*)"', r.text)
    assert m, r.text[:2000]
    return m.group(2) or m.group(1)


async def test_statement_json_csv_and_html_are_the_log_re_derived(env):  # type: ignore[no-untyped-def]
    bus, pit, _ = env
    rows = statements(events(bus, T.CAGE_EVENTS))
    t1 = next(r for r in rows if r.table_id == "T1")
    assert t1.closed and t1.counted and t1.fill_slips >= 1 and t1.variance == 0
    async with client(pit) as c:
        got = (await c.get("/cage/statement.json", headers=bearer("pit"))).json()
        assert got["statements"] == [r.as_dict() for r in rows] and got["alerts"] == []
        j = next(s for s in got["statements"] if s["table_id"] == "T1")
        assert j["win"] == j["game_result"] == t1.closer - 100_000 + t1.credits - t1.fills + t1.drop
        by_pit = (await c.get("/cage/statement.json?by=pit", headers=bearer("cage"))).json()["statements"]
        assert [(s["pit"], s["tables"], s["opener"]) for s in by_pit] == [("pit-1", 1, 100_000), ("pit-2", 1, 100_000)]
        csv = await c.get("/cage/statement.csv", headers=bearer("surveillance"))
        assert csv.headers["content-type"].startswith("text/csv")
        lines = csv.text.splitlines()
        assert lines[0].split(",")[:4] == ["table_id", "shift_id", "gaming_day", "pit"] and len(lines) == 3
        assert lines[1].startswith("T1,T1-s1,2026-01-01,pit-1,100000,")
        assert (await c.get("/cage/statement.json?by=hour", headers=bearer("pit"))).status_code == 422
        for role, code in (("analyst", 403), ("dealer", 403), ("bettor", 403)):
            assert (await c.get("/cage/statement.json", headers=bearer(role))).status_code == code
        assert (await c.get("/cage/statement.json")).status_code == 401
        r = await c.get("/cage/statement")
        assert r.status_code == 303 and r.headers["location"].startswith("/login?next=%2Fcage%2Fstatement")
    c = await as_role(pit, "pit")
    html = (await c.get("/cage/statement")).text
    await c.aclose()
    assert format_cents(t1.win) in html and format_cents(t1.drop) in html and "None: every closed" in html
    assert "T9 · T9-s1 · 2026-01-01" in html  # the open shift: its figures "-" until counted


async def test_fill_request_issue_receive_each_by_its_role_only_when_valid(env):  # type: ignore[no-untyped-def]
    bus, pit, _ = env
    pitc, cage, dealer = await as_role(pit, "pit"), await as_role(pit, "cage"), await as_role(pit, "dealer")
    page = (await pitc.get("/cage/desk?table=T9")).text
    assert forms(page) == ["T9-request_fill", "T9-request_credit"]
    till = ["T9-buy_in", "T9-record_closer-T9-s1"]  # the dealer's own, while the shift is open
    assert forms((await dealer.get("/cage/desk?table=T9")).text) == till  # no slip for the dealer yet
    window = ["CAGE-set_credit_line", "CAGE-redeem_chips"]  # the cage's window: no table's, always offered
    assert forms((await cage.get("/cage/desk?table=T9")).text) == window
    # a count that does not add up: refused by the cage with its reason, nothing booked
    before = len(bus.topics[T.CAGE_EVENTS])
    sent = len(bus.topics.get(T.CAGE_COMMANDS, [])) + 1  # the one count the cage refuses (next)
    r = await act(pitc, "T9", "request_fill", actor="sup-1", slip_id="F1", chips="25x40, 5x100", total="1,400")
    assert (r.status_code, outcome(r)) == (422, "count_mismatch") and "add up to 150000 cents" in r.text
    assert 'value="25x40, 5x100"' in r.text and 'value="1,400"' in r.text  # the refused slip kept to correct
    r = await act(pitc, "T9", "request_fill", actor="sup-1", slip_id="F1", chips="25x40", total="ten")
    assert (r.status_code, outcome(r)) == (422, "invalid_form") and "total" in r.text
    r = await act(pitc, "T9", "request_fill", actor="sup-1", slip_id="F 1!", chips="25x40", total="1000")
    assert (r.status_code, outcome(r)) == (422, "invalid_form") and "fill_id" in r.text  # the wire's id pattern
    assert len(bus.topics.get(T.CAGE_COMMANDS, [])) == sent  # a form refused by the page sends nothing
    added = [e.payload for e in events(bus, T.CAGE_EVENTS)[before:]]
    assert [(type(p).__name__, p.reason) for p in added] == [("CommandRejected", "count_mismatch")]  # only that
    r = await act(pitc, "T9", "request_fill", actor="sup-1", slip_id="F1", chips="25x40, 5x100", total="$1,500")
    assert (r.status_code, outcome(r)) == (200, "booked")
    # the dealer may not request; the cage now sees "Issue fill" for F1, the dealer still nothing
    r = await act(dealer, "T9", "request_fill", actor="dl-9", slip_id="F2", chips="25x4", total="100")
    assert (r.status_code, outcome(r)) == (403, "role_not_permitted")
    assert forms((await cage.get("/cage/desk?table=T9")).text) == [*window, "T9-issue_fill-F1"]
    assert forms((await dealer.get("/cage/desk?table=T9")).text) == till
    r = await act(cage, "T9", "issue_fill", actor="cashier-1", slip_id="F1", runner_id="sec-1")
    assert outcome(r) == "booked"
    page = (await dealer.get("/cage/desk?table=T9")).text
    assert forms(page) == ["T9-receive_fill-F1", *till] and "(open: on its way)" in page  # issued, not received
    assert (await pitc.get("/cage/statement.json", headers=bearer("pit"))).json()["statements"][-1]["open_fills"] == 1
    r = await act(dealer, "T9", "receive_fill", actor="dl-9", slip_id="F1", supervisor_id="dl-9")
    assert outcome(r) == "same_person"  # the dealer cannot approve his own receipt
    r = await act(dealer, "T9", "receive_fill", actor="dl-9", slip_id="F1", supervisor_id="sup-1")
    assert outcome(r) == "booked"
    got = [e.payload for e in events(bus, T.CAGE_EVENTS) if e.table_id == "T9"]
    booked = [p for p in got[1:] if not isinstance(p, CommandRejected)]
    assert [type(p) for p in booked] == [FillRequested, FillIssued, FillReceived]
    assert booked[-1].tray_cents == 250_000 and booked[0].chips == chips((2_500, 40), (500, 100))
    assert [p.reason for p in got if isinstance(p, CommandRejected)] == ["count_mismatch", "same_person"]
    assert forms((await dealer.get("/cage/desk?table=T9")).text) == till  # received: no step left
    # a credit the tray cannot cover ($2,500 held): refused, shown with its reason
    r = await act(pitc, "T9", "request_credit", actor="sup-1", slip_id="C1", chips="100x26", total="2600")
    assert (r.status_code, outcome(r)) == (422, "credit_exceeds_tray") and "the tray holds 250000" in r.text
    r = await act(pitc, "T9", "request_credit", actor="sup-1", slip_id="C1", chips="25x40", total="1000")
    assert outcome(r) == "booked"
    assert forms((await dealer.get("/cage/desk?table=T9")).text) == ["T9-hand_over_credit-C1", *till]
    assert outcome(await act(dealer, "T9", "hand_over_credit", actor="dl-9", slip_id="C1", runner_id="sec-2")) \
        == "booked"
    assert "T9-receive_credit-C1" in forms((await cage.get("/cage/desk?table=T9")).text)
    assert outcome(await act(cage, "T9", "receive_credit", actor="cashier-1", slip_id="C1")) == "booked"
    assert any(isinstance(e.payload, CreditRequested) for e in events(bus, T.CAGE_EVENTS))
    desk = (await cage.get("/cage/desk.json?table=T9")).json()
    assert [(s["slip_id"], s["status"], s["next"]) for s in desk["shifts"][0]["slips"]] == [
        ("F1", "received", None), ("C1", "received", None)]
    # the cage sets a patron's credit line at the table (the markers' limit there), in dollars
    r = await act(cage, "T9", "set_credit_line", actor="cashier-1", player_id="pat-9", line="-5")
    assert (r.status_code, outcome(r)) == (422, "invalid_form")
    assert outcome(await act(cage, "T9", "set_credit_line", actor="cashier-1", player_id="pat-9",
                             line="$5,000")) == "booked"
    line = [e.payload for e in events(bus, T.CAGE_EVENTS) if isinstance(e.payload, CreditLineSet)][-1]
    assert (line.player_id, line.line_cents, line.by) == ("pat-9", 500_000, "cashier-1")
    for c in (pitc, cage, dealer):
        await c.aclose()


async def test_count_team_removes_and_counts_the_box_of_a_closed_shift(env):  # type: ignore[no-untyped-def]
    bus, pit, log = env
    cage = await as_role(pit, "count_team")
    assert "T9-remove_drop_box-T9-s1" not in forms((await cage.get("/cage/desk?table=T9")).text)  # still open
    await log.send(command("T9", "close-T9", AT, RecordCloser(shift_id="T9-s1", chips=chips((2_500, 40)),
                                                               total_cents=100_000, supervisor_id="sup-1"),
                           actor="dl-9"))
    assert forms((await cage.get("/cage/desk?table=T9")).text) == ["T9-remove_drop_box-T9-s1"]
    assert outcome(await act(cage, "T9", "remove_drop_box", actor="ct-1", shift_id="T9-s1")) == "booked"
    assert forms((await cage.get("/cage/desk?table=T9")).text) == ["T9-count_drop_box-T9-s1"]
    r = await act(cage, "T9", "count_drop_box", actor="ct-1", shift_id="T9-s1", cash="", cash_total="0",
                  markers="0", markers_total="0", counters="ct-2")
    assert (r.status_code, outcome(r)) == (422, "count_team_too_small")
    r = await act(cage, "T9", "count_drop_box", actor="ct-1", shift_id="T9-s1", cash="", cash_total="0",
                  markers="0", markers_total="0", counters="ct-2 ct-3")
    assert outcome(r) == "booked"
    counted = [e.payload for e in events(bus, T.CAGE_EVENTS) if isinstance(e.payload, DropBoxCounted)]
    assert counted[-1].counters == ["ct-1", "ct-2", "ct-3"] and counted[-1].drop_cents == 0
    assert forms((await cage.get("/cage/desk?table=T9")).text) == []
    # neither the pit nor the cage may take the count team's action, nor see it offered
    pitc, cashier = await as_role(pit, "pit"), await as_role(pit, "cage")
    assert outcome(await act(pitc, "T9", "remove_drop_box", actor="x", shift_id="T9-s1")) == "role_not_permitted"
    r = await act(cashier, "T9", "count_drop_box", actor="x", shift_id="T9-s1")
    assert outcome(r) == "role_not_permitted" and "your role may not do this" in r.text
    for c in (cage, pitc, cashier):
        await c.aclose()


async def test_ratings_and_currency_list(env):  # type: ignore[no-untyped-def]
    bus, pit, _ = env
    log = events(bus, *ALL)
    rated, days = ratings(log), currency(log)
    assert days and any(d.ctr for d in days) and any(d.mtl for d in days)  # the high roller's $12,000
    async with client(pit) as c:
        got = (await c.get("/cage/patrons.json", headers=bearer("pit"))).json()
        assert got["ratings"] == [r.as_dict() for r in rated] and len(got["ratings"]) == 3
        one = (await c.get("/cage/patrons.json?player_id=pat-1", headers=bearer("cage"))).json()["ratings"]
        assert [r["player_id"] for r in one] == ["pat-1"] and one[0]["rounds"] == 4
        cur = (await c.get("/cage/currency.json", headers=bearer("surveillance"))).json()
        assert cur["ctr"] == sum(d.ctr for d in days) >= 1 and cur["mtl"] == sum(len(d.mtl) for d in days)
        assert [(d["player_id"], d["cash_in_cents"]) for d in cur["days"]] == \
            [(d.player_id, d.cash_in_cents) for d in days]
        assert (await c.get("/cage/currency.json", headers=bearer("pit"))).status_code == 403
        assert (await c.get("/cage/patrons.json", headers=bearer("analyst"))).status_code == 403
    cage = await as_role(pit, "cage")
    html = (await cage.get("/cage/currency")).text
    assert "CTR due" in html and "$12,000.00" in html
    assert "pat-1" in (await cage.get("/cage/patrons")).text
    await cage.aclose()


def test_forms_become_commands_in_cents():
    assert parse_count("25x40, 5x100", "chips") == chips((2_500, 40), (500, 100))
    assert parse_count("$1,000 x 2; 0.50x3", "chips") == chips((100_000, 2), (50, 3))
    assert parse_count("", "chips") == []
    for bad in ("25", "25x", "x3", "25.555x2", "25x-1"):
        with pytest.raises(ValueError, match="chips"):
            parse_count(bad, "chips")
    cmd = build_command("count_drop_box", {"shift_id": "S", "cash": "100x3", "cash_total": "300", "markers": "2",
                                           "markers_total": "1,500.50", "counters": "a, b c"})
    assert (cmd.cash_cents, cmd.markers, cmd.markers_cents, cmd.counters, cmd.role) == \
        (30_000, 2, 150_050, ["a", "b", "c"], "count_team")
    assert build_command("set_credit_line", {"player_id": "p", "line": "5,000"}).line_cents == 500_000
