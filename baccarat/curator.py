"""The curator: the participant who holds the shoe at a table where the participants deal (13:69F-3.6(b), 3.11).

Pure. Verified [V]: at the commencement of play the dealer calling the game offers the shoe to a participant
(3.6(b), the participant's description is cut off); after any round the curator may pass the shoe or keep
it, except that the curator **must pass it whenever the Banker's Hand loses** (3.11(a)1: a tie is not a
loss) and the dealer or the floorman at the table **may order** it passed (3.11(a)2). Where the shoe goes
next is cut off [U]: the common practice, the next participant counter-clockwise, is the table's configuration
(``TableConfig.curator_seat_order``: the seats in the order the shoe passes, counter-clockwise; by default the
next seat number up, wrapping to the lowest), one participant a seat (the lowest player id at a seat where
several are registered), skipping the curator's own seat.

Seats are ints (1-based), players their ids; a participant is a ``(seat, player_id)`` pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from baccarat.round import Winner

#: 13:69F-3.11(a)1: the curator shall pass the shoe whenever the Banker's Hand loses
MUST_PASS_RULE = "13:69F-3.11(a)1"
#: 13:69F-3.11(a): the curator's option to pass or keep after any round
OPTION_RULE = "13:69F-3.11(a)"
#: 13:69F-3.11(a)2: the dealer or floorman assigned to the table may order the curator to pass the shoe
ORDER_RULE = "13:69F-3.11(a)2"
#: 13:69F-3.6(b): at the commencement of play the dealer offers the shoe to a participant
OFFER_RULE = "13:69F-3.6(b)"

Participant = tuple[int, str]


def must_pass(winner: Winner | str) -> bool:
    """True when the round's result obliges the curator to pass the shoe: the Banker's Hand lost, i.e. the
    Player's Hand won (13:69F-3.11(a)1). A Banker win or a tie leaves the curator the option. ``winner``: a
    :class:`Winner` or its value (``player`` | ``banker`` | ``tie``); raises ``ValueError`` for another."""
    return Winner(winner) is Winner.PLAYER


def next_holder(current_seat: int, participants: Iterable[Participant],
                order: Sequence[int] = ()) -> Participant | None:
    """The participant the shoe passes to from the curator at ``current_seat``: the first seat after it in
    ``order`` (the table's seats in the order the shoe passes, counter-clockwise: ``TableConfig.
    curator_seat_order``; empty: ascending seat numbers) that has a participant, wrapping to the first, the
    lowest player id at that seat; never the curator's own seat. A participant at a seat ``order`` does not
    list comes after the listed ones, by seat number. None when no other seat has a participant (the dealer
    then holds the shoe until it is offered again). ``current_seat`` 0 (no curator), or a seat neither
    listed nor occupied: the first seat after it by number, as without an order."""
    by_seat: dict[int, str] = {}
    for seat, pid in participants:
        if seat not in by_seat or pid < by_seat[seat]:
            by_seat[seat] = pid
    listed = list(dict.fromkeys(order))
    ring = listed + sorted({*by_seat, current_seat} - set(listed) - {0})
    if current_seat in ring:
        start = ring.index(current_seat) + 1
    else:  # no curator: from the start of the ring
        start = 0
    for seat in ring[start:] + ring[:start]:
        if seat != current_seat and seat in by_seat:
            return seat, by_seat[seat]
    return None


__all__ = ["MUST_PASS_RULE", "OFFER_RULE", "OPTION_RULE", "ORDER_RULE", "Participant", "must_pass", "next_holder"]
