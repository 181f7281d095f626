"""The shoe: 1–8 decks in an injected order, the cut, the burn, the end-of-shoe cutting card.

Pure and deterministic: the order of the cards is an argument (the shoe service shuffles with ``secrets`` at
its edge, or reads a physical shoe); nothing here draws randomness or reads a clock.

Procedures whose NJ text was not retrieved (13:69F-3.5, digest §1.7 and §1.12 [U]) are configuration in
:class:`ShoeRules`: the end-of-shoe cutting card's offset from the back, the burn rule, the minimum cut
depth and the end-of-shoe policy.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from enum import Enum
from typing import Sequence

from baccarat.cards import CARDS_PER_DECK, Card, Rank, Suit
from baccarat.errors import ImpossibleCard, InsufficientCards, InvalidShoe, ShoeComplete

#: Cards a round may need at most (4 initial + 2 third cards); a round never starts with fewer (§1.12).
MAX_CARDS_PER_ROUND = 6
_SUITS = tuple(Suit)


class BurnRule(Enum):
    """How many cards are burned after the first card is exposed (13:69F-3.5 [U]).

    * ``TENS_AS_TEN`` (default, common NJ/US practice): as many cards as the exposed card's value with
      10/J/Q/K counting 10 and an ace 1; the exposed card is discarded too;
    * ``BACCARAT_VALUE``: as many as its baccarat value (10/J/Q/K burn none);
    * ``NONE``: no burn.
    """

    TENS_AS_TEN = "tens_as_ten"
    BACCARAT_VALUE = "baccarat_value"
    NONE = "none"

    def count_after(self, exposed: Card) -> int:
        """Cards burned face down after ``exposed``."""
        if self is BurnRule.NONE:
            return 0
        if self is BurnRule.TENS_AS_TEN:
            return min(int(exposed.rank), 10)
        return exposed.value


class EndOfShoePolicy(Enum):
    """What happens when the end-of-shoe cutting card comes out (digest §1.12 [U]).

    * ``ONE_MORE_ROUND`` (default): finish the round in progress and deal one more;
    * ``FINISH_ROUND``: finish the round in progress, then close the shoe.
    """

    ONE_MORE_ROUND = "one_more_round"
    FINISH_ROUND = "finish_round"

    @property
    def rounds_after(self) -> int:
        """Rounds that may start after the round in which the cutting card came out."""
        return 1 if self is EndOfShoePolicy.ONE_MORE_ROUND else 0


@dataclass(frozen=True, slots=True)
class ShoeRules:
    """Shoe procedures for a table.

    ``decks`` 1..8 (a regulated table needs ≥ 6: checked by the table configuration, 13:69F-3.1(a));
    ``end_card_offset``: cards behind the end-of-shoe cutting card (default 14, the PA analog);
    ``min_cut_depth``: the patron's cut must leave at least this many cards at either end (10, the NJ
    blackjack analog 13:69F-2.5(c)). Raises :class:`InvalidShoe` when the numbers cannot fit a shoe.
    """

    decks: int = 8
    end_card_offset: int = 14
    burn: BurnRule = BurnRule.TENS_AS_TEN
    end_of_shoe: EndOfShoePolicy = EndOfShoePolicy.ONE_MORE_ROUND
    min_cut_depth: int = 10

    def __post_init__(self) -> None:
        for name in ("decks", "end_card_offset", "min_cut_depth"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidShoe(f"{name} must be an int, got {v!r}")
        if not 1 <= self.decks <= 8:
            raise InvalidShoe(f"a shoe holds 1 to 8 decks, got {self.decks}")
        if not 0 <= self.end_card_offset <= self.size - 11 - MAX_CARDS_PER_ROUND:
            raise InvalidShoe(
                f"end_card_offset {self.end_card_offset} must be 0..{self.size - 17} cards from the back"
            )
        if not 0 <= self.min_cut_depth <= self.size // 2:
            raise InvalidShoe(f"min_cut_depth {self.min_cut_depth} must be 0..{self.size // 2}")

    @property
    def size(self) -> int:
        """Cards in a full shoe: ``decks × 52``."""
        return self.decks * CARDS_PER_DECK


def _card_index(card: Card) -> int:
    assert card.suit is not None
    return (int(card.rank) - 1) * 4 + _SUITS.index(card.suit)


def verify_order(order: Sequence[Card], decks: int) -> None:
    """Check ``order`` is exactly ``decks`` standard decks: every rank and suit ``decks`` times, no jokers,
    nothing missing or extra (13:69E-1.17, 1.18A(b)4). Raises :class:`InvalidShoe` naming the first
    difference."""
    if any(not isinstance(c, Card) or c.suit is None for c in order):
        raise InvalidShoe("every card in a shoe needs a rank and a suit")
    expected = decks * CARDS_PER_DECK
    if len(order) != expected:
        raise InvalidShoe(f"a {decks}-deck shoe holds {expected} cards, got {len(order)}")
    counts = Counter(order)
    for rank in Rank:
        for suit in Suit:
            n = counts.get(Card(rank, suit), 0)
            if n != decks:
                raise InvalidShoe(f"{Card(rank, suit)} appears {n} times, expected {decks}")


@dataclass(frozen=True, slots=True)
class BurnRecord:
    """The burn: the exposed (face-up) card and the cards burned face down after it."""

    exposed: Card
    burned: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class Shoe:
    """A loaded shoe. Immutable: every operation returns a new :class:`Shoe`.

    ``cards`` is the order cards leave the shoe after the cut; ``position`` the index of the next card;
    ``end_card_index`` the index of the first card behind the end-of-shoe cutting card. ``remaining`` holds
    52 counts (rank-major, suits c, d, h, s) of cards not yet out, for surveillance and card-read checks.
    """

    rules: ShoeRules
    cards: tuple[Card, ...]
    position: int = 0
    cut_at: int | None = None
    burn_record: BurnRecord | None = None
    cutting_card_out: bool = False
    rounds_started: int = 0
    rounds_started_after_cutting_card: int = 0
    cutting_card_round: int | None = None
    remaining: tuple[int, ...] = ()
    #: a physical shoe dealt by hand: the order is unknown, cards are read one by one (:func:`read`)
    physical: bool = False

    @property
    def size(self) -> int:
        """Cards in the shoe when loaded."""
        return self.rules.size if self.physical else len(self.cards)

    @property
    def end_card_index(self) -> int:
        return self.size - self.rules.end_card_offset

    @property
    def cards_left(self) -> int:
        """Cards still in the shoe."""
        return self.size - self.position

    def remaining_by_value(self) -> tuple[int, ...]:
        """Ten counts of cards still in the shoe by baccarat value 0..9 (value 0 = 10/J/Q/K)."""
        out = [0] * 10
        for i, n in enumerate(self.remaining):
            rank = i // 4 + 1
            out[rank if rank < 10 else 0] += n
        return tuple(out)

    def remaining_by_rank(self) -> dict[Rank, int]:
        """Cards still in the shoe by rank."""
        return {r: sum(self.remaining[(int(r) - 1) * 4 : int(r) * 4]) for r in Rank}


def load(order: Sequence[Card], rules: ShoeRules) -> Shoe:
    """A shoe from ``order`` (first card out first), verified to be exactly ``rules.decks`` decks.

    Raises :class:`InvalidShoe` if a card is missing or extra.
    """
    verify_order(order, rules.decks)
    return Shoe(rules=rules, cards=tuple(order), remaining=(rules.decks,) * 52)


def load_physical(rules: ShoeRules) -> Shoe:
    """A physical shoe of ``rules.decks`` decks whose order is unknown; cards are read with :func:`read`."""
    return Shoe(rules=rules, cards=(), remaining=(rules.decks,) * 52, physical=True)


def read(shoe: Shoe, card: Card) -> tuple[Shoe, bool]:
    """A card read from a physical shoe: checked (:func:`check_read`) and taken out. Returns the shoe and
    whether the end-of-shoe cutting card came out just before it. Raises :class:`ImpossibleCard`."""
    if not shoe.physical:
        raise InvalidShoe("card reads are for physical shoes; this shoe's order is known: draw instead")
    if card.suit is None:
        raise ImpossibleCard("a card read from a physical shoe needs its suit")
    check_read(shoe, card)
    remaining = list(shoe.remaining)
    remaining[_card_index(card)] -= 1
    reached = not shoe.cutting_card_out and shoe.position == shoe.end_card_index
    new = replace(shoe, position=shoe.position + 1, remaining=tuple(remaining))
    if reached:
        new = replace(new, cutting_card_out=True, cutting_card_round=shoe.rounds_started)
    return new, reached


def cut(shoe: Shoe, at: int) -> Shoe:
    """The patron's cut: the ``at`` cards in front of the cutting card move to the back.

    On a physical shoe (order unknown) the cut is only recorded. Only before the first card is out. Raises :class:`InvalidShoe` if the cut is closer than
    ``min_cut_depth`` cards to either end, or the shoe has started.
    """
    if shoe.position or shoe.cut_at is not None:
        raise InvalidShoe("the cut is made once, before the first card leaves the shoe")
    if isinstance(at, bool) or not isinstance(at, int):
        raise InvalidShoe(f"cut position must be an int, got {at!r}")
    lo, hi = shoe.rules.min_cut_depth, shoe.size - shoe.rules.min_cut_depth
    if not lo <= at <= hi:
        raise InvalidShoe(f"cut at {at} must be {lo}..{hi} cards from the front")
    if shoe.physical:  # the order is unknown: the cut is recorded, the reader reports the cards as they come
        return replace(shoe, cut_at=at)
    return replace(shoe, cards=shoe.cards[at:] + shoe.cards[:at], cut_at=at)


def _take(shoe: Shoe, n: int) -> tuple[Shoe, tuple[Card, ...], bool]:
    if shoe.cards_left < n:
        raise InsufficientCards(f"{n} card(s) needed, {shoe.cards_left} left in the shoe")
    start, end = shoe.position, shoe.position + n
    taken = shoe.cards[start:end]
    remaining = list(shoe.remaining)
    for c in taken:
        remaining[_card_index(c)] -= 1
    reached = not shoe.cutting_card_out and start <= shoe.end_card_index < end
    new = replace(shoe, position=end, remaining=tuple(remaining))
    if reached:
        new = replace(new, cutting_card_out=True, cutting_card_round=shoe.rounds_started)
    return new, taken, reached


def burn(shoe: Shoe) -> tuple[Shoe, BurnRecord]:
    """Burn at the start of the shoe: expose the first card, then burn as many as :class:`BurnRule` says.

    Raises :class:`InvalidShoe` once a round has started or the shoe was burned already, and for a physical
    shoe, whose burn is read card by card (:func:`read_burn`).
    """
    if shoe.physical:
        raise InvalidShoe("a physical shoe's order is unknown: its burn is read card by card (read_burn)")
    if shoe.burn_record is not None or shoe.rounds_started:
        raise InvalidShoe("the burn happens once, before the first round")
    if shoe.rules.burn is BurnRule.NONE:
        record = BurnRecord(shoe.cards[shoe.position], ())
        return replace(shoe, burn_record=record), record
    shoe, (exposed,), _ = _take(shoe, 1)
    shoe, burned, _ = _take(shoe, shoe.rules.burn.count_after(exposed))
    record = BurnRecord(exposed, burned)
    return replace(shoe, burn_record=record), record


def burn_refusal(shoe: Shoe, exposed: Card, burned: Sequence[Card]) -> tuple[str, str] | None:
    """Why the burn a physical shoe's reader reports may not be recorded, as ``(reason code, detail)``, or
    ``None`` when it may (:func:`read_burn`). Codes: ``not_physical`` (a known order burns itself at load),
    ``no_burn_rule`` (the rules burn nothing), ``burn_done`` (burned already, or a card of a round is out:
    the burn happens once, before the first round), ``impossible_card`` (a card without its suit, or one of
    which no copy is left, checked card by card in reading order), ``burn_count_mismatch`` (not as many
    cards burned as :class:`BurnRule` says after the exposed card)."""
    if not shoe.physical:
        return "not_physical", "this shoe's order is known: it was burned when loaded"
    if shoe.rules.burn is BurnRule.NONE:
        return "no_burn_rule", "the table's burn rule is 'none': nothing is burned"
    if shoe.burn_record is not None or shoe.position or shoe.rounds_started:
        return "burn_done", "the burn happens once, before the first card of the first round"
    left = list(shoe.remaining)
    for c in (exposed, *burned):
        if c.suit is None:
            return "impossible_card", f"a card read from a physical shoe needs its suit, got {c}"
        if left[_card_index(c)] <= 0:
            return "impossible_card", f"no {c} is left in the shoe"
        left[_card_index(c)] -= 1
    want = shoe.rules.burn.count_after(exposed)
    if len(burned) != want:
        return "burn_count_mismatch", (f"after {exposed} the {shoe.rules.burn.value} rule burns {want} card(s), "
                                       f"got {len(burned)}")
    return None


def read_burn(shoe: Shoe, exposed: Card, burned: Sequence[Card]) -> tuple[Shoe, BurnRecord]:
    """The burn of a physical shoe as its reader reports it: ``exposed`` (shown face up), then ``burned``
    (face down), each taken out of the remaining composition. Raises :class:`InvalidShoe` whose message
    starts with the :func:`burn_refusal` code when it may not be recorded."""
    why = burn_refusal(shoe, exposed, burned)
    if why:
        raise InvalidShoe(f"{why[0]}: {why[1]}")
    for c in (exposed, *burned):
        shoe, _ = read(shoe, c)
    record = BurnRecord(exposed, tuple(burned))
    return replace(shoe, burn_record=record), record


def round_refusal(shoe: Shoe) -> str | None:
    """Why a new round may not start (``None`` when it may): ``"shoe_complete"`` after the end-of-shoe
    policy's last round, ``"insufficient_cards"`` with fewer than 6 cards left (an irregularity)."""
    return refusal(shoe.cards_left, shoe.rounds_started, shoe.cutting_card_round, shoe.rules.end_of_shoe)


