"""``croupier table ...``: a table's actions on the command line, through the command API's gateway
(:mod:`services.command_api.gateway`), the same code path as the HTTP command API; and ``croupier table api``,
which serves that API.

Each action sends one command and prints its answer: ``accepted <action> ...`` with the events it caused, or
``rejected <reason>: <detail>``. ``--request-id`` makes a retry recognisable: the same id at the same table
sends the same command id (the services drop the retry) and, within ``--lookback`` seconds, prints the same
answer (default: a fresh id, printed on stderr). ``--json`` prints the answer as JSON. Exit status: 0
accepted; 2 rejected, or input that cannot become a command (one ``error:`` line; nothing sent); 1 no answer
in time (the command may still be decided: retry with the same ``--request-id``) or a broker that cannot be
reached.

On a secured broker each command topic is written as its one writer principal (``console``, ``bettor``), with
the passwords from ``CROUPIER_KAFKA_PASSWORD_<PRINCIPAL>`` or ``KAFKA_CREDENTIALS_FILE``.

The actions are here; what they share (the options, building and sending an action, printing its answer) is
:mod:`croupier.table_send`'s, and ``round`` and ``api`` are :mod:`croupier.table_api`'s.
"""

from typing import Annotated, Optional

import typer

from croupier.table_api import api, round_view
from croupier.table_send import (ActorOpt, BootOpt, JsonOpt, LookbackOpt, PrefixOpt, RequestOpt, TableOpt,
                                 TimeoutOpt, _action, _common, _limits, _run)

table_app = typer.Typer(help="Run a table: open it from a profile, load a shoe, seat players, rounds, bets, "
                             '"No more bets", card reads, commission (the command API\'s actions).',
                        no_args_is_help=True)


