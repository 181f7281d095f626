"""The straightforward exact enumerator: the odds engine's baseline and oracle.

Nested loops in pure Python over the values of P1, B1, P2, B2 and then the third cards as the ruleset's
Table 1 / Table 2 cells require, each path weighted by the falling factorial of the cards left, and a round
that ends after 4 or 5 cards weighted by the ways to draw the unused positions, so every count is out of
Permut(N, 6) (odds-and-roads.md §1). Tens to hundreds of milliseconds per composition: ``bench/odds.py``
times it against :func:`baccarat.odds.exact_counts`, and the tests use it as an independent oracle.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from baccarat.drawing import STOOD, Action, Ruleset

BONUS_KEYS = ("natural_win", "natural_tie", *(f"win_by_{k}" for k in range(4, 10)), "lose")


def naive_counts(counts: tuple[int, ...], ruleset: Ruleset) -> dict[str, Any]:
    """Straightforward exact enumeration in pure Python; returns the ``OutcomeCounts.to_dict()`` shape."""
    n = list(counts)
    total = sum(n)
    player_draws = [a is Action.DRAW for a in ruleset.player]
    banker_draws = [[a is Action.DRAW for a in row] for row in ruleset.banker]
    natural = ruleset.natural
    leaves: Counter[tuple[int, int, int, int]] = (
        Counter()
    )  # (player pts, banker pts, player cards, banker cards)
    for p1 in range(10):
        w1 = n[p1]
        if not w1:
            continue
        n[p1] -= 1
        for b1 in range(10):
            w2 = w1 * n[b1]
            if not w2:
                continue
            n[b1] -= 1
            for p2 in range(10):
                w3 = w2 * n[p2]
                if not w3:
                    continue
                n[p2] -= 1
                for b2 in range(10):
                    w4 = w3 * n[b2]
                    if not w4:
                        continue
                    n[b2] -= 1
                    p, b = (p1 + p2) % 10, (b1 + b2) % 10
                    if p in natural or b in natural:
                        leaves[p, b, 2, 2] += w4 * (total - 4) * (total - 5)
                    elif player_draws[p]:
                        for p3 in range(10):
                            w5 = w4 * n[p3]
                            if not w5:
                                continue
                            n[p3] -= 1
                            if banker_draws[b][p3]:
                                for b3 in range(10):
                                    leaves[(p + p3) % 10, (b + b3) % 10, 3, 3] += w5 * n[b3]
                            else:
                                leaves[(p + p3) % 10, b, 3, 2] += w5 * (total - 5)
                            n[p3] += 1
                    elif banker_draws[b][STOOD]:
                        for b3 in range(10):
                            leaves[p, (b + b3) % 10, 2, 3] += w4 * n[b3] * (total - 5)
                    else:
                        leaves[p, b, 2, 2] += w4 * (total - 4) * (total - 5)
                    n[b2] += 1
                n[p2] += 1
            n[b1] += 1
        n[p1] += 1

    d: dict[str, Any] = {"total": total * (total - 1) * (total - 2) * (total - 3) * (total - 4) * (total - 5)}
    d.update(
        dict.fromkeys(("banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8"), 0)
    )
    d["naturals"] = {"player_8": 0, "player_9": 0, "banker_8": 0, "banker_9": 0}
    d["bonus"] = {"player": dict.fromkeys(BONUS_KEYS, 0), "banker": dict.fromkeys(BONUS_KEYS, 0)}
    for (p, b, pc, bc), w in leaves.items():
        p_nat = pc == 2 and bc == 2 and p in natural
        b_nat = pc == 2 and bc == 2 and b in natural
        d["player" if p > b else "banker" if b > p else "tie"] += w
        d[f"cards_{pc + bc}"] += w
        d["dragon_7"] += w if bc == 3 and b == 7 and b > p else 0
        d["panda_8"] += w if pc == 3 and p == 8 and p > b else 0
        if p_nat:
            d["naturals"][f"player_{p}"] += w
        if b_nat:
            d["naturals"][f"banker_{b}"] += w
        for side, mine, theirs, nat, other_nat in (
            ("player", p, b, p_nat, b_nat),
            ("banker", b, p, b_nat, p_nat),
        ):
            if nat and mine > theirs:
                key = "natural_win"
            elif nat and other_nat and mine == theirs:
                key = "natural_tie"
            elif not nat and mine - theirs >= 4:
                key = f"win_by_{mine - theirs}"
            else:
                key = "lose"
            d["bonus"][side][key] += w
    return d
