"""What the pit, the cage and surveillance read of one table's gaming day, folded from the events it sees.

Pure: no I/O, no clock; every time is an event's ``occurred_at``. Money is integer cents. Held on
:class:`services.projection.core.ProjectionState` as ``pit`` (a msgspec struct, so it is in every snapshot)
and bounded by the gaming day and the shoe, never by history:

* ``days``: the figures of the **latest two gaming days** folded (the current one and the one before, so the
  cage can close yesterday's books after the cutoff), each a :class:`DayFigures`:

  - ``hours``: hour of the gaming day (0 = the hour that starts at the cutoff, 06:00 UTC by default) ->
    :class:`HourFigures` (rounds decided, drop, win), at most 24;
  - ``commission``: player -> :class:`PlayerCommission` (deducted at payout, accrued to a commission box,
    collected), the players of the day;
  - ``flagged``: player -> :class:`FlaggedPlay`, the day's positive-EV bets (``AdvantageBetFlagged``)
    summed per player, with the first and last flagged time, the players of the day;
  - ``voided`` / ``irregularities``: the day's ``RoundVoided`` and ``Irregularity`` events, the latest
    :data:`MAX_NOTES` of each held (``voided_total`` / ``irregularities_total`` count them all);

* ``shoe``: a :class:`ShoeCheck` of the current shoe (its commitment, cut, burn and a hash chain over the
  cards drawn, 32 bytes however many cards), and ``closed_shoes``: the verdict on every shoe closed in those
  two gaming days (:class:`ClosedShoe`, at most :data:`MAX_CLOSED_SHOES`): whether the reveal hashes to the
  commitment (``sha256(salt ‖ ",".join(order))``, as ``croupier audit`` checks), and whether the burn and
  the cards drawn are the revealed order after the cut, one after another.

Definitions (the README's *query API* section says the same):

* **drop** = the stakes of every bet settled in a round that was dealt (a push, e.g. a Banker bet on a tie,
  included; the bets of a voided round, returned without action, not). A casino's drop is the cash and
  markers exchanged for chips at the table (the drop box); this system has no buy-ins, so the drop is the
  total staked, which a casino calls the *handle*. A hold % on it reads lower than a drop-box hold %, by the
  number of times a patron's buy-in goes round.
* **win** = the house's net result: ``RoundSettled.table_result`` (stakes - payouts + commission accrued;
  chemin de fer: the commission on the bank's winnings), which sums to the ledger's ``game + commission``
  (:meth:`services.projection.ledger_state.LedgerState.table_result`) over the same gaming day.
* **rounds** = the rounds decided (``RoundResolved``). A voided round is no round for the cage: its bets are
  returned without action, so it is neither in the drop nor among the rounds (the pace and the average bet
  per round would read a round that was never decided); it is counted apart (``voided_total``). The replay's
  totals count the same way (``croupier/replay.py``: ``settled`` and ``stakes`` leave voided rounds out).
* All three are booked in the hour of the round's result (``RoundResolved``, ``RoundSettled`` and
  ``BetSettled`` share its time), so a round's count, drop and win are in one hour.

Determinism: every figure is a sum, a minimum or a maximum (order-free), or a list from one stream in that
stream's order; an event of a gaming day older than the day before the latest one folded is left out, and
a newer day drops the older ones. So the state is a function of the events folded, whatever the order of
the streams: a rebuild (own streams first, then each input stream in turn) reaches the live state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import msgspec
from msgspec.structs import replace

from contracts.envelope import Envelope
from contracts.events import (
    AdvantageBetFlagged,
    BankSettled,
    BetSettled,
    CardDrawn,
    CommissionAccrued,
    CommissionCollected,
    Irregularity,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeLoaded,
)

#: voided rounds and irregularities held per table and gaming day (the totals count every one)
MAX_NOTES = 100
#: closed shoes' verdicts held per table (those of the latest two gaming days)
MAX_CLOSED_SHOES = 64
#: the category of a bet returned because its round was voided (services.settlement)
ROUND_VOIDED = "round_voided"

# verdicts of a closed shoe
VERIFIED = "verified"  # the reveal hashes to the commitment / the cards are the revealed order
MISMATCH = "mismatch"
NO_COMMITMENT = "no_commitment"  # a physical shoe: nothing committed, nothing to check
NOT_REVEALED = "not_revealed"  # closed without an order and salt
NOT_SEEN = "not_seen"  # its ShoeLoaded was not folded here (nothing to compare with)
NOT_CHECKED = "not_checked"


def _utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def day_and_hour(at: datetime, cutoff_hour: int) -> tuple[str, int]:
    """``(gaming day YYYY-MM-DD, hour of the gaming day 0-23)`` of an instant: hour 0 starts at the cutoff
    (``cutoff_hour`` UTC). A naive datetime is UTC. Same day as :func:`services.projection.ledger.gaming_day`."""
    t = _utc(at) - timedelta(hours=cutoff_hour)
    return t.date().isoformat(), t.hour


def previous_day(day: str) -> str:
    """The gaming day before ``day`` ("" for "")."""
    if not day:
        return ""
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


class HourFigures(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One hour of a table: rounds decided (``RoundResolved``; a voided round is not one), drop and win in
    cents."""

    rounds: int = 0
    drop_cents: int = 0
    win_cents: int = 0


