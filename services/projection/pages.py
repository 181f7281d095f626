"""The pit's pages: server-rendered HTML over the projection's state, pushed live by Server-Sent Events.

Pages (Jinja2 templates in ``services/projection/templates``, one small script ``static/pit.js``; nothing
fetched from elsewhere):

=================== ===================================================== ===================================
path                what                                                  roles
=================== ===================================================== ===================================
``/``               every table: status, variant, shoe and round, cards   every role; drop, win, hold %
                    out, last result, table result, the five scoreboards  and open alerts for cage, pit,
                    (``/floor`` is the query API's JSON of the same)      surveillance
``/console/{id}``   one table: the round (cards with the rule behind       every role; bets, seats and
                    each, points, result, bets and settlement), seats,     settlements for dealer, pit,
                    public odds, scoreboards, recent rounds; the dealer's   surveillance and cage; forms for
                    console forms (through the command API)                 what the role may send (dealer,
                                                                            bettor); read-only otherwise
``/surveillance``   per table the surveillance odds (true remaining         surveillance
                    composition) beside the public ones; alerts; players
                    by expected gain; voided rounds
``/cage``           ledger balances per table (``?gaming_day=`` /           cage, pit
                    ``?shoe_id=``), latest entries
``/login``          enter a role's token; a session cookie                  anyone
                    (:mod:`services.runtime.sessions`); ``/logout``
``/live/{page}``    the page's Server-Sent Events (``frag`` frames: an      as the page
                    element's new HTML; ``status``: ready or not)
=================== ===================================================== ===================================

A page the role may not see is a 403 page saying so; no session is a redirect to ``/login``. Each live
stream is a :class:`~services.projection.live.Subscriber` of the :class:`~services.projection.live.LiveFeed`
keyed by what it shows (the surveillance odds only under the surveillance page's key, which only the
surveillance role may open), so no frame of the surveillance view is ever rendered for another role.

The parts, each in the module named for it: :mod:`services.projection.page_terms` (who may open each page, the
console's forms, the pages' words and headers; its names re-exported here) and
:mod:`services.projection.page_frags` (the HTML parts from the projection's state and the live feed's frames,
:class:`~services.projection.page_frags.PageFragments`, which :class:`PitPages` serves).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from services.projection.core import ProjectionState
from services.projection.live import HEARTBEAT_S, LiveFeed
from services.projection.page_frags import PageFragments
from services.projection.page_terms import (
    _ROUND_ID,
    _TABLE_ID,
    FORM_CONFIRMS,
    FORM_KEYS,
    FORM_ROLES,
    FORMS,
    MONEY_ROLES,
    PAGE_HEADERS,
    PAGE_ROLES,
    PAGE_TITLES,
    ROUND_READERS,
    SCOREBOARD_LAST,
    _env,
    _is_date,
    _safe_next,
    frame,
    game_label,
)
from services.projection.pit_views import PitSettings
from services.runtime.sessions import (
    SCOPE_ROLE,
    Sessions,
    clear_cookie_header,
    cookie_value,
    same_origin,
    set_cookie_header,
)


class PitPages(PageFragments):
    """The pages over one projection host. ``tables()``: ``{table id: ProjectionState}`` now;
    ``feed``: the live fan-out (its render is set here); ``sessions``: logins; ``ready()``: readiness;
    ``may_send``: ``{role: actions}`` of the command API (None: no command API here, the console is read-only);
    ``command_base``: where the command API is mounted (``/command``); ``profiles``: table profiles for the
    open form; ``secure``: cookies with ``Secure`` (HTTPS); ``settings``: the pit's figures' settings (default
    from the environment: :meth:`PitSettings.from_env`, ``ValueError`` for a bad one); ``clock``: UTC now (the
    gaming day and shift shown); ``answer_within_ms``: how long a console action waits for the command API's
    answer before the console says there is none (the API's own wait plus a margin)."""

    def __init__(self, tables: Callable[[], Mapping[str, ProjectionState]], feed: LiveFeed, sessions: Sessions,
                 ready: Callable[[], bool], may_send: Mapping[str, frozenset[str]] | None = None,
                 command_base: str | None = None, profiles: tuple[str, ...] = (), secure: bool = False,
                 settings: PitSettings | None = None, clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 replay: Callable[[str, str | None], Awaitable[dict[str, Any]]] | None = None,
                 answer_within_ms: int = 15_000):
        self.tables = tables
        #: how long the console waits for the command API's answer before saying it has none (ms)
        self.answer_within_ms = answer_within_ms
        self.settings = settings if settings is not None else PitSettings.from_env()
        self.clock = clock
        self.feed = feed
        self.sessions = sessions
        self.ready = ready
        self.may_send = may_send
        self.command_base = command_base if may_send is not None else None
        self.profiles = profiles
        self.secure = secure
        self.env = _env()
        #: the log's story of a table or a round (croupier/pit_replay.py); None: no replay pages here
        self.replay = replay
        #: per (table, compact): the results its roads were drawn from, and the drawing (one entry a table)
        self._board_cache: dict[tuple[str, bool], tuple[tuple[str, ...], dict[str, str]]] = {}
        feed.set_render(self.render)

    # -- requests --------------------------------------------------------------------------------
    def players(self, request: Request) -> list[str]:
        """The players a betting terminal's credential is bound to (its session's, else its bearer's); [] for
        any other caller."""
        token = self.sessions.token(cookie_value(request.scope.get("headers", [])))
        auth = request.headers.get("authorization", "")
        if token is None and auth.lower().startswith("bearer "):
            token = auth[7:].strip()
        caller = self.sessions.credentials.identify(token) if token else None
        return sorted(caller.players) if caller is not None else []

    def role(self, request: Request) -> str | None:
        """The caller's role: its session cookie's, else its bearer token's."""
        got = request.scope.get(SCOPE_ROLE)
        if got:
            return str(got)
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            caller = self.sessions.credentials.identify(auth[7:].strip())
            return caller.role if caller is not None else None
        return None

    def _page(self, name: str, request: Request, role: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = self._t(name, role=role, ready=self.ready(), path=request.url.path, **ctx)
        return HTMLResponse(html, status_code=status, headers=PAGE_HEADERS)

    def _gate(self, request: Request, page: str) -> tuple[str | None, Response | None]:
        role = self.role(request)
        if role is None:
            nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return None, RedirectResponse("/login?" + urllib.parse.urlencode({"next": nxt}), status_code=303)
        if role not in PAGE_ROLES[page]:
            return role, self._page("refused.html", request, role, status=403, page=PAGE_TITLES[page],
                                    allowed=sorted(PAGE_ROLES[page]))
        return role, None

    async def floor(self, request: Request) -> Response:
        role, refused = self._gate(request, "floor")
        if refused is not None:
            return refused
        assert role is not None
        money = role in MONEY_ROLES
        got, totals = self.floor_cards(sorted(self.tables()), money)
        cards = [html for _, html in got]
        return self._page("floor.html", request, role, cards=cards, stream="/live/floor", totals=totals)

    async def console_by_id(self, request: Request) -> Response:
        """``/console?table=<id>`` (the floor's "Open a table" form): to that table's console (303), where the
        dealer opens it; 422 for a text that is not a table id."""
        table_id = request.query_params.get("table", "").strip()
        if not _TABLE_ID.match(table_id):
            role, refused = self._gate(request, "console")
            if refused is not None:
                return refused
            return self._page("refused.html", request, role or "", status=422, page=PAGE_TITLES["console"],
                              heading="Not a table id", allowed=[], reason=f"table {table_id[:140]!r} is not a table "
                                                                         "id (1-128 letters, digits, '.', '_', ':' or '-')")
        return RedirectResponse(f"/console/{urllib.parse.quote(table_id)}", status_code=303)

    async def console(self, request: Request) -> Response:
        table_id = request.path_params["table_id"]
        role, refused = self._gate(request, "console")
        if refused is not None:
            return refused
        assert role is not None
        if not _TABLE_ID.match(table_id):
            return self._page("refused.html", request, role, status=422, page=PAGE_TITLES["console"],
                              heading="Not a table id", allowed=[], reason=f"table_id {table_id[:140]!r} is not a table id (1-128 letters, "
                                                 "digits, '.', '_', ':' or '-')")
        view = "full" if role in ROUND_READERS else "public"
        s = self._state(table_id)
        sends = sorted(self.may_send.get(role, frozenset())) if self.may_send is not None and role in FORM_ROLES \
            else []
        if "close_shoe" in sends:  # the end-of-shoe close is the same command, its reason given
            sends.append("end_shoe")
        # a terminal withdraws by the button beside each of its bets ("Your bets this round"), not by bet id
        forms = [f for f in FORMS if f[0] in sends and not (role == "bettor" and f[0] == "withdraw_bet")]
        wagers = sorted(w.value for w in s.config.wagers) if s is not None and s.config is not None else []
        # the layout's wagers with their table minimum and maximum (13:69F-3.3(c)), in cents
        limits = [(w, s.config.limits_for(w).min_cents, s.config.limits_for(w).max_cents)
                  for w in sorted(s.config.wagers, key=lambda x: x.value)] if s is not None and s.config else []
        return self._page("console.html", request, role, table_id=table_id, frags=self.console_frags(table_id, view),
                          forms=forms, wagers=wagers, profiles=self.profiles, limits=limits,
                          replay=self.replay is not None and role in PAGE_ROLES["replay"],
                          command_base=self.command_base, stream=f"/live/console/{table_id}",
                          read_only=not forms, answer_within_ms=self.answer_within_ms, keys=FORM_KEYS,
                          players=self.players(request) if role == "bettor" else [],
                          confirms=FORM_CONFIRMS, game=s.config.variant.value if s is not None and s.config else "")

    async def surveillance(self, request: Request) -> Response:
        role, refused = self._gate(request, "surveillance")
        if refused is not None:
            return refused
        assert role is not None
        frags = [f for f in (self.surveillance_frag(t) for t in sorted(self.tables())) if f is not None]
        return self._page("surveillance.html", request, role, frags=frags, alerts=self.alerts_frag(),
                          stream="/live/surveillance")

    def _cage_filters(self, request: Request) -> tuple[str | None, str | None, str]:
        day = request.query_params.get("gaming_day") or None
        shoe = request.query_params.get("shoe_id") or None
        if day is not None and not _is_date(day):
            return None, None, f"gaming_day: {day[:40]!r} is not a date YYYY-MM-DD"
        if shoe is not None and not _TABLE_ID.match(shoe):
            return None, None, f"shoe_id: {shoe[:140]!r} is not a shoe id"
        return day, shoe, ""

    async def cage(self, request: Request) -> Response:
        role, refused = self._gate(request, "cage")
        if refused is not None:
            return refused
        assert role is not None
        day, shoe, error = self._cage_filters(request)
        if error:
            return self._page("cage.html", request, role, status=422, frags=[], error=error, day="", shoe="",
                              stream="")
        frags = [f for f in (self.cage_frag(t, day, shoe) for t in sorted(self.tables())) if f is not None]
        q = urllib.parse.urlencode({k: v for k, v in (("gaming_day", day), ("shoe_id", shoe)) if v})
        return self._page("cage.html", request, role, frags=frags, error="", day=day or "", shoe=shoe or "",
                          stream="/live/cage" + (f"?{q}" if q else ""))

    async def live(self, request: Request) -> Response:
        page = request.path_params["page"]
        table_id = request.path_params.get("table_id", "")
        if page not in PAGE_ROLES:
            return JSONResponse({"detail": f"no live page {page!r}"}, status_code=404)
        role = self.role(request)
        if role is None:
            return JSONResponse({"detail": "log in first (/login)"}, status_code=401)
        if role not in PAGE_ROLES[page]:
            return JSONResponse({"detail": f"the {role} role may not see the {PAGE_TITLES[page]} page"},
                                status_code=403)
        key: tuple[Any, ...]
        if page == "console":
            if not _TABLE_ID.match(table_id):
                return JSONResponse({"detail": "table_id is not a table id"}, status_code=422)
            key = ("console", table_id, "full" if role in ROUND_READERS else "public")
        elif page == "cage":
            day, shoe, error = self._cage_filters(request)
            if error:
                return JSONResponse({"detail": error}, status_code=422)
            key = ("cage", day, shoe)
        elif page == "floor":
            key = ("floor", role in MONEY_ROLES)
        else:
            key = (page,)
        sub = self.feed.subscribe(key)
        everything: list[str] = [table_id] if page == "console" else sorted(self.tables())

        async def stream() -> Any:
            try:
                yield "retry: 1000\n\n"
                yield frame("status", {"ready": bool(self.ready())})
                for f in self.render(key, everything):  # the whole state first: a reconnect re-renders
                    yield f
                while True:
                    try:
                        got = await asyncio.wait_for(sub.queue.get(), HEARTBEAT_S)
                    except TimeoutError:
                        yield frame("status", {"ready": bool(self.ready())})
                        continue
                    if got is None:
                        return
                    yield got
            finally:
                self.feed.unsubscribe(sub)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def login_form(self, request: Request) -> Response:
        nxt = _safe_next(request.query_params.get("next", ""))
        return self._page("login.html", request, self.role(request) or "", next=nxt, error="")

    async def login(self, request: Request) -> Response:
        if not same_origin(request.scope):
            return self._page("login.html", request, "", status=403, next="/",
                              error="The login must be sent from this server's own login page.")
        form = urllib.parse.parse_qs((await request.body())[:8192].decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0].strip()
        nxt = _safe_next((form.get("next") or [""])[0])
        if not token:
            return self._page("login.html", request, "", status=422, next=nxt,
                              error="token: enter the token of your role (dealer, pit, surveillance, cage, ...).")
        got = self.sessions.login(token)
        if got is None:
            return self._page("login.html", request, "", status=401, next=nxt,
                              error="That token is not any role's token: nothing was opened.")
        sid, role = got
        if nxt == "/" and role == "surveillance":
            nxt = "/surveillance"
        elif nxt == "/" and role == "cage":
            nxt = "/cage"
        elif nxt == "/" and role == "count_team":
            nxt = "/cage/desk"
        r = RedirectResponse(nxt, status_code=303)
        r.headers["Set-Cookie"] = set_cookie_header(sid, self.sessions.ttl_s, self._secure(request))
        return r

    async def logout(self, request: Request) -> Response:
        if not same_origin(request.scope):
            return JSONResponse({"detail": "log out from this server's own pages"}, status_code=403)
        self.sessions.logout(cookie_value(list(request.scope.get("headers", []))))
        r = RedirectResponse("/login", status_code=303)
        r.headers["Set-Cookie"] = clear_cookie_header(self._secure(request))
        return r

    def _secure(self, request: Request) -> bool:
        """The cookie is ``Secure`` when the pages are served over HTTPS: always with ``secure``, and on any
        request that arrived over HTTPS (uvicorn with a certificate, or a local TLS-terminating proxy's
        ``X-Forwarded-Proto: https``), so a browser never sends it back over plain HTTP."""
        return self.secure or request.url.scheme == "https"

    def routes(self) -> list[BaseRoute]:
        """The pages' routes (mount them before the APIs: ``/`` and these paths are theirs)."""
        static = StaticFiles(packages=[("services.projection", "static")])
        return [
            Route("/", self.floor),
            Route("/console", self.console_by_id),
            Route("/console/{table_id:path}", self.console),
            Route("/surveillance", self.surveillance), Route("/cage", self.cage),
            Route("/replay/{table_id}", self.replay_page),
            Route("/replay/{table_id}/rounds/{round_id}", self.replay_page),
            Route("/login", self.login_form, methods=["GET"]), Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/scoreboard/{table_id}", self.scoreboard_page),
            Route("/scoreboard/{table_id}/board", self.scoreboard_board),
            Route("/live/console/{table_id:path}", self.live_console),
            Route("/live/{page}", self.live),
            Mount("/static", app=static, name="static"),
        ]

    def scoreboard(self, table_id: str, odds: bool = True) -> dict[str, Any] | None:
        """What the table-side screen shows (public: no player, no bet): the game, the main wagers' limits
        (cents), the last results (newest last), the shoe's progress (cards out of the shoe's cards), the
        five roads as SVG, ``closed`` / ``finished`` (the cutting card out and the shoe's last round dealt,
        ``ShoeFinished``: no further round until it is closed); with ``odds`` the next round's odds of the **public** view (the cards seen at the
        table, the burn unseen: never the surveillance view's true composition), none once the shoe is
        closed. None for a table not open."""
        s = self._state(table_id)
        if s is None or s.config is None:
            return None
        shoe = s.shoe
        results = s.results(shoe.shoe_id) if shoe else ()
        total = sum(shoe.full) if shoe else 0
        main = [w for w in sorted(s.config.wagers, key=lambda x: x.value) if w.value in ("banker", "player", "tie")]
        live = self.feed.table(table_id)
        return {"table_id": table_id, "game": game_label(s.config),
                "limits": [(w.value, s.config.limits_for(w).min_cents, s.config.limits_for(w).max_cents)
                           for w in main],
                "last": [{"B": "Banker", "P": "Player", "T": "Tie"}[r] for r in results[-SCOREBOARD_LAST:]],
                "rounds": len(results), "cards_out": shoe.cards_out if shoe else 0, "cards": total,
                "progress_pct": round(100 * shoe.cards_out / total) if shoe and total else 0,
                "closed": live.shoe_closed, "finished": live.shoe_finished and not live.shoe_closed,
                "boards": self._boards(s, compact=False),
                "shoe_id": shoe.shoe_id if shoe else "",
                "odds": self._odds(s, "public") if odds and shoe and not (live.shoe_closed or live.shoe_finished)
                else None}

    async def scoreboard_page(self, request: Request) -> Response:
        """``/scoreboard/{table}``: the public screen beside a table (no login: it shows what the table
        shows), large and dark, refreshed by itself (``/scoreboard/{table}/board`` every second); the public
        odds of the next round unless ``?odds=0``."""
        table_id = request.path_params["table_id"]
        if not _TABLE_ID.match(table_id):
            return HTMLResponse("not a table id", status_code=422, headers=PAGE_HEADERS)
        odds = request.query_params.get("odds", "1") != "0"  # ?odds=0: a screen without the odds
        html = self._t("scoreboard.html", table_id=table_id, b=self.scoreboard(table_id, odds),
                       src=f"/scoreboard/{urllib.parse.quote(table_id)}/board" + ("" if odds else "?odds=0"))
        return HTMLResponse(html, headers=PAGE_HEADERS)

    async def scoreboard_board(self, request: Request) -> Response:
        """The scoreboard's live part, as HTML (polled by the page)."""
        table_id = request.path_params["table_id"]
        if not _TABLE_ID.match(table_id):
            return HTMLResponse("not a table id", status_code=422, headers=PAGE_HEADERS)
        odds = request.query_params.get("odds", "1") != "0"
        return HTMLResponse(self._t("frag_scoreboard.html", table_id=table_id, b=self.scoreboard(table_id, odds)),
                            headers=PAGE_HEADERS)

    async def replay_page(self, request: Request) -> Response:
        """``/replay/{table}``: every round the log holds for the table, each a link; ``/replay/{table}/rounds/
        {round}``: that round's story (every card with the rule behind it, the bets, the settlement, the
        ledger; the alerts for surveillance only). Read from Kafka at each request. 404 for a table or round the
        log does not hold, 503 when the log cannot be read or this server has no replay."""
        role, refused = self._gate(request, "replay")
        if refused is not None:
            return refused
        assert role is not None
        table_id = request.path_params["table_id"]
        round_id = request.path_params.get("round_id")
        title = PAGE_TITLES["replay"]
        if not _TABLE_ID.match(table_id) or (round_id is not None and not _ROUND_ID.match(round_id)):
            return self._page("refused.html", request, role, status=422, page=title, allowed=[],
                              reason="a table or round id is 1-128 letters, digits, '.', '_', ':' or '-'")
        if self.replay is None:
            return self._page("refused.html", request, role, status=503, page=title, allowed=[],
                              reason="this server does not replay rounds (croupier pit does; or use croupier "
                                     "replay on the command line)")
        try:
            view = await self.replay(table_id, round_id)
        except LookupError as e:
            return self._page("refused.html", request, role, status=404, page=title, allowed=[], reason=str(e))
        except (ConnectionError, OSError, TimeoutError) as e:
            return self._page("refused.html", request, role, status=503, page=title, allowed=[],
                              reason=f"the log could not be read: {e}")
        if role != "surveillance":
            view.pop("alerts", None)
        return self._page("replay.html", request, role, table_id=table_id, v=view, stream="")

    async def live_console(self, request: Request) -> Response:
        request.path_params["page"] = "console"
        return await self.live(request)


__all__ = ["FORMS", "PAGE_ROLES", "ROUND_READERS", "PitPages", "frame"]
