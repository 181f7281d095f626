"""The partition group: which of a task's records are taken next, across its topics, and when a command waits.

Kafka Streams' ``PartitionGroup`` picks a task's next record by timestamp across its input partitions, and
``max.task.idle.ms`` (KIP-695) makes a task wait for a partition with no buffered data. Here a task's records
of one batch are interleaved by the log's time (:func:`in_log_order`), and a command of a topic a core names
in ``ServiceCore.catch_up`` is decided only once the task has read the other topic up to its end as it was
when the command was read (:meth:`PartitionGroup.caught_up`): exact, by one ListOffsets request, instead of a
timer.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition

if TYPE_CHECKING:
    from services.runtime.task_manager import TaskManager

#: the longest a command waits for the task to read what another topic's log held when the command was read
#: (``ServiceCore.catch_up``; s): past it the command is decided anyway, with a warning (that topic's
#: leader is away, say: its records cannot be read, and the table must not wait for them for ever)
CATCH_UP_MAX_S = 2.0


def in_log_order(records: list[Any], first: Collection[str] = ()) -> list[Any]:
    """One task's records of several topics, each topic's in offset order, interleaved by record timestamp;
    of records of two topics at one timestamp (milliseconds), those of the topics in ``first`` (full names)
    go first, the others in the batch's order.

    A service reads more than one command topic (the wagering service: the console's ``wagering.commands``
    and the bettors' ``wagering.bets``), and a batch holds them topic by topic. Interleaving by timestamp
    (the broker's append time on command topics) decides a bet appended before the dealer's "No more bets"
    before the call, as the log's time says it came, when both are in one batch. Across batches a record
    of one topic can be read before an earlier one of the other (it came in an earlier fetch): a core
    that must not decide so names the pair in ``catch_up`` and the task waits for the other topic
    (:meth:`PartitionGroup.caught_up`); the wagering service's "No more bets" also returns a bet the log
    holds after the call, read before it. Each topic's own order is kept whatever its timestamps
    (``heapq.merge`` takes every input in order), so an event stream is never reordered.
    """
    by_topic: dict[str, list[Any]] = {}
    for r in records:
        by_topic.setdefault(r.topic, []).append(r)
    if len(by_topic) < 2:
        return records
    return list(heapq.merge(*by_topic.values(), key=lambda r: (r.timestamp, r.topic not in first)))


def position(consumer: Any, tp: TopicPartition) -> int | None:
    """The consumer's position on ``tp`` (past transaction markers, unlike the offsets of the records
    handled) without a request, or None when it has none yet. aiokafka's public ``position()`` is a
    coroutine that waits for one; a scrape must not wait, so this reads the subscription state it reads."""
    try:
        state = consumer._subscription.subscription.assignment.state_value(tp)
    except Exception:  # noqa: BLE001 - not assigned (any more), or another aiokafka
        return None
    if state is None or not getattr(state, "has_valid_position", False):
        return None
    return int(state.position)


def end(consumer: Any, tp: TopicPartition) -> int | None:
    """The last stable offset of ``tp`` as last fetched (the high watermark when the broker gave none), or
    None when not known (never fetched, or no longer assigned)."""
    try:
        last = consumer.last_stable_offset(tp)
        if last is None or last < 0:
            last = consumer.highwater(tp)
    except Exception:  # noqa: BLE001 - revoked meanwhile
        return None
    return None if last is None else int(last)


class PartitionGroup:
    """The catch-up waits of one service instance's tasks (``tasks``: the :class:`TaskManager` whose
    consumer, state and positions it reads).

    ``catch_up``: full command topic -> the full topics read up to their end before deciding its commands
    (from ``ServiceCore.catch_up``); ``same_time_first``: full topics taken first at one log time."""

    def __init__(self, tasks: TaskManager):
        self.tasks = tasks
        settings, core = tasks.settings, tasks.host.core
        self.same_time_first = frozenset(settings.topic(t) for t in core.same_time_first)
        self.catch_up: dict[str, tuple[str, ...]] = {}
        for cmd_topic, first_topic in core.catch_up:
            full = settings.topic(cmd_topic)
            self.catch_up[full] = (*self.catch_up.get(full, ()), settings.topic(first_topic))
        #: task p -> {(topic, offset) of a command waiting: (ends to reach, monotonic s when first read)}
        self.waits: dict[int, dict[tuple[str, int], tuple[dict[TopicPartition, int], float]]] = {}
        #: batches cut before a command because another topic was not read far enough (it is read again)
        self.held = 0

    def order(self, by_task: dict[int, list[Any]]) -> dict[int, list[Any]]:
        """Each task's records in log order (:func:`in_log_order`)."""
        return {p: in_log_order(recs, self.same_time_first) for p, recs in by_task.items()}

    def _commands(self, ordered: dict[int, list[Any]]) -> tuple[dict[int, list[tuple[int, Any]]],
                                                                 set[TopicPartition]]:
        """The unhandled commands that may wait, by task (index in the task's records, record), and the
        topic partitions whose ends must be asked (for the commands read for the first time)."""
        m = self.tasks
        firsts: dict[int, list[tuple[int, Any]]] = {}
        ask: set[TopicPartition] = set()
        for p, recs in ordered.items():
            if m.state.get(p) != "ready":
                continue
            positions = m.positions.get(p, {})
            waits = self.waits.setdefault(p, {})
            for i, r in enumerate(recs):
                if r.topic in self.catch_up and r.offset >= positions.get(TopicPartition(r.topic, p), 0):
                    firsts.setdefault(p, []).append((i, r))
                    if (r.topic, r.offset) not in waits:
                        ask.update(TopicPartition(w, p) for w in self.catch_up[r.topic])
        return firsts, ask

    async def caught_up(self, ordered: dict[int, list[Any]]) -> dict[int, list[Any]]:
        """Each task's records of a batch (in log order), cut before the first command that must wait for
        another topic (``ServiceCore.catch_up``): a command of topic C is decided only once the task has read
        topic W (same partition) up to W's end as it was when the command was first read (one ListOffsets
        request per batch, for the commands read for the first time; ``read_committed``: the last stable
        offset). A cut task's consumer seeks back to the first record not taken of each topic, so the
        command and what follows it are read again with W's missing records, and decided in log order.

        Why: the wagering service reads the dealer's "No more bets" on ``wagering.commands`` and the bets on
        ``wagering.bets``; on a cluster the two partitions are led by different brokers and come in
        different fetches, so the call could be read before a bet the log holds before it, and that bet in
        time was refused ``betting_closed``. A bet not yet acknowledged to its bettor when the call is read
        is not waited for.

        A command waits at most :data:`CATCH_UP_MAX_S` from its first read, then is decided anyway (logged
        ``catch_up_timeout``); when the ends cannot be asked (the broker away, or no answer within
        :data:`CATCH_UP_MAX_S`: the host's lock is held meanwhile, so every table of the instance waits) it
        is decided at once, logged ``catch_up_unknown``. Tasks not ready, and records already handled, are
        left to the stream task."""
        m = self.tasks
        c = m.consumer
        if c is None:
            return ordered
        firsts, ask = self._commands(ordered)
        if not firsts:
            return ordered
        ends: dict[TopicPartition, int] = {}
        if ask:
            try:  # bounded: the host's lock is held, so every table of this instance waits for the answer
                ends = await asyncio.wait_for(c.end_offsets(sorted(ask)), CATCH_UP_MAX_S)
            except Exception as e:  # noqa: BLE001 - broker away or silent: decide now, not stall the tables
                m.log.warning("catch_up_unknown", error=f"{type(e).__name__}: {e}")
                return ordered
        now = time.monotonic()
        out = dict(ordered)
        for p, cmds in firsts.items():
            waits = self.waits[p]
            for i, r in cmds:
                key = (r.topic, r.offset)
                need, since = waits.setdefault(key, ({tp: ends[tp] for tp in (TopicPartition(w, p) for w in
                                                      self.catch_up[r.topic]) if tp in ends}, now))
                behind = {}
                for tp, target in need.items():
                    pos = position(c, tp)
                    if pos is not None and pos < target:
                        behind[tp.topic] = target - pos
                if behind and now - since < CATCH_UP_MAX_S:
                    recs = ordered[p]
                    first_offset: dict[str, int] = {}
                    for rest in recs[i:]:  # each topic's records in offset order: its first is its lowest
                        first_offset.setdefault(rest.topic, rest.offset)
                    for topic, offset in first_offset.items():
                        c.seek(TopicPartition(topic, p), offset)
                    out[p] = recs[:i]
                    self.held += 1
                    m.log.debug("catch_up_wait", task=p, topic=r.topic, offset=r.offset, behind=behind)
                    break
                if behind:
                    m.log.warning("catch_up_timeout", task=p, topic=r.topic, offset=r.offset, behind=behind,
                                  waited_s=round(now - since, 3))
                del waits[key]
        return {p: recs for p, recs in out.items() if recs}
