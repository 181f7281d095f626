"""Where a service hop's milliseconds go (``bench/pipeline.py --trace``, issue 25): timing marks around the
runtime's steps of each batch, installed by wrapping methods (bench only: stamps, no behaviour changed).

Per service and batch:

* ``age``: how old the batch's newest record is when the runtime is handed the batch (now minus the record's
  timestamp: append time on a command topic, the writer's send time on an event topic). It holds the
  writer's transaction commit, the fetch wait and FastStream's dispatch;
* ``cmd_fetch``: for a command record (the broker's append time), from its append to the fetch response
  that brought it (aiokafka's fetcher);
* ``dispatch``: from that fetch response to the runtime being handed the batch (the consumer loop busy with
  the previous batch, FastStream's poll and sleep, its parsing);
* ``lock``: waiting for the host's lock (a restore, a flush of deferred offsets, another batch);
* ``catch_up``: the command's wait for the other topic (ListOffsets; a cut batch seeks back);
* ``decide``: the host's decisions (decode, fold, encode);
* ``txn``: the task's transaction (sends, ``send_offsets_to_transaction``, commit), per transaction;
* ``gtxn`` (``exactly_once_v2``): the instance producer's transaction of grouped parts, per transaction
  (``txn`` is then a task's wait for its part: the transaction in flight, then its own);
* ``offsets``: its ``send_offsets_to_transaction`` (AddOffsetsToTxn + TxnOffsetCommit) alone;
* ``batch``: the whole ``on_records`` (the consumer loop reads no next batch meanwhile).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

STEPS = ("age", "cmd_fetch", "dispatch", "lock", "catch_up", "decide", "txn", "gtxn", "offsets", "batch")


class HopTrace:
    """Installs timing wrappers on the runtime's classes; :meth:`report` gives per-service percentiles."""

    def __init__(self) -> None:
        self.samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.batches: dict[str, int] = defaultdict(int)
        self.records: dict[str, int] = defaultdict(int)
        self._undo: list[tuple[Any, str, Any]] = []
        self.active = False

    def _wrap(self, cls: Any, name: str, make: Any) -> None:
        orig = getattr(cls, name)
        self._undo.append((cls, name, orig))
        setattr(cls, name, make(orig))

    def install(self) -> None:
        from aiokafka import AIOKafkaProducer
        from aiokafka.consumer import fetcher as F

        from services.runtime.group_commit import GroupCommit
        from services.runtime.host import ServiceHost
        from services.runtime.partition_group import PartitionGroup
        from services.runtime.record_collector import RecordCollector
        from services.runtime.task_manager import TaskManager

        trace = self
        fetched_at: dict[tuple[int, Any], float] = {}

        def fetch_result(orig: Any) -> Any:
            def wrapped(self: Any, tp: Any, *, assignment: Any, **kw: Any) -> None:
                fetched_at[(id(assignment), tp)] = time.time() * 1000
                orig(self, tp, assignment=assignment, **kw)
            return wrapped

        self._wrap(F.FetchResult, "__init__", fetch_result)

        def fetch_marks(svc: str, consumer: Any, records: list[Any], now_ms: float) -> None:
            try:
                assignment = consumer._subscription.subscription.assignment
            except AttributeError:
                return
            got = [fetched_at.get((id(assignment), F.TopicPartition(r.topic, r.partition))) for r in records]
            got = [g for g in got if g is not None]
            if got:
                trace.samples[svc]["dispatch"].append((now_ms - max(got)) / 1000)
            for r in records:
                at = fetched_at.get((id(assignment), F.TopicPartition(r.topic, r.partition)))
                if at is not None and getattr(r, "timestamp_type", 0) == 1:
                    trace.samples[svc]["cmd_fetch"].append((at - r.timestamp) / 1000)

        def on_records(orig: Any) -> Any:
            async def wrapped(self: Any, records: Any) -> None:
                records = list(records)
                t0 = time.perf_counter()
                if trace.active and records:
                    now_ms = time.time() * 1000
                    svc = self.service
                    trace.batches[svc] += 1
                    trace.records[svc] += len(records)
                    trace.samples[svc]["age"].append((now_ms - max(r.timestamp for r in records)) / 1000)
                    fetch_marks(svc, self.consumer, records, now_ms)
                    lock = self.host.lock
                    if lock.locked():
                        await lock.acquire()
                        lock.release()
                        trace.samples[svc]["lock"].append(time.perf_counter() - t0)
                    else:
                        trace.samples[svc]["lock"].append(0.0)
                try:
                    return await orig(self, records)
                finally:
                    if trace.active and records:
                        trace.samples[self.service]["batch"].append(time.perf_counter() - t0)
            return wrapped

        def timed(step: str, service_of: Any) -> Any:
            def make(orig: Any) -> Any:
                async def wrapped(self: Any, *a: Any, **kw: Any) -> Any:
                    t0 = time.perf_counter()
                    try:
                        return await orig(self, *a, **kw)
                    finally:
                        svc = service_of(self) if trace.active else ""
                        if svc:  # "": not a service's (the raw loop's producers, say)
                            trace.samples[svc][step].append(time.perf_counter() - t0)
                return wrapped
            return make

        self._wrap(TaskManager, "on_records", on_records)
        self._wrap(PartitionGroup, "caught_up", timed("catch_up", lambda s: s.tasks.service))
        self._wrap(ServiceHost, "collect", timed("decide", lambda s: s.core.name))
        self._wrap(RecordCollector, "transaction", timed("txn", lambda s: s.service))

        def producer_service(prod: Any) -> str:
            """The service whose task producer ``prod`` is (its transactional id), else ""."""
            tid = getattr(getattr(prod, "_txn_manager", None), "transactional_id", "") or ""
            return next((s for s in ("shoe", "dealing", "wagering", "settlement") if f"{s}.task-" in tid), "")

        self._wrap(AIOKafkaProducer, "send_offsets_to_transaction", timed("offsets", producer_service))
        # exactly_once_v2: the instance's transaction of grouped parts ("gtxn", one per transaction; "txn" above is
        # then a part's wait for it) and its KIP-447 offsets
        self._wrap(RecordCollector, "_send_offsets", timed("offsets", lambda s: s.service))
        self._wrap(GroupCommit, "transaction", timed("gtxn", lambda g: g.service))

    def uninstall(self) -> None:
        for cls, name, orig in reversed(self._undo):
            setattr(cls, name, orig)
        self._undo.clear()

    def report(self, pct: Any, ms: Any, wall: float = 0.0) -> list[str]:
        """Lines: per service, batches and records, then p50 / p99 ms of each step (:data:`STEPS`); with the
        phase's ``wall`` (s), how much of it the instance's producer had a grouped transaction in flight
        (``gtxn busy``: near 100 %, the service's rate is bound by its transactions' length)."""
        out = []
        for svc in sorted(self.samples):
            s = self.samples[svc]
            cells = [f"{k} {ms(pct(s[k], 50))}/{ms(pct(s[k], 99))} (n={len(s[k])})" for k in STEPS if s.get(k)]
            asked = [x for x in s.get("catch_up", []) if x >= 0.001]  # a batch with a command: ListOffsets asked
            if asked:
                cells.append(f"catch_up when asked {ms(pct(asked, 50))}/{ms(pct(asked, 99))} (n={len(asked)})")
            if wall > 0 and s.get("gtxn"):
                busy = sum(s["gtxn"])
                cells.append(f"gtxn busy {100 * busy / wall:.0f}%, mean {ms(busy / len(s['gtxn']))}")
            out.append(f"  {svc}: {self.batches[svc]} batches, {self.records[svc]} records; p50/p99 ms: "
                       + ", ".join(cells))
        return out
