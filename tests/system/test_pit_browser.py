"""The pit in a real browser (Debian's headless Chromium driven by Selenium) against a real broker.

One server for the module: the five services in a thread of their own (an event loop beside the test's
synchronous browser calls), the command API's gateway and the pit web app (:func:`croupier.pit.create_pit_app`)
on a free loopback port. One browser for the module, two origins (``127.0.0.1`` and ``localhost``: cookies
are per host, so one browser holds two sessions): the dealer's console and the floor in two tabs of the
first, a betting terminal, then the pit, the cage and surveillance in the second.

A dealer opens a table, loads a shoe, seats a player and opens a round through the console's forms; the
terminal places a bet; "No more bets"; the dealing service deals; the console shows the cards with the rule
behind each, the result and the settlement, and the floor tab, open all along, shows the result and the
road without a reload. A late bet shows its reason (``betting_closed``); the surveillance page refuses the
pit role in words; surveillance and the cage see theirs. Screenshots of each view go to ``var/screenshots/``.

Chromium missing: a failure when ``CROUPIER_REQUIRE_BROWSER`` (or ``CROUPIER_REQUIRE_KAFKA``) is set, as in
``.ci/run``, else a skip with the reason.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer

from baccarat.money import format_cents
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.envelope import Envelope
from croupier.pit import create_pit_app, serve_pit
from services.command_api.gateway import CommandGateway, KafkaCommandBus
from services.projection.core import ProjectionCore
from services.runtime.app import Service, build_service
from services.runtime.credentials import Credentials
from services.runtime.kafka import ensure_topics
from tests.services.helpers import make_cores
from tests.system.conftest import broker_settings

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "var" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
TOKENS = {"dealer": "dealer-token-pitweb-0123", "bettor": "bettor-token-pitweb-0123",
          "pit": "pit-token-pitweb-012345", "cage": "cage-token-pitweb-01234",
          "surveillance": "surveillance-token-pitweb-0", "analyst": "analyst-token-pitweb-012"}
#: the betting terminal's credential, bound to player p-1 (the plain bettor role token sends nothing)
TERMINAL = "terminal-p-1-pitweb-0123"
TABLE = "PW1"
WAIT_S = 90  # the most a page may take to show what the services decided (a loaded 2-core machine)


def _required() -> bool:
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
               for v in ("CROUPIER_REQUIRE_BROWSER", "CROUPIER_REQUIRE_KAFKA"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PitServer(threading.Thread):
    """The services, the gateway and the pit app on an event loop in this thread, until :meth:`shutdown`."""

    def __init__(self, bootstrap: str, prefix: str | None = None, port: int | None = None, timeout_s: float = 30.0):
        super().__init__(daemon=True, name="pit-server")
        self.bootstrap = bootstrap
        self.prefix = prefix or f"pitweb{uuid.uuid4().hex[:8]}."
        self.port = port or _free_port()
        #: the command API's wait for an answer (s): the most a console action waits before its 503 or 504
        self.timeout_s = timeout_s
        self.started = threading.Event()
        self.error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        #: set: the pages are told the projection is not ready (as when its broker cannot be reached)
        self.not_ready = False

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self.error = e
            self.started.set()

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop = asyncio.Event()
        settings = broker_settings(self.bootstrap, topic_prefix=self.prefix)
        await ensure_topics(settings, T.ALL_TOPICS)
        running: list[Service] = []
        bus = KafkaCommandBus(settings)
        try:
            cores: dict[str, Any] = {**make_cores(seed=31), "projection": ProjectionCore()}
            for name, core in cores.items():
                extra = (T.SHOE_DRAWS,) if name == "dealing" else ()
                svc = build_service(core, settings, extra_topics=extra)
                await svc.start()
                running.append(svc)
            for svc in running:
                await svc.wait_ready()
            await bus.start()
            projection = running[-1]
            gateway = CommandGateway(bus, lambda: datetime.now(UTC), timeout_s=self.timeout_s)
            creds = Credentials(TOKENS, {TERMINAL: frozenset({"p-1"})})
            pit = create_pit_app(projection.host, creds, ready=lambda: projection.ready and not self.not_ready,
                                 gateway=gateway)
            self.started.set()
            await serve_pit(pit, "127.0.0.1", self.port, self.stop)
        finally:
            await bus.stop()
            for svc in reversed(running):
                await svc.stop()

    def shutdown(self) -> None:
        if self.is_alive() and self.loop is not None and self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.join(timeout=60)


def _start(srv: PitServer) -> PitServer:
    srv.start()
    assert srv.started.wait(180), "the pit server did not start"
    if srv.error is not None:
        raise srv.error
    with httpx.Client(timeout=30) as c:  # the port answers before the first page is asked for
        for _ in range(300):
            try:
                if c.get(f"http://127.0.0.1:{srv.port}/health/live").status_code == 200:
                    break
            except httpx.TransportError:
                threading.Event().wait(0.1)
    return srv


@pytest.fixture(scope="module")
def server(kafka_bootstrap: str) -> Iterator[PitServer]:
    srv = _start(PitServer(kafka_bootstrap))
    try:
        yield srv
    finally:
        srv.shutdown()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = [str(p) for p in (CHROMIUM, DRIVER) if not p.exists()]
    if missing:
        why = (f"needs Debian's chromium and chromium-driver ({', '.join(missing)} missing): "
               "apt-get install chromium chromium-driver")
        if _required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    profile = tempfile.mkdtemp(prefix="croupier-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(executable_path=str(DRIVER)), options=options)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# ---- helpers ---------------------------------------------------------------------------------------------
def _wait(driver: Any, condition: Any, what: str) -> Any:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # a live frame may replace the element a condition is reading: read it again at the next poll
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(condition, message=what)


def _login(driver: Any, base: str, role: str, then: str, token: str | None = None) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/login?next={then}")
    driver.find_element(By.ID, "token").send_keys(token or TOKENS[role])
    driver.find_element(By.ID, "login").click()
    _wait(driver, lambda d: d.find_elements(By.ID, "role") and role in d.find_element(By.ID, "role").text,
          f"logged in as {role}")


def _logout(driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "logout").click()
    _wait(driver, lambda d: d.find_elements(By.ID, "token"), "the login page after logging out")


def _act(driver: Any, action: str, **fields: str) -> str:
    """Fill the console's form for ``action`` and send it; the answer's words."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    form = driver.find_element(By.ID, f"form-{action}")
    for name, value in fields.items():
        el = form.find_element(By.NAME, name)
        if el.tag_name == "select":
            Select(el).select_by_visible_text(value)
        else:
            el.clear()
            el.send_keys(value)
    out = form.find_element(By.CSS_SELECTOR, "output.answer")
    driver.execute_script("arguments[0].textContent = ''", out)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    return _text_of(driver, out, action)


