"""Fix 9 of issue 24: a voided round is neither a round nor stakes, for the cage's figures and for the replay
alike. Its bets are returned without action (13:69F-3.2(d) void), so a cage counting it among its rounds
would show a round never decided (the pace, the average bet per round); the replay's totals now leave it out
the same way and count it apart."""

from __future__ import annotations

from datetime import UTC, datetime

from croupier.pit import create_pit_app
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
