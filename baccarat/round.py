"""One round of play as a pure, step-by-step state machine.

The dealing service feeds cards one at a time (they come from the shoe service) and asks what is needed next;
tests and the CLI use :func:`resolve` to run a whole round from a known card order.

Deal order (13:69F-3.7, 13:69F-4.8(d), 13:47-20.20(e)1): 1st and 3rd cards to the Player's Hand, 2nd and 4th
to the Banker's Hand; then the Player's third card if Table 1 requires it; then the Banker's third card if
Table 2 requires it. A natural (8 or 9 on either two-card hand) ends the drawing (13:69F-3.9(a)).

Every card carries a :class:`DrawReason` naming the rule cell that required it, so an investigator can see
why each card was drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Iterable, Iterator, Sequence

from baccarat.cards import Card, Hand, hand_points
from baccarat.drawing import Action, Ruleset
from baccarat.errors import IllegalDecision, InsufficientCards

#: Hands receiving the four initial cards, in order (13:69F-4.8(d); 13:69F-3.7 [P]).
INITIAL_DEAL_ORDER: tuple[Hand, ...] = (Hand.PLAYER, Hand.BANKER, Hand.PLAYER, Hand.BANKER)


class Winner(Enum):
    """Who won the round (13:69F-3.10(a)): higher point count wins, equal counts are a tie."""

    PLAYER = "player"
    BANKER = "banker"
    TIE = "tie"


@dataclass(frozen=True, slots=True)
class DrawReason:
    """Why a card was dealt: the rule and, for third cards, the table cell.

    ``rule`` is ``initial`` (cards 1–4), ``table_1`` (Player third card) or ``table_2`` (Banker third card);
    ``row`` is the hand's two-card point count; ``column`` the Player's third-card value or ``"stood"``;
    ``decision`` is set when a chemin de fer option cell was decided by the controlling participant.
    """

    hand: Hand
    position: int  # 1-based position within its hand
    rule: str
    source: str
    row: int | None = None
    column: str | None = None
    decision: bool | None = None

    def describe(self) -> str:
        """Human text, e.g. ``Banker third card: 13:69F-3.9(c) Table 2 row 6 column 6 → draw``."""
        who = "Player" if self.hand is Hand.PLAYER else "Banker"
        if self.rule == "initial":
            return f"{who} card {self.position}: initial deal ({self.source})"
        cell = f"row {self.row}" + (f" column {self.column}" if self.column is not None else "")
        how = " (option: chose to draw)" if self.decision else ""
        return f"{who} third card: {self.source} {cell} → draw{how}"


@dataclass(frozen=True, slots=True)
class NeedCard:
    """The next card from the shoe goes to ``hand`` for ``reason``."""

    hand: Hand
    reason: DrawReason


@dataclass(frozen=True, slots=True)
class NeedDecision:
    """A chemin de fer option cell: ``hand``'s controller must say draw (True) or stand (False)."""

    hand: Hand
    row: int
    column: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished round.

    ``cards_required`` counts only cards the rules required (card-count wagers, 13:69F-3.2(a)4); cards
    dealt in error are in ``discarded`` and never in a hand. ``dragon_7``: Banker's Hand of three cards
    totalling 7 that beats the Player's Hand (digest §1.11, 3.3(h) [U]); ``panda_8``: Player's Hand of
    three cards totalling 8 that wins (extension outside 3.2).
    """

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_points: int
    banker_points: int
    winner: Winner
    player_natural: bool
    banker_natural: bool
    cards_required: int
    dragon_7: bool
    panda_8: bool
    reasons: tuple[DrawReason, ...]
    discarded: tuple[Card, ...] = ()

    @property
    def natural(self) -> bool:
        """True when either hand had a natural."""
        return self.player_natural or self.banker_natural


@dataclass(frozen=True, slots=True)
class Deal:
    """A round in progress: the cards in each hand so far and the decisions taken.

    Build with :func:`start`; advance with :func:`next_step`, :func:`add_card`, :func:`decide` and
    :func:`misdeal_player_third`.
    """

    ruleset: Ruleset
    player: tuple[Card, ...] = ()
    banker: tuple[Card, ...] = ()
    reasons: tuple[DrawReason, ...] = ()
    player_option: bool | None = None
    banker_option: bool | None = None
    discarded: tuple[Card, ...] = ()
    #: set once an unauthorised Player third card was dealt (13:69F-3.12(a)): the Player counts as stood.
    player_stood_by_irregularity: bool = field(default=False)


def start(ruleset: Ruleset) -> Deal:
    """An empty round under ``ruleset``."""
    return Deal(ruleset=ruleset)


def _points(cards: Sequence[Card]) -> int:
    return hand_points(cards)


def _two_card_natural(deal: Deal) -> bool:
    nat = deal.ruleset.natural
    return _points(deal.player[:2]) in nat or _points(deal.banker[:2]) in nat


def _player_step(deal: Deal) -> NeedCard | NeedDecision | None:
    """The Player's third-card step, or None when the Player's Hand is complete."""
    if len(deal.player) > 2 or deal.player_stood_by_irregularity or _two_card_natural(deal):
        return None
    total = _points(deal.player)
    action = deal.ruleset.player_action(total)
    decision = None
    if action is Action.OPTION:
        if deal.player_option is None:
            return NeedDecision(Hand.PLAYER, total, "")
        decision = deal.player_option
        action = Action.DRAW if decision else Action.STAND
    if action is Action.DRAW:
        reason = DrawReason(Hand.PLAYER, 3, "table_1", deal.ruleset.player_source, total, None, decision)
        return NeedCard(Hand.PLAYER, reason)
    return None


def _banker_step(deal: Deal) -> NeedCard | NeedDecision | None:
    if len(deal.banker) > 2 or _two_card_natural(deal):
        return None
    total = _points(deal.banker)
    third = deal.player[2].value if len(deal.player) == 3 else None
    action = deal.ruleset.banker_action(total, third)
    column = "stood" if third is None else str(third)
    decision = None
    if action is Action.OPTION:
        if deal.banker_option is None:
            return NeedDecision(Hand.BANKER, total, column)
        decision = deal.banker_option
        action = Action.DRAW if decision else Action.STAND
    if action is Action.DRAW:
        source = deal.ruleset.banker_source + (" via 13:69F-3.12(a)" if deal.player_stood_by_irregularity else "")
        reason = DrawReason(Hand.BANKER, 3, "table_2", source, total, column, decision)
        return NeedCard(Hand.BANKER, reason)
    return None


def next_step(deal: Deal) -> NeedCard | NeedDecision | Outcome:
    """What the round needs next: a card for a hand, an option decision, or the finished :class:`Outcome`."""
    n = len(deal.player) + len(deal.banker)
    if n < 4:
        hand = INITIAL_DEAL_ORDER[n]
        pos = (len(deal.player) if hand is Hand.PLAYER else len(deal.banker)) + 1
        return NeedCard(hand, DrawReason(hand, pos, "initial", _initial_source(deal.ruleset)))
    step = _player_step(deal)
    if step is not None:
        return step
    step = _banker_step(deal)
    if step is not None:
        return step
    return _outcome(deal)


def _initial_source(ruleset: Ruleset) -> str:
    return {
        "punto_banco": "13:69F-3.7",
        "chemin_de_fer": "13:69F-4.8(d)",
    }.get(ruleset.variant.value, "13:47-20.20(e)1")


def add_card(deal: Deal, card: Card) -> Deal:
    """Deal ``card`` where the rules require the next card.

    Raises :class:`InsufficientCards`-free errors: :class:`IllegalDecision` when an option decision is
    pending, :class:`baccarat.errors.BaccaratError` when the round is already complete.
    """
    step = next_step(deal)
    if isinstance(step, NeedDecision):
        raise IllegalDecision(f"{step.hand.value} option pending at row {step.row}: decide before dealing")
    if isinstance(step, Outcome):
        raise IllegalDecision("the round is complete: no more cards may be dealt")
    if step.hand is Hand.PLAYER:
        return replace(deal, player=deal.player + (card,), reasons=deal.reasons + (step.reason,))
    return replace(deal, banker=deal.banker + (card,), reasons=deal.reasons + (step.reason,))


def decide(deal: Deal, hand: Hand, draw: bool) -> Deal:
    """Record the controlling participant's choice at an option cell (chemin de fer, 13:69F-4.8(b)-(c)).

    Raises :class:`IllegalDecision` unless the round is waiting for exactly that hand's decision.
    """
    step = next_step(deal)
    if not isinstance(step, NeedDecision) or step.hand is not hand:
        raise IllegalDecision(f"no {hand.value} option is pending")
    if hand is Hand.PLAYER:
        return replace(deal, player_option=draw)
    return replace(deal, banker_option=draw)


@dataclass(frozen=True, slots=True)
class MisdealDisposition:
    """What became of a Player third card dealt when the rules did not allow one (13:69F-3.12(a))."""

    card: Card
    became_banker_third: bool


def misdeal_player_third(deal: Deal, card: Card) -> tuple[Deal, MisdealDisposition]:
    """Apply 13:69F-3.12(a) to a third card dealt to the Player's Hand that Table 1 did not allow.

    The card becomes the Banker's Hand's third card if Table 2 obliges the Banker to draw, decided as if the
    Player's Hand had stood (the misdealt card was never its third card); otherwise it is discarded. With a
    natural on either hand the Banker cannot draw, so the card is discarded. Only valid when the round has
    its four initial cards, the Player's Hand has two cards and Table 1 did not call for a Player third
    card; raises :class:`IllegalDecision` otherwise.
    """
    if len(deal.player) != 2 or len(deal.banker) != 2 or deal.player_stood_by_irregularity:
        raise IllegalDecision("a misdealt Player third card needs exactly the four initial cards on the layout")
    step = _player_step(deal)
    if step is not None:
        raise IllegalDecision("the Player's Hand was entitled to (or must decide on) a third card: not a misdeal")
    stood = replace(deal, player_stood_by_irregularity=True)
    banker = _banker_step(stood)
    if isinstance(banker, NeedCard):
        new = replace(stood, banker=stood.banker + (card,), reasons=stood.reasons + (banker.reason,))
        return new, MisdealDisposition(card, True)
    if isinstance(banker, NeedDecision):
        raise IllegalDecision("Banker option pending: 13:69F-3.12(a) has no rule for an optional draw")
    return replace(stood, discarded=stood.discarded + (card,)), MisdealDisposition(card, False)


def _outcome(deal: Deal) -> Outcome:
    p, b = _points(deal.player), _points(deal.banker)
    nat = deal.ruleset.natural
    pn, bn = _points(deal.player[:2]) in nat, _points(deal.banker[:2]) in nat
    winner = Winner.PLAYER if p > b else Winner.BANKER if b > p else Winner.TIE
    return Outcome(
        player=deal.player,
        banker=deal.banker,
        player_points=p,
        banker_points=b,
        winner=winner,
        player_natural=pn,
        banker_natural=bn,
        cards_required=len(deal.player) + len(deal.banker),
        dragon_7=len(deal.banker) == 3 and b == 7 and winner is Winner.BANKER,
        panda_8=len(deal.player) == 3 and p == 8 and winner is Winner.PLAYER,
        reasons=deal.reasons,
        discarded=deal.discarded,
    )


def resolve_recorded(cards: Sequence[Card], ruleset: Ruleset, misdealt: int | None = None, *,
                     player_option: bool | None = None, banker_option: bool | None = None,
                     ) -> tuple[Outcome, tuple[Card, ...]]:
    """Re-deal a recorded round: like :func:`resolve`, except that card number ``misdealt`` (1-based) was put
    on the Player's Hand when Table 1 allowed no third card, and is handled by 13:69F-3.12(a): it becomes the
    Banker's third card, or is discarded (also when the rules had already ended the round). Returns the
    outcome and the cards beyond what the rules took.

    ``player_option``/``banker_option``: the recorded chemin de fer option decisions (draw True, stand False).

    Raises :class:`InsufficientCards` when the cards run out, :class:`IllegalDecision` when ``misdealt`` is
    not a card the rules could have taken as an unauthorised Player third card, or an option cell is reached
    without its decision.
    """
    deal = start(ruleset)
    rest: list[Card] = []

    def decided(d: Deal) -> Deal:
        step = next_step(d)
        while isinstance(step, NeedDecision):
            choice = player_option if step.hand is Hand.PLAYER else banker_option
            if choice is None:
                raise IllegalDecision(f"{step.hand.value} option at row {step.row} was not decided")
            d = decide(d, step.hand, choice)
            step = next_step(d)
        return d

    for i, card in enumerate(cards, 1):
        deal = decided(deal)
        if i == misdealt:
            deal, _ = misdeal_player_third(deal, card)
        elif isinstance(next_step(deal), Outcome):
            rest.append(card)
        else:
            deal = add_card(deal, card)
    deal = decided(deal)
    out = next_step(deal)
    if not isinstance(out, Outcome):
        raise InsufficientCards(f"the round needs more than the {len(cards)} card(s) recorded")
    return out, tuple(rest)


def resolve(
    cards: Iterable[Card],
    ruleset: Ruleset,
    *,
    player_option: bool | None = None,
    banker_option: bool | None = None,
) -> tuple[Outcome, tuple[Card, ...]]:
    """Deal one round from ``cards`` (first card first) and return the outcome and the unused cards.

    ``player_option``/``banker_option`` answer chemin de fer option cells. Raises
    :class:`InsufficientCards` when the cards run out mid-round, :class:`IllegalDecision` when an option
    cell is reached without a decision.
    """
    it: Iterator[Card] = iter(cards)
    deal = start(ruleset)
    dealt = 0
    while True:
        step = next_step(deal)
        if isinstance(step, Outcome):
            return step, tuple(it)
        if isinstance(step, NeedDecision):
            choice = player_option if step.hand is Hand.PLAYER else banker_option
            if choice is None:
                raise IllegalDecision(
                    f"{step.hand.value} option at row {step.row}{' column ' + step.column if step.column else ''}"
                    " needs a decision"
                )
            deal = decide(deal, step.hand, choice)
            continue
        try:
            card = next(it)
        except StopIteration:
            raise InsufficientCards(
                f"the round needs card {dealt + 1} ({step.reason.describe()}) but only {dealt} were given"
            ) from None
        dealt += 1
        deal = add_card(deal, card)
