"""structlog JSON logs: one line per event, with ``table_id``, ``round_id`` and ``event_id`` bound."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

_configured = False


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written (test runners swap it; a captured stream closes)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


STDERR: TextIO = _CurrentStderr()  # type: ignore[assignment]


def configure(level: str = "INFO", file: TextIO | None = None) -> None:
    """Configure structlog to write JSON lines to ``file`` (default stderr). The first call wins, except that a
    call with a ``file`` always (re)directs the logs there (``croupier demo`` keeps them off its dashboard)."""
    global _configured
    if _configured and file is None:
        return
    stream = file or STDERR
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    logging.basicConfig(stream=stream, level=getattr(logging, level.upper(), logging.INFO), format="%(message)s")
    for noisy in ("aiokafka", "faststream"):  # client chatter: warnings and worse only
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        cache_logger_on_first_use=False,
    )
    _configured = True


def get_logger(service: str) -> structlog.stdlib.BoundLogger:
    """A logger bound to ``service``."""
    configure()
    return structlog.get_logger().bind(service=service)  # type: ignore[no-any-return]
