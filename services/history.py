"""A persistent, append-mostly map of ids for the cores' per-table state: what must outlive a round.

A core prunes a finished round's data (bet book, pending settlement, card bookkeeping) but some answers
need to know, forever, that an id was seen: a re-used round id is refused ``duplicate_round``, a bet on an
old round ``betting_closed`` rather than ``unknown_round``, and an input replayed from the start of a
topic for a round already settled is ignored rather than paid again. Keeping those ids in a plain ``dict``
copied on every event costs O(history) per event (issue 8, finding 6); :class:`History` costs O(log n).

Shape: a tuple of *runs* (plain dicts), oldest and largest first, merged like a binary counter: adding a key
pushes a one-entry run, then merges the last two runs while the older one is no larger than the newer.
So there are at most ``log2(n) + 1`` runs, an insert copies O(log n) entries amortised, a lookup probes at
most ``log2(n) + 1`` dicts (newest first, so the latest value of a key wins). A state holding a
:class:`History` stays immutable: nothing is ever mutated after construction. Keys are ``str`` (ids),
values ``int`` (a count or a round number; 0 where only membership matters), so ``msgspec`` encodes and
decodes it unchanged for snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class History:
    """An immutable map ``id -> int`` with O(log n) :meth:`put` and lookups (see the module docstring)."""

    runs: tuple[dict[str, int], ...] = ()

    def __contains__(self, key: str) -> bool:
        return any(key in r for r in self.runs)

    def get(self, key: str, default: int | None = None) -> int | None:
        """The latest value put for ``key``, or ``default``."""
        for r in reversed(self.runs):
            if key in r:
                return r[key]
        return default

    def put(self, key: str, value: int = 0) -> "History":
        """A new history with ``key -> value`` (the old one is unchanged)."""
        runs = list(self.runs)
        new = {key: value}
        while runs and len(runs[-1]) <= len(new):
            new = {**runs.pop(), **new}
        runs.append(new)
        return History(tuple(runs))

    def __len__(self) -> int:
        """Distinct keys (O(n); for tests and reports, not for deciding)."""
        keys: set[str] = set()
        for r in self.runs:
            keys.update(r)
        return len(keys)
