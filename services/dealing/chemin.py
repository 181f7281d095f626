"""Chemin de fer in the dealing service (N.J.A.C. 13:69F-4.8): the Banker, the Dominant Player, the options.

Pure helpers of :class:`services.dealing.core.DealingCore` for a chemin de fer table (its own module, to keep
the punto banco decider as it was):

* :func:`check_open_round`: ``OpenRound`` names the participant who holds the bank and its size, within the
  table's bank limits (:class:`baccarat.chemin.ChemRules`, [U]); a Banker whose Banker's Hand lost the last
  round must pass the bank when the table says so (``bank_must_pass``);
* :func:`choose_dominant`: at "No more bets", the Dominant Player of 4.8(c) from the closed book
  (:func:`baccarat.chemin.dominant_participant`: a banco, else the highest wager against the Banker, ties broken
  as configured), or the round is voided when nobody wagered against the bank;
* :func:`offer`: an option cell reached is offered to its controller (4.8(b): the Banker for the Banker's
  Hand; 4.8(c): the Dominant Player for the Player's Hand) with a deadline of the log's time of the card that
  made it due plus ``option_seconds``;
* :func:`decide_option`: ``DecideOption`` from the controller only (``not_controller``, ``actor_mismatch``),
  for the option pending (``no_option_pending``, ``option_out_of_turn``, ``unknown_hand``), logged before the
  deadline (``option_expired``); ``ExpireOption`` from the table's clock applies the configured default from the
  deadline on (``option_not_expired``). An in-time decision read after an accepted ``ExpireOption`` is refused
  (``no_option_pending``): see :func:`decide_option`.

Time enters only as the log's times of the events and commands (the brokers' append times), so a replay
decides the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from baccarat import round as R
from baccarat.cards import Hand
from baccarat.chemin import ChemWager, controller, dominant_participant, option_cell, settle_table_bank
from baccarat.errors import BaccaratError
from baccarat.round import Winner
from baccarat.table import TableConfig
from baccarat.wagers import AGAINST_THE_BANK, BANCO_WAGERS
from contracts.commands import DecideOption, ExpireOption, OpenRound
from contracts.envelope import CommandEnvelope
from contracts.events import (
    BetLine,
    CardsCalled,
    DominantPlayerChosen,
    Event,
    OptionDecided,
    OptionOffered,
    RoundOpened,
    RoundVoided,
)
from services.runtime.core import Emit, Send

_AGAINST = frozenset(w.value for w in AGAINST_THE_BANK)
_BANCO = frozenset(w.value for w in BANCO_WAGERS)
#: the reason a chemin de fer round is voided when nobody wagered against the bank (no Dominant Player)
NO_WAGER = "no_wager_against_the_bank"


@dataclass(frozen=True, slots=True)
class ChemRound:
    """A chemin de fer round's participants: the Banker and the bank (cents, from ``RoundOpened``), the
    closed book (``BettingClosed``), the Dominant Player (seat, player id) once chosen, and the option on
    offer (``OptionOffered``) until it is decided."""

    banker_seat: int
    banker_player_id: str
    bank_cents: int
    book: tuple[BetLine, ...] | None = None
    dominant: tuple[int, str] | None = None
    offered: OptionOffered | None = None
    #: "Cards" was called (``CardsCalled``, 13:69F-4.8(d)): the Banker deals
    cards_called: bool = False
    #: the log's time of ``offered``: its deadline is this plus ``offered.option_seconds``
    offered_at: datetime | None = None

    @property
    def deadline(self) -> datetime | None:
        """When the option on offer may be decided by the table's default (None: nothing on offer)."""
        if self.offered is None or self.offered_at is None:
            return None
        return self.offered_at + timedelta(seconds=self.offered.option_seconds)


@dataclass(frozen=True, slots=True)
class LastBank:
    """The last chemin de fer round dealt at the table: its Banker, the bank (cents) and the result
    (``winner`` ``player`` | ``banker`` | ``tie``, ``""`` voided: the bank unchanged)."""

    round_id: str
    banker_seat: int
    banker_player_id: str
    bank_cents: int
    winner: str

    def bank_after(self, config: TableConfig, wagered: int | None) -> int | None:
        """The bank after the round (:func:`baccarat.chemin.settle_bank` under the table's rate and
        rounding), or None when the round's wagers are not known."""
        if not self.winner:
            return self.bank_cents
        if wagered is None:
            return None
        try:
            return settle_table_bank(self.bank_cents, wagered, Winner(self.winner), config).bank_after_cents
        except BaccaratError:
            return None


