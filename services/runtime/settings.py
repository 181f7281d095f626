"""Service settings from the environment (the edge: nothing below reads os.environ)."""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from services.runtime.tls import TLS_PROTOCOLS, CaFileError, check_broker_tls, client_context, tls_problem

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"

#: ms a consumer's fetch may wait at the broker for data (aiokafka's ``fetch_max_wait_ms``; its default is 500).
#: aiokafka sends one fetch at a time to a broker and leaves out of it every partition whose records the
#: application has not taken yet; a record that arrives on such a partition meanwhile waits for that fetch to
#: come back, so each hop of a round (command -> event -> next command) paid up to this wait. At 500 ms a round
#: took seconds (``bench/pipeline.py``, 6 tables, loaded machine: "No more bets" -> settled p50 3,063 ms; at 50 ms,
#: 546 ms); an idle consumer pays for it with 20 fetches a second.
FETCH_MAX_WAIT_MS = 50

#: security protocols a client here can speak (``SSL`` / ``SASL_SSL``: inside TLS, :mod:`services.runtime.tls`)
PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
#: SASL mechanisms accepted (the secured broker of infra/kafka/kafka.sh offers SCRAM-SHA-512)
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
#: the processing guarantees (:attr:`Settings.processing_guarantee`)
GUARANTEES = ("exactly_once", "exactly_once_v2")


