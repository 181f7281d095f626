"""The HTTP APIs' credentials: one bearer token per role, never from the command line, no default; and the
command API's bettor credentials, each bound to the player(s) it may act for.

Shared by the projection's query API (:mod:`services.projection.auth` says what each role may read) and the
command API (:mod:`services.command_api.actions` says what each role may send). Roles:

``dealer`` (the dealer console), ``bettor`` (a betting terminal), ``pit``, ``surveillance``, ``cage``,
``analyst``.

Role tokens come from the environment (``CROUPIER_API_TOKEN_<ROLE>``, e.g. ``CROUPIER_API_TOKEN_CAGE``) or from
a file named by ``CROUPIER_API_TOKENS_FILE`` with one ``role=token`` a line (``#`` comments; keep it mode 600);
the environment wins over the file for a role set in both.

**Bettor credentials** (the command API): a betting terminal's token is bound to the players it may act for,
by ``bettor:<player_id>=<token>`` lines of the same file. The same token on several lines binds it to each of
those players (one terminal at a seat where a patron bets behind); a player may have several tokens (one per
terminal). A line holds exactly one ``=`` (neither a player id nor a token written here contains one: a line
with more is refused, never split in a guess), and the player id is taken without its surrounding blanks.
The command API derives the actor of such a token's commands from it: a ``place_bet``, ``withdraw_bet`` or
``decide_option`` naming a player the token is not bound to is refused (403 ``not_your_player``). A plain
``bettor=<token>`` (or ``CROUPIER_API_TOKEN_BETTOR``) is the bettor *role* for the query API, which shows a
bettor only the public views; in the command API it is bound to no player and sends nothing.

Every token has at least :data:`MIN_TOKEN_LENGTH` characters. Two roles never share a token, nor a role and a
bettor credential (a token names one caller; :class:`BadCredentials` at load). Tokens are compared with
:func:`hmac.compare_digest`, every one of them (roles and bettors), so the time taken does not tell which came
closest. There is no default credential: :func:`load_tokens` and :func:`load_credentials` raise
:class:`NoCredentials` when none is configured, so an API refuses to start.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROLES = ("dealer", "bettor", "analyst", "cage", "pit", "surveillance", "count_team")
ENV_PREFIX = "CROUPIER_API_TOKEN_"
ENV_FILE = "CROUPIER_API_TOKENS_FILE"
MIN_TOKEN_LENGTH = 16
#: how a bettor credential's line starts in the tokens file: ``bettor:<player_id>=<token>``
BETTOR_LINE = "bettor:"
#: a player id a bettor credential may name (``contracts.bounds``: printable, at most 128 characters)
_PLAYER_ID = re.compile(r"[^\x00-\x1f\x7f]{1,128}")


class NoCredentials(RuntimeError):
    """No API credential is configured (the APIs have no default credential)."""


class BadCredentials(ValueError):
    """A credentials file or variable that cannot be used (unknown role, short token, unreadable file, a
    bettor line that names no player or holds more than one ``=``, a token shared by two callers)."""


def _check(role: str, token: str, where: str) -> None:
    if role not in ROLES:
        raise BadCredentials(f"{where}: unknown role {role!r}; roles: {', '.join(ROLES)}")
    if len(token) < MIN_TOKEN_LENGTH:
        raise BadCredentials(f"{where}: the {role} token must have at least {MIN_TOKEN_LENGTH} characters")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who presented a token: ``role``, and for a bettor credential the ``players`` it may act for (empty for
    every other role, and for the plain ``bettor`` role token, which is bound to no player)."""

    role: str
    players: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Credentials:
    """Every configured credential: ``roles`` (``{role: token}``) and ``bettors`` (``{token: players}``,
    the command API's bettor credentials). Build it with :func:`load_credentials` (or directly: it checks
    the tokens' length and that no two callers share one; :class:`BadCredentials`)."""

    roles: Mapping[str, str] = field(default_factory=dict)
    bettors: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", dict(self.roles))
        object.__setattr__(self, "bettors", {t: frozenset(p) for t, p in self.bettors.items()})
        for token, players in self.bettors.items():
            if len(token) < MIN_TOKEN_LENGTH:
                raise BadCredentials(f"a bettor token (for {', '.join(sorted(players))}) must have at least "
                                     f"{MIN_TOKEN_LENGTH} characters")
            if not players:
                raise BadCredentials("a bettor credential must be bound to at least one player")
        check_distinct(self.roles, self.bettors)

    def __bool__(self) -> bool:
        return bool(self.roles or self.bettors)

    def identify(self, presented: str) -> Caller | None:
        """The caller whose token is ``presented``, or None. Every token (each role's and each bettor
        credential's) is compared, in constant time each, whatever matched."""
        found: Caller | None = None
        given = presented.encode()
        for role, token in self.roles.items():
            if hmac.compare_digest(given, token.encode()):
                found = Caller(role)
        for token, players in self.bettors.items():
            if hmac.compare_digest(given, token.encode()):
                found = Caller("bettor", players)
        return found


