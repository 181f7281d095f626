"""Reading the event log back from Kafka for investigators: replay, audit, export.

Everything here reads committed records from offset zero through the one raw-log reader
(:mod:`services.rawlog`); nothing writes. A table's events live on one partition number in every topic (keyed by
table id), so reading a table reads only that partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka.partitioner import DefaultPartitioner

from contracts import topics as T
from contracts.envelope import Envelope
from services.rawlog import read_decoded
from services.runtime.settings import Settings

#: the streams an investigator replays (the shoe's vault is the shoe service's alone)
EVENT_STREAMS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
PROJECTION_STREAMS = (T.PROJECTION_LEDGER, T.PROJECTION_ALERTS)
#: the cage's books (openers, closers, slips, buy-ins, soft counts): read, audited and exported when present
CAGE_STREAMS = (T.CAGE_EVENTS,)


def partition_of(table_id: str, partitions: int = T.PARTITIONS) -> int:
    """The partition a table's events are on (murmur2 of the key, as every Kafka client computes it)."""
    return DefaultPartitioner()(T.key(table_id), list(range(partitions)), list(range(partitions)))


async def visible_topics(settings: Settings, **options: Any) -> set[str]:
    """The floor's topics (full names, :data:`contracts.topics.ALL_TOPICS` under ``settings``' prefix) that exist
    and this principal may describe: one Metadata request for those topics alone, never creating one, never
    listing the broker's every topic (:func:`services.runtime.kafka.metadata_of`). ``options`` are the admin
    client's (e.g. ``request_timeout_ms``). Raises aiokafka's errors."""
    from aiokafka.admin import AIOKafkaAdminClient

    from services.runtime.kafka import metadata_of

    admin = AIOKafkaAdminClient(**settings.client_options(), **options)
    try:
        await admin.start()
        wanted = [settings.topic(n) for n in T.ALL_TOPICS]
        md = await metadata_of(admin._client, wanted)  # the floor's topics alone
        return {t for t in wanted if md.partitions_for_topic(t) is not None}
    finally:
        await admin.close()


class VaultUnreadable(LookupError):
    """``shoe.vault`` cannot be read by this principal (not authorised, or the topic does not exist)."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """An event with where it sits in Kafka, and its Kafka timestamp (ms)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    env: Envelope


async def read_events(settings: Settings, table_id: str | None = None,
                      streams: tuple[str, ...] = EVENT_STREAMS) -> list[LogRecord]:
    """Every decodable event of ``streams`` (all tables, or one), in per-stream order. Records that do not
    decode (or of unknown types) are left out: the audit counts them separately (:func:`read_for_audit`)."""
    got = await read_decoded(settings, [settings.topic(s) for s in streams], table_id)
    return [LogRecord(rec.topic, rec.partition, rec.offset, rec.timestamp, env) for rec, env in got.ok]


async def tables_in_log(settings: Settings) -> list[str]:
    """Every table id that has a dealing event (a table that was opened)."""
    return sorted({r.env.table_id for r in await read_events(settings, streams=(T.DEALING_EVENTS,))})


async def read_vault(settings: Settings, table: str | None = None):  # type: ignore[no-untyped-def]
    """The records of ``shoe.vault`` (all tables, or one) for the audit's vault check: ``(envelopes,
    undecodable)``. Raises aiokafka's ``TopicAuthorizationFailedError`` (or another ``KafkaError``) for a
    principal that may not read it: only the shoe principal may (infra/kafka/acls.py), and
    :class:`VaultUnreadable` when the topic is not visible to this principal at all."""
    from croupier.audit import UndecodableRecord

    if settings.topic(T.SHOE_VAULT) not in await visible_topics(settings):
        who = f"principal {settings.sasl_username!r}" if settings.secured else "this client"
        raise VaultUnreadable(f"{settings.topic(T.SHOE_VAULT)} is not visible to {who} (no such topic, or not "
                              "authorised: only the shoe principal may read the vault)")
    got = await read_decoded(settings, [settings.topic(T.SHOE_VAULT)], table)
    undecodable = [UndecodableRecord(f.key, f.record.topic, f.record.partition, f.record.offset, f.error)
                   for f in got.undecodable]
    return [env for _, env in got.ok], undecodable


