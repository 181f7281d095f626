"""Development vault keys for ``croupier demo`` and ``croupier serve --dev-vault-key``.

A real floor's shoe service gets its key from the operator (``CROUPIER_VAULT_KEY_FILE``, a mounted secret):
nothing here invents one silently. When asked, or for the demo, a key file is made under
``var/vault/`` (mode 600, one ``dev-1:BASE64`` line) and reused on the next start with the same topic
prefix, so a restarted development floor can still open its open shoes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from contracts.vault import ENV_FILE, ENV_KEYS, VaultKeyError, VaultKeys, add_key
from services.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[1]


def configured(settings: Settings) -> bool:
    """True when a vault key is configured (``Settings.extra`` or the environment) and parses. Raises
    :class:`VaultKeyError` for one that is configured but broken (never replaced by a development key)."""
    import os

    for env in (settings.extra, os.environ):
        if env.get(ENV_FILE) or env.get(ENV_KEYS):
            VaultKeys.from_env(env)
            return True
    return False


def dev_key_file(prefix: str, root: Path = REPO) -> tuple[Path, bool]:
    """The development key file for a topic prefix, ``var/vault/<prefix>.keys``: ``(path, created)``."""
    path = root / "var" / "vault" / f"{prefix.rstrip('.') or 'default'}.keys"
    if path.exists():
        VaultKeys.from_file(path)  # mode and contents checked
        return path, False
    add_key(path, "dev-1")
    return path, True


def with_dev_key(settings: Settings, root: Path = REPO) -> tuple[Settings, Path | None, bool]:
    """``settings`` unchanged when a key is configured, else with a development key file in
    ``Settings.extra``: ``(settings, dev key path or None, created)``."""
    if configured(settings):
        return settings, None, False
    path, created = dev_key_file(settings.topic_prefix, root)
    return replace(settings, extra={**settings.extra, ENV_FILE: str(path)}), path, created


__all__ = ["VaultKeyError", "configured", "dev_key_file", "with_dev_key"]
