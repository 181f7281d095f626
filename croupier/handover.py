"""How long a service instance's tables stall when it is stopped (SIGTERM) or killed (``kill -9``): the hand-over
of its tasks to a surviving instance, measured on real processes and the raw topics (issue 25).

:func:`measure_handover` starts a small floor of ``croupier serve`` processes (:class:`croupier.chaos_floor.Cluster`,
as the chaos run does): one instance of each decider and two of ``service``, on ``partitions`` partitions; drives
``per_partition`` tables on each partition at full speed; after ``warm_rounds`` settled rounds sends ``sig`` to the
second instance of ``service`` (its process group) and goes on until ``after_rounds`` more rounds are settled
and every table of the victim's tasks has settled two more (one begun after the signal). Then it reads:

* the victim's tasks: its log's last ``assigned`` line before the signal;
* the survivor's take-over: the first ``assigned`` line of the survivor's log after the signal that names every
  one of the victim's tasks (its wall time, :attr:`Handover.assigned_s` after the signal);
* the stall of each victim task: from the signal to the first record of ``service``'s own event stream in that
  partition whose broker time is at or after the survivor's take-over (the survivor's first processed record
  there; what the victim committed after the signal does not count), :attr:`Handover.stall_s`, the longest;
* the table gap of each victim task, as the chaos run counts a stall (:mod:`croupier.chaos`): the partition's
  last own event before the signal to its first after it, :attr:`Handover.gap_s`, the longest.

Times are wall-clock seconds (the broker's record timestamps and the instances' log lines, one machine).
Every process it starts is stopped in a ``finally``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from baccarat.table import punto_banco_full
from contracts import topics as T
from croupier.chaos_floor import ChaosDealer, Cluster, FloorState, Instance, _clock
from croupier.chaos_model import REPO, ChaosConfig
from services.floor.bettors import Seat
from services.floor.io import KafkaFloorIO
from services.rawlog import read_topic
from services.runtime.assignor import partition_of
from services.runtime.settings import Settings

#: the deciders a floor needs (the projection is not on a round's path)
DECIDERS = ("shoe", "dealing", "wagering", "settlement")
OWN_STREAM = {"shoe": T.SHOE_EVENTS, "dealing": T.DEALING_EVENTS, "wagering": T.WAGERING_EVENTS,
              "settlement": T.SETTLEMENT_EVENTS}


@dataclass
class Handover:
    """One measured hand-over. Seconds after the signal unless said otherwise."""

    sig: str
    victim_tasks: list[int]
    #: the survivor's ``assigned`` line naming every victim task (None: it never took them)
    assigned_s: float | None
    #: the victim's process exit
    exit_s: float | None
    #: per victim task: its first own event the survivor wrote (None: none before the floor stopped)
    first_s: dict[int, float | None] = field(default_factory=dict)
    #: per victim task: the chaos run's gap (last own event before the signal to the first after), seconds
    gaps: dict[int, float | None] = field(default_factory=dict)
    rounds: int = 0
    #: the signal's wall time (Unix s)
    signal_at: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def stall_s(self) -> float | None:
        """The longest signal → survivor's first record over the victim's tasks (None if one never came)."""
        xs = list(self.first_s.values())
        return None if not xs or None in xs else max(x for x in xs if x is not None)

    @property
    def gap_s(self) -> float | None:
        """The longest table gap over the victim's tasks (None if one never moved again)."""
        xs = list(self.gaps.values())
        return None if not xs or None in xs else max(x for x in xs if x is not None)

    def at_signal_s(self, timestamp: str) -> float:
        """A log line's ``timestamp`` (ISO, UTC) as seconds after the signal."""
        return _at({"timestamp": timestamp}) - self.signal_at

    def line(self) -> str:
        def f(x: float | None) -> str:
            return "none" if x is None else f"{x:.2f}"

        return (f"handover {self.sig}: tasks={self.victim_tasks} exit_s={f(self.exit_s)} "
                f"assigned_s={f(self.assigned_s)} stall_s={f(self.stall_s)} gap_s={f(self.gap_s)}")


def _lines(path: Path) -> list[dict[str, object]]:
    out = []
    for raw in path.read_text(errors="replace").splitlines():
        if '"assigned"' not in raw:
            continue
        try:
            x = json.loads(raw)
        except ValueError:
            continue
        if x.get("event") == "assigned":
            out.append(x)
    return out


def _at(x: dict[str, object]) -> float:
    return datetime.fromisoformat(str(x["timestamp"])).timestamp()


def assigned(inst: Instance) -> list[tuple[float, list[int]]]:
    """``(wall time s, tasks)`` of every ``assigned`` line of an instance's log."""
    return [(_at(x), list(x.get("tasks") or [])) for x in _lines(inst.log_path)]  # type: ignore[call-overload]


def tables_covering(partitions: int, per_partition: int) -> list[str]:
    """Table ids, ``per_partition`` of each partition number (``partition_of`` with ``partitions``)."""
    out: list[str] = []
    count = dict.fromkeys(range(partitions), 0)
    n = 0
    while any(c < per_partition for c in count.values()):
        n += 1
        t = f"H-{n:03d}"
        p = partition_of(t, partitions)
        if count[p] < per_partition:
            count[p] += 1
            out.append(t)
    return out