def wagered(bets: Iterable[BetLine]) -> int:
    """Cents wagered against the bank in a closed book."""
    return sum(b.amount_cents for b in bets if b.wager in _AGAINST)


def opened(e: RoundOpened) -> ChemRound:
    """The chemin de fer part of a round from its ``RoundOpened``."""
    return ChemRound(e.banker_seat, e.banker_player_id, e.bank_cents)


def evolve(chem: ChemRound, deal: R.Deal, e: Event, at: datetime) -> tuple[ChemRound, R.Deal]:
    """Fold one of dealing's chemin de fer events (logged at ``at``) into the round (no validation)."""
    if isinstance(e, DominantPlayerChosen):
        return replace(chem, dominant=(e.seat, e.player_id)), deal
    if isinstance(e, CardsCalled):
        return replace(chem, cards_called=True), deal
    if isinstance(e, OptionOffered):
        return replace(chem, offered=e, offered_at=at), deal
    if isinstance(e, OptionDecided):
        return replace(chem, offered=None, offered_at=None), R.decide(deal, Hand(e.hand), e.draw)
    return chem, deal


def check_open_round(config: TableConfig | None, c: OpenRound, last_bank: LastBank | None,
                     last_wagers: tuple[str, int] | None = None,
                     seated: frozenset[tuple[int, str]] | None = None) -> tuple[str, str] | None:
    """Why ``OpenRound`` is refused (reason code, detail), or None. Chemin de fer: ``no_banker`` (no
    participant named for the bank), ``invalid_seat``, ``bank_out_of_limits`` (outside the table's bank
    minimum and maximum, or not whole rounding units), ``bank_must_pass`` (the Banker's Hand lost the last
    round under ``bank_passes_on_loss``), ``bank_must_stay_in_play`` (the Banker who keeps the bank puts up
    all of it, as the last round left it, under ``bank_stays_in_play``), ``bank_over_max_must_pass`` (that bank
    grew past ``bank_max_cents``: it is not capped, the Banker passes it), ``unknown_player`` (the Banker is not
    registered at that seat in ``seated``, the player registry from ``wagering.events``; None: not checked).
    Other games: ``not_chemin_de_fer`` when a bank is named. Cents throughout; 13:69F-4.8(b), the passing and
    the limits configured practice ([U], ``ChemRules``)."""
    if config is None:
        return None
    if config.variant.value != "chemin_de_fer":
        if c.banker_seat or c.banker_player_id or c.bank_cents:
            return "not_chemin_de_fer", "only a chemin de fer round has a participant's bank"
        return None
    rules = config.chemin
    if not c.banker_player_id or not c.banker_seat:
        return "no_banker", "a chemin de fer round needs the participant holding the bank (13:69F-4.8(b))"
    if c.banker_seat not in rules.seat_order(config.max_players):
        return "invalid_seat", f"seat {c.banker_seat} is not at this table"
    if seated is not None and (c.banker_seat, c.banker_player_id) not in seated:
        return "unknown_player", (f"{c.banker_player_id!r} is not registered at seat {c.banker_seat}: the Banker is "
                                  "a seated participant (13:69F-4.8(b); the console seats players: SeatPlayer)")
    same = last_bank is not None and last_bank.banker_player_id == c.banker_player_id
    if last_bank is not None and same and rules.bank_stays_in_play and not (
            rules.bank_passes_on_loss and last_bank.winner == "player"):
        wagers = last_wagers[1] if last_wagers is not None and last_wagers[0] == last_bank.round_id else None
        after = last_bank.bank_after(config, wagers)
        if after is not None and after > rules.bank_max_cents:
            return "bank_over_max_must_pass", (f"the bank of {c.banker_player_id!r} is {after} cents after the last "
                                               f"round, over the table's bank maximum of {rules.bank_max_cents}: "
                                               "all of it stays in play, so the bank passes (bank_stays_in_play)")
    if not rules.bank_min_cents <= c.bank_cents <= rules.bank_max_cents \
            or c.bank_cents % config.rounding.unit_cents:
        return "bank_out_of_limits", (f"a bank of {c.bank_cents} cents: the table takes {rules.bank_min_cents} to "
                                      f"{rules.bank_max_cents} in units of {config.rounding.unit_cents}")
    if last_bank is not None and same and rules.bank_passes_on_loss and last_bank.winner == "player":
        return "bank_must_pass", (f"the Banker's Hand of {c.banker_player_id!r} lost the last round: the bank "
                                  "passes (bank_passes_on_loss)")
    if last_bank is not None and same and rules.bank_stays_in_play:
        wagers = last_wagers[1] if last_wagers is not None and last_wagers[0] == last_bank.round_id else None
        after = last_bank.bank_after(config, wagers)
        if after is not None and c.bank_cents != after and rules.bank_min_cents <= after:
            return "bank_must_stay_in_play", (f"{c.banker_player_id!r} keeps the bank: all of it, {after} cents "
                                              f"after the last round, stays in play, not {c.bank_cents} "
                                              "(bank_stays_in_play)")
    return None


