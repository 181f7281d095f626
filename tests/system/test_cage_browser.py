"""The cage's pages in a real browser (headless Chromium) against a real broker: the cage and projection
services, the pit app with its Kafka cage log (:class:`croupier.pit_cage.KafkaCageLog`).

A table's shift is opened (the opener, sent as the floor's console would); then through the pages, each
role in its own session: the pit requests a fill (first with a count that does not add up: the cage's
``count_mismatch`` is shown, nothing booked), the cage issues it, the dealer sees it open ("on its way") and
receives it; the closer is counted, the count team removes and counts the drop box; the shift statement shows
the figures, and the currency list refuses the pit. Screenshots go to ``var/screenshots/cage-*.png``.
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
from croupier.pit import create_pit_app, serve_pit
from croupier.pit_cage import KafkaCageLog
from services.cage.core import CageCore
from services.projection.core import ProjectionCore
from services.runtime.app import Service, build_service
from services.runtime.core import command
from services.runtime.credentials import Credentials
from services.runtime.kafka import ensure_topics
from tests.cagedesk import chips
from tests.system.conftest import broker_settings
from tests.system.test_pit_browser import SHOTS, TOKENS, PitServer, _login, _start, _wait, browser  # noqa: F401

TABLE = "CB1"


class CageServer(PitServer):
    """The cage and projection services and the pit app with the Kafka cage log, in this thread."""

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap, prefix=f"cageweb{uuid.uuid4().hex[:8]}.")
        self.log: KafkaCageLog | None = None

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop = asyncio.Event()
        settings = broker_settings(self.bootstrap, topic_prefix=self.prefix)
        await ensure_topics(settings, T.ALL_TOPICS)
        running: list[Service] = []
        self.log = KafkaCageLog(settings, answer_timeout_s=60)
        try:
            for core in (CageCore(), ProjectionCore()):
                svc = build_service(core, settings)
                await svc.start()
                running.append(svc)
            for svc in running:
                await svc.wait_ready()
            opened = await self.log.send(command(TABLE, "opener-1", datetime.now(UTC), RecordOpener(
                shift_id="CB1-s1", gaming_day="2026-12-03", pit="pit-A", chips=chips((2_500, 40), (500, 100)),
                total_cents=150_000, supervisor_id="sup-1"), actor="dl-1"))
            assert [type(e.payload).__name__ for e in opened] == ["ShiftOpened"], opened
            pit = create_pit_app(running[-1].host, Credentials(TOKENS), ready=lambda: True, replay=False,
                                 cage_log=self.log)
            self.started.set()
            await serve_pit(pit, "127.0.0.1", self.port, self.stop)
        finally:
            await self.log.stop()
            for svc in reversed(running):
                await svc.stop()

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

    form = driver.find_element(By.ID, form_id)
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def _outcome(driver: Any, want: str) -> str:
    from selenium.webdriver.common.by import By

    _wait(driver, lambda d: d.find_elements(By.ID, "outcome"), f"the outcome ({want})")
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
    _login(d, base, "pit", "/cage/desk")
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
    _login(d, base, "dealer", "/cage/desk")
    assert "(open: on its way)" in d.find_element(By.ID, f"shift-{TABLE}-CB1-s1").text
    assert _forms(d) == [f"act-{TABLE}-receive_fill-F-101"]
    d.save_screenshot(str(SHOTS / "cage-dealer-open-fill.png"))
    _fill(d, f"act-{TABLE}-receive_fill-F-101", actor="dl-1", supervisor_id="sup-1")
    assert _outcome(d, "booked") == "booked" and _forms(d) == []
    _logout(d)
    # the closer (the tray as it stands: $3,000), then the count team at the cage's desk
    closed = server.call(server.log.send(command(TABLE, "closer-1", datetime.now(UTC), RecordCloser(  # type: ignore[union-attr]
        shift_id="CB1-s1", chips=chips((2_500, 80), (500, 200)), total_cents=300_000, supervisor_id="sup-1"),
        actor="dl-1")))
    assert [type(e.payload).__name__ for e in closed] == ["ShiftClosed"]
    _login(d, base, "cage", "/cage/desk")
    _fill(d, f"act-{TABLE}-remove_drop_box-CB1-s1", actor="ct-1")
    assert _outcome(d, "booked") == "booked"
    _fill(d, f"act-{TABLE}-count_drop_box-CB1-s1", actor="ct-1", cash="", cash_total="0", counters="ct-2 ct-3")
    assert _outcome(d, "booked") == "booked"
    d.get(f"{base}/cage/statement")
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
