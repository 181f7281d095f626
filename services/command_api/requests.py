"""The actions a person can take at a table, each a typed request (a pydantic model: the HTTP layer's body and
its OpenAPI schema, the command line's arguments), and :data:`ACTIONS`, the name of each.

The table of what each action becomes is in :mod:`services.command_api.actions`; the command itself is
:func:`services.command_api.plans.to_command`'s. A request is checked here for its shape and bounds only
(unknown fields refused, ids and amounts in bounds, an amount in dollars read into cents): a 422 naming the
field, never a dead letter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baccarat.table import TABLE_PROFILES
from contracts.bounds import MAX_BURN, MAX_CODE, MAX_ID, MAX_TEXT
from services.command_api.fields import CardField, Cents, Dollars, IdText, PlayerText, Seat, dollars_to_cents


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConsoleAction(_Action):
    """An action of the dealer console (or the pit boss): ``actor`` is the dealer or pit boss who acts (their
    employee id; recorded as the ``actor`` of every event the command causes)."""

    actor: PlayerText


class LimitsModel(_Action):
    """A wager's table minimum and maximum, in cents."""

    min_cents: Cents
    max_cents: Cents


class ChemPracticesModel(_Action):
    """A chemin de fer table's own practices where the profile's defaults do not suit (``baccarat.chemin.ChemRules``,
    configured practice [U]): the seconds a controller has to decide an option before the table clock's
    ``expire_option`` may apply the default, and the bank's minimum and maximum (cents). A field not given keeps
    the profile's (30 s; $100 to $100,000)."""

    option_seconds: int | None = Field(default=None, ge=1, le=3600, description="Seconds to decide an option")
    bank_min_cents: Cents | None = None
    bank_max_cents: Cents | None = None


class OpenTableAction(ConsoleAction):
    """Open (or reconfigure, between rounds) the table from a named profile (:data:`baccarat.table.TABLE_PROFILES`),
    optionally with its own limits per wager (cents) and, at chemin de fer, its own practices (``chemin``)."""

    profile: Annotated[str, Field(max_length=MAX_CODE, description="One of: " + ", ".join(TABLE_PROFILES),
                                  examples=["punto_banco"])]
    limits: dict[Annotated[str, Field(max_length=MAX_CODE)], LimitsModel] = Field(
        default_factory=dict, max_length=32, description="wager -> {min_cents, max_cents}; the profile's "
                                                         "defaults for a wager not named")
    chemin: ChemPracticesModel | None = Field(default=None, description="Chemin de fer only: the option time "
                                                                        "and the bank's limits")


class ShoeRulesModel(_Action):
    """Shoe procedures (``contracts.tables.ShoeSpec``): decks, the end-of-shoe cutting card's offset from the
    back (cards), the burn rule, the end-of-shoe policy, the minimum cut depth (cards)."""

    decks: int = Field(default=8, ge=1, le=8)
    end_card_offset: int = Field(default=14, ge=0, le=416)
    burn: Literal["tens_as_ten", "baccarat_value", "none"] = "tens_as_ten"
    end_of_shoe: Literal["one_more_round", "finish_round"] = "one_more_round"
    min_cut_depth: int = Field(default=10, ge=0, le=416)


class LoadShoeAction(ConsoleAction):
    """Load a new shoe: shuffled by the shoe service (its CSPRNG; it commits to the order and burns at once),
    or ``physical`` (shuffled by hand: the reader reports the burn, ``read_burn``, and each card,
    ``read_card``). ``cut_at``: the patron's cut, cards from the front (checked against the minimum cut
    depth). ``shoe_id``: default derived from the request id."""

    shoe_id: IdText | None = None
    physical: bool = False
    cut_at: int | None = Field(default=None, ge=0, le=416)
    rules: ShoeRulesModel = ShoeRulesModel()


class ReadBurnAction(ConsoleAction):
    """A physical shoe's burn as its reader reports it: ``exposed`` face up, then ``burned`` face down."""

    shoe_id: IdText
    exposed: CardField
    burned: list[CardField] = Field(default_factory=list, max_length=MAX_BURN)


