"""croupier topics (croupier/topics.py): what a delete refuses before it touches anything."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from croupier.topics import BadPrefix, _active, check_prefix


class FakeAdmin:
    """describe_consumer_groups answering (error_code, group, state, protocol_type, protocol, members)."""

    def __init__(self, rows):
        self.rows = rows

    async def describe_consumer_groups(self, groups):
        return [SimpleNamespace(groups=[r for r in self.rows if r[1] in groups])]


def test_a_group_the_broker_cannot_describe_counts_as_in_use():
    rows = [(0, "croupier.f1.dealing", "Stable", "consumer", "range", [("m1",)]),
            (0, "croupier.f1.shoe", "Empty", "consumer", "", []),
            (14, "croupier.f1.wagering", "", "", "", []),  # coordinator loading: unknown, not idle
            (30, "croupier.f1.settlement", "", "", "", [])]  # not authorised to describe it
    groups = [r[1] for r in rows]
    assert asyncio.run(_active(FakeAdmin(rows), groups)) == [
        "croupier.f1.dealing", "croupier.f1.settlement", "croupier.f1.wagering"]
    assert asyncio.run(_active(FakeAdmin(rows), [])) == []


@pytest.mark.parametrize("prefix", ["dealing.", "dealing", "shoe.snap", "projection.", "w", "settlement.dlq"])
def test_a_prefix_that_names_an_unprefixed_floors_topics_is_refused(prefix):
    with pytest.raises(BadPrefix, match="runs without a prefix"):
        check_prefix(prefix)


@pytest.mark.parametrize("prefix", ["floor1.", "bench-1234.", "t0a1b2."])
def test_a_floor_prefix_is_accepted(prefix):
    assert check_prefix(prefix) == prefix
