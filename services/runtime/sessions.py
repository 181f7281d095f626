"""Browser sessions for the HTTP APIs: a role's token entered once on a login page, then a cookie.

The APIs take ``Authorization: Bearer <token>`` (:mod:`services.runtime.credentials`). A browser cannot send
that header on a page load or an ``EventSource``, so a person logs in with their role's token (checked with
:meth:`~services.runtime.credentials.Credentials.identify`, constant time) and gets a session cookie (:data:`COOKIE`:
``HttpOnly``, ``SameSite=Strict``, ``Path=/``, ``Secure`` over HTTPS) holding a random session id, never the
token. :class:`SessionAuth` (ASGI middleware) maps the cookie back to its caller and, for a request that
brings no ``Authorization`` header of its own, adds the bearer header of the token it logged in with (a
role's, or a betting terminal's bettor credential bound to its players), so every route behind it (the
query API, the command API, the pages) accepts the cookie as well as the header and checks roles as it
always did.

CSRF: a request that changes state (any method but GET, HEAD, OPTIONS) authenticated by the cookie must come
from this origin: its ``Origin`` header (else its ``Referer``) must be this server's own ``scheme://host``
(the request's ``Host``); else it is refused 403 ``cross_origin`` and passed on to nothing. ``SameSite=Strict``
already keeps the cookie off other sites' requests; the check covers browsers and proxies that do not.
Logout (:meth:`Sessions.logout`) forgets the session at once. Sessions live in the process's memory (at most
``max_sessions``, the oldest forgotten first), each for ``ttl_s`` seconds; a restart logs everyone out.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http.cookies import SimpleCookie
from typing import Any

from services.runtime.credentials import Credentials

COOKIE = "croupier_session"
#: ASGI scope key of the role a session cookie carried (absent when none)
SCOPE_ROLE = "croupier.session_role"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_TTL_S = 12 * 3600


class Sessions:
    """Session id -> the caller who logged in, in memory. ``credentials``: ``{role: token}`` or every
    credential (:class:`~services.runtime.credentials.Credentials`: a betting terminal's bettor credential,
    bound to its players, logs in too, as the ``bettor`` role acting for those players); ``clock``: seconds
    (monotonic); ``new_id``: the session ids' entropy (the edge's)."""

    def __init__(self, credentials: Mapping[str, str] | Credentials, ttl_s: float = DEFAULT_TTL_S,
                 max_sessions: int = 10_000, clock: Callable[[], float] = time.monotonic,
                 new_id: Callable[[], str] = lambda: secrets.token_urlsafe(32)):
        self.credentials = credentials if isinstance(credentials, Credentials) else Credentials(credentials)
        self.tokens = dict(self.credentials.roles)
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.clock = clock
        self.new_id = new_id
        #: session id -> (role, the token it logged in with, expiry)
        self._sessions: OrderedDict[str, tuple[str, str, float]] = OrderedDict()

    def login(self, presented: str) -> tuple[str, str] | None:
        """``(session id, role)`` for a known token (every token compared in constant time), else None."""
        caller = self.credentials.identify(presented) if presented else None
        if caller is None:
            return None
        sid = self.new_id()
        self._sessions[sid] = (caller.role, presented, self.clock() + self.ttl_s)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return sid, caller.role

    def _live(self, sid: str | None) -> tuple[str, str, float] | None:
        if not sid:
            return None
        got = self._sessions.get(sid)
        if got is None:
            return None
        if got[2] <= self.clock():
            del self._sessions[sid]
            return None
        return got

    def role(self, sid: str | None) -> str | None:
        """The role of a live session, else None (an expired one is forgotten)."""
        got = self._live(sid)
        return got[0] if got is not None else None

    def token(self, sid: str | None) -> str | None:
        """The token a live session logged in with (what its requests present as their bearer), else None."""
        got = self._live(sid)
        return got[1] if got is not None else None

    def logout(self, sid: str | None) -> None:
        """Forget the session (no error for an unknown one)."""
        if sid:
            self._sessions.pop(sid, None)


def cookie_value(headers: list[tuple[bytes, bytes]], name: str = COOKIE) -> str | None:
    """The named cookie of an ASGI request's headers, else None."""
    for k, v in headers:
        if k == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(v.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed Cookie header is no session
                jar = SimpleCookie()
            if name in jar:
                return jar[name].value
    return None


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for k, v in headers:
        if k == name:
            return v.decode("latin-1")
    return None


def own_origin(scope: Mapping[str, Any]) -> str:
    """``scheme://host[:port]`` of the server as the request addressed it (its ``Host`` header)."""
    host = _header(scope.get("headers", []), b"host") or ""
    return f"{scope.get('scheme', 'http')}://{host}"


def same_origin(scope: Mapping[str, Any]) -> bool:
    """Whether the request's ``Origin`` (else ``Referer``) is this server's own origin."""
    headers = scope.get("headers", [])
    mine = own_origin(scope)
    origin = _header(headers, b"origin")
    if origin is not None and origin != "null":
        return origin == mine
    referer = _header(headers, b"referer")
    return referer is not None and (referer == mine or referer.startswith(mine + "/"))


def set_cookie_header(sid: str, ttl_s: float, secure: bool) -> str:
    """The ``Set-Cookie`` value of a new session."""
    return (f"{COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age={int(ttl_s)}"
            + ("; Secure" if secure else ""))


def clear_cookie_header(secure: bool) -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" + ("; Secure" if secure else "")


class SessionAuth:
    """ASGI middleware: a session cookie becomes its role's bearer header (see the module docstring);
    a cookie-authenticated state-changing request from another origin is refused 403 ``cross_origin``."""

    def __init__(self, app: Any, sessions: Sessions):
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        sid = cookie_value(headers)
        role, token = self.sessions.role(sid), self.sessions.token(sid)
        if role is not None and token is not None:
            scope = dict(scope)
            scope[SCOPE_ROLE] = role
            if _header(headers, b"authorization") is None:
                if scope.get("method", "GET") not in SAFE_METHODS and not same_origin(scope):
                    await _refuse(send)
                    return
                headers.append((b"authorization", f"Bearer {token}".encode()))
                scope["headers"] = headers
        await self.app(scope, receive, send)


async def _refuse(send: Any) -> None:
    body = json.dumps({"detail": {"reason": "cross_origin", "field": "",
                                  "detail": "a request that changes state, sent with the session cookie, must come "
                                            "from this server's own pages (its Origin or Referer did not match)"}
                       }).encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["COOKIE", "SCOPE_ROLE", "SessionAuth", "Sessions", "clear_cookie_header", "cookie_value", "own_origin",
           "same_origin", "set_cookie_header"]