class ReadCardAction(ConsoleAction):
    """A card read from a physical shoe for the round: its number in the round (1-based) and, when known,
    the hand the dealer placed it on (``player`` | ``banker``)."""

    shoe_id: IdText
    round_id: IdText
    card_number: int = Field(ge=1, le=6)
    card: CardField
    hand: Literal["", "player", "banker"] = ""


class CloseShoeAction(ConsoleAction):
    """Close the shoe (its order and salt are revealed, so its commitment can be checked)."""

    shoe_id: IdText
    reason: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)] = "end_of_shoe"


class OpenRoundAction(ConsoleAction):
    """Open a round on the table's open shoe; betting opens with it. ``round_id``: default derived from the
    request id. Chemin de fer: the participant who holds the bank, ``banker_seat`` and ``banker_player_id`` (a
    player seated there), and the bank, ``bank_cents`` (within the table's bank limits; a Banker who keeps the
    bank puts all of it up again; or ``bank`` in dollars, "1,000"), all three or none (13:69F-4.8(b); the other
    games name no bank)."""

    shoe_id: IdText
    round_id: IdText | None = None
    banker_seat: Seat | None = None
    banker_player_id: PlayerText | None = None
    bank_cents: Cents | None = None
    bank: Dollars | None = None

    @model_validator(mode="before")
    @classmethod
    def _bank_dollars(cls, data: object) -> object:
        return dollars_to_cents(data, "bank", "bank_cents")

    @model_validator(mode="after")
    def _bank_whole(self) -> OpenRoundAction:
        given = [f for f in ("banker_seat", "banker_player_id", "bank_cents") if getattr(self, f) is not None]
        if given and len(given) != 3:
            missing = sorted({"banker_seat", "banker_player_id", "bank_cents"} - set(given))
            raise ValueError(f"a chemin de fer bank names banker_seat, banker_player_id and bank_cents together: "
                             f"{', '.join(missing)} missing")
        return self


class VoidRoundAction(ConsoleAction):
    """Declare the round void (an irregularity the dealer cannot cure); every bet is returned."""

    round_id: IdText
    reason: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


class OfferShoeAction(ConsoleAction):
    """On a table with a curator (profile ``punto_banco_curator``), the dealer offers the shoe to the participant
    ``player_id`` at ``seat``, who holds it from then on (13:69F-3.6(b)); between rounds, when no one holds it."""

    seat: Seat
    player_id: PlayerText


class KeepShoeAction(ConsoleAction):
    """The curator keeps the shoe after ``round_id`` (13:69F-3.11(a)); ``actor`` is the curator (the participant
    holding the shoe), as the console enters it. Refused ``must_pass`` when the Banker's Hand lost the round."""

    round_id: IdText


class PassShoeAction(ConsoleAction):
    """Pass the shoe to the next participant (13:69F-3.11(a)): the curator's own option after ``round_id``
    (``ordered_by`` empty, ``actor`` the curator), or the order of the ``dealer`` or ``floorman`` between rounds
    (3.11(a)2; ``actor`` the one who orders it, ``round_id`` the round just played or empty)."""

    round_id: Annotated[str, Field(max_length=MAX_ID, pattern=r"^([A-Za-z0-9][A-Za-z0-9._:-]*)?$")] = ""
    ordered_by: Literal["", "dealer", "floorman"] = ""


class SeatPlayerAction(ConsoleAction):
    """Register ``player_id`` at ``seat``: only a registered player's bets are taken there."""

    seat: Seat
    player_id: PlayerText


class LeaveSeatAction(ConsoleAction):
    """``player_id`` leaves ``seat`` (bets already made stand)."""

    seat: Seat
    player_id: PlayerText


class NoMoreBetsAction(ConsoleAction):
    """The dealer calls "No more bets" (13:69F-3.7(b)): the round's bet book closes; the dealing service then
    deals."""

    round_id: IdText