@table_app.command("open")
def open_table(table: TableOpt, actor: ActorOpt,
               profile: Annotated[str, typer.Option(help="The table profile (punto_banco, punto_banco_basic, "
                                                          "no_vig_dragon_7, no_vig_dragon_7_panda_8, casino_night, "
                                                          "casino_night_literal, punto_banco_curator, "
                                                          "chemin_de_fer).")],
               limit: Annotated[Optional[list[str]], typer.Option(
                   "--limit", help="A wager's limits, WAGER=MIN_CENTS:MAX_CENTS (repeatable).")] = None,
               option_seconds: Annotated[Optional[int], typer.Option(
                   help="Chemin de fer: seconds a controller has to decide an option (default 30).")] = None,
               bank_min_cents: Annotated[Optional[int], typer.Option(
                   help="Chemin de fer: the smallest bank, cents (default 10000).")] = None,
               bank_max_cents: Annotated[Optional[int], typer.Option(
                   help="Chemin de fer: the largest bank, cents (default 10000000).")] = None,
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Open (or reconfigure, between rounds) the table from a named profile."""
    from services.command_api import actions as A

    practices = {"option_seconds": option_seconds, "bank_min_cents": bank_min_cents,
                 "bank_max_cents": bank_max_cents}
    chemin = _action(A.ChemPracticesModel, **practices) if any(v is not None for v in practices.values()) else None
    action = _action(A.OpenTableAction, actor=actor, profile=profile, limits=_limits(limit or []), chemin=chemin)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("load-shoe")
def load_shoe(table: TableOpt, actor: ActorOpt,
              shoe_id: Annotated[Optional[str], typer.Option(help="The shoe id (default: from the request id).")
                                 ] = None,
              cut_at: Annotated[Optional[int], typer.Option(help="The patron's cut, cards from the front.")] = None,
              physical: Annotated[bool, typer.Option("--physical", help="A shoe shuffled by hand: its reader "
                                                     "reports the burn and the cards.")] = False,
              decks: Annotated[int, typer.Option(help="Decks (the regulated tables need 6-8).")] = 8,
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Load a new shoe: shuffled by the shoe service (committed and burned at once), or --physical."""
    from services.command_api import actions as A

    rules = _action(A.ShoeRulesModel, decks=decks)
    action = _action(A.LoadShoeAction, actor=actor, shoe_id=shoe_id, cut_at=cut_at, physical=physical, rules=rules)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("burn")
def read_burn(table: TableOpt, actor: ActorOpt, shoe_id: Annotated[str, typer.Option(help="The shoe id.")],
              exposed: Annotated[str, typer.Option(help="The card shown face up, e.g. 7d.")],
              burned: Annotated[str, typer.Option(help="The cards burned face down, comma-separated.")] = "",
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Report a physical shoe's burn as its reader reads it."""
    from services.command_api import actions as A

    cards = [x.strip() for x in burned.split(",") if x.strip()]
    action = _action(A.ReadBurnAction, actor=actor, shoe_id=shoe_id, exposed=exposed, burned=cards)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("card")
def read_card(table: TableOpt, actor: ActorOpt, shoe_id: Annotated[str, typer.Option(help="The shoe id.")],
              round_id: Annotated[str, typer.Option("--round", help="The round id.")],
              number: Annotated[int, typer.Option(help="The card's number in the round (1-6).")],
              card: Annotated[str, typer.Option(help="The card read, e.g. Kd.")],
              hand: Annotated[str, typer.Option(help="Where the dealer placed it: player or banker.")] = "",
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Report a card read from a physical shoe."""
    from services.command_api import actions as A

    action = _action(A.ReadCardAction, actor=actor, shoe_id=shoe_id, round_id=round_id, card_number=number,
                     card=card, hand=hand)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("close-shoe")
def close_shoe(table: TableOpt, actor: ActorOpt, shoe_id: Annotated[str, typer.Option(help="The shoe id.")],
               reason: Annotated[str, typer.Option(help="Why it closes.")] = "end_of_shoe",
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Close the shoe: its order and salt are revealed (the commitment can be verified)."""
    from services.command_api import actions as A

    action = _action(A.CloseShoeAction, actor=actor, shoe_id=shoe_id, reason=reason)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("open-round")
def open_round(table: TableOpt, actor: ActorOpt, shoe_id: Annotated[str, typer.Option(help="The open shoe.")],
               round_id: Annotated[Optional[str], typer.Option("--round", help="The round id (default: from the "
                                                               "request id).")] = None,
               banker_seat: Annotated[Optional[int], typer.Option(
                   help="Chemin de fer: the seat of the participant who holds the bank.")] = None,
               banker: Annotated[Optional[str], typer.Option(
                   help="Chemin de fer: the participant who holds the bank (seated at --banker-seat).")] = None,
               bank_cents: Annotated[Optional[int], typer.Option(
                   help="Chemin de fer: the bank, cents (a Banker who keeps it puts all of it up again).")] = None,
               bank: Annotated[Optional[str], typer.Option(
                   help='Chemin de fer: the bank in dollars ("1,000"), instead of --bank-cents.')] = None,
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Open a round on the open shoe; answered once betting is open. Chemin de fer: name the Banker and the
    bank (--banker-seat, --banker, --bank-cents, all three)."""
    from services.command_api import actions as A

    action = _action(A.OpenRoundAction, actor=actor, shoe_id=shoe_id, round_id=round_id, banker_seat=banker_seat,
                     banker_player_id=banker, bank_cents=bank_cents, bank=bank)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("void-round")
def void_round(table: TableOpt, actor: ActorOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
               reason: Annotated[str, typer.Option(help="Why the round is void.")],
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Void a round (every bet is returned)."""
    from services.command_api import actions as A

    action = _action(A.VoidRoundAction, actor=actor, round_id=round_id, reason=reason)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("offer-shoe")
def offer_shoe(table: TableOpt, actor: ActorOpt, seat: Annotated[int, typer.Option(help="The participant's seat.")],
               player: Annotated[str, typer.Option(help="The participant who becomes the curator.")],
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Offer the shoe to a participant, who holds it as the curator (tables with a curator, 13:69F-3.6(b))."""
    from services.command_api import actions as A

    action = _action(A.OfferShoeAction, actor=actor, seat=seat, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("keep-shoe")
def keep_shoe(table: TableOpt, curator: Annotated[str, typer.Option(help="The curator (the actor).")],
              round_id: Annotated[str, typer.Option("--round", help="The round just played.")],
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """The curator keeps the shoe after the round (13:69F-3.11(a))."""
    from services.command_api import actions as A

    action = _action(A.KeepShoeAction, actor=curator, round_id=round_id)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("pass-shoe")
def pass_shoe(table: TableOpt, actor: Annotated[str, typer.Option(
                  "--actor", help="The curator (own option), or the dealer or floorman who orders it.")],
              round_id: Annotated[str, typer.Option("--round", help="The round just played (may be empty for an "
                                                    "order).")] = "",
              ordered_by: Annotated[str, typer.Option(help="dealer or floorman for an order (3.11(a)2); empty: "
                                                      "the curator's option.")] = "",
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Pass the shoe to the next participant (13:69F-3.11(a))."""
    from services.command_api import actions as A

    action = _action(A.PassShoeAction, actor=actor, round_id=round_id, ordered_by=ordered_by)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("seat")
def seat_player(table: TableOpt, actor: ActorOpt, seat: Annotated[int, typer.Option(help="The seat (1-based).")],
                player: Annotated[str, typer.Option(help="The player id.")],
                request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Seat a player (only a seated player's bets are taken at that seat)."""
    from services.command_api import actions as A

    action = _action(A.SeatPlayerAction, actor=actor, seat=seat, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("leave")
def leave_seat(table: TableOpt, actor: ActorOpt, seat: Annotated[int, typer.Option(help="The seat (1-based).")],
               player: Annotated[str, typer.Option(help="The player id.")],
               request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
               timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """A player leaves a seat (bets already made stand)."""
    from services.command_api import actions as A

    action = _action(A.LeaveSeatAction, actor=actor, seat=seat, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("no-more-bets")
def no_more_bets(table: TableOpt, actor: ActorOpt,
                 round_id: Annotated[str, typer.Option("--round", help="The round.")],
                 request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                 timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Call "No more bets": the bet book closes and the dealing service deals."""
    from services.command_api import actions as A

    action = _action(A.NoMoreBetsAction, actor=actor, round_id=round_id)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("bet")
def place_bet(table: TableOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
              seat: Annotated[int, typer.Option(help="The seat (1-based).")],
              player: Annotated[str, typer.Option(help="The player betting (the actor).")],
              wager: Annotated[str, typer.Option(help="The wager: banker, player, tie, ...")],
              amount: Annotated[Optional[str], typer.Option(
                  help='The stake in dollars as people write it: 25, 25.50, "$1,000".')] = None,
              amount_cents: Annotated[Optional[int], typer.Option(help="The stake in cents (instead of --amount).")
                                      ] = None,
              request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
              timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Place a bet as a betting terminal does (written as the bettor principal)."""
    from services.command_api import actions as A

    action = _action(A.PlaceBetAction, round_id=round_id, seat=seat, player_id=player, wager=wager,
                     amount=amount, amount_cents=amount_cents)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("withdraw")
def withdraw_bet(table: TableOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
                 bet: Annotated[str, typer.Option(help="The bet id (the bet's answer names it).")],
                 player: Annotated[str, typer.Option(help="The player whose bet it is.")],
                 request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                 timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Withdraw a bet before "No more bets"."""
    from services.command_api import actions as A

    action = _action(A.WithdrawBetAction, round_id=round_id, bet_id=bet, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


_HandOpt = Annotated[str, typer.Option(help="The hand whose option it is: player or banker.")]


@table_app.command("expire-option")
def expire_option(table: TableOpt, actor: ActorOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
                  hand: _HandOpt,
                  request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                  timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Chemin de fer, the table clock: the option on HAND was not decided in time; the table's default decides
    it (refused option_not_expired before its deadline)."""
    from services.command_api import actions as A

    action = _action(A.ExpireOptionAction, actor=actor, round_id=round_id, hand=hand)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("decide-option")
def decide_option(table: TableOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
                  hand: _HandOpt,
                  draw: Annotated[bool, typer.Option("--draw/--stand", help="Draw a third card, or stand.")],
                  seat: Annotated[int, typer.Option(help="The controller's seat.")],
                  player: Annotated[str, typer.Option(help="The controller (the actor): the Banker for the "
                                                      "Banker's Hand, the Dominant Player for the Player's.")],
                  request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                  timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Chemin de fer: the hand's controller decides its option, as their betting terminal does (written as the
    bettor principal, 13:69F-4.8(b)-(c))."""
    from services.command_api import actions as A

    action = _action(A.DecideOptionAction, round_id=round_id, hand=hand, draw=draw, seat=seat, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


@table_app.command("collect")
def collect_commission(table: TableOpt, actor: ActorOpt, seat: Annotated[int, typer.Option(help="The seat.")],
                       player: Annotated[str, typer.Option(help="The player (default: every box of the seat).")
                                         ] = "",
                       request_id: RequestOpt = None, bootstrap: BootOpt = None, prefix: PrefixOpt = None,
                       timeout: TimeoutOpt = 10.0, lookback: LookbackOpt = 600.0, as_json: JsonOpt = False) -> None:
    """Collect the commission a player owes (accrual tables)."""
    from services.command_api import actions as A

    action = _action(A.CollectCommissionAction, actor=actor, seat=seat, player_id=player)
    _run(_common(table, request_id, bootstrap, prefix, timeout, lookback, as_json), action)


table_app.command("round")(round_view)
table_app.command("api")(api)
