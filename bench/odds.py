"""Benchmark of the exact odds engine (baccarat.odds.exact_counts) on mid-shoe compositions.

Run: ``.venv/bin/python bench/odds.py [--compositions 400] [--naive 5] [--seed 20240601]``

* one-time table build per ruleset is timed separately and excluded from the per-call numbers (warm-up);
* per-call time: median over many random mid-shoe compositions (8 decks minus 100–300 random cards, from a
  seeded ``random.Random``: the bench is at the edge, randomness is fine here);
* baseline: a straightforward exact nested-loop pure-Python enumerator (values P1, B1, P2, B2, then third cards
  as Table 1 / Table 2 require, falling-factorial weights, unused positions weighted by the falling factorial of
  the cards left) on a handful of the same compositions; both must give identical counts (every field).

The last line is exactly ``odds: median_us=<x> naive_median_ms=<y> speedup=<z>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baccarat.drawing import PUNTO_BANCO, STOOD, Action, Ruleset
from baccarat.odds import Composition, exact_counts, table_for

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


def mid_shoe_compositions(count: int, seed: int) -> list[Composition]:
    """``count`` compositions: a full 8-deck shoe minus 100–300 random cards."""
    rng = random.Random(seed)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    return [full.without(rng.sample(shoe, rng.randint(100, 300))) for _ in range(count)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compositions", type=int, default=400, help="mid-shoe compositions to time")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes over the compositions")
    ap.add_argument("--naive", type=int, default=5, help="compositions for the nested-loop baseline")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv)

    t0 = time.perf_counter_ns()
    table_for(PUNTO_BANCO)
    build_ms = (time.perf_counter_ns() - t0) / 1e6
    print(f"one-time table build (punto_banco): {build_ms:.1f} ms")

    comps = mid_shoe_compositions(args.compositions, args.seed)
    print(f"compositions: {len(comps)} (8 decks minus 100-300 cards; totals {min(c.total for c in comps)}"
          f"..{max(c.total for c in comps)}), seed {args.seed}")  # fmt: skip
    for c in comps[:50]:  # warm-up
        exact_counts(c)

    samples: list[int] = []
    clock = time.perf_counter_ns
    for _ in range(args.repeats):
        for c in comps:
            t = clock()
            exact_counts(c)
            samples.append(clock() - t)
    samples.sort()
    median_us = statistics.median(samples) / 1e3
    p10, p90 = samples[len(samples) // 10] / 1e3, samples[9 * len(samples) // 10] / 1e3
    print(f"exact_counts: {len(samples)} calls, median {median_us:.1f} us (p10 {p10:.1f}, p90 {p90:.1f})")

    naive_ms: list[float] = []
    for c in comps[: args.naive]:
        t = clock()
        expected = naive_counts(c.counts, PUNTO_BANCO)
        naive_ms.append((clock() - t) / 1e6)
        got = exact_counts(c).to_dict()
        if got != expected:
            raise SystemExit(f"MISMATCH for {c.counts}:\n engine {got}\n naive  {expected}")
    naive_median_ms = statistics.median(naive_ms)
    print(f"naive nested loops: {len(naive_ms)} compositions, identical counts, "
          f"median {naive_median_ms:.1f} ms ({', '.join(f'{x:.0f}' for x in naive_ms)} ms)")  # fmt: skip
    speedup = naive_median_ms * 1e3 / median_us
    print(f"odds: median_us={median_us:.1f} naive_median_ms={naive_median_ms:.1f} speedup={speedup:.0f}")


if __name__ == "__main__":
    main()
