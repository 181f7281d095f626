"""Typed errors raised by the rules core.

Every public constructor and function of :mod:`baccarat` rejects invalid input with one of these,
naming the problem; nothing is silently clamped. All derive from :class:`BaccaratError` (a
``ValueError``) so callers can catch the family at once.
"""

from __future__ import annotations


class BaccaratError(ValueError):
    """Base class of every rules-core error."""


class InvalidCard(BaccaratError):
    """A rank, suit or card text that is not a baccarat card (e.g. ``"X"`` or ``"11"``)."""


class InvalidComposition(BaccaratError):
    """A shoe composition with negative counts, the wrong length, or more cards than its decks hold."""


class InsufficientCards(BaccaratError):
    """Fewer cards remain than the operation needs (a round needs up to 6; 13:69F-3 §1.12 of the digest)."""


class InvalidShoe(BaccaratError):
    """A shoe that is not exactly ``decks × 52`` cards of the right ranks and suits, or a bad cut/offset."""


class InvalidAmount(BaccaratError):
    """A money amount that is not a positive whole number of cents."""


class UnknownWager(BaccaratError):
    """A wager name that is not one of :class:`baccarat.wagers.Wager`."""


class WagerNotOffered(BaccaratError):
    """A wager the table's configuration does not offer (disabled, or not allowed with its options)."""


class IllegalTableConfig(BaccaratError):
    """A table configuration the regulations forbid (e.g. dragon 7 with card-count wagers, 13:69F-3.2(a)6.iii)."""


class InvalidOdds(BaccaratError):
    """A pay-table entry that is not ``X to Y`` with whole X ≥ 0 and Y > 0."""


class IllegalDecision(BaccaratError):
    """A chemin de fer option decision given where none is allowed, or missing where one is needed."""


class ShoeComplete(BaccaratError):
    """The end-of-shoe policy allows no further round: the shoe must be closed and reshuffled (13:69F-3.5(a))."""


class ImpossibleCard(BaccaratError):
    """A card read that the remaining composition cannot hold (every copy already dealt): an irregularity."""
