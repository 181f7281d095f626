"""Between wire values (:mod:`contracts`) and the rules core (:mod:`baccarat`).

Shared by the services so that each reads a ``TableSpec`` and a ``RoundResolved`` the same way. (The
architecture guide has ``runtime`` depend on ``contracts`` only; this one module also uses ``baccarat``,
because the alternative is every service repeating it.)
"""

from __future__ import annotations

from fractions import Fraction

from baccarat.cards import Card, parse_card
from baccarat.chemin import ChemRules, DecisionPolicy, OptionCell, TieBreak
from baccarat.drawing import Variant
from baccarat.errors import BaccaratError
from baccarat.money import CommissionMode, Odds, Rounding, RoundingPolicy
from baccarat.round import Outcome, Winner
from baccarat.shoe import BurnRule, EndOfShoePolicy, ShoeRules
from baccarat.table import CasinoNightBankerRule, CasinoNightTieCommission, CommissionScope, Limits, TableConfig
from baccarat.wagers import BONUS_STANDARD, PayTable, Wager
from contracts.events import RoundResolved
from contracts.tables import ChemSpec, LimitSpec, ShoeSpec, TableSpec


def _enum(kind: type, value: str, what: str):  # type: ignore[no-untyped-def]
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(m.value for m in kind)
        raise BaccaratError(f"{what}: unknown value {value!r} (known: {names})") from None


def shoe_rules(spec: ShoeSpec) -> ShoeRules:
    """The rules core's :class:`ShoeRules` for a wire :class:`ShoeSpec` (raises BaccaratError)."""
    return ShoeRules(
        decks=spec.decks,
        end_card_offset=spec.end_card_offset,
        burn=_enum(BurnRule, spec.burn, "burn"),
        end_of_shoe=_enum(EndOfShoePolicy, spec.end_of_shoe, "end_of_shoe"),
        min_cut_depth=spec.min_cut_depth,
    )


def chem_rules(spec: ChemSpec) -> ChemRules:
    """The rules core's :class:`ChemRules` for a wire :class:`ChemSpec` (raises BaccaratError)."""
    return ChemRules(
        option_defaults=DecisionPolicy(frozenset(_enum(OptionCell, c, "option_draws") for c in spec.option_draws)),
        option_seconds=spec.option_seconds,
        seats_counter_clockwise=tuple(spec.seats_counter_clockwise),
        tie_break=_enum(TieBreak, spec.tie_break, "tie_break"),
        bank_min_cents=spec.bank_min_cents,
        bank_max_cents=spec.bank_max_cents,
        bank_passes_on_loss=spec.bank_passes_on_loss,
        bank_stays_in_play=spec.bank_stays_in_play,
    )


def chem_spec(rules: ChemRules) -> ChemSpec:
    """The wire form of a :class:`ChemRules` (inverse of :func:`chem_rules`)."""
    return ChemSpec(
        option_draws=sorted(c.value for c in rules.option_defaults.draws),
        option_seconds=rules.option_seconds,
        seats_counter_clockwise=list(rules.seats_counter_clockwise),
        tie_break=rules.tie_break.value,
        bank_min_cents=rules.bank_min_cents,
        bank_max_cents=rules.bank_max_cents,
        bank_passes_on_loss=rules.bank_passes_on_loss,
        bank_stays_in_play=rules.bank_stays_in_play,
    )