class SecuritySettingsError(ValueError):
    """The Kafka security settings in the environment are incomplete or contradictory (the message names
    the variable)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the broker is and how topics and groups are named.

    ``topic_prefix`` is prepended to every topic name (tests use a unique prefix per run, production none);
    ``group_prefix`` likewise for consumer groups and transactional ids.

    Security (the broker of ``infra/kafka/kafka.sh start --secure``): ``security_protocol`` is
    ``PLAINTEXT`` (default, no identity), ``SASL_PLAINTEXT``, ``SSL`` or ``SASL_SSL`` (kafka.sh's); with SASL,
    ``sasl_mechanism`` (``SCRAM-SHA-512``), ``sasl_username`` (the principal, e.g. ``shoe`` or ``console``) and
    ``sasl_password`` are required; with TLS, ``ssl_cafile`` names the CA (PEM) the broker's certificate must
    chain to (None: the system's CAs), and its host name is always checked. A CA file with a plain-text
    protocol is refused (it would send in clear what its owner meant to encrypt). The password is never shown
    by ``repr``. Every Kafka client takes its connection options from :meth:`client_options` (aiokafka) or
    :meth:`faststream_security` (FastStream).
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
    #: how long a service's group member may be silent before the group hands its tasks on (ms;
    #: ``CROUPIER_SESSION_TIMEOUT_MS``): the broker's minimum, 6,000, by default (``services.runtime.app``); more
    #: only where a starved machine's event loop may stall that long (a loaded CI run: the logs test)
    session_timeout_ms: int = 6_000
    #: a service with a prompt stream (the projection's odds) publishes it in short transactions of its own,
    #: ahead of its batch's (``CROUPIER_PROMPT_STREAMS``, default 1; 0: in the batch's transaction, as before;
    #: :mod:`services.runtime.prompt_lane`)
    prompt_streams: bool = True
    #: how a service's transactions are fenced (``CROUPIER_PROCESSING_GUARANTEE``, Kafka Streams' names):
    #: ``exactly_once_v2`` (default), one producer for the instance, fenced by the consumer group's
    #: generation (KIP-447, :mod:`services.runtime.kip447`), its tasks' outcomes in one transaction
    #: (:mod:`services.runtime.group_commit`); ``exactly_once``, a transactional producer per task, fenced by
    #: its id (the next owner's ``init_transactions``). The default because v2 writes a third of the
    #: transactions per round, and on three brokers, where the brokers are the bottleneck, ran faster in two of
    #: three alternated pairs (median 7.9 rounds/s against 5.8: ``bench/pipeline.py``, issue 25); on one broker
    #: its paced round's p99 was longer (a task's outcome waits for the instance's
    #: transaction in flight: ``CROUPIER_INSTANCE_PRODUCERS`` trades transactions for that wait)
    processing_guarantee: str = "exactly_once_v2"
    #: ``exactly_once_v2``: the broker aborts a transaction of the instance's producer open this long (ms;
    #: ``CROUPIER_TRANSACTION_TIMEOUT_MS``). A killed instance's open transaction holds its partitions' readers
    #: until then (no next owner's ``init_transactions`` aborts it), so it is near the session timeout
    transaction_timeout_ms: int = 6_000
    #: ``exactly_once_v2``: how many transactional producers the instance has (``CROUPIER_INSTANCE_PRODUCERS``,
    #: default 1, Kafka Streams' one per stream thread); task p writes through producer ``p % n``, each with one
    #: transaction in flight, so up to n of the instance's transactions overlap
    instance_producers: int = 1
    #: the prompt lane begins a task's next prompt transaction as soon as one commits and adds its partition
    #: while it waits, so the next prompt events pay Produce and EndTxn only (``CROUPIER_PRIME_TRANSACTIONS``,
    #: default 1; 0: each adds its partition on its path; :mod:`services.runtime.prompt_lane`, issue 30). The
    #: instance's group commit does not prime: tried (its last partitions and the group added ahead), it made
    #: ``bench/pipeline.py``'s paced round slower (p50 75 ms against 49, three alternated pairs): a task
    #: transaction's partitions change with its tables, and its next outcome waited behind the primed requests
    prime_transactions: bool = True
    #: the services' group consumers fetch in incremental fetch sessions (KIP-227): each fetch names only the
    #: partitions whose position changed, each response only those with something new
    #: (``CROUPIER_FETCH_SESSIONS``, default 1; 0: aiokafka's full fetches; :mod:`services.runtime.fetch_sessions`)
    fetch_sessions: bool = True
    #: the runtime's transactional producers run Kafka's transaction protocol version 2 (KIP-890 part 2: no
    #: AddPartitionsToTxn nor AddOffsetsToTxn, the epoch bumped by each EndTxn) where every broker supports it
    #: (``CROUPIER_TRANSACTION_V2``, default 1; 0: aiokafka's version 1; :mod:`services.runtime.transaction_v2`)
    transaction_v2: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    #: the CA certificate(s), PEM, that the broker's certificate must chain to (TLS protocols only)
    ssl_cafile: str | None = None

    def __post_init__(self) -> None:
        if self.processing_guarantee not in GUARANTEES:
            raise ValueError(f"CROUPIER_PROCESSING_GUARANTEE={self.processing_guarantee!r}: expected one of "
                             f"{', '.join(GUARANTEES)}")
        if self.security_protocol not in PROTOCOLS:
            raise SecuritySettingsError(
                f"KAFKA_SECURITY_PROTOCOL={self.security_protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        if self.tls:
            try:
                client_context(self.ssl_cafile)
            except CaFileError as e:
                raise SecuritySettingsError(str(e)) from None
        elif self.ssl_cafile:
            raise SecuritySettingsError(
                f"KAFKA_SSL_CAFILE is set but KAFKA_SECURITY_PROTOCOL={self.security_protocol} sends everything in "
                "clear: use SASL_SSL (or SSL), or unset KAFKA_SSL_CAFILE")
        if self.security_protocol.startswith("SASL"):
            p = self.security_protocol
            if self.sasl_mechanism not in MECHANISMS:
                raise SecuritySettingsError(
                    f"KAFKA_SASL_MECHANISM={self.sasl_mechanism!r}: {p} needs one of {', '.join(MECHANISMS)}")
            if not self.sasl_username:
                raise SecuritySettingsError(f"{p} needs KAFKA_SASL_USERNAME (the principal)")
            if not self.sasl_password:
                raise SecuritySettingsError(
                    f"{p} needs a password for {self.sasl_username!r}: set KAFKA_SASL_PASSWORD_FILE "
                    "(or KAFKA_SASL_PASSWORD)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """``KAFKA_BOOTSTRAP_SERVERS``, ``CROUPIER_TOPIC_PREFIX``, ``CROUPIER_GROUP_PREFIX``,
        ``CROUPIER_INSTANCE`` (default: the host name), ``CROUPIER_SESSION_TIMEOUT_MS`` (at least 6,000, the
        broker's ``group.min.session.timeout.ms``; ``ValueError`` below it), ``CROUPIER_PROMPT_STREAMS`` (0 or 1), ``CROUPIER_PROCESSING_GUARANTEE``
        (``exactly_once`` or ``exactly_once_v2``; ``ValueError`` otherwise), ``CROUPIER_TRANSACTION_TIMEOUT_MS`` (at
        least 1,000), ``CROUPIER_INSTANCE_PRODUCERS`` (at least 1), ``CROUPIER_PRIME_TRANSACTIONS`` (0 or 1), ``CROUPIER_FETCH_SESSIONS`` (0 or 1); security: ``KAFKA_SECURITY_PROTOCOL`` (default ``PLAINTEXT``),
        ``KAFKA_SASL_MECHANISM`` (default ``SCRAM-SHA-512`` when the protocol is SASL), ``KAFKA_SASL_USERNAME``
        and the password from ``KAFKA_SASL_PASSWORD_FILE`` (a file holding it, e.g.
        ``var/kafka/passwords/shoe``; trailing newline ignored) or ``KAFKA_SASL_PASSWORD``, not both;
        ``KAFKA_SSL_CAFILE`` (TLS: the CA's PEM file, e.g. ``var/kafka-secure/tls/ca.pem``).

        Raises :class:`SecuritySettingsError` for an unknown protocol or mechanism, a missing user name or
        password, both password variables, an unreadable password or CA file, or a CA file with a plain-text
        protocol.
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
            session_timeout_ms=_int_env(env, "CROUPIER_SESSION_TIMEOUT_MS", 6_000, low=6_000),
            prompt_streams=_int_env(env, "CROUPIER_PROMPT_STREAMS", 1, low=0) > 0,
            processing_guarantee=env.get("CROUPIER_PROCESSING_GUARANTEE", "").strip().lower() or "exactly_once_v2",
            transaction_timeout_ms=_int_env(env, "CROUPIER_TRANSACTION_TIMEOUT_MS", 6_000, low=1_000),
            instance_producers=_int_env(env, "CROUPIER_INSTANCE_PRODUCERS", 1, low=1),
            prime_transactions=_int_env(env, "CROUPIER_PRIME_TRANSACTIONS", 1, low=0) > 0,
            fetch_sessions=_int_env(env, "CROUPIER_FETCH_SESSIONS", 1, low=0) > 0,
            transaction_v2=_int_env(env, "CROUPIER_TRANSACTION_V2", 1, low=0) > 0,
            security_protocol=protocol,
            sasl_mechanism=mechanism if sasl else None,
            sasl_username=(env.get("KAFKA_SASL_USERNAME") or None) if sasl else None,
            sasl_password=_password(env) if sasl else None,
            ssl_cafile=env.get("KAFKA_SSL_CAFILE", "").strip() or None,
        )

    @property
    def secured(self) -> bool:
        """True when clients authenticate (SASL)."""
        return self.security_protocol.startswith("SASL")

    @property
    def tls(self) -> bool:
        """True when clients speak TLS to the broker (``SSL``, ``SASL_SSL``)."""
        return self.security_protocol in TLS_PROTOCOLS

    def ssl_context(self) -> ssl.SSLContext | None:
        """The process's client SSL context for :attr:`ssl_cafile` (:func:`services.runtime.tls.client_context`:
        the broker's certificate and host name checked, TLS 1.2+), None without TLS."""
        return client_context(self.ssl_cafile) if self.tls else None

    def as_principal(self, username: str, password: str, mechanism: str = "SCRAM-SHA-512") -> "Settings":
        """The same settings, connecting as another principal: over ``SASL_SSL`` when these speak TLS (same CA
        file), else ``SASL_PLAINTEXT`` (tests, tools)."""
        return replace(self, security_protocol="SASL_SSL" if self.tls else "SASL_PLAINTEXT",
                       sasl_mechanism=mechanism, sasl_username=username, sasl_password=password)

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
        ``sasl_mechanism``, ``sasl_plain_username`` and ``sasl_plain_password``; with TLS ``security_protocol``
        and ``ssl_context`` (never a fall-back to plain text: aiokafka refuses the connection instead).

        Use as ``AIOKafkaProducer(**settings.client_options(), linger_ms=0)``.
        """
        options: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers}
        if self.security_protocol != "PLAINTEXT":
            options["security_protocol"] = self.security_protocol
        if self.secured:
            options.update(sasl_mechanism=self.sasl_mechanism, sasl_plain_username=self.sasl_username,
                           sasl_plain_password=self.sasl_password)
        if self.tls:
            options["ssl_context"] = self.ssl_context()
        return options

    def consumer_options(self) -> dict[str, Any]:
        """:meth:`client_options` for an ``AIOKafkaConsumer``: also ``fetch_max_wait_ms`` (:data:`FETCH_MAX_WAIT_MS`:
        why every consumer on a round's path uses it)."""
        return {**self.client_options(), "fetch_max_wait_ms": FETCH_MAX_WAIT_MS}

    def faststream_security(self) -> Any:
        """The ``security=`` object for ``faststream.kafka.KafkaBroker`` (None when neither SASL nor TLS): a
        ``SASLScram512`` / ``SASLScram256`` / ``SASLPlaintext``, with :meth:`ssl_context` under TLS; a
        ``BaseSecurity`` with the context for ``SSL`` alone."""
        if self.security_protocol == "PLAINTEXT":
            return None
        from faststream.security import BaseSecurity, SASLPlaintext, SASLScram256, SASLScram512

        if not self.secured:
            return BaseSecurity(ssl_context=self.ssl_context(), use_ssl=True)
        kind = {"SCRAM-SHA-512": SASLScram512, "SCRAM-SHA-256": SASLScram256, "PLAIN": SASLPlaintext}
        return kind[self.sasl_mechanism or ""](username=self.sasl_username or "", password=self.sasl_password or "",
                                               ssl_context=self.ssl_context(), use_ssl=self.tls)

    async def check_tls(self, timeout_s: float = 5.0) -> None:
        """Dial the bootstrap servers with these TLS settings (:func:`services.runtime.tls.check_broker_tls`)
        and raise :class:`~services.runtime.tls.BrokerTlsError` naming the cause when the broker's certificate
        is refused (another CA, expired, another host name) or the listener does not speak TLS. Nothing without
        TLS, or when no server can be reached (the callers' own retry covers that). At most ``timeout_s`` per
        server."""
        if self.tls:
            await check_broker_tls(self.bootstrap_hosts(), self.security_protocol, self.ssl_cafile,
                                   timeout_s=timeout_s)

    async def connection_problem(self, timeout_s: float = 5.0) -> str | None:
        """After a client of these settings failed to connect: the TLS cause, when there is one
        (:func:`services.runtime.tls.tls_problem`; for a plain-text client, a broker that speaks TLS)."""
        return await tls_problem(self.bootstrap_hosts(), self.security_protocol, self.ssl_cafile,
                                 timeout_s=timeout_s)

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
        prefix><service>*``). Under ``exactly_once`` the services write through one id per task, derived from the
        service and the partition, never the instance (:meth:`services.runtime.record_collector.RecordCollector.transactional_id`);
        under ``exactly_once_v2`` through this one with a random token after it, unique to the process
        (:attr:`~services.runtime.record_collector.RecordCollector.instance_id`)."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}.{self.instance}"


def env_client_options(bootstrap: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """aiokafka keyword arguments for ``bootstrap`` with the environment's connection security (SASL, TLS and its
    CA file; :meth:`Settings.from_env`, :meth:`Settings.client_options`): what the tools and benches that are
    given a bootstrap address of their own connect with. Raises :class:`SecuritySettingsError` as ``from_env``."""
    return replace(Settings.from_env(environ), bootstrap_servers=bootstrap).client_options()


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
