"""The chaos run's fault injector (:mod:`croupier.chaos`, whose docstring lists the faults): draws the faults
from ``random.Random(seed)``, fires the targeted ones on the event they wait for, restarts what died, and
at the end resumes and restarts everything."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Callable
from typing import Any

from contracts.envelope import Envelope
from croupier.chaos_floor import Cluster, FloorState, Instance, WatchedLog
from croupier.chaos_model import FAULT_WEIGHTS, SERVICES, TARGETS, ChaosConfig, Fault, _now_ms
from croupier.ownkafka import OwnKafka


#: the longest a restarted node may take to be back in every partition's in-sync replicas before the next
#: node may be killed (s); then the run goes on and says so
RESYNC_MAX_S = 240.0
#: how often the metadata is asked meanwhile (s)
RESYNC_POLL_S = 1.0


def under_replicated(topics: list[dict[str, Any]]) -> int:
    """Partitions whose in-sync replicas are fewer than their replicas, in a metadata answer's ``topics``
    (aiokafka's ``AIOKafkaAdminClient.describe_topics()``: dicts with ``partitions``, each with ``replicas``
    and ``isr`` node lists)."""
    return sum(1 for t in topics for p in t.get("partitions", ()) if len(p.get("isr", ())) < len(p.get("replicas", ())))


async def count_under_replicated(bootstrap: str) -> int:
    """:func:`under_replicated` over every topic of the cluster at ``bootstrap`` (internal ones too: the
    group and transaction coordinators' ``__consumer_offsets`` and ``__transaction_state``). Raises aiokafka's
    errors."""
    from aiokafka.admin import AIOKafkaAdminClient

    from services.runtime.settings import env_client_options

    admin = AIOKafkaAdminClient(**env_client_options(bootstrap))
    await admin.start()
    try:
        return under_replicated(await admin.describe_topics())
    finally:
        await admin.close()


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
                return
            if self.broker.brokers > 1:
                await self._resync(node)
        finally:
            self.node_down = None

    async def _resync(self, node: int) -> None:
        """Wait until the restarted ``node`` is back in every partition's in-sync replicas (at most
        :data:`RESYNC_MAX_S`): only then may another node be killed. A node that serves again is not yet in
        sync (it recovers its logs and catches up first, a minute or more on a loaded machine); killing a
        second one meanwhile left a partition with one in-sync replica of the ``min.insync.replicas`` 2, so
        every transaction writing to it failed and the whole floor stood still (a chaos run: all six
        tables, 90 s)."""
        assert self.broker is not None
        t0 = time.monotonic()
        n = -1
        while time.monotonic() - t0 < RESYNC_MAX_S:
            try:
                n = await count_under_replicated(self.broker.bootstrap)
            except Exception as e:  # noqa: BLE001 - a cluster still electing: asked again
                self.out(f"broker node {node}: metadata not answered: {type(e).__name__}: {e}")
                n = -1
            if n == 0:
                self.out(f"broker node {node} in sync {time.monotonic() - t0:.1f} s after its restart")
                return
            await asyncio.sleep(RESYNC_POLL_S)
        self.out(f"broker node {node} still not in sync after {RESYNC_MAX_S:.0f} s ({n} partitions "
                 f"under-replicated): going on")

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
