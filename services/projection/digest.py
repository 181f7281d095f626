"""A stable hash of the projection's whole state, to prove that a replay from offset zero reaches exactly
the state the live service holds (what was published, the shoe views, roads, ledger, surveillance)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from services.projection.core import ProjectionState

_enc = msgspec.json.Encoder(order="sorted")


def table_digest_parts(s: ProjectionState) -> dict[str, Any]:
    """The canonical content of one table's projection (plain values, sorted)."""
    shoe = s.shoe
    return {
        "config": s.spec,
        "shoe": None if shoe is None else [shoe.shoe_id, shoe.full, shoe.seen, shoe.hidden, shoe.cards_out, shoe.step],
        "past_shoes": sorted(s.past_shoes),
        "roads": {k: list(v) for k, v in s.roads.items()},
        "odds_published": list(s.odds_published) if s.odds_published else None,
        "last_odds": {k: v for k, v in s.last_odds.items()},
        "ledger": s.ledger.state_digest(),
        "ledger_published": sorted((k, sorted(v)) for k, v in s.ledger_published.items()),
        "ledger_pending": [p.entry_id for p, _ in s.ledger_pending],
        "books": sorted((k, list(v)) for k, v in s.books.items()),
        "before_round": sorted((k, list(v.composition)) for k, v in s.before_round.items()),
        "alerts_published": sorted((k, sorted(v)) for k, v in s.alerts_published.items()),
        "alerts": sorted((a for a in s.alerts), key=lambda a: a.bet_id),
        "alerts_pending": sorted(a.bet_id for a, _, _ in s.alerts_pending),
        "watch": {k: [w.bets, w.stake_cents, w.expected_gain_cents] for k, w in s.watch.items()},
        "pit": msgspec.to_builtins(s.pit, str_keys=True),  # hours are int keys; the chain bytes base64
    }


def state_digest(tables: Mapping[str, Any]) -> str:
    """SHA-256 over every table's canonical content (``tables``: table id -> slot with ``.state``)."""
    h = hashlib.sha256()
    for table_id in sorted(tables):
        h.update(table_id.encode())
        h.update(_enc.encode(table_digest_parts(tables[table_id].state)))
    return h.hexdigest()


class DigestCache:
    """:func:`state_digest` that re-encodes only the tables whose state changed since the last call.

    A table's state is an immutable struct replaced on every change, so the object itself is the key: an
    unchanged table costs a dict lookup and a SHA-256 update of its cached bytes (a few hundred kB a table at
    most). Used by ``bench/rebuild.py``, which polls the digest while a restore runs. Not thread-safe: call
    it from one thread (the event loop).
    """

    def __init__(self) -> None:
        self._parts: dict[str, tuple[Any, bytes]] = {}

    def digest(self, tables: Mapping[str, Any]) -> str:
        """Equal to ``state_digest(tables)``; ``tables``: table id -> slot with ``.state``."""
        h = hashlib.sha256()
        seen = {}
        for table_id in sorted(tables):
            state = tables[table_id].state
            got = self._parts.get(table_id)
            if got is None or got[0] is not state:
                got = (state, _enc.encode(table_digest_parts(state)))
            seen[table_id] = got
            h.update(table_id.encode())
            h.update(got[1])
        self._parts = seen
        return h.hexdigest()
