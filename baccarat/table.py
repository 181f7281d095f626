"""A table's configuration: the game, its shoe, the wagers it offers, pay tables, commission and limits.

Validated when built (:class:`IllegalTableConfig` names the rule broken):

* a regulated punto banco table uses at least six decks (13:69F-3.1(a)); casino night too (13:47-20.20(b)2);
* the dragon 7 wager exists only in the no-vigorish variation (3.2(a)6, 3.3(h)) and may not be offered with
  the card-count wagers or the bonus wager (3.2(a)6.iii);
* panda 8 and any other wager outside 3.2(a) needs ``allow_extensions`` (Division approval, 3.2(b));
* casino night seats at most 14 players and offers bank, player and tie only (13:47-20.20(b)1, (e)1);
* the terms the regulations fix cannot be configured otherwise on a regulated table (Player and Banker 1 to 1,
  the Banker less a commission, the Tie at least 8 to 1 and a tie pushing main bets; casino night's 5 % on all
  winning bets after each round and its 8 to 1 tie): :mod:`baccarat.regulated`;
* chemin de fer wagers are between participants, against the bank a participant holds (13:69F-4.7, not
  retrieved): ``player`` (a wager against the Banker) and ``banco`` (the whole bank); the house takes a
  commission on the bank's winnings (``commission_rate``, default 5 %); what the text read does not give is
  :class:`baccarat.chemin.ChemRules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import Callable, Mapping

from baccarat.chemin import ChemRules
from baccarat.drawing import CASINO_NIGHT, CASINO_NIGHT_LITERAL, CHEMIN_DE_FER, PUNTO_BANCO, Ruleset, Variant
from baccarat.errors import IllegalTableConfig, InvalidAmount, WagerNotOffered
from baccarat.money import CommissionMode, CommissionScope, Odds, Rounding, require_cents
from baccarat.regulated import check_regulated_terms
from baccarat.shoe import ShoeRules
from baccarat.wagers import (
    BONUS_CLASSES,
    BONUS_WAGERS,
    CARD_COUNT_WAGERS,
    EXTENSION_WAGERS,
    MAIN_WAGERS,
    PayTable,
    Wager,
)


class CasinoNightBankerRule(Enum):
    """The two readings of 13:47-20.20(e)3 once the player has drawn (digest §4, §7 item 18(a))."""

    TABLE_2 = "table_2"  # the intended reading: punto banco Table 2
    LITERAL = "literal"  # draw on 0-2 only


class CasinoNightTieCommission(Enum):
    """The two readings of casino night's commission on a winning tie bet (digest §4, §7 item 18(b)).

    13:47-20.20(d)5 collects "a five percent commission ... on all winning bets"; (e)5.ii pays "a winning bet
    on a tie ... 8 to 1". Read together:

    * ``CHARGED`` (default, the literal (d)5): the tie is paid 8 to 1 and 5 % of the win is collected, 7.6 to
      1 net (a $10 tie bet wins $80 less $4.00);
    * ``EXEMPT``: (e)5.ii is the tie's net payout, so a winning tie pays 8 to 1 free of commission (the
      Player and Banker wins still pay 5 %).
    """

    CHARGED = "charged"
    EXEMPT = "exempt"


@dataclass(frozen=True, slots=True)
class Limits:
    """Table minimum and maximum for one wager, in cents (min ≥ 1, max ≥ min)."""

    min_cents: int
    max_cents: int

    def __post_init__(self) -> None:
        require_cents(self.min_cents, "table minimum")
        require_cents(self.max_cents, "table maximum")
        if self.max_cents < self.min_cents:
            raise IllegalTableConfig(f"table maximum {self.max_cents} is below the minimum {self.min_cents}")


DEFAULT_MAIN_LIMITS = Limits(2_500, 1_000_000)  # $25 – $10,000
DEFAULT_SIDE_LIMITS = Limits(500, 50_000)  # $5 – $500

PUNTO_BANCO_WAGERS = frozenset({Wager.BANKER, Wager.PLAYER, Wager.TIE})
#: chemin de fer: a wager against the Banker (on the Player's Hand) and banco (the whole bank)
CHEMIN_WAGERS = frozenset({Wager.PLAYER, Wager.BANCO, Wager.BANCO_SUIVI})


#: where each game asks at least six decks: punto banco 13:69F-3.1(a); casino night 13:47-20.20(b)2; chemin de
#: fer its own subchapter's cards section, 13:69F-4.1 (not retrieved: its number by analogy with 3.1, and the
#: six decks with it), never punto banco's section
MIN_DECKS_RULE = {Variant.PUNTO_BANCO: "13:69F-3.1(a)", Variant.CASINO_NIGHT: "13:47-20.20(b)2",
                  Variant.CHEMIN_DE_FER: "chemin de fer, 13:69F-4.1 [not retrieved: as punto banco's 3.1(a)]"}


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Everything that makes one table's game, validated on construction.

    Money fields are cents; ``commission_rate`` is an exact fraction of the amount won (1/20 = 5 %,
    13:69F-3.3(c) [P]); ``limits`` maps each offered wager to its :class:`Limits` (missing wagers get the
    defaults: $25–$10,000 main, $5–$500 side). ``curator``: a participant holds and passes the shoe
    (13:69F-3.6(b), 3.11; :mod:`baccarat.curator`); off by default (the dealer deals, as at a minibaccarat-style
    table), and never at casino night, whose dealer deals (13:47-20.20(d)1). Raises :class:`IllegalTableConfig`
    or :class:`InvalidAmount`.
    """

    variant: Variant = Variant.PUNTO_BANCO
    shoe: ShoeRules = field(default_factory=ShoeRules)
    regulated: bool = True
    wagers: frozenset[Wager] = PUNTO_BANCO_WAGERS
    no_vig: bool = False
    allow_extensions: bool = False
    pay: PayTable = field(default_factory=PayTable)
    commission_rate: Fraction = Fraction(1, 20)
    commission_mode: CommissionMode = CommissionMode.DEDUCT_AT_PAYOUT
    commission_scope: CommissionScope = CommissionScope.BANKER_ONLY
    rounding: Rounding = field(default_factory=Rounding)
    tie_pushes_main_bets: bool = True
    bonus_requires_base_bet: bool = False
    casino_night_banker_rule: CasinoNightBankerRule = CasinoNightBankerRule.TABLE_2
    casino_night_tie_commission: CasinoNightTieCommission = CasinoNightTieCommission.CHARGED
    max_players: int = 14
    limits: Mapping[Wager, Limits] = field(default_factory=dict)
    curator: bool = False
    #: the seats in the order the curator passes the shoe (counter-clockwise around this table; 13:69F-3.11 is
    #: cut off where it says where the shoe goes): empty, the next seat number up, wrapping to the lowest
    curator_seat_order: tuple[int, ...] = ()
    #: chemin de fer only: its named practices (option defaults and time, seat order, bank size and passing)
    chemin: ChemRules = field(default_factory=ChemRules)

    def __post_init__(self) -> None:
        if isinstance(self.wagers, (set, frozenset, list, tuple)):
            object.__setattr__(self, "wagers", frozenset(self.wagers))
        w = self.wagers
        if not isinstance(w, frozenset) or not all(isinstance(x, Wager) for x in w):
            raise IllegalTableConfig("wagers must be a frozenset of Wager")
        if not w:
            raise IllegalTableConfig("a table must offer at least one wager")
        if self.variant is Variant.CHEMIN_DE_FER:
            if not w <= CHEMIN_WAGERS or Wager.PLAYER not in w:
                raise IllegalTableConfig(
                    "chemin de fer wagers are against the Banker: player (required), banco and banco_suivi; got "
                    + ", ".join(sorted(x.value for x in w)))
            if self.curator:
                raise IllegalTableConfig("at chemin de fer the Banker deals the cards (13:69F-4.8(d)) and the bank, "
                                         "not the shoe, passes: no curator")
            outside = [s for s in self.chemin.seats_counter_clockwise if s > self.max_players]
            if outside:
                raise IllegalTableConfig(f"seats_counter_clockwise names seats {outside} beyond the table's "
                                         f"{self.max_players}")
            if Wager.BANCO_SUIVI in w and Wager.BANCO not in w:
                raise IllegalTableConfig("banco_suivi follows a banco: offer banco too")
            if self.no_vig:
                raise IllegalTableConfig("chemin de fer has no no-vigorish variation")
        if self.shoe.decks < 6 and (self.regulated or self.variant is Variant.CASINO_NIGHT):
            raise IllegalTableConfig(f"{self.shoe.decks} decks: a regulated table needs at least 6 "
                                     f"({MIN_DECKS_RULE[self.variant]})")
        object.__setattr__(self, "curator_seat_order", tuple(self.curator_seat_order))
        order = self.curator_seat_order
        if order and (len(set(order)) != len(order) or not all(
                isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= self.max_players for x in order)):
            raise IllegalTableConfig(f"curator_seat_order must list distinct seats 1..{self.max_players}, "
                                     f"got {list(order)}")
        if order and not self.curator:
            raise IllegalTableConfig("curator_seat_order is the order the curator passes the shoe: set curator")
        if Wager.DRAGON_7 in w:
            if not self.no_vig:
                raise IllegalTableConfig("dragon 7 is offered only in the no-vigorish variation (13:69F-3.2(a)6)")
            clash = w & (CARD_COUNT_WAGERS | BONUS_WAGERS)
            if clash:
                names = ", ".join(sorted(x.value for x in clash))
                raise IllegalTableConfig(
                    f"dragon 7 may not be offered with {names} (13:69F-3.2(a)6.iii)"
                )
        ext = w & EXTENSION_WAGERS
        if ext and not self.allow_extensions:
            raise IllegalTableConfig(
                f"{', '.join(sorted(x.value for x in ext))} is outside 13:69F-3.2(a): needs allow_extensions "
                "(Division approval, 3.2(b))"
            )
        if Wager.PANDA_8 in w and not self.no_vig:
            raise IllegalTableConfig("panda 8 is offered only with the no-vigorish (EZ) variation")
        missing = [c for c in BONUS_CLASSES if c not in ("natural_tie", "lose") and c not in self.pay.bonus]
        if w & BONUS_WAGERS and missing:
            raise IllegalTableConfig(f"bonus pay table lacks {', '.join(missing)}")
        if not (0 <= self.commission_rate < 1):
            raise IllegalTableConfig(f"commission rate {self.commission_rate} must be in [0, 1)")
        if isinstance(self.max_players, bool) or not isinstance(self.max_players, int) or self.max_players < 1:
            raise IllegalTableConfig(f"max_players must be a positive int, got {self.max_players!r}")
        if self.variant is Variant.CASINO_NIGHT:
            if self.max_players > 14:
                raise IllegalTableConfig(
                    f"casino night seats at most 14 players (13:47-20.20(b)1), got {self.max_players}"
                )
            if not w <= PUNTO_BANCO_WAGERS:
                extra = ", ".join(sorted(x.value for x in w - PUNTO_BANCO_WAGERS))
                raise IllegalTableConfig(f"casino night offers bank, player and tie only (13:47-20.20(e)1): {extra}")
            if self.no_vig:
                raise IllegalTableConfig("casino night has no no-vigorish variation")
            if self.curator:
                raise IllegalTableConfig("casino night is dealt by the dealer (13:47-20.20(d)1): no curator")
        elif self.casino_night_tie_commission is not CasinoNightTieCommission.CHARGED:
            raise IllegalTableConfig("casino_night_tie_commission is a casino night term (13:47-20.20(d)5, "
                                     f"(e)5.ii); this table plays {self.variant.value}")
        if self.bonus_requires_base_bet and not (w & MAIN_WAGERS):
            raise IllegalTableConfig("bonus_requires_base_bet needs the Banker or Player wager offered")
        for wager in self.limits:
            if wager not in w:
                raise IllegalTableConfig(f"limits given for {wager.value}, which the table does not offer")
        check_regulated_terms(self)

    @property
    def ruleset(self) -> Ruleset:
        """The drawing rules this table plays."""
        if self.variant is Variant.CASINO_NIGHT:
            lit = self.casino_night_banker_rule is CasinoNightBankerRule.LITERAL
            return CASINO_NIGHT_LITERAL if lit else CASINO_NIGHT
        if self.variant is Variant.CHEMIN_DE_FER:
            return CHEMIN_DE_FER
        return PUNTO_BANCO

    @property
    def odds_ruleset(self) -> Ruleset:
        """The drawing rules the exact odds engine counts: :attr:`ruleset`, except at chemin de fer, whose
        option cells are fixed by the table's default decisions (:attr:`ChemRules.option_defaults`): the
        probabilities of the next round under that stated policy."""
        if self.variant is Variant.CHEMIN_DE_FER:
            return self.chemin.option_defaults.ruleset()
        return self.ruleset

    def require_offered(self, wager: Wager) -> None:
        """Raise :class:`WagerNotOffered` unless the table offers ``wager``."""
        if wager not in self.wagers:
            offered = ", ".join(sorted(x.value for x in self.wagers))
            raise WagerNotOffered(f"{wager.value} is not offered at this table (offered: {offered})")

    def limits_for(self, wager: Wager) -> Limits:
        """Table min/max for an offered ``wager`` (raises :class:`WagerNotOffered`)."""
        self.require_offered(wager)
        default = DEFAULT_MAIN_LIMITS if wager in MAIN_WAGERS | CHEMIN_WAGERS else DEFAULT_SIDE_LIMITS
        return self.limits.get(wager, default)

    @property
    def commission_capped(self) -> bool:
        """True on a regulated table (a regulated punto banco or chemin de fer table, and every casino night):
        its commission rate is a maximum no rounding may exceed, so where the unit forces a choice the
        commission is rounded toward the patron (:meth:`baccarat.money.Rounding.commission` ``at_most``;
        13:69F-3.3(c), 13:47-20.20(d)5). An unregulated (test or training) table rounds by its policy alone."""
        return self.regulated or self.variant is Variant.CASINO_NIGHT

    def commission_rate_for(self, wager: Wager) -> Fraction:
        """Commission on ``wager``'s winnings: Banker only on a standard table, none on a no-vig table,
        every winning bet under :attr:`CommissionScope.ALL_WINNERS` (but a casino-night tie when
        :attr:`casino_night_tie_commission` is ``EXEMPT``)."""
        if self.no_vig or self.variant is Variant.CHEMIN_DE_FER:  # chemin: on the bank's winnings instead
            return Fraction(0)
        if (wager is Wager.TIE and self.variant is Variant.CASINO_NIGHT
                and self.casino_night_tie_commission is CasinoNightTieCommission.EXEMPT):
            return Fraction(0)
        if self.commission_scope is CommissionScope.ALL_WINNERS or wager is Wager.BANKER:
            return self.commission_rate
        return Fraction(0)

    def check_stake(self, wager: Wager, stake: int) -> None:
        """Raise :class:`InvalidAmount` unless ``stake`` is whole cents within the wager's limits and a whole
        number of rounding units (a 30 ¢ bet at a 25 ¢ unit would be paid to the unit, not to the stake)."""
        require_cents(stake, "stake")
        if stake % self.rounding.unit_cents:
            raise InvalidAmount(f"{stake} cents is not a multiple of the rounding unit of "
                                f"{self.rounding.unit_cents} cents")
        lim = self.limits_for(wager)
        if stake < lim.min_cents:
            raise InvalidAmount(f"{stake} cents is under the {wager.value} minimum of {lim.min_cents}")
        if stake > lim.max_cents:
            raise InvalidAmount(f"{stake} cents is over the {wager.value} maximum of {lim.max_cents}")


