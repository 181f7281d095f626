"""A chaos run: every service instance its own OS process, a floor at full speed, faults from a seeded RNG,
then an independent check of the raw topics (:mod:`croupier.rawcheck`), ``croupier audit`` and a fresh
projection replica.

The harness (:func:`run_chaos`):

1. creates the topics under a fresh prefix, and starts ``instances`` copies of each service as
   ``croupier serve --services <name> --prefix P`` (each its own process group, with a distinct
   ``CROUPIER_INSTANCE`` such as ``dealing-2``; a restarted instance keeps its id, as a pod does);
2. drives ``tables`` tables in this process (:class:`ChaosDealer`, a :class:`TableDealer` that retries a send
   the broker refused and gives up a round only after ``round_timeout_s``) until ``rounds`` rounds are settled
   and ``min_faults`` faults were injected, or ``max_seconds`` passed;
3. meanwhile injects a fault every ``fault_gap_s`` (uniform) seconds, drawn by ``random.Random(seed)``:
   ``kill -9``, SIGTERM, SIGSTOP then SIGCONT after 2–6 s or, one time in four, 12–20 s (longer than the
   groups' 10 s session timeout); targeted ones, fired on the next matching event the floor sees (a
   settlement instance right after a ``RoundResolved``, a dealing instance after the first ``CardDealt``, a
   shoe instance after a ``CardDrawn``, a wagering instance after ``BettingOpened``: the instance killed is
   one of that service's, not necessarily the table's owner); a third instance of a service added, and an
   added one removed; with ``own_broker`` the broker killed (``kill -9``) and restarted once, or with
   ``brokers`` > 1 (a KRaft cluster of that many nodes, :class:`croupier.ownkafka.OwnKafka`) after every
   fourth fault one node killed (``kill -9``) and restarted 2–5 s later, one node down at a time, every other
   one the active controller (``controller_kill9``; the others ``broker_kill9``). Killed and
   terminated instances are restarted 0.5–3 s after they exited. The first faults always include an
   instance added and a long SIGSTOP, so even a short run has both;
4. stops the faults, resumes every paused instance, restarts every dead one, lets the tables finish their
   round and close their shoe, waits until no topic grows for ``quiet_s`` seconds, then checks.

**Stall.** For each fault (its moment ``t``) and each table, the table's stall is the length of its gap with
no event on the four service streams (Kafka timestamps) that contains ``t``: from its last event before ``t``
to its first after (or to the end of the floor, for a table that never moved again). ``stall_p99_s`` is the
99th percentile (nearest rank) over every (fault, table) pair: how long a table stood still because of a
fault, in seconds. The report also gives the stalls per fault kind and the longest gaps with every fault
inside them (:func:`stall_lines`: faults seconds apart share a gap, and a broker restart is usually the
p99), and the instances' restore waves (:func:`restore_line`: an assignment to the last of its tasks
restored, from the instance logs).

Every process the harness starts is stopped in a ``finally`` (SIGCONT, SIGTERM to its process group,
SIGKILL after 10 s); every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.commands import Command
from contracts.envelope import Envelope
from contracts.events import BettingOpened, CardDealt, CardDrawn, RoundResolved
from croupier.ownkafka import OwnKafka
from croupier.rawcheck import RawReport, check, read_all
from services.floor.bettors import Seat
from services.floor.dealer import TableDealer
from services.floor.io import EventLog, FloorTimeout, KafkaFloorIO
from services.runtime.settings import Settings, env_client_options

REPO = Path(__file__).resolve().parents[1]
SERVICES = ("shoe", "dealing", "wagering", "settlement", "projection")
#: fault kinds and their weights in the draw
FAULT_WEIGHTS = {
    "kill9": 4, "sigterm": 2, "sigstop": 3,
    "settlement_after_result": 2, "dealing_mid_round": 2, "shoe_mid_draw": 1, "wagering_while_betting": 1,
    "projection_kill9": 1, "add_instance": 1, "remove_instance": 1,
}
#: what a targeted fault waits for, and which service it hits
TARGETS: dict[str, tuple[str, Callable[[Envelope], bool]]] = {
    "settlement_after_result": ("settlement", lambda e: isinstance(e.payload, RoundResolved)),
    "dealing_mid_round": ("dealing", lambda e: isinstance(e.payload, CardDealt) and e.payload.position == 1),
    "shoe_mid_draw": ("shoe", lambda e: isinstance(e.payload, CardDrawn)),
    "wagering_while_betting": ("wagering", lambda e: isinstance(e.payload, BettingOpened)),
}


@dataclass
class ChaosConfig:
    """One chaos run's size and pace. Times in seconds."""

    bootstrap: str
    prefix: str
    rounds: int = 300
    min_faults: int = 15
    max_seconds: float = 600.0
    tables: int = 6
    instances: int = 2
    seed: int = 1
    fault_gap_s: tuple[float, float] = (2.0, 6.0)
    round_timeout_s: float = 90.0
    quiet_s: float = 20.0  # longer than a session timeout plus a rebuild: a restarted projection catches up
    own_broker: int | None = None  # a port: start our own broker there (and kill it once)
    #: nodes of the own broker (``own_broker``'s port is node 1's): >1 kills and restarts them one at a time
    brokers: int = 1
    #: the own broker's data dir (default ``/tmp/croupier-chaos-kafka-<own_broker>``)
    broker_dir: Path | None = None
    #: only these fault kinds (e.g. ``("broker",)``: broker kills alone, no forced instance faults); None: all
    fault_kinds: tuple[str, ...] | None = None
    workdir: Path | None = None
    replica_port: int = 18931
    croupier: str = str(REPO / ".venv" / "bin" / "croupier")


