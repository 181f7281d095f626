"""The sealed vault (issue 9, finding 4): ``shoe.vault`` and ``shoe.snapshots`` tell nothing without the key.

A shoe is loaded and dealt on the in-memory bus with only the shoe service; the raw vault record bytes and
the msgpack of the shoe state (what a snapshot holds) are searched for every run of cards of the order.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import UTC, datetime

import msgspec
import pytest

from baccarat.cards import parse_card
from contracts import topics as T
from contracts.codecs import decode_event, encode
from contracts.commands import CloseShoe, DrawCard, LoadShoe
from contracts.envelope import Envelope, event_id
from contracts.events import (
    BettingClosed,
    CardDrawn,
    CommandRejected,
    ShoeBurned,
    ShoeClosed,
    ShoeLoaded,
    ShoeOrderEncrypted,
    ShoeOrderSealed,
    RoundOpened,
    RoundVoided,
)
from contracts.vault import VaultKeyError, VaultKeys, VaultOpenError, add_key, new_key_entry, open_sealed
from services.runtime.core import command
from services.runtime.memory import MemoryBus
from services.shoe.core import ShoeCore, commitment
from tests.services.helpers import seeded_entropy
from tests.vaultkeys import KEYS, OTHER_KEY, TEST_KEY, seeded_vault

AT = datetime(2026, 1, 1, tzinfo=UTC)
RUN = 3  # cards in a run searched for


def _runs(order: list[str], n: int = RUN) -> list[bytes]:
    """Every run of ``n`` consecutive cards of ``order``, in each way a serializer might write it."""
    out = []
    for i in range(len(order) - n + 1):
        w = order[i:i + n]
        out += ["".join(w).encode(), ",".join(w).encode(), json.dumps(w, separators=(",", ":"))[1:-1].encode(),
                msgspec.msgpack.encode(w)[1:], msgspec.msgpack.encode([parse_card(c) for c in w])[1:]]
    return out


def _leaks(blob: bytes, order: list[str]) -> list[bytes]:
    return [r for r in _runs(order) if r in blob]


class Shoe:
    """One table's shoe service alone on a bus, with commands by number."""

    def __init__(self, core: ShoeCore, bus: MemoryBus | None = None):
        self.bus = bus or MemoryBus()
        self.host = self.bus.add(core)
        self.n = 0

    @classmethod
    async def restarted(cls, core: ShoeCore, bus: MemoryBus) -> Shoe:
        """A new shoe service instance that rebuilt its state from the bus's log."""
        s = cls(core, bus)
        await bus.rebuild(s.host)
        return s

    async def send(self, payload) -> None:  # type: ignore[no-untyped-def]
        self.n += 1
        topic = T.TOPIC_OF[type(payload).__struct_config__.tag]  # DrawCard: shoe.draws, as dealing sends it
        self.bus.send(topic, command("T1", f"c{self.n}-{id(self)}", AT, payload))
        await self.bus.pump()

    async def play(self, rid: str, cards: int) -> None:
        """Round ``rid`` in play past "No more bets" (its events as the dealing and wagering services log
        them), ``cards`` drawn for it, then ended: the shoe draws only for such a round."""
        self._log(T.DEALING_EVENTS, RoundOpened(round_id=rid, shoe_id="S1", number=1))
        self._log(T.WAGERING_EVENTS, BettingClosed(round_id=rid, bets=[]))
        for n in range(1, cards + 1):
            await self.send(DrawCard(shoe_id="S1", round_id=rid, card_number=n))
        self._log(T.DEALING_EVENTS, RoundVoided(round_id=rid, reason="test"))
        await self.bus.pump()

    def _log(self, stream: str, payload) -> None:  # type: ignore[no-untyped-def]
        seq = len(self.bus.topics.get(stream, [])) + 1
        self.bus.append(stream, T.key("T1"), encode(Envelope(
            event_id=event_id(stream, "T1", seq), stream=stream, table_id="T1", seq=seq, causation_id="c",
            correlation_id="T1", occurred_at=AT, payload=payload)))

    def events(self, stream: str = T.SHOE_EVENTS) -> list:  # type: ignore[type-arg]
        return [decode_event(r.value).payload for r in self.bus.topics.get(stream, [])]

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return self.host.runner.tables["T1"].state


async def _dealt(draws: int = 20, cut_at: int | None = 100) -> Shoe:
    s = Shoe(ShoeCore(seeded_entropy(5), seeded_vault(5)))
    await s.send(LoadShoe(shoe_id="S1", cut_at=cut_at))
    for r in range(0, draws, 6):
        await s.play(f"R{r // 6 + 1}", min(6, draws - r))
    return s


def _reveal(s: Shoe) -> ShoeClosed:
    return next(e for e in s.events() if isinstance(e, ShoeClosed))