def unregulated(**kw: object) -> TableConfig:
    """A punto banco test or training table (``regulated=False``): no term of 13:69F-3 is locked, so tests
    can pay, push and commission as they like. Casino night stays locked (13:47-20.20 defines it)."""
    return TableConfig(regulated=False, **kw)  # type: ignore[arg-type]


def punto_banco(**kw: object) -> TableConfig:
    """A standard punto banco table: 8 decks, Banker/Player/Tie, 5 % commission deducted at payout."""
    return TableConfig(**kw)  # type: ignore[arg-type]


def punto_banco_full(**kw: object) -> TableConfig:
    """Punto banco with every 3.2(a) wager compatible with commission: main, tie, card count, bonus."""
    wagers = PUNTO_BANCO_WAGERS | CARD_COUNT_WAGERS | BONUS_WAGERS
    return TableConfig(wagers=wagers, **kw)  # type: ignore[arg-type]


def no_vig_dragon(*, panda: bool = False, **kw: object) -> TableConfig:
    """The no-vigorish variation with dragon 7 (3.2(a)6, 3.3(h)); ``panda`` adds the panda 8 extension."""
    wagers = PUNTO_BANCO_WAGERS | {Wager.DRAGON_7} | ({Wager.PANDA_8} if panda else set())
    return TableConfig(wagers=frozenset(wagers), no_vig=True, allow_extensions=panda, **kw)  # type: ignore[arg-type]


