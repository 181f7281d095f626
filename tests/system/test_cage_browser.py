"""The cage's pages in a real browser (headless Chromium) against a real broker: the cage and projection
services, the pit app with its Kafka cage log (:class:`croupier.pit_cage.KafkaCageLog`).

A table's shift is opened (the opener, sent as the floor's console would); then through the pages, each
role in its own session: the pit requests a fill (first with a count that does not add up: the cage's
``count_mismatch`` is shown, nothing booked), the cage issues it, the dealer sees it open ("on its way") and
receives it; the closer is counted, the count team removes and counts the drop box; the shift statement shows
the figures, and the currency list refuses the pit. Then a second table's whole shift, every step typed into
the pages by its role: the dealer's opener (a count attested by its own counter refused first), a cash buy-in,
a fill, a credit, a marker within the line the cage set (the cage's desk then shows the patron's line,
outstanding and available), the closer, the count team's soft count; the
statement's win equals the game result, variance $0.00. Screenshots go to ``var/screenshots/cage-*.png``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from contracts import topics as T
from contracts.cage import RecordCloser, RecordOpener
from contracts.codecs import encode
from contracts.commands import SeatPlayer
from croupier.pit import create_pit_app, serve_pit
from croupier.pit_cage import KafkaCageLog
from services.cage.core import CageCore
from services.projection.core import ProjectionCore
from services.runtime.app import Service, build_service
from services.runtime.core import command
from services.runtime.credentials import Credentials
from services.runtime.kafka import ensure_topics
from services.wagering.core import WageringCore
from tests.cagedesk import chips
from tests.system.conftest import broker_settings
from tests.system.test_pit_browser import SHOTS, TOKENS, PitServer, _login, _start, _wait, browser  # noqa: F401

TABLE = "CB1"
SHIFT_TABLE = "CB2"
#: the count room's login (the pit browser test's tokens have none)
ALL_TOKENS = {**TOKENS, "count_team": "count-team-token-pitweb-0123"}


class CageServer(PitServer):
    """The cage and projection services and the pit app with the Kafka cage log, in this thread."""

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap, prefix=f"cageweb{uuid.uuid4().hex[:8]}.")
        self.log: KafkaCageLog | None = None
        self.settings: Any = None

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop = asyncio.Event()
        settings = self.settings = broker_settings(self.bootstrap, topic_prefix=self.prefix)
        await ensure_topics(settings, T.ALL_TOPICS)
        running: list[Service] = []
        self.log = KafkaCageLog(settings, answer_timeout_s=60)
        try:
            for core in (CageCore(), WageringCore(), ProjectionCore()):
                svc = build_service(core, settings)
                await svc.start()
                running.append(svc)
            for svc in running:
                await svc.wait_ready()
            opened = await self.log.send(command(TABLE, "opener-1", datetime.now(UTC), RecordOpener(
                shift_id="CB1-s1", gaming_day="2026-12-03", pit="pit-A", chips=chips((2_500, 40), (500, 100)),
                total_cents=150_000, supervisor_id="sup-1"), actor="dl-1"))
            assert [type(e.payload).__name__ for e in opened] == ["ShiftOpened"], opened
            pit = create_pit_app(running[-1].host, Credentials(ALL_TOKENS), ready=lambda: True, replay=False,
                                 cage_log=self.log)
            self.started.set()
            await serve_pit(pit, "127.0.0.1", self.port, self.stop)
        finally:
            await self.log.stop()
            for svc in reversed(running):
                await svc.stop()

    async def seat(self, table: str, seat: int, player: str) -> None:
        """Seat ``player`` at ``table`` as the dealer's console does (``SeatPlayer`` on ``wagering.commands``)."""
        from aiokafka import AIOKafkaProducer

        p = AIOKafkaProducer(**self.settings.client_options(), enable_idempotence=True)
        await p.start()
        try:
            cmd = command(table, f"seat-{table}-{seat}", datetime.now(UTC), SeatPlayer(seat=seat, player_id=player),
                          actor="dl-2")
            await p.send_and_wait(self.settings.topic(T.WAGERING_COMMANDS), encode(cmd), key=T.key(table))
        finally:
            await p.stop()

    def call(self, coro: Any) -> Any:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)


