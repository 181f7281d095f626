"""The services' consumer loop waits for records on the consumer, never in a sleep (issue 25): FastStream's
batch loop slept ``batch_timeout_ms`` after every empty poll, so a record fetched meanwhile waited on every
hop of a round."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from faststream.kafka import KafkaBroker

from services.runtime.app import MAX_RECORDS, POLL_MS, build_app, poll_without_sleep
from services.runtime.settings import Settings
from tests.services.helpers import make_cores


class FakeConsumer:
    """``getmany`` as aiokafka's: returns what ``batches`` holds next (an empty dict: nothing came)."""

    def __init__(self, batches: list[dict[str, list[Any]]]):
        self.batches = batches
        self.calls: list[dict[str, int]] = []

    async def getmany(self, *, timeout_ms: int, max_records: int) -> dict[str, list[Any]]:
        self.calls.append({"timeout_ms": timeout_ms, "max_records": max_records})
        return self.batches.pop(0)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``anyio.sleep`` the loop asks for (returning at once)."""
    asked: list[float] = []

    async def fake_sleep(delay: float) -> None:
        asked.append(delay)

    monkeypatch.setattr(anyio, "sleep", fake_sleep)
    return asked


def batch_subscriber() -> Any:
    return KafkaBroker("127.0.0.1:1").subscriber("t", group_id="g", batch=True, batch_timeout_ms=5)


async def test_faststreams_own_loop_sleeps_after_an_empty_poll(sleeps: list[float]) -> None:
    """What the change removes (the check that the fixture sees the sleep): FastStream 0.7 sleeps 5 ms."""
    got = await batch_subscriber().get_msg(FakeConsumer([{}]))
    assert got == ()
    assert sleeps == [0.005]


async def test_an_empty_poll_waits_on_the_consumer_and_never_sleeps(sleeps: list[float]) -> None:
    sub = batch_subscriber()
    poll_without_sleep(sub)
    consumer = FakeConsumer([{}, {}])
    assert await sub.get_msg(consumer) == ()
    assert await sub.get_msg(consumer) == ()
    assert sleeps == []
    assert consumer.calls == [{"timeout_ms": POLL_MS, "max_records": MAX_RECORDS}] * 2


async def test_a_poll_hands_over_every_partitions_records_in_order(sleeps: list[float]) -> None:
    sub = batch_subscriber()
    poll_without_sleep(sub, poll_ms=250, max_records=7)
    consumer = FakeConsumer([{"a-0": [1, 2], "b-0": [3]}])
    assert await sub.get_msg(consumer) == (1, 2, 3)
    assert consumer.calls == [{"timeout_ms": 250, "max_records": 7}]
    assert sleeps == []


async def test_the_consume_loop_hands_a_record_over_without_a_sleep_between_polls(sleeps: list[float]) -> None:
    """FastStream's own loop (``_run_consume_loop``) with the replaced poll: two empty polls, then a batch
    is consumed; no sleep anywhere."""
    sub = batch_subscriber()
    poll_without_sleep(sub)
    consumer = FakeConsumer([{}, {}, {"t-0": ["record"]}])
    handed: list[Any] = []
    done = asyncio.Event()

    async def consume_one(msg: Any) -> None:
        handed.append(msg)
        done.set()
        sub.running = False

    sub.consume_one = consume_one
    sub.running = True
    await asyncio.wait_for(sub._run_consume_loop(consumer), 5)
    assert handed == [("record",)]
    assert sleeps == []
    assert len(consumer.calls) == 3


def test_every_service_app_polls_without_sleep() -> None:
    settings = Settings(bootstrap_servers="127.0.0.1:1", topic_prefix="poll.")
    for name, core in make_cores().items():
        _, broker, _ = build_app(core, settings)  # type: ignore[arg-type]
        (sub,) = broker.subscribers
        assert sub.get_msg.__qualname__.startswith("poll_without_sleep"), name


async def test_with_fetch_sessions_the_first_poll_makes_the_consumer_fetch_in_sessions(
        sleeps: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """``Settings.fetch_sessions`` (``CROUPIER_FETCH_SESSIONS``, default on): the consumer FastStream built is
    switched to incremental fetch sessions (KIP-227) at each poll, which is at once when it already is; off,
    it is left as aiokafka made it. (The switch itself is tested on the broker:
    ``tests/system/test_fetch_sessions_kafka.py``.)"""
    import services.runtime.app as app_module

    switched: list[Any] = []
    monkeypatch.setattr(app_module, "enable_fetch_sessions", switched.append)
    on, off = batch_subscriber(), batch_subscriber()
    poll_without_sleep(on, fetch_sessions=True)
    poll_without_sleep(off)
    consumer = FakeConsumer([{}, {}, {}])
    await on.get_msg(consumer)
    await on.get_msg(consumer)
    await off.get_msg(consumer)
    assert switched == [consumer, consumer]
    assert Settings.from_env({}).fetch_sessions is True
    assert Settings.from_env({"CROUPIER_FETCH_SESSIONS": "0"}).fetch_sessions is False
    built: list[bool] = []
    monkeypatch.setattr(app_module, "poll_without_sleep",
                        lambda sub, fetch_sessions=False, **_: built.append(fetch_sessions))
    core = next(iter(make_cores().values()))
    for flag in (True, False):
        build_app(core, Settings(bootstrap_servers="127.0.0.1:1", topic_prefix="poll.", fetch_sessions=flag))
    assert built == [True, False]


def test_a_subscriber_without_the_hook_is_refused() -> None:
    with pytest.raises(TypeError, match="get_msg"):
        poll_without_sleep(object())


async def test_the_handler_gets_the_records_and_faststream_parses_no_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """FastStream's default decoder json-parsed every record's body (none has a content-type header) before
    the handler, which reads the records themselves: a parse per record per hop that nothing read."""
    from faststream.kafka import TestKafkaBroker, parser

    from contracts import topics as T
    from contracts.codecs import encode
    from contracts.commands import LoadShoe
    from services.runtime.core import command
    from tests.services.test_faststream_handlers import AT, Capture

    parsed: list[Any] = []
    default = parser.decode_message
    monkeypatch.setattr(parser, "decode_message", lambda msg: parsed.append(msg) or default(msg))
    cap = Capture()
    _, broker, _ = build_app(make_cores()["shoe"], Settings(bootstrap_servers="127.0.0.1:1"), publisher=cap)  # type: ignore[arg-type]
    async with TestKafkaBroker(broker) as br:
        await br.publish(encode(command("T1", "c1", AT, LoadShoe(shoe_id="S", cut_at=40))), T.SHOE_COMMANDS, key=b"T1")
    assert [type(p).__name__ for p in cap.events] == ["ShoeOrderEncrypted", "ShoeLoaded", "ShoeCut", "ShoeBurned"]
    assert parsed == []
