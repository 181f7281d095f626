"""Chemin de fer (N.J.A.C. 13:69F-4): who controls each hand, and the deal.

Verified text (13:69F-4.8, seed 002):

* (b) the participant who is Banker has sole control of the Banker's Hand;
* (c) sole control of the Player's Hand goes to the **Dominant Player**: the participant who made a wager
  under "13:69F-7.7(b) or (c)" (read here as the banco-type wagers, see the digest §7 item 17); failing one,
  the participant with the highest wager against the Banker; if two or more tie for highest, the one nearest
  to the Banker going counter-clockwise;
* (d) after "Cards", the Banker deals four cards: 1st and 3rd face down to the Dominant Player as the
  Player's Hand, 2nd and 4th face down to the Banker as the Banker's Hand.

The drawing options (Player at 5; Banker 3 on a 9, 4 on an ace, 5 on a 4) are cells of
:data:`baccarat.drawing.CHEMIN_DE_FER` that need a decision; :func:`controller` says whose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from baccarat.cards import Hand
from baccarat.errors import BaccaratError, IllegalDecision
from baccarat.money import require_cents
from baccarat.round import INITIAL_DEAL_ORDER

#: 13:69F-4.8(d): cards 1 and 3 to the Player's Hand (before the Dominant Player), 2 and 4 to the Banker.
DEAL_ORDER = INITIAL_DEAL_ORDER


@dataclass(frozen=True, slots=True)
class ChemWager:
    """A participant's wager against the Banker: ``seat``, ``amount_cents`` and whether it is a banco-type
    wager (the "13:69F-7.7(b) or (c)" wager of 4.8(c)1)."""

    seat: int
    amount_cents: int
    banco: bool = False

    def __post_init__(self) -> None:
        require_cents(self.amount_cents, "wager")
        if isinstance(self.seat, bool) or not isinstance(self.seat, int) or self.seat < 1:
            raise BaccaratError(f"seat must be a positive int, got {self.seat!r}")


def counter_clockwise_distance(seat: int, banker_seat: int, seats_counter_clockwise: Sequence[int]) -> int:
    """Steps from the Banker's seat to ``seat`` going counter-clockwise (1 = next seat).

    ``seats_counter_clockwise`` lists every seat of the table in counter-clockwise order. Raises
    :class:`BaccaratError` when a seat is not at the table.
    """
    order = list(seats_counter_clockwise)
    if len(set(order)) != len(order):
        raise BaccaratError("seats_counter_clockwise lists a seat twice")
    for s in (seat, banker_seat):
        if s not in order:
            raise BaccaratError(f"seat {s} is not at this table")
    return (order.index(seat) - order.index(banker_seat)) % len(order)


def dominant_player(
    wagers: Sequence[ChemWager], banker_seat: int, seats_counter_clockwise: Sequence[int]
) -> int:
    """The seat of the Dominant Player, 13:69F-4.8(c)1–3.

    1. a banco-type wager wins control (if several, the one nearest the Banker counter-clockwise);
    2. otherwise the highest wager against the Banker;
    3. ties for highest go to the seat nearest the Banker counter-clockwise.

    Raises :class:`IllegalDecision` when nobody has wagered, :class:`BaccaratError` when the Banker wagers
    against itself or a seat is unknown.
    """
    if not wagers:
        raise IllegalDecision("no wager against the Banker: there is no Dominant Player")
    if any(w.seat == banker_seat for w in wagers):
        raise BaccaratError("the Banker cannot wager against the Banker's Hand")

    def dist(w: ChemWager) -> int:
        return counter_clockwise_distance(w.seat, banker_seat, seats_counter_clockwise)

    banco = [w for w in wagers if w.banco]
    if banco:
        return min(banco, key=dist).seat
    top = max(w.amount_cents for w in wagers)
    return min((w for w in wagers if w.amount_cents == top), key=dist).seat


def controller(hand: Hand, banker_seat: int, dominant_seat: int) -> int:
    """The seat that decides an option cell for ``hand`` (13:69F-4.8(b)–(c))."""
    return banker_seat if hand is Hand.BANKER else dominant_seat
