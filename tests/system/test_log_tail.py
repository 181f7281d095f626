"""The incremental reader of the cage's pages (:class:`services.rawlog.LogTail`) on a real broker: what it holds
after each catch-up is exactly a whole read of the same topics (the same events, the same order), it reads
only what was appended since, a topic created later is picked up from its start, an undecodable record is
skipped and counted, and after :meth:`stop` it reads from zero again."""

from __future__ import annotations

import uuid

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from contracts import topics as T
from contracts.cage import RecordOpener, RequestCredit, RequestFill
from contracts.codecs import encode
from croupier.log import read_events
from services.rawlog import LogTail
from services.runtime.kafka import ensure_topics
from tests.cagedesk import Desk, chips
from tests.system.conftest import broker_settings


def _events(table: str, n: int) -> list:  # type: ignore[type-arg]
    """``n`` + 1 real cage events of ``table``: an opener, then fill requests / credit lines."""
    d = Desk(table)
    d.send(RecordOpener(shift_id=f"{table}-s1", gaming_day="2026-01-01", pit="p", chips=chips((2_500, 40)),
                        total_cents=100_000, supervisor_id="sup-1"))
    for i in range(n):
        if i % 2:
            d.send(RequestFill(fill_id=f"f{i}", chips=chips((2_500, 4)), total_cents=10_000, role="supervisor"),
                   actor="sup-1")
        else:
            d.send(RequestCredit(credit_id=f"c{i}", chips=chips((100, i + 1)), total_cents=100 * (i + 1),
                                 role="supervisor"), actor="sup-1")  # every event at the table's key
    assert len(d.log) == n + 1
    return d.log


async def test_the_tail_reads_only_what_is_new_and_equals_a_whole_read(kafka_bootstrap: str) -> None:
    settings = broker_settings(kafka_bootstrap, topic_prefix=f"tail{uuid.uuid4().hex[:8]}.")
    streams = (T.WAGERING_EVENTS, T.CAGE_EVENTS)
    await ensure_topics(settings, (T.CAGE_EVENTS,))  # wagering.events does not exist yet
    producer = AIOKafkaProducer(**settings.client_options())
    await producer.start()
    tail = LogTail(settings, [settings.topic(s) for s in streams])

    async def put(stream: str, envs: list) -> None:  # type: ignore[type-arg]
        for env in envs:
            await producer.send(settings.topic(stream), encode(env), key=T.key(env.table_id))
        await producer.flush()

    async def whole() -> list:  # type: ignore[type-arg]
        return [r.env for r in await read_events(settings, None, streams)]

    try:
        a, b = _events("TA", 6), _events("TB", 3)
        await put(T.CAGE_EVENTS, a[:4] + b)
        first = await tail.catch_up()
        assert len(first) == 8 and tail.held == 8
        assert tail.envelopes() == await whole()
        assert await tail.catch_up() == []  # nothing appended: nothing read
        await put(T.CAGE_EVENTS, a[4:])
        await producer.send_and_wait(settings.topic(T.CAGE_EVENTS), b"not json", key=T.key("TA"))
        new = await tail.catch_up()
        assert new == a[4:] and tail.skipped == 1  # only the appended ones; the undecodable record counted
        assert tail.envelopes() == await whole()
        # a topic created after the first read is read from its start at the next call
        await ensure_topics(settings, (T.WAGERING_EVENTS,))
        w = [env for env in _events("TC", 2)]
        await put(T.WAGERING_EVENTS, w)
        assert await tail.catch_up() == w
        got = tail.envelopes()
        assert got == await whole() and got[:3] == w  # wagering.events first, as the streams are given
        await tail.stop()
        assert tail.held == 0
        assert len(await tail.catch_up()) == len(got) and tail.envelopes() == got  # from zero again
    finally:
        await tail.stop()
        await producer.stop()
        admin = AIOKafkaAdminClient(**settings.client_options())
        await admin.start()
        try:
            await admin.delete_topics([settings.topic(s) for s in streams])
        finally:
            await admin.close()
