"""Simulated bettors: who bets what, deterministically from an injected random source.

Every seat has a player id and a style. ``mixed`` bettors spread over every wager the table offers (a main
wager most rounds, Tie and side bets now and then), so a full shoe exercises every settlement path.
Amounts are multiples of $5 within the table's limits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from baccarat.table import TableConfig
from baccarat.wagers import BONUS_WAGERS, MAIN_WAGERS, Wager
from contracts.commands import PlaceBet

STEP_CENTS = 500


@dataclass(frozen=True, slots=True)
class Seat:
    """A seated player: seat number (1-based), player id, and style (``mixed`` | ``main_only``)."""

    seat: int
    player_id: str
    style: str = "mixed"


def _amount(rng: random.Random, lo: int, hi: int) -> int:
    lo_steps = -(-lo // STEP_CENTS)
    hi_steps = max(lo_steps, min(hi, lo * 20) // STEP_CENTS)
    return rng.randint(lo_steps, hi_steps) * STEP_CENTS


def bets_for_round(rng: random.Random, config: TableConfig, round_id: str, seats: list[Seat]) -> list[PlaceBet]:
    """The bets the seated players make on one round (possibly none for a seat)."""
    offered = sorted(config.wagers, key=lambda w: list(Wager).index(w))
    mains = [w for w in offered if w in MAIN_WAGERS]
    sides = [w for w in offered if w not in MAIN_WAGERS]
    out: list[PlaceBet] = []
    for s in seats:
        chosen: list[Wager] = []
        if mains and rng.random() < 0.9:
            chosen.append(rng.choice(mains))
        if s.style == "mixed":
            for w in sides:
                if w in BONUS_WAGERS and config.bonus_requires_base_bet and not chosen:
                    continue
                if rng.random() < 0.25:
                    chosen.append(w)
        for w in chosen:
            lim = config.limits_for(w)
            out.append(PlaceBet(round_id=round_id, seat=s.seat, player_id=s.player_id, wager=w.value,
                                amount_cents=_amount(rng, lim.min_cents, lim.max_cents)))
    return out
