"""The views the gateway folds from a round's events as it has read them: the round (:func:`round_view_of`) and
a betting terminal's own bets (:func:`bets_of`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import msgspec

from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    BetPlaced,
    BetSettled,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    CardDealt,
    DominantPlayerChosen,
    Irregularity,
    OptionDecided,
    OptionOffered,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
)
from services.command_api.index import EventIndex


def round_view_of(table_id: str, round_id: str, evs: Iterable[Envelope]) -> dict[str, Any]:
    """The round folded from its events ``evs`` (arrival order): the shape :meth:`CommandGateway.round_view
    <services.command_api.gateway.CommandGateway.round_view>` documents; status ``unknown`` without events."""
    view: dict[str, Any] = {"table_id": table_id, "round_id": round_id, "status": "unknown", "shoe_id": "",
                            "cards": [], "points": None, "result": None, "voided": None,
                            "irregularities": [], "bets": None, "withdrawn": [], "settlements": [],
                            "settled": None, "bank": None, "dominant_player": None, "options": [],
                            "option_pending": None, "bank_settled": None}
    order = {"unknown": 0, "betting": 1, "betting_closed": 2, "dealing": 3, "resolved": 4, "voided": 4,
             "settled": 5}

    def status(s: str) -> None:
        if order[s] > order[view["status"]]:
            view["status"] = s

    for e in evs:
        p = e.payload
        plain = msgspec.to_builtins(p)
        if isinstance(p, RoundOpened):
            view["shoe_id"] = p.shoe_id
            if p.banker_player_id:
                view["bank"] = {"seat": p.banker_seat, "player_id": p.banker_player_id,
                                "bank_cents": p.bank_cents}
            status("betting")
        elif isinstance(p, DominantPlayerChosen):
            view["dominant_player"] = plain
        elif isinstance(p, OptionOffered):
            offered_at = e.occurred_at
            view["options"].append({**plain, "offered_at": msgspec.to_builtins(offered_at),
                                    "deadline": msgspec.to_builtins(
                                        offered_at + timedelta(seconds=p.option_seconds)),
                                    "decided": None})
            view["option_pending"] = view["options"][-1]
        elif isinstance(p, OptionDecided):
            for o in reversed(view["options"]):
                if o["hand"] == p.hand and o["decided"] is None:
                    o["decided"] = {"draw": p.draw, "by": p.by}
                    break
            view["option_pending"] = None
        elif isinstance(p, BankSettled):
            view["bank_settled"] = plain
        elif isinstance(p, BettingOpened):
            status("betting")
        elif isinstance(p, BetWithdrawn):
            view["withdrawn"].append(plain)
        elif isinstance(p, BettingClosed):
            view["bets"] = plain["bets"]
            status("betting_closed")
        elif isinstance(p, CardDealt):
            view["cards"].append(plain)
            status("dealing")
        elif isinstance(p, PointsAnnounced):
            view["points"] = plain
        elif isinstance(p, Irregularity):
            view["irregularities"].append(plain)
        elif isinstance(p, RoundResolved):
            view["result"] = plain
            status("resolved")
        elif isinstance(p, RoundVoided):
            view["voided"] = plain
            status("voided")
        elif isinstance(p, BetSettled):
            view["settlements"].append(plain)
        elif isinstance(p, RoundSettled):
            view["settled"] = plain
            status("settled")
    return view


def bets_of(index: EventIndex, table_id: str, round_id: str, players: Iterable[str]) -> list[dict[str, Any]]:
    """The bets ``players`` placed in the round, as the gateway has read them, in the order placed: ``bet_id``,
    ``seat``, ``player_id``, ``wager``, ``amount_cents``, ``status`` (``placed`` | ``withdrawn`` | ``settled``)
    and, once settled, ``result``, ``category``, ``payout`` and ``commission`` (cents). What a betting terminal
    shows its players (only theirs: another player's bets are not a terminal's to see)."""
    mine = frozenset(players)
    out: dict[str, dict[str, Any]] = {}
    for e in index.round_events(table_id, round_id):
        p = e.payload
        if isinstance(p, BetPlaced) and p.player_id in mine:
            out[p.bet_id] = {"bet_id": p.bet_id, "seat": p.seat, "player_id": p.player_id, "wager": p.wager,
                             "amount_cents": p.amount_cents, "status": "placed", "result": None, "category": None,
                             "payout": None, "commission": None}
        elif isinstance(p, BetWithdrawn) and p.bet_id in out:
            out[p.bet_id]["status"] = "withdrawn"
        elif isinstance(p, BetSettled) and p.bet_id in out:
            out[p.bet_id].update(status="settled", result=p.result, category=p.category, payout=p.payout,
                                 commission=p.commission)
    return list(out.values())
