"""When has a service started with ``services.create(name, settings).start()`` restored its state?

Bench helper for ``bench/pipeline.py`` and ``bench/rebuild.py``. It uses only what a service exposes today
and degrades to what the runtime being rewritten may expose, without adding anything to ``services/runtime``:

1. a readiness flag, if the :class:`~services.runtime.app.Service` or its ``host`` has one (an attribute
   named in :data:`FLAG_NAMES`: a bool, a zero-argument callable, or an ``asyncio.Event``);
2. otherwise the service's own log line that says its rebuild finished (``"event": "rebuilt"``, or one of
   :data:`LOG_EVENTS`), seen by the structlog logger factory installed by :func:`watch_service_logs`.

Which of the two answered is reported (``how``), so a figure is never silently measured another way.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

#: attribute names of a readiness flag on a Service or its host (checked in this order)
FLAG_NAMES = ("ready", "is_ready", "restored")
#: structlog event names that mean "this service finished restoring its state"
LOG_EVENTS = ("rebuilt", "restored", "ready")
_QUOTED = tuple(f'"{w}"' for w in (*LOG_EVENTS, "warning", "error", "critical", "exception"))


class LogWatch:
    """Times (``perf_counter`` s) of every "rebuilt"-like log line, per service name (``service=`` bound
    by the runtime's ``get_logger``), and a counter of warnings/errors."""

    def __init__(self) -> None:
        self.seen: dict[str, list[float]] = defaultdict(list)
        self.fields: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.problems = 0

    def line(self, rendered: str) -> None:
        """Inspect one rendered JSON log line."""
        # fast path: a service logs one line per event (and per duplicate command on a replay)
        if not any(q in rendered for q in _QUOTED):
            return
        try:
            rec = json.loads(rendered)
        except ValueError:
            return
        if not isinstance(rec, dict):
            return
        if rec.get("event") in LOG_EVENTS and "service" in rec:
            self.seen[str(rec["service"])].append(time.perf_counter())
            self.fields[str(rec["service"])].append(rec)
        if rec.get("level") in ("warning", "error", "critical", "exception"):
            self.problems += 1


class _WatchingLogger:
    """A structlog logger writing rendered lines to ``sink`` (or nowhere) after ``watch`` has seen them;
    warnings and errors also go to ``loud`` (stderr) so a failure is never hidden."""

    def __init__(self, watch: LogWatch, sink: Any, loud: Callable[[str], None] | None):
        self.watch, self.sink, self.loud = watch, sink, loud

    def _quiet(self, message: str) -> None:
        self.watch.line(message)
        if self.sink is not None:
            self.sink.write(message + "\n")

    def _loud(self, message: str) -> None:
        self._quiet(message)
        if self.loud is not None:
            self.loud(message)

    msg = debug = info = _quiet
    warning = warn = error = err = critical = fatal = exception = failure = _loud


def watch_service_logs(sink: Any = None, loud: Callable[[str], None] | None = None) -> LogWatch:
    """Configure the services' logging (their own ``configure``), then route every rendered line through a
    :class:`LogWatch` into ``sink`` (None: dropped). Returns the watch."""
    import structlog

    from services.runtime.logging import configure

    configure()
    watch = LogWatch()
    structlog.configure(logger_factory=lambda *_: _WatchingLogger(watch, sink, loud))
    return watch


def flag(service: Any) -> bool | None:
    """The service's readiness flag if it has one (see :data:`FLAG_NAMES`), else None."""
    for obj in (service, getattr(service, "host", None)):
        if obj is None:
            continue
        for name in FLAG_NAMES:
            v = getattr(obj, name, None)
            if v is None:
                continue
            if isinstance(v, asyncio.Event):
                return v.is_set()
            if callable(v):
                try:
                    v = v()
                except TypeError:
                    continue
            if isinstance(v, bool):
                return v
    return None


async def wait_restored(service: Any, name: str, watch: LogWatch, since: float, timeout: float,
                        poll: float = 0.02) -> tuple[float, str]:
    """Wait until ``service`` (started at ``since``, ``perf_counter`` s) has restored: its readiness flag is
    true, or else its "rebuilt" log line was seen after ``since``. Returns (seconds since ``since``, how).
    Raises ``TimeoutError`` after ``timeout`` s."""
    deadline = since + timeout
    while True:
        f = flag(service)
        if f:
            return time.perf_counter() - since, "readiness flag"
        if f is None:
            after = [t for t in watch.seen.get(name, []) if t >= since]
            if after:
                return after[0] - since, "rebuilt log line"
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{name}: not restored within {timeout:.0f} s")
        await asyncio.sleep(poll)
