"""The audit of ``shoe.vault``: each sealed shoe order opens (with the vault key) to what the shoe committed to.

Pure: takes the decoded vault records and the shoe events, and the keys when the auditor has them. For each
:class:`~contracts.events.ShoeOrderEncrypted` record:

* it must open under the key its ``key_id`` names (AES-256-GCM authenticates the ciphertext, the nonce and
  the associated data: table, shoe and key ids): otherwise ``vault_unopenable`` (altered, moved from another
  table or shoe, or sealed under another key of that id; a key id the auditor does not hold is reported as
  the same kind, with the detail saying so);
* its order and salt must be what the shoe revealed at close (``ShoeClosed``), and before the close hash to
  the commitment of ``ShoeLoaded``: otherwise ``vault_mismatch``.

A legacy clear record (:class:`~contracts.events.ShoeOrderSealed`, written before the vault was encrypted)
is checked the same way without a key. A shoe with a commitment whose vault record is absent is
``vault_missing`` (only when the vault was read). Without the key nothing encrypted is judged: the records are
counted as not checked, and the report says the vault could not be opened (neither clean nor dirty).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from contracts.envelope import Envelope
from contracts.events import ShoeClosed, ShoeLoaded, ShoeOrderEncrypted, ShoeOrderSealed
from contracts.vault import VaultKeys, VaultOpenError, open_sealed


@dataclass
class VaultReport:
    """What the vault check did. ``status``: ``checked`` (a key was given), ``no_key`` (records found, none
    opened), ``not_read`` (the vault was not read: no key given, or the reader may not read it; ``reason``
    says which). ``opened``: records that opened and matched (legacy clear ones included);
    ``unchecked``: encrypted records not opened for want of a key."""

    status: str = "not_read"
    reason: str = ""
    records: int = 0
    opened: int = 0
    unchecked: int = 0
    key_ids: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"status": self.status, "reason": self.reason, "records": self.records, "opened": self.opened,
                "unchecked": self.unchecked, "key_ids": dict(sorted(self.key_ids.items()))}


#: ``flag(table_id, kind, where, detail)``
Flag = Callable[[str, str, str, str], None]


def _commitment(order: list[str], salt_hex: str) -> str | None:
    """SHA-256 hex of the salt bytes then the cards joined by commas (None for a salt that is not hex)."""
    try:
        return hashlib.sha256(bytes.fromhex(salt_hex) + ",".join(order).encode()).hexdigest()
    except ValueError:
        return None


def check_vault(vault: Iterable[Envelope], shoe_events: Iterable[Envelope], keys: VaultKeys | None,
                flag: Flag, *, table_id: str | None = None, shoe_id: str | None = None) -> VaultReport:
    """Check every vault record of ``vault`` (restricted to ``table_id`` / ``shoe_id``) against the
    commitments and reveals of ``shoe_events``; each discrepancy goes to ``flag(table, kind, where, detail)``."""
    loaded: dict[tuple[str, str], ShoeLoaded] = {}
    closed: dict[tuple[str, str], ShoeClosed] = {}
    for e in shoe_events:
        p = e.payload
        if isinstance(p, ShoeLoaded):
            loaded[(e.table_id, p.shoe_id)] = p
        elif isinstance(p, ShoeClosed):
            closed[(e.table_id, p.shoe_id)] = p
    rep = VaultReport(status="checked" if keys is not None else "no_key")
    seen: set[tuple[str, str]] = set()
    for e in vault:
        p = e.payload
        if not isinstance(p, (ShoeOrderEncrypted, ShoeOrderSealed)):
            continue
        if (table_id is not None and e.table_id != table_id) or (shoe_id is not None and p.shoe_id != shoe_id):
            continue
        k = (e.table_id, p.shoe_id)
        seen.add(k)
        rep.records += 1
        where = f"shoe.vault#{e.seq} {p.shoe_id}"
        if isinstance(p, ShoeOrderEncrypted):
            rep.key_ids[p.key_id] = rep.key_ids.get(p.key_id, 0) + 1
            if keys is None:
                rep.unchecked += 1
                continue
            try:
                order, salt = open_sealed(keys, e.table_id, p.shoe_id, p.key_id, p.nonce, p.ciphertext)
            except VaultOpenError as ex:
                flag(e.table_id, "vault_unopenable", where, str(ex))
                continue
        else:
            order, salt = tuple(p.order), p.salt
        c, ld = closed.get(k), loaded.get(k)
        if c is not None and c.order:
            if list(order) != c.order or salt != c.salt:
                flag(e.table_id, "vault_mismatch", where, "the sealed order is not the one revealed at close")
                continue
        elif ld is not None and ld.commitment and _commitment(list(order), salt) != ld.commitment:
            flag(e.table_id, "vault_mismatch", where, "the sealed order does not hash to the shoe's commitment")
            continue
        rep.opened += 1
    for (tid, sid), ld in sorted(loaded.items()):
        if ld.commitment and (tid, sid) not in seen and (table_id in (None, tid)) and (shoe_id in (None, sid)):
            flag(tid, "vault_missing", sid, "a shoe with a commitment has no sealed order on shoe.vault")
    return rep
