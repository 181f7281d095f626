"""Commands: what callers ask a service to do. Imperative names, explicit snake_case tags never reused.

A command travels in a :class:`contracts.envelope.CommandEnvelope` carrying its own ``command_id``; a command
already handled (its id is in the service's rebuilt state) produces nothing new. Every string and list has a
maximum enforced on decode, ids a pattern (:mod:`contracts.bounds`): an over-long field makes the command
undecodable (dead-lettered with the error naming the field).
"""

from __future__ import annotations

from typing import Union

import msgspec

from contracts.bounds import BurnedCards, CardText, Code, Id, OptId, OptPlayerId, PlayerId, ShoeOrder, Text
from contracts.tables import ShoeSpec, TableSpec


from contracts.base import Command  # noqa: E402  (re-exported: the base of every command)


# ---- shoe.commands (the console) and shoe.draws (DrawCard: the dealing service) ---------------------
class LoadShoe(Command, frozen=True, tag="load_shoe"):
    """Load a new shoe. ``order``: card texts first-out first (``"Kd"``, ``"7s"``), a supplied physical or
    pre-shuffled order; empty: the shoe service shuffles with a CSPRNG. ``physical``: the order is unknown
    (a shoe dealt by hand); card reads are then checked against the remaining composition, and the burn is
    read (``ReadBurn``). ``cut_at``: the patron's cut in cards from the front (None: no cut); on a physical
    shoe it is recorded (``ShoeCut``) and checked against the minimum cut depth."""

    shoe_id: Id
    rules: ShoeSpec = msgspec.field(default_factory=ShoeSpec)
    order: ShoeOrder = msgspec.field(default_factory=list)
    physical: bool = False
    cut_at: int | None = None


class DrawCard(Command, frozen=True, tag="draw_card"):
    """Hand the next card of the shoe to ``round_id`` (sent by the dealing service)."""

    shoe_id: Id
    round_id: Id
    card_number: int


class ReadCard(Command, frozen=True, tag="read_card"):
    """A card read from a physical shoe for ``round_id`` (validated against the remaining composition).
    ``hand``: where the dealer placed it (``player`` | ``banker``), when known; a Player third card the rules
    did not allow is then handled by 13:69F-3.12(a)."""

    shoe_id: Id
    round_id: Id
    card_number: int
    card: CardText
    hand: Code = ""


class ReadBurn(Command, frozen=True, tag="read_burn"):
    """The burn of a physical shoe as its reader reports it, before the first round: ``exposed`` (shown face
    up), then ``burned`` (face down, in order). Checked card by card against the remaining composition and
    against the burn rule (how many cards follow the exposed one); a refusal is a ``CommandRejected`` with a
    reason code. A shoe whose order is known burns itself when loaded."""

    shoe_id: Id
    exposed: CardText
    burned: BurnedCards = msgspec.field(default_factory=list)


class CloseShoe(Command, frozen=True, tag="close_shoe"):
    """Close the shoe and reveal its order and salt (the commitment can then be verified)."""

    shoe_id: Id
    reason: Text = "end_of_shoe"


# ---- dealing.commands ------------------------------------------------------------------------------
class OpenTable(Command, frozen=True, tag="open_table"):
    """Open (or reconfigure, between rounds) a table with its game configuration."""

    config: TableSpec = msgspec.field(default_factory=TableSpec)


class OpenRound(Command, frozen=True, tag="open_round"):
    """Open a round of play on the table's current shoe; betting opens with it. Chemin de fer: the
    participant who holds the bank (``banker_seat``, ``banker_player_id``) and its size ``bank_cents``,
    within the table's bank limits; the other games leave them at 0 and ``""``."""

    round_id: Id
    shoe_id: Id
    banker_seat: int = 0
    banker_player_id: OptPlayerId = ""
    bank_cents: int = 0


class VoidRound(Command, frozen=True, tag="void_round"):
    """Declare the round void (an irregularity the dealer cannot cure); every bet is returned."""

    round_id: Id
    reason: Text


class OfferShoe(Command, frozen=True, tag="offer_shoe"):
    """The dealer calling the game offers the shoe to the participant ``player_id`` at ``seat``, who becomes its
    curator (13:69F-3.6(b)); on a table with a curator only, when no one holds the shoe, between rounds."""

    seat: int
    player_id: PlayerId


class KeepShoe(Command, frozen=True, tag="keep_shoe"):
    """The curator keeps the shoe after ``round_id`` (13:69F-3.11(a)); the command's actor is the curator. Refused
    ``must_pass`` when the Banker's Hand lost that round (3.11(a)1: the shoe has passed by rule)."""

    round_id: Id


