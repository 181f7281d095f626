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

The parts, each in the module named for it (all re-exported here): :mod:`~services.command_api.fields` (the
request fields' types, an amount in dollars), :mod:`~services.command_api.requests` (the typed actions and their
names), :mod:`~services.command_api.roles` (which role may send what, and who writes it) and
:mod:`~services.command_api.plans` (the command each action becomes).
"""

from __future__ import annotations

from baccarat.table import TABLE_PROFILES
from services.command_api.fields import CardField, Cents, Dollars, IdText, PlayerText, Seat, dollars_to_cents
from services.command_api.plans import ANSWER_STREAM, InvalidAction, Planned, to_command
from services.command_api.requests import (ACTIONS, NAME_OF, AnyAction, ChemPracticesModel, CloseShoeAction,
                                           CollectCommissionAction, ConsoleAction, DecideOptionAction,
                                           ExpireOptionAction, KeepShoeAction, LeaveSeatAction, LimitsModel,
                                           LoadShoeAction, NoMoreBetsAction, OfferShoeAction, OpenRoundAction,
                                           OpenTableAction, PassShoeAction, PlaceBetAction, ReadBurnAction,
                                           ReadCardAction, SeatPlayerAction, ShoeRulesModel, VoidRoundAction,
                                           WithdrawBetAction)
from services.command_api.roles import (BETTOR_ACTIONS, COMMAND_OF, CONSOLE_ACTIONS, ROLE_ACTIONS, ROUND_READERS,
                                        allowed, writer_of)

__all__ = [
    "ACTIONS", "ANSWER_STREAM", "BETTOR_ACTIONS", "COMMAND_OF", "CONSOLE_ACTIONS", "NAME_OF", "ROLE_ACTIONS",
    "ROUND_READERS", "TABLE_PROFILES", "AnyAction", "CardField", "Cents", "ChemPracticesModel", "CloseShoeAction",
    "CollectCommissionAction", "ConsoleAction", "DecideOptionAction", "Dollars", "ExpireOptionAction", "IdText",
    "InvalidAction", "KeepShoeAction", "LeaveSeatAction", "LimitsModel", "LoadShoeAction", "NoMoreBetsAction",
    "OfferShoeAction", "OpenRoundAction", "OpenTableAction", "PassShoeAction", "PlaceBetAction", "Planned",
    "PlayerText", "ReadBurnAction", "ReadCardAction", "Seat", "SeatPlayerAction", "ShoeRulesModel",
    "VoidRoundAction", "WithdrawBetAction", "allowed", "dollars_to_cents", "to_command", "writer_of",
]
