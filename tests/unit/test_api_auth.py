"""Query API credentials: per role, from the environment or a file, no default, constant-time lookup."""

from __future__ import annotations

import os
import stat

import pytest

from services.projection.auth import (
    BadCredentials,
    NoCredentials,
    load_tokens,
    read_tokens_file,
    role_of,
    write_ephemeral_tokens,
)


def test_no_credential_is_a_clear_error():
    with pytest.raises(NoCredentials, match="CROUPIER_API_TOKEN_<ROLE>"):
        load_tokens({})
    with pytest.raises(NoCredentials):
        load_tokens({"CROUPIER_SURVEILLANCE_TOKEN": "old-single-token-123456"})  # the old variable opens nothing


def test_environment_per_role_and_file(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# roles\ncage = cage-from-file-0123456\npit=pit-from-file-01234567\n")
    got = load_tokens({"CROUPIER_API_TOKENS_FILE": str(f), "CROUPIER_API_TOKEN_CAGE": "cage-from-env-0123456"})
    assert got == {"cage": "cage-from-env-0123456", "pit": "pit-from-file-01234567"}
    assert role_of(got, "pit-from-file-01234567") == "pit" and role_of(got, "pit-from-file-0123456") is None


@pytest.mark.parametrize("env, match", [
    ({"CROUPIER_API_TOKEN_CROUPIER": "x" * 20}, "unknown role"),
    ({"CROUPIER_API_TOKEN_CAGE": "short"}, "at least 16"),
    ({"CROUPIER_API_TOKENS_FILE": "/nonexistent/tokens"}, "cannot read"),
])
def test_bad_credentials(env, match):
    with pytest.raises(BadCredentials, match=match):
        load_tokens(env)


def test_ephemeral_tokens_file_is_private_and_readable_back(tmp_path):
    path = tmp_path / "var" / "api-tokens"
    tokens = write_ephemeral_tokens(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_tokens_file(path) == tokens and len(set(tokens.values())) == 6


def test_two_roles_sharing_one_token_are_refused_at_load(tmp_path):
    from services.runtime.credentials import check_roles

    same = "shared-token-0123456789"
    with pytest.raises(BadCredentials, match="roles share a token .*: dealer and pit$"):
        load_tokens({"CROUPIER_API_TOKEN_DEALER": same, "CROUPIER_API_TOKEN_PIT": same})
    f = tmp_path / "tokens"
    f.write_text(f"cage={same}\n")
    # the file's and the environment's tokens together: the clash is found across them
    with pytest.raises(BadCredentials, match="cage and surveillance"):
        load_tokens({"CROUPIER_API_TOKENS_FILE": str(f), "CROUPIER_API_TOKEN_SURVEILLANCE": same})
    # the environment replacing the file's token for the same role is no clash
    assert load_tokens({"CROUPIER_API_TOKENS_FILE": str(f), "CROUPIER_API_TOKEN_CAGE": same}) == {"cage": same}
    with pytest.raises(ValueError, match="dealer and pit"):  # an app given tokens directly refuses too
        check_roles({"dealer": same, "pit": same})
