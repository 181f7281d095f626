"""The base classes of every command and event (a module of its own, so that :mod:`contracts.cage` can
define its messages and :mod:`contracts.commands` / :mod:`contracts.events` list them in their unions)."""

from __future__ import annotations

import msgspec


class Command(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of every command."""


class Event(msgspec.Struct, frozen=True, tag_field="type"):
    """Base of every event."""
