"""Bounded input (issue 9, finding 9): every string and list on the wire has a maximum, so no command can
make a later event outgrow the broker's record limit (two 600 KB player ids once wedged a table)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from contracts import bounds as B
from contracts import topics as T
from contracts.codecs import Undecodable, decode_command, decode_dead_letter, encode
from contracts.commands import AnyCommand, LoadShoe, PlaceBet, ReadBurn
from contracts.envelope import CommandEnvelope, Envelope, event_id
from contracts.events import AnyEvent, BetLine, BetPlaced, BetRejected, BettingClosed
from services.runtime.core import command

AT = datetime(2026, 1, 1, tzinfo=UTC)
COMMANDS = AnyCommand.__args__  # type: ignore[attr-defined]
EVENTS = AnyEvent.__args__  # type: ignore[attr-defined]


def _unbounded(t: mi.Type, path: str, seen: set[type]) -> list[str]:
    """Paths of strings, lists and maps in ``t`` without an enforced maximum."""
    if isinstance(t, mi.Metadata):  # a documented maximum only: not enforced
        return [path] if isinstance(t.type, (mi.StrType, mi.ListType, mi.DictType)) else _unbounded(t.type, path, seen)
    if isinstance(t, mi.StrType):
        return [] if t.max_length is not None else [path]
    if isinstance(t, mi.ListType):
        return ([] if t.max_length is not None else [path]) + _unbounded(t.item_type, path + "[]", seen)
    if isinstance(t, mi.DictType):
        return (([] if t.max_length is not None else [path]) + _unbounded(t.key_type, path + "{key}", seen)
                + _unbounded(t.value_type, path + "{}", seen))
    if isinstance(t, mi.UnionType):
        return [p for x in t.types for p in _unbounded(x, path, seen)]
    if isinstance(t, mi.StructType):
        if t.cls in seen:
            return []
        seen.add(t.cls)
        return [p for f in t.fields for p in _unbounded(f.type, f"{path}.{f.name}", seen)]
    return []


@pytest.mark.parametrize("tp", [CommandEnvelope, *COMMANDS], ids=lambda t: t.__name__)
def test_every_string_and_list_of_a_command_has_an_enforced_maximum(tp: type) -> None:
    assert _unbounded(mi.type_info(tp), tp.__name__, set()) == []


def _undocumented(node: Any, path: str) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "string" and "maxLength" not in node:
            out.append(path)
        if node.get("type") == "array" and "maxItems" not in node:
            out.append(path)
        if node.get("type") == "object" and "additionalProperties" in node and "maxProperties" not in node:
            out.append(path)
        for k, v in node.items():
            out += _undocumented(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _undocumented(v, f"{path}/{i}")
    return out


def test_every_string_and_list_of_an_event_has_a_documented_maximum() -> None:
    (_, defs) = msgspec.json.schema_components([Envelope])
    # the envelope's own datetimes are strings of a fixed format; everything else needs its maximum
    missing = [p for p in _undocumented(defs, "#") if not p.endswith(("occurred_at", "claimed_at/anyOf/0"))]
    assert missing == []


def _max_id(c: str) -> str:
    return c * B.MAX_ID


def test_the_largest_betting_closed_is_under_the_record_limit() -> None:
    """The worst case the bounds allow: MAX_BETS_PER_ROUND lines, every id at its maximum length, ints at 20
    digits, the wager at its documented 32 characters of the code that JSON escapes the most (6 bytes each)."""
    line = BetLine(bet_id=_max_id("b"), seat=-(2**63), player_id=_max_id("p"), wager="\x01" * B.MAX_CODE,
                   amount_cents=2**64 - 1)
    closed = BettingClosed(round_id=_max_id("r"), bets=[line] * B.MAX_BETS_PER_ROUND)
    env = Envelope(event_id=event_id(T.WAGERING_EVENTS, _max_id("t"), 2**63 - 1), stream=T.WAGERING_EVENTS,
                   table_id=_max_id("t"), seq=2**63 - 1, causation_id=_max_id("c"), correlation_id=_max_id("k"),
                   occurred_at=AT, round_id=_max_id("r"), shoe_id=_max_id("s"), payload=closed)
    size = len(encode(env))
    assert 500_000 < size < B.RECORD_LIMIT_BYTES, size
    # and each bet the book holds came from a PlaceBet that was itself a small record
    bet = command(_max_id("t"), _max_id("c"), AT, PlaceBet(round_id=_max_id("r"), seat=-(2**63),
                                                           player_id=_max_id("p"), wager="\x01" * B.MAX_CODE,
                                                           amount_cents=2**64 - 1))
    assert decode_command(encode(bet)) == bet
    assert len(encode(bet)) < 2_000


@pytest.mark.parametrize(("field", "payload"), [
    ("player_id", PlaceBet(round_id="R1", seat=1, player_id="p" * 600_000, wager="banker", amount_cents=2500)),
    ("player_id", PlaceBet(round_id="R1", seat=1, player_id="p" * (B.MAX_ID + 1), wager="banker", amount_cents=2500)),
    ("player_id", PlaceBet(round_id="R1", seat=1, player_id="alice\tbob", wager="banker", amount_cents=2500)),
    ("player_id", PlaceBet(round_id="R1", seat=1, player_id="", wager="banker", amount_cents=2500)),
    ("wager", PlaceBet(round_id="R1", seat=1, player_id="p", wager="b" * 33, amount_cents=2500)),
    ("round_id", PlaceBet(round_id="R1\n", seat=1, player_id="p", wager="banker", amount_cents=2500)),
    ("order", LoadShoe(shoe_id="S", order=["As"] * 417)),
    ("burned", ReadBurn(shoe_id="S", exposed="Ks", burned=["2c"] * 11)),
])
def test_an_over_long_or_ill_formed_field_makes_the_command_undecodable(field: str, payload: Any) -> None:
    data = encode(command("T1", "c1", AT, payload, actor="terminal-1"))
    with pytest.raises(Undecodable, match=rf"\$\.payload\.{field}"):
        decode_command(data)


def test_an_over_long_envelope_id_is_undecodable() -> None:
    bet = PlaceBet(round_id="R1", seat=1, player_id="p", wager="banker", amount_cents=2500)
    with pytest.raises(Undecodable, match=r"\$\.command_id"):
        decode_command(encode(command("T1", "c" * 600_000, AT, bet)))
    with pytest.raises(Undecodable, match=r"\$\.table_id"):
        decode_command(encode(command("T" * 200, "c1", AT, bet)))


async def test_the_600kb_player_id_is_dead_lettered_and_the_table_carries_on() -> None:
    from baccarat.table import punto_banco
    from contracts.commands import CloseBetting, OpenRound, OpenTable, SeatPlayer
    from services.runtime.translate import table_spec
    from tests.services.helpers import floor_bus, payloads

    bus, _ = floor_bus()
    bus.send(T.DEALING_COMMANDS, command("T1", "open", AT, OpenTable(config=table_spec(punto_banco()))))
    bus.send(T.SHOE_COMMANDS, command("T1", "load", AT, LoadShoe(shoe_id="S", cut_at=100)))
    await bus.pump()
    bus.send(T.WAGERING_COMMANDS, command("T1", "seat", AT, SeatPlayer(seat=2, player_id="alice")))
    bus.send(T.DEALING_COMMANDS, command("T1", "round", AT, OpenRound(round_id="R1", shoe_id="S")))
    await bus.pump()
    for cid in ("huge-1", "huge-2"):
        bus.send(T.WAGERING_BETS, command("T1", cid, AT, PlaceBet(round_id="R1", seat=1, player_id="p" * 600_000,
                                                                    wager="banker", amount_cents=2500),
                                          actor="terminal-1"))
    bus.send(T.WAGERING_BETS, command("T1", "ok", AT, PlaceBet(round_id="R1", seat=2, player_id="alice",
                                                                 wager="banker", amount_cents=2500)))
    bus.send(T.WAGERING_COMMANDS, command("T1", "close", AT, CloseBetting(round_id="R1")))
    await bus.pump()
    letters = [decode_dead_letter(r.value) for r in bus.topics[T.dlq("wagering")]]
    assert len(letters) == 2
    assert all("Expected `str` of length <= 128 - at `$.payload.player_id`" in d.error for d in letters)
    assert [p.bet_id for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == ["ok"]
    (closed,) = payloads(bus, T.WAGERING_EVENTS, BettingClosed)
    assert [b.player_id for b in closed.bets] == ["alice"]
    assert max(len(r.value) for s in bus.topics.values() for r in s if s is not bus.topics[T.dlq("wagering")]
               ) < 700_000  # the commands themselves; every event is small


async def test_a_round_takes_at_most_max_bets_per_round() -> None:
    from baccarat.table import Limits, punto_banco
    from baccarat.wagers import Wager
    from contracts.commands import OpenRound, OpenTable, SeatPlayer
    from services.runtime.translate import table_spec
    from tests.services.helpers import floor_bus, payloads

    bus, _ = floor_bus()
    cfg = punto_banco(limits={Wager.BANKER: Limits(2_500, 10**12)})
    bus.send(T.DEALING_COMMANDS, command("T1", "open", AT, OpenTable(config=table_spec(cfg))))
    bus.send(T.SHOE_COMMANDS, command("T1", "load", AT, LoadShoe(shoe_id="S", cut_at=100)))
    await bus.pump()
    for seat in range(1, 15):  # one registered player a seat
        bus.send(T.WAGERING_COMMANDS, command("T1", f"seat-{seat}", AT, SeatPlayer(seat=seat, player_id=f"p{seat}")))
    bus.send(T.DEALING_COMMANDS, command("T1", "round", AT, OpenRound(round_id="R1", shoe_id="S")))
    await bus.pump()
    for n in range(B.MAX_BETS_PER_ROUND + 2):
        bus.send(T.WAGERING_BETS, command("T1", f"b{n}", AT, PlaceBet(round_id="R1", seat=1 + n % 14,
                                                                        player_id=f"p{1 + n % 14}", wager="banker",
                                                                        amount_cents=2500)))
    await bus.pump()
    assert len(payloads(bus, T.WAGERING_EVENTS, BetPlaced)) == B.MAX_BETS_PER_ROUND
    rej = payloads(bus, T.WAGERING_EVENTS, BetRejected)
    assert [(r.command_id, r.reason) for r in rej] == [(f"b{n}", "too_many_bets") for n in
                                                       (B.MAX_BETS_PER_ROUND, B.MAX_BETS_PER_ROUND + 1)]
