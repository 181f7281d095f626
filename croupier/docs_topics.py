"""Which message travels on which Kafka topic, and who writes and reads each topic: the mapping the generated
documentation (:mod:`croupier.docs`) is built from.

:data:`EVENT_TOPICS` (every event and its topic(s): the same as the table of ``contracts/README.md``) and
:data:`COMMAND_TOPICS` (every command and its topic, :data:`contracts.topics.TOPIC_OF`); :func:`check_mapping`
raises :class:`MappingError` unless every event of :data:`contracts.events.AnyEvent` and every command of
:data:`contracts.commands.AnyCommand` is mapped, to existing topics only. :func:`flows` reads the writers and
readers from the service cores' ``own_stream``, ``private_streams``, ``command_streams`` and ``input_streams``.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from contracts import commands as C
from contracts import events as E
from contracts import topics as T
from contracts.cage import CAGE_EVENTS
from contracts.envelope import DeadLetter

#: every event and the topic(s) it travels on (a rejection goes on the rejecting service's events topic)
EVENT_TOPICS: dict[type, tuple[str, ...]] = {
    E.CommandRejected: (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS),
    E.ShoeLoaded: (T.SHOE_EVENTS,),
    E.ShoeCut: (T.SHOE_EVENTS,),
    E.ShoeBurned: (T.SHOE_EVENTS,),
    E.CardDrawn: (T.SHOE_EVENTS,),
    E.CardReadRefused: (T.SHOE_EVENTS,),
    E.ShoeClosed: (T.SHOE_EVENTS,),
    E.ShoeOrderSealed: (T.SHOE_VAULT,),
    E.ShoeOrderEncrypted: (T.SHOE_VAULT,),
    E.TableOpened: (T.DEALING_EVENTS,),
    E.RoundOpened: (T.DEALING_EVENTS,),
    E.CardDealt: (T.DEALING_EVENTS,),
    E.PointsAnnounced: (T.DEALING_EVENTS,),
    E.Irregularity: (T.DEALING_EVENTS,),
    E.RoundResolved: (T.DEALING_EVENTS,),
    E.RoundVoided: (T.DEALING_EVENTS,),
    E.ShoeFinished: (T.DEALING_EVENTS,),
    E.ShoeOffered: (T.DEALING_EVENTS,),
    E.ShoeKept: (T.DEALING_EVENTS,),
    E.ShoePassed: (T.DEALING_EVENTS,),
    E.DominantPlayerChosen: (T.DEALING_EVENTS,),
    E.CardsCalled: (T.DEALING_EVENTS,),
    E.OptionOffered: (T.DEALING_EVENTS,),
    E.OptionDecided: (T.DEALING_EVENTS,),
    E.BankSettled: (T.SETTLEMENT_EVENTS,),
    E.BettingOpened: (T.WAGERING_EVENTS,),
    E.BetPlaced: (T.WAGERING_EVENTS,),
    E.BetRejected: (T.WAGERING_EVENTS,),
    E.BetWithdrawn: (T.WAGERING_EVENTS,),
    E.BettingClosed: (T.WAGERING_EVENTS,),
    E.PlayerSeated: (T.WAGERING_EVENTS,),
    E.PlayerLeft: (T.WAGERING_EVENTS,),
    E.BetSettled: (T.SETTLEMENT_EVENTS,),
    E.CommissionAccrued: (T.SETTLEMENT_EVENTS,),
    E.CommissionCollected: (T.SETTLEMENT_EVENTS,),
    E.RoundSettled: (T.SETTLEMENT_EVENTS,),
    E.OddsUpdated: (T.PROJECTION_ODDS,),
    E.LedgerPosted: (T.PROJECTION_LEDGER,),
    E.AdvantageBetFlagged: (T.PROJECTION_ALERTS,),
    **{tp: (T.CAGE_EVENTS,) for tp in CAGE_EVENTS},
}

#: every command and the topic it is sent to (:data:`contracts.topics.TOPIC_OF`)
COMMAND_TOPICS: dict[type, str] = {tp: T.TOPIC_OF[tp.__struct_config__.tag] for tp in C.AnyCommand.__args__}

#: who writes under each principal kind that is not a service
WRITER_KINDS: dict[str, str] = {"console": "dealer consoles and their card readers, the simulated floor's dealer",
                                "bettor": "betting terminals, the simulated floor's bettors"}

TOPIC_SUMMARY: dict[str, str] = {
    T.SHOE_COMMANDS: "The dealer console's commands for the shoe service: load, read a card or a burn, close.",
    T.SHOE_DRAWS: "The dealing service's commands for the shoe service: draw the next card for a round.",
    T.SHOE_EVENTS: "The shoe's events: loaded (with the commitment), cut, burned, every card drawn, closed "
                   "(the reveal).",
    T.SHOE_VAULT: ("The shoe service's sealed card orders (AES-256-GCM, contracts/vault.py), read only by the "
                   "shoe service to rebuild and by an auditor holding the vault key."),
    T.DEALING_COMMANDS: "Commands for the dealing service: open a table, open or void a round, expire a chemin de "
                        "fer option (the table's clock).",
    T.DEALING_OPTIONS: "The participants' chemin de fer option decisions (draw or stand), from their betting "
                       "terminals.",
    T.DEALING_EVENTS: "The table's configuration and each round of play: cards dealt with the rule that "
                      "required them, points, the result.",
    T.WAGERING_COMMANDS: "The dealer console's commands for the wagering service: \"No more bets\", seat a "
                         "player or let one leave (the player registry).",
    T.WAGERING_BETS: "The betting terminals' commands for the wagering service: place or withdraw a bet.",
    T.WAGERING_EVENTS: "Each round's bet book: bets placed, rejected, withdrawn, the closed book.",
    T.SETTLEMENT_COMMANDS: "Commands for the settlement service: collect the commission a seat owes.",
    T.SETTLEMENT_EVENTS: "Payouts of every bet, commission, round totals.",
    T.CAGE_COMMANDS: ("The cage's commands from the pit, the cage and the count room: opener and closer, fill and "
                      "credit slips step by step, credit lines, buy-ins (cash, marker, chips), drop box removal "
                      "and soft count, chips redeemed at the cage."),
    T.CAGE_MARKERS: ("The cage service's own commands for a marker buy-in's steps: a table's DrawMarker to the "
                     "cage's key CAGE (the casino-wide credit line decides), CAGE's SettleMarker back to the table."),
    T.CAGE_EVENTS: ("Each table's inventory by shift: opener, closer (with the tray expected and the shift's game "
                    "result), fills, credits, buy-ins, markers (requested at the table, issued at CAGE), drop boxes counted; at CAGE the "
                    "casino-wide credit lines, markers issued and chips redeemed."),
    T.PROJECTION_ODDS: "Exact odds of the next round, public and surveillance views, after every shoe change.",
    T.PROJECTION_LEDGER: "The cage ledger's balanced journal entries.",
    T.PROJECTION_ALERTS: "Surveillance alerts: bets on wagers whose exact EV was positive.",
}


class MappingError(ValueError):
    """The topic mapping does not cover the contracts (or names a topic that does not exist)."""


def _union(tp: Any) -> tuple[type, ...]:
    return tuple(typing.get_args(tp))


def check_mapping() -> None:
    """Raise :class:`MappingError` unless every event and command is mapped, to existing topics only."""
    problems = []
    for name, union, mapping in (("event", E.AnyEvent, EVENT_TOPICS), ("command", C.AnyCommand, COMMAND_TOPICS)):
        members = set(_union(union))
        for tp in sorted(members - set(mapping), key=lambda t: t.__name__):
            problems.append(f"{name} {tp.__name__} ({_tag(tp)}) has no topic in croupier/docs_topics.py")
        for tp in sorted(set(mapping) - members, key=lambda t: t.__name__):
            problems.append(f"{tp.__name__} is mapped but is not in Any{name.capitalize()}")
    for tp, topics in list(EVENT_TOPICS.items()) + [(t, (x,)) for t, x in COMMAND_TOPICS.items()]:
        for topic in topics:
            if topic not in T.ALL_TOPICS:
                problems.append(f"{tp.__name__} is mapped to {topic!r}, which is not a topic of contracts.topics")
    if problems:
        raise MappingError("; ".join(problems))


def _tag(tp: type) -> str:
    return tp.__struct_config__.tag  # type: ignore[attr-defined, no-any-return]


def _cores() -> dict[str, Any]:
    """The service core classes by service name (their class attributes say what they read and write)."""
    from services.cage.core import CageCore
    from services.dealing.core import DealingCore
    from services.projection.core import ProjectionCore
    from services.settlement.core import SettlementCore
    from services.shoe.core import ShoeCore
    from services.wagering.core import WageringCore

    cores = {c.name: c for c in (ShoeCore, DealingCore, WageringCore, SettlementCore, ProjectionCore,
                                         CageCore)}
    assert tuple(cores) == T.SERVICES, f"services {tuple(cores)} != contracts.topics.SERVICES {T.SERVICES}"
    return cores


def flows() -> dict[str, tuple[list[str], list[str]]]:
    """Topic -> (who sends to it, who receives from it), from the service cores and the command routes (a
    command topic's one writer: a service, or a principal kind such as ``console`` or ``bettor``)."""
    out: dict[str, tuple[list[str], list[str]]] = {t: ([], []) for t in T.ALL_TOPICS}
    for route in T.COMMAND_ROUTES:  # each command topic has one kind of writer
        out[route.name][0].append(route.writer)
    for name, core in _cores().items():
        for topic in (core.own_stream, *core.private_streams):
            out[topic][0].append(name)
        out[T.dlq(name)][0].append(name)
        for topic in (*core.command_streams, *core.input_streams, *core.private_streams):
            out[topic][1].append(name)
    return out


def messages_of(topic: str) -> list[tuple[str, type]]:
    """(message id, Struct) of what travels on ``topic``, in contract order."""
    if topic in T.DLQ_TOPICS:
        return [("dead_letter", DeadLetter)]
    ev = [(f"event.{_tag(tp)}", tp) for tp in _union(E.AnyEvent) if topic in EVENT_TOPICS[tp]]
    cmd = [(f"command.{_tag(tp)}", tp) for tp in _union(C.AnyCommand) if COMMAND_TOPICS[tp] == topic]
    return ev + cmd


def _first_line(tp: type) -> str:
    """The docstring's first sentence, on one line."""
    text = " ".join(inspect.cleandoc(tp.__doc__ or "").split("\n\n")[0].split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]