def table_config(spec: TableSpec) -> TableConfig:
    """The validated :class:`TableConfig` for a wire :class:`TableSpec`; raises
    :class:`baccarat.errors.BaccaratError` naming the problem."""
    pay = PayTable()
    bonus = dict(BONUS_STANDARD)
    fields: dict[str, Odds] = {}
    for name, text in spec.pay.items():
        odds = Odds.parse(text)
        if name.startswith("natural_win") or name.startswith("win_by_"):
            bonus[name] = odds
        elif name in ("player", "banker", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8"):
            fields[name] = odds
        else:
            raise BaccaratError(f"pay table: unknown entry {name!r}")
    pay = PayTable(bonus=bonus, **fields)  # type: ignore[arg-type]
    if len(spec.commission_rate) != 2 or spec.commission_rate[1] <= 0:
        raise BaccaratError(f"commission_rate must be [numerator, denominator], got {spec.commission_rate}")
    return TableConfig(
        variant=_enum(Variant, spec.variant, "variant"),
        shoe=shoe_rules(spec.shoe),
        regulated=spec.regulated,
        wagers=frozenset(Wager.parse(w) for w in spec.wagers),
        no_vig=spec.no_vig,
        allow_extensions=spec.allow_extensions,
        pay=pay,
        commission_rate=Fraction(spec.commission_rate[0], spec.commission_rate[1]),
        commission_mode=_enum(CommissionMode, spec.commission_mode, "commission_mode"),
        commission_scope=_enum(CommissionScope, spec.commission_scope, "commission_scope"),
        rounding=Rounding(_enum(RoundingPolicy, spec.rounding, "rounding"), spec.rounding_unit_cents),
        tie_pushes_main_bets=spec.tie_pushes_main_bets,
        bonus_requires_base_bet=spec.bonus_requires_base_bet,
        casino_night_banker_rule=_enum(CasinoNightBankerRule, spec.casino_night_banker_rule,
                                       "casino_night_banker_rule"),
        casino_night_tie_commission=_enum(CasinoNightTieCommission, spec.casino_night_tie_commission,
                                          "casino_night_tie_commission"),
        max_players=spec.max_players,
        limits={Wager.parse(w): Limits(v.min_cents, v.max_cents) for w, v in spec.limits.items()},
        curator=spec.curator,
        curator_seat_order=tuple(spec.curator_seat_order),
        chemin=chem_rules(spec.chemin),
    )


def table_spec(config: TableConfig) -> TableSpec:
    """The wire form of a :class:`TableConfig` (inverse of :func:`table_config`)."""
    pay = {k: str(getattr(config.pay, k)) for k in
           ("player", "banker", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8")}
    pay.update({k: str(v) for k, v in config.pay.bonus.items()})
    return TableSpec(
        variant=config.variant.value,
        shoe=ShoeSpec(decks=config.shoe.decks, end_card_offset=config.shoe.end_card_offset,
                      burn=config.shoe.burn.value, end_of_shoe=config.shoe.end_of_shoe.value,
                      min_cut_depth=config.shoe.min_cut_depth),
        regulated=config.regulated,
        wagers=sorted(w.value for w in config.wagers),
        no_vig=config.no_vig,
        allow_extensions=config.allow_extensions,
        pay=pay,
        commission_rate=[config.commission_rate.numerator, config.commission_rate.denominator],
        commission_mode=config.commission_mode.value,
        commission_scope=config.commission_scope.value,
        rounding=config.rounding.policy.value,
        rounding_unit_cents=config.rounding.unit_cents,
        tie_pushes_main_bets=config.tie_pushes_main_bets,
        bonus_requires_base_bet=config.bonus_requires_base_bet,
        casino_night_banker_rule=config.casino_night_banker_rule.value,
        casino_night_tie_commission=config.casino_night_tie_commission.value,
        max_players=config.max_players,
        limits={w.value: LimitSpec(v.min_cents, v.max_cents) for w, v in config.limits.items()},
        curator=config.curator,
        curator_seat_order=list(config.curator_seat_order),
        chemin=chem_spec(config.chemin),
    )


def cards(texts: list[str]) -> tuple[Card, ...]:
    """Cards from their texts (``"Kd"``)."""
    return tuple(parse_card(t) for t in texts)


def outcome(ev: RoundResolved) -> Outcome:
    """The rules core's :class:`Outcome` for a ``RoundResolved`` event (for settlement)."""
    return Outcome(
        player=cards(ev.player_cards),
        banker=cards(ev.banker_cards),
        player_points=ev.player_points,
        banker_points=ev.banker_points,
        winner=Winner(ev.winner),
        player_natural=ev.player_natural,
        banker_natural=ev.banker_natural,
        cards_required=ev.cards_required,
        dragon_7=ev.dragon_7,
        panda_8=ev.panda_8,
        reasons=(),
    )