async def read_for_audit(settings: Settings, table: str | None = None):  # type: ignore[no-untyped-def]
    """What the audit reads: events (the cage's and settlement first, shoe last: whatever a later-read stream
    holds, the earlier ones' events were caused by, so a live floor's log reads as a consistent cut), records
    that do not decode, events of types this version does not know."""
    import msgspec

    from croupier.audit import UndecodableRecord, UnknownEvent

    existing = await visible_topics(settings)
    # only topics that exist: reading a missing one would have the broker auto-create it under a wrong prefix
    # the cage's events first: they are caused by settlement and wagering events (the same consistent cut)
    streams = tuple(s for s in (T.CAGE_EVENTS, T.SETTLEMENT_EVENTS, T.WAGERING_EVENTS, T.DEALING_EVENTS,
                                T.SHOE_EVENTS) if settings.topic(s) in existing)
    if not streams:
        return [], [], []
    got = await read_decoded(settings, [settings.topic(s) for s in streams], table)  # each record read once
    if T.CAGE_EVENTS in streams and table is None:
        # the cage key's partition again, last: a table's marker BoughtIn read above has its MarkerIssued
        from contracts.cage import CAGE_KEY
        from services.rawlog import decode_records, read_topic

        topic = settings.topic(T.CAGE_EVENTS)
        cage_key_last(got.ok, decode_records(await read_topic(settings, topic, table_id=CAGE_KEY),
                                             table_id=CAGE_KEY).ok, topic)
    undecodable = [UndecodableRecord(f.key, f.record.topic, f.record.partition, f.record.offset, f.error)
                   for f in got.undecodable]
    unknown: list[UnknownEvent] = []
    for u in got.unknown:
        probe = msgspec.json.decode(u.record.value)  # a sound envelope: the decoder checked it
        unknown.append(UnknownEvent(probe["table_id"], probe["stream"], probe["seq"], probe["event_id"],
                                    u.type_name))
    return [env for _, env in got.ok], undecodable, unknown


def cage_key_last(first: list[tuple[Any, Envelope]], again: list[tuple[Any, Envelope]], topic: str) -> int:
    """Append to ``first`` (``(record, envelope)`` pairs of a whole read) the cage key's events of ``again``
    (a later read of the cage key's partition of ``topic``) past what ``first`` read of that partition; returns
    how many. A marker buy-in's third step (the table's ``BoughtIn``) is caused by the ``SettleMarker`` written
    in the transaction of its second (``MarkerIssued`` at ``CAGE``, another partition): with the cage key read
    after the tables, every ``BoughtIn`` read has its ``MarkerIssued`` (the audit's ``marker_mismatch``, and a
    marker between its steps a ``marker_unsettled`` notice, :mod:`croupier.audit_cage`). Other tables' events
    of that partition past the first read are left out: the rest of the read stays one cut."""
    from contracts.cage import CAGE_KEY

    part = {r.partition for r, e in again}
    seen = max((r.offset for r, _ in first if r.topic == topic and r.partition in part), default=-1)
    more = [(r, e) for r, e in again if r.offset > seen and e.table_id == CAGE_KEY]
    first.extend(more)
    return len(more)


class CommandsUnreadable(LookupError):
    """The command topics cannot be read by this principal (only surveillance may, on a secured broker)."""


async def read_commands(settings: Settings, table: str | None = None):  # type: ignore[no-untyped-def]
    """Every decodable record of the command topics (all tables, or one) for the audit's provenance check:
    :class:`croupier.provenance.CommandRecord` s, each with its topic, offset and the broker's append time. A
    record that does not decode is left out (the services dead-lettered or skipped it: it caused nothing).
    Raises :class:`CommandsUnreadable` when no command topic is visible to this principal (one that may not
    describe them, as ``analytics``, sees none: the provenance is then "attribution only", never a
    ``command_missing`` for every event) or a command topic that exists cannot be read (aiokafka's
    authorization error on a secured broker)."""
    from aiokafka.errors import TopicAuthorizationFailedError

    from contracts.codecs import decode_command
    from croupier.provenance import CommandRecord
    from services.rawlog import decode_records, read_topic

    visible = await visible_topics(settings)
    if not any(settings.topic(base) in visible for base in T.COMMAND_TOPICS):
        # a principal without Describe on them (analytics: event topics only) sees none of them: reading them
        # would give nothing, and every command-caused event would look forged (command_missing)
        who = f"principal {settings.sasl_username!r}" if settings.secured else "this client"
        raise CommandsUnreadable(f"no command topic is visible to {who} (not authorised, or no such topics): the "
                                 "surveillance principal may read the command topics")
    out: list[CommandRecord] = []
    for base in T.COMMAND_TOPICS:
        try:
            recs = await read_topic(settings, settings.topic(base), table_id=table)
        except TopicAuthorizationFailedError as e:
            who = f"principal {settings.sasl_username!r}" if settings.secured else "this client"
            raise CommandsUnreadable(f"{settings.topic(base)} cannot be read by {who} ({e}): the surveillance "
                                     "principal may read the command topics") from None
        # a record that does not decode was dead-lettered or skipped by the services: it caused no event
        for rec, cmd in decode_records(recs, decode_command, table).ok:
            out.append(CommandRecord(base, rec.partition, rec.offset, rec.timestamp,
                                     getattr(rec, "timestamp_type", 0) == 1, cmd))
    return out
