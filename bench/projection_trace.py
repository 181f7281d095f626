"""The projection service as ``croupier serve --services projection`` runs it, with a per-card trace for
``bench/projection.py``'s breakdown of a card's delay.

Run by the bench as its own process: ``python bench/projection_trace.py <bootstrap> <topic prefix> <trace file>``.
It wraps three methods of the runtime (class-level, in this process only; nothing of the service changes):

* ``TaskManager.on_records``: **read**, the wall time (ms) a batch holding the card's ``CardDrawn`` reaches the tasks;
* ``ServiceHost.collect``: **fold** start and end (the fold of the card and the odds it makes due);
* ``TaskManager._commit`` and ``PromptLane._commit`` (the odds' own transaction, :mod:`services.runtime.prompt_lane`):
  **transaction** start and end, for each ``OddsUpdated`` (public view, trigger ``card``) it carries, with the
  number of records and whether a checkpoint rode along;
* aiokafka's sender request handlers (``aiokafka.producer.sender``): the **wire** of that transaction, the ms
  spent in each request the task's producer sent while it was open (AddPartitionsToTxn, Produce,
  AddOffsetsToTxn, TxnOffsetCommit, EndTxn; each with its backoff sleeps) and how many were answered with an
  error to retry after a backoff (CONCURRENT_TRANSACTIONS after the previous commit, mostly).

While the service runs and is ready, a file ``ready`` exists beside the trace file (the bench deals only
then). On SIGTERM the service stops and the trace is written, one line per event:
``read <table> <seq> <ms>``, ``fold <table> <seq> <start ms> <end ms>`` and
``txn <table> <step> <start ms> <end ms> <records> <checkpoint 0|1>`` and
``wire <table> <step> <request>=<ms>/<count>/<retries> ...`` (``seq``: the ``CardDrawn``'s seq in
``shoe.events``; ``step``: the ``OddsUpdated``'s, seq − 2), and last ``count <batch transactions> <prompt
transactions>`` (committed ones; ``TaskManager._commit`` and ``PromptLane._commit``); and one line per garbage
collection of the process, ``gc <generation> <ms> <wall ms at its start>``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts import topics as T  # noqa: E402
from contracts.codecs import decode_event  # noqa: E402
from contracts.events import CardDrawn, OddsUpdated  # noqa: E402
from croupier.serve import serve  # noqa: E402
from services.runtime.host import ServiceHost  # noqa: E402
from services.runtime.prompt_lane import PromptLane  # noqa: E402
from services.runtime.settings import Settings  # noqa: E402
from services.runtime.task_manager import TaskManager  # noqa: E402

LINES: list[str] = []
#: transactions committed: the tasks' (a batch's outcome with its offsets) and the prompt lane's (odds alone)
COUNTS = {"batch": 0, "prompt": 0}
#: id of a producer's sender -> request name -> [ms, requests, retried] (cumulative)
WIRE: dict[int, dict[str, list[float]]] = {}
#: the short names of aiokafka's request handlers
REQUESTS = {"AddPartitionsToTxnHandler": "addparts", "SendProduceReqHandler": "produce",
            "AddOffsetsToTxnHandler": "addoffsets", "TxnOffsetCommitHandler": "txnoffsets", "EndTxnHandler": "endtxn"}


def _now_ms() -> float:
    return time.time() * 1000


def _card_of(value: bytes | None) -> tuple[str, int] | None:
    """(table, seq) of a ``CardDrawn`` record's value, else None."""
    if not value or b"card_drawn" not in value:
        return None
    try:
        env = decode_event(value)
    except Exception:  # noqa: BLE001 - not an event: not a card
        return None
    return (env.table_id, env.seq) if isinstance(env.payload, CardDrawn) else None


def install_wire() -> None:
    """Wrap aiokafka's request handlers' ``do`` (one request and its backoff; False when it is to be retried)
    to add to :data:`WIRE`, by the handler's sender."""
    from aiokafka.producer import sender as aks

    for cls_name, short in REQUESTS.items():
        cls = getattr(aks, cls_name)

        def wrap(do: Any, short: str = short) -> Any:
            async def traced_do(self: Any, node_id: int) -> Any:
                t0 = time.perf_counter()
                ok = await do(self, node_id)
                acc = WIRE.setdefault(id(self._sender), {}).setdefault(short, [0.0, 0, 0])
                acc[0] += (time.perf_counter() - t0) * 1000
                acc[1] += 1
                acc[2] += ok is False or bool(getattr(self, "_to_reenqueue", None))  # produce: re-enqueued
                return ok
            return traced_do

        cls.do = wrap(cls.do)


def install_gc() -> None:
    """Record each garbage collection of this process: ``gc <generation> <ms> <wall ms at its start>``."""
    import gc

    began: list[float] = [0.0, 0.0]

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0], began[1] = time.perf_counter(), _now_ms()
        else:
            LINES.append(f"gc {info['generation']} {(time.perf_counter() - began[0]) * 1000:.3f} {began[1]:.3f}")

    gc.callbacks.append(seen)


