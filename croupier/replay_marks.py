"""The audit's findings as marks on a replay: every anomaly shown where it happened, on its own line.

:func:`audit_marks` audits one table's events (:func:`croupier.audit.audit`, pure) and files each discrepancy
by where it points: a record (``stream#seq``: a forged settlement, a card that is not the shoe's, a second
result, a late bet) is marked on that record's line of the timeline; one about a round as a whole (a round
never settled, a bet settled twice) on the round; the rest (a shoe's reveal, a seq gap outside any round) on
the table. A mark is ``{"kind": code, "where": position, "detail": sentence}``; the codes are the audit's.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from contracts.envelope import Envelope

#: the streams the audit reads (the projection's own streams are not the floor's record)
AUDITED_STREAMS = ("shoe.events", "dealing.events", "wagering.events", "settlement.events", "cage.events")
_RECORD = re.compile(r"^[a-z_]+\.[a-z_]+#\d+$")


@dataclass
class Marks:
    """The audit's findings for one table, filed by record (``stream#seq``), by round and for the table."""

    by_record: dict[str, list[dict[str, str]]] = field(default_factory=lambda: defaultdict(list))
    by_round: dict[str, list[dict[str, str]]] = field(default_factory=lambda: defaultdict(list))
    table: list[dict[str, str]] = field(default_factory=list)
    all: list[dict[str, str]] = field(default_factory=list)

    def of(self, env: Envelope) -> list[dict[str, str]]:
        """The marks on one record (a copy: the caller may keep it in a view)."""
        return list(self.by_record.get(f"{env.stream}#{env.seq}", ()))

    def of_round(self, round_id: str, shown: set[str]) -> list[dict[str, str]]:
        """The marks of a round not already on one of its ``shown`` records."""
        return [m for m in self.by_round.get(round_id, ()) if m["where"] not in shown]


def audit_marks(envelopes: Iterable[Envelope], table_id: str) -> Marks:
    """Audit ``table_id``'s events among ``envelopes`` and file the discrepancies as :class:`Marks`."""
    from croupier.audit import audit

    envs = [e for e in envelopes if e.table_id == table_id and e.stream in AUDITED_STREAMS]
    marks = Marks()
    if not envs:
        return marks
    for d in audit(envs, table_id=table_id).discrepancies or []:
        m = {"kind": d.kind, "where": d.where, "detail": d.detail}
        marks.all.append(m)
        if _RECORD.match(d.where):
            marks.by_record[d.where].append(m)
        if d.round_id:
            marks.by_round[d.round_id].append(m)
        elif not _RECORD.match(d.where):
            marks.table.append(m)
    return marks


def mark_line(m: dict[str, Any]) -> str:
    """One mark in words, for its own line: ``! ANOMALY card_not_in_order at shoe.events#41: ...``."""
    return f"! ANOMALY {m['kind']} at {m['where']}: {m['detail']}"
