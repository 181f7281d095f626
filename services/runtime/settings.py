"""Service settings from the environment (the edge: nothing below reads os.environ)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"

#: security protocols a client here can speak (no TLS context is configured, so no SSL / SASL_SSL)
PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT")
#: SASL mechanisms accepted (the secured broker of infra/kafka/kafka.sh offers SCRAM-SHA-512)
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")


class SecuritySettingsError(ValueError):
    """The Kafka security settings in the environment are incomplete or contradictory (the message names
    the variable)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the broker is and how topics and groups are named.

    ``topic_prefix`` is prepended to every topic name (tests use a unique prefix per run, production none);
    ``group_prefix`` likewise for consumer groups and transactional ids.

    Security (the broker of ``infra/kafka/kafka.sh start --secure``): ``security_protocol`` is
    ``PLAINTEXT`` (default, no identity) or ``SASL_PLAINTEXT``; then ``sasl_mechanism`` (``SCRAM-SHA-512``),
    ``sasl_username`` (the principal, e.g. ``shoe`` or ``console``) and ``sasl_password`` are required. The
    password is never shown by ``repr``. Every Kafka client takes its connection options from
    :meth:`client_options` (aiokafka) or :meth:`faststream_security` (FastStream).
    """

    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    topic_prefix: str = ""
    group_prefix: str = "croupier"
    #: this process's label in logs (``CROUPIER_INSTANCE``; default the host name, which differs per container
    #: replica); in no id, so two instances that share it still work
    instance: str = field(default_factory=lambda: socket.gethostname())
    #: partitions of every topic (a topic created by a service gets this many; all must be equal)
    partitions: int = 12
    #: a task writes a checkpoint (snapshots of its changed tables) at most this often ...
    snapshot_interval_s: float = 5.0
    #: ... or after this many handled records, whichever comes first
    snapshot_every_records: int = 2000
    #: a command whose ``issued_at`` is further than this from the broker's append time is refused
    #: ``clock_skew`` (0: no check)
    max_clock_skew_s: float = 120.0
    extra: dict[str, str] = field(default_factory=dict)
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.security_protocol not in PROTOCOLS:
            raise SecuritySettingsError(
                f"KAFKA_SECURITY_PROTOCOL={self.security_protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if self.security_protocol == "SASL_PLAINTEXT":
            if self.sasl_mechanism not in MECHANISMS:
                raise SecuritySettingsError(
                    f"KAFKA_SASL_MECHANISM={self.sasl_mechanism!r}: SASL_PLAINTEXT needs one of "
                    f"{', '.join(MECHANISMS)}")
            if not self.sasl_username:
                raise SecuritySettingsError("SASL_PLAINTEXT needs KAFKA_SASL_USERNAME (the principal)")
            if not self.sasl_password:
                raise SecuritySettingsError(
                    f"SASL_PLAINTEXT needs a password for {self.sasl_username!r}: set KAFKA_SASL_PASSWORD_FILE "
                    "(or KAFKA_SASL_PASSWORD)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """``KAFKA_BOOTSTRAP_SERVERS``, ``CROUPIER_TOPIC_PREFIX``, ``CROUPIER_GROUP_PREFIX``,
        ``CROUPIER_INSTANCE`` (default: the host name); security: ``KAFKA_SECURITY_PROTOCOL`` (default ``PLAINTEXT``),
        ``KAFKA_SASL_MECHANISM`` (default ``SCRAM-SHA-512`` when the protocol is SASL), ``KAFKA_SASL_USERNAME``
        and the password from ``KAFKA_SASL_PASSWORD_FILE`` (a file holding it, e.g.
        ``var/kafka/passwords/shoe``; trailing newline ignored) or ``KAFKA_SASL_PASSWORD``, not both.

        Raises :class:`SecuritySettingsError` for an unknown protocol or mechanism, a missing user name or
        password, both password variables, or an unreadable password file.
        """
        env = os.environ if environ is None else environ
        protocol = env.get("KAFKA_SECURITY_PROTOCOL", "").strip().upper() or "PLAINTEXT"
        sasl = protocol.startswith("SASL")
        mechanism = env.get("KAFKA_SASL_MECHANISM", "").strip().upper() or ("SCRAM-SHA-512" if sasl else None)
        return cls(
            bootstrap_servers=env.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
            topic_prefix=env.get("CROUPIER_TOPIC_PREFIX", ""),
            group_prefix=env.get("CROUPIER_GROUP_PREFIX", "croupier"),
            instance=env.get("CROUPIER_INSTANCE") or socket.gethostname(),
            partitions=_int_env(env, "CROUPIER_PARTITIONS", 12, low=1),
            snapshot_interval_s=float(env.get("CROUPIER_SNAPSHOT_INTERVAL_S", "5")),
            snapshot_every_records=_int_env(env, "CROUPIER_SNAPSHOT_EVERY_RECORDS", 2000, low=1),
            max_clock_skew_s=float(env.get("CROUPIER_MAX_CLOCK_SKEW_S", "120")),
            security_protocol=protocol,
            sasl_mechanism=mechanism if sasl else None,
            sasl_username=(env.get("KAFKA_SASL_USERNAME") or None) if sasl else None,
            sasl_password=_password(env) if sasl else None,
        )

    @property
    def secured(self) -> bool:
        """True when clients authenticate (SASL)."""
        return self.security_protocol != "PLAINTEXT"

    def as_principal(self, username: str, password: str, mechanism: str = "SCRAM-SHA-512") -> "Settings":
        """The same settings, connecting as another principal over ``SASL_PLAINTEXT`` (tests, tools)."""
        return replace(self, security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                       sasl_username=username, sasl_password=password)

    def bootstrap_hosts(self) -> list[str]:
        """``bootstrap_servers`` (``host:port`` items separated by commas, as ``KAFKA_BOOTSTRAP_SERVERS``
        names a cluster) as a list: what ``faststream.kafka.KafkaBroker`` needs, since it wraps a string in
        a list of one item, which aiokafka then reads as one host (``"a:9092,b"`` port 9092...), and no
        service of a several-broker cluster could start. Raises ``ValueError`` when it names no host."""
        hosts = [h.strip() for h in self.bootstrap_servers.split(",") if h.strip()]
        if not hosts:
            raise ValueError(f"no broker in bootstrap_servers={self.bootstrap_servers!r}")
        return hosts

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for every aiokafka client (``AIOKafkaProducer``, ``AIOKafkaConsumer``,
        ``AIOKafkaAdminClient``): ``bootstrap_servers`` and, when secured, ``security_protocol``,
        ``sasl_mechanism``, ``sasl_plain_username`` and ``sasl_plain_password``.

        Use as ``AIOKafkaProducer(**settings.client_options(), linger_ms=0)``.
        """
        options: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers}
        if self.secured:
            options.update(security_protocol=self.security_protocol, sasl_mechanism=self.sasl_mechanism,
                           sasl_plain_username=self.sasl_username, sasl_plain_password=self.sasl_password)
        return options

    def faststream_security(self) -> Any:
        """The ``security=`` object for ``faststream.kafka.KafkaBroker`` (None when not secured): a
        ``SASLScram512`` / ``SASLScram256`` / ``SASLPlaintext`` without TLS."""
        if not self.secured:
            return None
        from faststream.security import SASLPlaintext, SASLScram256, SASLScram512

        kind = {"SCRAM-SHA-512": SASLScram512, "SCRAM-SHA-256": SASLScram256, "PLAIN": SASLPlaintext}
        return kind[self.sasl_mechanism or ""](username=self.sasl_username or "", password=self.sasl_password or "",
                                               use_ssl=False)

    def topic(self, name: str) -> str:
        """The full topic name for a base name from :mod:`contracts.topics`."""
        return f"{self.topic_prefix}{name}"

    def base(self, topic: str) -> str:
        """The base name of a full topic name."""
        return topic[len(self.topic_prefix):] if topic.startswith(self.topic_prefix) else topic

    def group(self, service: str) -> str:
        """Consumer group of a service."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}"

    def transactional_id(self, service: str) -> str:
        """A transactional id under ``service``'s name (tools and tests; the ACLs grant ``<group prefix>.<topic
        prefix><service>*``). The services themselves write through one id per task, derived from the service
        and the partition, never the instance: :meth:`services.runtime.tasks.Tasks.transactional_id`."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}.{self.instance}"


def _int_env(env: Mapping[str, str], name: str, default: int, *, low: int) -> int:
    """A whole number from the environment (``default`` when unset); raises ``ValueError`` naming it."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < low:
        raise ValueError(f"{name}={raw!r} must be at least {low}")
    return value


def _password(env: Mapping[str, str]) -> str | None:
    """The SASL password from ``KAFKA_SASL_PASSWORD_FILE`` or ``KAFKA_SASL_PASSWORD`` (not both)."""
    path, value = env.get("KAFKA_SASL_PASSWORD_FILE", ""), env.get("KAFKA_SASL_PASSWORD", "")
    if path and value:
        raise SecuritySettingsError("set KAFKA_SASL_PASSWORD_FILE or KAFKA_SASL_PASSWORD, not both")
    if not path:
        return value or None
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n") or None
    except OSError as exc:
        raise SecuritySettingsError(f"KAFKA_SASL_PASSWORD_FILE={path}: {exc.strerror or exc}") from exc
