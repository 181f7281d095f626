"""Issue 24 item 8: the surveillance page's alerts are not one long page of cut ids. Every alert held (up to
``ALERT_ROWS``, newest first) is a row carrying its table and player (``data-table``, ``data-player``: the
page's filter and its pages of 20, in ``pit.js``), its round id whole and a link to the round's replay; the
filter form and the pager sit outside the live-replaced part, so a live frame keeps what the watcher chose."""

from __future__ import annotations

import re

import msgspec
import pytest

from contracts.events import AdvantageBetFlagged
from services.projection import page_frags
from tests.services.test_pit_pages import T, client, login, pit_app, play_round


def _flag(n: int) -> AdvantageBetFlagged:
    return AdvantageBetFlagged(
        round_id=f"round-{n:04d}-0123456789abcdef", shoe_id="s1", bet_id=f"b{n}", seat=1 + n % 3,
        player_id=f"p-{n % 3}", wager="dragon_7", stake_cents=1000 + n, ev=0.1, ev_num=1, ev_den=10,
        expected_gain_cents=100, cards_left=40)


@pytest.mark.parametrize("rows", [500, 10])
async def test_every_alert_is_a_row_with_its_table_player_and_whole_round_id_for_the_filter_and_pages(
        rows: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(page_frags, "ALERT_ROWS", rows)
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        await play_round(c)
        held = pit.pages.tables()[T]
        flagged = {T: msgspec.structs.replace(held, alerts=tuple(_flag(n) for n in range(45))),
                   "T2": msgspec.structs.replace(held, alerts=tuple(_flag(n) for n in range(45, 90)))}
        pit.pages.tables = lambda: flagged
        await login(c, "surveillance")
        page = (await c.get("/surveillance")).text
    form = page.split('<form id="alerts-filter"')[1].split("</form>")[0]
    assert 'id="alerts-filter-table"' in form and 'id="alerts-filter-player"' in form
    assert 'id="alerts-newer"' in form and 'id="alerts-older"' in form and 'id="alerts-page"' in form
    assert page.index('id="alerts-filter"') < page.index('<section id="alerts"')  # outside the live part
    shown = re.findall(r'<tr class="alert" data-table="(\w+)" data-player="(p-\d)"><td>\1</td><td class="round-id">'
                       r'<a href="/replay/\1/rounds/([\w-]+)"><code>([\w-]+)</code></a></td><td>\d \2</td>', page)
    assert all(link == rid for _, _, link, rid in shown)
    want = [("T1" if n < 45 else "T2", f"p-{n % 3}", f"round-{n:04d}-0123456789abcdef") for n in range(90)]
    # newest first (the tables in order, each table's alerts newest last in the state; the list reversed)
    assert [(t, p, r) for t, p, _, r in shown] == want[::-1][:rows], shown[:3]
    if rows < 90:
        assert f"Latest alerts (90 held; the latest {rows} here, every one at <code>/alerts</code>)" in page
    else:
        assert "Latest alerts (90 held)</h3>" in page
