"""Benchmark: where one odds view's per-card time goes (kernel vs the Python around it), whole 8-deck shoes.

Run: ``.venv/bin/python bench/odds_views_split.py [--shoes 3] [--cards 380]``

Per card of ``--shoes`` shuffled 8-deck shoes (seeded), medians of this thread's CPU time of: the kernel's full
``evaluate``; a tracker's ``remove`` of the card and its 30 counts (``sums``); the ``OddsUpdated.counts`` dict;
the configuration's generated wager lines (the Python path); the kernel's ``view`` (the counts dict and the
wager lines in C, what the projection runs where the kernel is built); and one whole ``LiveViews.odds`` call
(follow, then the kernel's view). Then both views' trackers losing the card (public, and surveillance three
face-down burns behind): two ``remove`` calls against one ``remove_pair`` (one walk of the table for the two,
what the projection runs), alternated per card in random order. Last line:
``odds_views_split: evaluate_us=… remove_us=… sums_us=… counts_us=… wagers_us=… kview_us=… view_us=…
two_removes_us=… remove_pair_us=…``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baccarat import odds
from baccarat.drawing import PUNTO_BANCO
from baccarat.odds import Composition, permut6
from baccarat.odds_live import LiveOdds
from baccarat.table import punto_banco_full
from services.projection.odds_views import LiveViews, _compiled, counts_dict, native_lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shoes", type=int, default=3)
    ap.add_argument("--cards", type=int, default=380, help="cards dealt per shoe (at most 410)")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    if odds.NATIVE is None:
        raise SystemExit("the compiled odds kernel is not built (this bench splits its time)")
    clk = time.thread_time_ns
    plan, config = odds._plan(PUNTO_BANCO), punto_banco_full()
    wagers = _compiled(config)
    lines = native_lines(config)
    rng = random.Random(args.seed)
    full = Composition.full(8).counts
    shoe = [v for v in range(10) for _ in range(full[v])]
    ev: list[int] = []
    rm: list[int] = []
    su: list[int] = []
    cd: list[int] = []
    wg: list[int] = []
    kv: list[int] = []
    vw: list[int] = []
    two: list[int] = []
    pair: list[int] = []
    native, pn = odds.NATIVE, plan.native
    for _ in range(args.shoes):
        rng.shuffle(shoe)
        counts = list(full)
        live, views = LiveOdds(counts), LiveViews()
        sur = list(full)
        for v in shoe[-3:]:  # burned face down: the surveillance view is three cards behind
            sur[v] -= 1
        a1, b1, a2, b2 = (native.Tracker(pn, c) for c in (counts, sur, counts, sur))
        for v in shoe[: args.cards]:
            counts[v] -= 1
            comp = tuple(counts)
            total = permut6(sum(comp))
            t0 = clk()
            odds.NATIVE.evaluate(plan.native, comp)
            t1 = clk()
            live.remove(v)
            t2 = clk()
            s = live.column_counts()
            t3 = clk()
            counts_dict(total, s)
            t4 = clk()
            wagers(total, s)
            t5 = clk()
            live.view(lines)
            t6 = clk()
            views.odds("view", comp, config)
            t7 = clk()
            if sur[v] > 0:
                sur[v] -= 1
                for k in (0, 1) if rng.random() < 0.5 else (1, 0):
                    u0 = clk()
                    if k == 0:
                        a1.remove(v)
                        b1.remove(v)
                    else:
                        a2.remove_pair(b2, v)
                    (two if k == 0 else pair).append(clk() - u0)
            for out, a, b in ((ev, t0, t1), (rm, t1, t2), (su, t2, t3), (cd, t3, t4), (wg, t4, t5), (kv, t5, t6),
                              (vw, t6, t7)):
                out.append(b - a)

    def med(xs: list[int]) -> float:
        return statistics.median(xs) / 1e3

    print(f"{len(ev)} cards, engine native (SIMD {odds.NATIVE.SIMD})")
    print(f"odds_views_split: evaluate_us={med(ev):.1f} remove_us={med(rm):.1f} sums_us={med(su):.1f} "
          f"counts_us={med(cd):.1f} wagers_us={med(wg):.1f} kview_us={med(kv):.1f} view_us={med(vw):.1f} "
          f"two_removes_us={med(two):.1f} remove_pair_us={med(pair):.1f}")
    if a1.sums() != a2.sums() or b1.sums() != b2.sums():
        raise SystemExit("MISMATCH: remove_pair differs from two removes")


if __name__ == "__main__":
    main()
