"""A secured Kafka broker for the ACL and TLS tests: ``infra/kafka/kafka.sh start --secure`` (SASL_SSL) in a data
dir of its own; clients trust its CA, ``<data dir>/tls/ca.pem``.

``CROUPIER_SECURE_KAFKA=<data dir>`` points at a secured broker already running (started with
``KAFKA_DATA_DIR=<data dir> infra/kafka/kafka.sh start --secure``); its ports are read from the rendered
``server.properties`` and ``kafka.sh acl`` adds the ACLs of the test's topic prefix. When the session itself
runs against a secured kafka.sh broker (``KAFKA_SECURITY_PROTOCOL=SASL_*`` and the ``KAFKA_CREDENTIALS_FILE``
that ``kafka.sh start --secure`` prints, as in ``.ci/run``'s second run), that broker's data dir is the
default of ``CROUPIER_SECURE_KAFKA``. Without either,
:func:`start_secured` starts one on two free loopback ports (its own data dir, stopped at the end), with the
ACLs of the prefix applied during start-up, so the main broker that ``.ci/run`` starts is never touched; that
one also has a SASL_PLAINTEXT listener (``KAFKA_CLEAR_PORT``) for the capture test's contrast.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from services.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[2]
KAFKA_SH = REPO / "infra" / "kafka" / "kafka.sh"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SecuredBroker:
    """A running secured broker: where it is, its principals' passwords, one topic prefix with ACLs."""

    data_dir: Path
    port: int
    controller_port: int
    prefix: str
    started_here: bool = False
    #: the broker's SASL_PLAINTEXT listener beside the TLS one (``KAFKA_CLEAR_PORT``), if it has one: the
    #: contrast of the capture test and the TLS cost measurement (bench/tls_cost.py)
    clear_port: int | None = None
    start_seconds: float = 0.0
    env: dict[str, str] = field(default_factory=dict)
    last_stderr: str = ""
    start_log: str = ""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def password(self, principal: str) -> str:
        """The generated password of ``principal`` (``<data dir>/passwords/<principal>``)."""
        return (self.data_dir / "passwords" / principal).read_text().strip()

    def password_file(self, principal: str) -> Path:
        return self.data_dir / "passwords" / principal

    @property
    def cafile(self) -> Path:
        """The broker's CA certificate (``<data dir>/tls/ca.pem``, what ``KAFKA_SSL_CAFILE`` names)."""
        return self.data_dir / "tls" / "ca.pem"

    def settings(self, principal: str, prefix: str | None = None) -> Settings:
        """Settings connecting as ``principal`` under the broker's topic prefix, over SASL_SSL with its CA."""
        base = Settings(bootstrap_servers=self.bootstrap, topic_prefix=self.prefix if prefix is None else prefix,
                        security_protocol="SSL", ssl_cafile=str(self.cafile),
                        partitions=Settings.from_env().partitions)
        return base.as_principal(principal, self.password(principal))

    def clear_settings(self, principal: str) -> Settings:
        """Settings connecting as ``principal`` over SASL_PLAINTEXT to :attr:`clear_port` (no TLS)."""
        assert self.clear_port is not None, "this broker has no SASL_PLAINTEXT listener (KAFKA_CLEAR_PORT)"
        base = Settings(bootstrap_servers=f"127.0.0.1:{self.clear_port}", topic_prefix=self.prefix,
                        partitions=Settings.from_env().partitions)
        return base.as_principal(principal, self.password(principal))

    def kafka_sh(self, *args: str, prefix: str | None = None, timeout: float = 300) -> str:
        env = {**os.environ, **self.env, "CROUPIER_TOPIC_PREFIX": self.prefix if prefix is None else prefix}
        proc = subprocess.run(["bash", str(KAFKA_SH), *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
        self.last_stderr = proc.stderr
        if proc.returncode != 0:
            raise RuntimeError(f"kafka.sh {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc.stdout

    def add_prefix(self, prefix: str) -> "SecuredBroker":
        """ACLs for another topic prefix on the same broker (``kafka.sh acl <prefix>``)."""
        self.kafka_sh("acl", prefix, prefix=prefix)
        return replace(self, prefix=prefix, started_here=False)

    def stop(self) -> None:
        if self.started_here:
            self.kafka_sh("stop")


def _clear_port_of(data_dir: Path) -> int | None:
    props = (data_dir / "server.properties").read_text()
    found = re.findall(r"^advertised\.listeners=.*CLEAR://127\.0\.0\.1:(\d+)", props, re.M)
    return int(found[-1]) if found else None


def _ports_of(data_dir: Path) -> tuple[int, int]:
    props = (data_dir / "server.properties").read_text()
    broker = re.search(r"^advertised\.listeners=SASL_SSL://127\.0\.0\.1:(\d+)", props, re.M)
    ctl = re.search(r"^controller\.quorum\.voters=1@127\.0\.0\.1:(\d+)", props, re.M)
    if not broker or not ctl:
        raise RuntimeError(f"{data_dir}/server.properties is not a secured kafka.sh broker's")
    return int(broker.group(1)), int(ctl.group(1))


def _session_data_dir() -> str:
    """The data dir of the secured kafka.sh broker the whole session runs against, or ""."""
    if not os.environ.get("KAFKA_SECURITY_PROTOCOL", "").strip().upper().startswith("SASL"):  # SASL_SSL
        return ""
    credentials = os.environ.get("KAFKA_CREDENTIALS_FILE", "").strip()
    if not credentials:
        return ""
    data_dir = Path(credentials).resolve().parent
    return str(data_dir) if (data_dir / "server.properties").is_file() else ""


def start_secured(tmp_dir: Path) -> SecuredBroker:
    """The secured broker of ``CROUPIER_SECURE_KAFKA``, or a fresh one in ``tmp_dir`` (see the module)."""
    prefix = f"acl{uuid.uuid4().hex[:8]}."
    given = os.environ.get("CROUPIER_SECURE_KAFKA", "").strip() or _session_data_dir()
    if given:
        data_dir = Path(given).resolve()
        port, ctl = _ports_of(data_dir)
        env = {"KAFKA_DATA_DIR": str(data_dir), "KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(ctl)}
        broker = SecuredBroker(data_dir, port, ctl, prefix, env=env, clear_port=_clear_port_of(data_dir))
        broker.kafka_sh("acl", prefix)
        return broker
    data_dir = tmp_dir / "secured-kafka"
    port, ctl, clear = _free_port(), _free_port(), _free_port()
    while len({port, ctl, clear}) < 3:
        ctl, clear = _free_port(), _free_port()
    env = {"KAFKA_DATA_DIR": str(data_dir), "KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(ctl),
           "KAFKA_CLEAR_PORT": str(clear), "KAFKA_HEAP_OPTS": "-Xms128m -Xmx512m"}
    broker = SecuredBroker(data_dir, port, ctl, prefix, started_here=True, env=env, clear_port=clear)
    t0 = time.monotonic()
    try:
        broker.kafka_sh("start", "--secure")
    except BaseException:
        broker.kafka_sh("stop")
        raise
    broker.start_seconds = time.monotonic() - t0
    broker.start_log = broker.last_stderr
    return broker
