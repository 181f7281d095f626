"""Every line the services and the query API write is a JSON object (issue 11): ``croupier serve`` (the five
services and the API) runs against the real broker in a subprocess, a small floor (``croupier demo
--no-services``: one table, one shoe) deals through it and the API is asked; then every line of its stderr
and stdout is parsed as JSON, aiokafka's, FastStream's and uvicorn's included, and a normal start and run
write no warning."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from rich.console import Console

import services
from contracts import topics as T
from contracts.vault import add_key
from croupier.demo import run_demo
from tests.system.conftest import broker_settings, delete_topics

INSTANCE = "logs-json-1"
CAGE_TOKEN = "cage-" + "x" * 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _parse(text: str) -> tuple[list[dict], list[str]]:
    """The JSON objects of ``text``, one a line, and the lines that are not one."""
    parsed, raw = [], []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            raw.append(line)
            continue
        (parsed if isinstance(obj, dict) else raw).append(obj if isinstance(obj, dict) else line)
    return parsed, raw


def _start_serve(args: list[str], env: dict[str, str], out_path: Path, err_path: Path) -> subprocess.Popen[bytes]:
    """``croupier serve ARGS`` in a subprocess, stdout and stderr to files."""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        return subprocess.Popen([sys.executable, "-m", "croupier.cli", "serve", *args], env=env, stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL)


async def _wait_for(path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while needle not in path.read_text(encoding="utf-8", errors="replace"):
        assert proc.poll() is None, f"croupier serve exited {proc.returncode}:\n{path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {needle} after {timeout} s:\n{path.read_text()[-3000:]}"
        await asyncio.sleep(0.2)


async def test_every_line_of_the_services_and_the_api_is_json(kafka_bootstrap: str, tmp_path: Path):
    prefix = f"logs{uuid.uuid4().hex[:8]}."
    keys = tmp_path / "vault.keys"
    add_key(keys, "k1")
    port = _free_port()
    # a session of 20 s, not 6: this test is about the lines a normal run writes, and two loaded CI runs (load
    # 15-25) stalled the one process of six services past 6 s, so every group expired at once and aiokafka
    # warned; fail-over within the 6 s session is the chaos and hand-over tests' to prove
    env = dict(os.environ, CROUPIER_SESSION_TIMEOUT_MS="20000", KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
               CROUPIER_INSTANCE=INSTANCE,
               CROUPIER_VAULT_KEY_FILE=str(keys), CROUPIER_API_TOKEN_CAGE=CAGE_TOKEN)
    env.pop("CROUPIER_VAULT_KEYS", None)
    err_path, out_path = tmp_path / "serve.err", tmp_path / "serve.out"
    ready = tmp_path / "ready"
    ready.write_text("left by an earlier run")
    proc = _start_serve(["--prefix", prefix, "--api-port", str(port), "--ready-file", str(ready)], env,
                        out_path, err_path)
    settings = broker_settings(kafka_bootstrap, topic_prefix=prefix)
    try:
        await _wait_for(err_path, '"api_started"', proc, 180)
        for _ in range(300):  # the health check's file: once every service has restored its tasks
            if ready.exists():
                break
            await asyncio.sleep(0.2)
        assert ready.exists() and ready.read_text() == ""
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as api:
            for _ in range(300):
                if (await api.get("/health/ready")).status_code == 200:
                    break
                await asyncio.sleep(0.2)
            buf = io.StringIO()
            code = await run_demo(tables=1, shoes=1, speed=0, bootstrap=kafka_bootstrap,
                                  console=Console(file=buf, width=200, force_terminal=False), seed=3,
                                  prefix=prefix, with_services=False, rounds=8)
            shown = buf.getvalue()
            assert code == 0, shown[-3000:]
            await asyncio.sleep(1.0)  # the projection folds the last settlements
            assert (await api.get("/tables/BAC-01")).status_code == 200
            ledger = await api.get("/tables/BAC-01/ledger", headers={"Authorization": f"Bearer {CAGE_TOKEN}"})
            assert ledger.status_code == 200, ledger.text
            assert (await api.get("/tables/NO-SUCH-TABLE")).status_code == 404
            assert (await api.get("/alerts")).status_code == 401
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        topics = [settings.topic(t) for t in (*T.ALL_TOPICS, *(f"{n}.snapshots" for n in services.NAMES))]
        with contextlib.suppress(Exception):  # best effort: the prefix is unique
            await delete_topics(kafka_bootstrap, topics)
    assert rc == 0, err_path.read_text()[-3000:]
    assert not ready.exists()  # stopped: not healthy

    # the demo's floor sent its commands to services it did not start: their logs are not its to name, and
    # the file it names (what the floor's own Kafka clients logged) is never an empty one
    log_file = Path(__file__).resolve().parents[2] / "var" / f"{prefix}log.jsonl"
    assert "Service logs" not in shown
    assert ("Floor client logs (JSON lines): " in shown) == log_file.exists()
    if log_file.exists():
        floor_lines, floor_raw = _parse(log_file.read_text(encoding="utf-8"))
        assert floor_raw == [] and floor_lines, log_file
        log_file.unlink()

    lines, raw = _parse(err_path.read_text(encoding="utf-8") + out_path.read_text(encoding="utf-8"))
    assert raw == [], "lines that are not JSON:\n" + "\n".join(raw[:20])
    assert len(lines) > 50
    for line in lines:
        assert {"event", "level", "timestamp"} <= line.keys(), line
        assert line["instance"] == INSTANCE, line
        assert line.get("service") in (*services.NAMES, "serve", "api"), line
    problems = [line for line in lines if line["level"] not in ("debug", "info")]
    assert problems == [], "a normal start and run logged warnings or errors:\n" + "\n".join(map(str, problems[:20]))
    started = {line["name"] for line in lines if line["event"] == "service_started"}
    assert started == set(services.NAMES)
    assert any(line["event"] == "api_started" and line["url"] == f"http://127.0.0.1:{port}/docs" for line in lines)
    # what a service decided names the table and the round (the projection's odds are debug lines)
    dealt = [line for line in lines if line["event"] == "event" and line.get("type") == "card_dealt"]
    assert dealt and all(line["table_id"] == "BAC-01" and re.fullmatch(r"BAC-01-[0-9a-f]+-shoe-1-round-\d+", line["round_id"])
                         and line["service"] == "dealing" for line in dealt)
    settled = {line["round_id"] for line in lines if line.get("type") == "round_settled"}
    assert len(settled) == 8  # the demo's shoe, closed after 8 rounds (--rounds)
    # the services' own last line (client lines held for their count may be written after it, at exit)
    assert [line for line in lines if "logger" not in line][-1]["event"] == "stopped"
