"""Issue 24 item 7: the floor's line of the gaming day's and the shift's totals is live. It is a part the live
feed pushes with the tables that changed (``id="floor-totals"``), for the roles that read money only, and says
what the query API's ``/floor`` totals say."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from tests.services.test_pit_pages import T, client, login, pit_app, play_round


def _totals(frames: list[str]) -> str | None:
    """The floor-totals part among the live frames (its HTML), None when none was pushed."""
    for f in frames:
        data = json.loads(f.split("data: ", 1)[1])
        if data["id"] == "floor-totals":
            return str(data["html"])
    return None


async def test_the_day_and_shift_totals_line_is_pushed_live_with_the_tables_to_the_money_roles():
    pit, _ = pit_app()
    pit.pages.clock = lambda: datetime(2026, 12, 1, 18, tzinfo=UTC)  # an hour after the command API's clock
    async with client(pit) as c:
        await login(c, "pit")
        page = (await c.get("/")).text
        assert re.search(r'<p class="totals" id="floor-totals">Gaming day \d{4}-\d\d-\d\d, shift \d: drop \$0\.00, ',
                         page), page
        assert "as of the page's load" not in page
        await login(c, "dealer")
        await play_round(c)  # a $25.00 Player bet, settled
    api = pit.pages.floor_figures(True)["totals"]  # the query API's /floor totals now
    line = _totals(pit.pages.render(("floor", True), [T]))
    assert line is not None
    day, shift = api["day"], api["shift"]
    assert day["drop_cents"] == 2500 and day["rounds"] == 1
    win = f"${day['win_cents'] / 100:,.2f}".replace("$-", "-$")
    assert f"drop $25.00, win {win}, " in line and f"(shift: drop ${shift['drop_cents'] / 100:,.2f}, " in line
    assert "1 round(s) decided today, live</p>" in line
    assert _totals(pit.pages.render(("floor", False), [T])) is None  # no money for the other roles
    assert _totals(pit.pages.render(("floor", True), [])) is None  # nothing changed: nothing pushed
