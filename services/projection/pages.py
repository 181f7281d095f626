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
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Hashable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import escape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from baccarat.money import format_cents
from services.projection.console_steps import console_steps
from services.projection.core import ProjectionState
from services.projection.live import HEARTBEAT_S, LiveFeed, TableLive
from services.projection.pit_state import day_and_hour
from services.projection.pit_views import (
    PitSettings,
    cage_view,
    closed_shoes,
    cutoff_of,
    floor_view,
    irregularities,
    is_held,
    player_ranking,
)
from services.projection.roadsvg import scoreboard
from services.runtime.sessions import (
    SCOPE_ROLE,
    Sessions,
    clear_cookie_header,
    cookie_value,
    same_origin,
    set_cookie_header,
)

ALL_ROLES = frozenset({"dealer", "bettor", "analyst", "cage", "pit", "surveillance", "count_team"})
#: who may open each page
PAGE_ROLES: Mapping[str, frozenset[str]] = {
    "floor": ALL_ROLES,
    "console": ALL_ROLES,
    "surveillance": frozenset({"surveillance"}),
    "cage": frozenset({"cage", "pit"}),
    # a round as the log tells it (bets, player ids, settlements): the roles that read a round
    "replay": frozenset({"dealer", "pit", "surveillance", "cage"}),
}
#: how many of the last results the table-side scoreboard shows
SCOREBOARD_LAST = 12
#: roles shown a round's bets, seats and settlements (player ids), as the command API's round view
ROUND_READERS = frozenset({"dealer", "pit", "surveillance", "cage"})
#: roles shown the money figures on the floor (drop, win, hold %, open alerts), as the query API's /floor
MONEY_ROLES = frozenset({"cage", "pit", "surveillance"})
#: the forms the console offers, in order: (action, command API path under the table, title)
FORMS: tuple[tuple[str, str, str], ...] = (
    ("open_table", "open", "Open table"),
    ("load_shoe", "shoe", "Load shoe"),
    ("seat_player", "seats", "Seat player"),
    ("open_round", "rounds", "Open round"),
    ("place_bet", "bets", "Place bet"),
    ("withdraw_bet", "bets/withdraw", "Withdraw bet"),
    ("no_more_bets", "rounds/no-more-bets", '"No more bets"'),
    ("read_burn", "shoe/burn", "Read burn (physical shoe)"),
    ("read_card", "shoe/cards", "Read card (physical shoe)"),
    ("void_round", "rounds/void", "Void round"),
    ("leave_seat", "seats/leave", "Player leaves"),
    ("collect_commission", "commission/collect", "Collect commission"),
    ("close_shoe", "shoe/close", "Close shoe early"),
    # chemin de fer and the curator (services/projection/live_game.py, templates/form_game.html)
    ("offer_shoe", "curator/offer", "Offer the shoe"),
    ("keep_shoe", "curator/keep", "The curator keeps the shoe"),
    ("pass_shoe", "curator/pass", "Pass the shoe"),
    ("expire_option", "options/expire", "Option expired: the table's default"),
    ("decide_option", "options/decide", "Decide the option"),
)
#: the console's keyboard shortcuts (a key pressed outside a field): the dealer's steps
FORM_KEYS = {"open_round": "o", "no_more_bets": "n", "read_card": "c", "read_burn": "b", "load_shoe": "l"}
#: the actions the console confirms before sending, with a reason the dealer must give (recorded with it)
FORM_CONFIRMS = {"void_round": "Void this round? Every bet is returned.",
                 "close_shoe": "Close this shoe before its end? Its order is revealed and no more rounds are "
                               "dealt from it."}
#: roles that get the console's forms (the others see it read-only, the pit included)
FORM_ROLES = frozenset({"dealer", "bettor"})
_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
STATUS_WORDS = {"betting": "Betting open", "dealing": '"No more bets": dealing', "resolved": "Resolved",
                "settled": "Settled", "voided": "Voided"}
#: every page: nothing cached, nothing but this origin's script and style, never inside another site's frame
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
PAGE_TITLES = {"floor": "Floor", "console": "Table console", "surveillance": "Surveillance", "cage": "Cage",
               "replay": "Round replay"}
