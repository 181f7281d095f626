"""The stdlib logging of the libraries under a service (aiokafka, FastStream, uvicorn, asyncio, Python's
warnings) as the same structlog JSON lines as the services' own.

:func:`services.runtime.logging.configure` puts one :class:`ClientLogHandler` on the root logger. Each record
that reaches it

1. gets a sensible level (:func:`sensible_level`): a retriable broker answer that the client retries by itself
   (``NotLeaderForPartitionError`` while a new topic's leaders are elected, ``GroupCoordinatorNotAvailableError``
   while a broker starts, ...) is ``info``, not aiokafka's ``error``; a connection failure keeps its level;
2. keeps the structlog context of where it was logged (``service``, ``instance``, ``table_id``, ``round_id``:
   contextvars), since it is rendered later, on another thread;
3. is folded with its repeats (:class:`~services.runtime.repeats.RepeatLimiter`), per logger, level, message
   (aiokafka's: its template), service and exception class: the first of an interval is written at once (an operator sees a lone error when it
   happens, and a process killed right after has still said it); the others of that interval are one more
   line when it ends, the first's message with ``repeated`` (how many came after it), ``interval_s`` and
   ``timestamp``/``first_timestamp`` (the last's and the first's time). A background thread writes those
   summaries, :meth:`ClientLogHandler.close` what is left. So 2,500 connection errors in 10 s are two lines;
4. is rendered by ``structlog.stdlib.ProcessorFormatter`` as one JSON object: ``event`` (the message),
   ``level``, ``logger``, ``timestamp`` (when it was logged, UTC), ``exception`` (a traceback) and the context,
   written through structlog's ``PrintLogger`` to the services' stream, under the same lock as their lines.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import structlog

from services.runtime.repeats import INTERVAL_S, Repeat, RepeatLimiter

#: the loggers whose retriable errors are retried by the client itself
CLIENT_LOGGERS = ("aiokafka",)


def _errors_of(record: logging.LogRecord) -> list[type[BaseException]]:
    """The exception classes a record names: its arguments that are exceptions (or classes of them) and
    its ``exc_info``."""
    args = record.args if isinstance(record.args, tuple) else (record.args,) if record.args else ()
    out = [a if isinstance(a, type) else type(a) for a in args
           if isinstance(a, BaseException) or (isinstance(a, type) and issubclass(a, BaseException))]
    if record.exc_info and record.exc_info[0] is not None:
        out.append(record.exc_info[0])
    return out


def sensible_level(record: logging.LogRecord) -> int:
    """The level a record is written at: ``INFO`` for an aiokafka warning or error whose every named error
    is a retriable broker answer (aiokafka's ``retriable``) other than a failed or timed-out connection
    (``KafkaConnectionError``, ``NodeNotReadyError``, ``RequestTimedOutError``: the broker may be down, which
    an operator must see); the record's own level otherwise."""
    if record.levelno <= logging.INFO or not record.name.startswith(CLIENT_LOGGERS):
        return record.levelno
    errors = _errors_of(record)
    if not errors:
        return record.levelno
    from aiokafka import errors as E

    unreachable = (E.KafkaConnectionError, E.NodeNotReadyError, E.RequestTimedOutError)
    for cls in errors:
        if not issubclass(cls, E.KafkaError) or not getattr(cls, "retriable", False) or issubclass(cls, unreachable):
            return record.levelno
    return logging.INFO


def _iso(ts: float) -> str:
    """A POSIX time as structlog's ISO UTC timestamps are written (``2026-12-01T13:52:01.673999Z``)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ClientLogHandler(logging.Handler):
    """Renders stdlib records as JSON lines on ``stream``, repeats folded per ``interval_s`` (see the module).

    ``defaults()``: fields every line carries unless its context has them (the process's ``instance``);
    ``clock``: monotonic seconds for the intervals; ``background``: write each line when its interval ends
    from a thread of its own (else only :meth:`flush` and :meth:`close` write: tests).
    """

    def __init__(self, stream: TextIO, *, level: int = logging.NOTSET, interval_s: float = INTERVAL_S,
                 defaults: Callable[[], Mapping[str, Any]] = dict, clock: Callable[[], float] = time.monotonic,
                 background: bool = True):
        super().__init__(level)
        self._out = structlog.PrintLogger(file=stream)
        self._defaults = defaults
        self.limiter: RepeatLimiter[logging.LogRecord] = RepeatLimiter(interval_s, clock)
        self.background = background
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[self._from_record, structlog.processors.add_log_level],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
        ))

    def _from_record(self, _logger: Any, _name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        """Processor: the context, logger, time and repeat count the record carries."""
        record: logging.LogRecord = event_dict["_record"]
        for source in (getattr(record, "croupier_context", None) or {}, self._defaults()):
            for k, v in source.items():
                event_dict.setdefault(k, v)
        event_dict["logger"] = record.name
        event_dict["timestamp"] = _iso(record.created)
        repeated = getattr(record, "croupier_repeated", 0)
        if repeated:
            event_dict["repeated"] = repeated
            event_dict["interval_s"] = self.limiter.interval_s
            event_dict["first_timestamp"] = event_dict["timestamp"]
            event_dict["timestamp"] = _iso(getattr(record, "croupier_last", record.created))
        return event_dict

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record`` at once if it is the first of its kind in an interval (or the handler is closed:
        a client's complaint at interpreter exit), else count it for the interval's summary line."""
        try:
            level = sensible_level(record)
            if level != record.levelno:
                record.levelno, record.levelname = level, logging.getLevelName(level)
            if record.levelno < self.level:
                return
            context = structlog.contextvars.get_contextvars()
            record.croupier_context = context
            # aiokafka's repeats differ in their arguments (node ids, addresses): folded by template; anything
            # else only when the whole message is the same; never two different exceptions (each traceback shown)
            text = str(record.msg) if record.name.startswith(CLIENT_LOGGERS) else record.getMessage()
            exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] is not None else ""
            key = (record.name, record.levelno, text, context.get("service"), exc)
            with self._cond:
                first = self._closed or self.limiter.offer(key, record)
                if not self._closed:
                    if self.background and self._thread is None:
                        self._thread = threading.Thread(target=self._run, name="client-log-repeats", daemon=True)
                        self._thread.start()
                    self._cond.notify()
            if first:
                self._line(record)
        except Exception:  # noqa: BLE001 - a log line must never break the caller
            self.handleError(record)

    def _run(self) -> None:
        """The background writer: each held line when its interval ends."""
        with self._cond:
            while not self._closed:
                wait = self.limiter.next_due_in()
                if wait is None or wait > 0:
                    self._cond.wait(wait)
                    continue
                due = self.limiter.due()
                self._cond.release()
                try:
                    self._write(due)
                finally:
                    self._cond.acquire()

    def _line(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # a closed stream at shutdown: nowhere left to say it
            self._out.msg(self.format(record))

    def _write(self, repeats: list[Repeat[logging.LogRecord]]) -> None:
        """The summary line of each interval whose first line had repeats (the first is already written)."""
        for r in repeats:
            if r.count > 1:
                summary = logging.makeLogRecord(r.item.__dict__)
                summary.croupier_repeated = r.count - 1
                summary.croupier_last = r.item.created + (r.last_at - r.first_at)
                summary.exc_info, summary.exc_text = None, None  # the first line carried the traceback
                self._line(summary)

    def flush(self) -> None:
        """Write the summaries of the intervals that are over."""
        with self._cond:
            due = self.limiter.due()
        self._write(due)

    def drain(self) -> None:
        """Write every summary now, its interval over or not (before a log file is shown or closed)."""
        with self._cond:
            held = self.limiter.drain()
        self._write(held)

    def close(self) -> None:
        """Write every summary, stop the background writer; later records are written at once."""
        with self._cond:
            self._closed = True
            held = self.limiter.drain()
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)
        self._write(held)
        super().close()
