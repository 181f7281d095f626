"""The cage's pages and endpoints in the pit app: shift statements, the desk (fills, credits, the count team's
entry), patrons' ratings and the currency reporting list. Read from the log at each request (the cage's books
are looked at, not watched live), sent to ``cage.commands`` by the desk's forms.

=============================== ==================== ============================================================
path                            roles                answers
=============================== ==================== ============================================================
``/cage/statement``             cage, pit,           statements per table and shift, roll-ups by table, pit
(``.json``, ``.csv``)           surveillance         (``?by=table|pit|shift|gaming_day``) and the count-variance
                                                     alerts: opener, closer, fills, credits, drop, win, hold %,
                                                     game result, variance (dollars on the page, cents in JSON
                                                     and CSV)
``/cage/desk`` (``.json``)      dealer, pit, cage,   each table's shifts, slips and drop box, who is seated, with
                                count_team           only the actions valid now for the role
                                                     (:mod:`services.projection.cage_desk`)
``POST /cage/desk/{table}/      as the action        the action's cage command; the page again with what the cage
{action}``                                           booked, or its refusal's reason code and words (422)
``/cage/patrons`` (``.json``)   cage, pit,           rated sessions: buy-in, average bet, rounds, time played,
                                surveillance         result, theo exact beside theo at the fixed edge
``/cage/currency`` (``.json``)  cage, surveillance   per patron and gaming day cash in / out, MTL entries, CTR
=============================== ==================== ============================================================

The module sits with the command line (it composes the cage's folds, :mod:`services.cage.statement` and
:mod:`services.cage.patrons`, with the projection's pages: no service imports another). The log comes through a
:class:`CageLog` (``croupier.pit_cage`` on Kafka, :class:`MemoryCageLog` on the
in-memory bus). No session is a redirect to ``/login``; a role not allowed a 403 page (JSON: 403 body).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from contracts import topics as T
from contracts.cage import CAGE_KEY
from contracts.codecs import Undecodable, decode_command, encode
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import CommandRejected
from services.cage.patrons import currency, ratings
from services.cage.statement import GROUPINGS, alerts, csv_text, rollup, statements
from services.projection.cage_desk import (
    ACTIONS,
    BUY_IN_METHODS,
    CAGE_KEY_ACTIONS,
    FIELDS,
    REDEEM_METHODS,
    FormError,
    actions_now,
    window_actions,
    answer_of,
    build_command,
    credit_dict,
    credit_now,
    desk_state,
    opener_defaults,
    reason_words,
    shift_dict,
    tables_now,
)
from services.runtime.core import command

if TYPE_CHECKING:  # pragma: no cover
    from services.projection.pages import PitPages
    from services.runtime.memory import MemoryBus

#: who may open each cage page
CAGE_PAGE_ROLES: Mapping[str, frozenset[str]] = {
    "statement": frozenset({"cage", "pit", "surveillance"}),
    "desk": frozenset({"dealer", "pit", "cage", "count_team"}),
    "patrons": frozenset({"cage", "pit", "surveillance"}),
    "currency": frozenset({"cage", "surveillance"}),
}
#: who sees the patrons' casino-wide credit on the desk (line, outstanding, available): the cage sets the lines
#: and takes repayments, the dealer takes marker buy-ins, the pit oversees; the count room does not
CREDIT_ROLES = frozenset({"cage", "dealer", "pit"})
CAGE_TITLES = {"statement": "Shift statements", "desk": "Table inventory, buy-ins, fills, credits and the count", "patrons": "Ratings",
               "currency": "Currency reporting"}
#: the topics the cage's pages read (ratings need the shoe, the table's configuration, bets and settlements)
READS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)


class CageLog(Protocol):
    """The log as the cage's pages need it."""

    async def events(self) -> list[Envelope]:
        """Every event of :data:`READS`, each topic in its order. Raises ``ConnectionError``."""
        ...

    async def send(self, cmd: CommandEnvelope) -> list[Envelope]:
        """Send ``cmd`` to ``cage.commands`` and return the ``cage.events`` answering it (a ``CommandRejected``
        when refused; a marker buy-in's ``BoughtIn`` or refusal once the cage's key decided it:
        :func:`services.projection.cage_desk.answer_of`); [] when no answer came in time. Raises
        ``ConnectionError``."""
        ...


