"""Client logs (issue 11): repeated connection errors are the first line at once and one JSON line with their
count per interval, retriable
broker answers are ``info``, and a record keeps the structlog context it was logged in."""

from __future__ import annotations

import io
import json
import logging
import threading

import pytest
import structlog
from aiokafka import errors as E

from services.runtime.client_logs import ClientLogHandler, sensible_level
from services.runtime.repeats import RepeatLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _client_logger(name: str, handler: logging.Handler) -> logging.Logger:
    """A logger outside the logging tree (no root handlers, no levels set by other tests)."""
    logger = logging.Logger(name)  # noqa: LOG001 - on purpose: not in the tree
    logger.addHandler(handler)
    return logger


def _lines(buf: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_n_repeats_within_an_interval_are_one_repeat_with_count_n():
    clock = FakeClock()
    limiter: RepeatLimiter[str] = RepeatLimiter(10.0, clock)
    assert limiter.offer("k", "first") is True
    for i in range(999):
        clock.now += 0.005
        assert limiter.offer("k", f"again {i}") is False
    assert limiter.due() == [] and len(limiter) == 1  # 5 s in: still counting
    assert limiter.next_due_in() == pytest.approx(5.005)
    clock.now = 110.0
    [r] = limiter.due()
    assert (r.key, r.item, r.count, r.first_at, r.last_at) == ("k", "first", 1000, 100.0, pytest.approx(104.995))
    assert limiter.due() == [] and limiter.next_due_in() is None
    assert limiter.offer("k", "next interval") is True  # a new interval opens with the next one


def test_keys_are_counted_apart_and_drain_hands_back_all():
    clock = FakeClock()
    limiter: RepeatLimiter[str] = RepeatLimiter(10.0, clock)
    for _ in range(3):
        limiter.offer("a", "a")
    clock.now += 4
    for _ in range(2):
        limiter.offer("b", "b")
    clock.now += 6  # a's interval is over, b's is not
    assert [(r.key, r.count) for r in limiter.due()] == [("a", 3)]
    assert [(r.key, r.count) for r in limiter.drain()] == [("b", 2)]
    assert len(limiter) == 0
    with pytest.raises(ValueError, match="interval_s must be positive"):
        RepeatLimiter(0)


def test_thousands_of_connection_errors_are_the_first_at_once_and_one_line_with_their_count():
    clock, buf = FakeClock(), io.StringIO()
    handler = ClientLogHandler(buf, interval_s=10.0, clock=clock, background=False,
                               defaults=lambda: {"instance": "dealing-2"})
    log = _client_logger("aiokafka.client", handler)
    log.error("Unable connect to node with id %s: %s", 1, OSError(111, "Connect call failed"))
    [first] = _lines(buf)  # the first is written when it happens, not held
    assert first["event"] == "Unable connect to node with id 1: [Errno 111] Connect call failed"
    assert (first["level"], first["logger"], first["instance"], "repeated" in first) == (
        "error", "aiokafka.client", "dealing-2", False)
    for _ in range(2499):
        clock.now += 0.001
        log.error("Unable connect to node with id %s: %s", 1, OSError(111, "Connect call failed"))
    handler.flush()
    assert len(_lines(buf)) == 1  # the repeats are counted until the interval is over
    clock.now = 110.0
    handler.flush()
    first, summary = _lines(buf)
    assert summary["event"] == first["event"] and summary["level"] == "error"
    assert (summary["repeated"], summary["interval_s"], summary["first_timestamp"]) == (2499, 10.0, first["timestamp"])
    assert summary["timestamp"].endswith("Z") and summary["timestamp"] > first["timestamp"]
    clock.now += 1
    log.error("Unable connect to node with id %s: %s", 1, OSError(111, "Connect call failed"))
    handler.close()  # a new interval: its first line at once, and no summary (nothing repeated it)
    lines = _lines(buf)
    assert len(lines) == 3 and "repeated" not in lines[-1] and lines[-1]["level"] == "error"


def test_retriable_broker_answers_are_info_and_connection_failures_keep_their_level():
    def record(msg: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka.consumer.fetcher"):
        return logging.LogRecord(name, level, __file__, 1, msg, args, None)

    not_leader = record("Failed fetch offsets from %s: %s", 1, E.NotLeaderForPartitionError())
    coordinator = record("Group Coordinator Request failed: %s", E.GroupCoordinatorNotAvailableError())
    assert sensible_level(not_leader) == sensible_level(coordinator) == logging.INFO
    assert sensible_level(record("Unable connect to node with id %s: %s", 1, E.KafkaConnectionError())) == logging.ERROR
    assert sensible_level(record("Failed fetch messages from %s: %s", 1, E.RequestTimedOutError())) == logging.ERROR
    assert sensible_level(record("Got error produce response: %s", E.ProducerFenced())) == logging.ERROR
    assert sensible_level(record("LeaveGroup request failed: %s", "not an error")) == logging.ERROR
    # only aiokafka's retries are aiokafka's business
    assert sensible_level(record("x %s", E.NotLeaderForPartitionError(), name="myapp")) == logging.ERROR

    clock, buf = FakeClock(), io.StringIO()
    handler = ClientLogHandler(buf, clock=clock, background=False)
    _client_logger("aiokafka.consumer.fetcher", handler).error(
        "Failed fetch offsets from %s: %s", 1, E.NotLeaderForPartitionError("TopicPartition(topic='t', partition=6)"))
    handler.close()
    [line] = _lines(buf)
    assert line["level"] == "info" and "NotLeaderForPartitionError" in line["event"]


def test_a_record_keeps_the_context_it_was_logged_in_and_its_traceback():
    buf = io.StringIO()
    handler = ClientLogHandler(buf, interval_s=0.05, defaults=lambda: {"instance": "i-7", "service": "none"})
    log = _client_logger("faststream", handler)
    bound = structlog.contextvars.bind_contextvars(service="settlement", table_id="BAC-01", round_id="r-9")
    try:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            log.exception("handler crashed")
    finally:
        structlog.contextvars.reset_contextvars(**bound)
    log.warning("outside any service")
    done = threading.Event()
    threading.Timer(2.0, done.set).start()
    while not done.is_set() and len(buf.getvalue().splitlines()) < 2:  # the background writer's interval
        done.wait(0.01)
    handler.close()
    first, second = _lines(buf)
    assert (first["service"], first["instance"], first["table_id"], first["round_id"]) == (
        "settlement", "i-7", "BAC-01", "r-9")
    assert first["level"] == "error" and "RuntimeError: boom" in first["exception"]
    assert (second["service"], second["level"], "table_id" in second) == ("none", "warning", False)


def test_faststreams_own_plain_text_handler_gives_way_to_the_json_one():
    import faststream  # noqa: F401 - on import it gives its logger a plain-text stderr handler, propagate off

    from services.runtime.logging import STDERR, configure, drain

    fs = logging.getLogger("faststream")
    buf = io.StringIO()
    try:
        configure(file=buf)
        assert fs.handlers == [] and fs.propagate and fs.level == logging.WARNING
        fs.info("FastStream app starting...")  # below a warning: client chatter
        fs.error("FastStream app failed: %s", "KafkaConnectionError")
        drain()
    finally:
        configure(file=STDERR)
    [line] = _lines(buf)
    assert (line["event"], line["level"], line["logger"]) == (
        "FastStream app failed: KafkaConnectionError", "error", "faststream")


def test_two_different_exceptions_under_one_message_are_both_written_with_their_tracebacks():
    clock, buf = FakeClock(), io.StringIO()
    handler = ClientLogHandler(buf, interval_s=10.0, clock=clock, background=False)
    log = _client_logger("uvicorn.error", handler)
    for exc in (KeyError("table"), ValueError("bad cursor"), KeyError("table")):
        try:
            raise exc
        except Exception:
            log.exception("Exception in ASGI application")
    handler.close()
    lines = _lines(buf)
    assert [("KeyError" in x.get("exception", ""), "ValueError" in x.get("exception", "")) for x in lines[:2]] == [
        (True, False), (False, True)]
    assert len(lines) == 3 and lines[2]["repeated"] == 1 and "KeyError" not in lines[2].get("exception", "")