def casino_night(*, literal_banker_rule: bool = False, **kw: object) -> TableConfig:
    """Casino-night baccarat (13:47-20.20): bank/player/tie, 5 % on all winning bets collected after each round
    ((d)5), even money and a tie at 8 to 1 ((e)5), at most 14 players ((b)1)."""
    rule = CasinoNightBankerRule.LITERAL if literal_banker_rule else CasinoNightBankerRule.TABLE_2
    return TableConfig(
        variant=Variant.CASINO_NIGHT,
        commission_scope=CommissionScope.ALL_WINNERS,
        casino_night_banker_rule=rule,
        **kw,  # type: ignore[arg-type]
    )


def chemin_de_fer(**kw: object) -> TableConfig:
    """A chemin de fer table (13:69F-4): wagers against the bank (``player``, ``banco``), the house's 5 %
    commission on the bank's winnings deducted when the round is settled, and the :class:`ChemRules`
    defaults (``chemin=`` to change them)."""
    kw.setdefault("wagers", CHEMIN_WAGERS)
    return TableConfig(variant=Variant.CHEMIN_DE_FER, **kw)  # type: ignore[arg-type]


#: the named table profiles a console opens a table from (name -> the table's configuration)
TABLE_PROFILES: dict[str, Callable[[], TableConfig]] = {
    "punto_banco": punto_banco_full,
    "punto_banco_basic": punto_banco,
    "no_vig_dragon_7": no_vig_dragon,
    "no_vig_dragon_7_panda_8": lambda: no_vig_dragon(panda=True),
    "casino_night": casino_night,
    "casino_night_literal": lambda: casino_night(literal_banker_rule=True),
    "punto_banco_curator": lambda: punto_banco_full(curator=True),
    "chemin_de_fer": chemin_de_fer,
}


