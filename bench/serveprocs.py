"""``croupier serve`` processes for the benches: start one in its own session, wait until it is ready, stop
them all (SIGTERM to each session, SIGKILL after 20 s). Used by ``bench/pit_latency.py`` and by
``bench/pipeline.py --processes``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
CROUPIER = str(REPO / ".venv" / "bin" / "croupier")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``croupier serve ARGS`` in its own session, its output to ``log``."""
    out = log.open("wb")
    return subprocess.Popen([CROUPIER, "serve", *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)


async def wait_ready(url: str, procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    """Until ``url`` (``/health/ready``) answers 200; RuntimeError if a process exits or time runs out."""
    t0 = time.monotonic()
    async with httpx.AsyncClient() as client:
        while time.monotonic() - t0 < timeout:
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError(f"croupier serve exited with {p.returncode} while starting")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url, timeout=2.0)).status_code == 200:
                    return
            await asyncio.sleep(0.25)
    raise RuntimeError(f"{url} not ready after {timeout:.0f} s")


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)