#: a round id in a replay address (contracts.bounds.ID_PATTERN)
_ROUND_ID = _TABLE_ID


def game_label(config: Any) -> str:
    """The game a table deals, as the pit names it: "Punto Banco", "Punto Banco (curator)", "No-vig Dragon 7"
    (and "& Panda 8"), "Casino Night", "Chemin de fer" (13:69F-3, 3.2(a)3 no-commission, 4; 13:47-20.20)."""
    v = config.variant.value
    if v == "chemin_de_fer":
        return "Chemin de fer"
    if v == "casino_night":
        return "Casino Night"
    if config.no_vig:
        panda = any(w.value.startswith("panda") for w in config.wagers)
        return "No-vig Dragon 7" + (" & Panda 8" if panda else "")
    return "Punto Banco" + (" (curator)" if config.curator else "")


def _is_date(text: str) -> bool:
    """Whether ``text`` is a calendar date written YYYY-MM-DD (``2026-02-30`` is not)."""
    if not _DAY.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _pct(x: float) -> str:
    return f"{x * 100:.3f} %"


def _env() -> Environment:
    env = Environment(loader=PackageLoader("services.projection", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["money"] = format_cents
    env.filters["pct"] = _pct
    env.filters["status_words"] = lambda s: STATUS_WORDS.get(s, s)
    return env


def frame(event: str, data: Any) -> str:
    """One Server-Sent Event (``data`` as one JSON line)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class PitPages:
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

    # -- data ------------------------------------------------------------------------------------
    def _state(self, table_id: str) -> ProjectionState | None:
        s = self.tables().get(table_id)
        return s if s is not None and s.config is not None else None

    def summary(self, table_id: str, s: ProjectionState, live: TableLive) -> dict[str, Any]:
        """What the floor shows of one table (cents)."""
        assert s.config is not None
        shoe = s.shoe
        results = s.results(shoe.shoe_id) if shoe else ()
        r = live.round
        if shoe is None:
            status = "No shoe"
        elif live.shoe_closed and live.shoe_id == shoe.shoe_id:
            status = "Shoe closed"
        elif r is None or r.shoe_id != shoe.shoe_id:  # none yet, or not seen since this server started
            status = "Between rounds" if results else "Shoe loaded: no round yet"
            r = None
        else:
            status = STATUS_WORDS.get(r.status, r.status)
        last = results[-1] if results else ""
        return {"table_id": table_id, "variant": game_label(s.config),
                "wagers": sorted(w.value for w in s.config.wagers),
                "shoe_id": shoe.shoe_id if shoe else "", "shoe_number": shoe.number if shoe else 0,
                "cards_out": shoe.cards_out if shoe else 0, "rounds": len(results),
                "round_number": r.number if r is not None else len(results), "status": status,
                "last_result": {"B": "Banker", "P": "Player", "T": "Tie"}.get(last, "-"), "last_letter": last,
                "table_result_cents": s.ledger.table_result(table_id),
                "curator": s.curator, "results": "".join(results)}

    def _boards(self, s: ProjectionState, compact: bool) -> dict[str, str]:
        """The table's roads as SVG, drawn again only when its results changed (a card changes none)."""
        results = tuple(s.results(s.shoe.shoe_id)) if s.shoe else ()
        key = (s.table_id, compact)
        got = self._board_cache.get(key)
        if got is None or got[0] != results:
            got = self._board_cache[key] = (results, scoreboard(results, compact=compact))
        return got[1]

    def _odds(self, s: ProjectionState, view: str) -> dict[str, Any] | None:
        o = s.last_odds.get(view)
        if o is None:
            return None
        return {"view": view, "trigger": o.trigger, "step": o.step, "cards_out": o.cards_out,
                "composition": list(o.composition), "cards_left": sum(o.composition), "total": o.total,
                "wagers": [{"wager": w.wager, "p_win": w.p_win, "ev": w.ev} for w in o.wagers]}

    # -- fragments -------------------------------------------------------------------------------
    def _t(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**ctx)

    def _configured(self) -> dict[str, ProjectionState]:
        return {t: s for t, s in self.tables().items() if s.config is not None}

    def today(self) -> str:
        """The gaming day now, by the pages' clock."""
        return day_and_hour(self.clock(), cutoff_of(self.tables().values()))[0]

    def floor_figures(self, money: bool) -> dict[str, Any]:
        """The query API's floor view (:func:`services.projection.pit_views.floor_view`) now."""
        return floor_view(self._configured(), self.clock(), self.settings, money=money)

    def table_card(self, table_id: str, figures: Mapping[str, Any] | None = None) -> str | None:
        """The floor's card of one table; ``figures``: its row of :meth:`floor_figures` (money roles)."""
        s = self._state(table_id)
        if s is None:
            return None
        return self._t("frag_table_card.html", t=self.summary(table_id, s, self.feed.table(table_id)),
                       boards=self._boards(s, compact=True), f=figures)

    def floor_cards(self, tables: list[str], money: bool) -> list[tuple[str, str]]:
        """``(table id, card)`` of the given tables; with money figures for a ledger role."""
        rows: dict[str, Any] = {}
        if money:  # the rows of these tables only (a live frame re-renders the tables that changed)
            got = floor_view(self._configured(), self.clock(), self.settings, money=True, only=tables, totals=False)
            rows = {r["table_id"]: r for r in got["tables"]}
        out = []
        for t in tables:
            html = self.table_card(t, rows.get(t))
            if html is not None:
                out.append((t, html))
        return out

    def console_frags(self, table_id: str, view: str) -> dict[str, str]:
        """The console's live parts of one table: ``{element id: html}``."""
        s = self._state(table_id)
        live = self.feed.table(table_id)
        full = view == "full"
        steps = console_steps(live, "dealer" if full else "bettor")
        out = {f"round-{table_id}": self._t("frag_round.html", table_id=table_id, r=live.round, full=full,
                                            replay=full and self.replay is not None,
                                            shoe_id=s.shoe.shoe_id if s and s.shoe else "",
                                            opened=s is not None, steps=steps, g=live.game)}
        out[f"seats-{table_id}"] = self._t("frag_seats.html", table_id=table_id, seats=sorted(live.seats.items()),
                                           owed=sorted(live.owed.items()), full=full)
        out[f"history-{table_id}"] = self._t("frag_history.html", table_id=table_id, rounds=list(live.history),
                                             full=full, replay=full and self.replay is not None)
        if s is not None:
            out[f"head-{table_id}"] = self._t("frag_head.html", t=self.summary(table_id, s, live))
            closed = live.shoe_closed and s.shoe is not None and live.shoe_id == s.shoe.shoe_id
            out[f"odds-{table_id}"] = self._t("frag_odds.html", table_id=table_id, id_prefix="odds",
                                              o=None if closed else self._odds(s, "public"),
                                              no_odds="No odds: the shoe is closed (no next round from it)."
                                              if closed else "")
            out[f"roads-{table_id}"] = self._t("frag_roads.html", table_id=table_id,
                                               boards=self._boards(s, compact=False))
        else:  # placeholders the live frames replace once the table opens
            tid = escape(table_id)
            out[f"head-{table_id}"] = f'<div id="head-{tid}" class="head">The table is not open yet.</div>'
            out[f"odds-{table_id}"] = f'<section id="odds-{tid}" class="panel odds" hidden></section>'
            out[f"roads-{table_id}"] = f'<section id="roads-{tid}" class="panel roads" hidden></section>'
        return out

    def surveillance_frag(self, table_id: str) -> str | None:
        """Surveillance only: the true remaining composition's odds beside the public ones."""
        s = self._state(table_id)
        if s is None:
            return None
        pub = self._odds(s, "public")
        return self._t("frag_surv.html", table_id=table_id, surv=self._odds(s, "surveillance"), pub=pub,
                       pubev={w["wager"]: w["ev"] for w in pub["wagers"]} if pub else {},
                       voids=list(self.feed.table(table_id).voids))

    def alerts_frag(self) -> str:
        """Surveillance only: players of the gaming day ranked by expected gain (raised at the threshold), the
        alerts the state holds (newest first, 50), the shoes closed (commitment and cards verified), the voided
        rounds and irregularities (:mod:`services.projection.pit_views`)."""
        alerts: list[dict[str, Any]] = []
        states = self._configured()
        for t, s in sorted(states.items()):
            for a in s.alerts:
                alerts.append({"table_id": t, "round_id": a.round_id, "player_id": a.player_id, "seat": a.seat,
                               "wager": a.wager, "stake_cents": a.stake_cents, "ev": a.ev,
                               "expected_gain_cents": a.expected_gain_cents, "cards_left": a.cards_left})
        day = self.today()
        ranked = player_ranking(states, day, self.settings.raise_threshold_cents)
        return self._t("frag_alerts.html", alerts=list(reversed(alerts))[:50], total=len(alerts), players=ranked[:20],
                       raised=sum(p["raised"] for p in ranked), threshold=self.settings.raise_threshold_cents,
                       day=day, shoes=closed_shoes(states, day), irregular=irregularities(states, day))

    def cage_frag(self, table_id: str, day: str | None, shoe: str | None) -> str | None:
        s = self._state(table_id)
        if s is None:
            return None
        balances = s.ledger.balances(shoe_id=shoe, gaming_day=day)
        entries = list(s.ledger.entries(shoe_id=shoe, gaming_day=day))[-8:]
        view_day = day or self.today()
        figures = cage_view(table_id, s, view_day, self.settings) if is_held(self.tables().values(), view_day) \
            else None
        return self._t("frag_cage.html", table_id=table_id, balances=balances, figures=figures, view_day=view_day,
                       csv=f"/cage/hourly.csv?{urllib.parse.urlencode({'gaming_day': view_day, 'table_id': table_id})}",
                       result=s.ledger.table_result(table_id, shoe_id=shoe, gaming_day=day),
                       entries=[{"kind": e.kind, "round_id": e.round_id or "", "seat": e.seat or "",
                                 "player_id": e.player_id or "", "at": e.occurred_at.strftime("%H:%M:%S"),
                                 "lines": [(ln[0], ln[1]) for ln in e.lines]} for e in reversed(entries)],
                       dropped=s.ledger.dropped)

    # -- the live feed's render --------------------------------------------------------------------
    def render(self, key: Hashable, tables: list[str]) -> list[str]:
        """Frames for subscribers of ``key`` about ``tables`` (see :data:`services.projection.live.Render`)."""
        assert isinstance(key, tuple)
        out: list[str] = []
        kind = key[0]
        if kind == "floor":
            for t, html in self.floor_cards(tables, money=key[1]):
                out.append(frame("frag", {"id": f"table-{t}", "html": html, "parent": "tables"}))
        elif kind == "console":
            table_id, view = key[1], key[2]
            if table_id in tables:
                for eid, html in self.console_frags(table_id, view).items():
                    out.append(frame("frag", {"id": eid, "html": html}))
        elif kind == "surveillance":
            for t in tables:
                surv = self.surveillance_frag(t)
                if surv is not None:
                    out.append(frame("frag", {"id": f"surv-{t}", "html": surv, "parent": "surv-tables"}))
            if tables:
                out.append(frame("frag", {"id": "alerts", "html": self.alerts_frag()}))
        elif kind == "cage":
            for t in tables:
                cage = self.cage_frag(t, key[1], key[2])
                if cage is not None:
                    out.append(frame("frag", {"id": f"cage-{t}", "html": cage, "parent": "cage-tables"}))
        return out

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
        cards = [html for _, html in self.floor_cards(sorted(self.tables()), money)]
        totals = self.floor_figures(True) if money else None
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
        five roads as SVG; with ``odds`` the next round's odds of the **public** view (the cards seen at the
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
                "closed": live.shoe_closed, "boards": self._boards(s, compact=False),
                "shoe_id": shoe.shoe_id if shoe else "",
                "odds": self._odds(s, "public") if odds and shoe and not live.shoe_closed else None}

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


def _safe_next(nxt: str) -> str:
    """A local path to go to after login (never another site: ``//host`` or a scheme is refused)."""
    if not nxt.startswith("/") or nxt.startswith("//") or "\\" in nxt or "\n" in nxt or "\r" in nxt:
        return "/"
    return nxt[:500]


__all__ = ["FORMS", "PAGE_ROLES", "ROUND_READERS", "PitPages", "frame"]
