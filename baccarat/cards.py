"""Cards, ranks, suits, baccarat values and point counts.

Values follow N.J.A.C. 13:69F-3.1(b) as confirmed word for word by 13:47-20.20(b)2.iii: an ace counts 1,
2–9 count their face value, 10/J/Q/K count 0. A hand's point count is the sum of its values modulo 10
(13:47-20.20(e)4.iii; 7+8 → 5, A+2+9 → 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Iterable, Sequence

from baccarat.errors import InvalidCard


class Rank(IntEnum):
    """A card rank; the integer is the pip rank (ace 1 … king 13), not the baccarat value."""

    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def value_points(self) -> int:
        """Baccarat value 0–9: ace 1, 2–9 face value, 10/J/Q/K 0 (13:69F-3.1(b))."""
        return int(self) if int(self) < 10 else 0

    @property
    def symbol(self) -> str:
        """One-character symbol: ``A 2 … 9 T J Q K``."""
        return _RANK_SYMBOLS[self]


class Suit(Enum):
    """A card suit; irrelevant to every NJ wager, kept for shoe verification and audit."""

    CLUBS = "c"
    DIAMONDS = "d"
    HEARTS = "h"
    SPADES = "s"


class Hand(Enum):
    """The two hands of a round (13:69F-3.7(a)): neither belongs to a patron or to the house."""

    PLAYER = "player"
    BANKER = "banker"


_RANK_SYMBOLS = {r: s for r, s in zip(Rank, "A23456789TJQK")}
_SYMBOL_RANKS: dict[str, Rank] = {s: r for r, s in _RANK_SYMBOLS.items()}
_SYMBOL_RANKS["10"] = Rank.TEN
_SYMBOL_RANKS["1"] = Rank.ACE
_SUIT_SYMBOLS = {s.value: s for s in Suit}
_SUIT_ORDER = {s: i for i, s in enumerate(Suit)}


@dataclass(frozen=True, slots=True)
class Card:
    """One playing card.

    ``suit`` may be ``None`` when only the rank is known (a card read as ``"7"``); such cards still
    have a value and compare by rank.
    """

    rank: Rank
    suit: Suit | None = None

    @property
    def value(self) -> int:
        """Baccarat value 0–9 (13:69F-3.1(b))."""
        return self.rank.value_points

    def __str__(self) -> str:
        return self.rank.symbol + (self.suit.value if self.suit else "")

    def sort_key(self) -> tuple[int, int]:
        """(rank, suit) order: ranks ace..king, suits c, d, h, s, a rank-only card first."""
        return int(self.rank), (-1 if self.suit is None else _SUIT_ORDER[self.suit])

    def __lt__(self, other: "Card") -> bool:
        return self.sort_key() < other.sort_key()


def parse_rank(text: str) -> Rank:
    """Parse one rank symbol: ``A``/``1``, ``2``–``9``, ``T``/``10``, ``J``, ``Q``, ``K`` (case-insensitive).

    Raises :class:`InvalidCard` naming the text when it is not a rank.
    """
    key = text.strip().upper()
    try:
        return _SYMBOL_RANKS[key]
    except KeyError:
        raise InvalidCard(f"unknown rank {text!r}: use A,2-9,T (or 10),J,Q,K") from None


def parse_card(text: str) -> Card:
    """Parse ``"7"``, ``"Th"``, ``"10s"`` or ``"Kd"`` into a :class:`Card` (suit optional).

    Raises :class:`InvalidCard` for anything else.
    """
    t = text.strip()
    if not t:
        raise InvalidCard("empty card text")
    if t[-1].lower() in _SUIT_SYMBOLS and len(t) >= 2 and t[:-1].upper() in _SYMBOL_RANKS:
        return Card(parse_rank(t[:-1]), _SUIT_SYMBOLS[t[-1].lower()])
    return Card(parse_rank(t))


def parse_cards(text: str) -> tuple[Card, ...]:
    """Parse a comma- or space-separated list of cards (``"A,T,5,K"`` or ``"Ah 10s 5"``).

    Raises :class:`InvalidCard` on the first bad entry, naming it and its 1-based position.
    """
    parts = [p for p in text.replace(",", " ").split() if p]
    out = []
    for i, p in enumerate(parts, 1):
        try:
            out.append(parse_card(p))
        except InvalidCard as e:
            raise InvalidCard(f"card {i}: {e}") from None
    return tuple(out)


def point_count(values: Iterable[int]) -> int:
    """Point count of a hand given its card values: ``sum(values) % 10`` (13:47-20.20(e)4.iii).

    ``values`` are baccarat values 0–9; raises :class:`InvalidCard` for anything else.
    """
    total = 0
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 9:
            raise InvalidCard(f"card value {v!r} is not 0-9")
        total += v
    return total % 10


def hand_points(cards: Sequence[Card]) -> int:
    """Point count of a hand of cards (0–9)."""
    return sum(c.value for c in cards) % 10


def standard_deck() -> tuple[Card, ...]:
    """One 52-card deck, no jokers, in rank-then-suit order."""
    return tuple(Card(r, s) for r in Rank for s in Suit)


CARDS_PER_DECK = 52
#: Cards of each baccarat value 0..9 in one deck: value 0 holds 10/J/Q/K (16 cards), others 4.
VALUE_COUNTS_PER_DECK: tuple[int, ...] = (16, 4, 4, 4, 4, 4, 4, 4, 4, 4)
