"""Reading a table's log back from Kafka for :mod:`croupier.replay` (re-exported there): every event of a table
or of the floor, the tables the log knows, and one clean error (:class:`croupier.replay.Unreachable`) when the
broker cannot be reached."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

from contracts import topics as T
from croupier.replay_common import _ids_hint, unreachable

_R = TypeVar("_R")


@contextlib.contextmanager
def _quiet_aiokafka() -> Iterator[None]:
    """Silence aiokafka's own logging (connection retries) while the caller reports one clean line."""
    log = logging.getLogger("aiokafka")
    saved = (log.level, log.propagate, list(log.handlers))
    log.setLevel(logging.CRITICAL + 1)
    log.propagate = False
    log.addHandler(logging.NullHandler())
    try:
        yield
    finally:
        log.setLevel(saved[0])
        log.propagate = saved[1]
        log.handlers[:] = saved[2]


async def _existing_topics(settings: Any) -> set[str]:
    from croupier.log import visible_topics

    return await visible_topics(settings, request_timeout_ms=10_000)


async def _guarded(coro: Awaitable[_R], settings: Any, timeout_s: float) -> _R:
    from aiokafka.errors import KafkaError

    with _quiet_aiokafka():
        try:
            return await asyncio.wait_for(coro, timeout_s)
        except (KafkaError, OSError, TimeoutError) as e:
            detail = "timed out" if isinstance(e, TimeoutError) else (str(e) or type(e).__name__)
            raise await unreachable(settings, detail) from None


async def read_table(settings: Any, table_id: str, *, timeout_s: float = 300.0) -> list[Any]:
    """Every event of ``table_id`` on the four event streams and, when their topics exist, the projection's
    ledger and alerts and the cage's events, as :class:`croupier.log.LogRecord`. Reads only topics that exist
    (a broker that auto-creates topics would otherwise create them under a mistyped prefix). Raises
    :class:`Unreachable`."""
    from croupier.log import CAGE_STREAMS, EVENT_STREAMS, PROJECTION_STREAMS, read_events

    async def run() -> list[Any]:
        existing = await _existing_topics(settings)
        streams = tuple(s for s in EVENT_STREAMS + PROJECTION_STREAMS + CAGE_STREAMS
                        if settings.topic(s) in existing)
        if not any(s in EVENT_STREAMS for s in streams):
            return []
        return await read_events(settings, table_id, streams)

    return await _guarded(run(), settings, timeout_s)


async def read_floor(settings: Any, *, timeout_s: float = 600.0) -> list[Any]:
    """Every event of every table, as :func:`read_table` reads one (the same streams, every partition of
    each, read once), in per-stream order. Raises :class:`Unreachable`."""
    from croupier.log import CAGE_STREAMS, EVENT_STREAMS, PROJECTION_STREAMS, read_events

    async def run() -> list[Any]:
        existing = await _existing_topics(settings)
        streams = tuple(s for s in EVENT_STREAMS + PROJECTION_STREAMS + CAGE_STREAMS
                        if settings.topic(s) in existing)
        if not any(s in EVENT_STREAMS for s in streams):
            return []
        return await read_events(settings, None, streams)

    return await _guarded(run(), settings, timeout_s)


async def known_tables(settings: Any, *, timeout_s: float = 120.0) -> list[str]:
    """Tables with a dealing event (for the "unknown table" message); empty when the topic is missing."""
    from croupier.log import tables_in_log

    async def run() -> list[str]:
        if settings.topic(T.DEALING_EVENTS) not in await _existing_topics(settings):
            return []
        return await tables_in_log(settings)

    return await _guarded(run(), settings, timeout_s)


def unknown_table_message(table_id: str, tables: list[str], prefix: str) -> str:
    where = f" under topic prefix {prefix!r}" if prefix else ""
    if not tables:
        return f"no events for table {table_id!r}{where}: the log holds no table"
    return f"no events for table {table_id!r}{where}: the log has " + _ids_hint("table", tables, table_id)