async def _until(cond, bound_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + bound_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.2)


async def measure_handover(bootstrap: str, sig: int, *, service: str = "dealing", partitions: int = 4,
                           per_partition: int = 2, warm_rounds: int = 6, after_rounds: int = 12,
                           workdir: Path | None = None, croupier: str | None = None,
                           out=print) -> Handover:  # type: ignore[no-untyped-def]
    """Measure one hand-over (see the module docstring). ``sig``: ``signal.SIGTERM`` or ``signal.SIGKILL``.
    Raises ``TimeoutError`` when the floor does not start or settle within its bounds."""
    from croupier.chaos import _wait_started, create_topics

    prefix = f"ho{uuid.uuid4().hex[:8]}."
    workdir = workdir or REPO / "var" / "handover" / prefix.rstrip(".")
    workdir.mkdir(parents=True, exist_ok=True)
    old = {k: os.environ.get(k) for k in ("CROUPIER_PARTITIONS", "CROUPIER_VAULT_KEYS")}
    os.environ["CROUPIER_PARTITIONS"] = str(partitions)
    if not (old["CROUPIER_VAULT_KEYS"] or os.environ.get("CROUPIER_VAULT_KEY_FILE")):
        import secrets

        from contracts.vault import new_key_entry

        # a vault key for this floor only, inherited by its shoe service
        os.environ["CROUPIER_VAULT_KEYS"] = new_key_entry("handover-1", secrets.token_bytes(32))
    cfg = ChaosConfig(bootstrap=bootstrap, prefix=prefix, croupier=croupier or ChaosConfig.croupier)
    cluster = Cluster(cfg, workdir)
    settings = replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=prefix, partitions=partitions)
    io = KafkaFloorIO(settings)
    floor = FloorState()
    work: asyncio.Future[list[None]] | None = None
    try:
        await create_topics(bootstrap, prefix)
        for name in DECIDERS:
            cluster.add(name)
        cluster.add(service)
        await _wait_started(cluster)
        pair = [i for i in cluster.instances if i.service == service]
        await _until(lambda: all(assigned(i) and assigned(i)[-1][1] for i in pair)
                     and sorted(p for i in pair for p in assigned(i)[-1][1]) == list(range(partitions)),
                     90, f"{service}'s two instances did not share the tasks")
        await io.start()
        rng = random.Random(7)
        tables = tables_covering(partitions, per_partition)
        dealers = [ChaosDealer(io, t, punto_banco_full(), [Seat(i, f"{t}-player-{i}") for i in range(1, 4)],
                               random.Random(rng.random()), _clock, timeout=60, floor=floor) for t in tables]
        work = asyncio.gather(*(d.run_until_stopped() for d in dealers))
        await _until(lambda: floor.rounds >= warm_rounds or bool(floor.errors), 120, "the floor did not warm up")
        victim, survivor = pair[1], pair[0]
        tasks = assigned(victim)[-1][1]
        t_sig = time.time()
        victim.signal(sig)
        at_signal = floor.rounds
        assert victim.proc is not None
        exit_s: float | None
        try:
            await asyncio.to_thread(victim.proc.wait, 30)
            exit_s = time.time() - t_sig
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: a victim that would not stop
            exit_s = None
        moved = {d.table_id: d.run_state.rounds for d in dealers if partition_of(d.table_id, partitions) in tasks}
        await _until(lambda: (floor.rounds >= at_signal + after_rounds
                              and all(d.run_state.rounds >= moved[d.table_id] + 2 for d in dealers if d.table_id in moved))
                     or bool(floor.errors), 120, "the floor did not settle rounds after the hand-over")
        floor.stop = True
        await asyncio.wait_for(work, 90)
        took = [t for t, ts in assigned(survivor) if t > t_sig and set(tasks) <= set(ts)]
        t_assigned = took[0] if took else None
        res = Handover(signal.Signals(sig).name, tasks, None if t_assigned is None else t_assigned - t_sig, exit_s,
                       rounds=floor.rounds, signal_at=t_sig, errors=list(floor.errors))
        recs = await read_topic(settings, settings.topic(OWN_STREAM[service]), tasks)
        for p in tasks:
            ts = [r.timestamp / 1000 for r in recs if r.partition == p]
            after = [t for t in ts if t_assigned is not None and t >= t_assigned]
            res.first_s[p] = after[0] - t_sig if after else None
            before = [t for t in ts if t <= t_sig]
            later = [t for t in ts if t > t_sig]
            res.gaps[p] = (later[0] - before[-1]) if before and later else None
        out(res.line())
        return res
    finally:
        floor.stop = True
        if work is not None and not work.done():
            work.cancel()
            try:
                await work
            except BaseException:  # noqa: BLE001 - cancelled or failed: the floor is over
                pass
        await io.stop()
        await asyncio.to_thread(cluster.stop_all)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
