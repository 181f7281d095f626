"""The HTTP APIs' credentials: one bearer token per role, never from the command line, no default.

Shared by the projection's query API (:mod:`services.projection.auth` says what each role may read) and the
command API (:mod:`services.command_api.actions` says what each role may send). Roles:

``dealer`` (the dealer console), ``bettor`` (a betting terminal), ``pit``, ``surveillance``, ``cage``,
``analyst``.

Tokens come from the environment (``CROUPIER_API_TOKEN_<ROLE>``, e.g. ``CROUPIER_API_TOKEN_CAGE``) or from a
file named by ``CROUPIER_API_TOKENS_FILE`` with one ``role=token`` a line (``#`` comments; keep it mode 600);
the environment wins over the file for a role set in both. Two roles never share a token (a token names one
role; :class:`BadCredentials` at load). Each token has at least
:data:`MIN_TOKEN_LENGTH` characters. Tokens are compared with :func:`hmac.compare_digest`, every role's, so
the time taken does not tell which role came closest. There is no default credential: :func:`load_tokens`
raises :class:`NoCredentials` when none is configured, so an API refuses to start.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

ROLES = ("dealer", "bettor", "analyst", "cage", "pit", "surveillance")
ENV_PREFIX = "CROUPIER_API_TOKEN_"
ENV_FILE = "CROUPIER_API_TOKENS_FILE"
MIN_TOKEN_LENGTH = 16


class NoCredentials(RuntimeError):
    """No API credential is configured (the APIs have no default credential)."""


class BadCredentials(ValueError):
    """A credentials file or variable that cannot be used (unknown role, short token, unreadable file)."""


def _check(role: str, token: str, where: str) -> None:
    if role not in ROLES:
        raise BadCredentials(f"{where}: unknown role {role!r}; roles: {', '.join(ROLES)}")
    if len(token) < MIN_TOKEN_LENGTH:
        raise BadCredentials(f"{where}: the {role} token must have at least {MIN_TOKEN_LENGTH} characters")


def check_distinct(tokens: Mapping[str, str]) -> None:
    """Raise :class:`BadCredentials` naming the roles when two roles share a token (the token could not say
    which role presents it: the later role would silently win)."""
    by_token: dict[str, list[str]] = {}
    for role, token in tokens.items():
        by_token.setdefault(token, []).append(role)
    shared = sorted(sorted(roles) for roles in by_token.values() if len(roles) > 1)
    if shared:
        raise BadCredentials("roles share a token (each role needs its own): "
                             + "; ".join(" and ".join(r) for r in shared))


def read_tokens_file(path: str | Path) -> dict[str, str]:
    """``{role: token}`` from a ``role=token`` per line file; raises :class:`BadCredentials`."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise BadCredentials(f"{ENV_FILE}={p}: cannot read it ({e.strerror})") from None
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        role, sep, token = line.partition("=")
        if not sep:
            raise BadCredentials(f"{p}:{n}: expected role=token")
        role, token = role.strip().lower(), token.strip()
        _check(role, token, f"{p}:{n}")
        out[role] = token
    return out


def load_tokens(environ: Mapping[str, str] | None = None, what: str = "the query API") -> dict[str, str]:
    """Every configured ``{role: token}`` (file first, then the environment over it). ``what`` names the API
    in the error. Raises :class:`NoCredentials` when there is none and :class:`BadCredentials` for an
    unusable one, or for two roles sharing one token (:func:`check_distinct`)."""
    env = os.environ if environ is None else environ
    tokens: dict[str, str] = {}
    if env.get(ENV_FILE):
        tokens.update(read_tokens_file(env[ENV_FILE]))
    for key, value in env.items():
        if key.startswith(ENV_PREFIX) and value:
            role = key[len(ENV_PREFIX):].lower()
            _check(role, value, key)
            tokens[role] = value
    if not tokens:
        raise NoCredentials(f"{what} has no credential configured: set {ENV_PREFIX}<ROLE> "
                            f"(roles: {', '.join(ROLES)}) or {ENV_FILE}=<file of role=token lines>")
    check_distinct(tokens)
    return tokens


def check_roles(tokens: Mapping[str, str], known: Iterable[str] = ROLES) -> None:
    """Raise :class:`NoCredentials` for no token, ``ValueError`` for a role not in ``known`` and
    :class:`BadCredentials` (a ``ValueError``) for two roles sharing one token."""
    if not tokens:
        raise NoCredentials("the API needs at least one role's credential")
    known = tuple(known)
    unknown = sorted(set(tokens) - set(known))
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)}; roles: {', '.join(known)}")
    check_distinct(tokens)


def role_of(tokens: Mapping[str, str], presented: str) -> str | None:
    """The role whose token is ``presented`` (every role compared in constant time), or None."""
    found = None
    for role, token in tokens.items():
        if hmac.compare_digest(presented.encode(), token.encode()):
            found = role
    return found


def write_ephemeral_tokens(path: str | Path) -> dict[str, str]:
    """Fresh random tokens for every role, written to ``path`` (mode 600, parent created) as
    ``role=token`` lines; for the demo. Returns them."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tokens = {role: secrets.token_urlsafe(24) for role in ROLES}
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IRUSR | stat.S_IWUSR)
    with os.fdopen(fd, "w") as f:
        f.write("# Croupier API tokens (ephemeral, written by croupier demo)\n")
        f.writelines(f"{r}={t}\n" for r, t in tokens.items())
    os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)
    return tokens
