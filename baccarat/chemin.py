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

What the NJ text read does not give is a named configuration, :class:`ChemRules` (digest §3, §7 item 17,
all [U]): the drawing tableau itself (French practice), the decision each option cell takes when its
controller does not decide in time (:data:`DEFAULT_OPTION_DRAWS`: the punto banco Table 2 / Table 1 cell), how
long the controller has (``option_seconds``), the seats' counter-clockwise order, how a tie for the highest
wager is broken beyond 4.8(c)3 (only on an unregulated table), the bank's size limits, and whether the bank
passes when the Banker's Hand loses. A :class:`DecisionPolicy` fixes every option cell, which turns the
chemin de fer tableau into a fixed one (:meth:`DecisionPolicy.ruleset`) for the exact odds engine.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from fractions import Fraction
from typing import TYPE_CHECKING

from baccarat.cards import Hand
from baccarat.drawing import CHEMIN_DE_FER, STOOD, Action, Ruleset
from baccarat.errors import BaccaratError, IllegalDecision, IllegalTableConfig
from baccarat.money import Rounding, require_cents
from baccarat.round import INITIAL_DEAL_ORDER, Winner

if TYPE_CHECKING:  # pragma: no cover
    from baccarat.cards import Card
    from baccarat.table import TableConfig

#: 13:69F-4.8(d): cards 1 and 3 to the Player's Hand (before the Dominant Player), 2 and 4 to the Banker.
DEAL_ORDER = INITIAL_DEAL_ORDER


@dataclass(frozen=True, slots=True)
class ChemWager:
    """A participant's wager against the Banker: ``seat``, ``amount_cents``, whether it is a banco-type
    wager (the "13:69F-7.7(b) or (c)" wager of 4.8(c)1), and ``player_id`` (``""``: the seat's one
    participant; several participants may wager from one seat, each is a participant of 4.8(c))."""

    seat: int
    amount_cents: int
    banco: bool = False
    player_id: str = ""

    def __post_init__(self) -> None:
        require_cents(self.amount_cents, "wager")
        if isinstance(self.seat, bool) or not isinstance(self.seat, int) or self.seat < 1:
            raise BaccaratError(f"seat must be a positive int, got {self.seat!r}")


class TieBreak(Enum):
    """How a tie for the highest wager against the Banker is broken (13:69F-4.8(c)).

    * ``NEAREST_COUNTER_CLOCKWISE``: the seat nearest the Banker going counter-clockwise, as 4.8(c) states
      [V]; the only choice on a regulated table;
    * ``FIRST_WAGER``: the wager made first (the order of the closed bet book); a house rule for an
      unregulated (training) table only.
    """

    NEAREST_COUNTER_CLOCKWISE = "nearest_counter_clockwise"
    FIRST_WAGER = "first_wager"


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
    wagers: Sequence[ChemWager], banker_seat: int, seats_counter_clockwise: Sequence[int],
    tie_break: TieBreak = TieBreak.NEAREST_COUNTER_CLOCKWISE,
) -> int:
    """The seat of the Dominant Player, 13:69F-4.8(c)1–3 (:func:`dominant_participant` names the player)."""
    return dominant_participant(wagers, banker_seat, seats_counter_clockwise, tie_break)[0]


def dominant_participant(
    wagers: Sequence[ChemWager], banker_seat: int, seats_counter_clockwise: Sequence[int],
    tie_break: TieBreak = TieBreak.NEAREST_COUNTER_CLOCKWISE,
) -> tuple[int, str]:
    """The Dominant Player, 13:69F-4.8(c)1–3, as ``(seat, player_id)``.

    1. a banco-type wager wins control (if several, the one nearest the Banker counter-clockwise);
    2. otherwise the highest wager against the Banker (a participant's wagers, keyed by seat and player, are
       summed: it is the participant's wager, in cents);
    3. ties for highest go to the participant nearest the Banker counter-clockwise (``tie_break``
       :attr:`TieBreak.FIRST_WAGER`: to the participant whose first wager comes first in ``wagers``; two
       participants of one seat are equally near, and the first wager decides between them).

    ``wagers`` in the order they were made. Raises :class:`IllegalDecision` when nobody has wagered,
    :class:`BaccaratError` when the Banker wagers against itself or a seat is unknown.
    """
    if not wagers:
        raise IllegalDecision("no wager against the Banker: there is no Dominant Player")
    if any(w.seat == banker_seat for w in wagers):
        raise BaccaratError("the Banker cannot wager against the Banker's Hand")

    def dist(seat: int) -> int:
        return counter_clockwise_distance(seat, banker_seat, seats_counter_clockwise)

    for w in wagers:
        dist(w.seat)  # every seat must be at the table
    banco = [w for w in wagers if w.banco]
    if banco:
        w = min(banco, key=lambda x: dist(x.seat))  # min keeps the first of equals
        return w.seat, w.player_id
    total: dict[tuple[int, str], int] = {}
    for w in wagers:  # dicts keep the first wager's order
        key = (w.seat, w.player_id)
        total[key] = total.get(key, 0) + w.amount_cents
    top = max(total.values())
    tied = [who for who, amount in total.items() if amount == top]
    if tie_break is TieBreak.FIRST_WAGER:
        return tied[0]
    return min(tied, key=lambda who: dist(who[0]))


