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
   groups' 6 s session timeout, ``services.runtime.app.SESSION_TIMEOUT_MS``); targeted ones, fired on the
   next matching event the floor sees (a
   settlement instance right after a ``RoundResolved``, a dealing instance after the first ``CardDealt``, a
   shoe instance after a ``CardDrawn``, a wagering instance after ``BettingOpened``: the instance killed is
   one of that service's, not necessarily the table's owner); a third instance of a service added, and an
   added one removed; with ``own_broker`` the broker killed (``kill -9``) and restarted once, or with
   ``brokers`` > 1 (a KRaft cluster of that many nodes, :class:`croupier.ownkafka.OwnKafka`) after every
   fourth fault one node killed (``kill -9``) and restarted 2–5 s later, one node down at a time (the next
   only once the restarted one is back in every partition's in-sync replicas: ``chaos_faults._resync``),
   every other one the active controller (``controller_kill9``; the others ``broker_kill9``). Killed and
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
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from croupier.chaos_faults import Injector
from croupier.chaos_floor import ChaosDealer, Cluster, FloorState, WatchedLog, _clock
from croupier.chaos_model import (
    REPO,
    SERVICES,
    ChaosConfig,
    ChaosResult,
    Fault,
    _now_ms,
)
from croupier.chaos_stalls import Stall, restore_line, restore_waves, stall_lines, stall_p99, stalls
from croupier.ownkafka import OwnKafka
from croupier.rawcheck import RawReport, check, read_all
from services.floor.bettors import Seat
from services.floor.io import KafkaFloorIO
from services.runtime.settings import Settings, env_client_options


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
