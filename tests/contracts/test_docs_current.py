"""docs/ is what `python -m croupier.docs` generates from the code (CI runs this: regenerate and commit when
it fails), the topic mapping covers every event and command, agrees with contracts/README.md and with what
the services really publish, and the AsyncAPI document's references all resolve."""

from __future__ import annotations

import asyncio
import json
import random
import re
import typing
from pathlib import Path

import pytest

from contracts import topics as T
from contracts.codecs import decode_command, decode_dead_letter, decode_event
from contracts.commands import AnyCommand
from contracts.events import AnyEvent
from croupier import docs as D
from croupier import docs_topics

GENERATED = D.generate()
DOC = json.loads(GENERATED["asyncapi.json"])


def test_docs_are_current():
    diffs = D.differences()
    assert not diffs, ("docs/ is out of date: run `.venv/bin/python -m croupier.docs` and commit:\n  "
                       + "\n  ".join(diffs))


def test_generation_is_deterministic():
    assert D.generate() == GENERATED
    for path, text in GENERATED.items():
        assert text.endswith("\n") and not text.endswith("\n\n"), path


def test_every_event_and_command_has_a_topic():
    events = set(typing.get_args(AnyEvent))
    commands = set(typing.get_args(AnyCommand))
    assert not events - set(D.EVENT_TOPICS), f"events without a topic in croupier/docs_topics.py: {events - set(D.EVENT_TOPICS)}"
    assert not commands - set(D.COMMAND_TOPICS), f"commands without a topic: {commands - set(D.COMMAND_TOPICS)}"
    assert set(D.EVENT_TOPICS) == events and set(D.COMMAND_TOPICS) == commands
    D.check_mapping()


def test_an_unmapped_event_stops_the_generator(monkeypatch, tmp_path, capsys):
    from contracts.events import Irregularity

    # the mapping lives in croupier.docs_topics (croupier.docs re-exports it)
    monkeypatch.setattr(docs_topics, "EVENT_TOPICS", {k: v for k, v in D.EVENT_TOPICS.items() if k is not Irregularity})
    with pytest.raises(D.MappingError, match="Irregularity"):
        D.generate()
    assert D.main(["--dir", str(tmp_path)]) == 2
    assert "irregularity" in capsys.readouterr().err and not any(tmp_path.iterdir())


def test_the_mapping_agrees_with_the_contracts_readme():
    readme = (Path(D.ROOT) / "contracts" / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_0-9]+)` \| `([A-Za-z]+)` \| ([^|]+) \|", readme, re.MULTILINE)
    by_name = {tp.__name__: tp for tp in list(D.EVENT_TOPICS) + list(D.COMMAND_TOPICS)}
    checked = 0
    for tag, struct, where in rows:
        tp = by_name[struct]
        assert tp.__struct_config__.tag == tag
        named = re.findall(r"`([a-z]+\.[a-z]+)`", where)
        if tp in D.EVENT_TOPICS and where.strip().startswith("`"):
            assert tuple(named) == D.EVENT_TOPICS[tp], struct
            checked += 1
        elif tp in D.COMMAND_TOPICS:
            assert named == [D.COMMAND_TOPICS[tp]], struct
            checked += 1
    assert checked == len(D.EVENT_TOPICS) + len(D.COMMAND_TOPICS) - 1  # command_rejected: "the rejecting service's"


def test_the_services_publish_each_event_on_its_mapped_topic():
    from baccarat.table import punto_banco_full
    from contracts.commands import CloseBetting, OpenRound
    from services.floor.bettors import Seat
    from services.floor.dealer import Clock, TableDealer
    from services.floor.io import MemoryFloorIO
    from services.projection.core import ProjectionCore
    from contracts.cage import RecordOpener
    from services.cage.core import CageCore
    from services.runtime.core import command
    from tests.services.helpers import floor_bus

    async def play():  # type: ignore[no-untyped-def]
        bus, _ = floor_bus(seed=3)
        bus.add(ProjectionCore())
        bus.add(CageCore())
        io = MemoryFloorIO(bus)
        seats = [Seat(i, f"player-{i}") for i in range(1, 5)]
        dealer = TableDealer(io, "D1", punto_banco_full(), seats, random.Random(3), Clock())
        await dealer.run(shoes=1)
        await io.send(T.WAGERING_COMMANDS, command("D1", "late", Clock()(), CloseBetting(round_id="nope")))
        await io.send(T.DEALING_COMMANDS, command("D1", "again", Clock()(), OpenRound(round_id="x", shoe_id="no")))
        await io.send(T.CAGE_COMMANDS, command("D1", "opener", Clock()(), RecordOpener(
            shift_id="S1", gaming_day="2026-01-01", chips=[], total_cents=0, supervisor_id="sup-1")))
        return bus

    bus = asyncio.run(play())
    seen: dict[str, set[str]] = {}
    for topic, records in bus.topics.items():
        for rec in records:
            if topic in T.COMMAND_TOPICS:
                cmd = decode_command(rec.value)
                assert D.COMMAND_TOPICS[type(cmd.payload)] == topic
            elif topic in T.DLQ_TOPICS:
                decode_dead_letter(rec.value)
            else:
                env = decode_event(rec.value)
                assert env.stream == topic and topic in D.EVENT_TOPICS[type(env.payload)], (topic, env.payload)
                seen.setdefault(topic, set()).add(type(env.payload).__name__)
    assert set(seen) >= set(T.EVENT_TOPICS) | set(T.PROJECTION_TOPICS) - {T.PROJECTION_ALERTS}
    assert "CommandRejected" in seen[T.DEALING_EVENTS] | seen[T.WAGERING_EVENTS]


