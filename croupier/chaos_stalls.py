"""What the chaos run's stalls and restores were (:mod:`croupier.chaos`, whose docstring defines a stall):
the (fault, table) gaps, their p99, the report's lines per fault kind and the longest gaps, and the
instances' restore waves from their JSON logs."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from croupier.chaos_model import Fault


@dataclass(frozen=True)
class Stall:
    """One (fault, table) pair's gap: the table's last event before the fault and its first after (ms since
    the epoch; ``end`` is the floor's end for a table that never moved again)."""

    fault: Fault
    table: str
    start_ms: int
    end_ms: int

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000


def stalls(faults: list[Fault], progress_ms: dict[str, list[int]], end_ms: int) -> list[Stall]:
    """Every (fault, table) gap (see the module docstring); tables that had not started at the fault are
    left out. ``progress_ms``: each table's event times (ms, ascending)."""
    import bisect

    out = []
    for f in faults:
        for table, ts in progress_ms.items():
            i = bisect.bisect_right(ts, f.at_ms)
            if i == 0:
                continue  # the table had not started
            out.append(Stall(f, table, ts[i - 1], ts[i] if i < len(ts) else end_ms))
    return out


def _nearest_rank(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)]


def stall_p99(faults: list[Fault], progress_ms: dict[str, list[int]], end_ms: int) -> float:
    """The 99th percentile (nearest rank) of the stalls (see the module docstring), in seconds; 0 without
    faults."""
    found = [s.seconds for s in stalls(faults, progress_ms, end_ms)]
    return _nearest_rank(found, 0.99) if found else 0.0


def restore_waves(lines: list[str]) -> list[tuple[float, int]]:
    """An instance's restore waves, from its JSON log ``lines``: for each ``assigned`` line that named tasks
    to restore (``restoring``), the seconds from it to the last of those tasks' ``restored`` lines, and how
    many there were. A wave whose tasks were not all restored before the next assignment is left out."""
    out: list[tuple[float, int]] = []
    at: datetime | None = None
    pending: set[int] = set()
    n = 0
    last: datetime | None = None
    for line in lines:
        if '"assigned"' not in line and '"restored"' not in line:
            continue
        try:
            x = json.loads(line)
            t = datetime.fromisoformat(x["timestamp"])
        except (ValueError, KeyError, TypeError):
            continue
        if x.get("event") == "assigned":
            at, pending, n, last = t, set(x.get("restoring") or ()), 0, None
        elif x.get("event") == "restored" and at is not None and x.get("task") in pending:
            pending.discard(x["task"])
            n, last = n + 1, t
            if not pending:
                out.append(((last - at).total_seconds(), n))
                at = None
    return out


def restore_line(workdir: Path) -> str | None:
    """The report's line on restore waves of two tasks or more, over every instance log in ``workdir``
    (:func:`restore_waves`): how many, their median size, and their p50/p90/max seconds."""
    waves: list[tuple[float, int]] = []
    for log in sorted(workdir.glob("*.log")):
        if log.name != "replica.log":
            waves += [w for w in restore_waves(log.read_text(errors="replace").splitlines()) if w[1] >= 2]
    if not waves:
        return None
    secs = [s for s, _ in waves]
    sizes = sorted(n for _, n in waves)
    return (f"restore waves (assigned -> its last task restored, 2+ tasks): n={len(waves)} "
            f"tasks median={sizes[len(sizes) // 2]} p50={_nearest_rank(secs, 0.5):.2f} s "
            f"p90={_nearest_rank(secs, 0.9):.2f} s max={max(secs):.2f} s")


def _kind_figures(by_kind: dict[str, list[float]]) -> str:
    return "; ".join(f"{k} n={len(v)} p50={_nearest_rank(v, 0.5):.1f} p99={_nearest_rank(v, 0.99):.1f} "
                     f"max={max(v):.1f}" for k, v in sorted(by_kind.items()))


def stall_lines(faults: list[Fault], progress_ms: dict[str, list[int]], end_ms: int, worst: int = 5) -> list[str]:
    """What the stalls were made of, for the report: per fault kind the (fault, table) pairs' p50, p99 and
    longest stall (s), and again over the pairs whose gap held no other fault (a fault's own cost, since
    faults a few seconds apart share one gap and the p99 is often such a gap); then the ``worst`` longest
    gaps, each with every fault that fell inside it (s from the gap's start)."""
    found = stalls(faults, progress_ms, end_ms)
    if not found:
        return []
    by_kind: dict[str, list[float]] = {}
    for s in found:
        by_kind.setdefault(s.fault.kind, []).append(s.seconds)
    lines = ["stall by fault kind (s, over fault x table): " + _kind_figures(by_kind)]
    alone: dict[str, list[float]] = {}
    for s in found:
        if not any(f is not s.fault and s.start_ms <= f.at_ms <= s.end_ms for f in faults):
            alone.setdefault(s.fault.kind, []).append(s.seconds)
    if alone:
        lines.append("  the same, gaps holding no other fault (one fault's own cost): " + _kind_figures(alone))
    seen: set[tuple[str, int]] = set()
    for s in sorted(found, key=lambda s: -s.seconds):
        if (s.table, s.start_ms) in seen:
            continue  # the same gap again, for another fault inside it
        seen.add((s.table, s.start_ms))
        inside = [f for f in faults if s.start_ms <= f.at_ms <= s.end_ms]
        lines.append(f"  stall {s.seconds:.1f} s at {s.table}: " + ", ".join(
            f"{f.kind} {f.target} +{(f.at_ms - s.start_ms) / 1000:.1f}" for f in inside))
        if len(seen) >= worst:
            break
    return lines
