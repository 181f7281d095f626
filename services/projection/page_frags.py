"""The pit's pages' parts as HTML from the projection's state, no HTTP: what the floor shows of a table, its
roads (SVG, drawn again only when its results change), the console's live parts, surveillance's odds and
alerts, the cage's books, and the live feed's frames (:meth:`PageFragments.render`). Money is integer cents,
shown in dollars by the templates' ``money`` filter.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable, Hashable, Mapping
from datetime import datetime
from typing import Any

from jinja2 import Environment
from markupsafe import escape

from services.projection.console_steps import console_steps
from services.projection.core import ProjectionState
from services.projection.live import LiveFeed, TableLive
from services.projection.page_terms import STATUS_WORDS, frame, game_label
from services.projection.pit_state import day_and_hour
from services.projection.pit_views import (
    PitSettings,
    cage_view,
    closed_shoes,
    cutoff_of,
    day_of,
    floor_view,
    irregularities,
    is_held,
    player_ranking,
)
from services.projection.roadsvg import scoreboard

#: the surveillance page's alert rows (newest first): the page shows them 20 at a time, filtered by table and
#: player in the browser (``pit.js``); ``/alerts`` has every alert held
ALERT_ROWS = 500


class PageFragments:
    """The HTML parts of the pit's pages over ``tables()`` (``{table id: ProjectionState}`` now) and the live
    ``feed``; the attributes are set by :class:`services.projection.pages.PitPages`, which serves them."""

    tables: Callable[[], Mapping[str, ProjectionState]]
    feed: LiveFeed
    settings: PitSettings
    clock: Callable[[], datetime]
    env: Environment
    replay: Callable[[str, str | None], Awaitable[dict[str, Any]]] | None
    _board_cache: dict[tuple[str, bool], tuple[tuple[str, ...], dict[str, str]]]

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
        elif live.shoe_finished and live.shoe_id == shoe.shoe_id and (
                r is None or r.shoe_id != shoe.shoe_id or r.status in ("settled", "voided")):
            # the cutting card is out and the last round is over (ShoeFinished): no round until it is closed
            status = "Shoe finished: the cutting card is out, no further round (to be closed)"
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

    def floor_cards(self, tables: list[str], money: bool) -> tuple[list[tuple[str, str]], str | None]:
        """``(table id, card)`` of the given tables, with money figures for a ledger role, and for that role
        the floor's totals line (the gaming day's and the shift's drop, win and hold over every table, as the
        query API's ``/floor`` totals), both from one :func:`floor_view`; None for the other roles."""
        rows: dict[str, Any] = {}
        totals = None
        if money:  # the rows of these tables only (a live frame re-renders the tables that changed)
            got = floor_view(self._configured(), self.clock(), self.settings, money=True, only=tables)
            rows = {r["table_id"]: r for r in got["tables"]}
            totals = self._t("frag_floor_totals.html", v=got)
        out = []
        for t in tables:
            html = self.table_card(t, rows.get(t))
            if html is not None:
                out.append((t, html))
        return out, totals

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
            this_shoe = s.shoe is not None and live.shoe_id == s.shoe.shoe_id
            # closed, or finished (the cutting card out, its last round dealt): no next round from this shoe
            no_odds = ("No odds: the shoe is closed (no next round from it)." if this_shoe and live.shoe_closed
                       else "No odds: the shoe is finished (the cutting card is out; no next round from it)."
                       if this_shoe and live.shoe_finished else "")
            out[f"odds-{table_id}"] = self._t("frag_odds.html", table_id=table_id, id_prefix="odds",
                                              o=None if no_odds else self._odds(s, "public"), no_odds=no_odds)
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
        alerts the state holds (newest first, the latest :data:`ALERT_ROWS`, each row with its table and player for
        the page's filter and paging, its full round id a link to the round's replay), the shoes closed (commitment and cards verified), the voided
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
        return self._t("frag_alerts.html", alerts=list(reversed(alerts))[:ALERT_ROWS], total=len(alerts),
                       players=ranked[:20],
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
        # a voided round's bets are returned without action: the figures count it in neither the rounds nor the
        # drop (services/projection/pit_state.py), as the replay's totals do; it is said apart
        voided = day_of(s, view_day).voided_total if figures is not None else 0
        return self._t("frag_cage.html", table_id=table_id, balances=balances, figures=figures, view_day=view_day,
                       voided=voided,
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
            cards, totals = self.floor_cards(tables, money=key[1])
            for t, html in cards:
                out.append(frame("frag", {"id": f"table-{t}", "html": html, "parent": "tables"}))
            if totals is not None and cards:  # the day's and shift's totals line follows the tables
                out.append(frame("frag", {"id": "floor-totals", "html": totals}))
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
