"""A co-partitioning, sticky partition assignor: a table's partition number of every topic goes to one member.

Every Croupier topic is keyed by table id and has the same partition count, so a table's commands, its
inputs and the service's own events all sit at the same partition number *p*. A service joins several
topics by table, so *p* of every subscribed topic must belong to one member (a **task**, in Kafka Streams'
words). aiokafka's default round-robin assignor spreads them over members (with three members a dealing
instance held ``dealing.commands``-p while another held ``shoe.events``-p and nothing was dealt).

:class:`TableTaskAssignor` assigns partition *numbers*, not topic partitions:

* every member gets all subscribed topics' partition *p* for each number *p* it is given;
* the numbers are balanced: each member gets ``n // m`` or ``n // m + 1`` of the ``n`` numbers;
* it is **sticky**: each member reports the numbers it holds in its subscription's user data, and keeps
  them as far as balance allows, so adding or removing an instance moves only the tasks that must move
  (aiokafka rebalances eagerly, so every rebalance revokes everything; stickiness keeps the restores few).

A number claimed by two members (a paused member that came back after its tasks were handed out) goes to
the lexicographically first claimant that still has room: claims are hints, never trusted for safety
(fencing is the transactional producer's job, see :mod:`services.runtime.record_collector`; and a member
dropped from the group restores whatever it gets back, see ``TaskManager._held_throughout``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from aiokafka.partitioner import murmur2

from contracts import topics as T


def partition_of(table_id: str, partitions: int) -> int:
    """The partition of a table's records: murmur2 of the UTF-8 key, as every Kafka client's default
    partitioner (Java's and aiokafka's) computes it."""
    return (murmur2(T.key(table_id)) & 0x7FFFFFFF) % partitions


def assign_numbers(numbers: Iterable[int], members: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
    """Balance partition ``numbers`` over ``members`` ({member id: numbers it holds now}), sticky.

    Returns {member id: sorted numbers}; every number goes to exactly one member and every member gets
    ``len(numbers) // len(members)`` or one more. Deterministic for the same input.
    """
    nums = sorted(set(numbers))
    ids = sorted(members)
    if not ids:
        return {}
    base, extra = divmod(len(nums), len(ids))
    # members that already hold more tasks keep the larger quotas, so fewer tasks move
    held = {m: [p for p in sorted(set(members[m])) if p in set(nums)] for m in ids}
    order = sorted(ids, key=lambda m: (-len(held[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(order)}
    out: dict[str, list[int]] = {m: [] for m in ids}
    taken: set[int] = set()
    for m in ids:  # keep what each member holds, up to its quota; a double claim goes to the first
        for p in held[m]:
            if p not in taken and len(out[m]) < quota[m]:
                out[m].append(p)
                taken.add(p)
    free = [p for p in nums if p not in taken]
    for m in order:  # hand out the rest to whoever is under quota
        while len(out[m]) < quota[m] and free:
            out[m].append(free.pop(0))
    return {m: sorted(v) for m, v in out.items()}


def _decode_claims(user_data: bytes) -> list[int]:
    try:
        data = json.loads(user_data.decode("utf-8")) if user_data else {}
        return [int(p) for p in data.get("held", [])]
    except (ValueError, AttributeError, TypeError):
        return []  # another client's or garbled user data: no claim


class TableTaskAssignor(AbstractPartitionAssignor):
    """Assign whole tasks (one partition number across every subscribed topic) to members, sticky.

    aiokafka calls the assignor's methods on the class, so each consumer gets its own subclass
    (:meth:`for_member`) whose class attribute ``held`` is the numbers it holds now (its stickiness claim).
    """

    name = "croupier-table-task"
    version = 0
    held: tuple[int, ...] = ()

    @classmethod
    def for_member(cls) -> type["TableTaskAssignor"]:
        """A fresh subclass for one consumer (its own ``held`` claim)."""
        return type("TableTaskAssignorForMember", (cls,), {"held": ()})

    @classmethod
    def assign(cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata],
               ) -> dict[str, ConsumerProtocolMemberAssignment]:
        topics = sorted({t for meta in members.values() for t in meta.subscription})
        counts = {t: cluster.partitions_for_topic(t) or set() for t in topics}
        numbers = sorted({p for ps in counts.values() for p in ps})
        plan = assign_numbers(numbers, {m: _decode_claims(meta.user_data) for m, meta in members.items()})
        out: dict[str, ConsumerProtocolMemberAssignment] = {}
        for member, meta in members.items():
            mine = set(plan.get(member, []))
            by_topic = [(t, sorted(p for p in counts[t] if p in mine)) for t in sorted(meta.subscription)
                        if t in counts]
            out[member] = ConsumerProtocolMemberAssignment(cls.version, [(t, ps) for t, ps in by_topic if ps],
                                                           b"")
        return out

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        claim = json.dumps({"held": list(cls.held)}).encode("utf-8")
        return ConsumerProtocolMemberMetadata(cls.version, list(topics), claim)

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        cls.held = tuple(sorted({p for _, ps in assignment.assignment for p in ps}))
