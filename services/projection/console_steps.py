"""Which console actions make sense at a table now, and which is the dealer's next step.

The console shows only the forms :func:`console_steps` lists for the table's state (as the live feed folds
it: :class:`services.projection.live.TableLive`) and focuses the next step's, so a dealer runs a punto banco
shoe from the keyboard: load the shoe (a physical one: enter its burn), open a round, "No more bets", (a
physical shoe: each card as it is read), the next round... The services still decide: a form shown at the
wrong moment is answered with the service's refusal, never acted on; this only spares the dealer the forms
that cannot be accepted now. Order of play: 13:69F-3.7 (a round opens, bets, "No more bets", the deal).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.projection.live import TableLive

#: the seat bookkeeping a dealer may do whenever the table is open
_SEATING = ("seat_player", "leave_seat", "collect_commission")


@dataclass(frozen=True, slots=True)
class ConsoleSteps:
    """``valid``: the actions the console offers now (names of :data:`services.projection.pages.FORMS`);
    ``next``: the dealer's next step among them (None: nothing to do but wait, e.g. a shuffled shoe
    dealing); ``phase``: the state in words for the console's header."""

    valid: tuple[str, ...]
    next: str | None
    phase: str


def console_steps(live: TableLive | None, role: str = "dealer") -> ConsoleSteps:
    """The actions valid at the table now for ``role`` (``dealer``: the console; ``bettor``: a betting
    terminal, which bets and withdraws only while betting is open), and the next one. ``live`` None: a
    table never opened."""
    r = live.round if live is not None else None
    betting = r is not None and r.status == "betting" and not r.book_closed
    if role == "bettor":
        # a terminal withdraws by the button beside each of its bets (the "Your bets" panel), not by bet id
        return ConsoleSteps(("place_bet",) if betting else (), "place_bet" if betting else None,
                            "betting open" if betting else "betting closed")
    if live is None or not live.opened:
        return ConsoleSteps(("open_table",), "open_table", "table not open")
    if not live.shoe_id or live.shoe_closed:
        return ConsoleSteps(("load_shoe", *_SEATING), "load_shoe", "no shoe: load one")
    if not live.shoe_burned:  # a physical shoe waits for its burn (a shuffled one is burned as it loads)
        return ConsoleSteps(("read_burn", "close_shoe", *_SEATING), "read_burn", "shoe loaded: enter the burn")
    if r is None or r.shoe_id != live.shoe_id or r.status in ("settled", "voided"):
        return ConsoleSteps(("open_round", "close_shoe", *_SEATING), "open_round", "between rounds")
    if betting:
        return ConsoleSteps(("no_more_bets", "void_round", *_SEATING), "no_more_bets", "betting open")
    if r.status == "dealing" and live.shoe_physical and r.result is None:
        return ConsoleSteps(("read_card", "void_round"), "read_card", "dealing: enter each card read")
    if r.status == "dealing":
        return ConsoleSteps(("void_round",), None, "dealing")
    return ConsoleSteps((), None, "settling")  # resolved: the settlement follows by itself