@dataclass
class Fault:
    """A fault injected: wall-clock moment (ms since the epoch), kind, the instance hit, detail."""

    at_ms: int
    kind: str
    target: str
    detail: str = ""


@dataclass
class ChaosResult:
    """What a run did and what the checks found."""

    rounds_asked: int
    faults: list[Fault]
    raw: RawReport
    audit_clean: bool
    audit_output: str
    replica_diff_cents: int | None
    stall_p99_s: float
    floor_rounds: int
    floor_errors: list[str]
    elapsed_s: float
    #: :func:`stall_lines` of the run
    stall_detail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.raw.clean and self.audit_clean and self.raw.rounds_settled >= self.rounds_asked
                and self.replica_diff_cents == 0 and not self.floor_errors)

    def line(self) -> str:
        """The last line the bench prints (issue 8)."""
        r = self.raw
        return (f"chaos: rounds={r.rounds_settled} faults={len(self.faults)} lost={r.lost} doubled={r.doubled} "
                f"seq_conflicts={r.seq_conflicts} ledger_diff_cents={r.ledger_diff_cents} "
                f"audit={'clean' if self.audit_clean else 'dirty'} stall_p99_s={self.stall_p99_s:.1f}")


def _now_ms() -> int:
    return int(time.time() * 1000)


# ---- processes ----------------------------------------------------------------------------------------------
@dataclass
class Instance:
    """One service instance: a ``croupier serve`` process in its own process group."""

    service: str
    ident: str
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    paused: bool = False
    removed: bool = False
    #: signalled to die (kill -9, SIGTERM) and not restarted yet
    down: bool = False
    starts: int = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


