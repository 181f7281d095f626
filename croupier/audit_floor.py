"""The audit's verdict on the floor: a person's refused command is the floor working; the system failing is not.

Called by :func:`croupier.audit.audit` with a table's streams (pure). A command refused with a reason is the
floor doing its job when the refusal is right by the log: a dealer's "Open round" after the pit closed the shoe
(``no_open_shoe``: no shoe in play), or naming a shoe that is not the one in play; a bet or "No more bets" for
a round that was never opened (``unknown_round``). Those are counted by reason (:attr:`AuditReport.refused`),
not discrepancies: the audit stays clean and exits 0.

The floor is broken when the system fails to deal or settle (``floor_broken``, counted by reason in
:attr:`AuditReport.broken_rejections`): a round refused ``no_open_shoe`` on the very shoe the log shows in play
(loaded, not closed, by the log's time) that never opened on a retry; a bet or "No more bets" refused
``unknown_round`` for a round the dealing service had opened; a ``DrawCard`` (the dealing service's own
command) refused for either reason. The rounds opened and never dealt or settled are flagged by the audit
itself (``round_not_dealt``, ``round_not_settled``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from contracts.envelope import Envelope
from contracts.events import BetRejected, CommandRejected, RoundOpened, ShoeClosed, ShoeLoaded

#: rejection reasons that may mean the floor is broken (issue 8): a round that cannot open on the shoe in play,
#: a bet or "No more bets" for a round wagering never heard of
BROKEN_REASONS = frozenset({"no_open_shoe", "unknown_round"})
#: the commands whose refusal for such a reason is looked at (a dealer's read of a burn naming the wrong shoe is
#: refused ``no_open_shoe`` too: the dealer's slip, never the floor's)
BROKEN_COMMANDS = frozenset({"open_round", "place_bet", "withdraw_bet", "close_betting", "draw_card"})
#: the commands the services send themselves: their refusal is always the system failing
SYSTEM_COMMANDS = frozenset({"draw_card"})
_NAMED_SHOE = re.compile(r"^shoe (\S+) is not")

#: ``flag(kind, where, detail, round_id)``
Flag = Callable[..., None]


def _shoe_in_play(shoe_ev: Sequence[Envelope], t: datetime) -> str | None:
    """The shoe in play at the log's time ``t``: the last loaded by then and not closed by then."""
    in_play: str | None = None
    for e in shoe_ev:
        if e.occurred_at > t:
            continue
        p = e.payload
        if isinstance(p, ShoeLoaded):
            in_play = p.shoe_id
        elif isinstance(p, ShoeClosed) and p.shoe_id == in_play:
            in_play = None
    return in_play


def judge_rejections(streams: Mapping[str, Sequence[Envelope]], only_shoe: str | None, flag: Flag,
                     broken: dict[str, int], refused: dict[str, int]) -> None:
    """Sort every refusal for a :data:`BROKEN_REASONS` reason of one table's ``streams`` (name -> envelopes in
    ``seq`` order) into ``refused`` (a person's command, rightly refused: by reason) or ``broken`` (by reason,
    each also a ``floor_broken`` discrepancy)."""
    shoe_ev = streams.get("shoe.events", [])
    opened: dict[str, datetime] = {e.payload.round_id: e.occurred_at for e in streams.get("dealing.events", [])
                                   if isinstance(e.payload, RoundOpened)}
    for stream, es in sorted(streams.items()):
        for e in es:
            p = e.payload
            if not (isinstance(p, (CommandRejected, BetRejected)) and p.reason in BROKEN_REASONS
                    and (isinstance(p, BetRejected) or p.command in BROKEN_COMMANDS)):
                continue
            if only_shoe and e.shoe_id not in (None, only_shoe):
                continue
            command = p.command if isinstance(p, CommandRejected) else "place_bet"
            rid = e.round_id or getattr(p, "round_id", "") or ""
            why = _persons_error(command, p.reason, p.detail, rid, e.occurred_at, opened, shoe_ev)
            if why:
                refused[p.reason] = refused.get(p.reason, 0) + 1
                continue
            broken[p.reason] = broken.get(p.reason, 0) + 1
            what = p.command if isinstance(p, CommandRejected) else f"bet on {p.round_id}"
            flag("floor_broken", f"{stream}#{e.seq}", f"{what} {p.command_id} rejected {p.reason}: {p.detail}", rid)


def _persons_error(command: str, reason: str, detail: str, rid: str, t: datetime,
                   opened: Mapping[str, datetime], shoe_ev: Sequence[Envelope]) -> str:
    """Why the refusal was right (a person's command the log shows could not be done), or ``""``: the floor
    failed."""
    if command in SYSTEM_COMMANDS:
        return ""
    if command == "open_round" and reason == "no_open_shoe":
        if rid in opened:
            return "the round opened when tried again"  # the dealing service heard of the shoe ms later
        in_play = _shoe_in_play(shoe_ev, t)
        if in_play is None:
            return "no shoe was in play"
        named = _NAMED_SHOE.match(detail)
        if named and named.group(1) != in_play:
            return f"it named shoe {named.group(1)}, not shoe {in_play} in play"
        return ""
    if reason == "unknown_round":
        return "" if rid in opened and opened[rid] <= t else "the round was never opened"
    return ""
