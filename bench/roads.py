"""Benchmark: the five roadmaps of a shoe's results (:func:`baccarat.roads.roads`), as the pit and the scoreboard
draw them after every round.

Times ``roads`` over a 90-round and a 30-round shoe (the same repeating sequence with ties and both sides'
streaks), ``--number`` calls per sample, ``--repeats`` samples; reports the median per call in µs
(``time.process_time``: the machine is shared, wall time is not this process's) and the ratio of the two,
which is about 3 while the cost per round is constant. Before this bench a unit test asserted under 1 ms a call
(a timed assertion: it failed on a loaded machine at 1.04 ms).

Last line: ``roads: us_per_call_90=<a> us_per_call_30=<b> ratio=<a/b>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baccarat.roads import roads  # noqa: E402

SEQUENCE = "BBPTBPPPBTBBBBBBBPPBPTPB"


def per_call_us(seq: str, number: int, repeats: int) -> float:
    """The median over ``repeats`` samples of the CPU time of one ``roads(seq)`` call, in µs."""
    samples = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            roads(seq)
        samples.append((time.process_time() - t0) / number * 1e6)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--number", type=int, default=200, help="calls per sample (default 200)")
    ap.add_argument("--repeats", type=int, default=9, help="samples (default 9; the median is reported)")
    a = ap.parse_args(argv)
    if a.number < 1 or a.repeats < 1:
        ap.error("--number and --repeats must be at least 1")
    long, short = (SEQUENCE * 4)[:90], (SEQUENCE * 2)[:30]
    us90 = per_call_us(long, a.number, a.repeats)
    us30 = per_call_us(short, a.number, a.repeats)
    print(f"roads: us_per_call_90={us90:.1f} us_per_call_30={us30:.1f} ratio={us90 / us30:.2f}")


if __name__ == "__main__":
    main()
