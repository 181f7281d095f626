"""The audit's order of play (N.J.A.C. 13:69F-3.2(d), 3.7(b)), by the log's times: each event's ``occurred_at``
is the broker's append time of the command record that caused it.

Called by :func:`croupier.audit.audit` (pure). Kinds, each at its record (``stream#seq``):

* ``card_before_no_more_bets``: a card of a round left the shoe before its ``BettingClosed`` ("No more bets")
  and no ``Irregularity`` of dealing keeps it out of the round;
* ``card_outside_round``: a card drawn for a round never opened at the table;
* ``bet_after_first_card``: a bet placed or withdrawn after the round's first card left the shoe, whatever
  dealing made of that card.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from contracts.envelope import Envelope
from contracts.events import BetPlaced, BettingClosed, BetWithdrawn, CardDrawn

#: ``flag(kind, where, detail)``
Flag = Callable[..., None]


def check_order_of_play(shoe_ev: Sequence[Envelope], wager_ev: Sequence[Envelope], opened: Collection[str],
                        skipped: Mapping[str, set[int]], in_scope: Callable[[str], bool], flag: Flag) -> None:
    """Check one table's cards and bets in time. ``opened``: the rounds opened at the table; ``skipped``: round
    -> the card numbers an ``Irregularity`` kept out of it."""
    closed_at = {e.payload.round_id: e.occurred_at for e in wager_ev if isinstance(e.payload, BettingClosed)}
    first_card: dict[str, Envelope] = {}
    for e in shoe_ev:
        p = e.payload
        if not isinstance(p, CardDrawn) or not in_scope(p.round_id):
            continue
        rid = p.round_id
        if rid not in first_card or e.occurred_at < first_card[rid].occurred_at:
            first_card[rid] = e
        if rid not in opened:
            flag("card_outside_round", f"shoe.events#{e.seq}",
                 f"card {p.card_number} ({p.card}) drawn for round {rid}, which was never opened at this table")
        elif p.card_number not in skipped.get(rid, ()) and (rid not in closed_at or e.occurred_at < closed_at[rid]):
            when = (f"at {e.occurred_at.isoformat()}, before \"No more bets\" at {closed_at[rid].isoformat()}"
                    if rid in closed_at else 'and "No more bets" was never called')
            flag("card_before_no_more_bets", f"shoe.events#{e.seq}",
                 f"card {p.card_number} ({p.card}) of round {rid} left the shoe {when}, and no irregularity "
                 "keeps it out of the round (13:69F-3.2(d), 3.7(b))")
    for e in wager_ev:
        p = e.payload
        if isinstance(p, (BetPlaced, BetWithdrawn)) and p.round_id in first_card:
            card = first_card[p.round_id]
            drawn = card.payload
            assert isinstance(drawn, CardDrawn)
            if e.occurred_at > card.occurred_at:
                what = "placed" if isinstance(p, BetPlaced) else "withdrawn"
                flag("bet_after_first_card", f"wagering.events#{e.seq}",
                     f"bet {p.bet_id} {what} at {e.occurred_at.isoformat()}, after card "
                     f"{drawn.card_number} ({drawn.card}) of round {p.round_id} left the shoe at "
                     f"{card.occurred_at.isoformat()} (13:69F-3.2(d))")
