"""Kafka plumbing: topic creation (reading a log from offset zero: :mod:`services.rawlog`; publishing is per task:
:mod:`services.runtime.record_collector`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from contracts import topics as T
from services.runtime.settings import Settings


async def metadata_of(client: Any, topics: Sequence[str]) -> Any:
    """The broker's metadata of ``topics`` (full names) alone: one Metadata request that never creates a topic
    (``allow_auto_topic_creation`` false, whatever the broker's ``auto.create.topics.enable``), answered as an
    aiokafka ``ClusterMetadata`` (``partitions_for_topic(t)`` is None for a topic that does not exist or may not
    be described; ``brokers()`` the live brokers). ``client`` is a started aiokafka client (a consumer's,
    producer's or admin's ``_client``).

    Why not ``consumer.topics()`` or the admin's ``list_topics()``/``describe_cluster()``: they ask for every
    topic's metadata, and a broker holding a few thousand topics answers with tens of kilobytes that aiokafka
    decodes in pure Python (on a CI broker full of test floors: 86 KB and 89 ms of CPU a call, half of an audit
    test's CPU). Raises aiokafka's errors (no broker reachable: ``KafkaConnectionError``, ``NodeNotReadyError``)."""
    import random

    from aiokafka.cluster import ClusterMetadata
    from aiokafka.errors import KafkaConnectionError, KafkaError
    from aiokafka.protocol.metadata import MetadataRequest

    if client.get_random_node() is None:  # no broker known yet: the bootstrap names them
        await client.bootstrap()
    nodes = [b.nodeId for b in client.cluster.brokers()]
    random.shuffle(nodes)  # as aiokafka's own metadata refresh: any live broker answers for the cluster
    last: Exception = KafkaConnectionError("no broker known")
    for node in nodes:  # a dead broker of a cluster is skipped (a cluster's broker may be down: issue 25)
        try:
            response = await client.send(node, MetadataRequest(list(topics), allow_auto_topic_creation=False))
            break
        except (TimeoutError, KafkaError, OSError) as e:
            last = e
    else:
        raise last
    found = ClusterMetadata()
    found.need_all_topic_metadata = True  # a missing topic is an answer here, not an error to log
    found.update_metadata(response)
    return found


async def topic_partitions(client: Any, topic: str) -> set[int] | None:
    """The partition numbers of ``topic`` (full name) now, or None when it does not exist (or may not be
    described): :func:`metadata_of` for that topic alone, never creating it."""
    return (await metadata_of(client, [topic])).partitions_for_topic(topic)


class PartitionMismatch(RuntimeError):
    """Existing topics have a partition count other than the configured one (co-partitioning broken)."""


def topic_config(base: str) -> dict[str, str]:
    """The configuration a base topic is created with: snapshot topics are compacted caches, command
    topics take the broker's append time as each record's timestamp, every other topic keeps its history
    forever (:data:`contracts.topics.TOPIC_CONFIG`)."""
    if base.endswith(".snapshots"):
        return dict(T.SNAPSHOT_TOPIC_CONFIG)
    if base in T.COMMAND_TOPICS:
        return {**T.TOPIC_CONFIG, **T.COMMAND_TOPIC_CONFIG}
    return dict(T.TOPIC_CONFIG)


def replication_from_env(brokers: int, environ: Mapping[str, str] | None = None) -> int:
    """The replication factor a floor's topics get on a cluster of ``brokers`` live brokers:
    ``CROUPIER_REPLICATION_FACTOR`` when set (an integer from 1 to ``brokers``), else ``min(3, brokers)``
    (three copies survive one dead broker with ``min.insync.replicas`` 2, as ``kafka.sh start --brokers 3``
    configures). Raises ``ValueError`` for a factor that is not an integer or is out of that range."""
    env = os.environ if environ is None else environ
    raw = env.get("CROUPIER_REPLICATION_FACTOR", "").strip()
    if not raw:
        return max(1, min(3, brokers))
    try:
        rf = int(raw)
    except ValueError:
        raise ValueError(f"CROUPIER_REPLICATION_FACTOR must be an integer, got {raw!r}") from None
    if not 1 <= rf <= max(1, brokers):
        raise ValueError(f"CROUPIER_REPLICATION_FACTOR={rf} needs 1..{brokers} (the cluster has {brokers} brokers)")
    return rf


async def ensure_topics(settings: Settings, names: Iterable[str]) -> None:
    """Create the given base topics (prefixed) with ``settings.partitions`` partitions and
    :func:`topic_config` if they do not exist. Raises :class:`PartitionMismatch` when an existing topic
    has another partition count (a table would not be on the same partition number in every topic). A topic
    created here gets :func:`replication_from_env` copies for the cluster's live brokers (one on one broker, three
    on ``kafka.sh start --brokers 3``)."""
    admin = AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        wanted = [settings.topic(n) for n in dict.fromkeys(names)]
        client = admin._client  # metadata of these topics alone (metadata_of)
        md = await metadata_of(client, wanted)
        missing = [t for t in wanted if md.partitions_for_topic(t) is None]
        if missing:
            rf = replication_from_env(len(md.brokers()))
            new = [NewTopic(t, settings.partitions, rf, topic_configs=topic_config(settings.base(t))) for t in missing]
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
        # creation is asynchronous on the controller: wait until every partition has a leader
        ready: set[str] = set()
        for _ in range(300):
            md = await metadata_of(client, wanted)
            ready = {t for t in wanted if (parts := md.partitions_for_topic(t))
                     and md.available_partitions_for_topic(t) == parts}
            if ready >= set(wanted):
                wrong = {t: len(md.partitions_for_topic(t)) for t in wanted
                         if len(md.partitions_for_topic(t)) != settings.partitions}
                if wrong:
                    raise PartitionMismatch(
                        f"topics with other than {settings.partitions} partitions (CROUPIER_PARTITIONS): {wrong}; "
                        "every topic of a floor needs the same count (see README, Scaling out)")
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"topics without leaders after 30 s: {sorted(set(wanted) - ready)}")
    finally:
        await admin.close()


