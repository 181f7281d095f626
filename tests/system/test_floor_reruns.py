"""``croupier demo --no-services`` on the real broker, against services running in this process: the same floor
dealt twice on one prefix (each run its own command, shoe and round ids), a prefix whose services do not run,
a prefix nobody used, and ``croupier replay`` into a closed pipe."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

import services
from contracts import topics as T
from croupier.topics import delete_prefix, list_topics
from services.runtime.app import Service
from services.runtime.kafka import ensure_topics
from services.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DECIDERS = ("shoe", "dealing", "wagering", "settlement", "cage")  # no projection; the demo's cage clerk needs the cage


def _settings(bootstrap: str, tag: str) -> Settings:
    return replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=f"ops{tag}{uuid.uuid4().hex[:8]}.")


async def croupier(*args: str, stdout: int | None = asyncio.subprocess.PIPE,
                   timeout: float = 300.0) -> tuple[int, str, str]:
    """``croupier ARGS`` as its own process (this process's event loop keeps serving meanwhile):
    (exit status, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "croupier.cli", *args, cwd=REPO,
                                                stdout=stdout, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, (out or b"").decode(), err.decode()


@pytest.fixture
async def served(kafka_bootstrap: str) -> AsyncIterator[Settings]:
    """The deciding services (and the cage) running here under a fresh prefix; its topics deleted afterwards."""
    settings = _settings(kafka_bootstrap, "re")
    await ensure_topics(settings, T.ALL_TOPICS)
    running: list[Service] = []
    try:
        for name in DECIDERS:
            svc = services.create(name, settings)
            await svc.start()
            running.append(svc)
        for svc in running:
            await svc.wait_ready()
        yield settings
    finally:
        for svc in reversed(running):
            await svc.stop()
        await delete_prefix(settings, settings.topic_prefix, refuse_if_running=False)
        (REPO / "var" / f"{settings.topic_prefix}log.jsonl").unlink(missing_ok=True)


def _summary(out: str) -> tuple[str, str, str]:
    """(run id, audit line, rounds line) of a demo's summary."""
    run = re.search(r"topics \S+\*, run ([0-9a-f]{8})", out)
    audit = re.search(r"^Audit: .*$", out, re.MULTILINE)
    rounds = re.search(r"^Rounds \d+ in .*$", out, re.MULTILINE)
    assert run and audit and rounds, out[-3000:]
    return run.group(1), audit.group(0), rounds.group(0)


async def test_the_floor_driver_deals_twice_on_one_prefix_and_replay_into_a_closed_pipe_exits_0(served: Settings):
    prefix, boot = served.topic_prefix, served.bootstrap_servers
    args = ("demo", "--no-services", "--prefix", prefix, "--bootstrap", boot, "--tables", "2", "--rounds", "3",
            "--seed", "1", "--timeout", "60")
    code1, out1, err1 = await croupier(*args)
    assert code1 == 0, (out1[-3000:], err1[-2000:])
    run1, audit1, rounds1 = _summary(out1)
    assert audit1.startswith("Audit: clean") and "2 shoes verified, 6 rounds and" in audit1, audit1
    assert rounds1.startswith("Rounds 6 in"), rounds1

    code2, out2, err2 = await croupier(*args)  # the same tables again: before run ids, a 120 s hang
    assert code2 == 0, (out2[-3000:], err2[-2000:])
    run2, audit2, rounds2 = _summary(out2)
    assert run2 != run1
    # the audit reads the whole prefix: both runs' shoes and rounds, all clean
    assert audit2.startswith("Audit: clean") and "4 shoes verified, 12 rounds and" in audit2, audit2
    assert rounds2.startswith("Rounds 6 in"), rounds2

    code, out, err = await croupier("replay", "--prefix", prefix, "--bootstrap", boot, "--table", "BAC-01")
    assert (code, err) == (0, "")
    for run in (run1, run2):
        assert all(f"BAC-01-{run}-shoe-1-round-{n}" in out for n in (1, 2, 3)), out
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -1` that already has its line: every write to stdout fails
    try:
        code, out, err = await croupier("replay", "--prefix", prefix, "--bootstrap", boot, "--table", "BAC-01",
                                        stdout=write_end)
    finally:
        os.close(write_end)
    assert (code, err) == (0, "")


async def test_no_service_on_the_prefix_is_told_apart_from_no_broker(kafka_bootstrap: str):
    settings = _settings(kafka_bootstrap, "idle")
    await ensure_topics(settings, T.ALL_TOPICS)  # a floor's topics, but nothing serves them
    prefix = settings.topic_prefix
    try:
        t0 = time.monotonic()
        code, out, err = await croupier("demo", "--no-services", "--prefix", prefix, "--bootstrap", kafka_bootstrap,
                                        "--tables", "1", "--timeout", "3")
        elapsed = time.monotonic() - t0
        assert code == 1, (out[-2000:], err)
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"error: no service answered the floor on prefix {prefix!r} at {kafka_bootstrap} "
                               "within 3 s (the broker is reachable)"), line
        assert f"`croupier serve --prefix {prefix}`" in line
        assert "cannot reach Kafka" not in err and "against Kafka" not in err
        assert elapsed < 90, elapsed  # the answer's timeout, not the 120 s of every awaited event
    finally:
        await delete_prefix(settings, prefix, refuse_if_running=False)
        (REPO / "var" / f"{prefix}log.jsonl").unlink(missing_ok=True)


async def test_a_prefix_nobody_used_is_bad_input_and_gets_no_topics(kafka_bootstrap: str):
    settings = _settings(kafka_bootstrap, "none")
    prefix = settings.topic_prefix
    code, out, err = await croupier("demo", "--no-services", "--prefix", prefix, "--bootstrap", kafka_bootstrap)
    assert code == 2, (out[-2000:], err)
    line = err.strip()
    assert line.startswith(f"error: no Croupier topics under prefix {prefix!r} at {kafka_bootstrap}: no service "
                           f"has run on it; start them with `croupier serve --prefix {prefix}`"), line
    assert await list_topics(settings, prefix) == []  # the floor created nothing under a mistyped prefix
    assert not (REPO / "var" / f"{prefix}log.jsonl").exists()
