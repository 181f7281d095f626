"""The sealed vault on a real broker: the raw records of ``shoe.vault`` and ``shoe.snapshots`` hold no run of
the shoe's order; ``croupier audit --vault-key-file`` opens every sealed order to its reveal, says it could
not without the key, and reports a vault record whose ciphertext was altered."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace as dc_replace

from aiokafka import AIOKafkaProducer
from msgspec.structs import replace
from typer.testing import CliRunner

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event, encode
from contracts.commands import CloseShoe, LoadShoe
from contracts.events import ShoeBurned, ShoeClosed, ShoeOrderEncrypted
from croupier.cli import app
from services.floor.dealer import Clock, TableDealer
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from tests.services.test_vault import _leaks, _runs
from tests.system.conftest import client_options
from tests.system.test_floor_kafka import SEATS, Floor
from tests.vaultkeys import TEST_VAULT_KEYS


def _audit(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["audit", *args])


async def _raw(floor: Floor, base: str) -> list[bytes]:
    return [r.value for r in await read_log(floor.settings, floor.settings.topic(base)) if r.value is not None]


async def _snapshot_states(floor: Floor) -> list[bytes]:
    """The shoe's table snapshots as a reader of the topic can open them: the record, and its state
    decompressed to the msgpack bytes of the shoe's state (compression hides nothing)."""
    import zlib

    from services.runtime import snapshot as S

    out = []
    for r in await read_log(floor.settings, floor.settings.topic("shoe.snapshots")):
        if r.value is None or r.key == S.CHECKPOINT_KEY:
            continue
        out.append(r.value + zlib.decompress(S.decode_table(r.value).state))
    return out


async def test_vault_and_snapshots_hold_no_order_and_the_keyed_audit_opens_and_catches_tampering(
        kafka_bootstrap: str, tmp_path):
    import random

    floor = Floor(kafka_bootstrap)
    floor.settings = dc_replace(floor.settings, snapshot_every_records=3, snapshot_interval_s=0.2)
    await floor.start()
    try:
        dealer = TableDealer(floor.io, "V1", punto_banco_full(), SEATS, random.Random(3), Clock(), timeout=60)
        await dealer.open_table()
        since = floor.io.log.mark("V1")
        await floor.io.send(T.SHOE_COMMANDS, command("V1", "V1-load", Clock()(), LoadShoe(shoe_id="VS", cut_at=80)))
        await floor.io.wait("V1", lambda e: isinstance(e.payload, ShoeBurned), since, 60)
        for n in range(1, 4):
            assert await dealer.play_round("VS", f"VS-round-{n}")
        for _ in range(300):  # the shoe task's checkpoint is written within its next transactions
            snapshots = await _snapshot_states(floor)
            if any(b"VS" in s for s in snapshots):
                break
            await asyncio.sleep(0.1)
        since = floor.io.log.mark("V1")
        await floor.io.send(T.SHOE_COMMANDS, command("V1", "V1-close", Clock()(), CloseShoe(shoe_id="VS")))
        await floor.io.wait("V1", lambda e: isinstance(e.payload, ShoeClosed), since, 60)
    finally:
        await floor.stop()
    log = await floor.log()
    closed = next(e.payload for e in log if isinstance(e.payload, ShoeClosed))
    burn = next(e.payload for e in log if isinstance(e.payload, ShoeBurned))
    order = closed.order
    (vault_raw,) = await _raw(floor, T.SHOE_VAULT)
    assert isinstance(decode_event(vault_raw).payload, ShoeOrderEncrypted)
    assert _leaks(vault_raw, order) == []
    assert any(b"VS" in s for s in snapshots), "no snapshot of the shoe's table was written"
    for s in snapshots:  # of the order, a snapshot shows at most the burn (public on shoe.events)
        assert set(_leaks(s, order)) <= set(_runs([burn.exposed, *burn.burned]))

    where = ["--bootstrap", kafka_bootstrap, "--prefix", floor.settings.topic_prefix]
    r = await asyncio.to_thread(_audit, *where)
    assert r.exit_code == 0, r.output
    assert "vault: not checked, the sealed shoe orders could not be opened (no --vault-key-file given" in r.stdout
    key_file = tmp_path / "vault.keys"
    key_file.write_text(TEST_VAULT_KEYS + "\n")
    os.chmod(key_file, 0o600)
    r = await asyncio.to_thread(_audit, *where, "--vault-key-file", str(key_file))
    assert r.exit_code == 0, r.output
    assert "vault: 1 of 1 sealed order(s) opened and matched their reveal or commitment (keys test-1 1)" in r.stdout
    os.chmod(key_file, 0o644)
    r = await asyncio.to_thread(_audit, *where, "--vault-key-file", str(key_file))
    assert r.exit_code == 2 and "readable by others" in r.stderr
    os.chmod(key_file, 0o600)

    # tamper: a copy of the vault record with one ciphertext byte flipped
    env = decode_event(vault_raw)
    ct = bytearray(env.payload.ciphertext)
    ct[40] ^= 0x01
    producer = AIOKafkaProducer(**client_options(kafka_bootstrap))
    await producer.start()
    try:
        await producer.send_and_wait(floor.settings.topic(T.SHOE_VAULT),
                                     encode(replace(env, payload=replace(env.payload, ciphertext=bytes(ct)))),
                                     key=T.key("V1"))
    finally:
        await producer.stop()
    r = await asyncio.to_thread(_audit, *where, "--vault-key-file", str(key_file), "--json")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert [x["kind"] for x in d["discrepancies"]] == ["vault_unopenable"]
    assert d["vault"]["records"] == 2 and d["vault"]["opened"] == 1
    r = await asyncio.to_thread(_audit, *where)  # without the key the altered record cannot be judged
    assert r.exit_code == 0 and "vault: not checked" in r.stdout
