"""A throw-away two-broker Kafka cluster for tests that need partitions led by different brokers.

Node 1 is broker and KRaft controller, node 2 a broker only; both run the jars that ``infra/kafka/kafka.sh``
fetched (``infra/kafka/libs``, so ``kafka.sh start`` must have run once, as ``.ci/run`` does), on free
loopback ports, in a directory of their own (the main broker is never touched). Used where one broker
cannot show a fault: records of two topics come in one fetch from one broker, so a consumer never reads
one topic's later record before the other's earlier one; with each partition led by its own broker, and
that broker paused (SIGSTOP), it does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient

from bench.serveprocs import free_port

REPO = Path(__file__).resolve().parents[2]
LIBS = REPO / "infra" / "kafka" / "libs"
LOG4J = REPO / "infra" / "kafka" / "log4j2.properties"
READY_LINE = "Kafka Server started"

_COMMON = """\
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
auto.create.topics.enable=false
default.replication.factor=1
min.insync.replicas=1
offsets.topic.num.partitions=2
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=2
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=1
num.io.threads=2
"""


@dataclass
class TwoBrokers:
    """A running two-broker cluster: node id → client port, the processes, their directory."""

    root: Path
    ports: dict[int, int]
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in sorted(self.ports))

    def pause(self, node: int) -> None:
        """SIGSTOP broker ``node``: it holds its connections and answers nothing (a GC or VM stall)."""
        os.kill(self.procs[node].pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        os.kill(self.procs[node].pid, signal.SIGCONT)

    def stop(self) -> None:
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGCONT)
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


def _java() -> list[str]:
    return ["java", "-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={LOG4J}"]


def start_two_brokers(root: Path, timeout: float = 120.0) -> TwoBrokers:
    """Format and start the two nodes under ``root``; returns once both are up and the controller knows
    both (raises ``RuntimeError`` with the tail of the server log otherwise, the nodes stopped)."""
    if not any(LIBS.glob("kafka_2.13-*.jar")):
        raise RuntimeError(f"no broker jars in {LIBS}: run infra/kafka/kafka.sh start (or fetch) once")
    controller = free_port()
    ports = {1: free_port(), 2: free_port()}
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    cluster = TwoBrokers(root, ports)
    for node in (1, 2):
        d = root / f"node{node}"
        (d / "logs").mkdir(parents=True, exist_ok=True)
        roles = "broker,controller" if node == 1 else "broker"
        listeners = f"PLAINTEXT://127.0.0.1:{ports[node]}" + (
            f",CONTROLLER://127.0.0.1:{controller}" if node == 1 else "")
        (d / "server.properties").write_text(
            f"process.roles={roles}\nnode.id={node}\ncontroller.quorum.voters=1@127.0.0.1:{controller}\n"
            f"listeners={listeners}\nadvertised.listeners=PLAINTEXT://127.0.0.1:{ports[node]}\n"
            f"log.dirs={d / 'data'}\n" + _COMMON)
        env = {**os.environ, "CLASSPATH": f"{LIBS}/*"}
        fmt = subprocess.run([*_java(), f"-Dkafka.logs.dir={d / 'logs'}", "kafka.tools.StorageTool", "format",
                              # "=": an id starting with "-" (1 in 64 of urlsafe ids) is read as an option
                              "-c", str(d / "server.properties"), f"--cluster-id={cluster_id}",
                              "--ignore-formatted"],
                             env=env, capture_output=True, text=True, timeout=120, check=False)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting node {node} failed:\n{fmt.stdout[-2000:]}\n{fmt.stderr[-2000:]}")
    try:
        for node in (1, 2):
            d = root / f"node{node}"
            out = (d / "logs" / "stdout.log").open("wb")
            cluster.procs[node] = subprocess.Popen(
                [*_java(), f"-Dkafka.logs.dir={d / 'logs'}", "kafka.Kafka", str(d / "server.properties")],
                env={**os.environ, "CLASSPATH": f"{LIBS}/*"}, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        for node in (1, 2):
            log = root / f"node{node}" / "logs" / "server.log"
            while not (log.exists() and READY_LINE in log.read_text(errors="replace")):
                if cluster.procs[node].poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no server.log)"
                    raise RuntimeError(f"broker {node} did not start:\n{tail}")
                time.sleep(0.3)
        asyncio.run(_wait_both_known(cluster.bootstrap, deadline))
    except BaseException:
        cluster.stop()
        raise
    return cluster


async def _wait_both_known(bootstrap: str, deadline: float) -> None:
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        known = 0
        try:
            await admin.start()
            known = len((await admin.describe_cluster())["brokers"])
        except Exception:  # noqa: BLE001 - not up yet: asked again below
            known = 0
        finally:
            await admin.close()
        if known == 2:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("the controller does not know both brokers")
        await asyncio.sleep(0.5)
