"""The query API's pit, cage and surveillance endpoints (one router, registered by
:func:`services.projection.api.create_api`); the views themselves are :mod:`services.projection.pit_views`.

=========================================== ======================= ===========================================
endpoint                                    roles                   answers
=========================================== ======================= ===========================================
``GET /floor?at=``                          anyone; more for        every table: game, shoe, last result; for
                                            ``cage``/``pit``/        a ledger role also the gaming day's and the
                                            ``surveillance``        shift's rounds, drop, win, hold %, the
                                                                    day's table result, open alerts (a count)
``GET /tables/{id}/cage?gaming_day=``       ``cage``, ``pit``,      the day, each shift and each hour of the
                                            ``surveillance``        table; commission by player
``GET /cage/hourly?gaming_day=&table_id=``  the same                the hourly results table (JSON)
``GET /cage/hourly.csv?…``                  the same                the same as ``text/csv``
``GET /surveillance/players?…``             ``surveillance``        players by expected gain, raised or not
``GET /surveillance/shoes?gaming_day=``     ``surveillance``        closed shoes: commitment and cards verified
``GET /surveillance/irregularities?…``      ``surveillance``        voided rounds and irregularities per table
=========================================== ======================= ===========================================

``gaming_day`` (``YYYY-MM-DD``) defaults to the gaming day of the API's clock now; a date that is not one is a
422, a day older than the day before the latest folded (no longer held) a 410. ``at`` (ISO 8601; no zone
means UTC) defaults to now. A bearer token that is not a role's is a 401 everywhere, ``/floor`` included (no
token there is the public view); a role not allowed a 403. Settings: :class:`~services.projection.pit_views.PitSettings`
(``CROUPIER_SURVEILLANCE_RAISE_CENTS``, ``CROUPIER_SHIFT_STARTS``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from services.projection.auth import LEDGER_ROLES, SURVEILLANCE_ROLES, role_of
from services.projection.core import ProjectionState
from services.projection.pit_state import day_and_hour
from services.projection.pit_views import (
    HOLD_ROUNDING,
    PitSettings,
    cage_view,
    closed_shoes,
    cutoff_of,
    floor_view,
    hourly_csv,
    hourly_rows,
    irregularities,
    is_held,
    player_ranking,
)
from services.runtime.host import ServiceHost

Requires = Callable[[frozenset[str], str], Callable[..., Awaitable[str]]]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def pit_router(host: ServiceHost, state: Callable[[str], ProjectionState], requires: Requires,
               bearer: HTTPBearer, tokens: Mapping[str, str], settings: PitSettings | None = None,
               clock: Callable[[], datetime] = _utcnow) -> APIRouter:
    """The router of the endpoints above over ``host``'s tables. ``state(table_id)``: a table's state or a
    404; ``requires(roles, what)``: the API's dependency that answers 401/403 unless the bearer token is one
    of ``roles``'; ``bearer``/``tokens``: the API's scheme and ``{role: token}``; ``settings``: default from
    the environment (:meth:`PitSettings.from_env`, which raises ``ValueError`` naming a bad variable);
    ``clock``: UTC now, for the default gaming day and ``at``."""
    cfg = settings if settings is not None else PitSettings.from_env()
    router = APIRouter()
    ledger_reader = requires(LEDGER_ROLES, "ledgers and balances")
    surveillance = requires(SURVEILLANCE_ROLES, "the surveillance view")

    async def viewer(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str | None:
        if creds is None:
            return None
        role = role_of(tokens, creds.credentials)
        if role is None:
            raise HTTPException(401, "the bearer token is not a role's (send none for the public view)",
                                headers={"WWW-Authenticate": "Bearer"})
        return role

    def tables(table_id: str | None = None) -> dict[str, ProjectionState]:
        if table_id is not None:
            return {table_id: state(table_id)}
        return {t: slot.state for t, slot in sorted(host.runner.tables.items()) if slot.state.config is not None}

    def moment(at: datetime | None) -> datetime:
        if at is None:
            return clock().astimezone(UTC)
        return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)

    def day_of(gaming_day: str | None, states: Mapping[str, ProjectionState]) -> str:
        """The gaming day asked for (422 if not a date, 410 if no longer held), default today's."""
        if gaming_day is None:
            return day_and_hour(moment(None), cutoff_of(states.values()))[0]
        try:
            day = date.fromisoformat(gaming_day).isoformat()
        except ValueError:
            raise HTTPException(422, f"gaming_day must be a date YYYY-MM-DD, got {gaming_day!r}") from None
        everything = tables()
        if not is_held(everything.values(), day):
            raise HTTPException(410, f"gaming day {day} is over and no longer held (the projection holds the "
                                     "latest gaming day and the one before; croupier export reads older ones "
                                     "from the log)")
        return day

    day_help = "Gaming day YYYY-MM-DD (default: today's, by the API's clock)"
    at_help = "The moment the floor is seen at, ISO 8601 (no zone: UTC; default: now)"

    @router.get("/floor", summary="Every table at a glance; drop, win, hold and open alerts for ledger roles")
    async def floor(at: datetime | None = Query(None, description=at_help),
                    role: str | None = Depends(viewer)) -> dict[str, Any]:
        return floor_view(tables(), moment(at), cfg, money=role in LEDGER_ROLES)

    @router.get("/tables/{table_id}/cage", summary="A table's gaming day: shifts, hours, commission by player "
                                                   "(cage, pit, surveillance)",
                dependencies=[Depends(ledger_reader)])
    async def table_cage(table_id: str, gaming_day: str | None = Query(None, description=day_help)
                         ) -> dict[str, Any]:
        states = tables(table_id)
        return cage_view(table_id, states[table_id], day_of(gaming_day, states), cfg)

    def rows(gaming_day: str | None, table_id: str | None) -> tuple[str, list[dict[str, Any]]]:
        states = tables(table_id)
        day = day_of(gaming_day, states)
        return day, [r for t, s in states.items() for r in hourly_rows(t, s, day)]

    @router.get("/cage/hourly", summary="The hourly results table: drop, win, hold % (cage, pit, surveillance)",
                dependencies=[Depends(ledger_reader)])
    async def hourly(gaming_day: str | None = Query(None, description=day_help),
                     table_id: str | None = None) -> dict[str, Any]:
        day, got = rows(gaming_day, table_id)
        return {"gaming_day": day, "hold_rounding": HOLD_ROUNDING.value, "rows": got}

    @router.get("/cage/hourly.csv", summary="The hourly results table as CSV (cage, pit, surveillance)",
                dependencies=[Depends(ledger_reader)], response_class=Response,
                responses={200: {"content": {"text/csv": {}}}})
    async def hourly_as_csv(gaming_day: str | None = Query(None, description=day_help),
                            table_id: str | None = None) -> Response:
        day, got = rows(gaming_day, table_id)
        name = f"croupier-hourly-{day}{'-' + table_id if table_id else ''}.csv"
        return Response(hourly_csv(got), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @router.get("/surveillance/players", summary="Players by expected gain on positive-EV bets, raised at the "
                                                 "threshold (surveillance)",
                dependencies=[Depends(surveillance)])
    async def players(gaming_day: str | None = Query(None, description=day_help),
                      threshold_cents: int | None = Query(None, ge=1, description=(
                          "Raise at this expected gain (cents; default the configured "
                          f"{cfg.raise_threshold_cents})")),
                      raised_only: bool = False) -> dict[str, Any]:
        states = tables()
        day = day_of(gaming_day, states)
        threshold = threshold_cents if threshold_cents is not None else cfg.raise_threshold_cents
        ranked = player_ranking(states, day, threshold)
        return {"gaming_day": day, "threshold_cents": threshold, "raised": sum(p["raised"] for p in ranked),
                "players": [p for p in ranked if p["raised"] or not raised_only]}

    @router.get("/surveillance/shoes", summary="Shoes closed in the gaming day: commitment and cards verified "
                                               "(surveillance)",
                dependencies=[Depends(surveillance)])
    async def shoes(gaming_day: str | None = Query(None, description=day_help),
                    table_id: str | None = None) -> dict[str, Any]:
        states = tables(table_id)
        day = day_of(gaming_day, states)
        return {"gaming_day": day, "shoes": closed_shoes(states, day)}

    @router.get("/surveillance/irregularities", summary="Voided rounds and irregularities of the gaming day "
                                                        "(surveillance)",
                dependencies=[Depends(surveillance)])
    async def irregular(gaming_day: str | None = Query(None, description=day_help),
                        table_id: str | None = None) -> dict[str, Any]:
        states = tables(table_id)
        day = day_of(gaming_day, states)
        return {"gaming_day": day, "tables": irregularities(states, day)}

    return router
