"""Which console actions make sense at a table now, and which is the dealer's next step.

The console shows only the forms :func:`console_steps` lists for the table's state (as the live feed folds
it: :class:`services.projection.live.TableLive`) and focuses the next step's, so a dealer runs a punto banco
shoe from the keyboard: load the shoe (a physical one: enter its burn), open a round, "No more bets", (a
physical shoe: each card as it is read), the next round..., and once the dealing service says the shoe is
finished (``ShoeFinished``: the cutting card came out and the end-of-shoe policy allows no further round, rules
digest §1.12 [U]) close it
(``end_shoe``: reason ``end_of_shoe``, unconfirmed; ``close_shoe`` is the early close, confirmed with a
reason). The services still decide: a form shown at the
wrong moment is answered with the service's refusal, never acted on; this only spares the dealer the forms
that cannot be accepted now. Order of play: 13:69F-3.7 (a round opens, bets, "No more bets", the deal).

Chemin de fer (13:69F-4.8): the round opens with the Banker and the bank (the open form's fields); after "No
more bets" the Dominant Player is chosen and "Cards" is called by the dealing service itself; an option
awaiting its controller is decided at the controller's terminal (``decide_option``), or by the table's
default once its deadline has passed (``expire_option``, the table clock on the dealer's console). A
curator table (13:69F-3.6(b), 3.11(a)): the dealer offers the shoe when no one holds it; after a round the
Banker's Hand did not lose, the curator keeps or passes it; the dealer or floorman may order it passed
between rounds.
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
    terminal, which bets and withdraws only while betting is open, and decides a chemin de fer option
    awaiting its controller), and the next one. ``live`` None: a table never opened."""
    r = live.round if live is not None else None
    betting = r is not None and r.status == "betting" and not r.book_closed
    option = r.chem.option if r is not None and r.chem is not None and r.status == "dealing" else None
    if role == "bettor":
        # a terminal withdraws by the button beside each of its bets (the "Your bets" panel), not by bet id;
        # it shows "decide option" only when one of its players controls the option (pit.js compares)
        if option is not None:
            return ConsoleSteps(("decide_option",), "decide_option", _option_words(option))
        return ConsoleSteps(("place_bet",) if betting else (), "place_bet" if betting else None,
                            "betting open" if betting else "betting closed")
    if live is None or not live.opened:
        return ConsoleSteps(("open_table",), "open_table", "table not open")
    if not live.shoe_id or live.shoe_closed:
        return ConsoleSteps(("load_shoe", *_SEATING), "load_shoe", "no shoe: load one")
    if not live.shoe_burned:  # a physical shoe waits for its burn (a shuffled one is burned as it loads)
        return ConsoleSteps(("read_burn", "close_shoe", *_SEATING), "read_burn", "shoe loaded: enter the burn")
    if r is None or r.shoe_id != live.shoe_id or r.status in ("settled", "voided"):
        if live.shoe_finished:  # the cutting card is out and the shoe's last round is dealt
            return ConsoleSteps(("end_shoe", *_SEATING), "end_shoe",
                                "end of shoe: the cutting card is out; close the shoe")
        return _between_rounds(live)
    if betting:
        return ConsoleSteps(("no_more_bets", "void_round", *_SEATING), "no_more_bets", "betting open")
    if option is not None:  # the controller decides at the terminal; the table clock applies the default after
        return ConsoleSteps(("expire_option", "void_round"), None, _option_words(option))
    chem = r.chem if r.status == "dealing" else None
    if chem is not None and not chem.cards_called:
        return ConsoleSteps(("void_round",), None, "choosing the Dominant Player, then \"Cards\"")
    if r.status == "dealing" and live.shoe_physical and r.result is None:
        who = f" (the Banker, seat {chem.banker_seat}, deals)" if chem is not None else ""
        return ConsoleSteps(("read_card", "void_round"), "read_card", f"dealing: enter each card read{who}")
    if r.status == "dealing":
        return ConsoleSteps(("void_round",), None, '"Cards": the Banker deals' if chem is not None else "dealing")
    return ConsoleSteps((), None, "settling")  # resolved: the settlement follows by itself


def _between_rounds(live: TableLive) -> ConsoleSteps:
    """Between rounds: open the next; at a curator table offer the shoe when no one holds it, the curator's
    keep or pass when due (13:69F-3.11(a)), or the dealer's order to pass it (3.11(a)2)."""
    g = live.game
    if not g.curator_table:
        return ConsoleSteps(("open_round", "close_shoe", *_SEATING), "open_round", "between rounds")
    if g.holder is None:
        return ConsoleSteps(("offer_shoe", "open_round", "close_shoe", *_SEATING), "offer_shoe",
                            "between rounds: offer the shoe to a player")
    seat, player = g.holder
    if g.due:
        return ConsoleSteps(("keep_shoe", "pass_shoe", "open_round", "close_shoe", *_SEATING), "keep_shoe",
                            f"between rounds: the curator (seat {seat}, {player}) keeps or passes the shoe")
    return ConsoleSteps(("open_round", "pass_shoe", "close_shoe", *_SEATING), "open_round",
                        f"between rounds: seat {seat} ({player}) holds the shoe")


def _option_words(option: dict[str, object]) -> str:
    hand = "Player's" if option["hand"] == "player" else "Banker's"
    default = "draw" if option["default_draw"] else "stand"
    return (f"option on the {hand} Hand: seat {option['seat']} ({option['player_id']}) draws or stands; "
            f"by default {default} after the deadline")
