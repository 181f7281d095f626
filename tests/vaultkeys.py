"""The fixed vault keys of the test suite (never a production key) and seeded vaults for the cores.

``tests/conftest.py`` puts :data:`TEST_VAULT_KEYS` in ``CROUPIER_VAULT_KEYS`` for the whole session, so every
shoe service a test starts (in process or as a subprocess) seals under ``test-1``.
"""

from __future__ import annotations

import hashlib
import random

from contracts.vault import NONCE_BYTES, Vault, VaultKeys, new_key_entry

TEST_KEY = hashlib.sha256(b"croupier test vault key 1").digest()
OTHER_KEY = hashlib.sha256(b"croupier test vault key 2").digest()
TEST_VAULT_KEYS = new_key_entry("test-1", TEST_KEY)
KEYS = VaultKeys.parse(TEST_VAULT_KEYS)


def seeded_vault(seed: int = 0, keys: VaultKeys = KEYS) -> Vault:
    """A vault under ``keys`` whose nonces come from a seeded generator (tests only: production nonces are
    ``secrets.token_bytes``)."""
    rng = random.Random(f"nonce-{seed}")
    return Vault(keys, nonce=lambda: rng.randbytes(NONCE_BYTES))
