"""The projection's query API: a small ASGI app (FastAPI, OpenAPI at ``/openapi.json``, docs at ``/docs``).

Reads the live state of a projection host (the projection service itself, or a read-only replica that
folds the same streams and publishes nothing). The surveillance view and the alerts need
``Authorization: Bearer <token>``; without a valid token they answer 401. An unknown table is a 404 with a
message.
"""

from __future__ import annotations

import hmac
from datetime import date
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query

from baccarat.roads import parse_results, roads
from services.projection.core import ProjectionState
from services.projection.digest import state_digest
from services.runtime.host import ServiceHost


def create_api(host: ServiceHost, surveillance_token: str) -> FastAPI:
    """The query API over ``host``'s projection state. ``surveillance_token``: the bearer token that opens
    the surveillance view and the alerts (an empty token opens nothing)."""
    api = FastAPI(
        title="Croupier projection",
        version="1",
        description="Live odds (public and surveillance views), roadmaps, cage ledgers and surveillance "
                    "alerts of every table, as folded from the event streams.",
    )

    def state(table_id: str) -> ProjectionState:
        slot = host.runner.tables.get(table_id)
        if slot is None or slot.state.config is None:
            raise HTTPException(404, f"unknown table {table_id!r}")
        return slot.state  # type: ignore[no-any-return]

    def surveillance(authorization: str = Header(default="")) -> None:
        scheme, _, token = authorization.partition(" ")
        if not surveillance_token or scheme.lower() != "bearer" or not hmac.compare_digest(
                token.encode(), surveillance_token.encode()):
            raise HTTPException(401, "the surveillance view needs a valid bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    @api.get("/health", summary="Liveness and the state digest")
    def health() -> dict[str, Any]:
        return {"status": "ok", "tables": len(host.runner.tables), "digest": state_digest(host.runner.tables)}

    @api.get("/tables", summary="Every table and where it stands")
    def tables() -> list[dict[str, Any]]:
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
            "rounds_this_shoe": len(s.results.get(shoe.shoe_id, ())) if shoe else 0,
            "last_result": (s.results.get(shoe.shoe_id) or ("",))[-1] if shoe else "",
            "table_result_cents": s.ledger.table_result(table_id),
        }

    @api.get("/tables/{table_id}", summary="One table")
    def table(table_id: str) -> dict[str, Any]:
        return summary(table_id, state(table_id))

    @api.get("/tables/{table_id}/odds", summary="Exact odds of the next round (public view)")
    def odds_public(table_id: str) -> Any:
        s = state(table_id)
        if "public" not in s.last_odds:
            raise HTTPException(404, f"no odds yet for table {table_id!r}")
        return _plain(s.last_odds["public"])

    @api.get("/tables/{table_id}/odds/surveillance", summary="Exact odds in the surveillance view (token)",
             dependencies=[Depends(surveillance)])
    def odds_surveillance(table_id: str) -> Any:
        s = state(table_id)
        if "surveillance" not in s.last_odds:
            raise HTTPException(404, f"no odds yet for table {table_id!r}")
        return _plain(s.last_odds["surveillance"])

    @api.get("/tables/{table_id}/roads", summary="Roadmaps of a shoe (default: the current shoe)")
    def table_roads(table_id: str, shoe_id: str | None = None) -> dict[str, Any]:
        s = state(table_id)
        sid = shoe_id or (s.shoe.shoe_id if s.shoe else None)
        if sid is None or (shoe_id and shoe_id not in s.results and (not s.shoe or s.shoe.shoe_id != shoe_id)):
            raise HTTPException(404, f"unknown shoe {shoe_id!r} at table {table_id!r}")
        seq = "".join(s.results.get(sid, ()))
        return {"table_id": table_id, "shoe_id": sid, "sequence": seq, "roads": roads(parse_results(seq)).to_dict()}

    def scope(s: ProjectionState, table_id: str, shoe_id: str | None, gaming_day: str | None) -> None:
        """404 for a shoe the table never had, 422 for a gaming day that is not a date."""
        if gaming_day is not None:
            try:
                date.fromisoformat(gaming_day)
            except ValueError:
                raise HTTPException(422, f"gaming_day must be a date YYYY-MM-DD, got {gaming_day!r}") from None
        if shoe_id is not None and shoe_id not in s.results and not (s.shoe and s.shoe.shoe_id == shoe_id):
            raise HTTPException(404, f"unknown shoe {shoe_id!r} at table {table_id!r}")

    @api.get("/tables/{table_id}/ledger", summary="Ledger balances (cents) by account")
    def ledger_balances(table_id: str, shoe_id: str | None = None, gaming_day: str | None = None,
                        player_id: str | None = None) -> dict[str, Any]:
        s = state(table_id)
        scope(s, table_id, shoe_id, gaming_day)
        return {
            "table_id": table_id,
            "balances": s.ledger.balances(table_id=table_id, shoe_id=shoe_id, gaming_day=gaming_day,
                                          player_id=player_id),
            "table_result_cents": s.ledger.table_result(table_id, shoe_id=shoe_id, gaming_day=gaming_day),
        }

    @api.get("/tables/{table_id}/ledger/entries", summary="Journal entries")
    def ledger_entries(table_id: str, shoe_id: str | None = None, gaming_day: str | None = None,
                       player_id: str | None = None, limit: int = Query(200, ge=1, le=10_000)) -> list[Any]:
        s = state(table_id)
        scope(s, table_id, shoe_id, gaming_day)
        es = s.ledger.entries(table_id=table_id, shoe_id=shoe_id, gaming_day=gaming_day, player_id=player_id)
        return [_plain(e) for e in list(es)[-limit:]]

    @api.get("/alerts", summary="Surveillance alerts (token)", dependencies=[Depends(surveillance)])
    def alerts(table_id: str | None = None, player_id: str | None = None) -> list[Any]:
        out = []
        for t, slot in sorted(host.runner.tables.items()):
            if table_id and t != table_id:
                continue
            for a in slot.state.alerts:
                if not player_id or a.player_id == player_id:
                    out.append({"table_id": t, **_plain(a)})
        return out

    @api.get("/players/{player_id}/surveillance", summary="A player's flagged bets (token)",
             dependencies=[Depends(surveillance)])
    def player(player_id: str) -> dict[str, Any]:
        bets = stake = gain = 0
        for slot in host.runner.tables.values():
            w = slot.state.watch.get(player_id)
            if w:
                bets, stake, gain = bets + w.bets, stake + w.stake_cents, gain + w.expected_gain_cents
        return {"player_id": player_id, "flagged_bets": bets, "stake_cents": stake, "expected_gain_cents": gain}

    return api


def _plain(x: Any) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(x)  # type: ignore[no-any-return]
