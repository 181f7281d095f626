"""Which events an export takes: tables, a shoe, a gaming day, a time window.

Pure over :class:`croupier.log.LogRecord`. Every filter given must hold (they combine with AND):

* tables: the events of those tables (none given: every table of the log);
* ``shoe_id``: the events of that shoe: those naming it (the envelope's ``shoe_id`` or the payload's) and
  those of its rounds (an event whose round, by the envelope's ``round_id`` or the payload's, was dealt from
  the shoe: learnt from any event naming both, ``RoundOpened`` first). Settlement and wagering events carry
  no shoe id, so they are found by their round. A table's ``TableOpened`` and seat registrations belong to
  no shoe;
* ``gaming_day`` (``YYYY-MM-DD``): the events whose envelope ``occurred_at`` falls in that gaming day, the
  ledger's: the UTC date after moving the time back by the cutoff hour (6 by default, so 03:00 UTC is the
  previous day; :func:`services.projection.ledger.gaming_day`);
* ``since`` / ``until``: the envelope's ``occurred_at`` (the broker's append time of the command record that
  caused the event: ``contracts.envelope``), ``since <= occurred_at < until``, UTC. Not the Kafka record's own
  timestamp, which for a reaction published later (a ledger entry, a settlement) is the time it was
  written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from croupier.log import LogRecord
from services.projection.ledger import DEFAULT_CUTOFF_HOUR, gaming_day


class SelectionError(ValueError):
    """A filter that cannot be used (a gaming day that is not a date, an empty time window)."""


@dataclass(frozen=True, slots=True)
class Selection:
    """What to export. ``tables``: empty for every table; times UTC-aware; ``gaming_day`` ``YYYY-MM-DD``."""

    tables: tuple[str, ...] = ()
    shoe_id: str | None = None
    gaming_day: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    cutoff_hour: int = DEFAULT_CUTOFF_HOUR

    def __post_init__(self) -> None:
        if self.gaming_day is not None:
            try:
                ok = date.fromisoformat(self.gaming_day).isoformat() == self.gaming_day
            except ValueError:
                ok = False
            if not ok:
                raise SelectionError(f"--gaming-day must be a date YYYY-MM-DD, got {self.gaming_day!r}")
        for name, t in (("--since", self.since), ("--until", self.until)):
            if t is not None and t.tzinfo is None:
                raise SelectionError(f"{name} must be a time with a zone (UTC)")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise SelectionError(f"--since ({self.since.isoformat()}) must be before --until "
                                 f"({self.until.isoformat()})")

    @property
    def filtered(self) -> bool:
        """Whether anything but the tables narrows the export."""
        return any(v is not None for v in (self.shoe_id, self.gaming_day, self.since, self.until))

    def describe(self) -> str:
        """The filters in words, for the export's summary line (empty when none)."""
        parts = [f"shoe {self.shoe_id}" if self.shoe_id is not None else "",
                 f"gaming day {self.gaming_day}" if self.gaming_day is not None else "",
                 f"occurred_at >= {self.since.isoformat()}" if self.since is not None else "",
                 f"occurred_at < {self.until.isoformat()}" if self.until is not None else ""]
        return ", ".join(p for p in parts if p)


def _round_of(rec: LogRecord) -> str | None:
    return rec.env.round_id or getattr(rec.env.payload, "round_id", None) or None


def _shoe_of(rec: LogRecord) -> str | None:
    return rec.env.shoe_id or getattr(rec.env.payload, "shoe_id", None) or None


def round_shoes(records: Iterable[LogRecord]) -> dict[tuple[str, str], str]:
    """``{(table_id, round_id): shoe_id}`` from every event that names both a round and a shoe."""
    out: dict[tuple[str, str], str] = {}
    for rec in records:
        rid, sid = _round_of(rec), _shoe_of(rec)
        if rid is not None and sid is not None:
            out.setdefault((rec.env.table_id, rid), sid)
    return out


def shoes_in(records: Iterable[LogRecord]) -> list[str]:
    """Every shoe id the records name, sorted."""
    return sorted({s for s in (_shoe_of(r) for r in records) if s is not None})


def select(records: Sequence[LogRecord], sel: Selection) -> list[LogRecord]:
    """The records ``sel`` takes, in the order given."""
    tables = set(sel.tables)
    shoes = round_shoes(records) if sel.shoe_id is not None else {}
    out = []
    for rec in records:
        env = rec.env
        if tables and env.table_id not in tables:
            continue
        at = env.occurred_at if env.occurred_at.tzinfo else env.occurred_at.replace(tzinfo=UTC)
        if sel.since is not None and at < sel.since:
            continue
        if sel.until is not None and at >= sel.until:
            continue
        if sel.gaming_day is not None and gaming_day(env.occurred_at, sel.cutoff_hour) != sel.gaming_day:
            continue
        if sel.shoe_id is not None:
            sid = _shoe_of(rec)
            if sid is None and (rid := _round_of(rec)) is not None:
                sid = shoes.get((env.table_id, rid))
            if sid != sel.shoe_id:
                continue
        out.append(rec)
    return out
