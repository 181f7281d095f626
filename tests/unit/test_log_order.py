"""A task's records of several topics are taken in the log's time order, each topic's own order kept."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from services.runtime.tasks import in_log_order


@dataclass(frozen=True)
class Rec:
    topic: str
    offset: int
    timestamp: int


def test_a_bet_appended_before_no_more_bets_is_taken_before_it():
    # the batch as the consumer hands it: the console's topic first, then the bettors'
    batch = [Rec("wagering.commands", 7, 1_000_300),  # "No more bets" at .300
             Rec("wagering.bets", 40, 1_000_100), Rec("wagering.bets", 41, 1_000_250),
             Rec("wagering.bets", 42, 1_000_400)]  # the last one is late
    order = [(r.topic, r.offset) for r in in_log_order(batch)]
    assert order == [("wagering.bets", 40), ("wagering.bets", 41), ("wagering.commands", 7),
                     ("wagering.bets", 42)]


def test_a_bet_at_the_millisecond_of_no_more_bets_is_taken_before_it():
    # "No more bets" holds a bet logged at its very millisecond (WageringCore._close: only later ones are
    # late), so whatever order the fetch gave the topics, the bet is decided first
    bets = [Rec("wagering.bets", 40, 1_000_300), Rec("wagering.bets", 41, 1_000_301)]
    close = [Rec("wagering.commands", 7, 1_000_300)]
    for batch in (close + bets, bets + close):
        order = [(r.topic, r.offset) for r in in_log_order(batch, first={"wagering.bets"})]
        assert order == [("wagering.bets", 40), ("wagering.commands", 7), ("wagering.bets", 41)]
    # without a preference a tie keeps the batch's order of topics
    assert [r.topic for r in in_log_order(close + bets)][:1] == ["wagering.commands"]


def test_the_wagering_service_takes_bets_first_at_one_log_time():
    from contracts import topics as T
    from services.wagering.core import WageringCore

    assert WageringCore.same_time_first == (T.WAGERING_BETS,)
    assert set(WageringCore.same_time_first) <= set(WageringCore.command_streams)


def test_one_topic_is_left_as_it_is():
    batch = [Rec("dealing.events", 1, 50), Rec("dealing.events", 2, 10)]  # producer clocks may go back
    assert in_log_order(batch) == batch


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 1_000)), max_size=40))
def test_each_topics_offset_order_is_kept_and_nothing_is_lost(items):
    batch = [Rec(t, i, ts) for i, (t, ts) in enumerate(items)]
    out = in_log_order(batch)
    assert sorted(out, key=lambda r: r.offset) == batch
    for topic in "abc":
        assert [r.offset for r in out if r.topic == topic] == [r.offset for r in batch if r.topic == topic]
