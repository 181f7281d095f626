"""The chaos run's processes and floor (:mod:`croupier.chaos`): each service instance a ``croupier serve``
process in its own process group (:class:`Cluster`), the floor's event log telling listeners of every event
(:class:`WatchedLog`, for targeted faults), and a table dealer that survives a broker refusing sends
(:class:`ChaosDealer`)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aiokafka.errors import KafkaError

from contracts.commands import Command
from contracts.envelope import Envelope
from croupier.chaos_model import ChaosConfig
from services.floor.dealer import TableDealer
from services.floor.io import EventLog, FloorTimeout


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
