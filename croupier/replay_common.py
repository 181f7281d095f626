"""What the replay's modules share: its two errors, and how it writes times, money and ids for people.

:mod:`croupier.replay` (the story of a table), :mod:`croupier.replay_read` (reading it from Kafka) and
:mod:`croupier.replay_render` (the human output) all import from here, so none imports another in a circle;
:mod:`croupier.replay` re-exports every name for its callers.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from typing import Any


class ReplayError(ValueError):
    """Bad input: an unknown table, round or shoe, or a time the log does not cover."""


class Unreachable(RuntimeError):
    """The Kafka broker could not be reached (or stopped answering, or refused this client's TLS)."""


async def unreachable(settings: Any, detail: str, what: str = "cannot reach Kafka") -> Unreachable:
    """An :class:`Unreachable` for ``settings``' broker: ``"<what> at <bootstrap> (<detail>)"``, or, when a TLS
    handshake explains the failure (:meth:`services.runtime.settings.Settings.connection_problem`: another CA, an
    expired certificate or another host name, a listener that does not speak TLS, or one that does to a
    plain-text client), ``"<that cause> (<detail>)"``."""
    try:
        problem = await settings.connection_problem(timeout_s=3.0)
    except Exception:  # noqa: BLE001 - the diagnosis must not hide the failure it explains
        problem = None
    if problem is not None:
        return Unreachable(f"{problem} ({detail})")
    return Unreachable(f"{what} at {settings.bootstrap_servers} ({detail})")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; UTC when it has no offset."""
    s = text.strip()
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s[-1:] in ("Z", "z") else s)
    except ValueError:
        raise ReplayError(f"cannot read {text!r} as a time: give ISO 8601, e.g. 2026-01-01T00:00:05Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC)


def iso(t: datetime) -> str:
    """A time as ISO 8601 in UTC with a ``Z`` (microseconds only when there are any)."""
    t = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return t.isoformat().replace("+00:00", "Z")


def money(cents: int) -> str:
    """Cents as dollars, exactly: ``-1234`` → ``-12.34``."""
    sign = "-" if cents < 0 else ""
    c = abs(cents)
    return f"{sign}{c // 100:,}.{c % 100:02d}"


def _ids_hint(what: str, ids: list[str], given: str) -> str:
    if not ids:
        return f"the table has no {what}s"
    near = difflib.get_close_matches(given, ids, n=1)
    if len(ids) <= 6:
        known = ", ".join(ids)
        listing = f"{len(ids)} {what}(s): {known}"
    else:
        listing = f"{len(ids)} {what}s, from {ids[0]} to {ids[-1]}"
    return listing + (f" (did you mean {near[0]}?)" if near else "")