def _text_of(driver: Any, out: Any, action: str) -> str:
    """The answer's words once there are some (its form may be hidden by then: the table moved on)."""
    def got(_: Any) -> str:
        text = str(out.get_attribute("textContent") or "")
        return text if text not in ("", "sending...") else ""
    return str(_wait(driver, got, f"the answer to {action}"))


def _shown(driver: Any) -> list[str]:
    """The console's forms shown now, in page order."""
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll('form.act:not([hidden])')).map(f => f.dataset.action)"))


def _focused(driver: Any) -> str:
    """The action of the form holding the focus ("" for none)."""
    return str(driver.execute_script("var f = document.activeElement && document.activeElement.closest('form.act');"
                                     "return f ? f.dataset.action : ''"))


def _key(driver: Any, key: str) -> None:
    """Press ``key`` on the page (as a dealer's keyboard does)."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def _answer(driver: Any, action: str) -> str:
    """The answer shown in ``action``'s form once there is one."""
    from selenium.webdriver.common.by import By

    return _text_of(driver, driver.find_element(By.CSS_SELECTOR, f"#form-{action} output.answer"), action)


def _round_attr(driver: Any, name: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, f"round-{TABLE}").get_attribute(name) or "")


def _shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(SHOTS / name))


def log_events(srv: PitServer, table: str, *topics: str) -> list[Envelope]:
    """Every event of ``table`` on ``topics`` (the server's prefix), as the log holds them (committed ones,
    from the start), in each topic's order; read until a poll brings nothing more."""
    async def read() -> list[Envelope]:
        settings = broker_settings(srv.bootstrap, topic_prefix=srv.prefix)
        c = AIOKafkaConsumer(*(settings.topic(t) for t in topics), **settings.client_options(),
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             isolation_level="read_committed")
        await c.start()
        out: list[Envelope] = []
        try:
            for _ in range(20):
                batch = await c.getmany(timeout_ms=500)
                if not batch and out:
                    break
                for recs in batch.values():
                    out.extend(env for env in (decode_event(r.value) for r in recs) if env.table_id == table)
        finally:
            await c.stop()
        return out
    return asyncio.run(read())


