"""The client's half of an incremental fetch session (KIP-227, :mod:`services.runtime.fetch_sessions`): what each
request sends and forgets, the epochs, the resets; and the requests as they go on the wire (Fetch v7, v9, v11).

The property test keeps a model of the broker's half (Kafka's ``FetchSession.scala``: a full request replaces
the session's partitions, an incremental one updates those it sends and drops those it forgets) and checks that,
whatever the consumer wants from one fetch to the next and whichever requests fail, the broker holds exactly
the partitions and offsets of the last fetch it accepted."""

from __future__ import annotations

import types
from typing import Any

import pytest
from aiokafka.errors import IncompatibleBrokerVersion
from aiokafka.protocol.fetch import FetchRequest_v6, FetchRequest_v7, FetchRequest_v9, FetchRequest_v11
from aiokafka.structs import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from services.runtime.fetch_sessions import (
    FETCH_SESSION_ID_NOT_FOUND,
    INVALID_FETCH_SESSION_EPOCH,
    MAX_EPOCH,
    FetchSession,
    SessionFetch,
    SessionFetchRequest,
    next_epoch,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_the_first_request_is_full_and_opens_a_session() -> None:
    s = FetchSession()
    sent = s.next({A0: 5, A1: 7})
    assert (sent.session_id, sent.epoch, sent.full) == (0, 0, True)
    assert sent.send == {A0: 5, A1: 7} and sent.forget == []
    assert s.answered(sent, 0, 4242)
    assert (s.session_id, s.epoch) == (4242, 1)


def test_an_incremental_request_sends_only_changed_or_new_partitions_and_forgets_the_rest() -> None:
    s = FetchSession()
    s.answered(s.next({A0: 5, A1: 7}), 0, 9)
    sent = s.next({A0: 5, A1: 8, B0: 0})  # A0 unchanged, A1 moved on, B0 new
    assert (sent.session_id, sent.epoch, sent.full) == (9, 1, False)
    assert sent.send == {A1: 8, B0: 0} and sent.forget == []
    assert s.answered(sent, 0, 9)
    sent = s.next({A1: 8})  # A0 and B0 no longer wanted (records buffered, paused, led elsewhere)
    assert sent.send == {} and sorted(sent.forget) == [A0, B0] and sent.epoch == 2
    assert sent.offsets == {A1: 8}  # what each response partition answers
    assert (s.full_requests, s.incremental_requests, s.partitions_sent) == (1, 2, 4)


def test_epochs_count_up_and_wrap_to_one() -> None:
    assert next_epoch(1) == 2 and next_epoch(MAX_EPOCH - 1) == MAX_EPOCH and next_epoch(MAX_EPOCH) == 1
    s = FetchSession(session_id=3, epoch=MAX_EPOCH, partitions={A0: 1})
    sent = s.next({A0: 2})
    assert sent.epoch == MAX_EPOCH and s.answered(sent, 0, 3) and s.epoch == 1


@pytest.mark.parametrize("error, session_after", [(FETCH_SESSION_ID_NOT_FOUND, 0), (INVALID_FETCH_SESSION_EPOCH, 9)])
def test_a_session_error_makes_the_next_request_full(error: int, session_after: int) -> None:
    s = FetchSession()
    s.answered(s.next({A0: 5}), 0, 9)
    sent = s.next({A0: 6})
    assert not s.answered(sent, error, 0)  # its partitions are not read
    assert (s.session_id, s.epoch, s.resets) == (session_after, 0, 1)
    again = s.next({A0: 6})
    # not found: open a new one; a bad epoch: close session 9 and open a new one (id 9, epoch 0)
    assert again.full and again.session_id == session_after and again.send == {A0: 6}


def test_a_failed_or_cancelled_fetch_closes_the_session_and_sends_everything() -> None:
    s = FetchSession()
    s.answered(s.next({A0: 5, A1: 1}), 0, 9)
    s.next({A0: 6, A1: 1})
    s.failed()
    again = s.next({A0: 6, A1: 1})
    assert (again.session_id, again.epoch, again.send) == (9, 0, {A0: 6, A1: 1})


def test_a_broker_that_keeps_no_session_gets_full_requests() -> None:
    s = FetchSession()
    assert s.answered(s.next({A0: 5}), 0, 0)  # full, but no session made (its cache is full)
    sent = s.next({A0: 5})
    assert sent.full and sent.session_id == 0 and sent.send == {A0: 5}


class BrokerSessions:
    """The broker's half, from ``FetchSession.scala``: sessions by id, each ``{tp: fetch offset}`` and its
    expected epoch; a full request (epoch 0) replaces the session (closing a named one), an incremental one is
    refused unless its id and epoch match."""

    def __init__(self) -> None:
        self.sessions: dict[int, tuple[int, dict[TopicPartition, int]]] = {}
        self.next_id = 100

    def handle(self, r: SessionFetch) -> tuple[int, int]:
        if r.epoch == 0:
            self.sessions.pop(r.session_id, None)
            self.next_id += 1
            self.sessions[self.next_id] = (1, dict(r.send))
            return 0, self.next_id
        if r.session_id not in self.sessions:
            return FETCH_SESSION_ID_NOT_FOUND, 0
        epoch, held = self.sessions[r.session_id]
        if epoch != r.epoch:
            return INVALID_FETCH_SESSION_EPOCH, 0
        held.update(r.send)
        for tp in r.forget:
            held.pop(tp, None)
        self.sessions[r.session_id] = (next_epoch(epoch), held)
        return 0, r.session_id


TPS = [TopicPartition(t, p) for t in "ab" for p in range(4)]
wanted_st = st.dictionaries(st.sampled_from(TPS), st.integers(0, 5), min_size=1)
# what happens to each request: answered, lost on the way (never reached the broker), its answer lost
# (the broker took it), or the broker evicted the session before it came
outcome_st = st.sampled_from(["ok", "ok", "ok", "lost", "answer_lost", "evicted"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(wanted_st, outcome_st), min_size=1, max_size=30))
def test_the_broker_holds_what_the_last_accepted_fetch_wanted(steps: list) -> None:
    broker, client = BrokerSessions(), FetchSession()
    for wanted, outcome in steps:
        sent = client.next(dict(wanted))
        if outcome == "lost":
            client.failed()
            continue
        if outcome == "evicted":
            broker.sessions.pop(sent.session_id, None)
        error, session_id = broker.handle(sent)
        if outcome == "answer_lost":
            client.failed()
            continue
        if client.answered(sent, error, session_id):
            assert broker.sessions[session_id][1] == wanted  # the response answers exactly these, at these offsets
            assert sent.offsets == wanted
            if not sent.full:
                assert set(sent.send) | set(sent.forget) <= set(TPS)
        else:
            assert error in (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) and outcome == "evicted"


def _request(fetch: SessionFetch) -> SessionFetchRequest:
    return SessionFetchRequest(fetch, max_wait_ms=25, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                               partition_max_bytes=1 << 16, rack_id="r1")


def test_the_request_on_the_wire_carries_the_session_the_changed_partitions_and_the_forgotten() -> None:
    fetch = SessionFetch(session_id=9, epoch=4, send={A1: 8}, forget=[B0], offsets={A0: 5, A1: 8})
    for cls in (FetchRequest_v7, FetchRequest_v9, FetchRequest_v11):
        struct = _request(fetch).build(cls)
        decoded = cls.decode(struct.encode()).to_object()
        assert (decoded["session_id"], decoded["session_epoch"], decoded["isolation_level"]) == (9, 4, 1)
        assert [t["topic"] for t in decoded["topics"]] == ["a"]
        (part,) = decoded["topics"][0]["partitions"]
        assert (part["partition"], part["fetch_offset"], part["max_bytes"]) == (1, 8, 1 << 16)
        if cls.API_VERSION >= 9:
            assert part["current_leader_epoch"] == -1
        assert decoded["forgotten_topics_data"] == [{"topic": "b", "partitions": [0]}]
        if cls.API_VERSION >= 11:
            assert decoded["rack_id"] == "r1"
    # what aiokafka reads back: every partition the session holds, at the offset its answer is for
    assert sorted(_request(fetch).topics) == [("a", [(0, 5, 1 << 16), (1, 8, 1 << 16)])]


def test_a_broker_without_fetch_v7_gets_a_clear_error() -> None:
    fetch = SessionFetch(session_id=0, epoch=0, send={A0: 1}, forget=[], offsets={A0: 1})
    with pytest.raises(IncompatibleBrokerVersion, match="Fetch v7"):
        _request(fetch).build(FetchRequest_v6)


async def test_a_consumer_not_started_is_refused() -> None:
    from aiokafka import AIOKafkaConsumer

    from services.runtime.fetch_sessions import enable_fetch_sessions

    with pytest.raises(TypeError, match="start the consumer first"):
        enable_fetch_sessions(AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1"))


async def test_a_broker_without_fetch_v7_turns_sessions_off_with_a_warning_not_a_silent_retry_loop(
        caplog: pytest.LogCaptureFixture) -> None:
    """The request is built when the connection sends it: a broker offering Fetch v6 at most raises there. The
    fetcher says so once and fetches as aiokafka does from then on (a full fetch reads the same records),
    instead of retrying the same error ten times a second while its consumer reads nothing."""
    import logging

    from aiokafka.consumer.fetcher import Fetcher
    from aiokafka.protocol.fetch import FetchRequest

    from services.runtime.fetch_sessions import SessionFetcher, enable_fetch_sessions

    class OldBroker:
        async def send(self, node_id: int, request: Any) -> Any:
            return request.prepare({1: (0, 6)})  # the connection's version pick: v6 at most

    fetcher = SessionFetcher.__new__(SessionFetcher)  # the parts this path reads
    fetcher._client, fetcher._retry_backoff, fetcher.sessions = OldBroker(), 0.1, {}
    fetcher._max_partition_fetch_bytes = 1 << 16
    request = _request(fetcher.session(1).next({A0: 3}))
    with caplog.at_level(logging.WARNING, logger="services.runtime.fetch_sessions"):
        assert await fetcher._proc_fetch_request(object(), 1, request) is False
    assert type(fetcher) is Fetcher
    assert "Fetch v7" in caplog.text and "fetches in full" in caplog.text
    consumer = types.SimpleNamespace(_fetcher=fetcher)  # the service's next poll asks again: it stays off
    assert enable_fetch_sessions(consumer) is fetcher and type(fetcher) is Fetcher
    plain = FetchRequest(25, 1, 1 << 20, 1, [("a", [(0, 3, 1 << 16)])])
    assert plain.prepare({1: (0, 6)}).API_VERSION == 6  # what it sends from now on
