"""The shoe service: ``faststream run services.shoe.app:app``.

Entropy enters here, at the edge: ``secrets.SystemRandom`` shuffles, ``secrets.token_bytes`` salts and
draws the vault's AES-GCM nonces. So do the vault keys (:mod:`contracts.vault`): from
``CROUPIER_VAULT_KEY_FILE`` (a file of ``KEY_ID:BASE64`` lines, mode 600) or ``CROUPIER_VAULT_KEYS``, in the
process environment or in ``Settings.extra`` (and ``CROUPIER_VAULT_SEAL_KEY_ID``, the key that seals when not
the newest). Without a key the service refuses to start: building it
raises :class:`contracts.vault.VaultKeyError`, whose message says what to set (``faststream run`` fails
when it loads ``app``; ``services.create("shoe")`` and ``croupier serve`` raise it).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import Any

from contracts.vault import ENV_FILE, ENV_KEYS, ENV_SEAL, NONCE_BYTES, Vault, VaultKeys
from services.configs import test_tables
from services.runtime.app import Service, build_app, build_service
from services.runtime.settings import Settings
from services.shoe.core import Entropy, ShoeCore


def secure_entropy() -> Entropy:
    """The production entropy: a CSPRNG shuffle and a 16-byte salt from ``secrets``."""
    rng = secrets.SystemRandom()

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    return Entropy(shuffle=shuffle, salt=lambda: secrets.token_bytes(16))


def vault_keys(settings: Settings | None = None, environ: Mapping[str, str] | None = None) -> VaultKeys:
    """The vault keys: from ``settings.extra`` when it names ``CROUPIER_VAULT_KEY_FILE`` or
    ``CROUPIER_VAULT_KEYS``, else from the environment. Raises :class:`contracts.vault.VaultKeyError`
    when there is none or it does not parse."""
    extra = settings.extra if settings is not None else {}
    if extra.get(ENV_FILE) or extra.get(ENV_KEYS):
        return VaultKeys.from_env({ENV_SEAL: os.environ.get(ENV_SEAL, ""), **extra})
    return VaultKeys.from_env(os.environ if environ is None else environ)


def secure_vault(keys: VaultKeys) -> Vault:
    """The production vault: ``keys`` and 12-byte nonces from ``secrets``."""
    return Vault(keys, nonce=lambda: secrets.token_bytes(NONCE_BYTES))


def core(settings: Settings | None = None) -> ShoeCore:
    """The shoe core with the production entropy and vault (raises ``VaultKeyError`` without a key) and the
    test tables of :func:`services.configs.test_tables` (``CROUPIER_TEST_TABLES``)."""
    return ShoeCore(secure_entropy(), secure_vault(vault_keys(settings)),
                    test_tables(settings.extra if settings is not None else None))


def create(settings: Settings | None = None) -> Service:
    """The shoe service, to run inside another program. Raises ``VaultKeyError`` without a vault key."""
    settings = settings or Settings.from_env()
    return build_service(core(settings), settings)


def __getattr__(name: str) -> Any:
    """``app``, ``broker`` and ``host`` for ``faststream run services.shoe.app:app``, built on first use
    (so importing this module needs no key; loading ``app`` without one fails with ``VaultKeyError``)."""
    if name in ("app", "broker", "host"):
        built = dict(zip(("app", "broker", "host"), build_app(core())))
        globals().update(built)
        return built[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