@pytest.fixture(scope="module")
def server(kafka_bootstrap: str) -> Iterator[CageServer]:
    srv = _start(CageServer(kafka_bootstrap))
    try:
        yield srv
    finally:
        srv.shutdown()


def _fill(driver: Any, form_id: str, **fields: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    form = driver.find_element(By.ID, form_id)
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        if box.tag_name == "select":
            Select(box).select_by_value(value)
            continue
        box.clear()
        box.send_keys(value)
    page = driver.find_element(By.TAG_NAME, "html")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # the answer is a new page: wait for this one to go, so that its outcome is never read as the answer's
    WebDriverWait(driver, 120).until(_gone(page))


def _gone(element: Any) -> Any:
    """Selenium's ``staleness_of``, also when Chromium says the element's node left the document while it was
    being asked ("does not belong to the document": the new page came in between; seen once the pages
    answered within milliseconds)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.expected_conditions import staleness_of

    stale = staleness_of(element)

    def gone(driver: Any) -> bool:
        try:
            return bool(stale(driver))
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
    return gone


def _outcome(driver: Any, want: str) -> str:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By

    try:
        _wait(driver, lambda d: d.find_elements(By.ID, "outcome"), f"the outcome ({want})")
    except TimeoutException:
        raise AssertionError(f"no outcome ({want}) on {driver.current_url}: "
                             f"{driver.find_element(By.TAG_NAME, 'body').text[:1500]}") from None
    return str(driver.find_element(By.ID, "outcome").get_attribute("data-reason") or
               driver.find_element(By.ID, "outcome").get_attribute("class"))


def _forms(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [str(f.get_attribute("id")) for f in driver.find_elements(By.CSS_SELECTOR, "form.cage-act")]


def _logout(driver: Any) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "logout").click()
    _wait(driver, lambda d: d.find_elements(By.ID, "token"), "the login page")


@pytest.mark.kafka
def test_fill_to_soft_count_through_the_cage_pages(server: CageServer, browser: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    base = f"http://127.0.0.1:{server.port}"
    d = browser
    _login(d, base, "pit", f"/cage/desk?table={TABLE}")
    assert _forms(d) == [f"act-{TABLE}-request_fill", f"act-{TABLE}-request_credit"]
    _fill(d, f"act-{TABLE}-request_fill", actor="sup-1", slip_id="F-101", chips="25x40, 5x100", total="1,400")
    assert _outcome(d, "count_mismatch") == "count_mismatch"
    assert "the denominations add up to 150000 cents" in d.find_element(By.ID, "outcome").text
    d.save_screenshot(str(SHOTS / "cage-refused-count.png"))
    _fill(d, f"act-{TABLE}-request_fill", actor="sup-1", slip_id="F-101", chips="25x40, 5x100", total="1,500")
    assert _outcome(d, "booked") == "booked"
    _logout(d)
    _login(d, base, "cage", "/cage/desk")
    assert f"act-{TABLE}-issue_fill-F-101" in _forms(d)
    _fill(d, f"act-{TABLE}-issue_fill-F-101", actor="cashier-1", runner_id="sec-1")
    assert _outcome(d, "booked") == "booked"
    _logout(d)
    _login(d, base, "dealer", f"/cage/desk?table={TABLE}")
    assert "(open: on its way)" in d.find_element(By.ID, f"shift-{TABLE}-CB1-s1").text
    till = [f"act-{TABLE}-buy_in", f"act-{TABLE}-record_closer-CB1-s1"]
    assert _forms(d) == [f"act-{TABLE}-receive_fill-F-101", *till]
    d.save_screenshot(str(SHOTS / "cage-dealer-open-fill.png"))
    _fill(d, f"act-{TABLE}-receive_fill-F-101", actor="dl-1", supervisor_id="sup-1")
    assert _outcome(d, "booked") == "booked" and _forms(d) == till
    _logout(d)
    # the closer (the tray as it stands: $3,000), then the count team at the cage's desk
    closed = server.call(server.log.send(command(TABLE, "closer-1", datetime.now(UTC), RecordCloser(  # type: ignore[union-attr]
        shift_id="CB1-s1", chips=chips((2_500, 80), (500, 200)), total_cents=300_000, supervisor_id="sup-1"),
        actor="dl-1")))
    assert [type(e.payload).__name__ for e in closed] == ["ShiftClosed"]
    _login(d, base, "count_team", f"/cage/desk?table={TABLE}", ALL_TOKENS["count_team"])
    _fill(d, f"act-{TABLE}-remove_drop_box-CB1-s1", actor="ct-1")
    assert _outcome(d, "booked") == "booked"
    _fill(d, f"act-{TABLE}-count_drop_box-CB1-s1", actor="ct-1", cash="", cash_total="0", counters="ct-2 ct-3")
    assert _outcome(d, "booked") == "booked"
    _logout(d)
    _login(d, base, "cage", "/cage/statement")
    row = d.find_element(By.ID, "by-shift").text
    assert "CB1 · CB1-s1 · 2026-12-03" in row and "$1,500.00" in row and "$3,000.00" in row and "(1)" in row
    assert "None: every closed" in d.find_element(By.ID, "alerts").text
    d.save_screenshot(str(SHOTS / "cage-statement.png"))
    d.get(f"{base}/cage/currency")
    assert d.find_element(By.TAG_NAME, "h1").text == "Currency reporting"
    _logout(d)
    _login(d, base, "pit", "/cage/statement")
    d.get(f"{base}/cage/currency")
    assert "may not see the Currency reporting page" in d.find_element(By.ID, "refused").text
    _logout(d)


def _booked(d: Any, form_id: str, **fields: str) -> None:
    """Submit the form and require the cage's "booked" answer."""
    from selenium.webdriver.common.by import By

    _fill(d, form_id, **fields)
    got = _outcome(d, "booked")
    assert got == "booked", d.find_element(By.ID, "outcome").text


def _as(d: Any, base: str, role: str, table: str) -> None:
    """Log out whoever is in, log in as ``role`` at the desk of ``table``."""
    from selenium.webdriver.common.by import By

    if d.find_elements(By.ID, "logout"):
        _logout(d)
    _login(d, base, role, f"/cage/desk?table={table}", ALL_TOKENS[role])


@pytest.mark.kafka
def test_one_shift_typed_into_the_pages_by_each_role(server: CageServer, browser: Any) -> None:  # noqa: F811
    """opener -> buy-in -> fill -> credit -> marker -> closer -> count: the statement's variance 0."""
    import json

    from selenium.webdriver.common.by import By

    base, d, t = f"http://127.0.0.1:{server.port}", browser, SHIFT_TABLE
    server.call(server.seat(t, 1, "pat-B1"))
    _as(d, base, "dealer", t)

    def reload_until(form_id: str, what: str) -> None:
        def seen(drv: Any) -> bool:
            if form_id in _forms(drv):
                return True
            drv.refresh()
            return False
        _wait(d, seen, what)

    reload_until(f"act-{t}-record_opener", "the seated table offered for its opener")
    opener = {"actor": "dl-2", "shift_id": "CB2-s1", "gaming_day": "2026-12-03", "pit": "pit-B", "chips": "25x60",
              "total": "1,500"}
    _fill(d, f"act-{t}-record_opener", **opener, supervisor_id="dl-2")
    assert _outcome(d, "same_person") == "same_person"
    assert "two people sign" in d.find_element(By.ID, "outcome").text
    d.save_screenshot(str(SHOTS / "cage-refused-opener.png"))
    _booked(d, f"act-{t}-record_opener", **opener, supervisor_id="sup-2")
    assert "seat 1 pat-B1" in d.find_element(By.ID, f"shift-{t}-CB2-s1").text
    # the cage may have read the seat a moment after the page did: press again while it says "not seated"
    for _ in range(20):
        _fill(d, f"act-{t}-buy_in", actor="dl-2", seat="1", player_id="pat-B1", amount="500", cash="100x5")
        got = _outcome(d, "booked")
        if got != "player_not_seated":
            break
    assert got == "booked", d.find_element(By.ID, "outcome").text
    d.save_screenshot(str(SHOTS / "cage-dealer-buy-in.png"))
    _as(d, base, "cage", t)
    _booked(d, "act-CAGE-set_credit_line", actor="cashier-2", player_id="pat-B1", line="1,000")
    _as(d, base, "pit", t)
    _booked(d, f"act-{t}-request_fill", actor="sup-2", slip_id="F-201", chips="25x20", total="500")
    _booked(d, f"act-{t}-request_credit", actor="sup-2", slip_id="C-201", chips="25x8", total="200")
    _as(d, base, "cage", t)
    _booked(d, f"act-{t}-issue_fill-F-201", actor="cashier-2", runner_id="sec-2")
    _as(d, base, "dealer", t)
    _booked(d, f"act-{t}-receive_fill-F-201", actor="dl-2", supervisor_id="sup-2")
    _booked(d, f"act-{t}-hand_over_credit-C-201", actor="dl-2", runner_id="sec-2")
    _fill(d, f"act-{t}-buy_in", actor="dl-2", seat="1", player_id="pat-B1", method="marker", amount="1,000.01")
    assert _outcome(d, "over_credit_line") == "over_credit_line"
    assert "past the credit line" in d.find_element(By.ID, "outcome").text
    _booked(d, f"act-{t}-buy_in", actor="dl-2", seat="1", player_id="pat-B1", method="marker", buy_in_id="M-1",
            amount="300")
    _as(d, base, "cage", t)
    _booked(d, f"act-{t}-receive_credit-C-201", actor="cashier-2")
    # the cage sees the patron's casino-wide credit on its desk: the line, the marker outstanding, what is left
    row = d.find_element(By.ID, "credit-pat-B1")
    assert [c.text for c in row.find_elements(By.CSS_SELECTOR, "td.num")] == ["$1,000.00", "$300.00", "$700.00"]
    d.save_screenshot(str(SHOTS / "cage-credit-lines.png"))
    # the tray: 1,500 - 500 (cash) + 500 (fill) - 200 (credit) - 300 (marker) = 1,000
    _as(d, base, "dealer", t)
    _booked(d, f"act-{t}-record_closer-CB2-s1", actor="dl-2", chips="25x40", total="1000", supervisor_id="sup-2")
    _as(d, base, "count_team", t)
    assert _forms(d) == [f"act-{t}-remove_drop_box-CB2-s1"]  # no count before the box is removed
    _booked(d, f"act-{t}-remove_drop_box-CB2-s1", actor="ct-1")
    _fill(d, f"act-{t}-count_drop_box-CB2-s1", actor="ct-1", cash="100x5", cash_total="500", markers="1",
          markers_total="300", counters="ct-2")
    assert _outcome(d, "count_team_too_small") == "count_team_too_small"
    _booked(d, f"act-{t}-count_drop_box-CB2-s1", actor="ct-1", cash="100x5", cash_total="500", markers="1",
            markers_total="300", counters="ct-2 ct-3")
    _as(d, base, "cage", t)
    d.get(f"{base}/cage/statement.json")
    rows = json.loads(d.find_element(By.TAG_NAME, "body").text)["statements"]
    row = next(r for r in rows if r["table_id"] == t)
    # win = closer - opener + credits - fills + drop = 1,000 - 1,500 + 200 - 500 + 800 = 0 = the game result
    assert {k: row[k] for k in ("opener", "closer", "fills", "credits", "drop", "win", "game_result", "variance")} \
        == {"opener": 150_000, "closer": 100_000, "fills": 50_000, "credits": 20_000, "drop": 80_000, "win": 0,
            "game_result": 0, "variance": 0}
    d.get(f"{base}/cage/statement")
    assert "CB2 · CB2-s1 · 2026-12-03" in d.find_element(By.ID, "by-shift").text
    d.save_screenshot(str(SHOTS / "cage-shift-statement.png"))
    _logout(d)
