"""Wire form of a table's configuration (carried by ``TableOpened``).

Plain values only: money in cents, odds as "X to Y" strings, enums as their snake_case names. The services
turn it into the rules core's validated ``TableConfig``; an invalid spec is refused there with a reason.
Strings, lists and maps are bounded on decode (:mod:`contracts.bounds`), in commands and events alike.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.bounds import MAX_TABLE_ENTRIES, Code, CodeList, Ratio

PayMap = Annotated[dict[Code, Code], msgspec.Meta(max_length=MAX_TABLE_ENTRIES)]


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
    burn: Code = "tens_as_ten"
    end_of_shoe: Code = "one_more_round"
    min_cut_depth: int = 10


LimitMap = Annotated[dict[Code, LimitSpec], msgspec.Meta(max_length=MAX_TABLE_ENTRIES)]
SeatList = Annotated[list[int], msgspec.Meta(max_length=MAX_TABLE_ENTRIES)]


class ChemSpec(msgspec.Struct, frozen=True):
    """Chemin de fer's named practices (13:69F-4 text not retrieved; :class:`baccarat.chemin.ChemRules`).
    ``option_draws``: the option cells (``player_5``, ``banker_3_9``, ``banker_4_1``, ``banker_5_4``) that
    draw when their controller does not decide within ``option_seconds``, the others stand;
    ``seats_counter_clockwise``: the seats in counter-clockwise order (empty: 1..max players);
    ``tie_break``: ``nearest_counter_clockwise`` (13:69F-4.8(c)) | ``first_wager`` (unregulated only);
    ``bank_min_cents``/``bank_max_cents``: the bank a participant may put up; ``bank_passes_on_loss``: the
    Banker gives up the bank when the Banker's Hand loses; ``bank_stays_in_play``: a Banker who keeps the bank
    puts all of it up again, as the last round left it."""

    option_draws: CodeList = msgspec.field(default_factory=lambda: ["banker_3_9", "banker_5_4", "player_5"])
    option_seconds: int = 30
    seats_counter_clockwise: SeatList = msgspec.field(default_factory=list)
    tie_break: Code = "nearest_counter_clockwise"
    bank_min_cents: int = 10_000
    bank_max_cents: int = 10_000_000
    bank_passes_on_loss: bool = True
    bank_stays_in_play: bool = True


class TableSpec(msgspec.Struct, frozen=True):
    """A table's game. ``variant``: ``punto_banco`` | ``casino_night`` | ``chemin_de_fer`` (its practices in
    ``chemin``); ``wagers``: wager names offered;
    ``pay``: wager or bonus class → "X to Y"; ``commission_rate``: [numerator, denominator] of the amount
    won; ``commission_mode``: ``deduct_at_payout`` | ``accrue``; ``commission_scope``: ``banker_only`` |
    ``all_winners``; ``rounding``: ``house`` | ``patron`` | ``half_even`` to ``rounding_unit_cents``;
    ``irregularity_handling``: what a card dealt out of the 13:69F-3.7–3.9 order that 3.12(a) does not cover
    does to its round (before "No more bets", out of order, on the wrong hand): ``void_round`` (the default:
    the round is voided, every bet returned) | ``record_only`` (the card is recorded and discarded, or dealt
    where the rules say). The texts read give no handling for these (digest §1.13). ``curator``: a participant
    holds the shoe as curator and passes it (13:69F-3.6(b), 3.11: ``ShoeOffered``, ``ShoeKept``,
    ``ShoePassed``); false (the default): the dealer deals, as at a minibaccarat-style table."""

    variant: Code = "punto_banco"
    shoe: ShoeSpec = msgspec.field(default_factory=ShoeSpec)
    regulated: bool = True
    wagers: CodeList = msgspec.field(default_factory=lambda: ["banker", "player", "tie"])
    no_vig: bool = False
    allow_extensions: bool = False
    pay: PayMap = msgspec.field(default_factory=dict)
    commission_rate: Ratio = msgspec.field(default_factory=lambda: [1, 20])
    commission_mode: Code = "deduct_at_payout"
    commission_scope: Code = "banker_only"
    rounding: Code = "house"
    rounding_unit_cents: int = 1
    tie_pushes_main_bets: bool = True
    bonus_requires_base_bet: bool = False
    casino_night_banker_rule: Code = "table_2"
    #: casino night's commission on a winning tie bet: ``charged`` (13:47-20.20(d)5 "all winning bets": 8 to 1
    #: less 5 %) | ``exempt`` ((e)5.ii's 8 to 1 read as the net); another variant takes only ``charged``
    casino_night_tie_commission: Code = "charged"
    max_players: int = 14
    limits: LimitMap = msgspec.field(default_factory=dict)
    irregularity_handling: Code = "void_round"
    curator: bool = False
    #: the seats in the order the curator passes the shoe (counter-clockwise); empty: ascending seat numbers
    curator_seat_order: SeatList = msgspec.field(default_factory=list)
    chemin: ChemSpec = msgspec.field(default_factory=ChemSpec)
