"""What an action becomes (pure: no I/O, no clock, no ids drawn): :func:`to_command` turns a request of
:mod:`services.command_api.requests` into a :class:`Planned` command, its topic, its actor, the events topic that
answers it and the event its accepted decision ends with; :class:`InvalidAction` when it cannot become one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from baccarat.drawing import Variant
from baccarat.errors import BaccaratError
from baccarat.table import Limits, profile
from baccarat.wagers import Wager
from contracts import topics as T
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
from services.command_api.requests import (
    NAME_OF,
    CloseShoeAction,
    CollectCommissionAction,
    DecideOptionAction,
    ExpireOptionAction,
    KeepShoeAction,
    LeaveSeatAction,
    LoadShoeAction,
    NoMoreBetsAction,
    OfferShoeAction,
    OpenRoundAction,
    OpenTableAction,
    PassShoeAction,
    PlaceBetAction,
    ReadBurnAction,
    ReadCardAction,
    SeatPlayerAction,
    VoidRoundAction,
    WithdrawBetAction,
    _Action,
)
from services.runtime.translate import table_spec


class InvalidAction(ValueError):
    """An action that cannot become a command (unknown profile, a table configuration the rules core
    refuses). ``reason`` is a stable code (``unknown_profile``, ``invalid_config``), ``field`` the request
    field at fault."""

    def __init__(self, reason: str, detail: str, field: str = ""):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.field = field



#: the events topic of the service that decides each command topic's commands
ANSWER_STREAM: Mapping[str, str] = {
    T.SHOE_COMMANDS: T.SHOE_EVENTS,
    T.DEALING_COMMANDS: T.DEALING_EVENTS,
    T.WAGERING_COMMANDS: T.WAGERING_EVENTS,
    T.WAGERING_BETS: T.WAGERING_EVENTS,
    T.DEALING_OPTIONS: T.DEALING_EVENTS,
    T.SETTLEMENT_COMMANDS: T.SETTLEMENT_EVENTS,
}



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
