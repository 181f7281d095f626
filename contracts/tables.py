"""Wire form of a table's configuration (carried by ``TableOpened``).

Plain values only: money in cents, odds as "X to Y" strings, enums as their snake_case names. The services
turn it into the rules core's validated ``TableConfig``; an invalid spec is refused there with a reason.
"""

from __future__ import annotations

import msgspec


class LimitSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Table minimum and maximum for one wager, in cents."""

    min_cents: int
    max_cents: int


class ShoeSpec(msgspec.Struct, frozen=True):
    """Shoe procedures: decks 1–8, end-of-shoe cutting card offset (cards from the back), burn rule
    (``tens_as_ten`` | ``baccarat_value`` | ``none``), end-of-shoe policy (``one_more_round`` |
    ``finish_round``), minimum cut depth in cards."""

    decks: int = 8
    end_card_offset: int = 14
    burn: str = "tens_as_ten"
    end_of_shoe: str = "one_more_round"
    min_cut_depth: int = 10


class TableSpec(msgspec.Struct, frozen=True):
    """A table's game. ``variant``: ``punto_banco`` | ``casino_night``; ``wagers``: wager names offered;
    ``pay``: wager or bonus class → "X to Y"; ``commission_rate``: [numerator, denominator] of the amount
    won; ``commission_mode``: ``deduct_at_payout`` | ``accrue``; ``commission_scope``: ``banker_only`` |
    ``all_winners``; ``rounding``: ``house`` | ``patron`` | ``half_even`` to ``rounding_unit_cents``."""

    variant: str = "punto_banco"
    shoe: ShoeSpec = msgspec.field(default_factory=ShoeSpec)
    regulated: bool = True
    wagers: list[str] = msgspec.field(default_factory=lambda: ["banker", "player", "tie"])
    no_vig: bool = False
    allow_extensions: bool = False
    pay: dict[str, str] = msgspec.field(default_factory=dict)
    commission_rate: list[int] = msgspec.field(default_factory=lambda: [1, 20])
    commission_mode: str = "deduct_at_payout"
    commission_scope: str = "banker_only"
    rounding: str = "house"
    rounding_unit_cents: int = 1
    tie_pushes_main_bets: bool = True
    bonus_requires_base_bet: bool = False
    casino_night_banker_rule: str = "table_2"
    max_players: int = 14
    limits: dict[str, LimitSpec] = msgspec.field(default_factory=dict)
