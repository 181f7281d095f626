"""The co-partitioning sticky assignor: partition p of every topic to one member, balanced, sticky."""

from __future__ import annotations

import json

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples

from services.runtime.assignor import TableTaskAssignor, assign_numbers

TOPICS = ["dealing.commands", "shoe.events", "wagering.events"]


class Cluster:
    """The one method of aiokafka's ClusterMetadata the assignor uses."""

    def __init__(self, partitions: int):
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.partitions))


def _assign(members: dict[str, list[int]], partitions: int = 5) -> dict[str, dict[str, list[int]]]:
    metas = {m: ConsumerProtocolMemberMetadata(0, TOPICS, json.dumps({"held": held}).encode())
             for m, held in members.items()}
    out = TableTaskAssignor.assign(Cluster(partitions), metas)
    return {m: {t: list(ps) for t, ps in a.assignment} for m, a in out.items()}


@pytest.mark.parametrize("members", [1, 2, 3, 4, 5, 6])
def test_every_member_gets_whole_tasks_and_every_partition_has_one_owner(members: int):
    plan = _assign({f"m{i}": [] for i in range(members)})
    owners: dict[tuple[str, int], str] = {}
    for m, by_topic in plan.items():
        numbers = {p for ps in by_topic.values() for p in ps}
        for t in TOPICS:  # co-partitioned: the member holds p of every topic for each of its numbers
            assert set(by_topic.get(t, [])) == numbers
        for t, ps in by_topic.items():
            for p in ps:
                assert (t, p) not in owners
                owners[(t, p)] = m
    assert len(owners) == len(TOPICS) * 5  # every partition of every topic assigned
    sizes = sorted(len({p for ps in by.values() for p in ps}) for by in plan.values())
    assert sizes == sorted([5 // members + (1 if i < 5 % members else 0) for i in range(members)])


def test_six_members_for_five_partitions_leave_one_idle():
    plan = _assign({f"m{i}": [] for i in range(6)})
    assert sorted(len(by.get(TOPICS[0], [])) for by in plan.values()) == [0, 1, 1, 1, 1, 1]


def test_a_joining_member_takes_tasks_without_moving_the_others_needlessly():
    before = {"a": [0, 1, 2], "b": [3, 4]}
    after = assign_numbers(range(5), {**before, "c": []})
    assert sorted(len(v) for v in after.values()) == [1, 2, 2]
    moved = sum(1 for m in before for p in before[m] if p not in after[m])
    assert moved == 1  # only what c must get moves
    assert set(after["b"]) == {3, 4}


def test_a_double_claim_goes_to_one_member():
    after = assign_numbers(range(4), {"a": [0, 1], "b": [1, 2, 3]})
    assert sorted(after["a"] + after["b"]) == [0, 1, 2, 3]


def test_claims_of_numbers_that_do_not_exist_are_ignored_and_garbled_user_data_is_no_claim():
    metas = {"a": ConsumerProtocolMemberMetadata(0, TOPICS, b"\xff garbage"),
             "b": ConsumerProtocolMemberMetadata(0, TOPICS, json.dumps({"held": [7, 8]}).encode())}
    out = TableTaskAssignor.assign(Cluster(2), metas)
    got = {m: sorted({p for _, ps in a.assignment for p in ps}) for m, a in out.items()}
    assert got == {"a": [0], "b": [1]}


def test_each_consumer_claims_what_it_was_assigned():
    mine = TableTaskAssignor.for_member()
    other = TableTaskAssignor.for_member()
    plan = TableTaskAssignor.assign(Cluster(3), {"x": mine.metadata(TOPICS), "y": other.metadata(TOPICS)})
    mine.on_assignment(plan["x"])
    assert json.loads(mine.metadata(TOPICS).user_data) == {"held": sorted({p for _, ps in plan["x"].assignment
                                                                           for p in ps})}
    assert json.loads(other.metadata(TOPICS).user_data) == {"held": []}  # its own class, untouched


@settings(max_examples=examples(300), deadline=None)
@given(n=st.integers(0, 40), claims=st.dictionaries(st.sampled_from("abcdefgh"),
                                                    st.lists(st.integers(0, 45), max_size=12), min_size=1))
def test_balanced_complete_and_sticky_for_any_claims(n: int, claims: dict[str, list[int]]):
    out = assign_numbers(range(n), claims)
    flat = [p for v in out.values() for p in v]
    assert sorted(flat) == list(range(n))  # each number exactly once
    sizes = [len(v) for v in out.values()]
    assert max(sizes) - min(sizes) <= 1
    # a member under its quota never loses a number it alone claimed
    owners: dict[int, list[str]] = {}
    for m, ps in claims.items():
        for p in set(ps):
            owners.setdefault(p, []).append(m)
    quota_max = -(-n // len(claims)) if claims else 0
    for p, ms in owners.items():
        if p < n and len(ms) == 1 and len(set(x for x in claims[ms[0]] if x < n)) <= n // len(claims):
            assert p in out[ms[0]], (p, ms, out)
    assert all(len(v) <= quota_max for v in out.values())