class PassShoe(Command, frozen=True, tag="pass_shoe"):
    """Pass the shoe to the next participant (13:69F-3.11(a)). ``ordered_by`` empty: the curator's own option
    after ``round_id`` (the actor is the curator); ``dealer`` | ``floorman``: the order of the dealer or the
    floorman at the table (3.11(a)2), any time between rounds (``round_id`` may then be empty)."""

    round_id: OptId = ""
    ordered_by: Code = ""


class ExpireOption(Command, frozen=True, tag="expire_option"):
    """The table's clock (the dealer console, on ``dealing.commands``): the chemin de fer option pending on
    ``hand`` (``player`` | ``banker``) of ``round_id`` was not decided in time; the table's configured
    default decides it. Refused ``option_not_expired`` before the offer's deadline by the log's time."""

    round_id: Id
    hand: Code


# ---- dealing.options (DecideOption: the participants' terminals) -----------------------------------
class DecideOption(Command, frozen=True, tag="decide_option"):
    """A chemin de fer option decision (draw or stand) on ``hand`` of ``round_id`` by the participant who
    controls that hand (13:69F-4.8(b)-(c)): the Banker for the Banker's Hand, the Dominant Player for the
    Player's Hand; ``seat``/``player_id`` must be that participant, and the terminal's actor too."""

    round_id: Id
    hand: Code
    draw: bool
    seat: int
    player_id: PlayerId


# ---- wagering.bets (PlaceBet, WithdrawBet: bettors) and wagering.commands (the console) ------------------
class PlaceBet(Command, frozen=True, tag="place_bet"):
    """Place a bet of ``amount_cents`` on ``wager`` for ``seat``/``player_id``; the bet id is the command id."""

    round_id: Id
    seat: int
    player_id: PlayerId
    wager: Code
    amount_cents: int


class WithdrawBet(Command, frozen=True, tag="withdraw_bet"):
    """Withdraw a bet before "No more bets" (13:69F-3.2(d))."""

    round_id: Id
    bet_id: Id


class SeatPlayer(Command, frozen=True, tag="seat_player"):
    """Register ``player_id`` at ``seat`` of the table (the floor's player registry, fed by the dealer console
    on ``wagering.commands``): only a registered player may bet there (``unknown_player``). Several players
    may be registered at one seat (a patron betting behind); at most ``MAX_SEATED_PLAYERS`` a table."""

    seat: int
    player_id: PlayerId


class LeaveSeat(Command, frozen=True, tag="leave_seat"):
    """``player_id`` leaves ``seat``: no further bet of theirs is taken there (bets already made stand)."""

    seat: int
    player_id: PlayerId


class CloseBetting(Command, frozen=True, tag="close_betting"):
    """The dealer calls "No more bets" (13:69F-3.7(b)): the bet book of the round is closed."""

    round_id: Id


# ---- settlement.commands ---------------------------------------------------------------------------
class CollectCommission(Command, frozen=True, tag="collect_commission"):
    """Collect the commission ``player_id`` at ``seat`` owes (accrual tables: end of shoe, or when the patron
    leaves); each player has his own commission box. ``player_id`` empty: every player's box at the seat."""

    seat: int
    player_id: OptPlayerId = ""


from contracts.cage import (  # noqa: E402  (the cage's commands)
    BuyIn, CountDropBox, HandOverCredit, IssueFill, ReceiveCredit, ReceiveFill, RecordCloser, RecordOpener,
    RedeemChips, RemoveDropBox, RequestCredit, RequestFill, SetCreditLine, DrawMarker, SettleMarker,
)

AnyCommand = Union[
    LoadShoe, DrawCard, ReadCard, CloseShoe, OpenTable, OpenRound, VoidRound, PlaceBet, WithdrawBet,
    CloseBetting, CollectCommission, ReadBurn, SeatPlayer, LeaveSeat, OfferShoe, KeepShoe, PassShoe,
    ExpireOption, DecideOption,
    RecordOpener, RecordCloser, RequestFill, IssueFill, ReceiveFill, RequestCredit, HandOverCredit, ReceiveCredit,
    SetCreditLine, BuyIn, RemoveDropBox, CountDropBox, RedeemChips, DrawMarker, SettleMarker,
]
ShoeCommand = Union[LoadShoe, DrawCard, ReadCard, CloseShoe, ReadBurn]
DealingCommand = Union[OpenTable, OpenRound, VoidRound, OfferShoe, KeepShoe, PassShoe, ExpireOption, DecideOption]
WageringCommand = Union[PlaceBet, WithdrawBet, CloseBetting, SeatPlayer, LeaveSeat]
SettlementCommand = Union[CollectCommission]
CageCommand = Union[RecordOpener, RecordCloser, RequestFill, IssueFill, ReceiveFill, RequestCredit, HandOverCredit,
                    ReceiveCredit, SetCreditLine, BuyIn, RemoveDropBox, CountDropBox, RedeemChips, DrawMarker,
                    SettleMarker]