def install(shoe_topic: str) -> None:
    """Wrap the three methods and the request handlers (see the module's docstring)."""
    install_wire()
    install_gc()
    on_records, collect, commit = TaskManager.on_records, ServiceHost.collect, TaskManager._commit

    async def traced_on_records(self: TaskManager, records: Any) -> None:
        records = list(records)
        t = _now_ms()
        for r in records:
            if r.topic == shoe_topic and (card := _card_of(r.value)) is not None:
                LINES.append(f"read {card[0]} {card[1]} {t:.3f}")
        await on_records(self, records)

    async def traced_collect(self: ServiceHost, records: list[Any]) -> Any:
        t0 = _now_ms()
        out = await collect(self, records)
        t1 = _now_ms()
        for rec in records:
            if rec[0] == shoe_topic and (card := _card_of(rec[4])) is not None:
                LINES.append(f"fold {card[0]} {card[1]} {t0:.3f} {t1:.3f}")
        return out

    def record_txn(sender: Any, before: dict[str, list[float]], decisions: list[Any], t0: float, t1: float,
                   n: int, checkpoint: bool) -> None:
        """The ``txn`` and ``wire`` lines of a committed transaction (``before``: its sender's :data:`WIRE`
        totals as it began), one pair per public card ``OddsUpdated`` it carried."""
        after = WIRE.get(id(sender), {})
        wire = " ".join(f"{k}={v[0] - before.get(k, [0, 0, 0])[0]:.2f}/{v[1] - before.get(k, [0, 0, 0])[1]}/"
                        f"{v[2] - before.get(k, [0, 0, 0])[2]}" for k, v in sorted(after.items()))
        for d in decisions:
            for env in d.events:
                o = env.payload
                if isinstance(o, OddsUpdated) and o.trigger == "card" and o.view == "public":
                    LINES.append(f"txn {env.table_id} {o.step} {t0:.3f} {t1:.3f} {n} {int(checkpoint)}")
                    LINES.append(f"wire {env.table_id} {o.step} {wire}")

    def totals(sender: Any) -> dict[str, list[float]]:
        return {k: list(v) for k, v in WIRE.get(id(sender), {}).items()}

    async def traced_commit(self: TaskManager, p: int, decisions: list[Any], *args: Any, **kwargs: Any) -> None:
        # every other argument forwarded as given (a new keyword of the runtime's, e.g. ``alone``, must not
        # make each batch's commit a TypeError: the projection then dead-letters every batch as unpublishable)
        t0 = _now_ms()
        cps = self.checkpoints
        # exactly_once_v2: the instance's producer, whose transaction may carry other tasks' parts too
        sender = getattr(self.producers.get(p), "_sender", None)
        before = totals(sender)
        await commit(self, p, decisions, *args, **kwargs)
        COUNTS["batch"] += 1
        record_txn(sender, before, decisions, t0, _now_ms(), sum(len(d.events) + len(d.sends) for d in decisions),
                   self.checkpoints > cps)

    async def traced_prompt(self: PromptLane, p: int, joined: list[Any]) -> None:
        t0 = _now_ms()
        sender = getattr(self.tasks.collector.prompt_producers.get(p), "_sender", None)
        before = totals(sender)
        await prompt_commit(self, p, joined)
        COUNTS["prompt"] += 1
        decisions = [d for j in joined for d in j.decisions]
        record_txn(sender, before, decisions, t0, _now_ms(), sum(len(d.events) for d in decisions), False)

    prompt_commit = PromptLane._commit
    PromptLane._commit = traced_prompt  # type: ignore[method-assign]
    TaskManager.on_records = traced_on_records  # type: ignore[method-assign]
    ServiceHost.collect = traced_collect  # type: ignore[method-assign]
    TaskManager._commit = traced_commit  # type: ignore[method-assign]


async def main(bootstrap: str, prefix: str, trace: str) -> None:
    settings = replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=prefix)
    install(settings.topic(T.SHOE_EVENTS))
    try:
        # the ready file exists once the projection's tasks are restored: the bench starts dealing then
        await serve(["projection"], settings, ready_file=Path(trace).with_name("ready"))
    finally:
        LINES.append(f"count {COUNTS['batch']} {COUNTS['prompt']}")
        Path(trace).write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    import os
    if os.environ.get("PROJECTION_PROFILE"):  # a cProfile of the service's process, written on SIGTERM
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
        try:
            asyncio.run(main(*sys.argv[1:4]))
        finally:
            prof.disable()
            prof.dump_stats(os.environ["PROJECTION_PROFILE"])
    else:
        asyncio.run(main(*sys.argv[1:4]))
