"""Benchmark of the exact odds engine (baccarat.odds.exact_counts) on mid-shoe compositions.

Run: ``.venv/bin/python bench/odds.py [--compositions 400] [--naive 5] [--seed 20240601]``

* one-time table build per ruleset is timed separately and excluded from the per-call numbers (warm-up);
* per-call time: median over many random mid-shoe compositions (8 decks minus 100–300 random cards, from a
  seeded ``random.Random``: the bench is at the edge, randomness is fine here);
* one-card update: from each composition's :class:`baccarat.odds_live.LiveOdds`, one random card leaves the
  shoe (``remove`` + ``column_counts()``: the 30 counts as ints; wrapping them in an ``OutcomeCounts`` is
  timed apart), checked equal to the full evaluation on the numpy path;
* the numpy path's full evaluation (the reference and fallback) is timed in the same process, for the ratio;
* times are this thread's CPU time (``time.thread_time_ns``): the machine is shared, wall time is noise there;
* baseline: a straightforward exact nested-loop pure-Python enumerator (values P1, B1, P2, B2, then third cards
  as Table 1 / Table 2 require, falling-factorial weights, unused positions weighted by the falling factorial of
  the cards left) on a handful of the same compositions; both must give identical counts (every field).

The last line is exactly ``odds: median_us=<x> update_us=<u> naive_median_ms=<y> speedup=<z>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baccarat import odds as engine
from baccarat.drawing import PUNTO_BANCO
from baccarat.odds import Composition, exact_counts, table_for
from baccarat.odds_live import LiveOdds
from baccarat.odds_reference import naive_counts


def mid_shoe_compositions(count: int, seed: int) -> list[Composition]:
    """``count`` compositions: a full 8-deck shoe minus 100–300 random cards."""
    rng = random.Random(seed)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    return [full.without(rng.sample(shoe, rng.randint(100, 300))) for _ in range(count)]


def timed(fn, comps: list[Composition], repeats: int) -> list[int]:  # type: ignore[no-untyped-def]
    """CPU ns of ``fn(c)`` for every composition, ``repeats`` passes."""
    clock = time.thread_time_ns
    out = []
    for _ in range(repeats):
        for c in comps:
            t = clock()
            fn(c)
            out.append(clock() - t)
    return out


def report(label: str, samples: list[int]) -> float:
    """Print median/p10/p90 of ``samples`` (ns) in us; return the median."""
    samples = sorted(samples)
    med = statistics.median(samples) / 1e3
    p10, p90 = samples[len(samples) // 10] / 1e3, samples[9 * len(samples) // 10] / 1e3
    print(f"{label}: {len(samples)} calls, median {med:.1f} us (p10 {p10:.1f}, p90 {p90:.1f})")
    return med


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

    clock = time.thread_time_ns
    samples = timed(lambda c: exact_counts(c), comps, args.repeats)
    median_us = report(f"exact_counts ({engine.ENGINE})", samples)
    plan = engine._plan(PUNTO_BANCO)
    ref = timed(lambda c: engine._column_counts(c.counts, c.total, plan, "float64"), comps, args.repeats)
    ref_us = report("numpy path, full evaluation", ref)
    print(f"full evaluation: {engine.ENGINE} {median_us:.1f} us vs numpy {ref_us:.1f} us: {ref_us / median_us:.1f}x")

    rng = random.Random(args.seed + 1)
    update: list[int] = []
    wrapped: list[int] = []
    for _ in range(args.repeats):
        for c in comps:
            live = LiveOdds(c)
            v = rng.choice([v for v in range(10) for _ in range(c[v])])
            t0 = clock()
            live.remove(v)
            got = live.column_counts()
            t1 = clock()
            live.counts()
            t2 = clock()
            update.append(t1 - t0)
            wrapped.append(t2 - t1)
            left = c.without([v])
            if got != engine._column_counts(left.counts, left.total, plan, "float64"):
                raise SystemExit(f"MISMATCH after removing a {v} from {c.counts}")
    update_us = report("one-card update (remove + the 30 counts as ints), exact", update)
    report("  then wrapping them in an OutcomeCounts", wrapped)

    clock = time.perf_counter_ns
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
    print(f"odds: median_us={median_us:.1f} update_us={update_us:.1f} naive_median_ms={naive_median_ms:.1f} speedup={speedup:.0f}")


if __name__ == "__main__":
    main()
