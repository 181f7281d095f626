"""Topic names, partition counts and the message key.

Every topic is keyed by ``table_id``; every topic has the same partition count, so one table lands on the
same partition number in every topic (murmur2 over the key, the same in every client) and one service
instance that owns partition *p* of its inputs also owns partition *p* of its own events.
Event topics keep history forever (``retention.ms=-1``): they are the record investigators replay.
"""

from __future__ import annotations

from typing import Final

#: the default partition count of every topic (``CROUPIER_PARTITIONS`` overrides it per floor): sized for
#: a floor of hundreds of tables and up to this many instances of each service
PARTITIONS: Final = 12

SHOE_COMMANDS: Final = "shoe.commands"
SHOE_EVENTS: Final = "shoe.events"
#: the shoe service's sealed card orders (read only by the shoe service; revealed in ShoeClosed)
SHOE_VAULT: Final = "shoe.vault"
DEALING_COMMANDS: Final = "dealing.commands"
DEALING_EVENTS: Final = "dealing.events"
WAGERING_COMMANDS: Final = "wagering.commands"
WAGERING_EVENTS: Final = "wagering.events"
SETTLEMENT_COMMANDS: Final = "settlement.commands"
SETTLEMENT_EVENTS: Final = "settlement.events"
PROJECTION_ODDS: Final = "projection.odds"
PROJECTION_LEDGER: Final = "projection.ledger"
PROJECTION_ALERTS: Final = "projection.alerts"

COMMAND_TOPICS: Final = (SHOE_COMMANDS, DEALING_COMMANDS, WAGERING_COMMANDS, SETTLEMENT_COMMANDS)
EVENT_TOPICS: Final = (SHOE_EVENTS, SHOE_VAULT, DEALING_EVENTS, WAGERING_EVENTS, SETTLEMENT_EVENTS)
PROJECTION_TOPICS: Final = (PROJECTION_ODDS, PROJECTION_LEDGER, PROJECTION_ALERTS)
SERVICES: Final = ("shoe", "dealing", "wagering", "settlement", "projection")


def dlq(service: str) -> str:
    """Dead-letter topic of ``service``: messages it could not decode or validate, with the error and bytes."""
    return f"{service}.dlq"


DLQ_TOPICS: Final = tuple(dlq(s) for s in SERVICES)
ALL_TOPICS: Final = COMMAND_TOPICS + EVENT_TOPICS + PROJECTION_TOPICS + DLQ_TOPICS

#: Topic configs: every topic keeps its history (event sourcing replays from offset zero).
TOPIC_CONFIG: Final = {"retention.ms": "-1", "retention.bytes": "-1"}
#: Command topics also take the broker's clock as each record's timestamp: a sender cannot choose it.
COMMAND_TOPIC_CONFIG: Final = {"message.timestamp.type": "LogAppendTime"}
#: A service's snapshot topic (``<service>.snapshots``) is a compacted cache, keyed by table id.
SNAPSHOT_TOPIC_CONFIG: Final = {"cleanup.policy": "compact", "segment.ms": "600000",
                                "min.cleanable.dirty.ratio": "0.1", "max.message.bytes": "16777216"}


def key(table_id: str) -> bytes:
    """The message key: the table id, UTF-8."""
    return table_id.encode("utf-8")