def profile(name: str) -> TableConfig:
    """The table configuration of a named profile (:data:`TABLE_PROFILES`): ``punto_banco`` (every 3.2(a)
    wager compatible with commission), ``punto_banco_basic`` (Banker/Player/Tie), ``no_vig_dragon_7``
    (3.2(a)6), ``no_vig_dragon_7_panda_8``, ``casino_night`` (13:47-20.20 with Table 2 as the banker rule) and
    ``casino_night_literal`` (the banker rule as (f) literally reads), ``punto_banco_curator`` (``punto_banco``
    dealt from a shoe a participant holds and passes, 13:69F-3.6(b), 3.11) and ``chemin_de_fer`` (13:69F-4).
    Raises :class:`IllegalTableConfig`
    naming the known profiles for any other name."""
    try:
        return TABLE_PROFILES[name]()
    except KeyError:
        raise IllegalTableConfig(f"unknown table profile {name!r}: one of {', '.join(TABLE_PROFILES)}") from None


__all__ = [
    "TABLE_PROFILES",
    "profile",
    "TableConfig",
    "Limits",
    "CommissionScope",
    "CasinoNightBankerRule",
    "CasinoNightTieCommission",
    "CommissionMode",
    "Odds",
    "punto_banco",
    "punto_banco_full",
    "unregulated",
    "no_vig_dragon",
    "casino_night",
    "chemin_de_fer",
    "CHEMIN_WAGERS",
    "WagerNotOffered",
    "InvalidAmount",
]
