"""Who may send what: each role's actions (:data:`ROLE_ACTIONS`), the command each action becomes by its tag
(:data:`COMMAND_OF`), and so the principal that writes it (:func:`writer_of`).

``dealer`` sends every console action; ``pit`` (the pit boss, the floorman) opens a table, seats and unseats
players, voids a round, closes a shoe and orders the shoe passed (13:69F-3.11(a)2); ``bettor`` (a betting
terminal) places and withdraws bets and decides a chemin de fer option, each for a player its credential is
bound to (:mod:`services.runtime.credentials`); ``cage``, ``surveillance`` and ``analyst`` send nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts import topics as T
from services.command_api.requests import ACTIONS, ConsoleAction

#: action name -> the tag of the command it becomes (so its topic and writer: :func:`writer_of`)
COMMAND_OF: Mapping[str, str] = {name: ("close_betting" if name == "no_more_bets" else name) for name in ACTIONS}
CONSOLE_ACTIONS = frozenset(n for n, t in ACTIONS.items() if issubclass(t, ConsoleAction))
#: a betting terminal's actions: each acts for the player it names (``player_id``, the actor)
BETTOR_ACTIONS = frozenset({"place_bet", "withdraw_bet", "decide_option"})
#: what each role may send; a role not here (or with an empty set) sends nothing
ROLE_ACTIONS: Mapping[str, frozenset[str]] = {
    "dealer": CONSOLE_ACTIONS,
    "pit": frozenset({"open_table", "seat_player", "leave_seat", "void_round", "close_shoe", "pass_shoe"}),
    "bettor": BETTOR_ACTIONS,
    "cage": frozenset(),
    "surveillance": frozenset(),
    "analyst": frozenset(),
}
#: roles that may read a round as dealt (cards, result, every bet's settlement: player ids)
ROUND_READERS = frozenset({"dealer", "pit", "surveillance", "cage"})


def writer_of(action: str) -> str:
    """The principal kind that writes ``action``'s command topic (``console`` or ``bettor``); raises
    ``KeyError`` for an unknown action."""
    return T.ROUTES[T.TOPIC_OF[COMMAND_OF[action]]].writer


def allowed(role: str, action: str) -> bool:
    """Whether ``role`` may send ``action`` (:data:`ROLE_ACTIONS`)."""
    return action in ROLE_ACTIONS.get(role, frozenset())