def choose_dominant(config: TableConfig | None, round_id: str, shoe_id: str, chem: ChemRound,
                    closed_by: tuple[str, datetime]) -> list[Emit | Send]:
    """At "No more bets": ``DominantPlayerChosen`` by 13:69F-4.8(c) from the closed book, or ``RoundVoided``
    (:data:`NO_WAGER`) when no wager was made against the Banker."""
    cause, at = closed_by
    bets = [b for b in chem.book or () if b.wager in _AGAINST]
    if not bets or config is None:
        return [Emit(RoundVoided(round_id=round_id, reason=NO_WAGER), round_id=round_id, shoe_id=shoe_id,
                     causation_id=cause, occurred_at=at)]
    rules = config.chemin
    order = rules.seat_order(config.max_players)
    wagers = [ChemWager(b.seat, b.amount_cents, banco=b.wager in _BANCO, player_id=b.player_id) for b in bets]
    try:
        seat, player = dominant_participant(wagers, chem.banker_seat, order, rules.tie_break)
    except BaccaratError as ex:  # a seat outside the configured order; the wagering service refuses such bets
        return [Emit(RoundVoided(round_id=round_id, reason=f"no Dominant Player: {ex}"), round_id=round_id,
                     shoe_id=shoe_id, causation_id=cause, occurred_at=at)]
    totals: dict[tuple[int, str], int] = {}
    for b in bets:
        totals[(b.seat, b.player_id)] = totals.get((b.seat, b.player_id), 0) + b.amount_cents
    total = totals[(seat, player)]
    if any(w.banco for w in wagers):
        rule = "banco"
    elif sum(1 for v in totals.values() if v == total) > 1:
        rule = rules.tie_break.value
    else:
        rule = "highest_wager"
    return [Emit(DominantPlayerChosen(round_id=round_id, seat=seat, player_id=player, wager_cents=total,
                                      rule=rule),
                 round_id=round_id, shoe_id=shoe_id, causation_id=cause, occurred_at=at)]


def call_cards(round_id: str, shoe_id: str, chem: ChemRound, cause: str, at: datetime) -> list[Emit | Send]:
    """The dealer's "Cards" call once the Dominant Player is chosen: ``CardsCalled`` naming the Banker who
    deals the initial four cards (13:69F-4.8(d)); the first card is asked for only after it."""
    return [Emit(CardsCalled(round_id=round_id, banker_seat=chem.banker_seat, banker_player_id=chem.banker_player_id),
                 round_id=round_id, shoe_id=shoe_id, causation_id=cause, occurred_at=at)]


def offer(config: TableConfig, round_id: str, shoe_id: str, chem: ChemRound, step: R.NeedDecision,
          cause: str, at: datetime) -> list[Emit | Send]:
    """``OptionOffered`` for the option cell ``step`` to its controller (13:69F-4.8(b)-(c)), once; nothing
    while it waits for the decision."""
    if chem.offered is not None:
        return []
    assert chem.dominant is not None
    cell = option_cell(step.hand, step.row, step.column if step.hand is Hand.BANKER else "")
    if step.hand is Hand.BANKER:
        seat, player = chem.banker_seat, chem.banker_player_id
    else:
        seat, player = chem.dominant
    assert controller(step.hand, chem.banker_seat, chem.dominant[0]) == seat
    ev = OptionOffered(round_id=round_id, hand=step.hand.value, cell=cell.value, row=step.row,
                       column=step.column, seat=seat, player_id=player, option_seconds=config.chemin.option_seconds,
                       default_draw=config.chemin.option_defaults.draw(cell))
    return [Emit(ev, round_id=round_id, shoe_id=shoe_id, causation_id=cause, occurred_at=at)]


