"""Prometheus metrics of a Croupier process (``prometheus-client``), instrumented at the host and tasks layer.

One registry per process, :data:`REGISTRY` (not the library's global one), exposed by ``croupier serve
--metrics-port`` (:mod:`services.runtime.ops`) and by the query API's ``/metrics``. The domain (``baccarat/``,
the cores' ``decide``/``evolve``/``absorb``) knows nothing of it: :class:`ServiceMetrics` is fed by
:class:`~services.runtime.host.ServiceHost` and :class:`~services.runtime.task_manager.TaskManager`; the gauges are read
from the live tasks when scraped (:class:`LiveCollector`), on the event loop's thread.

Names (``service`` is the core's name, ``<name>-replica`` for a read-only replica such as ``croupier api``'s):

=========================================== ==============================================================
``croupier_messages_handled_total``         records handled, by ``service``, ``stream`` (base topic), ``type``
``croupier_messages_rejected_total``        commands refused, by ``service``, ``type`` (command) and ``reason``
``croupier_messages_ignored_total``         duplicates and unknown types, by ``service`` and ``reason``
``croupier_handler_seconds``                histogram: decode + decide/fold + react of one record, by ``type``
``croupier_transaction_seconds``            histogram: one task transaction (events, offsets, checkpoint)
``croupier_transaction_aborts_total``       failed task transactions, by ``service`` and ``fenced``
``croupier_dead_letters_total``             records set aside on ``<service>.dlq``, by ``reason``
``croupier_checkpoints_total``              snapshot checkpoints written
``croupier_restore_seconds``                histogram: one task's restore (or a whole rebuild), by ``source``
``croupier_odds_latency_seconds``           histogram: a card's log time to its odds being published, by ``view``
``croupier_consumer_lag``                   gauge: records not yet consumed, by ``service``, ``topic``, ``partition``
``croupier_snapshot_age_seconds``           gauge: age of a task's latest checkpoint, by ``partition``
``croupier_open_rounds``                    gauge: rounds a service holds open, by ``service`` and ``table``
``croupier_tables``                         gauge: tables held in memory
``croupier_tasks``                          gauge: tasks by ``state`` (``restoring``, ``ready``, ``revoked``)
``croupier_ready``                          gauge: 1 when every assigned task is restored and an assignment is held
``croupier_broker_reachable``               gauge: 1 when the last broker probe answered
``croupier_api_requests_total``             query API requests, by ``route`` (the path template) and ``status``
``croupier_api_request_seconds``            histogram: query API request time, by ``route``
=========================================== ==============================================================

Label values are bounded: streams, message types and routes come from the code's own fixed sets; reasons are
stable codes (anything else, or more than :data:`MAX_VALUES` distinct ones, is counted as ``other``); the
only per-entity label is ``table`` (a floor has hundreds of tables); never a bet, round or player id.
Counters count work as it is done: a batch re-read after an aborted transaction is handled (and counted) again.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from contracts.events import BetRejected, CardReadRefused, CommandRejected, OddsUpdated

#: the registry every Croupier metric is in (with the process, platform and GC collectors)
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

CONTENT_TYPE = CONTENT_TYPE_LATEST

#: distinct values a free-text-like label (a reason code) may take per metric before ``other``
MAX_VALUES = 200
_CODE = re.compile(r"^[a-z][a-z0-9_.-]{0,47}$")

_FAST = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_SLOW = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HANDLED = Counter("croupier_messages_handled", "Records handled (commands decided, input events folded)",
                  ["service", "stream", "type"], registry=REGISTRY)
REJECTED = Counter("croupier_messages_rejected", "Commands refused, by command type and reason code",
                   ["service", "type", "reason"], registry=REGISTRY)
IGNORED = Counter("croupier_messages_ignored", "Records that decided nothing: duplicate commands and events, "
                  "unknown message types", ["service", "reason"], registry=REGISTRY)
HANDLER_SECONDS = Histogram("croupier_handler_seconds", "Time to handle one record (decode, decide or fold, "
                            "react), publishing excluded", ["service", "type"], buckets=_FAST, registry=REGISTRY)
TRANSACTION_SECONDS = Histogram("croupier_transaction_seconds", "Time of one task transaction (events, dead "
                                "letters, checkpoint and input offsets)", ["service"], buckets=_FAST,
                                registry=REGISTRY)
ABORTS = Counter("croupier_transaction_aborts", "Task transactions that failed (the task is restored and "
                 "re-reads its batch)", ["service", "fenced"], registry=REGISTRY)
DEAD_LETTERS = Counter("croupier_dead_letters", "Records set aside on the service's dead-letter topic",
                       ["service", "reason"], registry=REGISTRY)
CHECKPOINTS = Counter("croupier_checkpoints", "Snapshot checkpoints written", ["service"], registry=REGISTRY)
RESTORE_SECONDS = Histogram("croupier_restore_seconds", "Time to restore one task (source snapshot or log) or "
                            "to rebuild a whole host (source rebuild)", ["service", "source"], buckets=_SLOW,
                            registry=REGISTRY)
ODDS_LATENCY = Histogram("croupier_odds_latency_seconds", "From the log time of what made odds due (a card, "
                         "a burn, a round start) to the odds being published", ["view"], buckets=_LATENCY,
                         registry=REGISTRY)
API_REQUESTS = Counter("croupier_api_requests", "Query API requests", ["route", "status"], registry=REGISTRY)
API_SECONDS = Histogram("croupier_api_request_seconds", "Query API request time", ["route"], buckets=_FAST,
                        registry=REGISTRY)


class _Bounded:
    """Maps label values to themselves while they look like codes and are at most ``limit`` distinct;
    anything else is ``other``."""

    def __init__(self, limit: int = MAX_VALUES):
        self.limit = limit
        self.seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        if not _CODE.match(value):
            return "other"
        with self._lock:
            if len(self.seen) >= self.limit:
                return "other"
            self.seen.add(value)
        return value


_reasons = _Bounded()
_types = _Bounded()


def label_code(value: str) -> str:
    """``value`` as a reason label: itself if it is a code (lower case, digits, ``_.-``, at most 48
    characters) and one of the first :data:`MAX_VALUES` seen, else ``"other"``."""
    return _reasons(value)


def _tag(payload: Any) -> str:
    return str(payload.__struct_config__.tag)


class ServiceMetrics:
    """The counters and histograms of one service (its ``service`` label), as its host and tasks feed them.

    Every method is cheap (a dict lookup and an increment) and never raises for a label value. Refusals and
    dead letters are what the log holds: they are counted when what records them is committed
    (:meth:`settle`), so a batch re-read after an aborted transaction does not count them twice."""

    def __init__(self, service: str):
        self.service = service
        self._pending: list[Any] = []
        self._handled: dict[tuple[str, str], tuple[Any, Any]] = {}

    def handled(self, stream: str, type_: str, seconds: float) -> None:
        """One record of base topic ``stream`` handled in ``seconds``; ``type_``: its message type tag
        (``undecodable``/``unknown`` when it had none usable)."""
        key = (stream, type_)
        pair = self._handled.get(key)
        if pair is None:
            t = _types(type_)
            pair = self._handled[key] = (HANDLED.labels(self.service, stream, t),
                                         HANDLER_SECONDS.labels(self.service, t))
        pair[0].inc()
        pair[1].observe(seconds)

    def ignored(self, reason: str) -> None:
        """A record that decided nothing: ``duplicate_command``, ``duplicate_event``, ``unknown_type``."""
        IGNORED.labels(self.service, reason).inc()

    def decided(self, command_type: str, events: Iterable[Any]) -> None:
        """Count the refusals among the events a command of ``command_type`` caused (``CommandRejected``,
        ``BetRejected`` by their reason code; ``CardReadRefused`` as ``card_read_refused``)."""
        for env in events:
            p = env.payload
            if isinstance(p, (CommandRejected, BetRejected)):
                self._pending.append(REJECTED.labels(self.service, _types(command_type), label_code(p.reason)))
            elif isinstance(p, CardReadRefused):
                self._pending.append(REJECTED.labels(self.service, _types(command_type), "card_read_refused"))

    def published(self, events: Iterable[Any], now: float | None = None) -> None:
        """Events now in the log: each ``OddsUpdated`` observes its latency, the wall clock (``now``, Unix
        seconds; default the current time) minus its ``occurred_at`` (the log time of its cause; a negative
        difference from clock skew counts as 0)."""
        at = time.time() if now is None else now
        for env in events:
            p = env.payload
            if isinstance(p, OddsUpdated):
                view = p.view if p.view in ("public", "surveillance") else "other"
                ODDS_LATENCY.labels(view).observe(max(0.0, at - env.occurred_at.timestamp()))

    def dead_letter(self, reason: str) -> None:
        """A record set aside: ``undecodable``, ``misrouted``, ``handler_failed`` or ``unpublishable``
        (counted at :meth:`settle`)."""
        self._pending.append(DEAD_LETTERS.labels(self.service, label_code(reason)))

    def settle(self, committed: bool) -> None:
        """Count the refusals and dead letters noted since the last call if what records them is now in
        the log (``committed``), else forget them (the transaction failed: the records are read and decided
        again, and counted then)."""
        if committed:
            for counter in self._pending:
                counter.inc()
        self._pending.clear()

    def transaction(self, seconds: float, checkpoint: bool) -> None:
        """A task transaction committed in ``seconds`` (``checkpoint``: it carried a checkpoint)."""
        TRANSACTION_SECONDS.labels(self.service).observe(seconds)
        if checkpoint:
            CHECKPOINTS.labels(self.service).inc()

    def aborted(self, fenced: bool) -> None:
        """A task transaction failed (``fenced``: another producer took the task's transactional id)."""
        ABORTS.labels(self.service, "true" if fenced else "false").inc()

    def restored(self, seconds: float, source: str) -> None:
        """A restore took ``seconds``; ``source``: ``snapshot`` (a checkpoint plus the tail), ``log`` (from
        offset zero) or ``rebuild`` (a whole host replayed, :meth:`ServiceHost.rebuild`)."""
        RESTORE_SECONDS.labels(self.service, source).observe(seconds)


class Observed(Protocol):
    """What :class:`LiveCollector` reads of a running service's tasks (:class:`~services.runtime.task_manager.TaskManager`)."""

    host: Any
    state: dict[int, str]

    @property
    def ready(self) -> bool: ...

    @property
    def assignment_held(self) -> bool: ...

    def lag(self) -> dict[tuple[str, int], int]: ...

    def snapshot_ages(self, now: float) -> dict[int, float]: ...


class Probed(Protocol):
    """What :class:`LiveCollector` reads of a broker probe (:class:`~services.runtime.ops.BrokerProbe`)."""

    @property
    def reachable(self) -> bool: ...


class LiveCollector:
    """Gauges read from the live tasks and probes at scrape time (call :func:`exposition` on the event
    loop's thread: the tasks' state is only ever changed there)."""

    def __init__(self) -> None:
        self._tasks: weakref.WeakSet[Any] = weakref.WeakSet()
        self._probes: weakref.WeakSet[Any] = weakref.WeakSet()

    def track(self, tasks: Observed) -> None:
        """Export ``tasks``' gauges until :meth:`untrack` (or until it is garbage)."""
        self._tasks.add(tasks)

    def untrack(self, tasks: Observed) -> None:
        """Stop exporting ``tasks``' gauges (a stopped service)."""
        self._tasks.discard(tasks)

    def track_probe(self, probe: Probed) -> None:
        """Export ``probe.reachable`` as ``croupier_broker_reachable``."""
        self._probes.add(probe)

    def untrack_probe(self, probe: Probed) -> None:
        """Stop exporting a probe."""
        self._probes.discard(probe)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily("croupier_consumer_lag", "Records of an assigned input partition not yet "
                                "consumed (last stable offset minus the consumer's position)",
                                labels=["service", "topic", "partition"])
        age = GaugeMetricFamily("croupier_snapshot_age_seconds", "Seconds since a task's latest checkpoint "
                                "(written here, or the one it was restored from)", labels=["service", "partition"])
        rounds = GaugeMetricFamily("croupier_open_rounds", "Rounds a service holds open at a table (dealing: "
                                   "in play; settlement: not settled yet)", labels=["service", "table"])
        tables = GaugeMetricFamily("croupier_tables", "Tables held in memory", labels=["service"])
        tasks = GaugeMetricFamily("croupier_tasks", "Tasks (partition numbers) by state",
                                  labels=["service", "state"])
        ready = GaugeMetricFamily("croupier_ready", "1 when an assignment is held and every assigned task is "
                                  "restored", labels=["service"])
        seen: set[tuple[str, ...]] = set()
        now = time.time()

        def add(family: GaugeMetricFamily, labels: list[str], value: float) -> None:
            key = (family.name, *labels)
            if key not in seen:  # two instances of one service in a process: the first one's sample
                seen.add(key)
                family.add_metric(labels, value)

        for t in list(self._tasks):
            svc = t.host.metrics.service
            for (topic, p), n in sorted(t.lag().items()):
                add(lag, [svc, topic, str(p)], n)
            for p, a in sorted(t.snapshot_ages(now).items()):
                add(age, [svc, str(p)], a)
            for table, n in sorted(t.host.open_rounds().items()):
                add(rounds, [svc, table], n)
            add(tables, [svc], len(t.host.runner.tables))
            counts: dict[str, int] = {"restoring": 0, "ready": 0, "revoked": 0}
            for s in list(t.state.values()):
                counts[s] = counts.get(s, 0) + 1
            for s, n in sorted(counts.items()):
                add(tasks, [svc, s], n)
            add(ready, [svc], 1.0 if t.ready and t.assignment_held else 0.0)
        yield from (lag, age, rounds, tables, tasks, ready)
        probes = list(self._probes)
        if probes:
            reach = GaugeMetricFamily("croupier_broker_reachable", "1 when the last broker probe answered")
            reach.add_metric([], 1.0 if all(p.reachable for p in probes) else 0.0)
            yield reach


#: the gauges :class:`LiveCollector` exports, read from the live tasks and probes when scraped
LIVE_GAUGES = ("croupier_consumer_lag", "croupier_snapshot_age_seconds", "croupier_open_rounds", "croupier_tables",
               "croupier_tasks", "croupier_ready", "croupier_broker_reachable")

#: the collector of every live service of this process
LIVE = LiveCollector()
REGISTRY.register(LIVE)  # type: ignore[arg-type]


def exposition() -> bytes:
    """The Prometheus text exposition of :data:`REGISTRY` (content type :data:`CONTENT_TYPE`). Call it on
    the event loop's thread."""
    return generate_latest(REGISTRY)
