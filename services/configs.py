"""The rules core's :class:`~baccarat.table.TableConfig` for the wire ``TableSpec`` a core keeps in its state.

The cores keep the wire :class:`contracts.tables.TableSpec` (which ``msgspec`` encodes and decodes exactly,
for snapshots) rather than the derived ``TableConfig`` (a ``Fraction`` and ``Mapping`` fields it cannot
decode). :func:`config_of` derives the config once per spec object: the same object (a state carries its
spec unchanged from event to event) is answered from a small identity cache, so a decision costs a lookup,
not a re-validation. The derivation is :func:`services.runtime.translate.table_config` (pure, deterministic),
so the cache never changes an answer.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping

from baccarat.table import TableConfig
from contracts.tables import TableSpec
from services.runtime.translate import table_config

#: id(spec) -> (spec, config); the spec is held so its id cannot be reused while cached
_CACHE: dict[int, tuple[TableSpec, TableConfig]] = {}
_CACHE_MAX = 4096


def config_of(spec: TableSpec) -> TableConfig:
    """The validated config of ``spec`` (raises :class:`baccarat.errors.BaccaratError` like ``table_config``)."""
    hit = _CACHE.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    cfg = table_config(spec)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[id(spec)] = (spec, cfg)
    return cfg


#: the environment variable naming the test tables (comma-separated ``fnmatch`` patterns of table ids): the only
#: tables that may load a supplied shoe order (the shoe service) or open unregulated (the dealing service);
#: unset, none may. An operator's setting of the services, never a console's.
ENV_TEST_TABLES = "CROUPIER_TEST_TABLES"


def test_tables(extra: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The test tables' patterns from ``extra`` (``Settings.extra``) or else the environment."""
    raw = (extra or {}).get(ENV_TEST_TABLES) or (os.environ if environ is None else environ).get(ENV_TEST_TABLES, "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def is_test_table(table_id: str, patterns: tuple[str, ...]) -> bool:
    """True when ``table_id`` matches one of ``patterns`` (:func:`test_tables`)."""
    return any(fnmatch.fnmatchcase(table_id, pat) for pat in patterns)
