"""What a person can do at a table, and the command each action becomes (pure: no I/O, no clock, no ids drawn).

Every action is a typed request (a pydantic model: the HTTP layer's body and its OpenAPI schema, the command
line's arguments) that :func:`to_command` turns into one command of :mod:`contracts.commands`, for one
command topic, under that topic's one writer principal (:data:`contracts.topics.COMMAND_ROUTES`):

================== ============================ ===================== ===========================================
action             command                      topic (writer)        answered by (the service's events)
================== ============================ ===================== ===========================================
``open_table``     ``OpenTable`` (a profile)    dealing.commands      ``TableOpened``
``load_shoe``      ``LoadShoe`` (+ cut)         shoe.commands         ``ShoeLoaded`` [``ShoeCut``] [``ShoeBurned``]
``read_burn``      ``ReadBurn`` (physical shoe) shoe.commands         ``ShoeBurned``
``read_card``      ``ReadCard`` (physical shoe) shoe.commands         ``CardDrawn`` or ``CardReadRefused``
``close_shoe``     ``CloseShoe``                shoe.commands         ``ShoeClosed`` (the reveal)
``open_round``     ``OpenRound`` [+ the bank]   dealing.commands      ``RoundOpened``, then wagering's
                                                                      ``BettingOpened``
``expire_option``  ``ExpireOption`` (clock)     dealing.commands      ``OptionDecided`` (the table's default)
``decide_option``  ``DecideOption``             dealing.options       ``OptionDecided`` (the controller's)
``void_round``     ``VoidRound`` (a reason)     dealing.commands      ``RoundVoided``
``offer_shoe``     ``OfferShoe`` (curator)      dealing.commands      ``ShoeOffered``
``keep_shoe``      ``KeepShoe`` (curator)       dealing.commands      ``ShoeKept``
``pass_shoe``      ``PassShoe`` (curator, or    dealing.commands      ``ShoePassed``
                   dealer/floorman's order)
``seat_player``    ``SeatPlayer``               wagering.commands     ``PlayerSeated``
``leave_seat``     ``LeaveSeat``                wagering.commands     ``PlayerLeft``
``no_more_bets``   ``CloseBetting``             wagering.commands     [``BetWithdrawn`` late bets] ``BettingClosed``
``place_bet``      ``PlaceBet``                 wagering.bets         ``BetPlaced`` or ``BetRejected``
``withdraw_bet``   ``WithdrawBet``              wagering.bets         ``BetWithdrawn`` or ``BetRejected``
``collect_commission`` ``CollectCommission``    settlement.commands   ``CommissionCollected`` (one per box)
================== ============================ ===================== ===========================================

Any of them may instead be answered by a ``CommandRejected`` (its reason code: ``round_in_progress``,
``no_open_shoe``, ``wrong_topic`` ...). A shuffled shoe is cut when loaded (``cut_at``) and burns itself as it is
loaded; its cards are dealt by the dealing service once "No more bets" is called (there is no "deal"
command: :meth:`~services.command_api.gateway.CommandGateway.round_view` waits for the cards, the result and
the settlement). What the services do not accept as a command (closing a table, a cut after loading) is not
an action.

Roles (:data:`ROLE_ACTIONS`): ``dealer`` sends every console action (a curator's keep or pass is entered at
the console, the curator its actor; a chemin de fer option's expiry is the table clock's, on the console);
``pit`` (the pit boss, the floorman) opens a table, seats and unseats players, voids a round, closes a shoe and
orders the shoe passed (13:69F-3.11(a)2); ``bettor`` (a betting terminal) places and withdraws bets and decides
a chemin de fer option, each for a player its credential is bound to (the gateway checks it, given the
caller's players: :mod:`services.runtime.credentials`); ``cage``, ``surveillance`` and ``analyst`` send nothing.

Money is integer cents; seats are 1-based; ids follow :data:`contracts.bounds.ID_PATTERN` (at most 128
characters of letters, digits and ``. _ : -``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baccarat.drawing import Variant
from baccarat.errors import BaccaratError, InvalidAmount
from baccarat.money import parse_dollars
from baccarat.table import TABLE_PROFILES, Limits, profile
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.bounds import MAX_BURN, MAX_CARD, MAX_CODE, MAX_ID, MAX_TEXT
from contracts.commands import (
    CloseBetting,
    CloseShoe,
    CollectCommission,
    Command,
    DecideOption,
    ExpireOption,
    KeepShoe,
    LeaveSeat,
    LoadShoe,
    OfferShoe,
    OpenRound,
    OpenTable,
    PassShoe,
    PlaceBet,
    ReadBurn,
    ReadCard,
    SeatPlayer,
    VoidRound,
    WithdrawBet,
)
from contracts.tables import ShoeSpec
from services.runtime.translate import table_spec

# The same alphabets as contracts.bounds (without its lookahead, which pydantic's regex engine lacks; the
# contract decoder checks every command again before it is sent: see gateway.check_command).
IdText = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
PlayerText = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=r"^[^\x00-\x1f\x7f]+$")]
CardField = Annotated[str, Field(min_length=2, max_length=MAX_CARD, description='A card: rank A 2-9 T J Q K and '
                                                                                'suit c d h s, e.g. "Kd", "7s"')]
Seat = Annotated[int, Field(ge=1, le=1000, description="The seat, 1-based (the table's seats: max_players)")]
Cents = Annotated[int, Field(ge=0, le=10**12, description="Cents")]
#: an amount in dollars as people write it ("25", "25.50", "$1,000"): :func:`baccarat.money.parse_dollars`
Dollars = Annotated[str, Field(max_length=32, examples=["25.50"],
                               description='Dollars as people write them: "25", "25.50", "$1,000" (at most two '
                                           'decimals); the alternative to the field in cents')]


def dollars_to_cents(data: object, dollars: str, cents: str) -> object:
    """A request body with its ``dollars`` field (text, :func:`baccarat.money.parse_dollars`) turned into
    ``cents`` (integer cents); the dollars text is kept. Raises ``ValueError`` (a 422 naming the field) for
    text that is not an amount, or for both fields given."""
    if not isinstance(data, dict) or data.get(dollars) is None:
        return data
    if data.get(cents) is not None:
        raise ValueError(f"give {dollars} (dollars) or {cents}, not both")
    try:
        return {**data, cents: parse_dollars(str(data[dollars]), dollars)}
    except InvalidAmount as e:
        raise ValueError(str(e)) from None


class InvalidAction(ValueError):
    """An action that cannot become a command (unknown profile, a table configuration the rules core
    refuses). ``reason`` is a stable code (``unknown_profile``, ``invalid_config``), ``field`` the request
    field at fault."""

    def __init__(self, reason: str, detail: str, field: str = ""):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.field = field


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

#: action name -> the tag of the command it becomes (so its topic and writer: :func:`writer_of`)
COMMAND_OF: Mapping[str, str] = {name: ("close_betting" if name == "no_more_bets" else name) for name in ACTIONS}
CONSOLE_ACTIONS = frozenset(n for n, t in ACTIONS.items() if issubclass(t, ConsoleAction))
#: a betting terminal's actions: each acts for the player it names (``player_id``, the actor)
BETTOR_ACTIONS = frozenset({"place_bet", "withdraw_bet", "decide_option"})
#: what each role may send; a role not here (or with an empty set) sends nothing
ROLE_ACTIONS: Mapping[str, frozenset[str]] = {
    "dealer": CONSOLE_ACTIONS,
    "pit": frozenset({"open_table", "seat_player", "leave_seat", "void_round", "close_shoe", "pass_shoe"}),
    "bettor": BETTOR_ACTIONS,
    "cage": frozenset(),
    "surveillance": frozenset(),
    "analyst": frozenset(),
}
#: roles that may read a round as dealt (cards, result, every bet's settlement: player ids)
ROUND_READERS = frozenset({"dealer", "pit", "surveillance", "cage"})

#: the events topic of the service that decides each command topic's commands
ANSWER_STREAM: Mapping[str, str] = {
    T.SHOE_COMMANDS: T.SHOE_EVENTS,
    T.DEALING_COMMANDS: T.DEALING_EVENTS,
    T.WAGERING_COMMANDS: T.WAGERING_EVENTS,
    T.WAGERING_BETS: T.WAGERING_EVENTS,
    T.DEALING_OPTIONS: T.DEALING_EVENTS,
    T.SETTLEMENT_COMMANDS: T.SETTLEMENT_EVENTS,
}


def writer_of(action: str) -> str:
    """The principal kind that writes ``action``'s command topic (``console`` or ``bettor``); raises
    ``KeyError`` for an unknown action."""
    return T.ROUTES[T.TOPIC_OF[COMMAND_OF[action]]].writer


def allowed(role: str, action: str) -> bool:
    """Whether ``role`` may send ``action`` (:data:`ROLE_ACTIONS`)."""
    return action in ROLE_ACTIONS.get(role, frozenset())


@dataclass(frozen=True, slots=True)
class Planned:
    """What an action becomes: ``command`` for ``topic`` (base name), sent by ``actor``; its answer comes on
    ``answer_stream``. ``then_betting_opened``: the answer also waits for the wagering service's
    ``BettingOpened`` the ``RoundOpened`` causes (``open_round``). ``ends_with``: the event tags that end
    the decision when it is accepted (the services emit it last), None when the count of its events is not
    known beforehand (a seat's every commission box); a refusal is always one event."""

    action: str
    topic: str
    command: Command
    actor: str
    answer_stream: str
    then_betting_opened: bool = False
    ends_with: frozenset[str] | None = None

    @property
    def writer(self) -> str:
        """The principal kind that writes :attr:`topic` (``console``, ``bettor``)."""
        return T.ROUTES[self.topic].writer


def _open_table(a: OpenTableAction) -> OpenTable:
    try:
        cfg = profile(a.profile)
    except BaccaratError as e:
        raise InvalidAction("unknown_profile", str(e), "profile") from None
    if a.limits:
        try:
            limits = dict(cfg.limits)
            for name, lim in a.limits.items():
                limits[Wager.parse(name)] = Limits(lim.min_cents, lim.max_cents)
            cfg = dataclasses.replace(cfg, limits=limits)
        except BaccaratError as e:
            raise InvalidAction("invalid_config", str(e), "limits") from None
    if a.chemin is not None:
        if cfg.variant is not Variant.CHEMIN_DE_FER:
            raise InvalidAction("invalid_config", f"profile {a.profile!r} is not chemin de fer: it has no option "
                                                  "time or bank to configure", "chemin")
        given = {k: v for k, v in a.chemin.model_dump().items() if v is not None}
        try:
            cfg = dataclasses.replace(cfg, chemin=dataclasses.replace(cfg.chemin, **given))
        except BaccaratError as e:
            raise InvalidAction("invalid_config", str(e), "chemin") from None
    return OpenTable(config=table_spec(cfg))


def to_command(action: _Action, derived_id: str) -> Planned:
    """The command ``action`` becomes. ``derived_id``: an id derived from the request (used for a shoe or
    round id the action leaves to the API; never drawn here). Raises :class:`InvalidAction` for an unknown
    profile or a table configuration the rules core refuses (``invalid_config``), and ``TypeError`` for a
    type that is not an action."""
    name = NAME_OF.get(type(action))
    if name is None:
        raise TypeError(f"{type(action).__name__} is not a command API action")
    actor = action.player_id if isinstance(action, (PlaceBetAction, WithdrawBetAction, DecideOptionAction)) \
        else action.actor  # type: ignore[attr-defined]
    cmd: Command
    if isinstance(action, OpenTableAction):
        cmd = _open_table(action)
    elif isinstance(action, LoadShoeAction):
        r = action.rules
        cmd = LoadShoe(shoe_id=action.shoe_id or f"shoe-{derived_id}",
                       rules=ShoeSpec(decks=r.decks, end_card_offset=r.end_card_offset, burn=r.burn,
                                      end_of_shoe=r.end_of_shoe, min_cut_depth=r.min_cut_depth),
                       physical=action.physical, cut_at=action.cut_at)
    elif isinstance(action, ReadBurnAction):
        cmd = ReadBurn(shoe_id=action.shoe_id, exposed=action.exposed, burned=list(action.burned))
    elif isinstance(action, ReadCardAction):
        cmd = ReadCard(shoe_id=action.shoe_id, round_id=action.round_id, card_number=action.card_number,
                       card=action.card, hand=action.hand)
    elif isinstance(action, CloseShoeAction):
        cmd = CloseShoe(shoe_id=action.shoe_id, reason=action.reason)
    elif isinstance(action, OpenRoundAction):
        cmd = OpenRound(round_id=action.round_id or f"round-{derived_id}", shoe_id=action.shoe_id,
                        banker_seat=action.banker_seat or 0, banker_player_id=action.banker_player_id or "",
                        bank_cents=action.bank_cents or 0)
    elif isinstance(action, VoidRoundAction):
        cmd = VoidRound(round_id=action.round_id, reason=action.reason)
    elif isinstance(action, OfferShoeAction):
        cmd = OfferShoe(seat=action.seat, player_id=action.player_id)
    elif isinstance(action, KeepShoeAction):
        cmd = KeepShoe(round_id=action.round_id)
    elif isinstance(action, PassShoeAction):
        cmd = PassShoe(round_id=action.round_id, ordered_by=action.ordered_by)
    elif isinstance(action, SeatPlayerAction):
        cmd = SeatPlayer(seat=action.seat, player_id=action.player_id)
    elif isinstance(action, LeaveSeatAction):
        cmd = LeaveSeat(seat=action.seat, player_id=action.player_id)
    elif isinstance(action, NoMoreBetsAction):
        cmd = CloseBetting(round_id=action.round_id)
    elif isinstance(action, CollectCommissionAction):
        cmd = CollectCommission(seat=action.seat, player_id=action.player_id)
    elif isinstance(action, ExpireOptionAction):
        cmd = ExpireOption(round_id=action.round_id, hand=action.hand)
    elif isinstance(action, DecideOptionAction):
        cmd = DecideOption(round_id=action.round_id, hand=action.hand, draw=action.draw, seat=action.seat,
                           player_id=action.player_id)
    elif isinstance(action, PlaceBetAction):
        cmd = PlaceBet(round_id=action.round_id, seat=action.seat, player_id=action.player_id,
                       wager=action.wager, amount_cents=action.amount_cents or 0)
    else:
        assert isinstance(action, WithdrawBetAction)
        cmd = WithdrawBet(round_id=action.round_id, bet_id=action.bet_id)
    topic = T.TOPIC_OF[str(type(cmd).__struct_config__.tag)]
    return Planned(name, topic, cmd, actor, ANSWER_STREAM[topic], then_betting_opened=isinstance(cmd, OpenRound),
                   ends_with=_ends_with(cmd))


#: the event that ends each command's accepted decision (the services emit it last)
_LAST_EVENT = {
    OpenTable: "table_opened", ReadBurn: "shoe_burned", ReadCard: "card_drawn", CloseShoe: "shoe_closed",
    OpenRound: "round_opened", VoidRound: "round_voided", SeatPlayer: "player_seated", LeaveSeat: "player_left",
    OfferShoe: "shoe_offered", KeepShoe: "shoe_kept", PassShoe: "shoe_passed",
    CloseBetting: "betting_closed", PlaceBet: "bet_placed", WithdrawBet: "bet_withdrawn",
    ExpireOption: "option_decided", DecideOption: "option_decided",
}


def _ends_with(cmd: Command) -> frozenset[str] | None:
    """The tags of the event an accepted ``cmd``'s decision ends with; None when not known beforehand."""
    if isinstance(cmd, LoadShoe):  # loaded [, cut] [, burned]: a physical shoe is burned by its reader
        return frozenset({"shoe_burned" if not cmd.physical else "shoe_cut" if cmd.cut_at is not None
                          else "shoe_loaded"})
    if isinstance(cmd, CollectCommission):  # one event per box: a seat's every box is not counted here
        return frozenset({"commission_collected"}) if cmd.player_id else None
    return frozenset({_LAST_EVENT[type(cmd)]})