class PlayerCommission(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A player's commission at a table in a gaming day, cents: ``deducted`` from payouts (owed and paid at
    once), ``accrued`` to the seat's commission box (owed), ``collected`` from the box."""

    deducted_cents: int = 0
    accrued_cents: int = 0
    collected_cents: int = 0


class FlaggedPlay(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A player's positive-EV bets at a table in a gaming day: how many, their stake and the exact expected
    gain summed (cents, each alert's ``expected_gain_cents``), the first and last flagged time (UTC)."""

    bets: int
    stake_cents: int
    expected_gain_cents: int
    first_at: datetime
    last_at: datetime


class VoidedRound(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A ``RoundVoided``: the round, the reason given, when."""

    round_id: str
    reason: str
    at: datetime


class IrregularityNote(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """An ``Irregularity`` (13:69F-3.12): the round, its kind, how it was handled, the rule, when."""

    round_id: str
    kind: str
    disposition: str
    rule: str
    detail: str
    card: str
    card_number: int
    at: datetime


class DayFigures(msgspec.Struct, frozen=True):
    """One table's gaming day (see the module docstring)."""

    hours: dict[int, HourFigures] = {}
    commission: dict[str, PlayerCommission] = {}
    flagged: dict[str, FlaggedPlay] = {}
    voided: tuple[VoidedRound, ...] = ()
    voided_total: int = 0
    irregularities: tuple[IrregularityNote, ...] = ()
    irregularities_total: int = 0


class ShoeCheck(msgspec.Struct, frozen=True):
    """The current shoe as its commitment will be checked at close: ``commitment`` (hex, "" for a physical
    shoe), ``cut_at``, the burn (exposed card then the burned ones), ``drawn`` cards so far and ``chain``, the
    SHA-256 hash chain over them (``h = sha256(h ‖ card ‖ ",")`` from ``b""``); ``in_order`` is False once a
    card left from another position than the next one after the burn and the cards before it."""

    shoe_id: str
    commitment: str = ""
    cut_at: int = 0
    burn: tuple[str, ...] = ()
    drawn: int = 0
    chain: bytes = b""
    in_order: bool = True


class ClosedShoe(msgspec.Struct, frozen=True):
    """The verdict on a closed shoe. ``commitment``: ``verified`` (the revealed order and salt hash to the
    commitment of its ``ShoeLoaded``), ``mismatch``, ``no_commitment`` (a physical shoe), ``not_revealed`` or
    ``not_seen``; ``cards``: ``verified`` (the burn and every card drawn are the revealed order after the cut,
    one after another, and ``cards_dealt`` counts them), ``mismatch`` or ``not_checked`` (no verified
    reveal); ``detail``: what did not match."""

    shoe_id: str
    gaming_day: str
    closed_at: datetime
    reason: str
    cards_dealt: int
    commitment: str
    cards: str
    detail: str = ""


def _link(chain: bytes, card: str) -> bytes:
    return hashlib.sha256(chain + card.encode() + b",").digest()


def verdict(check: ShoeCheck | None, closed: ShoeClosed) -> tuple[str, str, str]:
    """``(commitment verdict, cards verdict, detail)`` of a closed shoe given its :class:`ShoeCheck`."""
    if check is None or check.shoe_id != closed.shoe_id:
        return NOT_SEEN, NOT_CHECKED, "its ShoeLoaded was not folded by this projection"
    if not check.commitment:
        return NO_COMMITMENT, NOT_CHECKED, ""
    if not closed.order:
        return NOT_REVEALED, NOT_CHECKED, "closed without revealing the order and salt"
    try:
        digest = hashlib.sha256(bytes.fromhex(closed.salt) + ",".join(closed.order).encode()).hexdigest()
    except ValueError:
        return MISMATCH, NOT_CHECKED, "the revealed salt is not hex"
    if digest != check.commitment:
        return MISMATCH, NOT_CHECKED, "the revealed order and salt do not hash to the commitment"
    order = list(closed.order)
    order = order[check.cut_at:] + order[:check.cut_at]
    first = len(check.burn)
    problems = []
    if check.burn and tuple(order[:first]) != check.burn:
        problems.append("the burn is not the first cards of the revealed order")
    chain = b""
    for card in order[first:first + check.drawn]:
        chain = _link(chain, card)
    if not check.in_order:
        problems.append("cards did not leave the shoe one after another")
    elif check.drawn > len(order) - first or chain != check.chain:
        problems.append("the cards drawn are not the revealed order")
    if closed.cards_dealt != first + check.drawn:
        problems.append(f"closed with {closed.cards_dealt} cards dealt, {first + check.drawn} folded")
    return VERIFIED, (MISMATCH if problems else VERIFIED), "; ".join(problems)


class PitState(msgspec.Struct, frozen=True):
    """One table's pit, cage and surveillance figures (module docstring). ``day``: the latest gaming day
    folded ("" before any)."""

    day: str = ""
    days: dict[str, DayFigures] = {}
    shoe: ShoeCheck | None = None
    closed_shoes: tuple[ClosedShoe, ...] = ()

    # -- days ------------------------------------------------------------------------------------
    def _enter(self, day: str) -> PitState | None:
        """This state ready to book on ``day``: a newer day drops the days before the one before it; None
        when ``day`` is older than the day before the latest (nothing of it is held any more)."""
        if day <= self.day:
            return self if day >= previous_day(self.day) else None
        prev = previous_day(day)
        return replace(self, day=day, days={d: f for d, f in self.days.items() if d >= prev},
                       closed_shoes=tuple(s for s in self.closed_shoes if s.gaming_day >= prev))

    def _book(self, at: datetime, cutoff_hour: int, change: Callable[[DayFigures, int], DayFigures]) -> PitState:
        """``change`` applied to the figures of ``at``'s gaming day (and hour), if that day is held."""
        day, hour = day_and_hour(at, cutoff_hour)
        state = self._enter(day)
        if state is None:
            return self
        new = change(state.days.get(day, DayFigures()), hour)
        return replace(state, days={**state.days, day: new})

    # -- folding ---------------------------------------------------------------------------------
    def absorb(self, env: Envelope, cutoff_hour: int) -> PitState:
        """Fold one input event (shoe, dealing or settlement); the same state for an event it does not use."""
        e = env.payload
        at = env.occurred_at
        if isinstance(e, RoundResolved):  # a round decided; a voided round is none (its bets are returned)
            return self._book(at, cutoff_hour, lambda f, h: _hour(f, h, rounds=1))
        if isinstance(e, RoundSettled):
            return self._book(at, cutoff_hour, lambda f, h: _hour(f, h, win=e.table_result))
        if isinstance(e, BetSettled):
            drop = 0 if e.category == ROUND_VOIDED else e.stake
            deducted = e.commission if e.commission and not e.commission_accrued else 0
            if not drop and not deducted:
                return self
            return self._book(at, cutoff_hour,
                              lambda f, h: _commission(_hour(f, h, drop=drop), e.player_id, deducted=deducted))
        if isinstance(e, BankSettled):
            if not e.commission_cents or e.commission_accrued:
                return self
            return self._book(at, cutoff_hour,
                              lambda f, h: _commission(f, e.player_id, deducted=e.commission_cents))
        if isinstance(e, CommissionAccrued):
            return self._book(at, cutoff_hour, lambda f, h: _commission(f, e.player_id, accrued=e.amount_cents))
        if isinstance(e, CommissionCollected):
            return self._book(at, cutoff_hour,
                              lambda f, h: _commission(f, e.player_id, collected=e.amount_cents))
        if isinstance(e, RoundVoided):
            note = VoidedRound(e.round_id, e.reason, _utc(at))
            return self._book(at, cutoff_hour, lambda f, h: replace(
                f, voided=(f.voided + (note,))[-MAX_NOTES:], voided_total=f.voided_total + 1))
        if isinstance(e, Irregularity):
            irr = IrregularityNote(e.round_id, e.kind, e.disposition, e.rule, e.detail, e.card, e.card_number,
                                   _utc(at))
            return self._book(at, cutoff_hour, lambda f, h: replace(
                f, irregularities=(f.irregularities + (irr,))[-MAX_NOTES:],
                irregularities_total=f.irregularities_total + 1))
        return self._shoe_event(env, cutoff_hour)

    def _shoe_event(self, env: Envelope, cutoff_hour: int) -> PitState:
        e, sh = env.payload, self.shoe
        if isinstance(e, ShoeLoaded):
            return replace(self, shoe=ShoeCheck(e.shoe_id, commitment=e.commitment))
        if sh is None or getattr(e, "shoe_id", None) != sh.shoe_id:
            if isinstance(e, ShoeClosed):
                return self._closed(env, e, cutoff_hour)
            return self
        if isinstance(e, ShoeCut):
            return replace(self, shoe=replace(sh, cut_at=e.cut_at))
        if isinstance(e, ShoeBurned):
            return replace(self, shoe=replace(sh, burn=(e.exposed, *e.burned)))
        if isinstance(e, CardDrawn):
            in_order = sh.in_order and e.position == len(sh.burn) + sh.drawn
            return replace(self, shoe=replace(sh, drawn=sh.drawn + 1, chain=_link(sh.chain, e.card),
                                              in_order=in_order))
        if isinstance(e, ShoeClosed):
            return replace(self._closed(env, e, cutoff_hour), shoe=None)
        return self

    def _closed(self, env: Envelope, e: ShoeClosed, cutoff_hour: int) -> PitState:
        day, _ = day_and_hour(env.occurred_at, cutoff_hour)
        state = self._enter(day)
        if state is None:
            return self
        commitment, cards, detail = verdict(self.shoe, e)
        shoe = ClosedShoe(e.shoe_id, day, _utc(env.occurred_at), e.reason, e.cards_dealt, commitment, cards, detail)
        return replace(state, closed_shoes=(state.closed_shoes + (shoe,))[-MAX_CLOSED_SHOES:])

    def flagged(self, env: Envelope, alert: AdvantageBetFlagged, cutoff_hour: int) -> PitState:
        """Fold one of the projection's own ``AdvantageBetFlagged`` into the player's day."""
        at = _utc(env.occurred_at)

        def change(f: DayFigures, hour: int) -> DayFigures:
            w = f.flagged.get(alert.player_id)
            w = (FlaggedPlay(1, alert.stake_cents, alert.expected_gain_cents, at, at) if w is None else
                 FlaggedPlay(w.bets + 1, w.stake_cents + alert.stake_cents,
                             w.expected_gain_cents + alert.expected_gain_cents, min(w.first_at, at),
                             max(w.last_at, at)))
            return replace(f, flagged={**f.flagged, alert.player_id: w})

        return self._book(at, cutoff_hour, change)


def _hour(f: DayFigures, hour: int, *, rounds: int = 0, drop: int = 0, win: int = 0) -> DayFigures:
    h = f.hours.get(hour, HourFigures())
    return replace(f, hours={**f.hours, hour: HourFigures(h.rounds + rounds, h.drop_cents + drop,
                                                            h.win_cents + win)})


def _commission(f: DayFigures, player_id: str, *, deducted: int = 0, accrued: int = 0,
                collected: int = 0) -> DayFigures:
    if not (deducted or accrued or collected):
        return f
    c = f.commission.get(player_id, PlayerCommission())
    return replace(f, commission={**f.commission, player_id: PlayerCommission(
        c.deducted_cents + deducted, c.accrued_cents + accrued, c.collected_cents + collected)})
