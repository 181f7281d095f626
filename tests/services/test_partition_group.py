"""The partition group (``services/runtime/partition_group.py``): which topics a command waits for, the
consumer's position and end read without a request, and a batch cut before a command whose other topic is
behind (the fuller cases are ``test_catch_up.py``'s)."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from contracts import topics as T
from services.runtime.partition_group import PartitionGroup, end, position
from tests.services.runtime_fakes import Rec, RecordingConsumer, manager

CMDS, BETS = f"t.{T.WAGERING_COMMANDS}", f"t.{T.WAGERING_BETS}"


def test_the_wagering_services_commands_wait_for_its_bets_and_a_bet_goes_first_at_one_millisecond():
    tasks, _ = manager()
    group = PartitionGroup(tasks)
    assert group.catch_up == {CMDS: (BETS,)}
    assert group.same_time_first == frozenset({BETS})
    call, bet = Rec(CMDS, 0, 1, timestamp=5), Rec(BETS, 0, 9, timestamp=5)
    assert group.order({0: [call, bet]}) == {0: [bet, call]}


def test_position_and_end_as_last_fetched():
    a, b = TopicPartition(BETS, 0), TopicPartition(BETS, 1)
    c = RecordingConsumer(positions={a: 4}, stable={a: 9, b: -1}, high={b: 7})
    assert position(c, a) == 4 and position(c, b) is None
    assert end(c, a) == 9
    assert end(c, b) == 7  # no last stable offset from the broker: the high watermark
    assert end(c, TopicPartition(BETS, 2)) is None  # not assigned
    assert position(object(), a) is None


class Asking(RecordingConsumer):
    def __init__(self, ends: dict[TopicPartition, int], **kw):
        super().__init__(**kw)
        self.ends = ends

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}


@pytest.mark.asyncio
async def test_a_call_read_before_the_bets_logged_before_it_is_cut_and_read_again():
    tasks, _ = manager()
    cmd, bets = TopicPartition(CMDS, 0), TopicPartition(BETS, 0)
    tasks.consumer = Asking({bets: 12}, positions={cmd: 8, bets: 10})  # type: ignore[assignment]
    bet, call, later = Rec(BETS, 0, 9, timestamp=1), Rec(CMDS, 0, 7, timestamp=2), Rec(BETS, 0, 10, timestamp=3)
    out = await tasks.group.caught_up({0: [bet, call, later]})
    assert out == {0: [bet]}  # up to the call; the call and what follows are read again
    assert tasks.consumer.seeks == [(cmd, 7), (bets, 10)]  # type: ignore[attr-defined]
    assert tasks.group.held == 1 and (CMDS, 7) in tasks.group.waits[0]
    tasks.consumer.pos[bets] = 12  # type: ignore[attr-defined]  # the bets are read now
    assert await tasks.group.caught_up({0: [call]}) == {0: [call]}
    assert tasks.group.waits[0] == {} and tasks.group.held == 1


@pytest.mark.asyncio
async def test_no_consumer_or_a_task_not_ready_is_left_as_read():
    tasks, _ = manager()
    batch = {0: [Rec(CMDS, 0, 1)]}
    assert await tasks.group.caught_up(batch) == batch
    tasks.consumer = Asking({}, positions={})  # type: ignore[assignment]
    tasks.state[0] = "restoring"
    assert await tasks.group.caught_up(batch) == batch and tasks.group.held == 0
