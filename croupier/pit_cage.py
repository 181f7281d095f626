"""The cage's pages' log on Kafka (:class:`croupier.cage_pages.CageLog`): the events they read, at
each request, and the desk's commands sent to ``cage.commands`` with the cage service's answer awaited.

:class:`KafkaCageLog` reads :data:`croupier.cage_pages.READS` through one :class:`services.rawlog.LogTail`:
the first request reads them from offset zero, every later one only what was appended since (a cursor per
topic-partition on a consumer kept open), so a request costs what the floor did since the last one, not the
whole log; what it returns is exactly what a whole read would (the same events, in the same order, up to at
least the end offsets as of the request). A statement is still re-derived from those events at each request,
as the audit does. Each command is sent with an idempotent producer; then the same tail is caught up until
an event caused by the command appears on ``cage.events`` (``causation_id`` = its ``command_id``), for at most
``answer_timeout_s``. Errors: ``ConnectionError`` (with the broker's words) when Kafka cannot be reached (the
tail then reads from zero at the next request).

On a secured broker the pit's principal reads the events (``cage.events`` among them) and the commands go to
``cage.commands`` as its one writer, the ``console`` principal (``writer``: the gateway's console settings,
``infra/kafka/acls.py``); a refused write is a ``ConnectionError`` naming it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from contracts import topics as T
from contracts.codecs import encode
from contracts.envelope import CommandEnvelope, Envelope
from croupier.cage_pages import READS
from croupier.replay_common import Unreachable
from services.projection.cage_desk import answer_of
from services.rawlog import LogTail
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
        self._tail = LogTail(settings, [settings.topic(s) for s in READS])

    async def events(self) -> list[Envelope]:
        from croupier.replay_read import _guarded

        async def run() -> list[Envelope]:
            await self._tail.catch_up()
            return self._tail.envelopes()

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
        """The ``cage.events`` answering ``cmd`` that the tail holds once caught up ([] while none:
        :func:`services.projection.cage_desk.answer_of`)."""
        from croupier.replay_read import _guarded

        await self._connection(_guarded(self._tail.catch_up(), self.settings, self.read_timeout_s))
        return answer_of(self._tail.envelopes(), cmd) or []

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
        """Close the producer (if one was started) and the tail's consumer."""
        await self._tail.stop()
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


__all__ = ["ANSWER_TIMEOUT_S", "KafkaCageLog"]