# ---- the tests -------------------------------------------------------------------------------------------
def test_a_dealer_plays_a_round_through_the_console_and_the_floor_shows_it_live(server: PitServer, browser: Any):
    from selenium.webdriver.common.by import By

    d = browser
    a, b = f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"
    _login(d, a, "dealer", f"/console/{TABLE}")
    console = d.current_window_handle
    assert d.current_url == f"{a}/console/{TABLE}"
    # a table not open offers only "Open table"; the dealer must say who acts before anything is sent
    assert _shown(d) == ["open_table"], _shown(d)
    assert _act(d, "open_table", profile="punto_banco").startswith("Who is acting?")
    d.find_element(By.ID, "actor").send_keys("dealer-ana")
    assert _act(d, "open_table", profile="punto_banco").startswith("accepted: table_opened"), "open"
    _wait(d, lambda _: "load_shoe" in _shown(d), "the console offers the shoe once the table is open (live)")
    # bad input is answered in words, naming the field, and nothing is sent
    bad = _act(d, "seat_player", seat="0", player_id="p-1")
    assert bad.startswith("invalid input") and "seat" in bad, bad
    answer = _act(d, "load_shoe", cut_at="200")
    assert answer.startswith("accepted: shoe_loaded, shoe_cut, shoe_burned"), answer
    _wait(d, lambda _: _round_attr(d, "data-shoe-id"), "the console shows the loaded shoe (live)")
    assert _act(d, "seat_player", seat="1", player_id="p-1").startswith("accepted: player_seated")
    # the next step is focused and the dealer's keys drive it: o opens the round
    _wait(d, lambda _: _shown(d)[:2] == ["seat_player", "open_round"] and "open_round" in _focused(d),
          "the console offers and focuses Open round")
    assert "load_shoe" not in _shown(d) and "read_card" not in _shown(d)  # a shuffled shoe: no reader's forms
    _shot(d, "console-between-rounds.png")
    _key(d, "o")
    answer = _answer(d, "open_round")
    assert answer.startswith("accepted: round_opened, betting_opened"), answer
    _wait(d, lambda _: _round_attr(d, "data-status") == "betting", "the console shows betting open (live)")
    assert d.execute_script("return sessionStorage.getItem('croupier.actor')") == "dealer-ana"
    round_id = _round_attr(d, "data-round-id")
    assert round_id and round_id in answer

    # the floor in a second tab of the same browser, open before the round is dealt
    d.switch_to.new_window("tab")
    floor = d.current_window_handle
    d.get(f"{a}/")
    _wait(d, lambda _: (lambda c: c.get_attribute("data-rounds") == "0" and "Betting open" in c.text)(
        d.find_element(By.ID, f"table-{TABLE}")), "the floor shows the table betting, no round yet")
    d.execute_script("window.__pitMarker = 42")  # gone if the page reloads

    # the betting terminal: a second origin, so a second session
    d.switch_to.new_window("tab")
    terminal = d.current_window_handle
    _login(d, b, "bettor", f"/console/{TABLE}", token=TERMINAL)
    _wait(d, lambda _: _round_attr(d, "data-round-id") == round_id, "the terminal knows the round")
    bad = _act(d, "place_bet", seat="1", wager="banker", amount="100.005")
    assert "fraction of a cent" in bad, bad
    assert d.find_element(By.ID, "players").text == "p-1"  # the terminal is named for its player
    answer = _act(d, "place_bet", seat="1", wager="player", amount="25")
    assert answer.startswith("accepted: bet placed: $25.00 on player"), answer
    answer = _act(d, "place_bet", seat="1", wager="banker", amount="$100")
    assert answer.startswith("accepted: bet placed: $100.00 on banker"), answer
    # its bets this round, in dollars, each with a Withdraw button: the $25 is withdrawn by its button
    _wait(d, lambda _: len(d.find_elements(By.CSS_SELECTOR, "#my-bets tr.my-bet button.withdraw")) == 2,
          "the terminal lists its two bets with a Withdraw button each")
    _shot(d, "terminal-bets.png")
    d.find_element(By.XPATH, "//tr[contains(@class,'my-bet')][td[text()='$25.00']]//button").click()
    _wait(d, lambda _: "Withdrawn: $25.00 on player" in d.find_element(By.ID, "my-bets-answer").text,
          "the withdrawal answered in words")
    _wait(d, lambda _: [" ".join(r.text.split()) for r in d.find_elements(By.CSS_SELECTOR, "#my-bets tr.my-bet")]
          == ["p-1 1 player $25.00 withdrawn", "p-1 1 banker $100.00 in play Withdraw"], "the bets after it")

    d.switch_to.window(console)
    _wait(d, lambda _: d.find_elements(By.CSS_SELECTOR, f"#round-{TABLE} tr.bet"), "the bet in the console (live)")
    _shot(d, "console-mid-round.png")
    _wait(d, lambda _: "no_more_bets" in _focused(d), '"No more bets" is the next step, focused')
    _key(d, "n")
    assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
    totals = _wait(d, lambda _: d.find_elements(By.ID, f"totals-{TABLE}"), "the settlement in the console (live)")
    _shot(d, "console-settled.png")
    assert "1 bet(s), stakes $100.00" in totals[0].text, totals[0].text
    cards = d.find_elements(By.CSS_SELECTOR, f"#round-{TABLE} li.card-dealt")
    assert 4 <= len(cards) <= 6 and all(c.find_element(By.CLASS_NAME, "why").text for c in cards)
    outcome = d.find_element(By.ID, f"outcome-{TABLE}").text
    winner = "Tie" if outcome.startswith("Tie") else outcome.split(" wins")[0]
    assert winner in ("Banker", "Player", "Tie"), outcome
    # the banker bet: won, lost, or void on a tie (13:69F-3.2(a)2.iii)
    expected = {"Banker": "win", "Player": "lose", "Tie": "void"}[winner]
    assert d.find_elements(By.CSS_SELECTOR, f"#round-{TABLE} tr.bet td.settled-{expected}"), expected

    # the floor tab took the result and the road without a reload
    d.switch_to.window(floor)
    _wait(d, lambda _: d.find_element(By.ID, f"table-{TABLE}").get_attribute("data-rounds") == "1",
          "the floor shows the round's result (live)")
    assert d.execute_script("return window.__pitMarker") == 42, "the floor page was reloaded"

    def floor_card(_: Any) -> tuple[str, list[str], int]:  # read at once, again if a live frame replaced it
        card = d.find_element(By.ID, f"table-{TABLE}")
        return (card.find_element(By.CLASS_NAME, "last").text,
                [b.get_attribute("class") for b in card.find_elements(By.CSS_SELECTOR, "circle.bead")],
                len(card.find_elements(By.CSS_SELECTOR, "circle.big")))

    last, beads, big = _wait(d, floor_card, "the floor card read whole")
    assert last == winner
    assert beads == [f"bead bead-{winner[0]}"]
    assert big == (0 if winner == "Tie" else 1)
    _shot(d, "floor.png")
    # the table-side scoreboard: public, dark, the result among the last results and on the roads
    d.get(f"{a}/scoreboard/{TABLE}")
    _wait(d, lambda _: d.find_elements(By.CSS_SELECTOR, f".sb-chip.sb-{winner[0]}"), "the scoreboard's last result")
    assert d.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(11, 15, 13)"
    _shot(d, "scoreboard.png")

    # the terminal no longer offers a bet once betting is closed (a late one is refused: the service tests),
    # and shows its bet's result
    d.switch_to.window(terminal)
    _wait(d, lambda _: _shown(d) == [], "the terminal's bet forms gone once betting closed")
    result = {"Banker": "win", "Player": "lose", "Tie": "void"}[winner]
    _wait(d, lambda _: d.find_elements(By.CSS_SELECTOR, f"#my-bets tr.my-bet td.settled-{result}"),
          "the terminal shows its bet's result")
    assert not d.find_elements(By.CSS_SELECTOR, "#my-bets button.withdraw")
    _shot(d, "terminal-betting-closed.png")

    # the round replayed from the log (the console's history links to it): every card with its rule
    d.switch_to.window(console)
    whys = [c.find_element(By.CLASS_NAME, "why").text  # the console's cards again (live frames replaced them)
            for c in d.find_elements(By.CSS_SELECTOR, f"#round-{TABLE} li.card-dealt")]
    assert len(whys) == len(cards), whys
    d.find_element(By.CSS_SELECTOR, f"#round-{TABLE} a.replay-round").click()
    rows = _wait(d, lambda _: d.find_elements(By.CSS_SELECTOR, "#timeline tr.ev-card"), "the replay's cards")
    assert len(rows) == len(whys), [r.text for r in rows]
    assert all(why in row.text for why, row in zip(whys, rows, strict=True)), [r.text for r in rows]
    assert d.find_elements(By.CSS_SELECTOR, "#timeline tr.ev-round_settled"), "the settlement in the replay"
    _shot(d, "replay-round.png")


