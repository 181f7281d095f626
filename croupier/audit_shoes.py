"""The audit's shoe checks: every card that left a shoe is the shoe's (its revealed order), wherever it stands.

Called by :func:`croupier.audit.audit` for each table's ``shoe.events`` (pure, like the audit). The reveal of
every closed shoe (``ShoeClosed``: order and salt) is read first, so a ``CardDrawn`` is compared with it
wherever the log holds it, before the close or after (a record appended to the stream after the close is
checked too). Checks, each a stable discrepancy code:

* ``commitment_mismatch``: the revealed order and salt do not hash to the ``ShoeLoaded`` commitment (sha256);
* ``burn_mismatch``, ``burn_count``: the burn is the first cards of the revealed order after the cut, as many
  as the shoe's burn rule gives for the exposed card (13:69F-3.5(c));
* ``card_not_in_order`` (at the ``CardDrawn`` record, ``shoe.events#seq``): the card is not the one the
  revealed order has at its position: a card that is not the shoe's;
* ``card_after_shoe_closed`` (at the record): a card drawn after its shoe's ``ShoeClosed``: no card leaves a
  closed shoe;
* ``duplicate_card`` (at the record): a second card for a round's card number, or a second card from one shoe
  position: a card substituted for one already drawn;
* ``draw_positions``: cards did not leave the shoe one after another; ``shoe_bookkeeping``: cards left, the
  cutting card and the close's count of cards dealt disagree with the order.

:func:`genuine_draws` gives, of a round's draws, the one card per card number the re-deal uses: the one that
matches the reveal, or else the first in the log.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from baccarat.cards import parse_card
from baccarat.errors import BaccaratError
from contracts.envelope import Envelope
from contracts.events import CardDrawn, ShoeBurned, ShoeClosed, ShoeCut, ShoeLoaded
from services.runtime.translate import shoe_rules

#: ``flag(kind, where, detail, round_id)``
Flag = Callable[..., None]


def _at(e: Envelope) -> str:
    return f"{e.stream}#{e.seq}"


@dataclass
class ShoeFacts:
    """What the shoe checks learnt, for the round checks: each verified shoe's order after the cut (the
    reveal rotated by ``cut_at``), and every ``CardDrawn`` record by round, in ``seq`` order."""

    orders: dict[str, list[str]] = field(default_factory=dict)
    draws_by_round: dict[str, list[Envelope]] = field(default_factory=lambda: defaultdict(list))
    verified: int = 0


def check_shoes(shoe_ev: Sequence[Envelope], only_shoe: str | None, flag: Flag) -> ShoeFacts:
    """Check one table's ``shoe.events`` (in ``seq`` order); ``flag`` records each discrepancy. ``only_shoe``:
    check that shoe only. Returns the facts the round checks need."""
    facts = ShoeFacts()
    loaded: dict[str, ShoeLoaded] = {}
    cuts: dict[str, int] = {}
    burns: dict[str, ShoeBurned] = {}
    closes: dict[str, Envelope] = {}
    drawn: dict[str, list[Envelope]] = defaultdict(list)
    for e in shoe_ev:
        p = e.payload
        if isinstance(p, ShoeLoaded):
            loaded[p.shoe_id] = p
        elif isinstance(p, ShoeCut):
            cuts[p.shoe_id] = p.cut_at
        elif isinstance(p, ShoeBurned):
            burns[p.shoe_id] = p
        elif isinstance(p, CardDrawn):
            drawn[p.shoe_id].append(e)
            facts.draws_by_round[p.round_id].append(e)
        elif isinstance(p, ShoeClosed):
            closes.setdefault(p.shoe_id, e)
    for sid, draws in drawn.items():
        if only_shoe and sid != only_shoe:
            continue
        _check_repeats(draws, flag)
        close = closes.get(sid)
        for d in draws:
            if close is not None and d.seq > close.seq:
                c = _card(d)
                flag("card_after_shoe_closed", _at(d),
                     f"card {c.card_number} ({c.card}) of round {c.round_id} drawn from shoe {sid} after the shoe "
                     f"closed at {_at(close)}: no card leaves a closed shoe", c.round_id)
    for sid, close in closes.items():
        if only_shoe and sid != only_shoe:
            continue
        p = cast(ShoeClosed, close.payload)
        ld = loaded.get(sid)
        if ld is None or not ld.commitment:
            continue
        try:
            salt: bytes | None = bytes.fromhex(p.salt)
        except ValueError:
            salt = None
        if salt is None or hashlib.sha256(salt + ",".join(p.order).encode()).hexdigest() != ld.commitment:
            flag("commitment_mismatch", sid, "the revealed order and salt do not hash to the commitment")
            continue
        at = cuts.get(sid, 0)
        order = list(p.order[at:]) + list(p.order[:at])
        facts.orders[sid] = order
        b = burns.get(sid)
        if b is not None:
            if order[:1] != [b.exposed] or order[1:1 + b.burned_count] != b.burned:
                flag("burn_mismatch", sid, "the burn is not the first cards of the revealed order")
            try:
                want_burn: object = shoe_rules(ld.rules).burn.count_after(parse_card(b.exposed))
            except (BaccaratError, ValueError) as ex:
                want_burn = f"none ({ex})"
            if b.burned_count != want_burn:
                flag("burn_count", sid, f"burned {b.burned_count} after {b.exposed}, rules say {want_burn}")
        draws = drawn.get(sid, [])
        for d in draws:
            c = _card(d)
            if not 0 <= c.position < len(order) or order[c.position] != c.card:
                there = order[c.position] if 0 <= c.position < len(order) else "nothing"
                flag("card_not_in_order", _at(d),
                     f"card {c.card_number} of round {c.round_id} is {c.card} from shoe {sid} position "
                     f"{c.position}, where the revealed order has {there}: not the shoe's card", c.round_id)
        positions = [_card(d).position for d in draws]
        first = 1 + b.burned_count if b else 0
        if positions != list(range(first, first + len(positions))):
            flag("draw_positions", sid, "cards did not leave the shoe one after another")
        end_card = len(order) - ld.rules.end_card_offset
        notes = [f"loaded {ld.cards} cards, revealed {len(order)}"] if ld.cards != len(order) else []
        if p.cards_dealt != first + len(positions):
            notes.append(f"closed with {p.cards_dealt} cards dealt, the log has {first + len(positions)} "
                         "(burn included)")
        for d in draws:
            c = _card(d)
            if c.cards_left != len(order) - c.position - 1 or c.cutting_card_out != (c.position == end_card):
                notes.append(f"card {c.position}: {c.cards_left} left, cutting card out {c.cutting_card_out}")
        if notes:
            flag("shoe_bookkeeping", sid, "; ".join(notes[:5]) + (" ..." if len(notes) > 5 else ""))
        facts.verified += 1
    return facts


def _check_repeats(draws: Sequence[Envelope], flag: Flag) -> None:
    """``duplicate_card`` for a round's card number or a shoe position drawn a second time."""
    by_number: dict[tuple[str, int], Envelope] = {}
    by_position: dict[int, Envelope] = {}
    for d in draws:
        c = _card(d)
        first = by_number.get((c.round_id, c.card_number))
        if first is not None:
            flag("duplicate_card", _at(d),
                 f"card {c.card_number} of round {c.round_id} drawn again ({c.card}, shoe position {c.position}); "
                 f"{_at(first)} drew it first ({_card(first).card}, position {_card(first).position})", c.round_id)
        else:
            by_number[(c.round_id, c.card_number)] = d
            same = by_position.get(c.position)
            if same is not None:
                flag("duplicate_card", _at(d),
                     f"shoe position {c.position} drawn again ({c.card}, card {c.card_number} of round "
                     f"{c.round_id}); {_at(same)} drew it first ({_card(same).card})", c.round_id)
        by_position.setdefault(c.position, d)


def genuine_draws(draws: Sequence[Envelope], order: Sequence[str] | None) -> list[CardDrawn]:
    """One ``CardDrawn`` per card number of a round's draws (records in ``seq`` order), sorted by card number:
    of several for one number, the one the revealed ``order`` (after the cut) confirms, else the first."""
    chosen: dict[int, CardDrawn] = {}
    for d in draws:
        c = _card(d)
        held = chosen.get(c.card_number)
        if held is None or order is not None and not _matches(held, order) and _matches(c, order):
            chosen[c.card_number] = c
    return [chosen[n] for n in sorted(chosen)]


def _card(e: Envelope) -> CardDrawn:
    """The ``CardDrawn`` of a record the caller picked for being one."""
    return cast(CardDrawn, e.payload)


def _matches(c: CardDrawn, order: Sequence[str]) -> bool:
    return 0 <= c.position < len(order) and order[c.position] == c.card