def controller(hand: Hand, banker_seat: int, dominant_seat: int) -> int:
    """The seat that decides an option cell for ``hand`` (13:69F-4.8(b)–(c))."""
    return banker_seat if hand is Hand.BANKER else dominant_seat


# ---- option cells and decision policies ---------------------------------------------------------------
class OptionCell(Enum):
    """The option cells of the chemin de fer tableau (:data:`baccarat.drawing.CHEMIN_DE_FER`): the Player's
    Hand at 5, and the Banker's Hand at 3 when giving a 9, at 4 when giving an ace (1), at 5 when giving a 4."""

    PLAYER_5 = "player_5"
    BANKER_3_9 = "banker_3_9"
    BANKER_4_1 = "banker_4_1"
    BANKER_5_4 = "banker_5_4"

    @property
    def hand(self) -> Hand:
        """The hand whose controller decides this cell."""
        return Hand.PLAYER if self is OptionCell.PLAYER_5 else Hand.BANKER

    @property
    def row(self) -> int:
        """The hand's two-card point count of the cell."""
        return int(self.value.split("_")[1])

    @property
    def column(self) -> int | None:
        """The Player's third-card value of a Banker cell (None for the Player's cell)."""
        parts = self.value.split("_")
        return int(parts[2]) if len(parts) == 3 else None


def option_cell(hand: Hand, row: int, column: str = "") -> OptionCell:
    """The :class:`OptionCell` of a pending decision (``column``: the Player's third-card value as text, or
    ``""`` for the Player's Hand); raises :class:`IllegalDecision` for a cell that is not an option."""
    name = f"player_{row}" if hand is Hand.PLAYER else f"banker_{row}_{column}"
    try:
        return OptionCell(name)
    except ValueError:
        raise IllegalDecision(f"{hand.value} row {row} column {column or '-'} is not an option cell") from None


#: the decision an option cell takes when its controller does not decide in time: the cell of the punto
#: banco tableau (13:69F-3.9(b) Table 1: draw on 5; 3.9(c) Table 2: 3 draws giving 9, 4 stands giving an
#: ace, 5 draws giving 4). [U] for chemin de fer: the NJ text is not retrieved, so it is configurable.
DEFAULT_OPTION_DRAWS: frozenset[OptionCell] = frozenset({OptionCell.PLAYER_5, OptionCell.BANKER_3_9,
                                                        OptionCell.BANKER_5_4})


@dataclass(frozen=True, slots=True)
class DecisionPolicy:
    """A decision for every option cell: ``draws`` lists the cells that draw; every other cell stands.

    :meth:`ruleset` is the chemin de fer tableau with each option cell fixed, a ruleset without options
    that the exact odds engine (:func:`baccarat.odds.exact_counts`) and :func:`baccarat.round.resolve`
    accept: the probabilities of the next round under this policy.
    """

    draws: frozenset[OptionCell] = DEFAULT_OPTION_DRAWS

    def __post_init__(self) -> None:
        object.__setattr__(self, "draws", frozenset(OptionCell(c) for c in self.draws))

    @classmethod
    def parse(cls, items: Iterable[str]) -> DecisionPolicy:
        """From ``CELL=draw|stand`` texts (e.g. ``player_5=stand``), the unnamed cells at their
        :data:`DEFAULT_OPTION_DRAWS` decision; raises :class:`IllegalDecision` naming a bad item."""
        draws = set(DEFAULT_OPTION_DRAWS)
        for item in items:
            name, _, how = item.partition("=")
            try:
                cell = OptionCell(name.strip().lower())
            except ValueError:
                known = ", ".join(c.value for c in OptionCell)
                raise IllegalDecision(f"unknown option cell {name!r}; known: {known}") from None
            how = how.strip().lower()
            if how not in ("draw", "stand"):
                raise IllegalDecision(f"option {name}: say draw or stand, got {how!r}")
            (draws.add if how == "draw" else draws.discard)(cell)
        return cls(frozenset(draws))

    def draw(self, cell: OptionCell) -> bool:
        """True when ``cell`` draws under this policy."""
        return cell in self.draws

    def ruleset(self, base: Ruleset = CHEMIN_DE_FER) -> Ruleset:
        """``base`` (the chemin de fer tableau) with every option cell decided by this policy (the same
        object for the same policy and base: the odds engine caches its tables by ruleset)."""
        return _fixed_ruleset(self, base)