def decide_option(config: TableConfig | None, chem: ChemRound, cmd: CommandEnvelope
                  ) -> tuple[tuple[str, str] | None, list[Event]]:
    """``DecideOption`` or ``ExpireOption`` against the option on offer: ``(refusal, [])`` or
    ``(None, [OptionDecided])``. ``cmd.issued_at`` is the command's log time (the broker's append time).

    The deadline is judged by the log's time, never by the order the two topics are read in: ``DecideOption``
    (``dealing.options``) logged at or after the deadline is refused ``option_expired`` even when it is read
    before the clock's ``ExpireOption`` (``dealing.commands``); ``ExpireOption`` is accepted only from the
    deadline on (``option_not_expired``). So an in-time decision read *after* an accepted ``ExpireOption`` finds
    the option already decided by the table's default and is refused (``no_option_pending``): the controller
    decided in time, but the clock's expiry, logged after the deadline, was read first. Both answers follow from
    the log alone, so a replay decides the same; the clock should send ``ExpireOption`` a margin after the
    deadline to make this rare."""
    c = cmd.payload
    assert isinstance(c, (DecideOption, ExpireOption))
    if c.hand not in (Hand.PLAYER.value, Hand.BANKER.value):
        return ("unknown_hand", f"hand {c.hand!r} is not player or banker"), []
    o = chem.offered
    if o is None:
        return ("no_option_pending", (f"no option is pending: the round is not at an option cell of the "
                                     f"{c.hand.capitalize()}'s Hand")), []
    if o.hand != c.hand:
        return ("option_out_of_turn", (f"the option pending is the {o.hand.capitalize()}'s Hand's ({o.cell}), "
                                      f"not the {c.hand.capitalize()}'s")), []
    if isinstance(c, ExpireOption):
        deadline = chem.deadline
        assert deadline is not None
        if cmd.issued_at < deadline:
            return ("option_not_expired", (f"the {o.cell} option may be decided until {deadline.isoformat()}; "
                                          f"it is {cmd.issued_at.isoformat()}")), []
        return None, [OptionDecided(round_id=o.round_id, hand=o.hand, cell=o.cell, draw=o.default_draw,
                                    by="default", seat=o.seat, player_id=o.player_id)]
    deadline = chem.deadline
    assert deadline is not None
    if cmd.issued_at >= deadline:
        return ("option_expired", (f"the {o.cell} option could be decided until {deadline.isoformat()} (the log's "
                                  f"time of its card plus {o.option_seconds} s); this decision was logged at "
                                  f"{cmd.issued_at.isoformat()}: the table's default decides")), []
    if (c.seat, c.player_id) != (o.seat, o.player_id):
        who = "the Banker" if o.hand == Hand.BANKER.value else "the Dominant Player"
        rule = "13:69F-4.8(b)" if o.hand == Hand.BANKER.value else "13:69F-4.8(c)"
        return ("not_controller", (f"{c.player_id!r} at seat {c.seat} does not control the "
                                  f"{o.hand.capitalize()}'s Hand: {who}, {o.player_id!r} at seat {o.seat}, "
                                  f"decides ({rule})")), []
    if cmd.actor != c.player_id:
        return ("actor_mismatch", (f"a decision for {c.player_id!r} sent by {cmd.actor or 'an unnamed actor'!r}: "
                                  "a terminal decides only for the player it names as its actor")), []
    return None, [OptionDecided(round_id=o.round_id, hand=o.hand, cell=o.cell, draw=c.draw, by="participant",
                                seat=o.seat, player_id=o.player_id)]


__all__ = [
    "NO_WAGER",
    "ChemRound",
    "check_open_round",
    "choose_dominant",
    "decide_option",
    "evolve",
    "offer",
    "opened",
]