def test_the_surveillance_page_refuses_the_pit_role_and_each_role_sees_its_page(server: PitServer, browser: Any):
    from selenium.webdriver.common.by import By

    d = browser
    b = f"http://localhost:{server.port}"
    d.switch_to.new_window("tab")
    _login(d, b, "pit", "/surveillance")
    refused = d.find_element(By.ID, "refused").text
    assert "The pit role may not see the Surveillance page" in refused and "surveillance" in refused
    _shot(d, "refusal.png")
    with httpx.Client(base_url=b.replace("localhost", "127.0.0.1"), timeout=30) as c:
        pit = {"Authorization": f"Bearer {TOKENS['pit']}"}
        assert c.get("/surveillance", headers=pit).status_code == 403
        assert c.get("/live/surveillance", headers=pit).status_code == 403
        assert c.get("/cage", headers=pit).status_code == 200
        result = c.get(f"/tables/{TABLE}").json()["table_result_cents"]

    d.get(f"{b}/cage")
    # the cage's table is a live fragment (replaced as events come): read it whole at each poll
    _wait(d, lambda _: d.find_element(By.CSS_SELECTOR, f"#cage-{TABLE} h2 .result").text == format_cents(result),
          f"the cage's result {format_cents(result)}")
    text = _wait(d, lambda _: d.find_element(By.ID, f"cage-{TABLE}").text, "the cage's table")
    assert f"table:{TABLE}:game" in text and "patron:p-1" in text
    _shot(d, "cage.png")

    _logout(d)
    _login(d, b, "surveillance", "/surveillance")
    surv = _wait(d, lambda _: d.find_elements(By.ID, f"surv-{TABLE}"), "the surveillance odds of the table")[0]
    assert "cards truly left" in surv.text and d.find_element(By.ID, "alerts")
    _shot(d, "surveillance.png")
    _filter_alerts(d)
    _logout(d)


