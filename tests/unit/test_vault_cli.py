"""The vault key at the edges: ``croupier serve`` refuses the shoe service without one, ``croupier vault-key new``
rotates, and the demo's development key is made once per prefix with mode 600."""

from __future__ import annotations

import stat

from typer.testing import CliRunner

from contracts.vault import VaultKeys
from croupier.cli import app
from croupier.devkey import with_dev_key
from services.runtime.settings import Settings


def _no_key(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("CROUPIER_VAULT_KEYS", raising=False)
    monkeypatch.delenv("CROUPIER_VAULT_KEY_FILE", raising=False)


def test_serve_refuses_the_shoe_service_without_a_vault_key(monkeypatch):
    _no_key(monkeypatch)
    r = CliRunner().invoke(app, ["serve", "--services", "shoe,dealing", "--bootstrap", "127.0.0.1:1"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: the shoe service needs a vault key: set CROUPIER_VAULT_KEY_FILE")
    assert "--dev-vault-key" in r.stderr
    monkeypatch.setenv("CROUPIER_VAULT_KEYS", "k1:not-base64")
    r = CliRunner().invoke(app, ["serve", "--services", "shoe", "--dev-vault-key", "--bootstrap", "127.0.0.1:1"])
    assert r.exit_code == 2 and "is not base64" in r.stderr  # a broken key is never replaced by a dev key


def test_vault_key_new_appends_the_newest_key_and_prints_no_key(tmp_path):
    path = tmp_path / "keys" / "vault.keys"
    r1 = CliRunner().invoke(app, ["vault-key", "new", "--file", str(path), "--id", "k1"])
    r2 = CliRunner().invoke(app, ["vault-key", "new", "--file", str(path), "--id", "k2"])
    assert r1.exit_code == r2.exit_code == 0, r2.output
    assert r2.stdout.strip() == f"{path}: keys k1, k2; k2 seals new shoes from the shoe service's next start"
    keys = VaultKeys.from_file(path)
    assert keys.ids == ("k1", "k2") and keys.newest[0] == "k2"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert all(line.split(":")[1] not in r1.stdout + r2.stdout for line in path.read_text().splitlines())
    r = CliRunner().invoke(app, ["vault-key", "new", "--file", str(path), "--id", "k1"])
    assert r.exit_code == 2 and "appears twice" in r.stderr


def test_the_development_key_is_made_once_per_prefix_and_a_configured_key_wins(tmp_path, monkeypatch):
    _no_key(monkeypatch)
    s, path, created = with_dev_key(Settings(topic_prefix="demo-1."), root=tmp_path)
    assert created and path == tmp_path / "var" / "vault" / "demo-1.keys"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and s.extra["CROUPIER_VAULT_KEY_FILE"] == str(path)
    _, path2, created2 = with_dev_key(Settings(topic_prefix="demo-1."), root=tmp_path)
    assert path2 == path and not created2
    assert VaultKeys.from_file(path).ids == ("dev-1",)
    monkeypatch.setenv("CROUPIER_VAULT_KEY_FILE", str(path))
    same, none, _ = with_dev_key(Settings(topic_prefix="other."), root=tmp_path)
    assert none is None and same.extra == {}
