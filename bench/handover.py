"""Hand-over benchmark (issue 25): how long a stopped (SIGTERM) or killed (``kill -9``) instance's tables stall
before a surviving instance goes on with them, on real processes (:mod:`croupier.handover`).

Run: ``.venv/bin/python bench/handover.py [--reps 3] [--service dealing] [--baseline-croupier PATH]
[--bootstrap HOST:PORT]``. Each rep is one small floor (one instance of each decider and two of ``--service``,
4 partitions, 8 tables) per signal. ``--baseline-croupier``: another checkout's ``croupier`` (e.g. main's
``.venv/bin/croupier``) measured the same way in the same run, reps interleaved, for the ratio.

Prints one ``handover ...`` line per floor, then per signal and build: the medians and maxima of

* ``assigned_s``: signal → the survivor's assignment naming every task of the victim;
* ``stall_s``: signal → the survivor's first own event in each of those partitions (the longest);
* ``gap_s``: the chaos run's stall: the partition's last event before the signal → its first after;

and last ``handover: sigterm_stall_p50=<s> kill9_stall_p50=<s> ...`` (with ``ratio=`` against the baseline's
medians when given). Targets: SIGTERM ≤ 2 s, ``kill -9`` ≤ the session timeout + 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from croupier.handover import Handover, measure_handover
from services.runtime.app import SESSION_TIMEOUT_MS


def _fig(xs: list[float | None]) -> str:
    got = [x for x in xs if x is not None]
    missing = len(xs) - len(got)
    if not got:
        return "none"
    return f"p50={statistics.median(got):.2f} max={max(got):.2f}" + (f" (+{missing} never)" if missing else "")


def _p50(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.median(got) if got else None


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--service", default="dealing")
    ap.add_argument("--baseline-croupier", default=None)
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    a = ap.parse_args(argv)
    builds = {"this": None} | ({"baseline": a.baseline_croupier} if a.baseline_croupier else {})
    runs: dict[tuple[str, str], list[Handover]] = {}
    for _ in range(a.reps):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for build, croupier in builds.items():
                res = await measure_handover(a.bootstrap, sig, service=a.service, croupier=croupier,
                                             out=lambda s, b=build: print(f"{b}: {s}", flush=True))
                runs.setdefault((build, res.sig), []).append(res)
    for (build, name), rs in sorted(runs.items()):
        print(f"{build} {name} n={len(rs)}: assigned_s {_fig([r.assigned_s for r in rs])}; "
              f"stall_s {_fig([r.stall_s for r in rs])}; gap_s {_fig([r.gap_s for r in rs])}", flush=True)
    def f(x: float | None) -> str:
        return "none" if x is None else f"{x:.2f}"

    term = _p50([r.stall_s for r in runs[("this", "SIGTERM")]])
    kill = _p50([r.stall_s for r in runs[("this", "SIGKILL")]])
    line = (f"handover: service={a.service} reps={a.reps} sigterm_stall_p50={f(term)} kill9_stall_p50={f(kill)} "
            f"session_s={SESSION_TIMEOUT_MS / 1000:g}")
    if "baseline" in builds:
        bt = _p50([r.stall_s for r in runs[("baseline", "SIGTERM")]])
        bk = _p50([r.stall_s for r in runs[("baseline", "SIGKILL")]])
        line += f" baseline_sigterm_p50={f(bt)} baseline_kill9_p50={f(bk)}"
        line += f" ratio_sigterm={term / bt:.2f}" if term and bt else ""
        line += f" ratio_kill9={kill / bk:.2f}" if kill and bk else ""
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
