"""Fixtures for tests against a real Apache Kafka broker.

Every test under tests/system gets the ``kafka`` marker. The broker comes from, in order:

1. ``KAFKA_BOOTSTRAP_SERVERS`` (``.ci/run`` sets it after ``infra/kafka/kafka.sh start``; locally run
   ``eval "$(infra/kafka/kafka.sh start)"`` then ``export KAFKA_BOOTSTRAP_SERVERS``);
2. a throw-away testcontainers ``KafkaContainer`` (KRaft) if a Docker engine answers;
3. otherwise the tests are skipped with the reason (and ``CROUPIER_REQUIRE_KAFKA=1`` turns that into a
   failure, see tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from services.runtime.settings import Settings, env_client_options

if TYPE_CHECKING:
    from tests.system.secured import SecuredBroker

_SYSTEM_DIR = Path(__file__).resolve().parent

# Image for the Docker fallback only (CI uses the pinned broker from infra/kafka). Override with
# CROUPIER_KAFKA_IMAGE, e.g. confluentinc/cp-kafka:8.0.0 for a Kafka 4.x broker.
_DEFAULT_IMAGE = "confluentinc/cp-kafka:7.6.0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A conftest's collection hook sees the whole session's items: mark only those under this directory.
    for item in items:
        if _SYSTEM_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.kafka)


def _docker_unavailable_reason() -> str | None:
    """None if a Docker engine answers a ping, else why not (never just looks for the `docker` CLI)."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - DockerException, connection errors, missing module, ...
        return f"{type(exc).__name__}: {exc}".strip()
    return None