def refusal(cards_left: int, rounds_started: int, cutting_card_round: int | None,
            policy: EndOfShoePolicy) -> str | None:
    """:func:`round_refusal` from plain numbers, for a service that tracks a shoe it does not hold.

    ``cutting_card_round``: rounds started when the cutting card came out (None: not out yet).
    """
    if cutting_card_round is not None and rounds_started - cutting_card_round >= policy.rounds_after:
        return "shoe_complete"
    if cards_left < MAX_CARDS_PER_ROUND:
        return "insufficient_cards"
    return None


def begin_round(shoe: Shoe) -> Shoe:
    """Start a round. Raises :class:`ShoeComplete` when the end-of-shoe policy is spent and
    :class:`InsufficientCards` when fewer than 6 cards remain (never a mid-round shortfall)."""
    why = round_refusal(shoe)
    if why == "shoe_complete":
        raise ShoeComplete("the cutting card is out and the end-of-shoe policy allows no further round")
    if why == "insufficient_cards":
        raise InsufficientCards(f"a round needs {MAX_CARDS_PER_ROUND} cards available, {shoe.cards_left} left")
    return replace(shoe, rounds_started=shoe.rounds_started + 1)


def draw(shoe: Shoe) -> tuple[Shoe, Card, bool]:
    """The next card out of the shoe, and whether the end-of-shoe cutting card came out just before it.

    Raises :class:`InsufficientCards` when the shoe is empty.
    """
    shoe, (card,), reached = _take(shoe, 1)
    return shoe, card, reached


def check_read(shoe: Shoe, card: Card) -> None:
    """Check that a card read from a physical shoe is possible: a copy of it must still be in the shoe.

    Raises :class:`ImpossibleCard` otherwise (to be recorded as an irregularity).
    """
    if card.suit is None:
        if shoe.remaining_by_rank()[card.rank] <= 0:
            raise ImpossibleCard(f"no {card.rank.symbol} is left in the shoe")
        return
    if shoe.remaining[_card_index(card)] <= 0:
        raise ImpossibleCard(f"every {card} of the shoe has already been dealt")