@functools.lru_cache(maxsize=64)
def _fixed_ruleset(policy: DecisionPolicy, base: Ruleset) -> Ruleset:
    """:meth:`DecisionPolicy.ruleset`, built once per (policy, base)."""
    player = list(base.player)
    banker = [list(r) for r in base.banker]
    for cell in OptionCell:
        act = Action.DRAW if policy.draw(cell) else Action.STAND
        if cell.hand is Hand.PLAYER:
            player[cell.row] = act
        else:
            banker[cell.row][cell.column if cell.column is not None else STOOD] = act
    name = base.name + "/" + ",".join(f"{c.value}={'draw' if policy.draw(c) else 'stand'}" for c in OptionCell)
    fixed = replace(base, name=name, player=tuple(player), banker=tuple(tuple(r) for r in banker))
    if fixed.has_options:
        raise IllegalDecision(f"{base.name} has option cells this policy does not name")
    return fixed


# ---- the table's chemin de fer configuration -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ChemRules:
    """The chemin de fer practices the NJ text read does not give, each a named configuration ([U], digest
    §7 item 17). Money in cents.

    * ``option_defaults``: the :class:`DecisionPolicy` applied to an option cell whose controller has not
      decided within ``option_seconds`` seconds of the card that made the option due (the table clock's
      ``ExpireOption`` applies it; a decision at the log's time decides it);
    * ``seats_counter_clockwise``: the seats in counter-clockwise order (empty: 1..max players ascending),
      for 4.8(c)3's "nearest to the Banker moving counterclockwise";
    * ``tie_break``: :class:`TieBreak` (4.8(c)3; another rule only on an unregulated table);
    * ``bank_min_cents`` / ``bank_max_cents``: the size of the bank a participant may put up;
    * ``bank_passes_on_loss``: the bank passes to the next participant counter-clockwise when the Banker's
      Hand loses (the usual practice; the Banker may also give it up between rounds);
    * ``bank_stays_in_play``: a Banker who keeps the bank puts all of it up again, as the last round left it
      (its winnings less the house's commission; the usual practice: to take any out is to give up the bank).

    Raises :class:`IllegalTableConfig`.
    """

    option_defaults: DecisionPolicy = DecisionPolicy()
    option_seconds: int = 30
    seats_counter_clockwise: tuple[int, ...] = ()
    tie_break: TieBreak = TieBreak.NEAREST_COUNTER_CLOCKWISE
    bank_min_cents: int = 10_000
    bank_max_cents: int = 10_000_000
    bank_passes_on_loss: bool = True
    bank_stays_in_play: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.option_seconds, bool) or not isinstance(self.option_seconds, int) \
                or self.option_seconds < 1:
            raise IllegalTableConfig(f"option_seconds must be a positive int, got {self.option_seconds!r}")
        object.__setattr__(self, "seats_counter_clockwise", tuple(self.seats_counter_clockwise))
        seats = self.seats_counter_clockwise
        if len(set(seats)) != len(seats) or any(isinstance(s, bool) or not isinstance(s, int) or s < 1
                                                for s in seats):
            raise IllegalTableConfig(f"seats_counter_clockwise must list distinct positive seats, got {seats}")
        require_cents(self.bank_min_cents, "bank minimum")
        require_cents(self.bank_max_cents, "bank maximum")
        if self.bank_max_cents < self.bank_min_cents:
            raise IllegalTableConfig(f"bank maximum {self.bank_max_cents} is below the minimum "
                                     f"{self.bank_min_cents}")

    def seat_order(self, max_players: int) -> tuple[int, ...]:
        """The table's seats counter-clockwise: the configured order, else 1..``max_players``."""
        return self.seats_counter_clockwise or tuple(range(1, max_players + 1))

    def next_banker_seat(self, seat: int, max_players: int, occupied: Iterable[int]) -> int | None:
        """The next occupied seat counter-clockwise after ``seat`` (the bank passing), None if there is none."""
        order = self.seat_order(max_players)
        taken = set(occupied) - {seat}
        if seat not in order:
            return None
        i = order.index(seat)
        for k in range(1, len(order)):
            s = order[(i + k) % len(order)]
            if s in taken:
                return s
        return None


# ---- settlement between participants ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BankResult:
    """The bank's side of a settled round (cents).

    ``won_cents``: the wagers against the bank it took, less what it paid the winning wagers (negative when
    the Banker's Hand lost); ``commission_cents``: the house's commission on a positive ``won_cents``;
    ``bank_after_cents`` = ``bank_cents + won_cents - commission_cents`` (the commission counted when it is
    taken, deducted or accrued alike: what the Banker owes the house is not the bank's). Money is conserved:
    the participants against the bank net ``-won_cents``, the Banker ``won_cents - commission_cents``, the
    house ``commission_cents``.
    """

    bank_cents: int
    wagers_cents: int
    won_cents: int
    commission_cents: int
    bank_after_cents: int


