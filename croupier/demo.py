"""``croupier demo``: a whole floor on one machine, with a live dashboard.

Starts (or uses) a Kafka broker, runs the five services in this process and a simulated floor: one dealer
per table dealing real 8-deck shoes to the cutting card, seated players with bankrolls betting a mix of
every wager the table offers, and at each table an advantage player who bets side wagers only when their
exact EV is positive (so surveillance has something to find). At the end: a summary, a full audit of the
log, and where the log lives.

Floors (``--floor``, :data:`FLOORS`): ``standard`` (punto banco with every wager, every third table the
no-vigorish variation with dragon 7 and panda 8) and ``mixed`` (the games side by side, table after table:
punto banco with a curator passing the shoe, the no-vigorish variation with dragon 7, casino night, chemin de fer).

The parts, each in the module named for it: :mod:`croupier.demo_floor` (the floors, the tables' boards, the
demo's dealers) and :mod:`croupier.demo_screen` (the dashboard, the summary, the log file).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import subprocess
import time
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from aiokafka.errors import KafkaError
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

import services
from contracts import topics as T
from contracts.codecs import decode_event
from croupier.audit import audit
from croupier.cage_report import cage_line
from croupier.demo_floor import (FLOORS, MIXED_GAMES, Bankroll, ChemDemoDealer, DemoDealer,
                                 FloorRun, TableBoard, _settle_bankrolls)
from croupier.demo_screen import LogFile, _dashboard, _summary
from croupier.devkey import with_dev_key
from croupier.log import read_commands, read_for_audit, read_vault
from croupier.replay import unreachable
from croupier.topics import require_prefix
from services.cage.patrons import gaming_day_of
from services.floor.advantage import AdvantagePlayer
from services.floor.bettors import Seat
from services.floor.cage import CageClerk
from services.floor.ids import check_run_id, shift_id
from services.floor.io import FloorTimeout, KafkaFloorIO
from services.rawlog import read_topic
from services.runtime.app import Service
from services.runtime.kafka import ensure_topics
from services.runtime.logging import STDERR, configure
from services.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[1]
KAFKA_SH = REPO / "infra" / "kafka" / "kafka.sh"
#: where the demo serves the pit's pages (the next free port when taken)
DEFAULT_PIT_PORT = 8080
ROUNDS_PER_SHOE = 80  # for the progress bar only: a shoe of 8 decks gives about 75-85 rounds


class DemoError(RuntimeError):
    """A demo that cannot run (no broker, no Java): one line for the user."""


class NoAnswer(DemoError):
    """The broker is reachable but no service answered the floor's first commands (``--no-services``)."""


