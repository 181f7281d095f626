"""What the audit reports (:func:`croupier.audit.audit`): the discrepancies, the records it could not read, and
the counts of what it checked. Plain data; re-exported by :mod:`croupier.audit`."""

from __future__ import annotations

from dataclasses import dataclass, field

from croupier.provenance import ProvenanceReport
from croupier.vaultcheck import VaultReport


@dataclass(frozen=True, slots=True)
class Discrepancy:
    """One thing the log says that the rules (or the log's own bookkeeping) contradict."""

    table_id: str
    kind: str
    #: the record's position (``stream#seq``, or ``topic[partition]@offset``) where one record is at fault;
    #: else the round, bet or shoe id the finding is about
    where: str
    #: a plain sentence
    detail: str
    #: the round the finding belongs to (``""``: none, e.g. a shoe's reveal)
    round_id: str = ""

    def __str__(self) -> str:
        return f"{self.table_id} {self.kind} {self.where}: {self.detail}"


@dataclass(frozen=True, slots=True)
class UndecodableRecord:
    """A record of an event topic that is not a valid event envelope (not even one of an unknown type).
    ``table_id``: the record's key (UTF-8, replacement characters for bad bytes), ``"?"`` without one."""

    table_id: str
    topic: str
    partition: int
    offset: int
    error: str


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """A well-formed event envelope whose payload type this version does not know: skipped, but its place in
    its stream (``seq``) is taken."""

    table_id: str
    stream: str
    seq: int
    event_id: str
    type_name: str


@dataclass
class AuditReport:
    """Counts of what was checked and the discrepancies found (clean when there are none)."""

    events: int = 0
    tables: int = 0
    shoes_verified: int = 0
    rounds_checked: int = 0
    bets_checked: int = 0
    discrepancies: list[Discrepancy] | None = None
    #: rounds at a table's tail still in play (not resolved, or not settled yet): not discrepancies
    rounds_pending: int = 0
    #: records that did not decode at all (each is also an ``undecodable_record`` discrepancy)
    undecodable_records: int = 0
    #: well-formed events of types this version does not know, by type (skipped, not discrepancies)
    unknown_types: dict[str, int] = field(default_factory=dict)
    #: rejections that mean the floor is broken (:mod:`croupier.audit_floor`), by reason; each one is also a
    #: ``floor_broken`` discrepancy
    broken_rejections: dict[str, int] = field(default_factory=dict)
    #: a person's commands rightly refused with a reason (the floor worked: not discrepancies), by reason
    refused: dict[str, int] = field(default_factory=dict)
    #: the vault check: opened with the key, not opened (no key), or not read
    vault: VaultReport = field(default_factory=VaultReport)
    #: the provenance check: events matched to their commands' records, or why the commands were not read
    provenance: ProvenanceReport = field(default_factory=ProvenanceReport)
    #: what a live floor's log shows between two steps, worth an investigator's look but not discrepancies:
    #: ``marker_unsettled`` (a marker buy-in in flight at the end of the log, :mod:`croupier.audit_cage`)
    notices: list[Discrepancy] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.discrepancies

    def to_dict(self) -> dict[str, object]:
        """Plain data (for ``--json``)."""
        return {
            "clean": self.clean,
            "events": self.events,
            "tables": self.tables,
            "shoes_verified": self.shoes_verified,
            "rounds_checked": self.rounds_checked,
            "rounds_pending": self.rounds_pending,
            "bets_checked": self.bets_checked,
            "undecodable_records": self.undecodable_records,
            "unknown_types": dict(sorted(self.unknown_types.items())),
            "broken_rejections": dict(sorted(self.broken_rejections.items())),
            "refused": dict(sorted(self.refused.items())),
            "vault": self.vault.to_dict(),
            "provenance": self.provenance.to_dict(),
            "notices": [{"table_id": d.table_id, "kind": d.kind, "where": d.where, "detail": d.detail}
                        for d in self.notices],
            "discrepancies": [
                {"table_id": d.table_id, "kind": d.kind, "where": d.where, "detail": d.detail,
                 "round_id": d.round_id}
                for d in self.discrepancies or []
            ],
        }
