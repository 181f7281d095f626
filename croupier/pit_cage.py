"""The cage's pages' log on Kafka (:class:`croupier.cage_pages.CageLog`): the events they read, at
each request, and the desk's commands sent to ``cage.commands`` with the cage service's answer awaited.

:class:`KafkaCageLog` reads :data:`croupier.cage_pages.READS` whole on every request (the books
are looked at, not watched: a statement is re-derived from the log each time, as the audit does), and
sends each command with an idempotent producer, then reads the table's partition of ``cage.events`` until
an event caused by the command appears (``causation_id`` = its ``command_id``), for at most
``answer_timeout_s``. Errors: ``ConnectionError`` (with the broker's words) when Kafka cannot be reached.

On a secured broker the pit's principal reads the events (``cage.events`` among them) and the commands go to
``cage.commands`` as its one writer, the ``console`` principal (``writer``: the gateway's console settings,
``infra/kafka/acls.py``); a refused write is a ``ConnectionError`` naming it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_event, encode
from contracts.envelope import CommandEnvelope, Envelope
from croupier.cage_pages import READS
from croupier.replay_common import Unreachable
from services.runtime.settings import Settings

#: how long the desk waits for the cage service's answer to a command (s)
ANSWER_TIMEOUT_S = 10.0
#: how long one read of the log may take (s)
READ_TIMEOUT_S = 30.0
POLL_S = 0.2


class KafkaCageLog:
    """See the module docstring. ``settings``: the broker and prefix (the pit's own principal, which reads);
    ``writer``: the settings the commands are sent with (the console principal's; default ``settings``)."""

    def __init__(self, settings: Settings, answer_timeout_s: float = ANSWER_TIMEOUT_S,
                 read_timeout_s: float = READ_TIMEOUT_S, writer: Settings | None = None):
        self.settings = settings
        self.writer = writer or settings
        self.answer_timeout_s = answer_timeout_s
        self.read_timeout_s = read_timeout_s
        self._producer: Any = None
        self._lock = asyncio.Lock()

    async def events(self) -> list[Envelope]:
        from croupier.log import read_events
        from croupier.replay_read import _existing_topics, _guarded

        async def run() -> list[Envelope]:
            existing = await _existing_topics(self.settings)
            streams = tuple(s for s in READS if self.settings.topic(s) in existing)
            return [r.env for r in await read_events(self.settings, None, streams)]

        return await self._connection(_guarded(run(), self.settings, self.read_timeout_s))

    async def send(self, cmd: CommandEnvelope) -> list[Envelope]:
        from aiokafka import AIOKafkaProducer

        async with self._lock:
            if self._producer is None:
                p = AIOKafkaProducer(**self.writer.client_options(), enable_idempotence=True, linger_ms=0)
                await self._connection(p.start())
                self._producer = p
        await self._connection(asyncio.wait_for(self._producer.send_and_wait(
            self.settings.topic(T.CAGE_COMMANDS), encode(cmd), key=T.key(cmd.table_id)), self.answer_timeout_s))
        loop = asyncio.get_running_loop()
        until = loop.time() + self.answer_timeout_s
        while True:
            got = await self._caused(cmd)
            if got or loop.time() >= until:
                return got
            await asyncio.sleep(POLL_S)

    async def _caused(self, cmd: CommandEnvelope) -> list[Envelope]:
        from services.rawlog import read_topic as read_log

        out = []
        recs = await self._connection(read_log(self.settings, self.settings.topic(T.CAGE_EVENTS),
                                               table_id=cmd.table_id))
        for rec in recs:
            if cmd.command_id.encode() not in rec.value:
                continue  # only the command's answer is decoded
            try:
                env = decode_event(rec.value)
            except (UnknownMessageType, Undecodable):
                continue
            if env.causation_id == cmd.command_id and env.table_id == cmd.table_id:
                out.append(env)
        return out

    async def _connection(self, aw: Any) -> Any:
        from aiokafka.errors import KafkaError

        try:
            return await aw
        except KafkaError as e:
            raise ConnectionError(f"Kafka: {type(e).__name__}: {e}") from None
        except TimeoutError:
            raise ConnectionError("Kafka did not answer in time") from None
        except Unreachable as e:
            raise ConnectionError(str(e)) from None

    async def stop(self) -> None:
        """Close the producer (if one was started)."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


__all__ = ["ANSWER_TIMEOUT_S", "KafkaCageLog"]
