"""Kafka plumbing: topic creation and reading a log from offset zero (publishing is per task:
:mod:`services.runtime.record_collector`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.partitioner import murmur2
from aiokafka.structs import ConsumerRecord

from contracts import topics as T
from services.runtime.settings import Settings


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
        existing = set(await admin.list_topics())
        missing = [t for t in wanted if t not in existing]
        if missing:
            rf = replication_from_env(len((await admin.describe_cluster())["brokers"]))
            new = [NewTopic(t, settings.partitions, rf, topic_configs=topic_config(settings.base(t))) for t in missing]
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
        # creation is asynchronous on the controller: wait until every partition has a leader
        for _ in range(300):
            described = await admin.describe_topics(wanted)
            ready = {d["topic"] for d in described if d["error_code"] == 0 and d["partitions"]
                     and all(p["leader"] >= 0 for p in d["partitions"])}
            if ready >= set(wanted):
                wrong = {d["topic"]: len(d["partitions"]) for d in described
                         if len(d["partitions"]) != settings.partitions}
                if wrong:
                    raise PartitionMismatch(
                        f"topics with other than {settings.partitions} partitions (CROUPIER_PARTITIONS): {wrong}; "
                        "every topic of a floor needs the same count (see README, Scaling out)")
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"topics without leaders after 30 s: {sorted(set(wanted) - ready)}")
    finally:
        await admin.close()


async def read_log(settings: Settings, topic: str, partitions: Sequence[int] | None = None, *,
                   table_id: str | None = None) -> list[ConsumerRecord]:
    """Every committed record of ``topic`` (full name) in ``partitions`` (all when None; with ``table_id``
    only the partition that table's key maps to, from the topic's actual partition count), from offset
    zero to the end as of the call, in offset order per partition (partitions one after another)."""
    consumer = AIOKafkaConsumer(
        **settings.client_options(),
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
    )
    try:
        await consumer.start()
    except BaseException:
        await consumer.stop()
        raise
    try:
        if topic not in await consumer.topics():
            return []  # never create a topic by reading it (the broker may auto-create on metadata requests)
        if partitions is None:
            parts = await consumer._client.fetch_all_metadata()  # noqa: SLF001 - metadata refresh
            found = parts.partitions_for_topic(topic) or set()
            partitions = sorted(found)
            if table_id is not None and found:
                partitions = [(murmur2(T.key(table_id)) & 0x7FFFFFFF) % len(found)]
        tps = [TopicPartition(topic, p) for p in partitions]
        if not tps:
            return []
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        end = await consumer.end_offsets(tps)
        out: dict[TopicPartition, list[ConsumerRecord]] = {tp: [] for tp in tps}
        pending = {tp for tp in tps if end[tp] > 0}
        while pending:
            for tp in list(pending):
                if await consumer.position(tp) >= end[tp]:
                    pending.discard(tp)
            if not pending:
                break
            batch = await consumer.getmany(*pending, timeout_ms=500)
            for tp, records in batch.items():
                out[tp].extend(r for r in records if r.offset < end[tp])
        return [r for tp in tps for r in out[tp]]
    finally:
        await consumer.stop()
