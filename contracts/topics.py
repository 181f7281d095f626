"""Topic names, partition counts and the message key.

Every topic is keyed by ``table_id``; every topic has the same partition count, so one table lands on the
same partition number in every topic (murmur2 over the key, the same in every client) and one service
instance that owns partition *p* of its inputs also owns partition *p* of its own events.
Event topics keep history forever (``retention.ms=-1``): they are the record investigators replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: the default partition count of every topic (``CROUPIER_PARTITIONS`` overrides it per floor): sized for
#: a floor of hundreds of tables and up to this many instances of each service
PARTITIONS: Final = 12

SHOE_COMMANDS: Final = "shoe.commands"
#: the dealing service's ``DrawCard`` commands to the shoe (its own topic: one kind of writer per topic)
SHOE_DRAWS: Final = "shoe.draws"
SHOE_EVENTS: Final = "shoe.events"
#: the shoe service's sealed card orders (read only by the shoe service; revealed in ShoeClosed)
SHOE_VAULT: Final = "shoe.vault"
DEALING_COMMANDS: Final = "dealing.commands"
DEALING_EVENTS: Final = "dealing.events"
#: the participants' chemin de fer option decisions (``DecideOption``), from betting terminals under the
#: ``bettor`` principal (one kind of writer per topic: the console's ``dealing.commands`` is not theirs)
DEALING_OPTIONS: Final = "dealing.options"
WAGERING_COMMANDS: Final = "wagering.commands"
#: the bettors' commands (``PlaceBet``, ``WithdrawBet``), from betting terminals under the ``bettor`` principal
WAGERING_BETS: Final = "wagering.bets"
WAGERING_EVENTS: Final = "wagering.events"
SETTLEMENT_COMMANDS: Final = "settlement.commands"
SETTLEMENT_EVENTS: Final = "settlement.events"
#: the cage's commands (opener, closer, fills, credits, buy-ins, markers, drop boxes, soft count) and events
CAGE_COMMANDS: Final = "cage.commands"
CAGE_EVENTS: Final = "cage.events"
#: the cage service's own commands between a table and the cage window's key ``CAGE``: a marker buy-in's
#: ``DrawMarker`` (table -> CAGE) and ``SettleMarker`` (CAGE -> table); its one writer is the cage service
CAGE_MARKERS: Final = "cage.markers"
PROJECTION_ODDS: Final = "projection.odds"
PROJECTION_LEDGER: Final = "projection.ledger"
PROJECTION_ALERTS: Final = "projection.alerts"



@dataclass(frozen=True, slots=True)
class CommandTopic:
    """A command topic, its one kind of writer and the commands it carries.

    ``writer``: the principal kind the broker's ACLs let write the topic (``infra/kafka/acls.py``): ``console``
    (the dealer console and its card reader), ``bettor`` (betting terminals) or a service name. A service
    that reads the topic attributes each command on it to that principal (``Envelope.principal``) and refuses
    a command type the topic does not carry (``CommandRejected`` ``wrong_topic``): so the ACLs alone decide
    who may send what. ``commands``: the command tags (``contracts.commands``) the topic carries.
    ``attributed``: the sender must name its actor (``CommandEnvelope.actor``: the dealer, or the player at
    a terminal), else ``unattributed``.
    """

    name: str
    writer: str
    commands: tuple[str, ...]
    attributed: bool = True


#: every command topic: each command type travels on exactly one, and each topic has one kind of writer
COMMAND_ROUTES: Final = (
    CommandTopic(SHOE_COMMANDS, "console", ("load_shoe", "read_card", "read_burn", "close_shoe")),
    CommandTopic(SHOE_DRAWS, "dealing", ("draw_card",), attributed=False),
    CommandTopic(DEALING_COMMANDS, "console", ("open_table", "open_round", "void_round", "offer_shoe", "keep_shoe",
                                              "pass_shoe", "expire_option")),
    CommandTopic(DEALING_OPTIONS, "bettor", ("decide_option",)),
    CommandTopic(WAGERING_COMMANDS, "console", ("close_betting", "seat_player", "leave_seat")),
    CommandTopic(WAGERING_BETS, "bettor", ("place_bet", "withdraw_bet")),
    CommandTopic(SETTLEMENT_COMMANDS, "console", ("collect_commission",)),
    CommandTopic(CAGE_COMMANDS, "console", ("record_opener", "record_closer", "request_fill", "issue_fill",
                                           "receive_fill", "request_credit", "hand_over_credit", "receive_credit",
                                           "set_credit_line", "buy_in", "remove_drop_box", "count_drop_box",
                                           "redeem_chips")),
    CommandTopic(CAGE_MARKERS, "cage", ("draw_marker", "settle_marker"), attributed=False),
)
ROUTES: Final = {r.name: r for r in COMMAND_ROUTES}
#: command tag -> the one topic that carries it
TOPIC_OF: Final = {tag: r.name for r in COMMAND_ROUTES for tag in r.commands}
COMMAND_TOPICS: Final = tuple(r.name for r in COMMAND_ROUTES)
EVENT_TOPICS: Final = (SHOE_EVENTS, SHOE_VAULT, DEALING_EVENTS, WAGERING_EVENTS, SETTLEMENT_EVENTS, CAGE_EVENTS)
PROJECTION_TOPICS: Final = (PROJECTION_ODDS, PROJECTION_LEDGER, PROJECTION_ALERTS)
SERVICES: Final = ("shoe", "dealing", "wagering", "settlement", "projection", "cage")


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
