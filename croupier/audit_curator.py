"""The audit's curator checks (N.J.A.C. 13:69F-3.6(b), 3.11(a)): the passing of the shoe at a table where the
players deal, re-checked from the table's ``dealing.events``.

Called by :func:`croupier.audit.audit` (pure). Discrepancy kinds: ``curator_on_dealer_table``,
``curator_offer_while_held``, ``curator_mismatch``, ``curator_not_passed``, ``curator_kept_on_banker_loss``,
``curator_pass_unfounded``, ``curator_out_of_turn``, ``curator_decision_missing`` (see
:mod:`croupier.audit`'s docstring for what each means).
"""

from __future__ import annotations

from contracts.envelope import Envelope
from contracts.events import RoundOpened, RoundResolved, ShoeKept, ShoeOffered, ShoePassed, TableOpened


def check_curator(dealing: list[Envelope], flag) -> None:  # type: ignore[no-untyped-def]
    """The passing of the shoe (13:69F-3.6(b), 3.11(a)) re-checked from a table's ``dealing.events`` in ``seq``
    order (a list of envelopes); ``flag(kind, where, detail)`` records a discrepancy. See the module's
    docstring for the kinds."""
    curator_table = False
    holder: tuple[int, str] | None = None
    due = ""  # a resolved round whose keep-or-pass is owed
    must = ""  # a resolved round the Banker's Hand lost: the shoe must pass (3.11(a)1)

    def where(e: Envelope) -> str:
        return f"dealing.events#{e.seq}"

    def holds(e: Envelope, seat: int, pid: str) -> None:
        if holder != (seat, pid):
            flag("curator_mismatch", where(e), f"{type(e.payload).__name__} names seat {seat} ({pid}); the shoe "
                                               f"was held by {holder[1] + ' at seat ' + str(holder[0]) if holder else 'no one'}")

    for e in dealing:
        p = e.payload
        if isinstance(p, TableOpened):
            curator_table = p.config.curator
            if not curator_table:
                holder, due = None, ""
        elif isinstance(p, ShoeOffered):
            if not curator_table:
                flag("curator_on_dealer_table", where(e), "the shoe was offered at a table the dealer deals")
            if holder is not None:
                flag("curator_offer_while_held", where(e), f"offered to seat {p.seat} while seat {holder[0]} "
                                                           "held it")
            holder, due = (p.seat, p.player_id), ""
        elif isinstance(p, RoundOpened):
            if must:
                flag("curator_not_passed", must, "the Banker's Hand lost and the shoe was not passed before the "
                                                 "next round (13:69F-3.11(a)1)")
            if due:
                flag("curator_decision_missing", due, "no keep or pass of the shoe recorded before the next round")
            must = due = ""
        elif isinstance(p, RoundResolved) and holder is not None and curator_table:
            if p.winner == "player":
                must = p.round_id
            else:
                due = p.round_id
        elif isinstance(p, ShoeKept):
            holds(e, p.seat, p.player_id)
            if p.round_id == must:
                flag("curator_kept_on_banker_loss", p.round_id, "the shoe was kept though the Banker's Hand lost "
                                                                "(13:69F-3.11(a)1)")
                must = ""
            elif p.round_id != due:
                flag("curator_out_of_turn", where(e), f"shoe kept after round {p.round_id}, which owed no decision")
            due = ""
        elif isinstance(p, ShoePassed):
            holds(e, p.from_seat, p.from_player_id)
            if p.reason == "banker_lost":
                if p.round_id != must:
                    flag("curator_pass_unfounded", where(e), f"passed as the Banker's Hand lost round "
                                                             f"{p.round_id}, which it did not lose")
                must = ""
            elif p.reason == "curator_passed" and p.round_id != due:
                flag("curator_out_of_turn", where(e), f"the curator passed after round {p.round_id}, which owed "
                                                      "no decision")
            elif p.round_id == must:  # an order that passed the shoe the rule passed anyway
                must = ""
            if p.to_seat and p.to_seat == p.from_seat:
                flag("curator_mismatch", where(e), f"passed from seat {p.from_seat} to the same seat")
            holder = (p.to_seat, p.to_player_id) if p.to_seat else None
            due = ""
    if must:
        flag("curator_not_passed", must, "the Banker's Hand lost and the shoe was not passed (13:69F-3.11(a)1)")
