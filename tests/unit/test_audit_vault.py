"""The audit of ``shoe.vault`` (croupier/vaultcheck.py): with the key every sealed order opens to its reveal;
without it nothing is judged; an altered, foreign, swapped or missing record is reported."""

from __future__ import annotations

import asyncio
import random

import pytest
from msgspec.structs import replace

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.envelope import Envelope
from contracts.events import ShoeClosed, ShoeOrderEncrypted
from contracts.vault import VaultKeys, seal
from croupier.audit import AuditReport, audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from tests.services.helpers import events, floor_bus
from tests.vaultkeys import KEYS, OTHER_KEY


async def _floor() -> tuple[list[Envelope], list[Envelope]]:
    bus, _ = floor_bus(seed=41)
    io = MemoryFloorIO(bus)
    for tid in ("T1", "T2"):
        await TableDealer(io, tid, punto_banco_full(), [Seat(1, "p1")], random.Random(tid), Clock()).run(shoes=1)
    return events(bus), events(bus, T.SHOE_VAULT)


@pytest.fixture(scope="module")
def floor() -> tuple[list[Envelope], list[Envelope]]:
    return asyncio.run(_floor())


def kinds(rep: AuditReport) -> list[str]:
    return sorted(d.kind for d in rep.discrepancies or [])


def test_with_the_key_every_vault_record_opens_to_its_reveal(floor):
    log, vault = floor
    assert len(vault) == 2 and all(isinstance(e.payload, ShoeOrderEncrypted) for e in vault)
    rep = audit(log, vault=vault, vault_keys=KEYS)
    assert rep.clean, [str(d) for d in rep.discrepancies]
    assert (rep.vault.status, rep.vault.records, rep.vault.opened, rep.vault.unchecked) == ("checked", 2, 2, 0)
    assert rep.vault.key_ids == {"test-1": 2} and rep.to_dict()["vault"]["opened"] == 2
    one = audit(log, table_id="T2", vault=vault, vault_keys=KEYS)
    assert one.clean and one.vault.records == one.vault.opened == 1


def test_without_the_key_the_vault_is_not_checked_neither_clean_nor_dirty(floor):
    log, vault = floor
    bad = _altered(vault, 0)
    for v in (vault, bad):  # an altered record cannot be told from a sound one without the key
        rep = audit(log, vault=v)
        assert rep.clean and (rep.vault.status, rep.vault.opened, rep.vault.unchecked) == ("no_key", 0, 2)
    rep = audit(log)
    assert rep.vault.status == "not_read" and rep.vault.records == 0 and "not read" in rep.vault.reason


def _altered(vault: list[Envelope], i: int, at: int = 7) -> list[Envelope]:
    p = vault[i].payload
    ct = bytearray(p.ciphertext)
    ct[at] ^= 0x40
    return [replace(e, payload=replace(p, ciphertext=bytes(ct))) if j == i else e for j, e in enumerate(vault)]


def test_an_altered_ciphertext_fails_to_open_and_is_reported(floor):
    log, vault = floor
    for at in (0, 300, -1):  # in the order, further on, in the tag
        rep = audit(log, vault=_altered(vault, 1, at), vault_keys=KEYS)
        assert kinds(rep) == ["vault_unopenable"] and rep.vault.opened == 1
        (d,) = rep.discrepancies
        assert d.table_id == vault[1].table_id and "does not authenticate" in d.detail


def test_a_wrong_key_or_an_unknown_key_id_opens_nothing(floor):
    log, vault = floor
    rep = audit(log, vault=vault, vault_keys=VaultKeys((("test-1", OTHER_KEY),)))
    assert kinds(rep) == ["vault_unopenable"] * 2 and rep.vault.opened == 0
    rep = audit(log, vault=vault, vault_keys=VaultKeys((("k9", OTHER_KEY),)))
    assert kinds(rep) == ["vault_unopenable"] * 2 and "does not have" in rep.discrepancies[0].detail


def test_a_record_moved_to_another_table_does_not_open(floor):
    log, vault = floor
    t1 = next(e for e in vault if e.table_id == "T1")
    t2 = next(e for e in vault if e.table_id == "T2")
    swapped = [replace(t2, payload=replace(t1.payload, shoe_id=t2.payload.shoe_id)), t1]
    rep = audit(log, vault=swapped, vault_keys=KEYS)
    assert kinds(rep) == ["vault_unopenable"]


def test_a_resealed_other_order_is_a_mismatch_and_a_missing_record_is_reported(floor):
    log, vault = floor
    e = vault[0]
    closed = next(x.payload for x in log if x.table_id == e.table_id and isinstance(x.payload, ShoeClosed))
    other = closed.order[1:] + closed.order[:1]
    kid, nonce, ct = seal(KEYS, b"\x01" * 12, e.table_id, e.payload.shoe_id, other, closed.salt)
    forged = [replace(e, payload=replace(e.payload, key_id=kid, nonce=nonce, ciphertext=ct)), vault[1]]
    rep = audit(log, vault=forged, vault_keys=KEYS)
    assert kinds(rep) == ["vault_mismatch"] and "revealed at close" in rep.discrepancies[0].detail
    # before the close, the commitment is what the sealed order must hash to
    open_log = [x for x in log if not isinstance(x.payload, ShoeClosed)]
    assert audit(open_log, vault=vault, vault_keys=KEYS).vault.opened == 2
    rep = audit(open_log, vault=forged, vault_keys=KEYS)
    assert kinds(rep) == ["vault_mismatch"] and "commitment" in rep.discrepancies[0].detail
    rep = audit(log, vault=vault[1:], vault_keys=KEYS)
    assert kinds(rep) == ["vault_missing"] and rep.discrepancies[0].table_id == e.table_id

