"""The settlement service's decider: joins each round's closed bet book with its result and pays.

Inputs: ``dealing.events`` (table configuration, ``RoundOpened``, ``RoundResolved``, ``RoundVoided``) and
``wagering.events`` (``BettingClosed``), whichever arrives first. Commands (``settlement.commands``):
``CollectCommission``. Events (``settlement.events``): one ``BetSettled`` per bet, ``CommissionAccrued``
per seat and player that owes commission, then ``RoundSettled`` (totals), all in one decision;
``CommissionCollected`` per player collected. Accrued commission is owed by the player whose bet won, not by
the seat: a second player at the seat never pays the first one's.

The money is the rules core's (:func:`baccarat.wagers.settle`); a round's configuration is the one in force
when the round opened. Chemin de fer: the wagers are against the bank a participant holds (``RoundOpened``),
so after the bets a ``BankSettled`` gives the bank's side (:func:`baccarat.chemin.settle_bank`: the house's
commission on the bank's winnings, deducted or accrued to the Banker's commission box as the table's
``commission_mode`` says), and ``RoundSettled.table_result`` is that commission: money moves between the
participants, the house keeps its commission, to the cent. Settling is state-driven and checked against this service's own events, so a round
is settled exactly once however often its inputs are delivered or replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from baccarat.chemin import settle_table_bank
from baccarat.money import CommissionMode
from baccarat.table import TableConfig
from baccarat.wagers import Wager, settle
from contracts import topics as T
from contracts.commands import CollectCommission
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BankSettled,
    BetLine,
    BetSettled,
    BettingClosed,
    CommandRejected,
    CommissionAccrued,
    CommissionCollected,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    TableOpened,
)
from contracts.tables import TableSpec
from services.configs import config_of
from services.history import History
from services.runtime.core import Emit, Send
from services.runtime.translate import outcome


@dataclass(frozen=True, slots=True)
class Pending:
    """What is known of an unsettled round; ``spec``: the table's configuration when the round opened."""

    spec: TableSpec | None = None
    book: tuple[BetLine, ...] | None = None
    result: tuple[RoundResolved, str, datetime] | None = None
    voided: tuple[RoundVoided, str, datetime] | None = None
    #: chemin de fer: the Banker's (seat, player id) and the bank in cents
    bank: tuple[int, str, int] | None = None
    #: the shoe the round is dealt from (its ``RoundOpened``): the settlement's events name it in their envelope
    shoe_id: str = ""


@dataclass(frozen=True, slots=True)
class SettlementState:
    """One table's settlement: the unsettled rounds in full, the settled ones by id only.

    ``pending``: rounds with an input but no ``RoundSettled`` yet (live rounds; dropped once settled).
    ``settled``: the id of every round settled here, in a :class:`History` (O(log n) per round): an input
    about a settled round, live or replayed from the start of a topic on a rebuild, is ignored, so a round
    is never paid twice however old. ``spec`` is the wire configuration; :attr:`config` derives the rules
    core's one. ``owed``: per seat and player, so bounded by the players seated at the table.
    """

    table_id: str
    spec: TableSpec | None = None
    pending: dict[str, Pending] = field(default_factory=dict)
    settled: History = field(default_factory=History)
    #: (seat, player id) -> commission owed, cents: each player at a seat has his own commission box
    owed: dict[tuple[int, str], int] = field(default_factory=dict)

    @property
    def config(self) -> TableConfig | None:
        """The rules core's table configuration (None until ``TableOpened``)."""
        return config_of(self.spec) if self.spec is not None else None