def settle_bank(bank_cents: int, wagers_cents: int, winner: Winner, rate: Fraction,
                rounding: Rounding, *, at_most: bool = False) -> BankResult:
    """Settle the bank of ``bank_cents`` against ``wagers_cents`` of wagers on the Player's Hand, each paid
    even money by the bank when the Player's Hand wins and returned on a tie (the bettors' side is
    :func:`baccarat.wagers.settle` of a ``player``/``banco`` wager). The house takes ``rate`` of what the
    bank won, rounded by ``rounding``'s commission rule (``house``: up to the unit), never more than it won;
    ``at_most`` (a regulated table, :attr:`baccarat.table.TableConfig.commission_capped`): never more than
    ``rate`` of it either (rounded down where the rule would round up, :meth:`Rounding.commission`).

    Raises :class:`BaccaratError` when the wagers exceed the bank (the wagering service refuses such a bet
    before the deal: ``bank_cannot_cover``) and :class:`InvalidAmount` for amounts that are not cents.
    """
    require_cents(bank_cents, "bank")
    if isinstance(wagers_cents, bool) or not isinstance(wagers_cents, int) or wagers_cents < 0:
        raise BaccaratError(f"wagers against the bank must be whole cents >= 0, got {wagers_cents!r}")
    if wagers_cents > bank_cents:
        raise BaccaratError(f"{wagers_cents} cents of wagers against a bank of {bank_cents}")
    won = {Winner.BANKER: wagers_cents, Winner.PLAYER: -wagers_cents, Winner.TIE: 0}[winner]
    commission = min(rounding.commission(won * Fraction(rate), at_most=at_most), won) if won > 0 and rate else 0
    return BankResult(bank_cents, wagers_cents, won, commission, bank_cents + won - commission)


def settle_table_bank(bank_cents: int, wagers_cents: int, winner: Winner, table: "TableConfig") -> BankResult:
    """:func:`settle_bank` on ``table``'s terms: its commission rate and rounding, capped at the rate on a
    regulated table (:attr:`baccarat.table.TableConfig.commission_capped`). Raises as :func:`settle_bank`."""
    return settle_bank(bank_cents, wagers_cents, winner, table.commission_rate, table.rounding,
                       at_most=table.commission_capped)


def bank_expectation(banker_count: int, player_count: int, total: int, rate: Fraction) -> Fraction:
    """The bank's exact expected result per unit wagered against it (13:69F-4 [U]): it wins each unit with
    the Banker's Hand less the house's ``rate`` and pays it with the Player's Hand; a tie returns it.
    Counts as :func:`baccarat.odds.exact_counts` gives them (out of ``total``)."""
    if total <= 0:
        raise BaccaratError("total must be positive")
    return (Fraction(banker_count) * (1 - Fraction(rate)) - player_count) / total


@dataclass(frozen=True, slots=True)
class ChemDecision:
    """One option decision of a dealt round: its cell, draw (True) or stand, and ``by``: ``participant``
    (given) or ``default`` (the configured :class:`DecisionPolicy`)."""

    cell: OptionCell
    draw: bool
    by: str


def resolve_chemin(cards: Iterable[Card], decisions: dict[Hand, bool] | None = None,
                   policy: DecisionPolicy | None = None):  # type: ignore[no-untyped-def]
    """Deal one chemin de fer round from ``cards``: an option cell reached is decided by ``decisions`` (the
    controller's choice for that hand's option) or else by ``policy`` (default: :data:`DEFAULT_OPTION_DRAWS`).
    Returns ``(outcome, unused cards, decisions taken)`` (:class:`ChemDecision` in the order taken).
    Raises :class:`baccarat.errors.InsufficientCards` when the cards run out."""
    from baccarat import round as R
    from baccarat.errors import InsufficientCards

    decisions = decisions or {}
    policy = policy or DecisionPolicy()
    it = iter(cards)
    deal = R.start(CHEMIN_DE_FER)
    taken: list[ChemDecision] = []
    while True:
        step = R.next_step(deal)
        if isinstance(step, R.Outcome):
            return step, tuple(it), tuple(taken)
        if isinstance(step, R.NeedDecision):
            cell = option_cell(step.hand, step.row, step.column if step.hand is Hand.BANKER else "")
            if step.hand in decisions:
                choice, by = decisions[step.hand], "participant"
            else:
                choice, by = policy.draw(cell), "default"
            taken.append(ChemDecision(cell, choice, by))
            deal = R.decide(deal, step.hand, choice)
            continue
        try:
            card = next(it)
        except StopIteration:
            raise InsufficientCards(f"the round needs another card ({step.reason.describe()})") from None
        deal = R.add_card(deal, card)