def _filter_alerts(d: Any) -> None:
    """The alert filter on rows of tables T1, T10 and T2: a table typed whole is that table alone ("T1" is not
    T10 too), a part of one is every table it starts; a player typed whole is that player alone ("p-1" is not
    p-10), a part holds it. The rows are put in by script: the floor here raises no alert."""
    from selenium.webdriver.common.by import By

    rows = [("T1", "p-1"), ("T10", "p-1"), ("T1", "p-10"), ("T2", "p-10"), ("T10", "p-2")]
    d.execute_script(
        "var tb = document.createElement('tbody');"
        "arguments[0].forEach(function (r) { var tr = document.createElement('tr'); tr.className = 'alert';"
        " tr.dataset.table = r[0]; tr.dataset.player = r[1]; tr.textContent = r[0] + ' ' + r[1]; tb.appendChild(tr); });"
        "var t = document.getElementById('alerts-list');"
        "if (!t) { t = document.createElement('table'); t.id = 'alerts-list'; document.getElementById('alerts').appendChild(t); }"
        "t.replaceChildren(tb);", rows)
    table, player = d.find_element(By.ID, "alerts-filter-table"), d.find_element(By.ID, "alerts-filter-player")

    def shown(t: str, p: str) -> list[str]:
        for box, text in ((table, t), (player, p)):
            box.clear()
            box.send_keys(text or " ")  # a key press fires the filter's input event; blanks are trimmed
        return [r.text for r in d.find_elements(By.CSS_SELECTOR, "#alerts-list tr.alert") if r.is_displayed()]

    assert shown("T1", "") == ["T1 p-1", "T1 p-10"]
    assert shown("t", "") == ["T1 p-1", "T10 p-1", "T1 p-10", "T2 p-10", "T10 p-2"]
    assert shown("T10", "p-1") == ["T10 p-1"]
    assert shown("", "p-1") == ["T1 p-1", "T10 p-1"]
    assert shown("", "p-") == ["T1 p-1", "T10 p-1", "T1 p-10", "T2 p-10", "T10 p-2"]
    assert shown("T3", "") == [] and "no alert matches" in d.find_element(By.ID, "alerts-page").text


