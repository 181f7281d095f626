"""The curator's commands at a table where a participant holds the shoe (13:69F-3.6(b), 3.11(a)): the dealer
offers it (``OfferShoe``), the curator keeps or passes it after each round (``KeepShoe``, ``PassShoe``), the dealer
or floorman orders it passed between rounds (``PassShoe`` ``ordered_by``, 3.11(a)2), and it passes by rule when the
Banker's Hand loses (:func:`passed`). Pure: decided over :class:`services.dealing.state.DealingState`.
"""

from __future__ import annotations

from baccarat import curator as C
from contracts.commands import KeepShoe, OfferShoe, PassShoe
from contracts.envelope import CommandEnvelope
from contracts.events import ShoeKept, ShoeOffered, ShoePassed
from services.dealing.state import DealingState, _reject
from services.runtime.core import Emit, Send


def passed(state: DealingState, round_id: str, reason: str, rule: str) -> ShoePassed:
    """The shoe passes from the curator to the next participant (:func:`baccarat.curator.next_holder`)."""
    assert state.curator is not None
    seat, pid = state.curator
    cfg = state.config
    to = C.next_holder(seat, state.seated, cfg.curator_seat_order if cfg is not None else ())
    return ShoePassed(round_id=round_id, from_seat=seat, from_player_id=pid, to_seat=to[0] if to else 0,
                      to_player_id=to[1] if to else "", reason=reason, rule=rule)


def decide(state: DealingState, cmd: CommandEnvelope, c: OfferShoe | KeepShoe | PassShoe,
             in_progress: bool) -> list[Emit | Send]:
    """The curator's commands (13:69F-3.6(b), 3.11(a)); every refusal a ``CommandRejected`` with a code:
    ``no_curator_table``, ``round_in_progress``, ``curator_holds_shoe``, ``unknown_player``, ``no_curator``,
    ``not_curator``, ``out_of_turn``, ``must_pass``, ``unknown_order``."""
    cfg = state.config
    if cfg is None:
        return _reject(cmd, "table_not_open", "open the table first")
    if not cfg.curator:
        return _reject(cmd, "no_curator_table", "the dealer deals at this table: no curator holds the shoe "
                                                "(TableSpec.curator is off)")
    if isinstance(c, OfferShoe):
        if in_progress:
            return _reject(cmd, "round_in_progress", "the shoe is offered between rounds")
        if state.curator is not None:
            return _reject(cmd, "curator_holds_shoe", f"seat {state.curator[0]} ({state.curator[1]}) holds "
                                                      "the shoe: it passes by 13:69F-3.11(a)")
        if (c.seat, c.player_id) not in state.seated:
            return _reject(cmd, "unknown_player", f"{c.player_id!r} is not a participant registered at seat "
                                                  f"{c.seat}")
        return [Emit(ShoeOffered(seat=c.seat, player_id=c.player_id, rule=C.OFFER_RULE))]
    if state.curator is None:
        return _reject(cmd, "no_curator", "no one holds the shoe: the dealer offers it first (OfferShoe)")
    if isinstance(c, PassShoe) and c.ordered_by:
        if c.ordered_by not in ("dealer", "floorman"):
            return _reject(cmd, "unknown_order", f"ordered_by {c.ordered_by!r}: dealer or floorman "
                                                 "(13:69F-3.11(a)2)")
        if in_progress:
            return _reject(cmd, "round_in_progress", "the shoe passes between rounds")
        last = state.round.round_id if state.round is not None else ""
        if c.round_id and c.round_id != last:
            return _reject(cmd, "out_of_turn", f"round {c.round_id} is not the round just played "
                                               f"({last or 'none yet'}): name it, or no round")
        rid = c.round_id or state.curator_due
        return [Emit(passed(state, rid, f"{c.ordered_by}_ordered", C.ORDER_RULE), round_id=rid or None)]
    if isinstance(c, KeepShoe) and state.last_resolved == (c.round_id, "player"):
        return _reject(cmd, "must_pass", f"the Banker's Hand lost round {c.round_id}: the shoe passed by rule "
                                         "(13:69F-3.11(a)1)")
    if cmd.actor != state.curator[1]:
        return _reject(cmd, "not_curator", f"{cmd.actor or 'an unnamed actor'!r} is not the curator "
                                           f"(seat {state.curator[0]}, {state.curator[1]})")
    if not state.curator_due or c.round_id != state.curator_due or in_progress:
        return _reject(cmd, "out_of_turn", f"no keep-or-pass decision of round {c.round_id or '(none)'} is "
                                           "due: the curator decides after each round, before the next")
    if isinstance(c, KeepShoe):
        seat, pid = state.curator
        return [Emit(ShoeKept(round_id=c.round_id, seat=seat, player_id=pid, reason="curator_kept"),
                     round_id=c.round_id)]
    return [Emit(passed(state, c.round_id, "curator_passed", C.OPTION_RULE), round_id=c.round_id)]
