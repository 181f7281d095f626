"""Service settings from the environment (the edge: nothing below reads os.environ)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the broker is and how topics and groups are named.

    ``topic_prefix`` is prepended to every topic name (tests use a unique prefix per run, production none);
    ``group_prefix`` likewise for consumer groups and transactional ids.
    """

    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    topic_prefix: str = ""
    group_prefix: str = "croupier"
    instance: str = "0"
    #: partitions of every topic (a topic created by a service gets this many; all must be equal)
    partitions: int = 12
    #: a task writes a checkpoint (snapshots of its changed tables) at most this often ...
    snapshot_interval_s: float = 5.0
    #: ... or after this many handled records, whichever comes first
    snapshot_every_records: int = 2000
    #: a command whose ``issued_at`` is further than this from the broker's append time is refused
    #: ``clock_skew`` (0: no check)
    max_clock_skew_s: float = 120.0
    #: aiokafka security options: security_protocol, sasl_mechanism, sasl_plain_username, sasl_plain_password
    security: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "Settings":
        """``KAFKA_BOOTSTRAP_SERVERS``, ``CROUPIER_TOPIC_PREFIX``, ``CROUPIER_GROUP_PREFIX``,
        ``CROUPIER_INSTANCE``."""
        return cls(
            bootstrap_servers=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
            topic_prefix=os.environ.get("CROUPIER_TOPIC_PREFIX", ""),
            group_prefix=os.environ.get("CROUPIER_GROUP_PREFIX", "croupier"),
            instance=os.environ.get("CROUPIER_INSTANCE", "0"),
            partitions=_int_env("CROUPIER_PARTITIONS", 12, low=1),
            snapshot_interval_s=float(os.environ.get("CROUPIER_SNAPSHOT_INTERVAL_S", "5")),
            snapshot_every_records=_int_env("CROUPIER_SNAPSHOT_EVERY_RECORDS", 2000, low=1),
            max_clock_skew_s=float(os.environ.get("CROUPIER_MAX_CLOCK_SKEW_S", "120")),
            security=_security_from_env(),
        )

    def client_options(self) -> dict[str, object]:
        """Keyword arguments for every aiokafka client: the bootstrap servers and the security options."""
        return {"bootstrap_servers": self.bootstrap_servers, **self.security}

    def topic(self, name: str) -> str:
        """The full topic name for a base name from :mod:`contracts.topics`."""
        return f"{self.topic_prefix}{name}"

    def base(self, topic: str) -> str:
        """The base name of a full topic name."""
        return topic[len(self.topic_prefix):] if topic.startswith(self.topic_prefix) else topic

    def group(self, service: str) -> str:
        """Consumer group of a service."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}"

    def transactional_id(self, service: str) -> str:  # pragma: no cover - superseded by per-task ids
        """Transactional id of a service instance (a restarted instance fences its zombie)."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}.{self.instance}"


def _int_env(name: str, default: int, *, low: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < low:
        raise ValueError(f"{name}={raw!r} must be at least {low}")
    return value


def _security_from_env() -> dict[str, str]:
    """``KAFKA_SECURITY_PROTOCOL`` (e.g. ``SASL_PLAINTEXT``), ``KAFKA_SASL_MECHANISM`` (default
    ``SCRAM-SHA-512``), ``KAFKA_SASL_USERNAME`` and ``KAFKA_SASL_PASSWORD`` or ``KAFKA_SASL_PASSWORD_FILE``
    (the password never needs to be on a command line). Empty when no protocol is set (plain mode)."""
    proto = os.environ.get("KAFKA_SECURITY_PROTOCOL", "").strip()
    if not proto or proto == "PLAINTEXT":
        return {}
    out = {"security_protocol": proto}
    if proto.startswith("SASL"):
        password = os.environ.get("KAFKA_SASL_PASSWORD", "")
        pfile = os.environ.get("KAFKA_SASL_PASSWORD_FILE", "")
        if pfile:
            with open(pfile, encoding="utf-8") as f:
                password = f.read().strip()
        out.update(sasl_mechanism=os.environ.get("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512"),
                   sasl_plain_username=os.environ.get("KAFKA_SASL_USERNAME", ""),
                   sasl_plain_password=password)
    return out