class SettlementCore:
    """The settlement service's pure decide/evolve/react over :class:`SettlementState`."""

    name = "settlement"
    state_type = SettlementState
    own_stream = T.SETTLEMENT_EVENTS
    private_streams: tuple[str, ...] = ()
    command_streams = (T.SETTLEMENT_COMMANDS,)
    same_time_first: tuple[str, ...] = ()
    catch_up: tuple[tuple[str, str], ...] = ()
    input_streams = (T.DEALING_EVENTS, T.WAGERING_EVENTS)

    def initial(self, table_id: str) -> SettlementState:
        return SettlementState(table_id)

    def open_rounds(self, state: SettlementState) -> int:
        """Rounds of the table not settled yet: opened, closed or resolved (an input about them came) and no
        ``RoundSettled`` (a query for operations; it decides nothing)."""
        return len(state.pending)

    def evolve(self, state: SettlementState, env: Envelope) -> SettlementState:
        e = env.payload
        if isinstance(e, RoundSettled):
            pending = dict(state.pending)
            pending.pop(e.round_id, None)
            return replace(state, settled=state.settled.put(e.round_id), pending=pending)
        if isinstance(e, CommissionAccrued):
            return replace(state, owed={**state.owed, (e.seat, e.player_id): e.owed_cents})
        if isinstance(e, CommissionCollected):
            key = (e.seat, e.player_id)
            return replace(state, owed={**state.owed, key: state.owed.get(key, 0) - e.amount_cents})
        return state

    def _update(self, state: SettlementState, round_id: str, **kw: object) -> SettlementState:
        if round_id in state.settled:
            return state
        p = replace(state.pending.get(round_id, Pending()), **kw)
        return replace(state, pending={**state.pending, round_id: p})

    def absorb(self, state: SettlementState, env: Envelope) -> SettlementState:
        e = env.payload
        if isinstance(e, TableOpened):
            config_of(e.config)  # validated (and cached) as it arrives
            return replace(state, spec=e.config)
        if isinstance(e, RoundOpened):
            bank = (e.banker_seat, e.banker_player_id, e.bank_cents) if e.banker_player_id else None
            return self._update(state, e.round_id, spec=state.spec, bank=bank, shoe_id=e.shoe_id)
        if isinstance(e, BettingClosed):
            return self._update(state, e.round_id, book=tuple(e.bets))
        if isinstance(e, RoundResolved):
            return self._update(state, e.round_id, result=(e, env.event_id, env.occurred_at))
        if isinstance(e, RoundVoided):
            return self._update(state, e.round_id, voided=(e, env.event_id, env.occurred_at))
        return state

    def sent(self, state: SettlementState, send: Send) -> SettlementState:
        return state

    def react(self, state: SettlementState, last: Envelope | None) -> list[Emit | Send]:
        for round_id, p in state.pending.items():
            if p.book is None or (p.result is None and p.voided is None):
                continue
            outs = self._settle_round(state, round_id, p)
            if not p.shoe_id:
                return outs
            return [replace(o, shoe_id=p.shoe_id) if isinstance(o, Emit) and o.shoe_id is None else o for o in outs]
        return []

    def _settle_round(self, state: SettlementState, round_id: str, p: Pending) -> list[Emit | Send]:
        assert p.book is not None
        spec = p.spec or state.spec
        config = config_of(spec) if spec is not None else None
        cause, at = (p.voided[1], p.voided[2]) if p.voided else (p.result[1], p.result[2])  # type: ignore[index]
        out: list[Emit | Send] = []
        stakes = payouts = commission = 0
        accrued: dict[tuple[int, str], int] = {}
        o = outcome(p.result[0]) if p.result and not p.voided else None
        for bet in p.book:
            if o is None or config is None:
                ev = BetSettled(round_id=round_id, bet_id=bet.bet_id, seat=bet.seat, player_id=bet.player_id,
                                wager=bet.wager, stake=bet.amount_cents, result="void", category="round_voided",
                                win=0, commission=0, commission_accrued=False, payout=bet.amount_cents)
            else:
                s = settle(Wager(bet.wager), bet.amount_cents, o, config)
                ev = BetSettled(round_id=round_id, bet_id=bet.bet_id, seat=bet.seat, player_id=bet.player_id,
                                wager=bet.wager, stake=s.stake, result=s.result.value, category=s.category,
                                win=s.win, commission=s.commission, commission_accrued=s.commission_accrued,
                                payout=s.payout, odds=str(s.odds) if s.odds else "")
                if s.commission_accrued:
                    key = (bet.seat, bet.player_id)
                    accrued[key] = accrued.get(key, 0) + s.commission
            stakes += ev.stake
            payouts += ev.payout
            commission += ev.commission
            out.append(Emit(ev, round_id=round_id, causation_id=cause, occurred_at=at))
        house = 0
        if o is not None and config is not None and config.variant.value == "chemin_de_fer" and p.bank is not None:
            seat, banker, bank = p.bank
            wagered = sum(b.amount_cents for b in p.book)
            r = settle_table_bank(bank, wagered, o.winner, config)
            acc = r.commission_cents > 0 and config.commission_mode is CommissionMode.ACCRUE
            out.append(Emit(BankSettled(round_id=round_id, seat=seat, player_id=banker, bank_cents=bank,
                                        wagers_cents=wagered, won_cents=r.won_cents,
                                        commission_cents=r.commission_cents, commission_accrued=acc,
                                        bank_after_cents=r.bank_after_cents),
                            round_id=round_id, causation_id=cause, occurred_at=at))
            commission += r.commission_cents
            house = r.commission_cents - (stakes - payouts)  # the bets' money is the bank's, not the house's
            if acc:
                accrued[(seat, banker)] = accrued.get((seat, banker), 0) + r.commission_cents
                house -= r.commission_cents  # counted below with the accrued commission
        owed_extra = 0
        for seat, pid in sorted(accrued):
            amt = accrued[(seat, pid)]
            owed_extra += amt
            out.append(Emit(CommissionAccrued(seat=seat, player_id=pid, amount_cents=amt,
                                              owed_cents=state.owed.get((seat, pid), 0) + amt, round_id=round_id),
                            round_id=round_id, causation_id=cause, occurred_at=at))
        out.append(Emit(RoundSettled(round_id=round_id, bets=len(p.book), stakes=stakes, payouts=payouts,
                                     commission=commission, table_result=stakes - payouts + owed_extra + house),
                        round_id=round_id, causation_id=cause, occurred_at=at))
        return out

    def decide(self, state: SettlementState, cmd: CommandEnvelope) -> list[Emit | Send]:
        c = cmd.payload
        if isinstance(c, CollectCommission):
            # each player pays his own commission box; no player named: every box of the seat is collected
            due = sorted((pid, amt) for (seat, pid), amt in state.owed.items()
                         if seat == c.seat and amt > 0 and (not c.player_id or pid == c.player_id))
            if not due:
                who = f"player {c.player_id} at seat {c.seat}" if c.player_id else f"seat {c.seat}"
                return [Emit(CommandRejected(command_id=cmd.command_id, command="collect_commission",
                                             reason="nothing_owed", detail=f"{who} owes no commission"))]
            return [Emit(CommissionCollected(seat=c.seat, player_id=pid, amount_cents=amt)) for pid, amt in due]
        tag = type(c).__struct_config__.tag
        return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason="not_a_settlement_command",
                                     detail=f"{tag} is not handled by the settlement service"))]
