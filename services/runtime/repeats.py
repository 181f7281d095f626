"""Repeated log lines folded into one line with a count per interval.

A client library whose broker is down says so on every retry: aiokafka logs ``Unable connect to node with id
1: ...`` for each client about ten times a second, thousands of lines in 30 s. :class:`RepeatLimiter` holds
every line of one *key* (the caller's choice: logger, level and message template, not its arguments) that
arrives within ``interval_s`` of the first, and hands back one :class:`Repeat` when the interval is over:
the first line and how many arrived (``count``, the first included). So N repeats within an interval are one
line with count N, and a line that comes once is one line with count 1, at most ``interval_s`` late.

Pure: the clock is an argument (seconds, monotonic); it takes no lock (callers from several threads hold
their own, as :class:`services.runtime.client_logs.ClientLogHandler` does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: the default interval (s): one line per kind of repeated client error every 10 s at most
INTERVAL_S = 10.0


@dataclass(slots=True)
class Repeat(Generic[T]):
    """The lines of one key within one interval: the first ``item``, how many arrived (``count`` >= 1), and
    the clock's readings of the first and the last (s)."""

    key: Hashable
    item: T
    count: int
    first_at: float
    last_at: float


class RepeatLimiter(Generic[T]):
    """Counts the lines of each key per interval: :meth:`offer` each line, then take :meth:`due` ones (or
    :meth:`drain` them all at shutdown). ``interval_s`` must be positive."""

    def __init__(self, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, got {interval_s!r}")
        self.interval_s = interval_s
        self.clock = clock
        self._open: dict[Hashable, Repeat[T]] = {}

    def offer(self, key: Hashable, item: T) -> bool:
        """Count one line of ``key``. True when it opened an interval (it is the first of its key since the
        last one was handed back), False when it was only counted."""
        now = self.clock()
        held = self._open.get(key)
        if held is not None:
            held.count += 1
            held.last_at = now
            return False
        self._open[key] = Repeat(key, item, 1, now, now)
        return True

    def due(self) -> list[Repeat[T]]:
        """The keys whose interval is over, oldest first, forgotten here (the next line of such a key opens
        a new interval)."""
        now = self.clock()
        done = [r for r in self._open.values() if now - r.first_at >= self.interval_s]
        for r in done:
            del self._open[r.key]
        return done

    def drain(self) -> list[Repeat[T]]:
        """Every key still held, oldest first, whether or not its interval is over (shutdown)."""
        done = list(self._open.values())
        self._open.clear()
        return done

    def next_due_in(self) -> float | None:
        """Seconds until the oldest held interval ends (0 if one already has), None when nothing is held."""
        if not self._open:
            return None
        first = min(r.first_at for r in self._open.values())
        return max(0.0, first + self.interval_s - self.clock())

    def __len__(self) -> int:
        return len(self._open)
