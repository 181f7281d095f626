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
    assert read_tokens_file(path) == tokens and len(set(tokens.values())) == 7  # one a role, count_team too


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


# ---- bettor credentials bound to their players (the command API) ---------------------------------------------
def _file(tmp_path, text: str):  # type: ignore[no-untyped-def]
    f = tmp_path / "tokens"
    f.write_text(text)
    return {"CROUPIER_API_TOKENS_FILE": str(f)}


def test_bettor_lines_bind_a_token_to_its_players(tmp_path):
    from services.runtime.credentials import Caller, load_credentials

    env = _file(tmp_path, "dealer=dealer-token-0123456789\n"
                          "bettor:p-1=terminal-one-0123456\n"
                          "# one terminal at seat 3, a patron betting behind: the same token on two lines\n"
                          "bettor: p-3 = terminal-three-012345\n"
                          "BETTOR:Mr Smith #7=terminal-three-012345\n")
    creds = load_credentials(env)
    assert creds.roles == {"dealer": "dealer-token-0123456789"}
    assert creds.bettors == {"terminal-one-0123456": frozenset({"p-1"}),
                             "terminal-three-012345": frozenset({"p-3", "Mr Smith #7"})}
    assert creds.identify("terminal-one-0123456") == Caller("bettor", frozenset({"p-1"}))
    assert creds.identify("terminal-three-012345") == Caller("bettor", frozenset({"p-3", "Mr Smith #7"}))
    assert creds.identify("dealer-token-0123456789") == Caller("dealer")
    assert creds.identify("terminal-one-012345") is None and creds.identify("") is None
    # the query API reads the same file: its role tokens, the bettor lines checked and left out
    assert load_tokens(env) == {"dealer": "dealer-token-0123456789"}
    assert read_tokens_file(env["CROUPIER_API_TOKENS_FILE"]) == {"dealer": "dealer-token-0123456789"}


@pytest.mark.parametrize("line, match", [
    ("bettor:p-1=short", "at least 16"),
    ("bettor:=terminal-one-0123456", "names its player"),
    ("bettor:p=1=terminal-one-0123456", "exactly one '='"),
    ("bettor:p-1=terminal-one-0123456==", "exactly one '='"),
    ("bettor:" + "x" * 129 + "=terminal-one-0123456", "names its player"),
    ("bettor p-1 terminal-one-0123456", "expected role=token or bettor:<player_id>=<token>"),
])
def test_a_bettor_line_that_cannot_be_read_one_way_only_is_refused_at_load(tmp_path, line, match):
    from services.runtime.credentials import load_credentials

    with pytest.raises(BadCredentials, match=match):
        load_credentials(_file(tmp_path, f"dealer=dealer-token-0123456789\n{line}\n"))


def test_a_bettor_token_shared_with_a_role_is_refused_and_no_credential_is_no_default(tmp_path):
    from services.runtime.credentials import Credentials, load_credentials

    same = "same-token-0123456789"
    with pytest.raises(BadCredentials, match="bettor:p-1 and cage"):
        load_credentials({**_file(tmp_path, f"bettor:p-1={same}\n"), "CROUPIER_API_TOKEN_CAGE": same})
    with pytest.raises(BadCredentials, match="at least 16"):
        Credentials({}, {"short": {"p-1"}})
    with pytest.raises(BadCredentials, match="at least one player"):
        Credentials({}, {"terminal-one-0123456": set()})
    with pytest.raises(NoCredentials, match="bettor:<player_id>=<token>"):
        load_credentials({})
    # bettor lines alone: the command API has credentials, the query API (role tokens only) has none
    only = _file(tmp_path, "bettor:p-1=terminal-one-0123456\n")
    assert load_credentials(only).bettors == {"terminal-one-0123456": frozenset({"p-1"})}
    with pytest.raises(NoCredentials, match="CROUPIER_API_TOKEN_<ROLE>"):
        load_tokens(only)


def test_every_token_is_compared_in_constant_time_whichever_matches(monkeypatch):
    import hmac

    from services.runtime import credentials as C

    creds = C.Credentials({"dealer": "dealer-token-0123456789", "pit": "pit-token-012345678901"},
                          {"terminal-one-0123456": {"p-1"}, "terminal-two-0123456": {"p-2"}})
    calls: list[bytes] = []
    compare = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(b)
        return compare(a, b)

    monkeypatch.setattr(C.hmac, "compare_digest", counting)
    for presented, who in (("dealer-token-0123456789", "dealer"), ("terminal-two-0123456", "bettor"),
                           ("nobody-at-all-01234567", None)):
        calls.clear()
        found = creds.identify(presented)
        assert (found.role if found else None) == who
        assert sorted(calls) == sorted(t.encode() for t in ("dealer-token-0123456789", "pit-token-012345678901",
                                                            "terminal-one-0123456", "terminal-two-0123456"))