def start_local_kafka() -> tuple[str, bool]:
    """Start the project's pinned broker (fetching its jars on first use) unless it already runs; returns its
    bootstrap address and whether this call started it (only then does the demo stop it at the end)."""
    if not KAFKA_SH.exists():
        raise DemoError("KAFKA_BOOTSTRAP_SERVERS is not set and infra/kafka/kafka.sh is not here to start one")
    status = subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True, text=True, timeout=60)
    for line in status.stdout.splitlines() if status.returncode == 0 else []:
        if line.startswith("KAFKA_BOOTSTRAP_SERVERS="):
            return line.split("=", 1)[1].strip(), False
    try:
        out = subprocess.run(["bash", str(KAFKA_SH), "start"], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise DemoError("the local Kafka broker did not start within 10 minutes") from None
    for line in out.stdout.splitlines():
        if line.startswith("KAFKA_BOOTSTRAP_SERVERS="):
            return line.split("=", 1)[1].strip(), True
    last = (out.stderr.strip().splitlines() or ["no output"])[-1]
    raise DemoError(f"the local Kafka broker did not start: {last}")


def stop_local_kafka() -> None:
    subprocess.run(["bash", str(KAFKA_SH), "stop"], capture_output=True, text=True, timeout=120)


async def run_demo(tables: int, shoes: int, speed: float, bootstrap: str | None, console: Console,
                   seed: int | None = None, prefix: str | None = None, with_services: bool = True,
                   run_id: str | None = None, rounds: int | None = None, answer_timeout: float = 30.0,
                   floor: str = "standard", pit_port: int | None = DEFAULT_PIT_PORT) -> int:
    """Run the demo; returns the exit status (0 when the final audit is clean).

    ``prefix``: the topic prefix (default: a new ``demo-<time>-<id>.``); ``with_services`` False drives the
    tables only, against services already running under that prefix (``croupier serve``). ``run_id``: the
    namespace of this run's command, shoe and round ids (:mod:`services.floor.ids`; default a new 8-hex-digit
    uuid), so the same tables can be dealt again on the same prefix. ``rounds``: close each shoe after that
    many rounds (None: deal it to the cutting card). ``answer_timeout``: seconds to wait for the services'
    answer to each table's first command when they run elsewhere. ``floor``: which games the tables deal, a
    name of :data:`FLOORS` (``standard`` | ``mixed``; raises ``ValueError`` for another). ``pit_port``: serve
    the pit's read-only pages and the query API there while the demo runs (the next free port when taken;
    None: not at all), with fresh tokens per role in ``var/<prefix>pit-tokens`` (mode 600, printed path).

    Raises :class:`Unreachable` (no broker at ``bootstrap``), :class:`croupier.topics.NoSuchPrefix` (driving
    services elsewhere on a prefix that has no topics), :class:`NoAnswer` (no service answered within
    ``answer_timeout``), :class:`DemoError` (the services stopped answering; no local broker could be started),
    :class:`services.floor.ids.BadRunId`.
    """
    if floor not in FLOORS:
        raise ValueError(f"unknown floor {floor!r}: one of {', '.join(FLOORS)}")
    game_of = FLOORS[floor]
    run_id = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:8]
    started_kafka = False
    if not bootstrap:
        console.print("using the project's local Kafka broker (infra/kafka/kafka.sh) ...")
        bootstrap, started_kafka = await asyncio.to_thread(start_local_kafka)
    prefix = prefix or f"demo-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:4]}."
    # connection security (a secured broker's SASL settings) from the environment, as every command has
    settings = replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=prefix)
    if with_services:
        # the demo's shoe service needs a vault key: a configured one, else a development key for this prefix
        settings, key_path, created = with_dev_key(settings)
        if key_path is not None:
            console.print(f"no vault key configured: the demo's shoe service seals under the development key "
                          f"{key_path} ({'created' if created else 'reused'}, mode 600)")
    else:
        # a prefix no service ever ran on: say so now, and create nothing for it (topics, log file)
        await require_prefix(settings, hint=f": no service has run on it; start them with `croupier serve "
                                            f"--prefix {prefix}`")
    log_path = REPO / "var" / f"{prefix}log.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    existed = log_path.exists()
    log_file = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in finally
    logs = LogFile(log_path, log_file, "Service logs" if with_services else "Floor client logs")
    configure(file=log_file)  # the JSON logs go to a file, not over the dashboard
    running: list[Service] = []
    pit_task: asyncio.Task[None] | None = None
    pit_stop = asyncio.Event()
    io = KafkaFloorIO(settings)
    rng = random.Random(seed)
    run = FloorRun()
    try:
        try:
            await ensure_topics(settings, T.ALL_TOPICS)
        except (KafkaError, OSError) as e:
            raise await unreachable(settings, str(e)) from None
        for name in services.NAMES if with_services else ():
            svc = services.create(name, settings)
            await svc.start()
            running.append(svc)
        projection = running[services.NAMES.index("projection")] if with_services else None
        if projection is not None and pit_port is not None:
            pit_task, pit_stop = await _start_pit(projection, settings, pit_port, console)
        await io.start()
        dealers = []
        for n in range(1, tables + 1):
            tid = f"BAC-{n:02d}"
            game, cfg = game_of(n)
            board = run.tables[tid] = TableBoard(tid, cfg, game)
            seats = [Seat(i, f"{tid}-player-{i}") for i in range(1, 7)]
            bankrolls = [Bankroll(s, rng.choice([100_000, 250_000, 500_000, 1_000_000])) for s in seats]
            ap = AdvantagePlayer(seat=7, player_id=f"{tid}-counter")
            chemin = cfg.variant.value == "chemin_de_fer"
            kind = ChemDemoDealer if chemin else DemoDealer
            # the cage runs every house-banked table's shift (chemin de fer's wagers are against a patron's bank)
            # odd tables open at their par, even ones at three times it (they will be credited); a high roller
            # buys in $12,000 cash at each (an MTL entry and a CTR for the currency reporting)
            clerk = None if chemin else CageClerk(shift_id(tid, run_id, 1), gaming_day_of(_clock()),
                                                  f"pit-{(n + 1) // 2}", random.Random(rng.random()),
                                                  opener_cents=(1 if n % 2 else 3) * 500_000, par_cents=500_000,
                                                  high_roller_cents=1_200_000)
            dealers.append(kind(io, tid, cfg, seats, random.Random(rng.random()), _clock, timeout=120,
                                      open_timeout=120 if with_services else answer_timeout, run_id=run_id,
                                      rounds_per_shoe=rounds,
                                      bankrolls=bankrolls, ap=ap, board=board, run=run,
                                      pause_s=(1 / speed if speed > 0 else 0.0),
                                      on_round=None, cage=clerk))
        for d in dealers:
            d.on_round = lambda _r, env, d=d: _settle_bankrolls(d, env)
            run.runs.append(d.run_state)
        progress = Progress(TextColumn("dealing"), BarColumn(), TextColumn("{task.completed}/{task.total} rounds"),
                            TimeElapsedColumn())
        per_shoe = rounds or ROUNDS_PER_SHOE
        task = progress.add_task("rounds", total=tables * shoes * per_shoe)
        t0 = time.monotonic()

        async def table(d: DemoDealer) -> None:
            await d.run(shoes=shoes)
            d.board.done = True

        work = asyncio.gather(*(table(d) for d in dealers))
        with Live(_dashboard(run, projection, progress, t0), console=console, refresh_per_second=4,
                  transient=False) as live:
            while not work.done():
                progress.update(task, completed=run.rounds, total=max(run.rounds, tables * shoes * per_shoe))
                live.update(_dashboard(run, projection, progress, t0))
                await asyncio.sleep(0.25)
            progress.update(task, completed=run.rounds, total=run.rounds)
            live.update(_dashboard(run, projection, progress, t0))
        try:
            await work
        except FloorTimeout as e:
            if with_services or any(io.log.by_table.get(tid) for tid in run.tables):
                raise DemoError(f"the services on prefix {prefix!r} stopped answering: {e}") from None
            raise NoAnswer(
                f"no service answered the floor on prefix {prefix!r} at {bootstrap} within {answer_timeout:g} s "
                f"(the broker is reachable): start the services on it, `croupier serve --prefix {prefix}`, or run "
                f"`croupier demo` without --no-services; if they run, run id {run_id!r} was used on this prefix "
                "before: give a new --run-id") from None
        elapsed = time.monotonic() - t0
        await asyncio.sleep(1.0)  # let the projection fold the last settlements
        alerts = [a for s in projection.host.runner.tables.values() for a in s.state.alerts] if projection else []
        envs, undecodable, unknown = await read_for_audit(settings)
        keys = running[0].host.core.vault.keys if with_services else None  # the shoe service's keys
        vault = (await read_vault(settings))[0] if keys is not None else None
        report = audit(envs, undecodable=undecodable, unknown=unknown, vault=vault, vault_keys=keys,
                       vault_reason="the demo drove services it did not start: no vault key",
                       commands=await read_commands(settings))
        _summary(console, run, alerts, report, elapsed, settings,
                 REPO / "var" / "kafka" if started_kafka else None, logs, run_id)
        cage = [decode_event(r.value) for r in await read_topic(settings, settings.topic(T.CAGE_EVENTS))]
        console.print(cage_line([*envs, *cage]), markup=False)
        return 0 if report.clean else 1
    finally:
        if pit_task is not None:
            pit_stop.set()
            with contextlib.suppress(Exception):
                await pit_task
        await io.stop()
        for svc in reversed(running):
            await svc.stop()
        if started_kafka:
            await asyncio.to_thread(stop_local_kafka)
        configure(file=STDERR)  # logs go back to stderr before the file closes
        log_file.close()
        if not existed and log_path.stat().st_size == 0:
            log_path.unlink()  # --no-services: the floor's clients had nothing to say; name no empty file


