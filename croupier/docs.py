"""Documentation generated from the code: ``python -m croupier.docs [--check]`` writes ``docs/``.

What it writes, deterministically (the same text for the same code and msgspec version):

* ``docs/asyncapi.json``: an AsyncAPI 3.0 document of the whole system. One channel per Kafka topic of
  :mod:`contracts.topics` (its partitions, its key ``table_id``, its retention), the messages that travel on
  it, which service sends and which receives them (read from the service cores' ``own_stream``,
  ``private_streams``, ``command_streams`` and ``input_streams``), Kafka bindings, and each message's payload
  as a ``$ref`` to a JSON Schema below, with the golden message of ``contracts/golden/v1`` as its example;
* ``docs/schema/*.json``: the JSON Schemas of :mod:`contracts.schema` (envelope, command envelope, dead
  letter, table spec), regenerated with its generator;
* ``docs/schema/events/<tag>.json``: an ``Envelope`` whose payload is that event, its ``stream`` the topic(s)
  the event travels on; ``docs/schema/commands/<tag>.json``: a ``CommandEnvelope`` carrying that command;
* ``docs/schema/topics/<topic>.json``: the envelope of everything that travels on one topic;
* ``docs/messages.md``: an index: topics, who writes and reads them, their messages;
* ``docs/parquet.md``: the files and typed columns of ``croupier export --format parquet``
  (:mod:`croupier.parquet`), one table per event type.

Which event travels on which topic is :data:`EVENT_TOPICS` here (the same as the table of
``contracts/README.md``); every event of :data:`contracts.events.AnyEvent` and every command of
:data:`contracts.commands.AnyCommand` must be in it, or the generator refuses to run (and the test that
checks ``docs/`` is current fails). ``--check`` writes nothing: it exits 1 listing every file that differs
from what would be generated, is missing, or is stale.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import typing
from pathlib import Path
from typing import Any, Literal, Union

import msgspec

from contracts import commands as C
from contracts import events as E
from contracts import topics as T
from contracts.cage import CAGE_EVENTS
from contracts.envelope import SCHEMA_VERSION, CommandEnvelope, DeadLetter, Envelope
from contracts.schema import DOCUMENTS, render, schema_document

ROOT = Path(__file__).resolve().parent.parent
#: where the generated documentation lives
DOCS_DIR = ROOT / "docs"
GOLDEN_DIR = ROOT / "contracts" / "golden" / "v1"

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
    T.CAGE_EVENTS: ("Each table's inventory by shift: opener, closer (with the tray expected and the shift's game "
                    "result), fills, credits, buy-ins, markers, drop boxes counted."),
    T.PROJECTION_ODDS: "Exact odds of the next round, public and surveillance views, after every shoe change.",
    T.PROJECTION_LEDGER: "The cage ledger's balanced journal entries.",
    T.PROJECTION_ALERTS: "Surveillance alerts: bets on wagers whose exact EV was positive.",
}

_KAFKA_BINDING = "0.5.0"


class MappingError(ValueError):
    """The topic mapping does not cover the contracts (or names a topic that does not exist)."""


# ---- the mapping and the services ---------------------------------------------------------------------------
def _union(tp: Any) -> tuple[type, ...]:
    return tuple(typing.get_args(tp))


def check_mapping() -> None:
    """Raise :class:`MappingError` unless every event and command is mapped, to existing topics only."""
    problems = []
    for name, union, mapping in (("event", E.AnyEvent, EVENT_TOPICS), ("command", C.AnyCommand, COMMAND_TOPICS)):
        members = set(_union(union))
        for tp in sorted(members - set(mapping), key=lambda t: t.__name__):
            problems.append(f"{name} {tp.__name__} ({_tag(tp)}) has no topic in croupier/docs.py")
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


# ---- JSON Schemas ------------------------------------------------------------------------------------------
def _camel(text: str) -> str:
    return "".join(p.capitalize() for p in text.replace(".", "_").split("_"))


def _envelope(base: type, name: str, payload: Any, doc: str, streams: tuple[str, ...] = ()) -> type:
    """A copy of ``base`` (Envelope or CommandEnvelope) whose payload is ``payload`` (and ``stream`` one of
    ``streams``), for a schema that says exactly what travels on a topic."""
    spec: list[Any] = []
    for f in msgspec.structs.fields(base):
        tp = payload if f.name == "payload" else f.type
        if f.name == "stream" and streams:
            tp = Literal[streams]  # type: ignore[valid-type]
        spec.append((f.name, tp) if f.required else (f.name, tp, f.default))
    cls = msgspec.defstruct(name, spec, kw_only=True, frozen=True)
    cls.__doc__ = doc
    return cls


def _document(tp: type, comment: str) -> dict[str, Any]:
    doc = schema_document(tp)
    doc["$comment"] = comment
    return doc


def _comment(source: str) -> str:
    return (f"Generated by `python -m croupier.docs` from {source} (envelope schema version {SCHEMA_VERSION}). "
            "Do not edit; see contracts/EVOLUTION.md.")


def _first_line(tp: type) -> str:
    """The docstring's first sentence, on one line."""
    text = " ".join(inspect.cleandoc(tp.__doc__ or "").split("\n\n")[0].split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def schemas() -> dict[str, dict[str, Any]]:
    """Relative path under ``docs/`` -> JSON Schema document."""
    out: dict[str, dict[str, Any]] = {}
    for name, tp in DOCUMENTS.items():
        out[f"schema/{name}"] = _document(tp, _comment(f"contracts.{tp.__module__.split('.')[-1]}.{tp.__name__}"))
    for tp in _union(E.AnyEvent):
        topics = EVENT_TOPICS[tp]
        env = _envelope(Envelope, f"{tp.__name__}Envelope", tp,
                        f"An Envelope carrying `{_tag(tp)}` on {', '.join(topics)}: {_first_line(tp)}", topics)
        out[f"schema/events/{_tag(tp)}.json"] = _document(env, _comment(f"{tp.__module__}.{tp.__name__}"))
    for tp in _union(C.AnyCommand):
        env = _envelope(CommandEnvelope, f"{tp.__name__}CommandEnvelope", tp,
                        f"A CommandEnvelope carrying `{_tag(tp)}` on {COMMAND_TOPICS[tp]}: {_first_line(tp)}")
        out[f"schema/commands/{_tag(tp)}.json"] = _document(env, _comment(f"{tp.__module__}.{tp.__name__}"))
    for topic in T.ALL_TOPICS:
        if topic in T.DLQ_TOPICS:
            continue  # a dead-letter topic carries DeadLetter: schema/dead_letter.json
        members = tuple(tp for _, tp in messages_of(topic))
        payload = members[0] if len(members) == 1 else Union[members]  # type: ignore[valid-type]  # noqa: UP007
        if topic in T.COMMAND_TOPICS:
            env = _envelope(CommandEnvelope, f"{_camel(topic)}Envelope", payload,
                            f"What travels on {topic}: a CommandEnvelope carrying one of its commands.")
        else:
            env = _envelope(Envelope, f"{_camel(topic)}Envelope", payload,
                            f"What travels on {topic}: an Envelope carrying one of its events.", (topic,))
        out[f"schema/topics/{topic}.json"] = _document(env, _comment(f"contracts.topics ({topic})"))
    return out


# ---- AsyncAPI ----------------------------------------------------------------------------------------------
def _golden(msg_id: str) -> tuple[str, Any] | None:
    """The golden message of a message id (``event.shoe_cut`` -> ``event.shoe_cut.json``, else its first
    variant), as (file name, decoded JSON)."""
    exact = GOLDEN_DIR / f"{msg_id}.json"
    candidates = [exact] if exact.is_file() else sorted(GOLDEN_DIR.glob(f"{msg_id}.*.json"))
    if not candidates:
        return None
    return candidates[0].name, json.loads(candidates[0].read_text(encoding="utf-8"))


def _message(msg_id: str, tp: type, schema_path: str) -> dict[str, Any]:
    if tp is DeadLetter:
        name, key = "dead_letter", "the key of the original message (its table id), if it had one"
    else:
        name, key = _tag(tp), "the table id, UTF-8"
    msg: dict[str, Any] = {
        "name": name,
        "title": tp.__name__,
        "summary": _first_line(tp),
        "description": inspect.cleandoc(tp.__doc__ or ""),
        "contentType": "application/json",
        "payload": {"$ref": schema_path},
    }
    if tp is not DeadLetter:
        msg["correlationId"] = {"description": "the round (or shoe, or table) the message belongs to",
                                "location": "$message.payload#/correlation_id"}
    msg["bindings"] = {"kafka": {"key": {"type": "string", "description": key}, "bindingVersion": _KAFKA_BINDING}}
    golden = _golden(msg_id)
    if golden is not None:
        msg["examples"] = [{"name": golden[0].removesuffix(".json").replace(".", "-"),
                            "summary": f"contracts/golden/v1/{golden[0]}", "payload": golden[1]}]
    return msg


def _schema_path(msg_id: str) -> str:
    if msg_id == "dead_letter":
        return "schema/dead_letter.json"
    kind, tag = msg_id.split(".", 1)
    return f"schema/{kind}s/{tag}.json"


def _send_summary(sender: str, topic: str) -> str:
    if topic in T.COMMAND_TOPICS:
        return (f"Commands the {sender} service sends." if sender in T.SERVICES else
                f"Commands from the {sender} principal ({WRITER_KINDS.get(sender, sender)}), its one writer.")
    if topic in T.DLQ_TOPICS:
        return f"The {sender} service dead-letters what it cannot decode."
    if topic in T.EVENT_TOPICS:
        return f"The {sender} service publishes its events, one Kafka transaction per decision."
    return f"The {sender} service publishes its projection."


def asyncapi() -> dict[str, Any]:
    """The AsyncAPI 3.0 document."""
    check_mapping()
    who = flows()
    retention = {k: int(v) for k, v in T.TOPIC_CONFIG.items()}
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for topic in T.ALL_TOPICS:
        msgs = messages_of(topic)
        senders, receivers = who[topic]
        if topic in T.DLQ_TOPICS:
            summary = (f"Dead letters of the {topic.removesuffix('.dlq')} service: messages it could not decode, "
                       "with the error and the original bytes (base64).")
        else:
            summary = TOPIC_SUMMARY[topic]
        channels[topic] = {
            "address": topic,
            "title": topic,
            "summary": summary,
            "description": (f"{summary}\n\nKafka topic `{topic}` (behind the deployment's topic prefix "
                            f"`$CROUPIER_TOPIC_PREFIX`, if any): {T.PARTITIONS} partitions, keyed by `table_id` "
                            f"(UTF-8) so that a table is on the same partition number in every topic; history kept "
                            f"forever ({', '.join(f'{k}={v}' for k, v in T.TOPIC_CONFIG.items())}). "
                            f"Written by: {', '.join(senders) or 'nobody'}. "
                            f"Read by: {', '.join(receivers) or 'operators and analytics consumers'}."),
            "messages": {mid.split(".", 1)[-1]: {"$ref": f"#/components/messages/{mid}"} for mid, _ in msgs},
            "bindings": {"kafka": {"topic": topic, "partitions": T.PARTITIONS, "topicConfiguration": retention,
                                   "bindingVersion": _KAFKA_BINDING}},
        }
        refs = [{"$ref": f"#/channels/{topic}/messages/{mid.split('.', 1)[-1]}"} for mid, _ in msgs]
        for sender in senders:
            operations[f"{sender}.send.{topic}"] = {
                "action": "send",
                "channel": {"$ref": f"#/channels/{topic}"},
                "title": f"{sender} sends to {topic}",
                "summary": _send_summary(sender, topic),
                "messages": refs,
            }
        for receiver in receivers:
            operations[f"{receiver}.receive.{topic}"] = {
                "action": "receive",
                "channel": {"$ref": f"#/channels/{topic}"},
                "title": f"{receiver} receives from {topic}",
                "summary": f"The {receiver} service consumes {topic} (read_committed, from offset zero on rebuild).",
                "messages": refs,
                "bindings": {"kafka": {"groupId": {"type": "string", "description": (
                    "$CROUPIER_GROUP_PREFIX.$CROUPIER_TOPIC_PREFIX" + receiver), "examples": [f"croupier.{receiver}"]},
                    "bindingVersion": _KAFKA_BINDING}},
            }
        for mid, tp in msgs:
            messages.setdefault(mid, _message(mid, tp, _schema_path(mid)))
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Croupier",
            "version": f"{SCHEMA_VERSION}.0.0",
            "description": (
                "Event-sourced New Jersey baccarat services over Apache Kafka. Every message is JSON. An event "
                "travels in an Envelope (ids, stream, gapless per-table seq, causation, correlation, time, "
                "schema version, payload); a command in a CommandEnvelope; a message a service could not "
                "decode in a DeadLetter. `payload.type` is the snake_case tag. Money is integer cents.\n\n"
                "Generated by `python -m croupier.docs` from contracts/ and the service cores; "
                "see contracts/README.md and contracts/EVOLUTION.md."),
        },
        "defaultContentType": "application/json",
        "servers": {
            "local": {
                "host": "127.0.0.1:19092",
                "protocol": "kafka",
                "description": "The development broker of `infra/kafka/kafka.sh start` (elsewhere: "
                               "$KAFKA_BOOTSTRAP_SERVERS).",
            },
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


# ---- the index -----------------------------------------------------------------------------------------
def index(doc: dict[str, Any]) -> str:
    lines = [
        "# Croupier: messages and topics",
        "",
        ("Generated by `python -m croupier.docs` from `contracts/` and the service cores: do not edit. "
         "`python -m croupier.docs --check` (and `tests/contracts/test_docs_current.py`) fails when these files "
         "are not what the code generates."),
        "",
        ("* [`asyncapi.json`](asyncapi.json): AsyncAPI 3.0, every topic with its messages, producers, consumers "
         "and Kafka bindings;"),
        ("* `schema/`: JSON Schemas (draft 2020-12): `envelope.json`, `command_envelope.json`, "
         "`dead_letter.json`, `table_spec.json`; one per event (`schema/events/<type>.json`), per command "
         "(`schema/commands/<type>.json`) and per topic (`schema/topics/<topic>.json`);"),
        ("* [`parquet.md`](parquet.md): the files and typed columns of `croupier export --format parquet`, "
         "one table per event type."),
        "",
        (f"Every topic has {T.PARTITIONS} partitions, is keyed by `table_id` and keeps its history "
         f"({', '.join(f'`{k}={v}`' for k, v in T.TOPIC_CONFIG.items())})."),
        "",
        "| topic | written by | read by | messages |",
        "|---|---|---|---|",
    ]
    who = flows()
    for topic, ch in doc["channels"].items():
        senders, receivers = who[topic]
        msgs = ", ".join(f"[`{m}`]({_schema_path(r['$ref'].rsplit('/', 1)[-1])})"
                         for m, r in ch["messages"].items())
        lines.append(f"| `{topic}` | {', '.join(senders)} | {', '.join(receivers) or '-'} | {msgs} |")
    lines += ["", "| message | struct | summary |", "|---|---|---|"]
    for mid, m in doc["components"]["messages"].items():
        summary = m["summary"].replace("|", "\\|")
        lines.append(f"| [`{mid}`]({_schema_path(mid)}) | `{m['title']}` | {summary} |")
    return "\n".join(lines) + "\n"


# ---- the typed Parquet export -------------------------------------------------------------------------------
def parquet_doc() -> str:
    """``docs/parquet.md``: the files and columns of ``croupier export --format parquet``
    (:mod:`croupier.parquet`), every event type's."""
    from croupier import parquet as P

    def rows(schema: Any, names: list[str]) -> list[str]:
        out = []
        for name in names:
            f = schema.field(name)
            out.append(f"| `{name}` | `{P.type_text(f.type)}` | {'yes' if f.nullable else 'no'} |")
        return out

    first = P.event_schema(E.BetSettled)
    common = [*P.ENVELOPE_COLUMNS, "type", *P.LOCATION_COLUMNS]
    lines = [
        "# Croupier: the typed Parquet export",
        "",
        ("Generated by `python -m croupier.docs` from `contracts/` and `croupier/parquet.py`: do not edit. "
         "`croupier export --format parquet --out DIR` writes `DIR/<EventType>.parquet`, one flat table per "
         "event type present in the export, one row per event; `--table` (repeatable, default every table), "
         "`--shoe`, `--gaming-day` and `--since`/`--until` (the envelope's `occurred_at`) choose the events "
         "(`croupier/selection.py`). Ints (cents, seats, counts) are int64, times UTC timestamps, lists, "
         "nested structs and maps Arrow lists, structs and maps; no column holds JSON text. "
         "`croupier.parquet.read_directory` turns the rows back into the contract structs. The export reads "
         "the shoe, dealing, wagering and settlement events and the projection's ledger and alerts; the odds "
         "(`projection.odds`) and the vault's records are listed too, as `croupier.parquet.write_directory` "
         "writes any event."),
        "",
        "```sql",
        "-- DuckDB: payouts by table and wager",
        "select table_id, wager, count(*) as bets, sum(stake) as stakes, sum(payout) as payouts",
        "from 'DIR/BetSettled.parquet' group by all order by all;",
        "-- every journal line of a gaming day",
        "select entry_id, kind, l.account, l.amount_cents",
        "from (select *, unnest(lines) as l from 'DIR/LedgerPosted.parquet') where gaming_day = '2026-01-01';",
        "```",
        "",
        "## Columns of every file",
        "",
        ("The envelope (`contracts/envelope.py`), the event's tag, and where the record sits in Kafka "
         "(`kafka_timestamp`: the record's own timestamp, when it was written; `occurred_at`: the broker's "
         "append time of the command that caused the event, what `--since`/`--until` compare). A payload "
         "field named like one of these is `payload_<name>` (`payload_round_id`, `payload_shoe_id`)."),
        "",
        "| column | type | nullable |",
        "|---|---|---|",
        *rows(first, common),
        "",
        "## Payload columns, by file",
        "",
    ]
    for tp, topics in EVENT_TOPICS.items():
        schema = P.event_schema(tp)
        where = ", ".join(f"`{t}`" for t in topics)
        lines += [f"### `{P.file_name(tp)}`", "",
                  f"`{_tag(tp)}` on {where}: {_first_line(tp).replace('|', chr(92) + '|')}", "",
                  "| column | type | nullable |", "|---|---|---|",
                  *rows(schema, list(P.payload_columns(tp))), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---- files -------------------------------------------------------------------------------------------------
def generate() -> dict[str, str]:
    """Relative path under ``docs/`` -> file text."""
    doc = asyncapi()
    files = {path: render(schema) for path, schema in schemas().items()}
    files["asyncapi.json"] = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    files["messages.md"] = index(doc)
    files["parquet.md"] = parquet_doc()
    return dict(sorted(files.items()))


#: the Markdown pages the generator writes in ``docs/`` (``README.md``: its old name for ``messages.md``)
GENERATED_PAGES = ("messages.md", "parquet.md", "README.md")


def _existing(directory: Path) -> set[str]:
    """The files of ``directory`` the generator answers for (a stale one among them is reported or removed):
    the ``schema/`` tree, every top-level file but a hand-written Markdown page, and its own pages. The rest of
    ``docs/`` is the documentation site written by hand (``guide/``, ``images/``, ``docs/cage.md`` …:
    ``mkdocs.yml``), which it neither checks nor removes."""
    if not directory.is_dir():
        return set()
    files = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    return {f for f in files if f.startswith("schema/")
            or ("/" not in f and (not f.endswith(".md") or f in GENERATED_PAGES))}


def differences(directory: Path = DOCS_DIR) -> list[str]:
    """What in ``directory`` differs from :func:`generate`: ``"<path>: changed" | "missing" | "stale"``."""
    wanted = generate()
    out = []
    for path, text in wanted.items():
        f = directory / path
        if not f.is_file():
            out.append(f"{path}: missing")
        elif f.read_text(encoding="utf-8") != text:
            out.append(f"{path}: changed")
    for path in sorted(_existing(directory) - set(wanted)):
        out.append(f"{path}: stale (not generated any more)")
    return out


def write(directory: Path = DOCS_DIR) -> list[str]:
    """Write every file (and remove stale ones); returns the paths written, changed or removed."""
    wanted = generate()
    changed = []
    for path, text in wanted.items():
        f = directory / path
        if not f.is_file() or f.read_text(encoding="utf-8") != text:
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    for path in sorted(_existing(directory) - set(wanted)):
        (directory / path).unlink()
        changed.append(f"{path} (removed)")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m croupier.docs",
                                     description="Generate docs/: the AsyncAPI document and the JSON Schemas.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the files that differ from what would be generated")
    parser.add_argument("--dir", type=Path, default=DOCS_DIR, help=f"output directory (default {DOCS_DIR})")
    args = parser.parse_args(argv)
    try:
        if args.check:
            diffs = differences(args.dir)
            if diffs:
                print(f"docs in {args.dir} are out of date (run `python -m croupier.docs`):", file=sys.stderr)
                for d in diffs:
                    print(f"  {d}", file=sys.stderr)
                return 1
            print(f"docs in {args.dir} are up to date ({len(generate())} files).")
            return 0
        changed = write(args.dir)
    except MappingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(changed)} file(s) in {args.dir}" + (f": {', '.join(changed)}" if changed else
                                                           " (all up to date)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