def test_the_page_says_when_it_is_not_live_and_recovers_by_itself(server: PitServer, browser: Any):
    """Not ready (forced here: what the pages are told while the broker cannot be reached) shows the banner
    and clears it; the server gone shows that the stream is lost; the server back on the same log (its
    sessions are in memory, so gone with it) says to log in again, and the floor is whole again after."""
    from selenium.webdriver.common.by import By

    d = browser
    a = f"http://127.0.0.1:{server.port}"
    d.switch_to.new_window("tab")
    _login(d, a, "pit", "/")
    banner = d.find_element(By.ID, "live-banner")
    _wait(d, lambda _: d.find_element(By.TAG_NAME, "body").get_attribute("data-live") == "ok", "live")
    assert not banner.is_displayed()
    server.not_ready = True
    _wait(d, lambda _: banner.is_displayed() and "not ready" in banner.text, "the not-ready banner")
    _shot(d, "banner-not-ready.png")
    server.not_ready = False
    _wait(d, lambda _: not banner.is_displayed(), "the banner gone once ready again")
    server.shutdown()
    _wait(d, lambda _: banner.is_displayed() and "Live updates lost" in banner.text, "the stream-lost banner")
    _shot(d, "banner-lost.png")
    again = _start(PitServer(server.bootstrap, prefix=server.prefix, port=server.port))
    try:
        link = _wait(d, lambda _: d.find_elements(By.ID, "login-again"), "log in again, said by the page")[0]
        assert "session has ended" in banner.text
        link.click()
        d.find_element(By.ID, "token").send_keys(TOKENS["pit"])
        d.find_element(By.ID, "login").click()
        _wait(d, lambda _: d.find_elements(By.ID, f"table-{TABLE}")
              and d.find_element(By.ID, f"table-{TABLE}").get_attribute("data-rounds") == "1",
              "the floor restored from the log")
        assert d.current_url == f"{a}/"
        # the pit sees the day's figures on each card: the one $100.00 banker bet is the drop
        figures = d.find_element(By.ID, f"figures-{TABLE}").text
        assert "gaming day 1 $100.00" in figures, figures
        _shot(d, "floor-pit.png")
    finally:
        again.shutdown()

async def test_the_demo_prints_the_floor_address_and_serves_it_while_it_runs(kafka_bootstrap: str):
    """``croupier demo`` (one table, two rounds): the floor's address is printed, the pages answer there
    while the demo deals, with the pit token of a mode-600 file the demo wrote (no default token)."""
    import io
    import re
    import stat

    from rich.console import Console

    from croupier.demo import run_demo

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    port = _free_port()
    demo = asyncio.ensure_future(run_demo(tables=1, shoes=1, speed=0, bootstrap=kafka_bootstrap, console=console,
                                          seed=3, rounds=2, pit_port=port))
    seen: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=30) as c:
        while not demo.done() and "floor" not in seen:
            m = re.search(r"The floor in a browser: (http://127\.0\.0\.1:(\d+)/) .*? from (\S+), mode 600",
                          buf.getvalue())
            if m is None:
                await asyncio.sleep(0.1)
                continue
            seen["url"], path = m.group(1), Path(m.group(3))
            seen["mode"] = stat.S_IMODE(path.stat().st_mode)
            token = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)["pit"]
            try:  # printed as the server starts: it may not listen yet
                anonymous = await c.get(seen["url"])
                r = await c.get(seen["url"] + "floor", headers={"Authorization": f"Bearer {token}"})
            except httpx.TransportError:
                await asyncio.sleep(0.1)
                continue
            seen["anonymous"] = (anonymous.status_code, anonymous.headers.get("location"))
            if "BAC-01" in r.text:
                seen["floor"] = r.status_code
            else:
                await asyncio.sleep(0.2)
    code = await demo
    out = buf.getvalue()
    assert code == 0, out[-3000:]
    assert seen.get("url") == f"http://127.0.0.1:{port}/" and seen["mode"] == 0o600, (seen, out[-2000:])
    assert seen["anonymous"] == (303, "/login?next=%2F") and seen["floor"] == 200, seen