class Cluster:
    """The service instances of one run: start, signal, restart, stop them all."""

    def __init__(self, cfg: ChaosConfig, workdir: Path):
        self.cfg = cfg
        self.workdir = workdir
        self.instances: list[Instance] = []
        self._next: dict[str, int] = {}

    def add(self, service: str) -> Instance:
        """A new instance of ``service`` (a new ``CROUPIER_INSTANCE``), started."""
        n = self._next[service] = self._next.get(service, 0) + 1
        inst = Instance(service, f"{service}-{n}", self.workdir / f"{service}-{n}.log")
        self.instances.append(inst)
        self.start(inst)
        return inst

    def start(self, inst: Instance) -> None:
        env = dict(os.environ, CROUPIER_INSTANCE=inst.ident, KAFKA_BOOTSTRAP_SERVERS=self.cfg.bootstrap)
        log = open(inst.log_path, "ab")  # noqa: SIM115 - the child holds it; closed here right after
        try:
            inst.proc = subprocess.Popen(
                [self.cfg.croupier, "serve", "--services", inst.service, "--prefix", self.cfg.prefix,
                 "--bootstrap", self.cfg.bootstrap],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        inst.paused = False
        inst.down = False
        inst.starts += 1

    def running(self, service: str | None = None) -> list[Instance]:
        """Live, not paused, not removed instances (of one service)."""
        return [i for i in self.instances if i.alive and not i.paused and not i.removed and not i.down
                and (service is None or i.service == service)]

    def stop_all(self, grace_s: float = 10.0) -> None:
        """SIGCONT and SIGTERM every process group, SIGKILL what is still there after ``grace_s``."""
        for i in self.instances:
            i.signal(signal.SIGCONT)
            i.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for i in self.instances:
            if i.proc is None:
                continue
            try:
                i.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                i.signal(signal.SIGKILL)
                try:
                    i.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass


# ---- the floor ----------------------------------------------------------------------------------------------
class WatchedLog(EventLog):
    """The floor's event log, telling listeners of every event as it arrives (targeted faults)."""

    def __init__(self) -> None:
        super().__init__()
        self.listeners: list[Callable[[Envelope], None]] = []

    async def add(self, env: Envelope) -> None:
        await super().add(env)
        for listen in list(self.listeners):
            listen(env)


@dataclass
class FloorState:
    """Shared by the tables: settled rounds, whether to stop, what went wrong."""

    rounds: int = 0
    stop: bool = False
    errors: list[str] = field(default_factory=list)


class ChaosDealer(TableDealer):
    """A table dealer that survives a broker that refuses sends for a while (it retries the same command, same
    id, for up to a minute) and stops starting rounds when the floor says so."""

    def __init__(self, *a: object, floor: FloorState, **kw: object):
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.floor = floor

    async def _send(self, topic: str, payload: Command, correlation: str = "", actor: str = "") -> str:
        from services.runtime.core import command

        cid = self._id()
        cmd = command(self.table_id, cid, self.clock(), payload, correlation, actor=actor or self.dealer_id)
        deadline = time.monotonic() + 60
        while True:
            try:
                await self.io.send(topic, cmd)
                return cid
            except KafkaError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(1.0)

    async def play_round(self, shoe_id: str, round_id: str) -> bool:
        if self.floor.stop:
            return False
        ok = await super().play_round(shoe_id, round_id)
        if ok:
            self.floor.rounds += 1
        return ok

    async def run_until_stopped(self) -> None:
        """Open the table, then shoe after shoe until the floor stops; a wait that times out ends the table."""
        try:
            await self.open_table()
            n = 0
            while not self.floor.stop:
                n += 1
                await self.play_shoe(n)
        except (FloorTimeout, KafkaError, RuntimeError) as e:
            self.floor.errors.append(f"{self.table_id}: {type(e).__name__}: {e}")


def _clock() -> datetime:
    return datetime.now(UTC)


# ---- the run ------------------------------------------------------------------------------------------------
async def create_topics(bootstrap: str, prefix: str) -> int:
    """Every topic of a floor under ``prefix`` (:func:`croupier.topics.create_floor_topics`: the contracts'
    topics and the services' snapshot topics, ``CROUPIER_PARTITIONS`` each, the services' configs, replicated
    ``min(3, brokers)`` times or ``CROUPIER_REPLICATION_FACTOR``; the service processes inherit this
    environment). Returns the replication factor."""
    from croupier.topics import create_floor_topics

    return await create_floor_topics(replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=prefix))


def _partitions() -> int:
    from services.runtime.settings import Settings

    return Settings.from_env().partitions


async def _ends(bootstrap: str, prefix: str) -> dict[TopicPartition, int]:
    consumer = AIOKafkaConsumer(**env_client_options(bootstrap),
                                isolation_level="read_committed")
    await consumer.start()
    try:
        tps = [TopicPartition(prefix + t, p) for t in T.ALL_TOPICS for p in range(_partitions())]
        return await consumer.end_offsets(tps)
    finally:
        await consumer.stop()


async def wait_quiet(bootstrap: str, prefix: str, quiet_s: float, bound_s: float = 120.0) -> bool:
    """Wait until no topic under ``prefix`` grows for ``quiet_s`` seconds (at most ``bound_s``)."""
    deadline = time.monotonic() + bound_s
    last = await _ends(bootstrap, prefix)
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = await _ends(bootstrap, prefix)
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet_s:
            return True
    return False


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


