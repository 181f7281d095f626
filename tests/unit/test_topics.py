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


class DeletingAdmin:
    """An admin for :func:`delete_prefix`: two groups without members; DeleteGroups answers each group's codes
    in turn (then 0), as a loaded broker does right after the members' LeaveGroup."""

    def __init__(self, answers):
        self.answers = {g: list(codes) for g, codes in answers.items()}
        self.asked: list[str] = []
        self.topics = ["f1.shoe.commands", "other.shoe.commands"]

    async def list_topics(self):
        return list(self.topics)

    async def list_consumer_groups(self):
        return [(g, "consumer") for g in self.answers]

    async def describe_consumer_groups(self, groups):
        return [SimpleNamespace(groups=[(0, g, "Empty", "consumer", "", []) for g in groups])]

    async def delete_topics(self, topics):
        self.topics = [t for t in self.topics if t not in topics]
        return SimpleNamespace(topic_error_codes=[(t, 0) for t in topics])

    async def find_coordinator(self, group):
        return 1

    async def _send_request_to_node(self, node, request):
        group = request._group_names[0]
        self.asked.append(group)
        codes = self.answers[group]
        return SimpleNamespace(results=[(group, codes.pop(0) if codes else 0)])


def _deleting(monkeypatch, admin):
    import contextlib

    from croupier import topics

    @contextlib.asynccontextmanager
    async def fake_client(settings, request_timeout_ms=15_000):
        yield admin

    monkeypatch.setattr(topics, "admin_client", fake_client)
    monkeypatch.setattr(topics, "_GROUP_RETRY_S", 2.0)
    from services.runtime.settings import Settings

    return topics.delete_prefix(Settings(), "f1.", wait_s=0)


def test_a_group_just_left_is_deleted_once_the_broker_has_emptied_it(monkeypatch):
    """NON_EMPTY_GROUP (68) and COORDINATOR_LOAD_IN_PROGRESS (14) just after the members left: asked again, and
    the groups are deleted, no note (a loaded CI broker deleted none of the four groups of a floor just stopped)."""
    admin = DeletingAdmin({"croupier.f1.dealing": [68, 68], "croupier.f1.shoe": [14]})
    out = asyncio.run(_deleting(monkeypatch, admin))
    assert (out.topics, out.groups, out.notes) == (
        ["f1.shoe.commands"], ["croupier.f1.dealing", "croupier.f1.shoe"], [])
    assert admin.asked == ["croupier.f1.dealing"] * 3 + ["croupier.f1.shoe"] * 2


def test_a_group_that_stays_non_empty_is_a_note_after_the_retries(monkeypatch):
    """Past the retry window the answer is a note (the group expires on its own), never an endless wait."""
    admin = DeletingAdmin({"croupier.f1.dealing": [68] * 1000})
    out = asyncio.run(_deleting(monkeypatch, admin))
    assert (out.groups, out.notes) == ([], ["group croupier.f1.dealing: NonEmptyGroup"])
    assert 3 <= len(admin.asked) <= 12  # 2 s of asking every 0.25 s