def check_distinct(tokens: Mapping[str, str], bettors: Mapping[str, Iterable[str]] | None = None) -> None:
    """Raise :class:`BadCredentials` naming the callers when two roles share a token, or a role and a bettor
    credential do (the token could not say who presents it: the later one would silently win)."""
    by_token: dict[str, list[str]] = {}
    for role, token in tokens.items():
        by_token.setdefault(token, []).append(role)
    for token, players in (bettors or {}).items():
        if token in by_token:
            by_token[token].append("bettor:" + ",".join(sorted(players)))
    shared = sorted(sorted(roles) for roles in by_token.values() if len(roles) > 1)
    if shared:
        raise BadCredentials("roles share a token (each role needs its own): "
                             + "; ".join(" and ".join(r) for r in shared))


def _read_file(path: str | Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise BadCredentials(f"{ENV_FILE}={p}: cannot read it ({e.strerror})") from None
    roles: dict[str, str] = {}
    bettors: dict[str, set[str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, token = line.partition("=")
        if not sep:
            raise BadCredentials(f"{p}:{n}: expected role=token or bettor:<player_id>=<token>")
        if name.strip().lower().startswith(BETTOR_LINE):
            if line.count("=") != 1:
                raise BadCredentials(f"{p}:{n}: a bettor line holds exactly one '=' (bettor:<player_id>=<token>; "
                                     "a player id or token with '=' cannot be written here)")
            player, token = name.strip()[len(BETTOR_LINE):].strip(), token.strip()
            if not _PLAYER_ID.fullmatch(player):
                raise BadCredentials(f"{p}:{n}: a bettor line names its player: bettor:<player_id>=<token> "
                                     "(1-128 printable characters)")
            if len(token) < MIN_TOKEN_LENGTH:
                raise BadCredentials(f"{p}:{n}: the bettor token of {player!r} must have at least "
                                     f"{MIN_TOKEN_LENGTH} characters")
            bettors.setdefault(token, set()).add(player)
            continue
        role, token = name.strip().lower(), token.strip()
        _check(role, token, f"{p}:{n}")
        roles[role] = token
    return roles, bettors


def read_tokens_file(path: str | Path) -> dict[str, str]:
    """``{role: token}`` from a tokens file (``role=token`` lines; its ``bettor:<player_id>=<token>`` lines
    are checked and left out: :func:`read_credentials_file` has them); raises :class:`BadCredentials`."""
    return _read_file(path)[0]


def read_credentials_file(path: str | Path) -> Credentials:
    """Every credential of a tokens file: its role tokens and its bettor credentials (``{token: players}``);
    raises :class:`BadCredentials`."""
    roles, bettors = _read_file(path)
    return Credentials(roles, {t: frozenset(p) for t, p in bettors.items()})


def load_credentials(environ: Mapping[str, str] | None = None, what: str = "the command API") -> Credentials:
    """Every configured credential: the file's (``CROUPIER_API_TOKENS_FILE``: role tokens and bettor
    credentials), then the environment's role tokens over it. ``what`` names the API in the error. Raises
    :class:`NoCredentials` when there is none and :class:`BadCredentials` for an unusable one, or for a token
    two callers share (:func:`check_distinct`)."""
    env = os.environ if environ is None else environ
    roles: dict[str, str] = {}
    bettors: dict[str, set[str]] = {}
    if env.get(ENV_FILE):
        roles, bettors = _read_file(env[ENV_FILE])
    for key, value in env.items():
        if key.startswith(ENV_PREFIX) and value:
            role = key[len(ENV_PREFIX):].lower()
            _check(role, value, key)
            roles[role] = value
    if not roles and not bettors:
        raise NoCredentials(f"{what} has no credential configured: set {ENV_PREFIX}<ROLE> "
                            f"(roles: {', '.join(ROLES)}) or {ENV_FILE}=<file of role=token and "
                            "bettor:<player_id>=<token> lines>")
    return Credentials(roles, {t: frozenset(p) for t, p in bettors.items()})


def load_tokens(environ: Mapping[str, str] | None = None, what: str = "the query API") -> dict[str, str]:
    """Every configured ``{role: token}`` (file first, then the environment over it; the file's bettor
    credentials are checked, not returned). ``what`` names the API in the error. Raises
    :class:`NoCredentials` when no role has a token and :class:`BadCredentials` for an unusable one, or for
    a token two callers share (:func:`check_distinct`)."""
    message = (f"{what} has no credential configured: set {ENV_PREFIX}<ROLE> (roles: {', '.join(ROLES)}) or "
               f"{ENV_FILE}=<file of role=token lines>")
    try:
        roles = load_credentials(environ, what).roles
    except NoCredentials:
        raise NoCredentials(message) from None
    if not roles:
        raise NoCredentials(message)
    return dict(roles)


def check_roles(tokens: Mapping[str, str], known: Iterable[str] = ROLES,
                bettors: Mapping[str, Iterable[str]] | None = None) -> None:
    """Raise :class:`NoCredentials` for no token at all (no role token and no bettor credential),
    ``ValueError`` for a role not in ``known`` and :class:`BadCredentials` (a ``ValueError``) for a token two
    callers share."""
    if not tokens and not bettors:
        raise NoCredentials("the API needs at least one role's credential")
    known = tuple(known)
    unknown = sorted(set(tokens) - set(known))
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)}; roles: {', '.join(known)}")
    check_distinct(tokens, bettors)


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
