"""structlog JSON logs: one line per event, with ``table_id``, ``round_id`` and ``event_id`` bound."""

from __future__ import annotations

import logging
import sys

import structlog

_configured = False


def configure(level: str = "INFO") -> None:
    """Configure structlog to write JSON lines to stderr (idempotent)."""
    global _configured
    if _configured:
        return
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper(), logging.INFO), format="%(message)s")
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
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        cache_logger_on_first_use=True,
    )
    _configured = True


def get_logger(service: str) -> structlog.stdlib.BoundLogger:
    """A logger bound to ``service``."""
    configure()
    return structlog.get_logger().bind(service=service)  # type: ignore[no-any-return]
