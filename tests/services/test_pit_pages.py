"""The pit web app on the in-memory bus: login sessions (cookie, CSRF, logout), who may see which page, the
pages' content after a round played through the command API mounted beside them, the live feed's
fan-out (per-role keys, a slow subscriber dropped), and the scoreboards' SVG."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
import pytest
from markupsafe import escape as markup_escape

from croupier.pit import create_pit_app
from services.command_api.gateway import CommandGateway, MemoryCommandBus
from services.floor.dealer import Clock
from services.projection.core import ProjectionCore
from services.projection.live import QUEUE_FRAMES, LiveFeed, Subscriber
from services.projection.roadsvg import scoreboard
from services.runtime.credentials import Credentials
from services.runtime.sessions import COOKIE, Sessions
from tests.services.helpers import floor_bus

TOKENS = {"dealer": "dealer-token-0123456789", "bettor": "bettor-token-0123456789",
          "cage": "cage-token-01234567890", "pit": "pit-token-012345678901",
          "surveillance": "surveillance-token-0123", "analyst": "analyst-token-01234567"}
#: a betting terminal's credential, bound to player p-1 (the plain bettor role token sends nothing)
TERMINAL = "terminal-p-1-token-0123"
CREDS = Credentials(TOKENS, {TERMINAL: frozenset({"p-1"})})
BASE = "http://pit.test"
SAME = {"Origin": BASE}
T = "T1"


def pit_app():  # type: ignore[no-untyped-def]
    bus, _ = floor_bus(7)
    projection = bus.add(ProjectionCore())
    mb = MemoryCommandBus(bus)
    gw = CommandGateway(mb, Clock(datetime(2026, 12, 1, 17, tzinfo=UTC)), timeout_s=0.5)
    ids = iter(range(10_000))
    pit = create_pit_app(projection, CREDS, ready=lambda: True, gateway=gw,
                         new_request_id=lambda: f"auto-{next(ids)}")
    return pit, mb


def client(pit) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=pit.app), base_url=BASE, follow_redirects=False)


async def login(c: httpx.AsyncClient, role: str) -> None:
    r = await c.post("/login", content=f"token={TOKENS[role]}&next=/",
                     headers={**SAME, "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 303 and r.headers["location"] in ("/", "/surveillance", "/cage"), r.text
    assert c.cookies.get(COOKIE)  # kept by the client for the next requests


async def play_round(c: httpx.AsyncClient) -> dict:  # type: ignore[type-arg]
    """A round through the command API under /command with the dealer's cookie (and the bettor's bearer)."""
    h = {**SAME}
    r = await c.post(f"/command/tables/{T}/open", json={"actor": "d-1", "profile": "punto_banco"}, headers=h)
    assert r.status_code == 200, r.text
    shoe = (await c.post(f"/command/tables/{T}/shoe", json={"actor": "d-1", "cut_at": 150}, headers=h)).json()
    assert (await c.post(f"/command/tables/{T}/seats", json={"actor": "d-1", "seat": 1, "player_id": "p-1"},
                         headers=h)).status_code == 200
    rnd = (await c.post(f"/command/tables/{T}/rounds", json={"actor": "d-1", "shoe_id": shoe["shoe_id"]},
                        headers=h)).json()
    bet = {"round_id": rnd["round_id"], "seat": 1, "player_id": "p-1", "wager": "player", "amount_cents": 2500}
    r = await c.post(f"/command/tables/{T}/bets", json=bet, headers={"Authorization": f"Bearer {TERMINAL}"})
    assert r.status_code == 200, r.text
    r = await c.post(f"/command/tables/{T}/rounds/no-more-bets", json={"actor": "d-1", "round_id": rnd["round_id"]},
                     headers=h)
    assert r.status_code == 200, r.text
    return {"shoe_id": shoe["shoe_id"], "round_id": rnd["round_id"], "bet": bet}


# ---- sessions ----------------------------------------------------------------------------------------------
def test_a_session_is_a_random_id_for_a_known_token_and_ends_at_logout_or_expiry():
    now = [0.0]
    s = Sessions(TOKENS, ttl_s=60, max_sessions=2, clock=lambda: now[0])
    assert s.login("not-a-token-of-anyone") is None and s.login("") is None
    sid, role = s.login(TOKENS["pit"])  # type: ignore[misc]
    assert role == "pit" and sid not in TOKENS.values() and s.role(sid) == "pit"
    s.logout(sid)
    assert s.role(sid) is None
    sid, _ = s.login(TOKENS["cage"])  # type: ignore[misc]
    now[0] = 60.0
    assert s.role(sid) is None  # expired
    a, _ = s.login(TOKENS["dealer"])  # type: ignore[misc]
    b, _ = s.login(TOKENS["dealer"])  # type: ignore[misc]
    c, _ = s.login(TOKENS["dealer"])  # type: ignore[misc]
    assert (s.role(a), s.role(b), s.role(c)) == (None, "dealer", "dealer")  # at most 2: the oldest forgotten


async def test_login_sets_an_httponly_samesite_strict_cookie_and_refuses_bad_tokens_in_words():
    pit, _ = pit_app()
    async with client(pit) as c:
        r = await c.get("/surveillance")
        assert r.status_code == 303 and r.headers["location"] == "/login?next=%2Fsurveillance"
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        r = await c.post("/login", content="token=", headers={**SAME, **form})
        assert r.status_code == 422 and "token: enter the token of your role" in r.text
        r = await c.post("/login", content="token=wrong-token-0123456789", headers={**SAME, **form})
        assert r.status_code == 401 and "not any role&#39;s token" in r.text and COOKIE not in r.headers.get(
            "set-cookie", "")
        r = await c.post("/login", content=f"token={TOKENS['pit']}", headers={"Origin": "http://evil.test", **form})
        assert r.status_code == 403 and "set-cookie" not in r.headers
        r = await c.post("/login", content=f"token={TOKENS['pit']}&next=//evil.test/x", headers={**SAME, **form})
        cookie = r.headers["set-cookie"]
        assert r.status_code == 303 and r.headers["location"] == "/"  # never another site
        assert re.fullmatch(rf"{COOKIE}=[A-Za-z0-9_-]{{43}}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200", cookie)
        assert TOKENS["pit"] not in cookie


async def test_each_page_answers_its_roles_and_refuses_the_others_in_words():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "pit")
        r = await c.get("/surveillance")
        assert r.status_code == 403 and "may not see the Surveillance page" in r.text and "<b>pit</b>" in r.text
        assert (await c.get("/live/surveillance")).status_code == 403
        assert (await c.get("/cage")).status_code == 200
        r = await c.get("/")
        assert r.status_code == 200 and "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert 'src="/static/pit.js"' in r.text and "http" not in r.text.split("<main>")[0].replace(
            'xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched from another site
        js = await c.get("/static/pit.js")
        assert js.status_code == 200 and "EventSource" in js.text
        r = await c.get("/console/bad id!")
        assert r.status_code == 422 and "<h1>Not a table id</h1>" in r.text and "Not for this role" not in r.text
        assert (await c.get("/cage?gaming_day=yesterday")).status_code == 422
        r = await c.get("/cage?gaming_day=2026-02-30")  # shaped like a date, not one: not "no longer held"
        assert r.status_code == 422 and "is not a date YYYY-MM-DD" in r.text
        # the query API answers the cookie as its role's bearer: the pit reads ledgers, not alerts
        assert (await c.get("/alerts")).status_code == 403
        r = await c.post("/logout", headers=SAME)
        assert r.status_code == 303 and "Max-Age=0" in r.headers["set-cookie"]
        assert (await c.get("/cage")).status_code == 303  # logged out: to the login page
    async with client(pit) as c:
        await login(c, "cage")
        assert (await c.get("/surveillance")).status_code == 403
        await login(c, "surveillance")
        assert (await c.get("/surveillance")).status_code == 200 and (await c.get("/alerts")).status_code == 200


async def test_a_state_changing_request_with_the_cookie_must_come_from_this_origin():
    pit, mb = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        body = {"actor": "d-1", "profile": "punto_banco"}
        for headers in ({"Origin": "http://evil.test"}, {}, {"Referer": "http://evil.test/console/T1"}):
            r = await c.post(f"/command/tables/{T}/open", json=body, headers=headers)
            assert r.status_code == 403 and r.json()["detail"]["reason"] == "cross_origin", headers
        assert mb.sent == []  # nothing was sent
        r = await c.post(f"/command/tables/{T}/open", json=body, headers={"Referer": f"{BASE}/console/{T}"})
        assert r.status_code == 200 and r.json()["status"] == "accepted"
        assert len(mb.sent) == 1
    async with client(pit) as c:  # a bearer header, no cookie: an API client, no origin needed
        r = await c.post(f"/command/tables/{T}/seats", json={"actor": "d-1", "seat": 2, "player_id": "p-2"},
                         headers={"Authorization": f"Bearer {TOKENS['dealer']}"})
        assert r.status_code == 200, r.text


async def test_the_console_and_the_floor_show_the_round_as_the_projection_folded_it():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        played = await play_round(c)
        html = (await c.get(f"/console/{T}")).text
        assert f'data-round-id="{played["round_id"]}"' in html and 'data-status="settled"' in html
        cards = re.findall(r'<li class="card-dealt hand-(player|banker)"><span class="playing-card">(\w\w)</span>'
                           r'.*?<span class="why">([^<]+)</span>', html)
        assert 4 <= len(cards) <= 6 and all(why.strip() for _, _, why in cards)
        assert "1 bet(s), stakes $25.00" in html and "<td>p-1</td>" in html
        assert "Punto Banco" in html and "(lose)</td>" not in html and "(win)</td>" not in html  # said once
        assert re.search(r'class="settled-(win|lose|void)">(win|lose|void)( \(\w[\w ]*\))?</td>', html)
        assert 'id="form-no_more_bets"' in html and 'id="form-place_bet"' not in html  # the dealer's forms
        floor = (await c.get("/")).text
        assert f'id="table-{T}" data-last=' in floor and 'data-rounds="1"' in floor
        assert len(re.findall(r'<circle class="bead bead-[BPT]"', floor)) == 1
        # a late bet is refused with its reason, by the command API beside the pages
        late = {**played["bet"], "amount_cents": 5000}
        r = await c.post(f"/command/tables/{T}/bets", json=late, headers={"Authorization": f"Bearer {TERMINAL}"})
        assert r.status_code == 409 and r.json()["reason"] == "betting_closed"
    async with client(pit) as c:
        await login(c, "analyst")  # read-only, no player ids
        html = (await c.get(f"/console/{T}")).text
        assert 'data-status="settled"' in html and "p-1" not in html and 'class="act"' not in html
        r = await c.post("/login", content=f"token={TERMINAL}", headers={**SAME, "Content-Type":
                                                                        "application/x-www-form-urlencoded"})
        assert r.status_code == 303  # a betting terminal logs in with its credential, as the bettor role
        html = (await c.get(f"/console/{T}")).text
        assert "signed in as <b>bettor</b>" in html
        assert 'id="form-place_bet"' in html and 'id="form-no_more_bets"' not in html
        # the round's public panel names no player (the terminal's own player is named in its header)
        assert "p-1" not in html.split(f'id="round-{T}"')[1].split("</section>")[0]
        # its cookie bets for its own player only
        r = await c.post(f"/command/tables/{T}/bets", headers=SAME, json={**late, "player_id": "p-2"})
        assert r.status_code == 403 and r.json()["detail"]["reason"] == "not_your_player", r.text


async def test_the_feed_renders_per_key_and_the_surveillance_view_only_for_its_key():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        await play_round(c)
    floor = "".join(pit.pages.render(("floor", False), [T]))
    money = "".join(pit.pages.render(("floor", True), [T]))
    assert "drop" not in floor and 'id=\\"figures-T1\\"' in money and "$25.00" in money  # the day's drop
    public = "".join(pit.pages.render(("console", T, "public"), [T]))
    full = "".join(pit.pages.render(("console", T, "full"), [T]))
    surv = "".join(pit.pages.render(("surveillance",), [T]))
    assert "truly left" in surv and "surv-T1" in surv
    for other in (floor, money, public, full):
        assert "truly left" not in other and "surveillance view" not in other
    assert "p-1" in full and "p-1" not in public and "p-1" not in floor and "p-1" not in money


async def test_a_slow_subscriber_is_dropped_and_the_others_keep_their_frames():
    feed = LiveFeed(lambda: ["T1"])
    feed.set_render(lambda key, tables: [f"event: frag\ndata: {key[0]}\n\n" for _ in tables])
    slow, quick = feed.subscribe(("slow",)), feed.subscribe(("quick",))
    for i in range(QUEUE_FRAMES + 1):
        feed._dirty.add("T1")
        feed.fan_out()
        if i % 10 == 0:  # the quick one reads
            while not quick.queue.empty():
                quick.queue.get_nowait()
    assert slow.dropped and slow not in feed.subscribers and feed.drops == 1
    assert slow.queue.get_nowait() is None  # its stream ends: the browser reconnects
    assert not quick.dropped and quick in feed.subscribers
    feed.close()
    while (got := quick.queue.get_nowait()) is not None:
        assert got == "event: frag\ndata: quick\n\n"
    assert isinstance(feed.subscribe(("late",)), Subscriber) and feed.subscribers == set()


def test_a_failing_render_ends_no_stream():
    pit, _ = pit_app()
    feed = pit.feed

    def broken(key, tables):  # type: ignore[no-untyped-def]
        raise RuntimeError("a rendering bug")

    feed.set_render(broken)
    sub = feed.subscribe(("floor", False))
    feed._dirty.add(T)
    assert feed.fan_out() == 0 and not sub.dropped


@pytest.mark.parametrize("results, beads, rings, ties", [("", 0, 0, 0), ("BPT", 3, 2, 1), ("TTBBB", 5, 3, 0)])
def test_the_scoreboards_are_drawn_one_mark_per_result(results: str, beads: int, rings: int, ties: int):
    b = scoreboard(results)
    assert b["bead_plate"].count("<circle class=\"bead") == beads
    assert b["big_road"].count("<circle class=\"big") == rings
    assert b["big_road"].count('<line class="tie" ') == ties
    for letter, colour in (("B", "#c62828"), ("P", "#1565c0")):
        assert b["bead_plate"].count(f'class="bead bead-{letter}"') == results.count(letter)
        if letter in results:
            assert f'bead-{letter}" cx' in b["bead_plate"] and colour in b["bead_plate"]


def test_the_derived_roads_mark_as_baccarat_roads_says():
    from baccarat.roads import roads

    seq = "BBPPBPPPBB"
    r = roads(seq)
    b = scoreboard(seq)
    assert b["big_eye_boy"].count('<circle class="mark') == len(r.big_eye_boy.marks)
    assert b["small_road"].count('<circle class="mark') == len(r.small_road.marks)
    assert b["cockroach_pig"].count('<line class="mark') == len(r.cockroach_pig.marks)
    assert b["big_eye_boy"].count('mark-R"') == r.big_eye_boy.marks.count("R") > 0


async def test_a_projection_not_ready_shows_the_banner_in_words():
    bus, _ = floor_bus(7)
    projection = bus.add(ProjectionCore())
    ready = [False]
    pit = create_pit_app(projection, TOKENS, ready=lambda: ready[0])
    async with client(pit) as c:
        await login(c, "pit")
        html = (await c.get("/")).text
        assert re.search(r'<div id="live-banner" class="banner" role="alert">The projection is not ready', html)
        assert (await c.get("/tables")).status_code == 503  # the query API says so too
        ready[0] = True
        html = (await c.get("/")).text
        assert '<div id="live-banner" class="banner" role="alert" hidden>' in html
        # no command API here (croupier serve --api-port, croupier api): the console is read-only
        await login(c, "dealer")
        html = (await c.get(f"/console/{T}")).text
        assert 'class="act"' not in html and (await c.post(f"/command/tables/{T}/open", headers=SAME,
                                                           json={})).status_code == 404


# ---- replay ------------------------------------------------------------------------------------------------
async def test_a_round_is_replayed_from_the_log_for_the_roles_that_read_rounds_with_alerts_for_surveillance():
    """``/replay/{table}`` lists the rounds the log holds (each a link), ``/replay/{table}/rounds/{round}`` tells
    the round in words: every card with the rule behind it, the bets, the settlement. The surveillance alerts
    are shown to surveillance only; an analyst is refused; an unknown round is a 404 in words; a server with
    no replay says so (503)."""
    from croupier.pit_replay import story
    from tests.services.helpers import events

    bus, _ = floor_bus(7)
    projection = bus.add(ProjectionCore())
    gw = CommandGateway(MemoryCommandBus(bus), Clock(datetime(2026, 12, 1, 17, tzinfo=UTC)), timeout_s=0.5)
    pit = create_pit_app(projection, CREDS, ready=lambda: True, gateway=gw)
    streams = ("shoe.events", "dealing.events", "wagering.events", "settlement.events", "projection.ledger",
               "projection.alerts")

    async def from_bus(table_id: str, round_id: str | None) -> dict:  # type: ignore[type-arg]
        return story([e for e in events(bus, *streams) if e.table_id == table_id], table_id, round_id)

    pit.pages.replay = from_bus
    async with client(pit) as c:
        await login(c, "dealer")
        played = await play_round(c)
        rid = played["round_id"]
        await bus.pump()
        listing = await c.get(f"/replay/{T}")
        assert listing.status_code == 200 and f'href="/replay/{T}/rounds/{rid}"' in listing.text
        page = await c.get(f"/replay/{T}/rounds/{rid}")
        assert page.status_code == 200, page.text
        dealt = [e for e in events(bus, "dealing.events") if type(e.payload).__name__ == "CardDealt"]
        assert len(dealt) >= 4
        for e in dealt:  # every card, with the rule behind it, in words
            assert str(markup_escape(e.payload.why)) in page.text
        assert "p-1" in page.text and "settled" in page.text.lower()
        console = await c.get(f"/console/{T}")
        assert f'href="/replay/{T}/rounds/{rid}"' in console.text or 'id="replay-link"' in console.text
        assert 'id="limits-T1"' in console.text and "$25.00" in console.text  # the wagers' table minimum
        missing = await c.get(f"/replay/{T}/rounds/nope")
        assert missing.status_code == 404 and "unknown round" in missing.text
        bad = await c.get(f"/replay/{T}/rounds/bad%20id")
        assert bad.status_code == 422
    async with client(pit) as c:
        await login(c, "analyst")
        assert (await c.get(f"/replay/{T}/rounds/{rid}")).status_code == 403
    pit.pages.replay = None
    async with client(pit) as c:
        await login(c, "pit")
        r = await c.get(f"/replay/{T}")
        assert r.status_code == 503 and "does not replay" in r.text


async def test_the_console_offers_the_steps_valid_now_and_confirms_a_void_or_early_close_with_a_reason():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        page = (await c.get(f"/console/{T}")).text
        assert 'data-valid="open_table" data-next="open_table"' in page  # a table not open yet
        played = await play_round(c)
        page = (await c.get(f"/console/{T}")).text
        assert 'data-valid="open_round close_shoe seat_player leave_seat collect_commission" data-next="open_round"' \
            in page, re.findall(r'data-valid="[^"]*" data-next="[^"]*"', page)
        assert 'data-key="o"' in page and 'data-key="n"' in page
        close = re.search(r'<form class="act" id="form-close_shoe"[^>]*data-confirm="([^"]+)"', page)
        assert close and "before its end" in close.group(1)
        assert re.search(r'id="form-void_round"[^>]*data-confirm="Void this round\? Every bet is returned."', page)
        assert page.count('data-required="1"') == 2  # the void's and the early close's reasons
        # the reason given is recorded with the close (not end_of_shoe)
        r = await c.post(f"/command/tables/{T}/shoe/close", json={"actor": "d-1", "shoe_id": played["shoe_id"],
                                                                  "reason": "shoe damaged"}, headers=SAME)
        assert r.status_code == 200 and r.json()["events"][-1]["payload"]["reason"] == "shoe damaged"
        page = (await c.get(f"/console/{T}")).text
        assert 'data-next="load_shoe"' in page


async def test_a_terminal_is_named_for_its_player_and_sees_its_own_bets_and_their_results():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        played = await play_round(c)
    async with client(pit) as c:
        r = await c.post("/login", content=f"token={TERMINAL}", headers={**SAME, "Content-Type":
                                                                        "application/x-www-form-urlencoded"})
        assert r.status_code == 303
        html = (await c.get(f"/console/{T}")).text
        assert 'terminal of <b id="players">p-1</b>' in html
        assert '<input type="hidden" name="player_id" value="p-1">' in html and 'id="my-bets"' in html
        assert 'id="form-withdraw_bet"' not in html  # a button per bet instead of a pasted bet id
        mine = (await c.get(f"/command/tables/{T}/rounds/{played['round_id']}/mine")).json()
        assert mine["players"] == ["p-1"] and mine["status"] == "settled"
        [bet] = mine["bets"]
        assert (bet["player_id"], bet["wager"], bet["amount_cents"], bet["status"]) == ("p-1", "player", 2500,
                                                                                          "settled")
        assert bet["result"] in ("win", "lose", "void") and bet["payout"] in (0, 2500, 5000)
    async with client(pit) as c:
        await login(c, "pit")
        r = await c.get(f"/command/tables/{T}/rounds/{played['round_id']}/mine")
        assert r.status_code == 403 and r.json()["detail"]["reason"] == "role_not_allowed"


async def test_the_table_side_scoreboard_is_public_and_shows_the_roads_results_limits_and_shoe():
    pit, _ = pit_app()
    async with client(pit) as c:
        r = await c.get(f"/scoreboard/{T}")
        assert r.status_code == 200 and "This table is not open." in r.text  # no login needed
        await login(c, "dealer")
        await play_round(c)
    async with client(pit) as c:  # a screen beside the table: no session
        r = await c.get(f"/scoreboard/{T}")
        assert r.status_code == 200 and 'src="/static/scoreboard.js"' in r.text
        html = (await c.get(f"/scoreboard/{T}/board")).text
        assert '<span class="sb-game">Punto Banco</span>' in html and 'data-rounds="1"' in html
        assert "<b>Banker</b> $25.00 – $10,000.00" in html and "<b>Tie</b> $5.00 – $500.00" in html
        assert len(re.findall(r'<span class="sb-chip sb-[BPT]">[BPT]</span>', html)) == 1
        assert re.search(r"1 round\(s\) · \d+ of 416 cards out", html)
        for road in ("Bead plate", "Big Road", "Big Eye Boy", "Small Road", "Cockroach Pig"):
            assert f"<span>{road}</span>" in html
        assert "p-1" not in html and "$25.00 on" not in html  # no player, no bet
        assert (await c.get("/scoreboard/bad%20id!")).status_code == 422
        assert (await c.get("/static/scoreboard.css")).status_code == 200


async def test_the_floor_opens_a_new_table_by_its_console():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        floor = (await c.get("/")).text
        assert "No table is open yet." in floor and 'id="open-table-form"' in floor and 'action="/console"' in floor
        r = await c.get("/console?table=BJ-7")
        assert r.status_code == 303 and r.headers["location"] == "/console/BJ-7"
        page = (await c.get("/console/BJ-7")).text
        assert 'data-next="open_table"' in page
        r = await c.get("/console?table=bad%20id!")
        assert r.status_code == 422 and "<h1>Not a table id</h1>" in r.text
    async with client(pit) as c:
        await login(c, "analyst")
        assert 'id="open-table-form"' not in (await c.get("/")).text  # not a role that opens tables
