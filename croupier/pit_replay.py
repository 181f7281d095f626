"""The pit's round replay: a table's rounds, and any one round's story, read from the log for a page.

:func:`replay_reader` gives the pages (:class:`services.projection.pages.PitPages`, its ``replay`` hook) what
``croupier replay`` prints, as plain dicts: for a table, every round it dealt (its result and total); for a
round, the timeline with each entry already put in words (:func:`croupier.replay.describe`: every card with the
rule that required it), the cage ledger's entries and the surveillance alerts of the round. It reads the
table's whole history from Kafka at each request (:func:`croupier.replay.read_table`), as an investigator's
command does: a page for looking back, not a live one. Errors: :class:`LookupError` for a round or table the
log does not hold, :class:`ConnectionError` when Kafka cannot be read (the page says which).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from services.runtime.settings import Settings

#: how long one replay may read the log (s)
READ_TIMEOUT_S = 30.0

Reader = Callable[[str, "str | None"], Awaitable[dict[str, Any]]]


def story(envelopes: Iterable[Any], table_id: str, round_id: str | None) -> dict[str, Any]:
    """The page's view of ``table_id`` from its ``envelopes`` (pure): the summary of its rounds (``round_id``
    None) or one round, as :func:`croupier.replay.replay` builds them, each timeline entry with ``label`` and
    ``detail`` (words). Raises :class:`LookupError` for a table without events or an unknown round."""
    from croupier.replay import ReplayError, describe, replay

    envs = list(envelopes)
    if not envs:
        raise LookupError(f"no events of table {table_id!r} in the log")
    try:
        view = replay(envs, table_id, round_id=round_id)
    except ReplayError as e:
        raise LookupError(str(e)) from None
    for key in ("timeline", "outside_rounds"):
        for entry in view.get(key) or []:
            entry["label"], entry["detail"] = describe(entry)
    return view


def replay_reader(settings: Settings, timeout_s: float = READ_TIMEOUT_S) -> Reader:
    """``read(table_id, round_id)``: :func:`story` of the table's events read from Kafka on ``settings``'
    broker (:func:`croupier.replay.read_table`, at most ``timeout_s``); :class:`ConnectionError` when the log
    cannot be read."""
    from croupier.replay import Unreachable, read_table

    async def read(table_id: str, round_id: str | None) -> dict[str, Any]:
        try:
            records = await read_table(settings, table_id, timeout_s=timeout_s)
        except Unreachable as e:
            raise ConnectionError(str(e)) from None
        return story((r.env for r in records), table_id, round_id)

    return read


__all__ = ["READ_TIMEOUT_S", "Reader", "replay_reader", "story"]
