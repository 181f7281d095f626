"""The cage's one-line summary of a floor's log (``croupier demo`` ends with it):

``cage: tables=<n> shifts=<k> drop_cents=<d> win_cents=<w> game_result_cents=<g> variance_cents=<v> fills=<f>
credits=<c> rated_patrons=<p> mtl=<m> ctr=<r>``

``tables``/``shifts``: tables and (table, shift) statements on ``cage.events``; ``drop``, ``win``,
``game_result``, ``variance``: their sums in cents (:mod:`services.cage.statement`); ``fills``/``credits``: slips
received / handed over; ``rated_patrons``: patrons with a rated session of at least one round;
``mtl``: MTL entries, ``ctr``: patron-days flagged for a CTR (:mod:`services.cage.patrons`, default thresholds).
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.envelope import Envelope
from services.cage.patrons import currency, ratings
from services.cage.statement import statements


def cage_figures(events: Sequence[Envelope]) -> dict[str, int]:
    """The figures of the ``cage:`` line, by name, from a floor's events (every topic, any order)."""
    rows = statements(events)
    days = currency(events)
    return {"tables": len({r.table_id for r in rows}), "shifts": len(rows),
            "drop_cents": sum(r.drop for r in rows), "win_cents": sum(r.win for r in rows),
            "game_result_cents": sum(r.game_result for r in rows), "variance_cents": sum(r.variance for r in rows),
            "fills": sum(r.fill_slips for r in rows), "credits": sum(r.credit_slips for r in rows),
            "rated_patrons": len({r.player_id for r in ratings(events) if r.rounds}),
            "mtl": sum(len(d.mtl) for d in days), "ctr": sum(d.ctr for d in days)}


def cage_line(events: Sequence[Envelope]) -> str:
    """``cage: tables=… ctr=…`` (see the module docstring)."""
    return "cage: " + " ".join(f"{k}={v}" for k, v in cage_figures(events).items())
