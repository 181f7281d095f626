"""Fix 9 of issue 24: a voided round is neither a round nor stakes, for the cage's figures and for the replay
alike. Its bets are returned without action (13:69F-3.2(d) void), so a cage counting it among its rounds
would show a round never decided (the pace, the average bet per round); the replay's totals now leave it out
the same way and count it apart. Each page says what it counts: the cage's day line "N round(s) decided" and
the voided rounds apart ("their bets returned: not in the rounds or the drop"), the replay's totals the voided
rounds apart ("not in these totals")."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from croupier.pit import create_pit_app
from croupier.pit_replay import story
from croupier.replay import replay
from services.command_api.gateway import CommandGateway, MemoryCommandBus
from services.floor.dealer import Clock
from services.projection.core import ProjectionCore
from services.projection.pit_views import day_of, figures
from tests.services.helpers import events, floor_bus
from tests.services.test_pit_pages import CREDS, SAME, TERMINAL, T, client, login, play_round


async def test_a_voided_round_is_neither_a_round_nor_stakes_for_the_cage_and_the_replay():
    bus, _ = floor_bus(7)
    projection = bus.add(ProjectionCore())
    gw = CommandGateway(MemoryCommandBus(bus), Clock(datetime(2026, 12, 1, 17, tzinfo=UTC)), timeout_s=0.5)
    pit = create_pit_app(projection, CREDS, ready=lambda: True, gateway=gw)

    async def from_bus(table_id: str, round_id: str | None) -> dict:  # type: ignore[type-arg]
        return story([e for e in events(bus) if e.table_id == table_id], table_id, round_id)

    pit.pages.replay = from_bus
    async with client(pit) as c:
        await login(c, "dealer")
        played = await play_round(c)  # one round decided: a $25.00 Player bet
        rnd = (await c.post(f"/command/tables/{T}/rounds", json={"actor": "d-1", "shoe_id": played["shoe_id"]},
                            headers=SAME)).json()
        bet = {"round_id": rnd["round_id"], "seat": 1, "player_id": "p-1", "wager": "banker", "amount": "50"}
        r = await c.post(f"/command/tables/{T}/bets", json=bet, headers={"Authorization": f"Bearer {TERMINAL}"})
        assert r.status_code == 200, r.text
        r = await c.post(f"/command/tables/{T}/rounds/void", json={"actor": "d-1", "round_id": rnd["round_id"],
                                                                   "reason": "card exposed"}, headers=SAME)
        assert r.status_code == 200, r.text
    await bus.pump()
    log = [e for e in events(bus) if e.table_id == T]
    settled = [e.payload for e in log if type(e.payload).__name__ == "RoundSettled"]
    assert [(s.bets, s.stakes) for s in settled][-1] == (1, 5000)  # the voided round's $50.00, returned
    s = pit.pages.tables()[T]
    [day] = s.pit.days
    cage = figures(day_of(s, day).hours.values())
    assert (cage["rounds"], cage["drop_cents"]) == (1, 2500), cage
    assert day_of(s, day).voided_total == 1
    totals = replay(log, T)["totals"]
    assert (totals["rounds"], totals["settled"], totals["voided"], totals["stakes"]) == (2, 1, 1, 2500), totals
    assert (totals["settled"], totals["stakes"]) == (cage["rounds"], cage["drop_cents"])
    # each page says what it counts, in the same words for the same rule
    async with client(pit) as c:
        await login(c, "pit")
        cage = (await c.get(f"/cage?gaming_day={day}")).text
        line = re.search(rf'<p id="cage-day-{T}">(.*?) · <a', cage)
        assert line, cage
        assert line.group(1).startswith("Day: 1 round(s) decided, drop $25.00, ")
        assert line.group(1).endswith(" · 1 voided round(s), their bets returned: not in the rounds or the drop")
        listing = (await c.get(f"/replay/{T}")).text
        said = re.search(r'<p id="replay-totals">([^<]*)</p>', listing)
        assert said and said.group(1).startswith(
            "2 round(s), 1 settled, 1 voided (its bets returned: not in these totals, nor in the cage's rounds and "
            "drop): stakes $25.00, "), said