async def test_the_vault_record_holds_no_run_of_the_order_and_opens_only_with_the_key():
    s = await _dealt()
    await s.send(CloseShoe(shoe_id="S1"))
    closed = _reveal(s)
    assert len(closed.order) == 416
    (raw,) = [r.value for r in s.bus.topics[T.SHOE_VAULT]]
    sealed = decode_event(raw).payload
    assert isinstance(sealed, ShoeOrderEncrypted) and sealed.key_id == "test-1"
    # the search finds runs where they are: in the reveal's own bytes
    assert _leaks(s.bus.topics[T.SHOE_EVENTS][-1].value, closed.order)
    assert _leaks(raw, closed.order) == [] and _leaks(sealed.ciphertext, closed.order) == []
    assert closed.salt.encode() not in raw and bytes.fromhex(closed.salt) not in sealed.ciphertext
    order, salt = open_sealed(KEYS, "T1", "S1", sealed.key_id, sealed.nonce, sealed.ciphertext)
    assert list(order) == closed.order and salt == closed.salt
    wrong = VaultKeys((("test-1", OTHER_KEY),))
    with pytest.raises(VaultOpenError, match="does not authenticate"):
        open_sealed(wrong, "T1", "S1", sealed.key_id, sealed.nonce, sealed.ciphertext)
    with pytest.raises(VaultOpenError, match="does not have"):
        open_sealed(VaultKeys((("other", TEST_KEY),)), "T1", "S1", sealed.key_id, sealed.nonce, sealed.ciphertext)
    # the associated data binds it to its table and shoe: copied to another, it does not open
    for table, shoe in (("T2", "S1"), ("T1", "S2")):
        with pytest.raises(VaultOpenError):
            open_sealed(KEYS, table, shoe, sealed.key_id, sealed.nonce, sealed.ciphertext)


