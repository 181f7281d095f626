"""``bench/hops.py``: a round's hops taken from its records' timestamps, for the services' envelopes and the
raw loop's records (issue 25). No timing: hand-made records with known timestamps, exact hop values."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.hops import HOPS, raw_round_hops, service_round_hops
from bench.rawloop import Hop, _enc, close_route
from contracts.codecs import encode
from contracts.commands import CloseBetting
from contracts.envelope import CommandEnvelope


def event(round_id: str, kind: str) -> bytes:
    """An event envelope as far as the hops read it (round id, payload type)."""
    return json.dumps({"event_id": "e", "round_id": round_id, "payload": {"type": kind}}).encode()


def close(round_id: str) -> bytes:
    """A real "No more bets" command envelope (its round id is in the payload)."""
    return encode(CommandEnvelope(command_id="c-1", table_id="T1", issued_at=datetime(2026, 1, 1, tzinfo=UTC),
                                  actor="dealer-1", payload=CloseBetting(round_id=round_id)))


def test_service_hops_of_a_five_card_round_are_the_differences_of_its_records_timestamps():
    recs = [
        ("wagering.commands", 1000, close("r1")),
        ("wagering.events", 1040, event("r1", "betting_closed")),
        ("shoe.events", 1100, event("r1", "card_drawn")),  # cards 1-4, one batch
        ("shoe.events", 1100, event("r1", "card_drawn")),
        ("shoe.events", 1101, event("r1", "card_drawn")),
        ("shoe.events", 1101, event("r1", "card_drawn")),
        ("shoe.events", 1180, event("r1", "card_drawn")),  # card 5
        ("dealing.events", 1150, event("r1", "card_dealt")),
        ("dealing.events", 1210, event("r1", "round_resolved")),
        ("settlement.events", 1260, event("r1", "bet_settled")),
        ("settlement.events", 1262, event("r1", "round_settled")),
        ("wagering.events", 1300, event("r2", "betting_closed")),  # another round: not asked for
        ("shoe.events", 1300, b"not json"),  # a record the probe cannot read: passed over
    ]
    hops = service_round_hops(recs, {"r1"})
    assert list(hops) == ["r1"]
    assert hops["r1"] == pytest.approx(dict(zip(HOPS, (0.040, 0.060, 0.080, 0.030, 0.052, 0.262)))), hops


def test_a_service_round_missing_a_record_is_left_out():
    recs = [("wagering.commands", 1000, close("r1")), ("wagering.events", 1040, event("r1", "betting_closed"))]
    assert service_round_hops(recs, {"r1"}) == {}


@pytest.mark.parametrize(("cards", "stamps", "expected"), [
    # close, closed, draw, drawn, resolved, settled
    (4, (0, 10, 20, 35, 55, 60), (10, 25, 0, 20, 5, 60)),
    # close, closed, draw, drawn 1st, draw, drawn 5th, resolved, settled
    (5, (0, 10, 20, 35, 50, 70, 90, 100), (10, 25, 35, 20, 10, 100)),
])
def test_raw_hops_follow_the_route_still_to_go(cards, stamps, expected):
    route = close_route(cards)
    recs = []
    for i, ts in enumerate(stamps):  # the i-th record of the round has the route after its i+1 first stages
        topic = "floor" if i == 0 else route[i]
        recs.append((topic, 5000 + ts, _enc.encode(Hop("R000", "R000-p0", "settled", route[i + 1:]))))
    recs.append(("wagering", 4990, _enc.encode(Hop("R000", "R000-p0/bet0", "bet", ["sink"]))))  # a bet: not a hop
    recs.append(("wagering", 5000, _enc.encode(Hop("R001", "R001-p0", "settled", route[1:]))))  # unfinished round
    hops = raw_round_hops(recs, {"R000-p0", "R001-p0"})
    assert list(hops) == ["R000-p0"]
    assert hops["R000-p0"] == pytest.approx({h: v / 1000 for h, v in zip(HOPS, expected)})
