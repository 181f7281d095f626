"""Money: integer cents, "X to Y" odds, and the named rounding policy.

Every amount is a whole number of cents (``int``); no float ever touches money. Payout odds are stored as
"X to Y" (profit = stake × X / Y, the stake returned on a win), the form NJ requires for stated odds
(e.g. 13:69F-29.11(a); digest §1.4). Where X / Y does not divide the stake, or a commission is a fraction of
a cent, a :class:`RoundingPolicy` decides which way and to what unit, and the cents rounded away are always
accounted to one side, never lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

from baccarat.errors import InvalidAmount, InvalidOdds


def require_cents(amount: object, what: str = "amount") -> int:
    """Return ``amount`` if it is a positive whole number of cents, else raise :class:`InvalidAmount`.

    ``bool`` and ``float`` are refused (``10.0`` is not cents, it is a float).
    """
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise InvalidAmount(f"{what} must be a whole number of cents, got {amount!r}")
    if amount <= 0:
        raise InvalidAmount(f"{what} must be positive, got {amount} cents")
    return amount


@dataclass(frozen=True, slots=True)
class Odds:
    """Payout odds "X to Y": a winning stake S earns a profit of S × X / Y and gets S back.

    ``Odds(19, 20)`` is the Banker's 19 to 20 (13:69F-3.3(c) [P]); ``Odds(8, 1)`` the Tie's 8 to 1
    (13:69F-3.3(b)). Raises :class:`InvalidOdds` unless X ≥ 0 and Y > 0 are ints.
    """

    to_win: int
    per: int

    def __post_init__(self) -> None:
        for v in (self.to_win, self.per):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidOdds(f"odds must be whole numbers, got {self.to_win!r} to {self.per!r}")
        if self.to_win < 0 or self.per <= 0:
            raise InvalidOdds(f"odds must be X to Y with X >= 0 and Y > 0, got {self.to_win} to {self.per}")

    @classmethod
    def parse(cls, text: str) -> "Odds":
        """Parse ``"19 to 20"`` (also ``"19:20"``). Raises :class:`InvalidOdds`."""
        t = text.strip().lower().replace(":", " to ")
        parts = [p for p in t.split("to")]
        try:
            x, y = (int(p.strip()) for p in parts)
        except ValueError:
            raise InvalidOdds(f"odds must read 'X to Y', got {text!r}") from None
        return cls(x, y)

    @property
    def ratio(self) -> Fraction:
        """Profit per unit staked, exactly."""
        return Fraction(self.to_win, self.per)

    def __str__(self) -> str:
        return f"{self.to_win} to {self.per}"


class RoundingPolicy(Enum):
    """Which way fractions of a unit go.

    * ``HOUSE`` (default): a patron's win is rounded **down**, a commission **up** (the fraction stays with
      the house; the usual casino practice of paying to the lowest unit in play);
    * ``PATRON``: the reverse;
    * ``HALF_EVEN``: to the nearest unit, halves to the even unit (banker's rounding).
    """

    HOUSE = "house"
    PATRON = "patron"
    HALF_EVEN = "half_even"


@dataclass(frozen=True, slots=True)
class Rounding:
    """A rounding policy and the unit it rounds to, in cents (1 = the cent; 25 = a quarter chip)."""

    policy: RoundingPolicy = RoundingPolicy.HOUSE
    unit_cents: int = 1

    def __post_init__(self) -> None:
        require_cents(self.unit_cents, "rounding unit")

    def _round(self, amount: Fraction, up: bool) -> int:
        units = amount / self.unit_cents
        if self.policy is RoundingPolicy.HALF_EVEN:
            return round(units) * self.unit_cents  # Fraction.__round__ is half-even
        q, r = divmod(units.numerator, units.denominator)
        return (q + (1 if (up and r) else 0)) * self.unit_cents

    def win(self, amount: Fraction) -> int:
        """Round a patron's winnings (cents, exact fraction) to a whole number of units."""
        return self._round(amount, up=self.policy is RoundingPolicy.PATRON)

    def commission(self, amount: Fraction, *, at_most: bool = False) -> int:
        """Round a commission owed by a patron (cents, exact fraction) to a whole number of units.

        ``at_most``: ``amount`` is a regulated maximum (a regulated table's rate of the amount won,
        13:69F-3.3(c), 13:47-20.20(d)5): where the policy would round above it (``HOUSE`` always rounds a
        fraction up, ``HALF_EVEN`` may), the commission is rounded **down** to the unit instead: the choice
        the unit forces goes to the patron, and the commission is never more than ``amount``. A $25.25
        Banker win at 5 % owes 126.25 ¢: 127 ¢ at a 1 ¢ unit and 150 ¢ at a 25 ¢ unit under ``HOUSE``
        (5.03 %, 5.94 %); 126 ¢ and 125 ¢ ``at_most``.
        """
        rounded = self._round(amount, up=self.policy is RoundingPolicy.HOUSE)
        if at_most and rounded > amount:
            return (amount.numerator // (amount.denominator * self.unit_cents)) * self.unit_cents
        return rounded


class CommissionMode(Enum):
    """How commission on a winning bet is taken (digest §1.5 [U]: both are NJ practice).

    * ``DEDUCT_AT_PAYOUT``: the commission is taken from the payout (Banker effectively paid 19 to 20);
    * ``ACCRUE``: the bet is paid in full and the commission is recorded against the seat (numbered
      commission boxes), collected later (end of shoe, or when the patron leaves).
    """

    DEDUCT_AT_PAYOUT = "deduct_at_payout"
    ACCRUE = "accrue"


class CommissionScope(Enum):
    """Which winning wagers carry commission: Banker only (punto banco 3.3(c)) or all (13:47-20.20(d)5).
    (Also :data:`baccarat.table.CommissionScope`, where a table's configuration names it.)"""

    BANKER_ONLY = "banker_only"
    ALL_WINNERS = "all_winners"


def profit(stake: int, odds: Odds, rounding: Rounding) -> int:
    """Winnings in cents on ``stake`` cents at ``odds``, rounded by ``rounding`` (never negative)."""
    return rounding.win(stake * odds.ratio)


def format_cents(cents: int) -> str:
    """``12345`` → ``"$123.45"``; negative amounts get a leading minus."""
    sign = "-" if cents < 0 else ""
    d, c = divmod(abs(cents), 100)
    return f"{sign}${d:,}.{c:02d}"


#: the dollar amounts people type (the named input policy of :func:`parse_dollars`): an optional ``$``, whole
#: dollars (plain, or with a comma between every group of three digits), then optionally ``.`` and one or two
#: digits of cents (ASCII digits only); spaces around are ignored
DOLLARS_PATTERN = r"\$? *(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]{1,2})?"


def parse_dollars(text: str, what: str = "amount") -> int:
    """An amount as people write it, in dollars, as integer cents: ``"25"`` → ``2500``, ``"25.5"`` and
    ``"25.50"`` → ``2550``, ``"$1,000"`` → ``100000``, ``"0.05"`` → ``5`` (policy: :data:`DOLLARS_PATTERN`;
    nothing is rounded). Raises :class:`InvalidAmount`, naming ``what``, for anything else: a fraction of a
    cent (``"25.555"``), a sign, misplaced commas (``"1,00"``), words (``"abc"``), an empty text."""
    s = text.strip() if isinstance(text, str) else ""
    if not s or not re.fullmatch(DOLLARS_PATTERN, s):
        if re.fullmatch(r"\$? *[0-9,]*\.[0-9]{3,}", s):
            raise InvalidAmount(f"{what} {text!r} has a fraction of a cent: give dollars with at most two "
                                "decimals (e.g. 25.50)")
        raise InvalidAmount(f"{what} {text!r} is not an amount in dollars: write e.g. 25, 25.50 or $1,000")
    whole, _, frac = s.lstrip("$").strip().replace(",", "").partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])