def _check_reachable(bootstrap: str) -> None:
    """Fail (not skip) early with a clear message if the configured broker does not accept connections."""
    errors = []
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{server.strip()}: {exc}")
    pytest.fail(
        f"KAFKA_BOOTSTRAP_SERVERS={bootstrap} is set but no broker accepts connections "
        f"({'; '.join(errors)}). Start one with infra/kafka/kafka.sh start.",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a real Kafka broker ("host:port[,host:port...]")."""
    configured = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if configured:
        _check_reachable(configured)
        yield configured
        return

    reason = _docker_unavailable_reason()
    if reason is not None:
        pytest.skip(
            "needs a real Kafka broker: KAFKA_BOOTSTRAP_SERVERS is not set and no Docker engine answers "
            f"({reason}). Run `infra/kafka/kafka.sh start` and export the KAFKA_BOOTSTRAP_SERVERS it prints."
        )

    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:  # testcontainers < 4.10
        from testcontainers.kafka import KafkaContainer

    image = os.environ.get("CROUPIER_KAFKA_IMAGE", _DEFAULT_IMAGE)
    with KafkaContainer(image).with_kraft() as container:
        yield container.get_bootstrap_server()


def client_options(bootstrap: str) -> dict[str, object]:
    """aiokafka connection options for ``bootstrap`` with the security settings of the environment
    (``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*``, ``KAFKA_SSL_CAFILE``; none on the plain broker)."""
    return env_client_options(bootstrap)


#: the session broker's security settings: a test that starts a plain broker of its own drops them (CI's are
#: SASL_SSL), for itself and the service processes it starts
SECURITY_ENV = ("KAFKA_SECURITY_PROTOCOL", "KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD",
                "KAFKA_SASL_PASSWORD_FILE", "KAFKA_SSL_CAFILE", "KAFKA_CREDENTIALS_FILE")


def broker_settings(bootstrap: str, **fields: object) -> Settings:
    """``Settings(bootstrap_servers=bootstrap, **fields)`` that connect like the environment says: only the
    security settings (``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*``, ``KAFKA_SSL_CAFILE``) come from it, so the same test runs on
    the plain broker and, as the admin principal, on the secured one (``.ci/run`` runs tests/system on both)."""
    env = Settings.from_env()
    fields.setdefault("partitions", env.partitions)  # CROUPIER_PARTITIONS: 3 for test floors (tests/conftest.py)
    # CROUPIER_PROCESSING_GUARANTEE=exactly_once_v2 runs the in-process services of every system test with one
    # producer per instance (the chaos test runs both guarantees whatever it says)
    fields.setdefault("processing_guarantee", env.processing_guarantee)
    return Settings(bootstrap_servers=bootstrap, security_protocol=env.security_protocol,  # type: ignore[arg-type]
                    sasl_mechanism=env.sasl_mechanism, sasl_username=env.sasl_username,
                    sasl_password=env.sasl_password, ssl_cafile=env.ssl_cafile, **fields)


_TOPIC_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


def unique_topic_name(prefix: str = "test") -> str:
    """A topic name that no other test (or earlier run against the same broker) uses."""
    prefix = _TOPIC_UNSAFE.sub("-", prefix).strip("-.") or "test"
    return f"{prefix[:150]}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Factory of unique topic names derived from the test's name: ``topic_name("events")``."""

    def make(suffix: str = "") -> str:
        base = request.node.name if not suffix else f"{request.node.name}-{suffix}"
        return unique_topic_name(base)

    return make


async def create_topics(
    bootstrap: str,
    names: list[str] | str,
    *,
    partitions: int = 4,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Create topics and wait until every partition has a leader (so producers never race the creation).

    Raises on any error other than "already exists".
    """
    topics = [names] if isinstance(names, str) else list(names)
    admin = AIOKafkaAdminClient(**client_options(bootstrap), request_timeout_ms=int(timeout_s * 1000))
    await admin.start()
    try:
        response = await admin.create_topics(
            [
                NewTopic(
                    name=t,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    topic_configs={k: str(v) for k, v in (config or {}).items()},
                )
                for t in topics
            ]
        )
        for error in response.topic_errors:
            topic, code = error[0], error[1]
            message = error[2] if len(error) > 2 else None
            if code == 0:
                continue
            exc = for_code(code)
            if exc is TopicAlreadyExistsError:
                continue
            raise exc(f"creating topic {topic!r}: {message}")

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            described = await admin.describe_topics(topics)
            ready = {
                d["topic"]
                for d in described
                if d["error_code"] == 0
                and len(d["partitions"]) == partitions
                and all(p["leader"] >= 0 for p in d["partitions"])
            }
            if ready >= set(topics):
                return
            if loop.time() > deadline:
                raise TimeoutError(f"topics without leaders after {timeout_s} s: {set(topics) - ready}")
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


async def delete_topics(bootstrap: str, names: list[str]) -> None:
    admin = AIOKafkaAdminClient(**client_options(bootstrap))
    await admin.start()
    try:
        await admin.delete_topics(names)
    finally:
        await admin.close()


@pytest.fixture
async def kafka_topic(
    kafka_bootstrap: str, topic_name: Callable[[str], str]
) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """Async factory creating a unique topic, deleted after the test:

    ``name = await kafka_topic(partitions=4, config={"retention.ms": "-1"})``
    """
    created: list[str] = []

    async def make(
        suffix: str = "",
        *,
        partitions: int = 4,
        config: Mapping[str, str] | None = None,
    ) -> str:
        name = topic_name(suffix)
        await create_topics(kafka_bootstrap, name, partitions=partitions, config=config)
        created.append(name)
        return name

    yield make

    if created:
        try:
            await delete_topics(kafka_bootstrap, created)
        except Exception as exc:  # noqa: BLE001 - best effort: names are unique, leftovers harm no test
            logging.getLogger(__name__).warning("could not delete test topics %s: %s", created, exc)


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator["SecuredBroker"]:
    """A broker started by ``infra/kafka/kafka.sh start --secure`` (SASL/SCRAM, ACLs), with the ACLs of one
    topic prefix: ``CROUPIER_SECURE_KAFKA`` (a running secured broker's data dir) or one of its own on free
    ports, stopped at the end of the session (see tests/system/secured.py)."""
    from tests.system.secured import start_secured

    broker = start_secured(tmp_path_factory.mktemp("kafka"))
    logging.getLogger(__name__).warning("secured broker at %s ready in %.1f s (prefix %s):\n%s", broker.bootstrap,
                                        broker.start_seconds, broker.prefix, broker.start_log)
    try:
        yield broker
    finally:
        broker.stop()