class CollectCommissionAction(ConsoleAction):
    """Collect the commission ``player_id`` at ``seat`` owes (accrual tables); no player: every box of the
    seat."""

    seat: Seat
    player_id: Annotated[str, Field(max_length=MAX_ID, pattern=r"^[^\x00-\x1f\x7f]*$")] = ""


class ExpireOptionAction(ConsoleAction):
    """The table's clock (the dealer console): the chemin de fer option pending on ``hand`` of ``round_id`` was
    not decided in time, so the table's default decides it (``OptionDecided`` ``by: default``). Refused
    ``option_not_expired`` before the offer's deadline (the offer's log time plus the table's option
    seconds, by the log's time), ``no_option_pending``, ``option_out_of_turn``."""

    round_id: IdText
    hand: Literal["player", "banker"]


class DecideOptionAction(_Action):
    """A chemin de fer option decided by the participant who controls ``hand`` (13:69F-4.8(b): the Banker for
    the Banker's Hand; 4.8(c): the Dominant Player for the Player's Hand), from their betting terminal:
    ``draw`` true draws a third card, false stands, where the drawing rules leave the choice (an
    ``OptionOffered``). ``seat``/``player_id``: that participant (the actor). Refused ``option_expired``
    (logged at or after the deadline), ``not_controller``, ``no_option_pending``, ``option_out_of_turn``."""

    round_id: IdText
    hand: Literal["player", "banker"]
    draw: bool = Field(description="true: draw a third card; false: stand")
    seat: Seat
    player_id: PlayerText


class PlaceBetAction(_Action):
    """A bet from a betting terminal: ``amount_cents`` (or ``amount`` in dollars, "25.50") on ``wager`` for
    ``player_id`` at ``seat`` (the player is the actor). Its bet id is the command id (in the answer's
    ``BetPlaced``)."""

    round_id: IdText
    seat: Seat
    player_id: PlayerText
    wager: Annotated[str, Field(max_length=MAX_CODE, examples=["banker"])]
    amount_cents: Cents | None = None
    amount: Dollars | None = None

    @model_validator(mode="before")
    @classmethod
    def _dollars(cls, data: object) -> object:
        return dollars_to_cents(data, "amount", "amount_cents")

    @model_validator(mode="after")
    def _stake_given(self) -> PlaceBetAction:
        if self.amount_cents is None:
            raise ValueError("the stake is missing: give amount (dollars, e.g. 25.50) or amount_cents")
        return self


class WithdrawBetAction(_Action):
    """Withdraw ``player_id``'s bet ``bet_id`` before "No more bets" (13:69F-3.2(d))."""

    round_id: IdText
    bet_id: IdText
    player_id: PlayerText


AnyAction = (OpenTableAction | LoadShoeAction | ReadBurnAction | ReadCardAction | CloseShoeAction
             | OpenRoundAction | VoidRoundAction | OfferShoeAction | KeepShoeAction | PassShoeAction
             | SeatPlayerAction | LeaveSeatAction | NoMoreBetsAction | CollectCommissionAction | PlaceBetAction
             | WithdrawBetAction | ExpireOptionAction | DecideOptionAction)

#: action name -> its request type
ACTIONS: Mapping[str, type[_Action]] = {
    "open_table": OpenTableAction,
    "load_shoe": LoadShoeAction,
    "read_burn": ReadBurnAction,
    "read_card": ReadCardAction,
    "close_shoe": CloseShoeAction,
    "open_round": OpenRoundAction,
    "void_round": VoidRoundAction,
    "offer_shoe": OfferShoeAction,
    "keep_shoe": KeepShoeAction,
    "pass_shoe": PassShoeAction,
    "seat_player": SeatPlayerAction,
    "leave_seat": LeaveSeatAction,
    "no_more_bets": NoMoreBetsAction,
    "collect_commission": CollectCommissionAction,
    "place_bet": PlaceBetAction,
    "withdraw_bet": WithdrawBetAction,
    "expire_option": ExpireOptionAction,
    "decide_option": DecideOptionAction,
}
NAME_OF: Mapping[type[_Action], str] = {v: k for k, v in ACTIONS.items()}
