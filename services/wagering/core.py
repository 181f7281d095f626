"""The wagering service's decider: each round's bet book until "No more bets".

Commands: ``PlaceBet`` and ``WithdrawBet`` on ``wagering.bets`` (the bettors' topic), ``CloseBetting``,
``SeatPlayer`` and ``LeaveSeat`` on ``wagering.commands`` (the dealer console's). Inputs: ``dealing.events``
(the table's configuration, rounds opened and voided). Events (``wagering.events``): ``BettingOpened``,
``BetPlaced``, ``BetRejected`` (a stable reason code), ``BetWithdrawn``, ``BettingClosed`` (the final book),
``PlayerSeated``, ``PlayerLeft``, ``CommandRejected``.

Who may bet: a player the console registered at the seat (``SeatPlayer``; else ``unknown_player``), through a
terminal that names that player as the command's actor (``actor_mismatch``); a bet is withdrawn only by the
player who made it (``not_your_bet``).

Rules enforced: the wagers the table offers, table minimum per bet and maximum per seat and wager, seats
1..max players (``invalid_seat``), on a casino-night table at most ``max_players`` distinct players seated and
betting in a round (``over_max_players``, 13:47-20.20(b)1), the bonus wager only with a Banker or Player bet on the same seat when the table requires
it (13:69F-3.2(b)) and no withdrawal of the base bet such a bonus bet needs (``bonus_depends_on_bet``: the
bonus bet is withdrawn first), stakes in whole rounding units (``stake_not_multiple_of_unit``), at most ``MAX_BETS_PER_ROUND`` bets a
round (``too_many_bets``: the closed book must fit one Kafka record), nothing
made, increased or withdrawn after "No more bets" (13:69F-3.2(d)), and nothing made or withdrawn once any
card of the round exists (``cards_dealt``: a ``CardDealt`` or a card ``Irregularity`` of the round on
``dealing.events``, e.g. a physical shoe's card read before "No more bets"; 3.2(d), 3.7(b)). A
``CloseBetting`` after such a card still closes the book (it changes no bet). "No more bets" is the
log's time of the ``CloseBetting``: a bet the log holds after it, though read before it (the bettors' topic
is another topic), is returned by the call (``BetWithdrawn`` reason ``betting_closed``); a bet in the call's
own millisecond stands; a chemin de fer banco suivi in time returns the other wagers at the close
(``BetWithdrawn`` reason ``banco_suivi``), a late one is returned and displaces nothing. The times are the
brokers' append times, comparable as far as the brokers' clocks agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from baccarat.drawing import Variant
from baccarat.errors import BaccaratError, InvalidAmount, UnknownWager, WagerNotOffered
from baccarat.table import TableConfig
from baccarat.wagers import BANCO_WAGERS, BONUS_WAGERS, MAIN_WAGERS, Wager
from contracts import topics as T
from contracts.bounds import MAX_BETS_PER_ROUND, MAX_SEATED_PLAYERS
from contracts.commands import CloseBetting, LeaveSeat, PlaceBet, SeatPlayer, WithdrawBet
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BetLine,
    BetPlaced,
    BetRejected,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    CardDealt,
    CommandRejected,
    Irregularity,
    PlayerLeft,
    PlayerSeated,
    RoundOpened,
    RoundResolved,
    RoundVoided,
    TableOpened,
)
from contracts.tables import TableSpec
from services.configs import config_of
from services.history import History
from services.runtime.core import Emit, Send


@dataclass(frozen=True, slots=True)
class Book:
    """One round's bets. ``status``: ``pending`` (dealing opened the round, betting not yet opened) |
    ``open`` | ``closed``. ``opened_by``: the ``RoundOpened`` event (id, time) that betting follows."""

    round_id: str
    status: str
    opened_by: tuple[str, datetime] | None = None
    bets: dict[str, BetLine] = field(default_factory=dict)
    voided_by: tuple[str, datetime] | None = None
    #: a card of the round exists (dealing.events said so): no bet may be made or withdrawn
    carded: bool = False
    #: bet id -> the log's time of its ``BetPlaced`` (the broker's append time of its ``PlaceBet``), for each
    #: bet of ``bets``: "No more bets" returns those the log holds after the call
    placed_at: dict[str, datetime] = field(default_factory=dict)
    #: chemin de fer: the Banker's (seat, player id) and the bank in cents, from ``RoundOpened``
    bank: tuple[int, str, int] | None = None
    #: chemin de fer: the participant who may call banco suivi in this round (whose banco lost the last round
    #: against the same Banker)
    suivi: str = ""
    #: the shoe the round is dealt from (its ``RoundOpened``): the round's events name it in their envelope
    shoe_id: str = ""


def _with_shoe(state: "WageringState", outs: list[Emit | Send]) -> list[Emit | Send]:
    """``outs`` with each event about a round whose book is open (``BetPlaced``, ``BetRejected``,
    ``BettingClosed`` ...) carrying that round's shoe id in its envelope (an export's ``shoe_id`` column)."""
    out: list[Emit | Send] = []
    for o in outs:
        if isinstance(o, Emit) and o.shoe_id is None:
            b = state.books.get(o.round_id or getattr(o.payload, "round_id", "") or "")
            if b is not None and b.shoe_id:
                o = replace(o, shoe_id=b.shoe_id)
        out.append(o)
    return out


@dataclass(frozen=True, slots=True)
class WageringState:
    """One table's betting: the live books and what is left of the closed ones.

    ``spec``: the table's configuration as it came on the wire (``TableOpened``); :attr:`config` derives the
    rules core's :class:`TableConfig`. ``books``: the books of rounds whose betting has not closed (pending
    or open; at most two at once, as dealing opens a round only after the last one ended). ``closed``: the
    ids of every round whose book closed; the book itself is dropped at ``BettingClosed``, since no decision
    reads a closed book's bets (a late command on it is refused ``betting_closed`` and inputs about it
    change nothing). ``seated``: the player registry, (seat, player id) of every registered player
    (``SeatPlayer`` until ``LeaveSeat``; at most ``MAX_SEATED_PLAYERS``).
    """

    table_id: str
    spec: TableSpec | None = None
    books: dict[str, Book] = field(default_factory=dict)
    closed: History = field(default_factory=History)
    seated: frozenset[tuple[int, str]] = frozenset()
    #: chemin de fer: the last closed round's banco (round id, Banker's player id, the banco's player id) until
    #: its result, then the banco suivi right it gives the next round (``""`` round id once resolved)
    last_banco: tuple[str, str, str] | None = None

    @property
    def config(self) -> TableConfig | None:
        """The rules core's table configuration (None until ``TableOpened``)."""
        return config_of(self.spec) if self.spec is not None else None


