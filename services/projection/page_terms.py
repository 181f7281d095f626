"""The pit's pages' terms (:mod:`services.projection.pages`): which roles may open each page
(:data:`PAGE_ROLES`), who reads a round as dealt or the money, the console's forms and their keys, the words,
titles and headers the pages use, the game's name as the pit says it, and the templates' environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from baccarat.money import format_cents

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
    ("end_shoe", "shoe/close", "Close the shoe: end of shoe"),
    # chemin de fer and the curator (services/projection/live_game.py, templates/form_game.html)
    ("offer_shoe", "curator/offer", "Offer the shoe"),
    ("keep_shoe", "curator/keep", "The curator keeps the shoe"),
    ("pass_shoe", "curator/pass", "Pass the shoe"),
    ("expire_option", "options/expire", "Option expired: the table's default"),
    ("decide_option", "options/decide", "Decide the option"),
)
#: the console's keyboard shortcuts (a key pressed outside a field): the dealer's steps
FORM_KEYS = {"open_round": "o", "no_more_bets": "n", "read_card": "c", "read_burn": "b", "load_shoe": "l",
             "seat_player": "s", "end_shoe": "e"}
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


def _safe_next(nxt: str) -> str:
    """A local path to go to after login (never another site: ``//host`` or a scheme is refused)."""
    if not nxt.startswith("/") or nxt.startswith("//") or "\\" in nxt or "\n" in nxt or "\r" in nxt:
        return "/"
    return nxt[:500]