def _resolve(pointer: str) -> object:
    node: object = DOC
    for part in pointer.removeprefix("#/").split("/"):
        assert isinstance(node, dict) and part in node, pointer
        node = node[part]
    return node


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if isinstance(node.get("$ref"), str) else []) + [
            r for k, v in node.items() if k != "examples" for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_the_asyncapi_document_describes_every_topic_and_its_references_resolve():
    assert DOC["asyncapi"] == "3.0.0" and DOC["info"]["title"] and DOC["info"]["version"]
    assert list(DOC["channels"]) == list(T.ALL_TOPICS)
    for topic, ch in DOC["channels"].items():
        kafka = ch["bindings"]["kafka"]
        assert ch["address"] == kafka["topic"] == topic and kafka["partitions"] == T.PARTITIONS
        assert kafka["topicConfiguration"] == {k: int(v) for k, v in T.TOPIC_CONFIG.items()}
        assert ch["messages"], topic
        assert {_resolve(m["$ref"])["name"] for m in ch["messages"].values()} == {  # type: ignore[index]
            "dead_letter" if tp.__name__ == "DeadLetter" else tp.__struct_config__.tag for _, tp in D.messages_of(topic)}
    for op_id, op in DOC["operations"].items():
        assert op["action"] in ("send", "receive") and op["messages"], op_id
        channel = op["channel"]["$ref"]
        for m in op["messages"]:
            assert m["$ref"].startswith(channel + "/messages/"), (op_id, m)
    for ref in _refs(DOC):
        if ref.startswith("#/"):
            _resolve(ref)
        else:
            assert ref in GENERATED, f"{ref}: not a generated file"
    for mid, msg in DOC["components"]["messages"].items():
        assert msg["payload"]["$ref"] in GENERATED
        assert msg["bindings"]["kafka"]["key"]["type"] == "string"
        for ex in msg.get("examples", []):  # the golden messages decode as what they document
            raw = json.dumps(ex["payload"]).encode()
            decoded = (decode_event(raw).payload if mid.startswith("event.") else decode_command(raw).payload
                       if mid.startswith("command.") else decode_dead_letter(raw))
            assert (type(decoded).__struct_config__.tag or "dead_letter") == msg["name"]
    # who writes and who reads, from the service cores
    ops = set(DOC["operations"])
    assert {"shoe.send.shoe.events", "dealing.receive.shoe.events", "dealing.send.shoe.draws",
            "console.send.wagering.commands", "bettor.send.wagering.bets", "wagering.receive.wagering.bets", "settlement.receive.wagering.events", "shoe.receive.shoe.vault",
            "projection.send.projection.odds", "wagering.send.wagering.dlq"} <= ops


def test_per_message_and_per_topic_schemas_say_exactly_what_travels():
    ev = json.loads(GENERATED["schema/events/card_drawn.json"])
    env = ev["$defs"][ev["$ref"].rsplit("/", 1)[-1]]
    assert env["properties"]["payload"] == {"$ref": "#/$defs/CardDrawn"}
    assert env["properties"]["stream"]["enum"] == ["shoe.events"]
    for topic in T.EVENT_TOPICS + T.COMMAND_TOPICS + T.PROJECTION_TOPICS:
        doc = json.loads(GENERATED[f"schema/topics/{topic}.json"])
        payload = doc["$defs"][doc["$ref"].rsplit("/", 1)[-1]]["properties"]["payload"]
        tags = set(payload["discriminator"]["mapping"]) if "discriminator" in payload else {
            doc["$defs"][payload["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]["enum"][0]}
        assert tags == {tp.__struct_config__.tag for _, tp in D.messages_of(topic)}, topic
    for name in ("envelope.json", "command_envelope.json", "dead_letter.json", "table_spec.json"):
        from contracts.schema import generate as contract_schemas

        ours, theirs = json.loads(GENERATED[f"schema/{name}"]), json.loads(contract_schemas()[name])
        assert {k: v for k, v in ours.items() if k != "$comment"} == {k: v for k, v in theirs.items()
                                                                      if k != "$comment"}


def test_check_mode(tmp_path, capsys):
    assert D.main(["--check", "--dir", str(tmp_path)]) == 1
    assert "asyncapi.json: missing" in capsys.readouterr().err
    assert D.main(["--dir", str(tmp_path)]) == 0
    assert D.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "schema" / "events" / "shoe_cut.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "old.json").write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert D.main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "schema/events/shoe_cut.json: changed" in err and "old.json: stale" in err
    assert D.main(["--dir", str(tmp_path)]) == 0 and not (tmp_path / "old.json").exists()
    assert D.main(["--check", "--dir", str(tmp_path)]) == 0
    # a hand-written page beside the generated ones (docs/cage.md) is neither stale nor removed
    (tmp_path / "cage.md").write_text("# The cage\n", encoding="utf-8")
    assert D.main(["--check", "--dir", str(tmp_path)]) == 0
    assert D.main(["--dir", str(tmp_path)]) == 0 and (tmp_path / "cage.md").exists()
