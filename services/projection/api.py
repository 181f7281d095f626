"""The projection's query API: a small ASGI app (FastAPI, OpenAPI at ``/openapi.json``, docs at ``/docs``,
served from the package: :mod:`services.runtime.docs_ui`).

Reads the live state of a projection host (the projection service itself, or a read-only replica that
folds the same streams and publishes nothing). Public views (``/health``, ``/tables``, public odds, roads)
need no credential and hold no player data; nor do the operations endpoints (``/health/live``,
``/health/ready``, ``/metrics``: cheap, no state digest). The state digest (``/digest``) needs the
``analyst`` or ``surveillance`` role. Ledgers and balances (player ids) need ``Authorization: Bearer
<token>`` of the ``cage``, ``pit`` or ``surveillance`` role; the surveillance odds, alerts and player
surveillance that of ``surveillance`` (roles and credentials: :mod:`services.projection.auth`). No or an
unknown token: 401; a known token of a role not allowed: 403. An unknown table is a 404 with a message.
Balances are running totals; the latest entries are held (``/ledger/entries``), and the whole journal is
paged from the ``projection.ledger`` topic with a cursor (``/ledger/journal``: a bad cursor is a 422;
:mod:`services.projection.journal`).

Every endpoint that reads the state is ``async``: it runs on the event loop, between two of the folds that
replace the tables' states, never in a worker thread beside them (a thread could see the table dict change
size, or a table vanish, mid-read: the ``KeyError`` that ``/health`` used to answer 500 with).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import date
from typing import Any

from aiokafka.errors import KafkaError
from fastapi import Depends, FastAPI, HTTPException, Query, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from baccarat.roads import parse_results, roads
from services.projection.auth import (
    DIGEST_ROLES,
    LEDGER_ROLES,
    ROLES,
    SURVEILLANCE_ROLES,
    NoCredentials,
    role_of,
)
from services.projection.core import ProjectionState
from services.projection.digest import DigestCache
from services.projection.journal import MAX_LIMIT, BadCursor, Journal, KafkaJournal
from services.projection.ledger_state import ENTRY_WINDOW
from services.projection.pit_api import pit_router
from services.runtime import metrics
from services.runtime.docs_ui import mount_docs
from services.runtime.host import ServiceHost


def create_api(host: ServiceHost, tokens: Mapping[str, str], ready: Callable[[], bool] | None = None,
               journal: Journal | None = None,
               readiness: Callable[[], tuple[bool, dict[str, Any]]] | None = None) -> FastAPI:
    """The query API over ``host``'s projection state. ``tokens``: ``{role: bearer token}`` (roles in
    :data:`services.projection.auth.ROLES`; load them with :func:`services.projection.auth.load_tokens`).
    ``ready``: whether the projection has restored its tasks (``Service.ready``); until it has, every data
    endpoint answers 503 (never a 404 or zero balances from a half-restored state).
    ``readiness``: ``(ready, body)`` for ``/health/ready`` (:func:`services.runtime.ops.readiness`: the
    broker answers, an assignment is held, every task restored); default ``ready`` alone. ``/health/ready``
    answers 503 while not ready. ``journal``: where ``/ledger/journal`` reads the whole journal (default: the
    ``projection.ledger`` topic on ``host.settings``' broker, :class:`~services.projection.journal.KafkaJournal`).
    Raises :class:`~services.projection.auth.NoCredentials` if ``tokens`` is empty and ``ValueError`` for an
    unknown role: there is no default credential."""
    if not tokens:
        raise NoCredentials("the query API needs at least one role's credential")
    unknown = sorted(set(tokens) - set(ROLES))
    if unknown:
        raise ValueError(f"unknown role(s) {', '.join(unknown)}; roles: {', '.join(ROLES)}")
    tokens = dict(tokens)
    journal_source: Journal = journal if journal is not None else KafkaJournal(host.settings)
    api = FastAPI(
        title="Croupier projection",
        version="1",
        docs_url=None,
        redoc_url=None,
        description="Live odds (public and surveillance views), roadmaps, cage ledgers and surveillance "
                    "alerts of every table, as folded from the event streams. Ledgers need the cage, pit or "
                    "surveillance role; the surveillance view and alerts the surveillance role.",
    )
    bearer = HTTPBearer(auto_error=False, scheme_name="bearer",
                        description="A role's API token (CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE)")

    def state(table_id: str) -> ProjectionState:
        slot = host.runner.tables.get(table_id)
        if slot is None or slot.state.config is None:
            raise HTTPException(404, f"unknown table {table_id!r}")
        return slot.state  # type: ignore[no-any-return]

    def requires(allowed: frozenset[str], what: str) -> Callable[..., Awaitable[str]]:
        async def check(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str:
            role = role_of(tokens, creds.credentials) if creds is not None else None
            if role is None:
                raise HTTPException(401, f"{what} needs a valid bearer token", headers={"WWW-Authenticate": "Bearer"})
            if role not in allowed:
                raise HTTPException(403, f"the {role} role may not read {what} (allowed: {', '.join(sorted(allowed))})")
            return role
        return check

    ledger_reader = requires(LEDGER_ROLES, "ledgers and balances")
    surveillance = requires(SURVEILLANCE_ROLES, "the surveillance view")
    digest_reader = requires(DIGEST_ROLES, "the state digest")

    is_ready = ready or (lambda: True)
    get_readiness = readiness or (lambda: (is_ready(), {"ready": is_ready(), "restored": is_ready()}))
    digests = DigestCache()  # used on the event loop only (every endpoint is async)

    @api.middleware("http")
    async def restoring(request: Any, call_next: Any) -> Any:
        from fastapi.responses import JSONResponse

        t0 = time.perf_counter()
        open_paths = ("/health", "/metrics", "/docs", "/openapi.json", "/redoc")
        if not is_ready() and not request.url.path.startswith(open_paths):
            response = JSONResponse({"detail": "restoring: the projection has not caught up with the log yet"},
                                    status_code=503, headers={"Retry-After": "1"})
        else:
            response = await call_next(request)
        route = request.scope.get("route")
        name = getattr(route, "path", None) or "unmatched"  # the path template: bounded, never an id
        metrics.API_REQUESTS.labels(name, str(response.status_code)).inc()
        metrics.API_SECONDS.labels(name).observe(time.perf_counter() - t0)
        return response

    @api.get("/health/live", summary="Liveness: the process answers (no state read)")
    async def health_live() -> dict[str, Any]:
        return {"live": True}

    @api.get("/health/ready", summary="Readiness: broker reachable, partitions assigned and restored (503 until then)")
    async def health_ready() -> Any:
        from fastapi.responses import JSONResponse

        ok, body = get_readiness()
        return JSONResponse(body, status_code=200 if ok else 503)

    @api.get("/health", summary="Cheap status: ready, tables held (no digest: see /digest)")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "ready": is_ready(), "tables": len(host.runner.tables)}

    @api.get("/digest", summary="SHA-256 of the whole projection state (analyst, surveillance)",
             dependencies=[Depends(digest_reader)])
    async def digest() -> dict[str, Any]:
        tables = dict(host.runner.tables)
        return {"digest": digests.digest(tables), "tables": len(tables)}

    @api.get("/metrics", include_in_schema=False)
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)

    @api.get("/tables", summary="Every table and where it stands")
    async def tables() -> list[dict[str, Any]]:
        return [summary(t, slot.state) for t, slot in sorted(host.runner.tables.items()) if slot.state.config]

    def summary(table_id: str, s: ProjectionState) -> dict[str, Any]:
        shoe = s.shoe
        assert s.config is not None
        return {
            "table_id": table_id,
            "variant": s.config.variant.value,
            "wagers": sorted(w.value for w in s.config.wagers),
            "shoe_id": shoe.shoe_id if shoe else None,
            "cards_out": shoe.cards_out if shoe else 0,
            "rounds_this_shoe": len(s.results(shoe.shoe_id)) if shoe else 0,
            "last_result": (s.results(shoe.shoe_id) or ("",))[-1] if shoe else "",
            "table_result_cents": s.ledger.table_result(table_id),
            # who holds the shoe (13:69F-3.6(b), 3.11): null at a table the dealer deals, or while no one does
            "curator": ({"seat": s.curator[0], "player_id": s.curator[1], "since_round": s.curator_since}
                        if s.curator is not None else None),
        }

    @api.get("/tables/{table_id}", summary="One table")
    async def table(table_id: str) -> dict[str, Any]:
        return summary(table_id, state(table_id))

    @api.get("/tables/{table_id}/odds", summary="Exact odds of the next round (public view)")
    async def odds_public(table_id: str) -> Any:
        s = state(table_id)
        if "public" not in s.last_odds:
            raise HTTPException(404, f"no odds yet for table {table_id!r}")
        return _plain(s.last_odds["public"])

    @api.get("/tables/{table_id}/odds/surveillance", summary="Exact odds in the surveillance view (surveillance)",
             dependencies=[Depends(surveillance)])
    async def odds_surveillance(table_id: str) -> Any:
        s = state(table_id)
        if "surveillance" not in s.last_odds:
            raise HTTPException(404, f"no odds yet for table {table_id!r}")
        return _plain(s.last_odds["surveillance"])

    @api.get("/tables/{table_id}/roads", summary="Roadmaps of the current shoe")
    async def table_roads(table_id: str, shoe_id: str | None = None) -> dict[str, Any]:
        s = state(table_id)
        sid = shoe_id or (s.shoe.shoe_id if s.shoe else None)
        if sid is None or (shoe_id and not s.knows_shoe(shoe_id)):
            raise HTTPException(404, f"unknown shoe {shoe_id!r} at table {table_id!r}")
        if sid in s.past_shoes and not (s.shoe and s.shoe.shoe_id == sid):
            raise HTTPException(410, f"shoe {sid!r} at table {table_id!r} is over; its road is no longer held "
                                     "(croupier replay/export read it from the log)")
        seq = "".join(s.results(sid))
        return {"table_id": table_id, "shoe_id": sid, "sequence": seq, "roads": roads(parse_results(seq)).to_dict()}

    def scope(s: ProjectionState, table_id: str, shoe_id: str | None, gaming_day: str | None) -> None:
        """404 for a shoe the table never had, 422 for a gaming day that is not a date."""
        if gaming_day is not None:
            try:
                date.fromisoformat(gaming_day)
            except ValueError:
                raise HTTPException(422, f"gaming_day must be a date YYYY-MM-DD, got {gaming_day!r}") from None
        if shoe_id is not None and not s.knows_shoe(shoe_id):
            raise HTTPException(404, f"unknown shoe {shoe_id!r} at table {table_id!r}")

    @api.get("/tables/{table_id}/ledger", summary="Ledger balances (cents) by account (cage, pit, surveillance)",
             dependencies=[Depends(ledger_reader)])
    async def ledger_balances(table_id: str, shoe_id: str | None = None, gaming_day: str | None = None,
                        player_id: str | None = None) -> dict[str, Any]:
        s = state(table_id)
        scope(s, table_id, shoe_id, gaming_day)
        return {
            "table_id": table_id,
            "balances": s.ledger.balances(table_id=table_id, shoe_id=shoe_id, gaming_day=gaming_day,
                                          player_id=player_id),
            "table_result_cents": s.ledger.table_result(table_id, shoe_id=shoe_id, gaming_day=gaming_day),
        }

    @api.get("/tables/{table_id}/ledger/entries",
             summary="The latest journal entries (cage, pit, surveillance)",
             description="The latest entries the projection holds (about the last "
                         f"{ENTRY_WINDOW:,} of each source stream of the table), oldest first, narrowed by the "
                         "filters; the response header `X-Ledger-Entries-Dropped` counts the table's entries no "
                         "longer held (the whole journal is on the `projection.ledger` topic and pages through "
                         "`/tables/{table_id}/ledger/journal`). Balances (`/ledger`) are exact running totals "
                         "whatever is held.",
             dependencies=[Depends(ledger_reader)])
    async def ledger_entries(response: Response, table_id: str, shoe_id: str | None = None,
                       gaming_day: str | None = None, player_id: str | None = None,
                       limit: int = Query(200, ge=1, le=10_000)) -> list[Any]:
        s = state(table_id)
        scope(s, table_id, shoe_id, gaming_day)
        es = s.ledger.entries(table_id=table_id, shoe_id=shoe_id, gaming_day=gaming_day, player_id=player_id)
        response.headers["X-Ledger-Entries-Dropped"] = str(s.ledger.dropped)
        return [_plain(e) for e in list(es)[-limit:]]

    @api.get("/tables/{table_id}/ledger/journal",
             summary="The whole journal, page by page with a cursor (cage, pit, surveillance)",
             description="Every journal entry of the table since it opened, oldest first, read from the "
                         "`projection.ledger` topic (not the projection's window): give no `cursor` for the "
                         "first page, then each page's `next_cursor` for the next, until `more` is false (the "
                         "last `next_cursor` also reads entries posted later). Each request reads Kafka: one "
                         "short-lived consumer, the table's partition from the cursor on, at most `limit` "
                         "entries (the partition's other tables' records are read and dropped). A cursor "
                         "this API did not give for this table is a 422.",
             dependencies=[Depends(ledger_reader)])
    async def ledger_journal(table_id: str, cursor: str | None = None,
                             limit: int = Query(500, ge=1, le=MAX_LIMIT)) -> Any:
        state(table_id)
        try:
            page = await journal_source.page(table_id, cursor, limit)
        except BadCursor as e:
            raise HTTPException(422, str(e)) from None
        except (TimeoutError, OSError, KafkaError) as e:
            raise HTTPException(503, f"the journal could not be read from Kafka ({type(e).__name__}: {e})",
                                headers={"Retry-After": "1"}) from None
        return _plain(page)

    api.include_router(pit_router(host, state, requires, bearer, tokens))  # /floor, /cage, /surveillance

    @api.get("/alerts", summary="Surveillance alerts of the current gaming day (surveillance)", dependencies=[Depends(surveillance)])
    async def alerts(table_id: str | None = None, player_id: str | None = None) -> list[Any]:
        out = []
        for t, slot in sorted(host.runner.tables.items()):
            if table_id and t != table_id:
                continue
            for a in slot.state.alerts:
                if not player_id or a.player_id == player_id:
                    out.append({"table_id": t, **_plain(a)})
        return out

    @api.get("/players/{player_id}/surveillance", summary="A player's flagged bets of the current gaming day (surveillance)",
             dependencies=[Depends(surveillance)])
    async def player(player_id: str) -> dict[str, Any]:
        bets = stake = gain = 0
        for slot in host.runner.tables.values():
            w = slot.state.watch.get(player_id)
            if w:
                bets, stake, gain = bets + w.bets, stake + w.stake_cents, gain + w.expected_gain_cents
        return {"player_id": player_id, "flagged_bets": bets, "stake_cents": stake, "expected_gain_cents": gain}

    mount_docs(api)  # Swagger UI from the package, not a CDN
    return api


def _plain(x: Any) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(x)  # type: ignore[no-any-return]
