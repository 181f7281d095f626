"""The projection service as ``croupier serve --services projection`` runs it, with a per-card trace for
``bench/projection.py``'s breakdown of a card's delay.

Run by the bench as its own process: ``python bench/projection_trace.py <bootstrap> <topic prefix> <trace file>``.
It wraps three methods of the runtime (class-level, in this process only; nothing of the service changes):

* ``TaskManager.on_records``: **read**, the wall time (ms) a batch holding the card's ``CardDrawn`` reaches the tasks;
* ``ServiceHost.collect``: **fold** start and end (the fold of the card and the odds it makes due);
* ``TaskManager._commit``: **transaction** start and end, for each ``OddsUpdated`` (public view, trigger ``card``)
  it carries, with the number of records and whether a checkpoint rode along.

While the service runs and is ready, a file ``ready`` exists beside the trace file (the bench deals only
then). On SIGTERM the service stops and the trace is written, one line per event:
``read <table> <seq> <ms>``, ``fold <table> <seq> <start ms> <end ms>`` and
``txn <table> <step> <start ms> <end ms> <records> <checkpoint 0|1>`` (``seq``: the ``CardDrawn``'s seq in
``shoe.events``; ``step``: the ``OddsUpdated``'s, seq − 2).
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
from services.runtime.settings import Settings  # noqa: E402
from services.runtime.task_manager import TaskManager  # noqa: E402

LINES: list[str] = []


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


def install(shoe_topic: str) -> None:
    """Wrap the three methods (see the module's docstring)."""
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

    async def traced_commit(self: TaskManager, p: int, decisions: list[Any], letters: list[Any], offsets: Any,
                            handled: int = 0, force_checkpoint: bool = False) -> None:
        t0 = _now_ms()
        cps = self.checkpoints
        await commit(self, p, decisions, letters, offsets, handled, force_checkpoint)
        t1 = _now_ms()
        n = sum(len(d.events) + len(d.sends) for d in decisions)
        for d in decisions:
            for env in d.events:
                o = env.payload
                if isinstance(o, OddsUpdated) and o.trigger == "card" and o.view == "public":
                    LINES.append(f"txn {env.table_id} {o.step} {t0:.3f} {t1:.3f} {n} {int(self.checkpoints > cps)}")

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
        Path(trace).write_text("\n".join(LINES) + "\n")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
