"""The sealed shoe order on ``shoe.vault``: AES-256-GCM under a key only the shoe service (and an auditor
given the key) holds.

Wire format of :class:`contracts.events.ShoeOrderEncrypted` (``shoe_order_encrypted``):

* ``key_id``: which key sealed it (:data:`KEY_ID_PATTERN`, 1-32 characters), so keys can rotate: a reader
  holds several keys (:class:`VaultKeys`), seals with the newest and opens with any it knows;
* ``nonce``: 12 random bytes (hex), drawn by the caller at the edge (``secrets.token_bytes``), never reused
  under a key (2^-96 per pair; NIST SP 800-38D §8.2.2 allows 2^32 random nonces per key);
* ``ciphertext``: AES-256-GCM (NIST SP 800-38D, the ``cryptography`` package's ``AESGCM``) of the JSON
  object ``{"salt": <hex>, "order": [<card>, ...]}`` (the order as loaded, pre-cut: what
  ``ShoeClosed`` reveals), with the 16-byte tag appended; the associated data is
  :func:`associated_data` (table id, shoe id, key id), so a record moved to another table or shoe, or
  relabelled with another key id, does not open.

The salt is sealed with the order: with the salt known, the last few unknown cards of a shoe could be
found by brute force against the public commitment.

Keys (:meth:`VaultKeys.parse`): one ``KEY_ID:BASE64`` entry per line of a key file (``#`` comments and
blank lines ignored; in ``CROUPIER_VAULT_KEYS`` entries may also be separated by commas), each key exactly
32 bytes of standard base64. The **last** entry is the newest and seals; ids are unique.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

#: AES-256: 32-byte keys; GCM: 12-byte nonces (the recommended IV length, SP 800-38D §5.2.1.1)
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")
#: domain separation of the associated data (a new format gets a new label)
AAD_LABEL = b"croupier/shoe.vault/aes-256-gcm/v1"
#: the environment variables the shoe service reads its keys from (one of them, not both), and the optional
#: id of the key that seals (default: the newest), for a rotation in two steps
ENV_FILE, ENV_KEYS, ENV_SEAL = "CROUPIER_VAULT_KEY_FILE", "CROUPIER_VAULT_KEYS", "CROUPIER_VAULT_SEAL_KEY_ID"


class VaultKeyError(ValueError):
    """No usable vault key: none configured, both variables set, an unreadable file, a malformed entry or
    key, or a duplicate id (the message names the source and the line)."""


class VaultOpenError(ValueError):
    """A sealed order that does not open: an unknown key id, or a ciphertext, nonce or associated data that
    fails GCM authentication (altered, moved, or sealed under another key with that id)."""


class _Plain(msgspec.Struct, frozen=True):
    salt: str
    order: list[str]


@dataclass(frozen=True, slots=True)
class VaultKeys:
    """Vault keys by id, oldest first: ``keys`` is ``((key_id, 32 key bytes), ...)``; the last one seals,
    unless ``sealing`` names another of them."""

    keys: tuple[tuple[str, bytes], ...]
    sealing: str = ""

    def __post_init__(self) -> None:
        if not self.keys:
            raise VaultKeyError("no vault key given")
        ids = [k for k, _ in self.keys]
        for kid, key in self.keys:
            if not KEY_ID_PATTERN.match(kid):
                raise VaultKeyError(f"vault key id {kid!r} must match {KEY_ID_PATTERN.pattern}")
            if len(key) != KEY_BYTES:
                raise VaultKeyError(f"vault key {kid!r} is {len(key)} bytes, AES-256 needs {KEY_BYTES}")
            if ids.count(kid) > 1:
                raise VaultKeyError(f"vault key id {kid!r} appears twice")
        if self.sealing and self.sealing not in ids:
            raise VaultKeyError(f"{ENV_SEAL}={self.sealing!r} is not one of the keys ({', '.join(ids)})")

    def __repr__(self) -> str:  # never print key bytes
        return f"VaultKeys(ids={self.ids!r})"

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.keys)

    @property
    def newest(self) -> tuple[str, bytes]:
        """``(key id, key)`` that seals new orders: the last entry, or the one ``sealing`` names."""
        if self.sealing:
            return next(k for k in self.keys if k[0] == self.sealing)
        return self.keys[-1]

    def get(self, key_id: str) -> bytes | None:
        """The key of ``key_id``, or None when this holder does not know it."""
        return next((k for i, k in self.keys if i == key_id), None)

    @classmethod
    def parse(cls, text: str, source: str = "vault keys") -> VaultKeys:
        """Keys from ``KEY_ID:BASE64`` entries (lines or commas). Raises :class:`VaultKeyError` naming
        ``source`` for a malformed entry, a key that is not 32 bytes of base64, a duplicate or no key."""
        out: list[tuple[str, bytes]] = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0]
            for entry in filter(None, (e.strip() for e in line.split(","))):
                kid, sep, b64 = entry.partition(":")
                if not sep:
                    raise VaultKeyError(f"{source} line {n}: expected KEY_ID:BASE64, got an entry without ':'")
                try:
                    key = base64.b64decode(b64.strip(), validate=True)
                except (binascii.Error, ValueError):
                    raise VaultKeyError(f"{source} line {n}: key {kid.strip()!r} is not base64") from None
                out.append((kid.strip(), key))
        if not out:
            raise VaultKeyError(f"{source} holds no key")
        return cls(tuple(out))

    @classmethod
    def from_file(cls, path: str | Path) -> VaultKeys:
        """Keys from a key file. Raises :class:`VaultKeyError` when it cannot be read or parsed, or when
        others than its owner may read it (mode must deny group and world: ``chmod 600``)."""
        p = Path(path)
        try:
            mode = p.stat().st_mode
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise VaultKeyError(f"{ENV_FILE}={p}: {exc.strerror or exc}") from exc
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise VaultKeyError(f"{ENV_FILE}={p}: readable by others (mode {stat.S_IMODE(mode):o}); "
                                f"chmod 600 {p}")
        return cls.parse(text, str(p))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> VaultKeys:
        """Keys from ``CROUPIER_VAULT_KEY_FILE`` (a key file) or ``CROUPIER_VAULT_KEYS`` (the entries
        themselves), not both; ``CROUPIER_VAULT_SEAL_KEY_ID`` optionally names the key that seals (default
        the newest). Raises :class:`VaultKeyError` when neither is set, they do not parse, or the sealing id
        is not among them."""
        from dataclasses import replace

        path, value = environ.get(ENV_FILE, "").strip(), environ.get(ENV_KEYS, "").strip()
        sealing = environ.get(ENV_SEAL, "").strip()
        if path and value:
            raise VaultKeyError(f"set {ENV_FILE} or {ENV_KEYS}, not both")
        if path:
            return replace(cls.from_file(path), sealing=sealing)
        if value:
            return replace(cls.parse(value, ENV_KEYS), sealing=sealing)
        raise VaultKeyError(f"the shoe service needs a vault key: set {ENV_FILE} (a file of KEY_ID:BASE64 "
                            f"lines, mode 600) or {ENV_KEYS}; `croupier vault-key new --file PATH` makes one")


def new_key_entry(key_id: str, key: bytes | None = None) -> str:
    """A ``KEY_ID:BASE64`` entry for a fresh 32-byte key from ``secrets`` (or the given ``key``)."""
    key = secrets.token_bytes(KEY_BYTES) if key is None else key
    VaultKeys(((key_id, key),))  # validates the id and the length
    return f"{key_id}:{base64.b64encode(key).decode()}"


def add_key(path: str | Path, key_id: str) -> VaultKeys:
    """Append a new key (the newest, which seals from the next start) to the key file at ``path``, creating
    it with mode 600 if needed. Returns every key the file now holds. Raises :class:`VaultKeyError` for a
    duplicate id or a file that does not parse."""
    p = Path(path)
    old = VaultKeys.from_file(p).keys if p.exists() else ()
    keys = VaultKeys((*old, (key_id, secrets.token_bytes(KEY_BYTES))))
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(new_key_entry(*keys.newest) + "\n")
    os.chmod(p, 0o600)
    return keys


def associated_data(table_id: str, shoe_id: str, key_id: str) -> bytes:
    """GCM associated data: :data:`AAD_LABEL`, table id, shoe id and key id, separated by NUL bytes."""
    return b"\x00".join((AAD_LABEL, table_id.encode(), shoe_id.encode(), key_id.encode()))


def seal(keys: VaultKeys, nonce: bytes, table_id: str, shoe_id: str, order: Sequence[str],
         salt_hex: str) -> tuple[str, str, bytes]:
    """Encrypt ``order`` and ``salt_hex`` under the newest key: ``(key_id, nonce hex, ciphertext+tag)``.
    ``nonce``: 12 fresh random bytes (raises ``ValueError`` otherwise)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"an AES-GCM nonce here is {NONCE_BYTES} bytes, got {len(nonce)}")
    kid, key = keys.newest
    plain = msgspec.json.encode(_Plain(salt=salt_hex, order=list(order)))
    return kid, nonce.hex(), AESGCM(key).encrypt(nonce, plain, associated_data(table_id, shoe_id, kid))


