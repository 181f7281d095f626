"""Readiness tells the truth: with a broker of the test's own (``infra/kafka/kafka.sh`` in a data dir of its
own, on ports of its own, so the session's broker is never touched), a ``croupier serve`` process and its
query API are ready; they say they are not while that broker is stopped, and are ready again once it is
back (and the service works again); liveness says the process works throughout."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import encode
from contracts.commands import OpenTable
from croupier.serve import serve
from services.rawlog import read_topic
from services.runtime.core import command
from services.runtime.settings import Settings
from services.runtime.translate import table_spec

REPO = Path(__file__).resolve().parents[2]
KAFKA_SH = REPO / "infra" / "kafka" / "kafka.sh"
TOKENS = {"analyst": "analyst-token-0123456789"}


def _any_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnBroker:
    """A plain single-node broker of ``kafka.sh`` in ``data_dir``, started and stopped by the test."""

    def __init__(self, data_dir: Path):
        # ports the system picks: two tests of CI's parallel workers each start one (a fixed 29092 was taken
        # by both, and one's stop stopped the other's broker)
        port, ctl = _any_port(), _any_port()
        while ctl == port:
            ctl = _any_port()
        self.port, self.controller_port = port, ctl
        self.env = {**os.environ, "KAFKA_DATA_DIR": str(data_dir), "KAFKA_PORT": str(port),
                    "KAFKA_CONTROLLER_PORT": str(ctl), "KAFKA_SECURE": "0",
                    "KAFKA_HEAP_OPTS": "-Xms128m -Xmx512m", "KAFKA_STOP_TIMEOUT": "60",
                    # a JVM started beside three busy workers on two cores took over kafka.sh's 90 s to be ready
                    "KAFKA_START_TIMEOUT": os.environ.get("KAFKA_START_TIMEOUT", "240")}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def sh(self, *args: str) -> None:
        """Run ``kafka.sh`` (blocking; raises with its output when it fails)."""
        proc = subprocess.run(["bash", str(KAFKA_SH), *args], env=self.env, capture_output=True, text=True, check=False,
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[OwnBroker]:
    broker = OwnBroker(tmp_path / "kafka")
    try:
        broker.sh("start")
        yield broker
    finally:
        broker.sh("stop")


async def _get(client: httpx.AsyncClient, url: str) -> tuple[int, Any]:
    try:
        r = await client.get(url)
    except httpx.TransportError as e:
        return 0, str(e)
    return r.status_code, r.json() if r.headers.get("content-type", "").startswith("application/json") else r.text


async def _until(client: httpx.AsyncClient, url: str, status: int, timeout: float = 180.0) -> Any:
    """Poll ``url`` until it answers ``status``; its body."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        code, body = await _get(client, url)
        if code == status:
            return body
        last = (code, body)
        await asyncio.sleep(0.25)
    raise AssertionError(f"{url} never answered {status} (last: {last!r})")


def _gauge(text: str, name: str, **labels: str) -> float | None:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


async def test_readiness_follows_the_broker_down_and_back(own_broker: OwnBroker):
    settings = Settings(bootstrap_servers=own_broker.bootstrap, topic_prefix=f"oh{uuid.uuid4().hex[:8]}.",
                        partitions=2)
    metrics_port, api_port = _any_port(), _any_port()
    ops, api = f"http://127.0.0.1:{metrics_port}", f"http://127.0.0.1:{api_port}"
    stop = asyncio.Event()
    run = asyncio.create_task(serve(["dealing", "projection"], settings, stop, api_port=api_port, tokens=TOKENS,
                                    metrics_port=metrics_port))
    async with httpx.AsyncClient(timeout=10) as client:
        try:
            up = await _until(client, f"{ops}/health/ready", 200)
            assert up["broker_reachable"] is True
            assert {n: (s["assigned"], s["restored"], s["tasks"]) for n, s in up["services"].items()} == {
                "dealing": (True, True, {"ready": 2}), "projection": (True, True, {"ready": 2})}
            api_up = await _until(client, f"{api}/health/ready", 200)
            assert api_up["ready"] is True and set(api_up["services"]) == {"projection"}

            await asyncio.to_thread(own_broker.sh, "stop")
            down = await _until(client, f"{ops}/health/ready", 503)
            assert down["ready"] is False and down["broker_reachable"] is False and down["broker_error"]
            api_down = await _until(client, f"{api}/health/ready", 503)
            assert api_down["broker_reachable"] is False
            # the process works: live, and cheap answers, with the broker away
            assert await _get(client, f"{ops}/health/live") == (200, {"live": True,
                                                                      "services": ["dealing", "projection"]})
            assert await _get(client, f"{api}/health/live") == (200, {"live": True})
            assert (await _get(client, f"{api}/health"))[1]["status"] == "ok"
            assert _gauge((await client.get(f"{ops}/metrics")).text, "croupier_broker_reachable") == 0

            await asyncio.to_thread(own_broker.sh, "start")
            back = await _until(client, f"{ops}/health/ready", 200)
            assert back["broker_reachable"] is True
            assert all(s["assigned"] and s["restored"] for s in back["services"].values())
            assert (await _until(client, f"{api}/health/ready", 200))["ready"] is True
            assert _gauge((await client.get(f"{ops}/metrics")).text, "croupier_broker_reachable") == 1

            # ready means working: the dealing service opens a table sent to it now
            producer = AIOKafkaProducer(**settings.client_options(), enable_idempotence=True)
            await producer.start()
            try:
                cmd = command("H1", "open-H1", datetime.now(UTC), OpenTable(config=table_spec(punto_banco_full())))
                await producer.send_and_wait(settings.topic(T.DEALING_COMMANDS), encode(cmd), key=T.key("H1"))
            finally:
                await producer.stop()

            async def tables() -> float | None:
                return _gauge((await client.get(f"{ops}/metrics")).text, "croupier_tables", service="dealing")

            # 180 s: a quiet run opens it within a second; one loaded CI run saw no table in 120 s (cause not
            # found): the message says what readiness and the command and event topics showed then
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 180
            while await tables() != 1 and loop.time() < deadline:
                await asyncio.sleep(0.5)
            if await tables() != 1:
                ready_now = await _get(client, f"{ops}/health/ready")
                sent = await read_topic(settings, settings.topic(T.DEALING_COMMANDS))
                events = await read_topic(settings, settings.topic(T.DEALING_EVENTS))
                raise AssertionError(f"no table opened in 180 s; readiness now {ready_now!r}; "
                                     f"{len(sent)} record(s) on {T.DEALING_COMMANDS}, {len(events)} committed on "
                                     f"{T.DEALING_EVENTS}")
        finally:
            stop.set()
            await run