#: the refusal of a bet made or withdrawn once a card of its round exists (13:69F-3.2(d), 3.7(b))
_CARDS_DEALT = ("cards_dealt", 'a card of this round is already out of the shoe: no bet may be made or '
                               'withdrawn (13:69F-3.2(d), 3.7(b))')


def _over_player_cap(cfg: TableConfig | None, players: set[str], player_id: str) -> tuple[str, str] | None:
    """``("over_max_players", detail)`` when ``player_id`` would be one player more than a casino-night table
    accommodates (13:47-20.20(b)1: at most ``max_players``, 14 players, however many share a seat); None
    otherwise, and always on a punto banco table, whose ``max_players`` counts seats (players may bet behind).
    ``players``: the distinct player ids already there (seated, or betting in the round)."""
    if cfg is None or cfg.variant is not Variant.CASINO_NIGHT or player_id in players:
        return None
    if len(players) < cfg.max_players:
        return None
    return ("over_max_players", (f"the table accommodates at most {cfg.max_players} players "
                                 f"(13:47-20.20(b)1) and has {len(players)}: {player_id!r} would be one more"))


_BANCO = frozenset(w.value for w in BANCO_WAGERS)


def _against_the_bank(b: Book, c: PlaceBet, wager: Wager, at: datetime) -> tuple[str, str] | None:
    """Chemin de fer: why a wager against the bank is refused before the deal, or None. ``no_bank`` (the
    round names no Banker), ``banker_cannot_wager`` (the Banker, or the Banker's seat, against the Banker's
    Hand), ``no_banco_suivi`` (banco suivi by anyone but the participant whose banco lost the last round
    against this Banker), ``banco_called`` (the whole bank is already taken), ``banco_needs_whole_bank`` (a
    banco is a wager of the whole bank, made before any other; banco suivi the whole bank, whatever was
    wagered: the other wagers are returned at "No more bets" if it is in time), ``bank_cannot_cover`` (the
    wagers would exceed the bank). Amounts in cents; 13:69F-4.8.

    ``at``: the command's log time. A banco or banco suivi the log holds *after* it, though read first, neither
    blocks nor covers this wager; the close settles which stands (see :meth:`WageringCore._close`)."""
    if b.bank is None:
        return "no_bank", "this chemin de fer round names no Banker"
    seat, banker, bank = b.bank
    if c.player_id == banker or c.seat == seat:
        return "banker_cannot_wager", "the Banker does not wager against the Banker's Hand (13:69F-4.8(b))"
    # a banco (suivi) logged after this command is, by the log, not there yet
    bets = {bid: x for bid, x in b.bets.items() if x.wager not in _BANCO or b.placed_at.get(bid, at) <= at}
    covered = sum(x.amount_cents for x in bets.values())
    if wager is Wager.BANCO_SUIVI:
        if c.player_id != b.suivi:
            return "no_banco_suivi", ("banco suivi is called only by the participant whose banco lost the last "
                                      "round against this Banker")
        if any(x.wager == Wager.BANCO_SUIVI.value for x in bets.values()):
            return "banco_called", "banco suivi was called: the whole bank is taken"
        if c.amount_cents != bank:
            return "banco_needs_whole_bank", f"banco suivi is a wager of the whole bank of {bank} cents"
        return None
    if any(x.wager in _BANCO for x in bets.values()):
        return "banco_called", "banco was called: the whole bank is taken"
    if wager is Wager.BANCO and (c.amount_cents != bank or covered):
        return "banco_needs_whole_bank", (f"banco is a wager of the whole bank of {bank} cents before any other "
                                          f"wager; {c.amount_cents} offered, {covered} already wagered")
    if covered + c.amount_cents > bank:
        return "bank_cannot_cover", (f"the bank of {bank} cents cannot cover {covered + c.amount_cents} cents of "
                                     f"wagers ({covered} already wagered)")
    return None