def open_sealed(keys: VaultKeys, table_id: str, shoe_id: str, key_id: str, nonce_hex: str,
                ciphertext: bytes) -> tuple[tuple[str, ...], str]:
    """Decrypt a sealed order: ``(order as loaded, salt hex)``. Raises :class:`VaultOpenError` for an
    unknown key id or a record that fails authentication."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key = keys.get(key_id)
    if key is None:
        raise VaultOpenError(f"sealed under key {key_id!r}, which this holder does not have (has {', '.join(keys.ids)})")
    try:
        nonce = bytes.fromhex(nonce_hex)
        plain = AESGCM(key).decrypt(nonce, ciphertext, associated_data(table_id, shoe_id, key_id))
        p = msgspec.json.decode(plain, type=_Plain)
    except (InvalidTag, ValueError, msgspec.DecodeError):
        raise VaultOpenError(f"the sealed order of shoe {shoe_id} does not authenticate under key {key_id!r} "
                             "(altered, moved to another table or shoe, or another key)") from None
    return tuple(p.order), p.salt


@dataclass(frozen=True, slots=True)
class Vault:
    """What the shoe service seals and opens with: its keys and a nonce source (``secrets`` at the edge,
    seeded in tests). :meth:`open` keeps the last few opened orders (in memory only)."""

    keys: VaultKeys
    nonce: Callable[[], bytes]
    #: opened records (never shown by ``repr``, never compared)
    _cache: dict[tuple[str, str, str, str, bytes], tuple[tuple[str, ...], str]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cache", {})

    def seal(self, table_id: str, shoe_id: str, order: Sequence[str], salt_hex: str) -> tuple[str, str, bytes]:
        """:func:`seal` with a fresh nonce."""
        return seal(self.keys, self.nonce(), table_id, shoe_id, order, salt_hex)

    def open(self, table_id: str, shoe_id: str, key_id: str, nonce_hex: str,
             ciphertext: bytes) -> tuple[tuple[str, ...], str]:
        """:func:`open_sealed`, cached by the whole record (raises :class:`VaultOpenError`)."""
        k = (table_id, shoe_id, key_id, nonce_hex, ciphertext)
        hit = self._cache.get(k)
        if hit is None:
            hit = open_sealed(self.keys, table_id, shoe_id, key_id, nonce_hex, ciphertext)
            if len(self._cache) >= 64:
                self._cache.pop(next(iter(self._cache)))
            self._cache[k] = hit
        return hit
