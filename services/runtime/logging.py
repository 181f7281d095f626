"""structlog JSON logs: one line per event, with ``service``, ``instance``, ``table_id``, ``round_id`` and
``event_id`` where known.

Every line a process of ours writes is one JSON object: the services' own (structlog) and those of the
libraries under them (aiokafka, FastStream, uvicorn, asyncio, Python's warnings: stdlib logging, rendered by
:class:`services.runtime.client_logs.ClientLogHandler`, their repeats folded into one line with a ``count``
per interval). Fields come, most specific first, from the call, the logger (``get_logger(service)``), the
structlog contextvars (a service's ``service`` and ``instance`` bound where it starts, :func:`bind_service`;
a record's ``table_id`` and ``round_id`` while it is handled) and the process (:func:`bind_process`).
"""

from __future__ import annotations

import contextvars
import logging
import sys
from typing import Any, TextIO

import structlog

from services.runtime.client_logs import ClientLogHandler
from services.runtime.repeats import INTERVAL_S

_configured = False
_handler: ClientLogHandler | None = None
#: fields of the whole process (:func:`bind_process`)
_process: dict[str, Any] = {}
#: client loggers that say nothing an operator needs below a warning
CLIENT_LOGGERS = ("aiokafka", "faststream")


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written (test runners swap it; a captured stream closes)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


STDERR: TextIO = _CurrentStderr()  # type: ignore[assignment]


def bind_process(**fields: Any) -> None:
    """Fields every line of this process carries unless the line, its logger or its context has its own
    (``instance``: one label per process)."""
    _process.update({k: v for k, v in fields.items() if v is not None})


def _process_fields(_logger: Any, _name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    for k, v in _process.items():
        event_dict.setdefault(k, v)
    return event_dict


def bind_service(service: str, instance: str) -> contextvars.Context:
    """A copy of the current context with ``service`` and ``instance`` bound, to run a service's start in:
    every task it creates (its consumer's, its producers', its handlers') logs under that name, aiokafka's
    lines included, while other services of the same process keep theirs."""
    ctx = contextvars.copy_context()
    ctx.run(structlog.contextvars.bind_contextvars, service=service, instance=instance)
    return ctx


def configure(level: str = "INFO", file: TextIO | None = None, *, repeat_interval_s: float = INTERVAL_S) -> None:
    """Configure structlog to write JSON lines to ``file`` (default stderr), and the root logger to write
    every stdlib record there the same way (:class:`ClientLogHandler`, repeats folded per
    ``repeat_interval_s``). The first call wins, except that a call with a ``file`` always (re)directs the
    logs there (``croupier demo`` keeps them off its dashboard); the previous handler writes what it holds."""
    global _configured, _handler
    if _configured and file is None:
        return
    stream = file or STDERR
    lvl = getattr(logging, level.upper(), logging.INFO)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
        if h is _handler:
            h.close()
    _handler = ClientLogHandler(stream, level=lvl, interval_s=repeat_interval_s, defaults=lambda: _process)
    root.addHandler(_handler)
    root.setLevel(lvl)
    for noisy in CLIENT_LOGGERS:  # client chatter: warnings and worse only, through the root's handler
        client = logging.getLogger(noisy)
        client.setLevel(max(logging.WARNING, lvl))
        for h in list(client.handlers):  # FastStream's own plain-text handler on stderr (propagate False)
            client.removeHandler(h)
        client.propagate = True
    logging.captureWarnings(True)  # a DeprecationWarning and the like: a JSON line too, not raw text
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _process_fields,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        cache_logger_on_first_use=False,
    )
    _configured = True


def drain() -> None:
    """Write the client lines held for their repeat count now (before a log file is shown or closed)."""
    if _handler is not None:
        _handler.drain()


def get_logger(service: str) -> structlog.stdlib.BoundLogger:
    """A logger bound to ``service``."""
    configure()
    return structlog.get_logger().bind(service=service)  # type: ignore[no-any-return]
