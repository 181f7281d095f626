"""Kafka brokers a run starts for itself with the project's own script (``infra/kafka/kafka.sh``): one node, or
a KRaft cluster of N combined broker+controller nodes on 127.0.0.1 (``kafka.sh start --brokers N``), on ports
and a data directory of the run's own, so the shared broker is never touched.

Node *i* (1-based) listens on ``port + 2*(i-1)``, its controller on ``port + 1 + 2*(i-1)`` (``kafka.sh``'s
``KAFKA_PORT_STEP`` 2); a single node on ``port`` and ``port + 1``. Used by ``bench/chaos.py`` (``--own-broker``,
``--brokers``) and the three-broker system test, which kill nodes with ``kill -9`` and restart them one at a
time.

Which node is the active controller is read from the nodes' own logs (the KRaft ``RaftManager``'s
"Completed transition to ..." lines: the highest epoch that names a leader), since Kafka's client API does not
say (a KRaft cluster answers DescribeCluster with a random broker as "controller").
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAFKA_SH = REPO / "infra" / "kafka" / "kafka.sh"

_TRANSITION = re.compile(r"\[RaftManager id=(\d+)\] Completed transition to (\w+)\((.*)")
_EPOCH = re.compile(r"\bepoch=(\d+)")
_LEADER = re.compile(r"\bleader=(\d+)")


class OwnKafka:
    """``brokers`` nodes of ``kafka.sh`` in ``data_dir`` from ``port`` (see the module docstring).

    Every method that runs ``kafka.sh`` raises ``RuntimeError`` with the end of its output when it fails.
    :meth:`kill9` signals only the pid in the node's own pid file (the process this run started)."""

    def __init__(self, port: int, data_dir: Path, brokers: int = 1, start_timeout_s: int | None = None):
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        self.port = port
        self.brokers = brokers
        self.data_dir = data_dir
        self.env = dict(os.environ, KAFKA_DATA_DIR=str(data_dir), KAFKA_PORT=str(port),
                        KAFKA_CONTROLLER_PORT=str(port + 1), KAFKA_PORT_STEP="2", KAFKA_BROKERS=str(brokers))
        for k in ("KAFKA_SECURE", "KAFKA_CLEAR_PORT"):
            self.env.pop(k, None)
        if start_timeout_s is not None:
            self.env["KAFKA_START_TIMEOUT"] = str(start_timeout_s)

    @property
    def bootstrap(self) -> str:
        """``host:port`` of every node, comma-separated."""
        return ",".join(f"127.0.0.1:{self.node_port(i)}" for i in range(1, self.brokers + 1))

    def node_port(self, node: int) -> int:
        """The client port of node ``node`` (1-based)."""
        return self.port + 2 * (node - 1)

    def node_dir(self, node: int) -> Path:
        """Where node ``node`` keeps its data, logs and pid file."""
        return self.data_dir if self.brokers == 1 else self.data_dir / f"node-{node}"

    def _sh(self, *args: str, timeout: float = 1200) -> str:
        out = subprocess.run(["bash", str(KAFKA_SH), *args], env=self.env, capture_output=True, text=True,
                             timeout=timeout, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"kafka.sh {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()[-1500:]}")
        return out.stdout

    def start(self) -> None:
        """Start every node not running (a cluster's nodes together) and wait until all are ready."""
        self._sh("start")

    def fresh_start(self) -> None:
        """Delete the data dir (``kafka.sh reset``: stops nodes left running there), then :meth:`start`: a
        killed broker recovers every partition it holds before it serves, so an earlier run's topics slow it."""
        self._sh("reset")
        self.start()

    def start_node(self, node: int) -> None:
        """Start node ``node`` (of a cluster whose other nodes run) and wait until it is ready."""
        self._sh("start", *self._node_args(node))

    def stop(self) -> None:
        """Stop every node (SIGTERM, SIGKILL after ``kafka.sh``'s timeout); never raises."""
        try:
            self._sh("stop", timeout=200)
        except (RuntimeError, subprocess.TimeoutExpired):
            pass

    def _node_args(self, node: int) -> list[str]:
        if not 1 <= node <= self.brokers:
            raise ValueError(f"node must be 1..{self.brokers}, got {node}")
        return ["--node", str(node)] if self.brokers > 1 else []

    def pid(self, node: int = 1) -> int | None:
        """The pid in node ``node``'s pid file, or None."""
        try:
            return int((self.node_dir(node) / "kafka.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def kill9(self, node: int = 1) -> None:
        """``kill -9`` node ``node`` (its pid from its own pid file; nothing when it is not running)."""
        pid = self.pid(node)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def active_controller(self) -> int | None:
        """The node id of the active KRaft controller as the nodes' current logs last saw it, or None."""
        best: tuple[int, int] | None = None
        for node in range(1, self.brokers + 1):
            try:
                text = (self.node_dir(node) / "logs" / "server.log").read_text(errors="replace")
            except OSError:
                continue
            for m in _TRANSITION.finditer(text):
                local, state, rest = int(m.group(1)), m.group(2), m.group(3)
                epoch = _EPOCH.search(rest)
                if epoch is None:
                    continue
                if state.startswith("Leader"):
                    leader = local
                elif state.startswith("Follower") and (lm := _LEADER.search(rest)):
                    leader = int(lm.group(1))
                else:
                    continue
                if best is None or int(epoch.group(1)) >= best[0]:
                    best = (int(epoch.group(1)), leader)
        return best[1] if best else None


__all__ = ["KAFKA_SH", "OwnKafka"]