async def _start_pit(projection: Service, settings: Settings, port: int, console: Console
                     ) -> tuple[asyncio.Task[None], asyncio.Event]:
    """Serve the pit's pages over the demo's projection (read-only: the demo's dealers run the tables) on
    127.0.0.1:``port`` (or the next free port), with fresh tokens written to ``var/<prefix>pit-tokens``
    (mode 600); prints the address and the file. Returns the server task and its stop event."""
    from croupier.pit import create_pit_app, serve_pit
    from services.runtime.credentials import write_ephemeral_tokens
    from services.runtime.ops import PortTaken, bind_listener

    for candidate in range(port, port + 20):
        try:
            # bound here and held: another process cannot take it before the pages are served
            sock = bind_listener("127.0.0.1", candidate)
            break
        except PortTaken:
            continue
    else:
        console.print(f"the pit's pages are not served: ports {port}-{port + 19} are all taken", markup=False)
        stop = asyncio.Event()
        stop.set()
        return asyncio.create_task(stop.wait()), stop
    path = REPO / "var" / f"{settings.topic_prefix}pit-tokens"
    tokens = write_ephemeral_tokens(path)
    pit = create_pit_app(projection.host, tokens, ready=lambda: projection.ready)
    stop = asyncio.Event()
    task = asyncio.create_task(serve_pit(pit, "127.0.0.1", candidate, stop, sock=sock))
    console.print(f"The floor in a browser: http://127.0.0.1:{candidate}/ (plain HTTP on this machine only, served "
                  f"while the demo runs; a floor serves `croupier pit --tls-cert --tls-key`; log in with "
                  f"the pit or surveillance token from {path}, mode 600: grep pit= {path})", markup=False,
                  soft_wrap=True)
    return task, stop


def _clock() -> datetime:
    return datetime.now(timezone.utc)  # the floor is an edge: its commands carry the wall-clock time


__all__ = ["FLOORS", "MIXED_GAMES", "DemoError", "NoAnswer", "run_demo"]
