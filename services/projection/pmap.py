"""A persistent string-keyed map that msgspec encodes as plain data (for the projection's snapshots).

:class:`PMap` is immutable: :meth:`PMap.set` and :meth:`PMap.remove` return a new map sharing all but one
path with the old one. Keys are placed by CRC-32 (stable across processes, unlike ``hash``) in a fixed
two-level trie of 32 x 32 leaves, so an update copies two 32-slot tuples and one leaf dict (about
``len / 1024`` entries): constant up to tens of thousands of keys, where a ``{**d, k: v}`` copy of a growing
dict made folding quadratic (issue 8, finding 6). Two maps with the same items are equal whatever the
order they were built in; an emptied map equals ``PMap()``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Generic, TypeVar

import msgspec

V = TypeVar("V")
_FAN = 32
_EMPTY_LEAF: dict = {}  # type: ignore[type-arg]  # shared, never mutated
_EMPTY_ROW = (_EMPTY_LEAF,) * _FAN
_EMPTY_NODES = (_EMPTY_ROW,) * _FAN


def _slot(key: str) -> tuple[int, int]:
    h = zlib.crc32(key.encode())
    return (h >> 5) & (_FAN - 1), h & (_FAN - 1)


class PMap(msgspec.Struct, Generic[V], frozen=True, array_like=True):
    """An immutable ``str -> V`` map. ``nodes``: ``()`` when empty, else 32 rows of 32 leaf dicts;
    ``size``: the number of keys. Build it only through :meth:`set`/:meth:`remove` (or decoding)."""

    nodes: tuple[tuple[dict[str, V], ...], ...] = ()
    size: int = 0

    def get(self, key: str, default: V | None = None) -> V | None:
        """The value of ``key``, or ``default``."""
        if not self.nodes:
            return default
        i, j = _slot(key)
        return self.nodes[i][j].get(key, default)

    def __contains__(self, key: object) -> bool:
        if not self.nodes or not isinstance(key, str):
            return False
        i, j = _slot(key)
        return key in self.nodes[i][j]

    def __len__(self) -> int:
        return self.size

    def set(self, key: str, value: V) -> PMap[V]:
        """This map with ``key`` bound to ``value``."""
        nodes = self.nodes or _EMPTY_NODES
        i, j = _slot(key)
        row = nodes[i]
        leaf = row[j]
        grown = key not in leaf
        new_leaf = dict(leaf)
        new_leaf[key] = value
        new_row = row[:j] + (new_leaf,) + row[j + 1:]
        return PMap(nodes[:i] + (new_row,) + nodes[i + 1:], self.size + grown)

    def remove(self, key: str) -> PMap[V]:
        """This map without ``key`` (``self`` if absent)."""
        if key not in self:
            return self
        if self.size == 1:
            return PMap()
        i, j = _slot(key)
        row = self.nodes[i]
        new_leaf = dict(row[j])
        del new_leaf[key]
        new_row = row[:j] + (new_leaf,) + row[j + 1:]
        return PMap(self.nodes[:i] + (new_row,) + self.nodes[i + 1:], self.size - 1)

    def items(self) -> Iterator[tuple[str, V]]:
        """Every ``(key, value)``, in no particular order (sort for anything canonical)."""
        for row in self.nodes:
            for leaf in row:
                yield from leaf.items()

    def keys(self) -> Iterator[str]:
        """Every key, in no particular order."""
        return (k for k, _ in self.items())
