"""The audit's check of every ``BetSettled`` record: each one is what the rules pay that bet, once.

Called by :func:`croupier.audit.audit` with a table's ``settlement.events`` (``seq`` order), its closed bet
books and the rounds' outcomes as the audit re-dealt them (pure). Every record is checked where it stands, so
a forged settlement appended to the stream (the next ``seq``, the right ``event_id``) is named at its position
(``settlement.events#seq``) with a plain sentence:

* ``unknown_bet_settled``: a settlement of a bet no closed book holds (never placed, or placed and withdrawn);
* ``bet_settled_twice``: a settlement of a bet already settled (the first record named);
* ``settlement_mismatch``: a settlement that is not the rules core's (:func:`baccarat.wagers.settle` of the
  bet's wager and stake, the round's re-dealt outcome and the table's configuration when the round opened;
  13:69F-2.3 payout odds, 13:69F-3.3(c) commission): e.g. a losing Banker bet paid 100 to 1. A voided round's
  bets are returned (``void``, the stake). The sentence gives the result and payout recorded and the rules'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from baccarat import round as R
from baccarat.errors import BaccaratError
from baccarat.table import TableConfig
from baccarat.wagers import Wager, settle
from contracts.envelope import Envelope
from contracts.events import BetLine, BetSettled, BettingClosed

#: ``flag(kind, where, detail, round_id)``
Flag = Callable[..., None]
#: the fields of a settlement the rules decide, in the order compared
FIELDS = ("result", "payout", "commission", "win", "commission_accrued", "category", "odds")


def _cents(c: int) -> str:
    sign = "-" if c < 0 else ""
    return f"{sign}{abs(c) // 100:,}.{abs(c) % 100:02d}"


def rules_settlement(bet: BetLine, outcome: R.Outcome | None, cfg: TableConfig | None,
                     voided: bool) -> tuple[object, ...]:
    """What the rules settle ``bet`` at: the :data:`FIELDS` values. A voided round returns the stake.
    Raises :class:`baccarat.errors.BaccaratError` or ``ValueError`` when the rules cannot settle it (no
    outcome, a wager the table does not offer)."""
    if voided:
        return ("void", bet.amount_cents, 0, 0, False, "round_voided", "")
    if outcome is None or cfg is None:
        raise ValueError("the round has no re-dealt outcome to settle against")
    x = settle(Wager(bet.wager), bet.amount_cents, outcome, cfg)
    return (x.result.value, x.payout, x.commission, x.win, x.commission_accrued, x.category,
            str(x.odds) if x.odds else "")


def check_settlement_records(settle_ev: Sequence[Envelope], books: Mapping[str, BettingClosed],
                             outcomes: Mapping[str, R.Outcome], voided: set[str],
                             round_config: Mapping[str, TableConfig], in_scope: Callable[[str], bool],
                             flag: Flag) -> None:
    """Check each ``BetSettled`` of ``settle_ev`` (see the module docstring). A round the audit could not
    re-deal (not in ``outcomes``, not voided) has its settlements checked for count only (its result is
    flagged elsewhere)."""
    book_of: dict[str, tuple[str, BetLine]] = {b.bet_id: (rid, b) for rid, bk in books.items() for b in bk.bets}
    first: dict[str, Envelope] = {}
    for e in settle_ev:
        s = e.payload
        if not isinstance(s, BetSettled) or not in_scope(s.round_id):
            continue
        at = f"{e.stream}#{e.seq}"
        held = book_of.get(s.bet_id)
        if held is None:
            flag("unknown_bet_settled", at, f"bet {s.bet_id} of round {s.round_id} settled ({s.result}, payout "
                                            f"{_cents(s.payout)}), and no closed book holds it: never placed",
                 s.round_id)
            continue
        rid, bet = held
        if s.bet_id in first:
            flag("bet_settled_twice", at, f"bet {s.bet_id} of round {rid} settled again ({s.result}, payout "
                                          f"{_cents(s.payout)}); {first[s.bet_id].stream}#{first[s.bet_id].seq} "
                                          "settled it first", rid)
        else:
            first[s.bet_id] = e
        if rid not in outcomes and rid not in voided:
            continue  # not re-dealt: its result is a discrepancy of its own
        what = f"bet {s.bet_id} ({bet.wager} {_cents(bet.amount_cents)} at seat {bet.seat}, round {rid}"
        try:
            want = rules_settlement(bet, outcomes.get(rid), round_config.get(rid), rid in voided)
        except (BaccaratError, ValueError) as ex:
            flag("settlement_mismatch", at, f"{what}): the rules cannot settle this bet: {ex}", rid)
            continue
        got = tuple(getattr(s, f) for f in FIELDS)
        same_bet = (s.round_id, s.stake, s.wager, s.seat, s.player_id) == (
            rid, bet.amount_cents, bet.wager, bet.seat, bet.player_id)
        if got == want and same_bet:
            continue
        how = "round voided" if rid in voided else f"{outcomes[rid].winner.value} wins"
        sentence = (f"{what}, {how}) is recorded {s.result} with payout {_cents(s.payout)}"
                    + (f" at {s.odds}" if s.odds else "") + f"; the rules give {want[0]} with payout "
                    + _cents(int(str(want[1]))) + (f" at {want[6]}" if want[6] else ""))
        diffs = [f"{f} {g!r} (rules {w!r})" for f, g, w in zip(FIELDS, got, want) if g != w]
        if diffs:
            sentence += ": " + "; ".join(diffs)
        if not same_bet:
            sentence += (f"; recorded bet {(s.round_id, s.stake, s.wager, s.seat, s.player_id)}, the book has "
                         f"{(rid, bet.amount_cents, bet.wager, bet.seat, bet.player_id)}")
        flag("settlement_mismatch", at, sentence, rid)