def _with_book(state: WageringState, book: Book) -> WageringState:
    return replace(state, books={**state.books, book.round_id: book})


class WageringCore:
    """The wagering service's pure decide/evolve/react over :class:`WageringState`."""

    name = "wagering"
    state_type = WageringState
    own_stream = T.WAGERING_EVENTS
    private_streams: tuple[str, ...] = ()
    command_streams = (T.WAGERING_COMMANDS, T.WAGERING_BETS)
    #: a bet the log holds at the very millisecond of "No more bets" is in time (see :meth:`_close`), so of
    #: two records of one batch at one log time the bet is decided before the call
    same_time_first = (T.WAGERING_BETS,)
    #: a bet the log held before "No more bets" (or any dealer's command) is read before the command is
    #: decided, even when it comes in a later fetch (its partition led by another broker)
    catch_up = ((T.WAGERING_COMMANDS, T.WAGERING_BETS),)
    input_streams = (T.DEALING_EVENTS,)

    def initial(self, table_id: str) -> WageringState:
        return WageringState(table_id)

    def evolve(self, state: WageringState, env: Envelope) -> WageringState:
        e = env.payload
        if isinstance(e, BettingOpened):
            b = state.books.get(e.round_id) or Book(e.round_id, "open")
            return _with_book(state, replace(b, status="open"))
        if isinstance(e, BetPlaced):
            b = state.books[e.round_id]
            line = BetLine(bet_id=e.bet_id, seat=e.seat, player_id=e.player_id, wager=e.wager,
                           amount_cents=e.amount_cents)
            return _with_book(state, replace(b, bets={**b.bets, e.bet_id: line},
                                             placed_at={**b.placed_at, e.bet_id: env.occurred_at}))
        if isinstance(e, BetWithdrawn):
            b = state.books[e.round_id]
            bets, placed_at = dict(b.bets), dict(b.placed_at)
            bets.pop(e.bet_id, None)
            placed_at.pop(e.bet_id, None)
            return _with_book(state, replace(b, bets=bets, placed_at=placed_at))
        if isinstance(e, PlayerSeated):
            return replace(state, seated=state.seated | {(e.seat, e.player_id)})
        if isinstance(e, PlayerLeft):
            return replace(state, seated=state.seated - {(e.seat, e.player_id)})
        if isinstance(e, BettingClosed):  # the book is final: keep only the fact that it closed
            # the Banker comes from the event itself, never from the input RoundOpened: a rebuild folds every
            # own event before any input, and must reach the same last_banco as the live service
            books = {k: v for k, v in state.books.items() if k != e.round_id}
            banco = next((x.player_id for x in e.bets if x.wager in _BANCO), None)
            last = (e.round_id, e.banker_player_id, banco) if e.banker_player_id and banco else None
            return replace(state, books=books, closed=state.closed.put(e.round_id), last_banco=last)
        return state

    def absorb(self, state: WageringState, env: Envelope) -> WageringState:
        e = env.payload
        if isinstance(e, TableOpened):
            config_of(e.config)  # validated (and cached) as it arrives
            return replace(state, spec=e.config)
        if isinstance(e, RoundOpened):
            if e.round_id in state.closed:  # replayed after our own BettingClosed: nothing left to do
                return state
            b = state.books.get(e.round_id)
            bank = (e.banker_seat, e.banker_player_id, e.bank_cents) if e.banker_player_id else None
            last = state.last_banco
            suivi = last[2] if bank and last and not last[0] and last[1] == bank[1] else ""
            if b is None:
                b = Book(e.round_id, "pending", (env.event_id, env.occurred_at), bank=bank, suivi=suivi,
                         shoe_id=e.shoe_id)
            else:
                b = replace(b, opened_by=(env.event_id, env.occurred_at), bank=bank, suivi=suivi, shoe_id=e.shoe_id)
            return replace(_with_book(state, b), last_banco=None)
        if isinstance(e, RoundResolved):  # chemin de fer: a banco that lost gives its player banco suivi
            last = state.last_banco
            if last is not None and last[0] == e.round_id:
                keep = e.winner == "banker"
                return replace(state, last_banco=("", last[1], last[2]) if keep else None)
            return state
        if isinstance(e, RoundVoided):
            b = state.books.get(e.round_id)
            if b is not None:
                return _with_book(state, replace(b, voided_by=(env.event_id, env.occurred_at)))
        if isinstance(e, (CardDealt, Irregularity)) and (isinstance(e, CardDealt) or e.card):
            b = state.books.get(e.round_id)
            if b is not None and not b.carded:
                return _with_book(state, replace(b, carded=True))
        return state

    def sent(self, state: WageringState, send: Send) -> WageringState:
        return state

    def react(self, state: WageringState, last: Envelope | None) -> list[Emit | Send]:
        return _with_shoe(state, self._react(state))

    def _react(self, state: WageringState) -> list[Emit | Send]:
        for b in state.books.values():
            if b.status == "pending" and b.opened_by is not None:
                return [Emit(BettingOpened(round_id=b.round_id), round_id=b.round_id,
                             causation_id=b.opened_by[0], occurred_at=b.opened_by[1])]
            if b.status == "open" and b.voided_by is not None:  # a voided round's book closes as it stands
                return [Emit(BettingClosed(round_id=b.round_id, bets=list(b.bets.values()),
                                           banker_player_id=b.bank[1] if b.bank else ""), round_id=b.round_id,
                             causation_id=b.voided_by[0], occurred_at=b.voided_by[1])]
        return []

    # -- decide ----------------------------------------------------------------------------------
    def decide(self, state: WageringState, cmd: CommandEnvelope) -> list[Emit | Send]:
        """The command's events, each naming the shoe of its round in the envelope (``shoe_id``) when the
        round's book knows it."""
        return _with_shoe(state, self._decide(state, cmd))

    def _decide(self, state: WageringState, cmd: CommandEnvelope) -> list[Emit | Send]:
        c = cmd.payload
        if isinstance(c, PlaceBet):
            return self._place(state, cmd, c)
        if isinstance(c, WithdrawBet):
            b = state.books.get(c.round_id)
            why = self._closed_reason(state, c.round_id, b)
            if why:
                return [self._rejected(cmd, c.round_id, why[0], why[1])]
            assert b is not None
            if b.carded:
                return [self._rejected(cmd, c.round_id, *_CARDS_DEALT)]
            if c.bet_id not in b.bets:
                return [self._rejected(cmd, c.round_id, "unknown_bet", f"no open bet {c.bet_id} in this round")]
            if b.bets[c.bet_id].player_id != cmd.actor:
                return [self._rejected(cmd, c.round_id, "not_your_bet",
                                       f"bet {c.bet_id} is not {cmd.actor or 'an unnamed actor'}'s to withdraw")]
            depends = self._bonus_depends_on(state, b, b.bets[c.bet_id])
            if depends:
                return [self._rejected(cmd, c.round_id, "bonus_depends_on_bet",
                                       f"bonus bet {depends} on seat {b.bets[c.bet_id].seat} needs this base bet "
                                       "(13:69F-3.2(b)): withdraw the bonus bet first")]
            return [Emit(BetWithdrawn(round_id=c.round_id, bet_id=c.bet_id), round_id=c.round_id)]
        if isinstance(c, CloseBetting):
            b = state.books.get(c.round_id)
            why = self._closed_reason(state, c.round_id, b)
            if why:
                return [Emit(CommandRejected(command_id=cmd.command_id, command="close_betting", reason=why[0],
                                             detail=why[1]), round_id=c.round_id)]
            assert b is not None
            return self._close(b, cmd.issued_at)
        if isinstance(c, (SeatPlayer, LeaveSeat)):
            return self._registry(state, cmd, c)
        tag = type(c).__struct_config__.tag
        return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason="not_a_wagering_command",
                                     detail=f"{tag} is not handled by the wagering service"))]

    @staticmethod
    def _close(b: Book, called_at: datetime) -> list[Emit | Send]:
        """ "No more bets" at ``called_at`` (the log's time of the ``CloseBetting``): the book closes with the
        bets the log holds at or before the call; each bet the log holds *after* it is returned
        (``BetWithdrawn``, reason ``betting_closed``) and is not in the book (13:69F-3.2(d)).

        Bets and the call travel on two topics, so a bet appended after the call can be read first (its
        records came in an earlier fetch); by the log's time it is still late, and a bettor cannot choose
        that time (``LogAppendTime``). No card of the round can exist yet: dealing deals only after the book
        closes.

        Chemin de fer: a banco suivi in time takes the whole bank, so every other wager in time is returned here
        (``BetWithdrawn`` reason ``banco_suivi``, 4.8); a banco suivi the log holds after the call is returned
        as late and displaces nothing: the wagers it would have returned stand. (The displacement waits for the
        close because a banco suivi read before the call may still be late by the log's time.) A banco the log
        holds after another wager in time (read before it, so that wager was taken) is returned
        (``banco_not_first``): a banco is a wager of the whole bank before any other; a late banco displaces
        nothing either."""
        late = [bid for bid, at in b.placed_at.items() if at > called_at and bid in b.bets]
        outs: list[Emit | Send] = [Emit(BetWithdrawn(round_id=b.round_id, bet_id=bid, reason="betting_closed"),
                                        round_id=b.round_id) for bid in late]
        stands = {bid: line for bid, line in b.bets.items() if bid not in late}
        # a banco is a wager of the whole bank before any other: one the log holds after another wager in time
        # (read first, so that wager was taken) is returned and the wagers stand
        first = min((at for bid, at in b.placed_at.items() if bid in stands and stands[bid].wager not in _BANCO),
                    default=None)
        not_first = [bid for bid, x in stands.items() if x.wager == Wager.BANCO.value and first is not None
                     and b.placed_at.get(bid, first) > first]
        outs += [Emit(BetWithdrawn(round_id=b.round_id, bet_id=bid, reason="banco_not_first"), round_id=b.round_id)
                 for bid in not_first]
        stands = {bid: x for bid, x in stands.items() if bid not in not_first}
        if any(x.wager == Wager.BANCO_SUIVI.value for x in stands.values()):
            displaced = [bid for bid, x in stands.items() if x.wager != Wager.BANCO_SUIVI.value]
            outs += [Emit(BetWithdrawn(round_id=b.round_id, bet_id=bid, reason="banco_suivi"), round_id=b.round_id)
                     for bid in displaced]
            stands = {bid: x for bid, x in stands.items() if bid not in displaced}
        book = list(stands.values())
        outs.append(Emit(BettingClosed(round_id=b.round_id, bets=book, banker_player_id=b.bank[1] if b.bank else ""),
                         round_id=b.round_id))
        return outs

    @staticmethod
    def _registry(state: WageringState, cmd: CommandEnvelope, c: SeatPlayer | LeaveSeat) -> list[Emit | Send]:
        """The player registry's commands: seat a player, or let one leave."""
        tag = type(c).__struct_config__.tag

        def no(reason: str, detail: str) -> list[Emit | Send]:
            return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason=reason, detail=detail))]

        cfg = state.config
        entry = (c.seat, c.player_id)
        if isinstance(c, LeaveSeat):
            if entry not in state.seated:
                return no("unknown_player", f"{c.player_id!r} is not registered at seat {c.seat}")
            return [Emit(PlayerLeft(seat=c.seat, player_id=c.player_id))]
        # a console may seat players as the table opens, before this service has read its configuration:
        # then any positive seat is taken (a bet is still checked against the table's seats)
        top = cfg.max_players if cfg is not None else None
        if c.seat < 1 or (top is not None and c.seat > top):
            return no("invalid_seat", f"seat {c.seat} is not 1..{top or 'n'}")
        if entry in state.seated:
            return no("already_seated", f"{c.player_id!r} is already registered at seat {c.seat}")
        if len(state.seated) >= MAX_SEATED_PLAYERS:
            return no("table_full", f"the table has {MAX_SEATED_PLAYERS} registered players, the most it takes")
        over = _over_player_cap(cfg, {pid for _, pid in state.seated}, c.player_id)
        if over:
            return no(*over)
        return [Emit(PlayerSeated(seat=c.seat, player_id=c.player_id))]

    @staticmethod
    def _bonus_depends_on(state: WageringState, b: Book, bet: BetLine) -> str | None:
        """The id of a bonus bet that would lose its base if ``bet`` were withdrawn, on a table whose bonus
        wager requires a Banker or Player wager on the same seat (13:69F-3.2(b)); None when it may go."""
        cfg = state.config
        bases = {m.value for m in MAIN_WAGERS}
        if cfg is None or not cfg.bonus_requires_base_bet or bet.wager not in bases:
            return None
        same_seat = [x for x in b.bets.values() if x.seat == bet.seat and x.bet_id != bet.bet_id]
        if any(x.wager in bases for x in same_seat):
            return None
        bonuses = {w.value for w in BONUS_WAGERS}
        return next((x.bet_id for x in same_seat if x.wager in bonuses), None)

    @staticmethod
    def _closed_reason(state: WageringState, round_id: str, b: Book | None) -> tuple[str, str] | None:
        if b is None and round_id not in state.closed:
            return "unknown_round", "no such round at this table"
        if b is None or b.status == "closed":
            return "betting_closed", '"No more bets" has been called (13:69F-3.2(d))'
        if b.status != "open":
            return "betting_not_open", "betting has not opened for this round"
        return None

    @staticmethod
    def _rejected(cmd: CommandEnvelope, round_id: str, reason: str, detail: str, c: PlaceBet | None = None) -> Emit:
        return Emit(
            BetRejected(round_id=round_id, command_id=cmd.command_id, reason=reason, detail=detail,
                        seat=c.seat if c else 0, player_id=c.player_id if c else "",
                        wager=c.wager if c else "", amount_cents=c.amount_cents if c else 0),
            round_id=round_id)

    def _place(self, state: WageringState, cmd: CommandEnvelope, c: PlaceBet) -> list[Emit | Send]:
        b = state.books.get(c.round_id)

        def no(reason: str, detail: str) -> list[Emit | Send]:
            return [self._rejected(cmd, c.round_id, reason, detail, c)]

        why = self._closed_reason(state, c.round_id, b)
        if why:
            return no(*why)
        assert b is not None
        if b.carded:
            return no(*_CARDS_DEALT)
        cfg = state.config
        if cfg is None:
            return no("table_not_open", "the table has no configuration")
        if len(b.bets) >= MAX_BETS_PER_ROUND:
            return no("too_many_bets", f"the round holds {MAX_BETS_PER_ROUND} bets, the most one round's book "
                                       "may (its BettingClosed must fit one Kafka record)")
        try:
            wager = Wager.parse(c.wager)
            cfg.require_offered(wager)
        except UnknownWager as e:
            return no("unknown_wager", str(e))
        except WagerNotOffered as e:
            return no("wager_not_offered", str(e))
        if not 1 <= c.seat <= cfg.max_players:
            return no("invalid_seat", f"seat {c.seat} is not 1..{cfg.max_players}")
        if (c.seat, c.player_id) not in state.seated:
            return no("unknown_player", f"{c.player_id!r} is not registered at seat {c.seat} of this table "
                                        "(the console seats players: SeatPlayer)")
        over = _over_player_cap(cfg, {x.player_id for x in b.bets.values()}, c.player_id)
        if over:
            return no(*over)
        if cmd.actor != c.player_id:
            return no("actor_mismatch", f"a bet for {c.player_id!r} sent by {cmd.actor or 'an unnamed actor'!r}: "
                                        "a terminal bets only for the player it names as its actor")
        if c.amount_cents <= 0:
            return no("invalid_amount", f"{c.amount_cents} cents is not a positive amount")
        unit = cfg.rounding.unit_cents
        if c.amount_cents % unit:
            return no("stake_not_multiple_of_unit", f"{c.amount_cents} cents is not a multiple of the table's "
                                                    f"rounding unit of {unit} cents")
        if cfg.variant.value == "chemin_de_fer":
            if c.seat not in cfg.chemin.seat_order(cfg.max_players):
                return no("invalid_seat", f"seat {c.seat} is not one of the table's seats "
                                          f"{list(cfg.chemin.seat_order(cfg.max_players))}")
            refused = _against_the_bank(b, c, wager, cmd.issued_at)
            if refused is not None:
                return no(*refused)
            if wager in BANCO_WAGERS:  # the whole bank: the bank's limits, not the table's wager limits
                # banco suivi has precedence: the other wagers are returned at "No more bets" (see _close), once
                # the log's time says whether the banco suivi itself was in time
                return [Emit(BetPlaced(round_id=c.round_id, bet_id=cmd.command_id, seat=c.seat,
                                       player_id=c.player_id, wager=wager.value, amount_cents=c.amount_cents),
                             round_id=c.round_id)]
        lim = cfg.limits_for(wager)
        if c.amount_cents < lim.min_cents:
            return no("under_table_min", f"{c.amount_cents} cents is under the {wager.value} minimum {lim.min_cents}")
        seat_total = sum(x.amount_cents for x in b.bets.values() if x.seat == c.seat and x.wager == wager.value)
        if seat_total + c.amount_cents > lim.max_cents:
            return no("over_table_max", f"seat {c.seat} would have {seat_total + c.amount_cents} cents on "
                                        f"{wager.value}, over the maximum {lim.max_cents}")
        if wager in BONUS_WAGERS and cfg.bonus_requires_base_bet:
            bases = {m.value for m in MAIN_WAGERS}
            if not any(x.seat == c.seat and x.wager in bases for x in b.bets.values()):
                return no("bonus_needs_base_bet", "this table takes a bonus wager only with a Banker or Player "
                                                  "wager on the same seat (13:69F-3.2(b))")
        try:
            cfg.check_stake(wager, c.amount_cents)
        except (InvalidAmount, BaccaratError) as e:  # pragma: no cover - covered by the checks above
            return no("invalid_amount", str(e))
        return [Emit(BetPlaced(round_id=c.round_id, bet_id=cmd.command_id, seat=c.seat, player_id=c.player_id,
                               wager=wager.value, amount_cents=c.amount_cents), round_id=c.round_id)]
