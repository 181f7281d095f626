"""The AsyncAPI 3.0 document of the whole system (``docs/asyncapi.json``) and its index (``docs/messages.md``):
one channel per Kafka topic of :mod:`contracts.topics` (its partitions, its key ``table_id``, its retention), the
messages that travel on it, which service sends and which receives them (:func:`croupier.docs_topics.flows`),
Kafka bindings, and each message's payload as a ``$ref`` to its JSON Schema (:mod:`croupier.docs_schemas`), with
the golden message of ``contracts/golden/v1`` as its example.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from contracts import topics as T
from contracts.envelope import SCHEMA_VERSION, DeadLetter
from croupier.docs_schemas import _schema_path
from croupier.docs_topics import TOPIC_SUMMARY, WRITER_KINDS, _first_line, _tag, check_mapping, flows, messages_of

#: the golden messages (one per message id, or its variants), each message's example
GOLDEN_DIR = Path(__file__).resolve().parent.parent / "contracts" / "golden" / "v1"

_KAFKA_BINDING = "0.5.0"


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