def stall_lines(faults: list[Fault], progress_ms: dict[str, list[int]], end_ms: int, worst: int = 5) -> list[str]:
    """What the stalls were made of, for the report: per fault kind the (fault, table) pairs' p50, p99 and
    longest stall (s); then the ``worst`` longest gaps, each with every fault that fell inside it (s from
    the gap's start), since faults a few seconds apart share one gap and the p99 is often such a gap."""
    found = stalls(faults, progress_ms, end_ms)
    if not found:
        return []
    by_kind: dict[str, list[float]] = {}
    for s in found:
        by_kind.setdefault(s.fault.kind, []).append(s.seconds)
    lines = ["stall by fault kind (s, over fault x table): " + "; ".join(
        f"{k} n={len(v)} p50={_nearest_rank(v, 0.5):.1f} p99={_nearest_rank(v, 0.99):.1f} max={max(v):.1f}"
        for k, v in sorted(by_kind.items()))]
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


class Injector:
    """Draws and injects the faults (see the module docstring)."""

    def __init__(self, cfg: ChaosConfig, cluster: Cluster, log: WatchedLog, broker: OwnKafka | None,
                 out: Callable[[str], None]):
        self.cfg = cfg
        self.cluster = cluster
        self.log = log
        self.broker = broker
        self.rng = random.Random(cfg.seed)
        self.faults: list[Fault] = []
        self.out = out
        self.tasks: set[asyncio.Task[None]] = set()
        self.broker_done = broker is None or broker.brokers > 1  # a single own broker: killed once
        #: a cluster's node killed and not restarted yet (one at a time), and the faults since the last node kill
        self.node_down: int | None = None
        self.since_node_kill = 0
        self.broker_tasks: set[asyncio.Task[None]] = set()
        self.armed: set[str] = set()
        # the first faults always include an instance added and a long pause
        self.forced = ["add_instance", "sigstop_long"] if cfg.fault_kinds is None else []
        self.rng.shuffle(self.forced)

    def _bg(self, coro) -> None:  # type: ignore[no-untyped-def]
        t = asyncio.create_task(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    def _record(self, kind: str, inst: Instance | None, detail: str = "") -> None:
        f = Fault(_now_ms(), kind, inst.ident if inst else "broker", detail)
        self.faults.append(f)
        self.out(f"fault {len(self.faults)}: {kind} {f.target} {detail}".rstrip())

    async def _restart_when_dead(self, inst: Instance) -> None:
        deadline = time.monotonic() + 30
        while inst.alive and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        if inst.alive:
            inst.signal(signal.SIGKILL)
            await asyncio.sleep(0.5)
        await asyncio.sleep(self.rng.uniform(0.5, 3.0))
        if not inst.removed and not inst.alive:
            self.cluster.start(inst)

    async def _resume(self, inst: Instance, after_s: float) -> None:
        await asyncio.sleep(after_s)
        inst.signal(signal.SIGCONT)
        inst.paused = False

    def _pick(self, service: str | None = None) -> Instance | None:
        choices = self.cluster.running(service)
        return self.rng.choice(choices) if choices else None

    def _hit(self, kind: str, inst: Instance, sig: int, detail: str = "") -> None:
        inst.down = True
        inst.signal(sig)
        self._record(kind, inst, detail)
        self._bg(self._restart_when_dead(inst))

    def fire(self, kind: str) -> None:
        """Inject one fault of ``kind`` now (a targeted kind arms a listener that fires on its event)."""
        if kind in TARGETS:
            service, match = TARGETS[kind]
            if kind in self.armed:
                return  # one armed at a time per kind: a single event must not fire a volley
            self.armed.add(kind)

            def listen(env: Envelope) -> None:
                if not match(env):
                    return
                self.log.listeners.remove(listen)
                self.armed.discard(kind)
                inst = self._pick(service)
                if inst is not None:
                    self._hit(kind, inst, signal.SIGKILL, f"after {type(env.payload).__name__} at {env.table_id}")

            self.log.listeners.append(listen)
            return
        if kind in ("kill9", "sigterm", "projection_kill9"):
            inst = self._pick("projection" if kind == "projection_kill9" else None)
            if inst is not None:
                self._hit(kind, inst, signal.SIGTERM if kind == "sigterm" else signal.SIGKILL)
        elif kind in ("sigstop", "sigstop_long"):
            inst = self._pick()
            if inst is not None:
                pause = self.rng.uniform(12, 20) if kind == "sigstop_long" or self.rng.random() < 0.25 else (
                    self.rng.uniform(2, 6))
                inst.signal(signal.SIGSTOP)
                inst.paused = True
                self._record("sigstop", inst, f"for {pause:.1f} s")
                self._bg(self._resume(inst, pause))
        elif kind == "add_instance":
            service = self.rng.choice(SERVICES)
            if len([i for i in self.cluster.instances if i.service == service and not i.removed]) <= self.cfg.instances:
                inst = self.cluster.add(service)
                self._record(kind, inst)
        elif kind == "remove_instance":
            extra = [i for i in self.cluster.instances if not i.removed and i.alive and not i.paused
                     and int(i.ident.rsplit("-", 1)[1]) > self.cfg.instances]
            if extra:
                inst = self.rng.choice(extra)
                inst.removed = True
                inst.signal(signal.SIGTERM)
                self._record(kind, inst)
        elif kind == "broker" and self.broker is not None and self.broker.brokers == 1:
            self.broker_done = True
            self._record("broker_kill9", None)
            self._bg(self._broker_restart(1))
        elif kind == "broker" and self.broker is not None and self.node_down is None:
            self._kill_node()

    def _kill_node(self) -> None:
        """A cluster: ``kill -9`` one node, every other time the active controller (``controller_kill9``),
        else another node (``broker_kill9``), and restart it 2-5 s later; one node down at a time."""
        assert self.broker is not None
        controller = self.broker.active_controller()
        kills = sum(1 for f in self.faults if f.kind in ("controller_kill9", "broker_kill9"))
        others = [n for n in range(1, self.broker.brokers + 1) if n != controller]
        node = controller if kills % 2 == 0 and controller is not None else self.rng.choice(others)
        kind = "controller_kill9" if node == controller else "broker_kill9"
        self.node_down = node
        self.since_node_kill = 0
        f = Fault(_now_ms(), kind, f"broker-{node}", f"node {node} of {self.broker.brokers}"
                  + (" (active controller)" if node == controller else f" (controller: node {controller})"))
        self.faults.append(f)
        self.out(f"fault {len(self.faults)}: {kind} {f.target} {f.detail}")
        t = asyncio.create_task(self._broker_restart(node))
        self.broker_tasks.add(t)
        t.add_done_callback(self.broker_tasks.discard)

    async def _broker_restart(self, node: int) -> None:
        assert self.broker is not None
        self.broker.kill9(node)
        try:
            await asyncio.sleep(self.rng.uniform(2, 5))
            try:
                await asyncio.to_thread(self.broker.start_node if self.broker.brokers > 1 else self.broker.start,
                                        *((node,) if self.broker.brokers > 1 else ()))
            except RuntimeError as e:  # said, and retried by settle()'s start of every node
                self.out(f"broker node {node} did not restart: {e}")
        finally:
            self.node_down = None

    def draw(self) -> str:
        self.since_node_kill += 1
        if self.forced:
            return self.forced.pop()
        if not self.broker_done and len(self.faults) >= 5:
            return "broker"
        if (self.broker is not None and self.broker.brokers > 1 and self.node_down is None
                and len(self.faults) >= 3 and self.since_node_kill > 3):
            return "broker"
        if self.cfg.fault_kinds is not None:
            return self.rng.choice(self.cfg.fault_kinds)
        kinds, weights = zip(*FAULT_WEIGHTS.items())
        return self.rng.choices(kinds, weights)[0]

    async def run(self, floor: FloorState) -> None:
        """Inject faults until the floor stops."""
        while not floor.stop:
            await asyncio.sleep(self.rng.uniform(*self.cfg.fault_gap_s))
            if floor.stop:
                break
            self.fire(self.draw())

    async def settle(self) -> None:
        """Stop injecting: drop armed targets, resume the paused, restart the dead (not the removed)."""
        self.log.listeners.clear()
        self.armed.clear()
        for t in list(self.tasks):
            t.cancel()
        if self.broker_tasks:  # a node being restarted comes back first
            await asyncio.gather(*self.broker_tasks, return_exceptions=True)
        if self.broker is not None and self.broker.brokers > 1:
            await asyncio.to_thread(self.broker.start)  # every node up (starts only those that are not)
        for inst in self.cluster.instances:
            if inst.paused:
                inst.signal(signal.SIGCONT)
                inst.paused = False
            if not inst.removed and not inst.alive:
                self.cluster.start(inst)


async def _wait_started(cluster: Cluster, bound_s: float = 180.0) -> None:
    """Wait until every instance logged ``service_started`` (or died: then it is restarted)."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        pending = [i for i in cluster.instances if not (i.log_path.exists() and b"service_started" in i.log_path.read_bytes())]
        if not pending:
            return
        for i in pending:
            if not i.alive:
                cluster.start(i)
        await asyncio.sleep(0.5)
    raise TimeoutError("services did not start: " + ", ".join(
        i.ident for i in cluster.instances if b"service_started" not in i.log_path.read_bytes()))


def run_audit(cfg: ChaosConfig) -> tuple[bool, str]:
    """``croupier audit --prefix P`` as a separate process: (clean, its output's last lines). When the run's
    shoe services seal with keys from the environment (``CROUPIER_VAULT_KEY_FILE`` or ``CROUPIER_VAULT_KEYS``),
    the audit gets them as ``--vault-key-file`` (a temporary file, mode 600) and opens every sealed shoe
    order too."""
    import tempfile

    cmd = [cfg.croupier, "audit", "--prefix", cfg.prefix, "--bootstrap", cfg.bootstrap]
    with tempfile.TemporaryDirectory(prefix="chaos-audit-") as tmp:
        key_file = os.environ.get("CROUPIER_VAULT_KEY_FILE")
        if not key_file and os.environ.get("CROUPIER_VAULT_KEYS"):
            key_file = os.path.join(tmp, "vault.keys")
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(os.environ["CROUPIER_VAULT_KEYS"].replace(",", "\n") + "\n")  # entries, a line each
        if key_file:
            cmd += ["--vault-key-file", key_file]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            return False, "audit did not finish in 600 s"
    return out.returncode == 0, (out.stdout + out.stderr).strip()


def _get(url: str, token: str = "") -> object:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


async def replica_diff(cfg: ChaosConfig, raw: RawReport, tables: list[str], workdir: Path) -> int | None:
    """Start a fresh read-only projection replica (``croupier api``), wait until its digest is stable, and sum
    the absolute differences between its ledger balances and those on ``projection.ledger`` (what the live
    projection instances published), over every account of every table; None if it never came up."""
    import secrets

    token = secrets.token_hex(16)  # surveillance, for this replica only: ledgers and the digest need a role
    log = open(workdir / "replica.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([cfg.croupier, "api", "--port", str(cfg.replica_port), "--prefix", cfg.prefix,
                             "--bootstrap", cfg.bootstrap], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ, CROUPIER_API_TOKEN_SURVEILLANCE=token))
    log.close()
    base = f"http://127.0.0.1:{cfg.replica_port}"
    try:
        deadline = time.monotonic() + 120
        last = None
        while time.monotonic() < deadline:
            await asyncio.sleep(2.0)
            try:
                h = await asyncio.to_thread(_get, f"{base}/digest", token)  # 503 (an OSError) until restored
            except OSError:
                continue
            assert isinstance(h, dict)
            if h.get("tables") == len(tables) and h.get("digest") == last:
                break
            last = h.get("digest")
        else:
            return None
        diff = 0
        for t in tables:
            got = await asyncio.to_thread(_get, f"{base}/tables/{t}/ledger", token)
            assert isinstance(got, dict)
            bal: dict[str, int] = got["balances"]
            for account in set(bal) | {a for a in raw.ledger if a.startswith((f"table:{t}:", f"patron:{t}-"))}:
                diff += abs(bal.get(account, 0) - raw.ledger.get(account, 0))
        return diff
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


async def run_chaos(cfg: ChaosConfig, out: Callable[[str], None] = print) -> ChaosResult:
    """Run one chaos run (see the module docstring) and check it. Always stops what it started."""
    t0 = time.monotonic()
    workdir = cfg.workdir or REPO / "var" / "chaos" / cfg.prefix.rstrip(".")
    workdir.mkdir(parents=True, exist_ok=True)
    broker = None
    if cfg.own_broker is not None:
        broker = OwnKafka(cfg.own_broker, cfg.broker_dir or Path(f"/tmp/croupier-chaos-kafka-{cfg.own_broker}"),
                          cfg.brokers)
        try:
            await asyncio.to_thread(broker.fresh_start)
        except BaseException:  # a cluster half started: stop the nodes that did
            await asyncio.to_thread(broker.stop)
            raise
        cfg.bootstrap = broker.bootstrap
    cluster = Cluster(cfg, workdir)
    floor = FloorState()
    io = KafkaFloorIO(replace(Settings.from_env(), bootstrap_servers=cfg.bootstrap, topic_prefix=cfg.prefix))
    log = WatchedLog()
    io.log = log
    injector = Injector(cfg, cluster, log, broker, out)
    tables = [f"CH-{n:02d}" for n in range(1, cfg.tables + 1)]
    end_ms = 0
    try:
        await create_topics(cfg.bootstrap, cfg.prefix)
        for service in SERVICES:
            for _ in range(cfg.instances):
                cluster.add(service)
        await _wait_started(cluster)
        out(f"{len(cluster.instances)} instances started under prefix {cfg.prefix} (logs in {workdir})")
        await io.start()
        rng = random.Random(cfg.seed + 1)
        dealers = [ChaosDealer(io, tid, no_vig_dragon(panda=True) if n % 3 == 0 else punto_banco_full(),
                               [Seat(i, f"{tid}-player-{i}") for i in range(1, 7)], random.Random(rng.random()),
                               _clock, timeout=cfg.round_timeout_s, floor=floor)
                   for n, tid in enumerate(tables, 1)]
        work = asyncio.gather(*(d.run_until_stopped() for d in dealers))
        faults = asyncio.create_task(injector.run(floor))
        deadline = time.monotonic() + cfg.max_seconds  # the floor's bound, from its start (not the brokers')
        last_report = time.monotonic()
        while not work.done():
            await asyncio.sleep(0.5)
            enough = floor.rounds >= cfg.rounds and len(injector.faults) >= cfg.min_faults
            if not floor.stop and (enough or time.monotonic() > deadline):
                floor.stop = True
                out(f"stopping the floor: {floor.rounds} rounds, {len(injector.faults)} faults, "
                    f"{time.monotonic() - t0:.0f} s")
            if time.monotonic() - last_report > 15:
                last_report = time.monotonic()
                out(f"... {floor.rounds} rounds, {len(injector.faults)} faults, {time.monotonic() - t0:.0f} s")
            if floor.stop and time.monotonic() > deadline + cfg.round_timeout_s + 60:
                work.cancel()
                floor.errors.append("the floor did not finish within its bound")
                break
        try:
            await work
        except asyncio.CancelledError:
            pass
        end_ms = _now_ms()
        faults.cancel()
        await injector.settle()
        await wait_quiet(cfg.bootstrap, cfg.prefix, cfg.quiet_s)
        raw = check(await read_all(cfg.bootstrap, cfg.prefix))
        audit_clean, audit_output = await asyncio.to_thread(run_audit, cfg)
        try:
            rdiff = await replica_diff(cfg, raw, [t for t in tables if t in raw.progress_ms], workdir)
        except (OSError, ValueError, KeyError) as e:
            out(f"replica check failed: {type(e).__name__}: {e}")
            rdiff = None
        return ChaosResult(cfg.rounds, injector.faults, raw, audit_clean, audit_output, rdiff,
                           stall_p99(injector.faults, raw.progress_ms, end_ms), floor.rounds, floor.errors,
                           time.monotonic() - t0, stall_lines(injector.faults, raw.progress_ms, end_ms)
                           + [ln for ln in (restore_line(workdir),) if ln])
    finally:
        for t in list(injector.tasks | injector.broker_tasks):
            t.cancel()
        await io.stop()
        await asyncio.to_thread(cluster.stop_all)
        if broker is not None:
            await asyncio.to_thread(broker.stop)


def report_lines(res: ChaosResult) -> list[str]:
    """The run's report, ending with the ``chaos:`` line."""
    kinds: dict[str, int] = {}
    for f in res.faults:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    lines = [f"floor: {res.floor_rounds} rounds dealt in {res.elapsed_s:.0f} s; faults {kinds}"]
    lines += [f"floor error: {e}" for e in res.floor_errors[:10]]
    lines += res.raw.summary_lines()
    shown: dict[str, int] = {}
    for f in res.raw.findings:
        shown[f.kind] = shown.get(f.kind, 0) + 1
        if shown[f.kind] <= 3:
            lines.append(f"  {f}")
    lines.append("replica: " + ("did not come up" if res.replica_diff_cents is None else
                                f"ledger differs from projection.ledger by {res.replica_diff_cents} cents"))
    lines += ["audit: " + ln for ln in res.audit_output.splitlines()[:12]]
    lines += res.stall_detail
    lines.append(res.line())
    return lines


__all__ = [
    "ChaosConfig",
    "ChaosResult",
    "Fault",
    "Stall",
    "report_lines",
    "restore_line",
    "restore_waves",
    "run_chaos",
    "stall_lines",
    "stall_p99",
    "stalls",
]