async def test_an_altered_ciphertext_does_not_open():
    s = await _dealt(draws=0)
    sealed = s.events(T.SHOE_VAULT)[0]
    for i in (0, len(sealed.ciphertext) // 2, len(sealed.ciphertext) - 1):
        bad = bytearray(sealed.ciphertext)
        bad[i] ^= 0x01
        with pytest.raises(VaultOpenError):
            open_sealed(KEYS, "T1", "S1", sealed.key_id, sealed.nonce, bytes(bad))


async def test_a_snapshot_of_the_shoe_state_holds_no_run_of_the_order():
    s = await _dealt(draws=30)
    state = s.state
    blob = msgspec.msgpack.encode(state)
    await s.send(CloseShoe(shoe_id="S1"))
    order = _reveal(s).order
    at = 100
    left = (order[at:] + order[:at])[state.shoe.position:]  # the cards still to come, in dealing order
    assert len(left) == 416 - state.shoe.position and state.shoe.position > 30  # the burn took some
    assert _leaks(blob, left) == []
    # of the order, only the burn shows (its cards are public: ShoeBurned on shoe.events)
    burn = next(e for e in s.events() if isinstance(e, ShoeBurned))
    assert _leaks(blob, order) and set(_leaks(blob, order)) <= set(_runs([burn.exposed, *burn.burned]))
    assert state.shoe.cards == () and len(state.sealed) == 1
    # the search finds them in the state the core held before: the shoe with its cards, the clear order
    sighted = s.host.core._sighted(state)
    assert [str(c) for c in sighted.cards[sighted.position:]] == left
    assert _leaks(msgspec.msgpack.encode(sighted), left)
    assert _leaks(msgspec.msgpack.encode({"S1": (tuple(order), "00")}), order)


async def test_cards_drawn_follow_the_sealed_order_after_cut_and_burn():
    s = await _dealt(draws=12, cut_at=57)
    await s.send(CloseShoe(shoe_id="S1"))
    order = _reveal(s).order
    loaded = next(e for e in s.events() if isinstance(e, ShoeLoaded))
    assert loaded.commitment == commitment(order, _reveal(s).salt)
    drawn = [e for e in s.events() if isinstance(e, CardDrawn)]
    cut = order[57:] + order[:57]
    assert [d.card for d in drawn] == cut[drawn[0].position:drawn[0].position + 12]
    assert [d.position for d in drawn] == list(range(drawn[0].position, drawn[0].position + 12))


async def test_a_restarted_shoe_service_deals_on_from_the_encrypted_vault_and_refuses_without_its_key():
    s = await _dealt(draws=6)
    bus = s.bus
    bus.remove(s.host)
    stranger = await Shoe.restarted(ShoeCore(seeded_entropy(9), seeded_vault(9, VaultKeys((("test-1", OTHER_KEY),)))),
                                    bus)
    await stranger.play("R2", 1)
    rejected = [e for e in stranger.events() if isinstance(e, CommandRejected)]
    assert [r.reason for r in rejected] == ["vault_unopenable"]
    assert "does not authenticate" in rejected[0].detail
    bus.remove(stranger.host)
    # keys rotated: test-2 is now the newest; the open shoe (test-1) still deals, a new shoe seals under test-2
    rotated = VaultKeys.parse(f"{new_key_entry('test-1', TEST_KEY)}\n{new_key_entry('test-2', OTHER_KEY)}")
    again = await Shoe.restarted(ShoeCore(seeded_entropy(9), seeded_vault(9, rotated)), bus)
    await again.play("R3", 1)
    await again.send(CloseShoe(shoe_id="S1"))
    closed = _reveal(again)
    drawn = [e for e in again.events() if isinstance(e, CardDrawn)]
    cut = closed.order[100:] + closed.order[:100]
    assert [d.card for d in drawn] == cut[drawn[0].position:drawn[-1].position + 1] and len(drawn) == 7
    await again.send(LoadShoe(shoe_id="S2"))
    assert [e.key_id for e in again.events(T.SHOE_VAULT)] == ["test-1", "test-2"]


def test_a_legacy_clear_vault_record_still_rebuilds_its_shoe():
    from contracts.envelope import Envelope, event_id
    from contracts.tables import ShoeSpec

    core = ShoeCore(seeded_entropy(1), seeded_vault(1))
    order = [str(c) for c in seeded_entropy(3).shuffle(list(__import__("baccarat.cards").cards.standard_deck() * 8))]

    def env(stream, seq, payload):  # type: ignore[no-untyped-def]
        return Envelope(event_id=event_id(stream, "T1", seq), stream=stream, table_id="T1", seq=seq,
                        causation_id="c", correlation_id="T1", occurred_at=AT, payload=payload, shoe_id="S0")

    state = core.evolve(core.initial("T1"), env(T.SHOE_VAULT, 1, ShoeOrderSealed(shoe_id="S0", order=order,
                                                                                  salt="00" * 16)))
    state = core.evolve(state, env(T.SHOE_EVENTS, 1, ShoeLoaded(shoe_id="S0", rules=ShoeSpec(), cards=416,
                                                                source="csprng", commitment=commitment(order, "00" * 16))))
    state = replace(state, round_in_play="R1", no_more_bets="R1")
    (out,) = core.decide(state, command("T1", "d1", AT, DrawCard(shoe_id="S0", round_id="R1", card_number=1)))
    assert isinstance(out.payload, CardDrawn) and out.payload.card == order[0]


def test_vault_keys_parse_rotate_and_refuse_what_is_unsafe(tmp_path, monkeypatch):
    path = tmp_path / "vault.keys"
    keys = add_key(path, "k1")
    assert keys.ids == ("k1",) and oct(path.stat().st_mode & 0o777) == "0o600"
    keys = add_key(path, "k2")
    assert keys.ids == ("k1", "k2") and keys.newest[0] == "k2"
    assert VaultKeys.from_env({"CROUPIER_VAULT_KEY_FILE": str(path)}).ids == ("k1", "k2")
    with pytest.raises(VaultKeyError, match="appears twice"):
        add_key(path, "k1")
    # the first step of a rotation: k2 known everywhere, k1 still sealing
    held = VaultKeys.from_env({"CROUPIER_VAULT_KEY_FILE": str(path), "CROUPIER_VAULT_SEAL_KEY_ID": "k1"})
    assert held.newest == keys.keys[0] and held.get("k2") == keys.keys[1][1]
    with pytest.raises(VaultKeyError, match="is not one of the keys"):
        VaultKeys.from_env({"CROUPIER_VAULT_KEY_FILE": str(path), "CROUPIER_VAULT_SEAL_KEY_ID": "k3"})
    path.chmod(0o644)
    with pytest.raises(VaultKeyError, match="readable by others"):
        VaultKeys.from_file(path)
    with pytest.raises(VaultKeyError, match="not both"):
        VaultKeys.from_env({"CROUPIER_VAULT_KEY_FILE": str(path), "CROUPIER_VAULT_KEYS": "a:b"})
    with pytest.raises(VaultKeyError, match="needs a vault key"):
        VaultKeys.from_env({})
    with pytest.raises(VaultKeyError, match="16 bytes"):
        VaultKeys.parse("short:" + base64.b64encode(b"x" * 16).decode())
    with pytest.raises(VaultKeyError, match="not base64"):
        VaultKeys.parse("k:***")
    assert "AAAA" not in repr(VaultKeys.parse(new_key_entry("k", b"\0" * 32)))


def test_the_shoe_service_refuses_to_start_without_a_key(monkeypatch):
    import services
    import services.shoe.app as shoe_app
    from services.runtime.settings import Settings

    monkeypatch.delenv("CROUPIER_VAULT_KEYS", raising=False)
    monkeypatch.delenv("CROUPIER_VAULT_KEY_FILE", raising=False)
    monkeypatch.delitem(shoe_app.__dict__, "app", raising=False)
    with pytest.raises(VaultKeyError, match="CROUPIER_VAULT_KEY_FILE"):
        services.create("shoe", Settings(topic_prefix="nokey."))
    with pytest.raises(VaultKeyError, match="needs a vault key"):
        _ = shoe_app.app  # what `faststream run services.shoe.app:app` loads
    # a key in the settings is enough
    svc = services.create("shoe", Settings(topic_prefix="key.", extra={"CROUPIER_VAULT_KEYS": new_key_entry("s", TEST_KEY)}))
    assert svc.host.core.vault.keys.ids == ("s",)