class MemoryCageLog:
    """A :class:`CageLog` over the in-memory bus (tests, a floor in one process)."""

    def __init__(self, bus: MemoryBus):
        self.bus = bus

    async def events(self) -> list[Envelope]:
        from contracts.codecs import decode_event

        await self.bus.pump()
        return [decode_event(r.value) for t in READS for r in self.bus.topics.get(t, [])]

    async def send(self, cmd: CommandEnvelope) -> list[Envelope]:
        self.bus.send(T.CAGE_COMMANDS, cmd)
        await self.bus.pump()
        return answer_of(await self.events(), cmd) or []


def statement_json(events: list[Envelope], by: str | None) -> dict[str, Any]:
    """The statements (per table and shift, or rolled up ``by``) and the alerts, cents (see the module)."""
    rows = statements(events)
    shown = rollup(rows, by) if by else rows
    return {"by": by or "table_shift", "statements": [r.as_dict() for r in shown],
            "alerts": [r.as_dict() for r in alerts(rows)]}


class CagePages:
    """The cage's pages over ``pages`` (its login gate, templates and page frame) and ``log``; ``new_id``: a
    fresh command id; ``clock``: UTC now (a command's ``issued_at``)."""

    def __init__(self, pages: PitPages, log: CageLog, new_id: Callable[[], str], clock: Callable[[], datetime]):
        self.pages = pages
        self.log = log
        self.new_id = new_id
        self.clock = clock

    def _gate(self, request: Request, page: str, as_json: bool) -> tuple[str | None, Response | None]:
        p = self.pages
        role = p.role(request)
        if role is None:
            if as_json:
                return None, JSONResponse({"detail": "log in first (/login) or send a bearer token"}, 401)
            nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return None, RedirectResponse("/login?" + urllib.parse.urlencode({"next": nxt}), status_code=303)
        allowed = CAGE_PAGE_ROLES[page]
        if role not in allowed:
            if as_json:
                return role, JSONResponse({"detail": f"the {role} role may not see {CAGE_TITLES[page]}"}, 403)
            return role, p._page("refused.html", request, role, status=403, page=CAGE_TITLES[page],
                                 allowed=sorted(allowed))
        return role, None

    async def _events(self, request: Request, role: str, as_json: bool) -> list[Envelope] | Response:
        try:
            return await self.log.events()
        except (ConnectionError, OSError, TimeoutError) as e:
            if as_json:
                return JSONResponse({"detail": f"the log could not be read: {e}"}, 503)
            return self.pages._page("refused.html", request, role, status=503, page="Cage", allowed=[],
                                    heading="The log could not be read", reason=str(e))

    async def _open(self, request: Request, page: str) -> tuple[str, bool, list[Envelope]] | Response:
        """``(role, as JSON, the log's events)`` for a reader of ``page``, or the response refusing it."""
        as_json = request.path_params.get("fmt", "") == ".json"
        role, refused = self._gate(request, page, as_json)
        if refused is not None:
            return refused
        assert role is not None
        got = await self._events(request, role, as_json)
        return got if isinstance(got, Response) else (role, as_json, got)

    def _page(self, request: Request, role: str, name: str, status: int = 200, **ctx: Any) -> Response:
        return self.pages._page(name, request, role, status=status, stream="", **ctx)

    # -- statements ------------------------------------------------------------------------------
    async def statement(self, request: Request) -> Response:
        fmt = request.path_params.get("fmt", "")
        role, refused = self._gate(request, "statement", fmt != "")
        if refused is not None:
            return refused
        assert role is not None
        by = request.query_params.get("by") or None
        if by is not None and by not in GROUPINGS:
            detail = f"by: {by[:40]!r} is not one of {', '.join(GROUPINGS)}"
            return JSONResponse({"detail": detail}, 422) if fmt else \
                self._page(request, role, "refused.html", 422, page="Cage", allowed=[], heading="Bad request",
                           reason=detail)
        got = await self._events(request, role, fmt != "")
        if isinstance(got, Response):
            return got
        if fmt == ".json":
            return JSONResponse(statement_json(got, by))
        rows = statements(got)
        if fmt == ".csv":
            name = f"croupier-cage-statement{'-' + by if by else ''}.csv"
            return Response(csv_text(rollup(rows, by) if by else rows), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})
        return self._page(request, role, "cage_statement.html", rows=rows, tables=rollup(rows, "table"),
                          pits=rollup(rows, "pit"), alerts=alerts(rows), by=by or "")

    # -- the desk --------------------------------------------------------------------------------
    async def desk(self, request: Request) -> Response:
        as_json = request.path_params.get("fmt", "") == ".json"
        role, refused = self._gate(request, "desk", as_json)
        if refused is not None:
            return refused
        assert role is not None
        return await self._desk_page(request, role, as_json)

    async def _desk_page(self, request: Request, role: str, as_json: bool = False, status: int = 200,
                         outcome: dict[str, Any] | None = None, form: Mapping[str, str] | None = None,
                         failed: tuple[str, str] | None = None) -> Response:
        got = await self._events(request, role, as_json)
        if isinstance(got, Response):
            return got
        shifts = desk_state(got)
        table = request.query_params.get("table") or ""
        tables = [t for t in tables_now(got, shifts) if not table or t.table_id == table]
        if table:
            shifts = [s for s in shifts if s.table_id == table]
        # a table with no shift open: the dealer counts its opener (suggested id, today's gaming day, its pit)
        openers = [(t, opener_defaults(t, self.clock())) for t in tables
                   if role == ACTIONS["record_opener"][0] and t.open_shift is None]
        if outcome is not None and not outcome["ok"]:
            outcome["words"] = reason_words(outcome["reason"])
        # casino-wide credit: the cage sets lines, the dealer takes markers, the pit oversees (not the count room)
        show_credit = role in CREDIT_ROLES
        credit = credit_now(got) if show_credit else []
        if as_json:
            return JSONResponse({"role": role, "shifts": [{**shift_dict(s), "actions": [
                {"action": a, "id": i} for a, i in actions_now(s, role)]} for s in shifts],
                "tables": [{"table_id": t.table_id, "seated": [list(x) for x in t.seated],
                            "open_shift": t.open_shift.shift_id if t.open_shift else None} for t in tables],
                "openers": [{"table_id": t.table_id, **d} for t, d in openers],
                "credit": [credit_dict(c) for c in credit] if show_credit else [],
                "window": [{"action": a, "key": CAGE_KEY} for a in window_actions(role)]})
        rows = [(s, actions_now(s, role)) for s in reversed(shifts)]
        seated = {t.table_id: t.seated for t in tables}
        return self._page(request, role, "cage_desk.html", status, shifts=rows, actions=ACTIONS, fields=FIELDS,
                          outcome=outcome, form=form or {}, table=table, failed=failed, openers=openers,
                          seated=seated, methods=BUY_IN_METHODS, redeem_methods=REDEEM_METHODS, credit=credit,
                          show_credit=show_credit, window=window_actions(role), cage_key=CAGE_KEY)

    async def act(self, request: Request) -> Response:
        """``POST /cage/desk/{table}/{action}`` (form-encoded): the action's command, sent as the session's
        role and the form's ``actor``; the desk again with the outcome."""
        role, refused = self._gate(request, "desk", False)
        if refused is not None:
            return refused
        assert role is not None
        table_id, action = request.path_params["table_id"], request.path_params["action"]
        form = {k: v[0] for k, v in urllib.parse.parse_qs((await request.body())[:16384].decode(
            "utf-8", "replace"), keep_blank_values=True).items()}
        if action not in ACTIONS:
            return await self._desk_page(request, role, status=404, form=form, outcome={
                "ok": False, "reason": "unknown_action", "detail": f"no cage action {action[:40]!r}"})
        if ACTIONS[action][0] != role:
            return await self._desk_page(request, role, status=403, form=form, outcome={
                "ok": False, "reason": "role_not_permitted",
                "detail": f"{ACTIONS[action][2]} is for the {ACTIONS[action][0]} role, not {role}"})
        if action in CAGE_KEY_ACTIONS:  # the window's, whichever desk it was pressed at: shown again there
            table_id = CAGE_KEY
        try:
            actor = form.get("actor", "").strip()
            if not actor:
                raise FormError("actor", "required: who you are (your employee id)")
            # a credit line, a repayment or a cash-out is the window's: decided at the cage's key (table_id above)
            cmd = command(table_id, self.new_id(), self.clock(), build_command(action, form), actor=actor)
            decode_command(encode(cmd))  # the wire's bounds (ids' patterns and lengths) checked before it is sent
        except Undecodable as e:
            return await self._desk_page(request, role, status=422, form=form, failed=(table_id, action), outcome={
                "ok": False, "reason": "invalid_form", "detail": str(e)})
        except FormError as e:
            return await self._desk_page(request, role, status=422, form=form, failed=(table_id, action), outcome={
                "ok": False, "reason": "invalid_form", "detail": str(e), "field": e.field})
        try:
            answer = await self.log.send(cmd)
        except (ConnectionError, OSError, TimeoutError) as e:
            return await self._desk_page(request, role, status=503, form=form, outcome={
                "ok": False, "reason": "broker_unavailable", "detail": str(e)})
        refusal = next((e.payload for e in answer if isinstance(e.payload, CommandRejected)), None)
        if refusal is not None:
            return await self._desk_page(request, role, status=422, form=form, failed=(table_id, action), outcome={
                "ok": False, "reason": refusal.reason, "detail": refusal.detail})
        if not answer:
            return await self._desk_page(request, role, status=504, form=form, outcome={
                "ok": False, "reason": "no_answer", "detail": "the cage did not answer in time: look again "
                                                              "before sending it again"})
        booked = ", ".join(type(e.payload).__name__ for e in answer)
        return await self._desk_page(request, role, outcome={"ok": True, "reason": "", "detail": f"booked: {booked}",
                                                             "table_id": table_id, "action": ACTIONS[action][2]})

    # -- patrons and currency --------------------------------------------------------------------
    async def patrons(self, request: Request) -> Response:
        opened = await self._open(request, "patrons")
        if isinstance(opened, Response):
            return opened
        role, as_json, got = opened
        player = request.query_params.get("player_id") or ""
        rows = [r.as_dict() for r in ratings(got) if not player or r.player_id == player]
        if as_json:
            return JSONResponse({"player_id": player or None, "ratings": rows})
        return self._page(request, role, "cage_patrons.html", rows=rows, player=player)

    async def currency_list(self, request: Request) -> Response:
        opened = await self._open(request, "currency")
        if isinstance(opened, Response):
            return opened
        role, as_json, got = opened
        cash_days = currency(got)
        days: list[dict[str, Any]] = [{"player_id": d.player_id, "gaming_day": d.gaming_day, "cash_in_cents": d.cash_in_cents,
                 "cash_out_cents": d.cash_out_cents, "ctr": d.ctr,
                 "mtl": [{"kind": k, "transaction_id": tx, "amount_cents": c} for k, tx, c in d.mtl]}
                for d in cash_days]
        if as_json:
            return JSONResponse({"days": days, "mtl": sum(len(d.mtl) for d in cash_days),
                                 "ctr": sum(1 for d in cash_days if d.ctr)})
        return self._page(request, role, "cage_currency.html", days=days)

    def routes(self) -> list[BaseRoute]:
        """The routes (mount them before the query API)."""
        def as_fmt(handler: Callable[[Request], Awaitable[Response]], fmt: str
                   ) -> Callable[[Request], Awaitable[Response]]:
            async def h(request: Request) -> Response:
                request.path_params["fmt"] = fmt
                return await handler(request)
            return h

        out: list[BaseRoute] = [Route("/cage/desk/{table_id}/{action}", self.act, methods=["POST"])]
        for path, handler, fmts in (("statement", self.statement, ("", ".json", ".csv")),
                                    ("desk", self.desk, ("", ".json")), ("patrons", self.patrons, ("", ".json")),
                                    ("currency", self.currency_list, ("", ".json"))):
            out += [Route(f"/cage/{path}{f}", as_fmt(handler, f)) for f in fmts]
        return out


__all__ = ["CAGE_PAGE_ROLES", "READS", "CageLog", "CagePages", "MemoryCageLog", "statement_json"]

