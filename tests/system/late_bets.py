"""The round of the late-bet tests (``test_log_time.py``, ``test_split_fetch.py``): three bets in time,
"No more bets", a fourth bet after it; then the call must hold the three and refuse the fourth."""

from __future__ import annotations

import asyncio

from contracts import topics as T
from contracts.commands import CloseBetting, PlaceBet
from contracts.events import BetRejected, BettingClosed, BetWithdrawn, RoundSettled
from services.floor.dealer import Clock
from services.runtime.core import command
from tests.system.test_cluster import SEATS, Cluster


def _bet(table: str, k: int, n: int, round_id: str) -> object:
    seat = 1 + (n - 1) % len(SEATS)  # bet 4 is seat 1's second bet
    return command(table, f"bet-{k}-{n}", Clock()(), PlaceBet(
        round_id=round_id, seat=seat, player_id=f"player-{seat}", wager="banker" if n < 4 else "player",
        amount_cents=2_500))


async def log_bets_call_and_late_bet(c: Cluster, table: str, k: int, round_id: str) -> None:
    """Send bets ``bet-k-1``..``bet-k-3`` (banker, 25.00 each, seats 1–3), the call (``close-k``), and
    10 ms later ``bet-k-4`` (seat 1, player), so the late bet gets a later log time than the call."""
    for n in (1, 2, 3):
        await c.io.send(T.WAGERING_BETS, _bet(table, k, n, round_id))
    call = command(table, f"close-{k}", Clock()(), CloseBetting(round_id=round_id))
    await c.io.send(T.WAGERING_COMMANDS, call)
    await asyncio.sleep(0.01)
    await c.io.send(T.WAGERING_BETS, _bet(table, k, 4, round_id))


async def check_the_call_held_the_bets_in_time(c: Cluster, table: str, k: int, since: int) -> None:
    """``BettingClosed`` holds bets 1–3; bet 4 is refused ``betting_closed`` (read before the call was
    decided: placed, then returned by the call; read after: rejected); the round is settled."""
    closed = await c.io.wait(table, lambda e: isinstance(e.payload, BettingClosed), since, 90)
    assert sorted(b.bet_id for b in closed.payload.bets) == [f"bet-{k}-{n}" for n in (1, 2, 3)], k

    def fourth_refused(e: object) -> bool:
        x = e.payload  # type: ignore[attr-defined]
        return ((isinstance(x, BetWithdrawn) and x.bet_id == f"bet-{k}-4")
                or (isinstance(x, BetRejected) and e.causation_id == f"bet-{k}-4"))  # type: ignore[attr-defined]

    fourth = await c.io.wait(table, fourth_refused, since, 90)
    assert fourth.payload.reason == "betting_closed"
    await c.io.wait(table, lambda e: isinstance(e.payload, RoundSettled), since, 90)
