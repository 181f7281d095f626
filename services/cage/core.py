"""The cage service's decider: a table's chip tray from opener to closer, its fills, credits, buy-ins,
markers and drop boxes (``cage.commands`` -> ``cage.events``; inputs ``wagering.events`` and
``settlement.events``).

**The tray expected.** Between the opener and the closer of a shift the cage follows what the tray must
hold, in cents: − every cash or marker buy-in (chips out to the patron; chips brought from elsewhere are
exchanged, no change), + the house's side of every settled round (``RoundSettled.table_result`` less the
commission accrued in the round, which reaches the tray only when collected: stakes taken − payouts at
punto banco, the deducted commission at chemin de fer), + commission collected, + fills received,
− credits handed over. The closer is compared with it (``ShiftClosed.tray_variance_cents``) and the soft
count with the buy-ins that went into the box (``DropBoxCounted.drop_variance_cents``).

**Refusals** (``CommandRejected``, nothing booked), each a stable reason code: ``role_not_permitted`` (the
command's ``role`` may not send it: :data:`ROLES`), ``same_person`` (a count attested by the one who counted,
a fill approved by the dealer who received it), ``count_team_too_small`` (a soft count by fewer than
:data:`MIN_COUNT_TEAM` people), ``invalid_count`` / ``count_mismatch`` (:func:`services.cage.counts.count_problem`),
``invalid_amount``, ``shift_already_opened`` (a second opener of a shift), ``shift_open`` (an opener while
another shift is open), ``table_closed`` (a fill, credit or buy-in with no shift open), ``unknown_shift``,
``unknown_fill`` / ``unknown_credit`` / ``fill_not_issued`` / ``credit_not_handed_over`` / ``duplicate_slip``
(a slip out of its order), ``credit_exceeds_tray`` / ``tray_short`` (more chips than the tray holds),
``player_not_seated``, ``unknown_method``, ``over_credit_line`` (a marker past the line the cage set),
``box_not_removed`` / ``box_already_counted`` / ``shift_not_closed``; ``cage_only`` (a credit line, or a
marker's draw, at a table's key: they are decided at :data:`~contracts.cage.CAGE_KEY`), ``marker_pending``
(a closer while a marker buy-in awaits the cage's answer), ``unknown_buy_in`` (a marker settled that the
table never reserved), ``over_outstanding`` (a marker redemption beyond the patron's markers outstanding).

**Casino-wide credit** (``docs/cage.md``). The key ``CAGE`` holds every patron's line and his markers
outstanding at all tables together; a marker buy-in is three decisions, each of one key, chained by
:class:`~services.runtime.core.Send` on ``cage.markers``: the table reserves the chips
(``MarkerRequested``) and sends ``DrawMarker`` keyed ``CAGE``; ``CAGE`` issues the marker (``MarkerIssued``)
when outstanding + amount ≤ line, else refuses it ``over_credit_line``, and sends ``SettleMarker`` keyed
by the table; the table books ``BoughtIn`` or refuses the buy-in (its ``CommandRejected``, the reservation
released). One key is one task: two tables' markers can never both pass on the same headroom.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from contracts import topics as T
from contracts.cage import (
    CAGE_KEY,
    BoughtIn,
    BuyIn,
    ChipsRedeemed,
    CountDropBox,
    CreditHandedOver,
    CreditLineSet,
    CreditReceived,
    CreditRequested,
    DropBoxCounted,
    DrawMarker,
    DropBoxRemoved,
    FillIssued,
    FillReceived,
    FillRequested,
    HandOverCredit,
    IssueFill,
    MarkerIssued,
    MarkerRequested,
    ReceiveCredit,
    ReceiveFill,
    RecordCloser,
    RecordOpener,
    RedeemChips,
    RemoveDropBox,
    RequestCredit,
    RequestFill,
    SetCreditLine,
    SettleMarker,
    ShiftClosed,
    ShiftOpened,
)
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BetSettled,
    CommandRejected,
    CommissionAccrued,
    CommissionCollected,
    PlayerLeft,
    PlayerSeated,
    RoundSettled,
)
from services.cage.counts import count_problem
from services.history import History
from services.runtime.core import Emit, Send, command

#: which role may send which cage command (the command's ``role``; the actor is the envelope's)
ROLES: dict[str, frozenset[str]] = {
    "record_opener": frozenset({"dealer"}), "record_closer": frozenset({"dealer"}),
    "request_fill": frozenset({"supervisor"}), "issue_fill": frozenset({"cage_cashier"}),
    "receive_fill": frozenset({"dealer"}), "request_credit": frozenset({"supervisor"}),
    "hand_over_credit": frozenset({"dealer"}), "receive_credit": frozenset({"cage_cashier"}),
    "set_credit_line": frozenset({"cage_cashier"}), "buy_in": frozenset({"dealer"}),
    "remove_drop_box": frozenset({"count_team", "security"}), "count_drop_box": frozenset({"count_team"}),
    "redeem_chips": frozenset({"cage_cashier"}),
    # the cage service's own commands (``cage.markers``, which only its principal may write)
    "draw_marker": frozenset({"cage"}), "settle_marker": frozenset({"cage"}),
}
#: the smallest count team (the actor and the counters named, distinct people): general practice is three
MIN_COUNT_TEAM = 3
BUY_IN_METHODS = ("cash", "marker", "chips")


@dataclass(frozen=True, slots=True)
class Slip:
    """A fill or credit slip: its total in cents and how far it went (``requested`` -> ``issued`` ->
    ``received`` for a fill; ``requested`` -> ``handed_over`` -> ``received`` for a credit)."""

    total_cents: int
    status: str


@dataclass(frozen=True, slots=True)
class Reservation:
    """Chips a table holds back for a marker buy-in until ``CAGE`` answers (``MarkerRequested``):
    ``command_id`` the buy-in's (its refusal names it), the seat, patron, amount (cents), shift and dealer."""

    command_id: str
    seat: int
    player_id: str
    amount_cents: int
    shift_id: str
    by: str


@dataclass(frozen=True, slots=True)
class Shift:
    """The open (or last) shift of a table. Cents throughout; ``tray_cents``: the tray expected now."""

    shift_id: str
    gaming_day: str
    pit: str
    opener_cents: int
    tray_cents: int
    game_result_cents: int = 0
    rounds: int = 0
    fills: dict[str, Slip] = field(default_factory=dict)
    credits: dict[str, Slip] = field(default_factory=dict)
    closed: bool = False


@dataclass(frozen=True, slots=True)
class CageState:
    """One table's cage state. ``shift``: the open shift, or the last one closed; ``shifts``: every shift
    id opened here (a second opener is refused); ``boxes``: per shift whose box is not counted yet, the
    drop expected (cash + markers bought in) and whether it was removed (1) or not (0) as ``[cents, removed]``;
    ``seated``: ``"<seat>:<player>"`` registered at the table (``PlayerSeated``/``PlayerLeft``);
    ``lines``/``markers``: at ``CAGE``, per player the casino-wide credit line and the markers outstanding
    (cents); ``reserved``: per buy-in id, the chips held back for a marker buy-in awaiting ``CAGE``;
    ``round_accrued``: commission accrued in the round being settled (cents); ``round_void``: a bet of the round
    being settled was returned because the round was voided (``BetSettled`` category ``round_voided``): its
    ``RoundSettled`` is no round of the shift (issue 24, fix 9: as on the pit's figures and in the replay);
    ``last_round``: the id of the last round settled at the table (the opener and closer name it, so the audit
    can tell which rounds were the shift's)."""

    table_id: str
    shift: Shift | None = None
    shifts: History = field(default_factory=History)
    boxes: dict[str, list[int]] = field(default_factory=dict)
    seated: dict[str, int] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    markers: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, Reservation] = field(default_factory=dict)
    round_accrued: int = 0
    round_void: bool = False
    last_round: str = ""

    @property
    def open_shift(self) -> Shift | None:
        """The shift open now (None when the table is closed)."""
        return self.shift if self.shift is not None and not self.shift.closed else None

    @property
    def reserved_cents(self) -> int:
        """The chips held back for marker buy-ins awaiting the cage's answer, cents."""
        return sum(r.amount_cents for r in self.reserved.values())


def _reject(cmd: CommandEnvelope, tag: str, reason: str, detail: str) -> list[Emit | Send]:
    return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason=reason, detail=detail))]


def _with_shift(state: CageState, **kw: object) -> CageState:
    assert state.shift is not None
    return replace(state, shift=replace(state.shift, **kw))


class CageCore:
    """The cage service's pure decide/evolve/absorb over :class:`CageState` (see the module docstring)."""

    name = "cage"
    state_type = CageState
    own_stream = T.CAGE_EVENTS
    private_streams: tuple[str, ...] = ()
    command_streams = (T.CAGE_COMMANDS, T.CAGE_MARKERS)
    same_time_first: tuple[str, ...] = ()
    catch_up: tuple[tuple[str, str], ...] = ()
    input_streams = (T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)

    def initial(self, table_id: str) -> CageState:
        return CageState(table_id)

    # ---- folding ---------------------------------------------------------------------------------------
    def evolve(self, state: CageState, env: Envelope) -> CageState:
        e = env.payload
        s = state.shift
        if isinstance(e, CreditLineSet):
            return replace(state, lines={**state.lines, e.player_id: e.line_cents})
        if isinstance(e, MarkerIssued):
            return replace(state, markers={**state.markers, e.player_id: e.outstanding_cents})
        if isinstance(e, ChipsRedeemed):
            if e.method != "marker_redemption":
                return state
            return replace(state, markers={**state.markers, e.player_id: e.marker_balance_cents})
        if isinstance(e, CommandRejected):
            if e.command != "buy_in" or not state.reserved:
                return state
            # a marker buy-in refused by the cage: its reservation released, nothing booked
            return replace(state, reserved={k: r for k, r in state.reserved.items()
                                            if r.command_id != e.command_id})
        if isinstance(e, ShiftOpened):
            return replace(state, shifts=state.shifts.put(e.shift_id),
                           shift=Shift(e.shift_id, e.gaming_day, e.pit, e.total_cents, e.total_cents),
                           boxes={**state.boxes, e.shift_id: [0, 0]})
        if s is None:
            return state
        if isinstance(e, ShiftClosed):
            return _with_shift(state, closed=True)
        if isinstance(e, FillRequested):
            return _with_shift(state, fills={**s.fills, e.fill_id: Slip(e.total_cents, "requested")})
        if isinstance(e, FillIssued):
            return _with_shift(state, fills={**s.fills, e.fill_id: Slip(e.total_cents, "issued")})
        if isinstance(e, FillReceived):
            return _with_shift(state, fills={**s.fills, e.fill_id: Slip(e.total_cents, "received")},
                               tray_cents=s.tray_cents + e.total_cents)
        if isinstance(e, CreditRequested):
            return _with_shift(state, credits={**s.credits, e.credit_id: Slip(e.total_cents, "requested")})
        if isinstance(e, CreditHandedOver):
            return _with_shift(state, credits={**s.credits, e.credit_id: Slip(e.total_cents, "handed_over")},
                               tray_cents=s.tray_cents - e.total_cents)
        if isinstance(e, CreditReceived):
            return _with_shift(state, credits={**s.credits, e.credit_id: Slip(e.total_cents, "received")})
        if isinstance(e, MarkerRequested):
            return replace(state, reserved={**state.reserved, e.buy_in_id: Reservation(
                env.causation_id, e.seat, e.player_id, e.amount_cents, e.shift_id, e.by)})
        if isinstance(e, BoughtIn):
            state = _with_shift(state, tray_cents=e.tray_cents)
            if e.buy_in_id in state.reserved:
                state = replace(state, reserved={k: r for k, r in state.reserved.items() if k != e.buy_in_id})
            if e.method == "chips":
                return state
            box = state.boxes.get(e.shift_id, [0, 0])
            return replace(state, boxes={**state.boxes, e.shift_id: [box[0] + e.amount_cents, box[1]]})
        if isinstance(e, DropBoxRemoved):
            box = state.boxes.get(e.shift_id, [0, 0])
            return replace(state, boxes={**state.boxes, e.shift_id: [box[0], 1]})
        if isinstance(e, DropBoxCounted):
            boxes = dict(state.boxes)
            boxes.pop(e.shift_id, None)
            return replace(state, boxes=boxes)
        return state

    def absorb(self, state: CageState, env: Envelope) -> CageState:
        e = env.payload
        if isinstance(e, PlayerSeated):
            return replace(state, seated={**state.seated, f"{e.seat}:{e.player_id}": e.seat})
        if isinstance(e, PlayerLeft):
            seated = dict(state.seated)
            seated.pop(f"{e.seat}:{e.player_id}", None)
            return replace(state, seated=seated)
        if isinstance(e, CommissionAccrued):
            return replace(state, round_accrued=state.round_accrued + e.amount_cents)
        if isinstance(e, BetSettled) and e.category == "round_voided" and not state.round_void:
            return replace(state, round_void=True)
        s = state.open_shift
        if isinstance(e, RoundSettled):
            if s is None:  # a round played outside inventory control: no shift to book it to
                return replace(state, round_accrued=0, round_void=False, last_round=e.round_id)
            return replace(_with_shift(state, game_result_cents=s.game_result_cents + e.table_result,
                                       rounds=s.rounds + (0 if state.round_void else 1),
                                       tray_cents=s.tray_cents + e.table_result - state.round_accrued),
                           round_accrued=0, round_void=False, last_round=e.round_id)
        if isinstance(e, CommissionCollected) and s is not None:
            return _with_shift(state, tray_cents=s.tray_cents + e.amount_cents)
        return state

    def sent(self, state: CageState, send: Send) -> CageState:
        return state

    def react(self, state: CageState, last: Envelope | None) -> list[Emit | Send]:
        return []

    # ---- deciding --------------------------------------------------------------------------------------
    def decide(self, state: CageState, cmd: CommandEnvelope) -> list[Emit | Send]:
        c = cmd.payload
        tag = type(c).__struct_config__.tag
        allowed = ROLES.get(tag)
        if allowed is None:
            return _reject(cmd, tag, "not_a_cage_command", f"{tag} is not handled by the cage service")
        role = getattr(c, "role", "")
        if role not in allowed:
            return _reject(cmd, tag, "role_not_permitted",
                           f"role {role!r} may not send {tag} (allowed: {', '.join(sorted(allowed))})")
        by = cmd.actor
        handler = getattr(self, f"_{tag}")
        return handler(state, cmd, c, tag, by)  # type: ignore[no-any-return]

    def _record_opener(self, state: CageState, cmd: CommandEnvelope, c: RecordOpener, tag: str,
                       by: str) -> list[Emit | Send]:
        if c.shift_id in state.shifts:
            return _reject(cmd, tag, "shift_already_opened", f"shift {c.shift_id} already has its opener")
        if state.open_shift is not None:
            return _reject(cmd, tag, "shift_open", f"shift {state.open_shift.shift_id} is open: its closer first")
        if c.supervisor_id == by:
            return _reject(cmd, tag, "same_person", "the opener is counted by the dealer and attested by another")
        bad = count_problem(c.chips, c.total_cents)
        if bad:
            return _reject(cmd, tag, *bad)
        return [Emit(ShiftOpened(shift_id=c.shift_id, gaming_day=c.gaming_day, pit=c.pit, chips=c.chips,
                                 total_cents=c.total_cents, counted_by=by, attested_by=c.supervisor_id,
                                 last_round_id=state.last_round))]

    def _record_closer(self, state: CageState, cmd: CommandEnvelope, c: RecordCloser, tag: str,
                       by: str) -> list[Emit | Send]:
        s = state.open_shift
        if s is None or s.shift_id != c.shift_id:
            return _reject(cmd, tag, "unknown_shift", f"shift {c.shift_id} is not open at {state.table_id}")
        if c.supervisor_id == by:
            return _reject(cmd, tag, "same_person", "the closer is counted by the dealer and attested by another")
        if state.reserved:
            return _reject(cmd, tag, "marker_pending", f"marker buy-in {', '.join(sorted(state.reserved))} awaits "
                                                       "the cage's answer: the closer after it")
        bad = count_problem(c.chips, c.total_cents)
        if bad:
            return _reject(cmd, tag, *bad)
        return [Emit(ShiftClosed(shift_id=c.shift_id, chips=c.chips, total_cents=c.total_cents, counted_by=by,
                                 attested_by=c.supervisor_id, expected_cents=s.tray_cents,
                                 game_result_cents=s.game_result_cents, rounds=s.rounds,
                                 tray_variance_cents=c.total_cents - s.tray_cents, last_round_id=state.last_round))]

    def _slip_request(self, state: CageState, cmd: CommandEnvelope, slip_id: str, chips: list, total: int,
                      tag: str) -> tuple[str, str] | Shift:
        s = state.open_shift
        if s is None:
            return "table_closed", f"no shift is open at {state.table_id}"
        if slip_id in s.fills or slip_id in s.credits:
            return "duplicate_slip", f"slip {slip_id} already exists"
        if total <= 0:
            return "invalid_amount", f"{total} cents"
        return count_problem(chips, total) or s

    def _request_fill(self, state: CageState, cmd: CommandEnvelope, c: RequestFill, tag: str,
                      by: str) -> list[Emit | Send]:
        s = self._slip_request(state, cmd, c.fill_id, c.chips, c.total_cents, tag)
        if not isinstance(s, Shift):
            return _reject(cmd, tag, *s)
        return [Emit(FillRequested(fill_id=c.fill_id, shift_id=s.shift_id, chips=c.chips,
                                   total_cents=c.total_cents, by=by))]

    def _slip(self, state: CageState, cmd: CommandEnvelope, tag: str, kind: str, slip_id: str,
              before: str) -> tuple[str, str] | tuple[Shift, Slip]:
        s = state.open_shift
        if s is None:
            return "table_closed", f"no shift is open at {state.table_id}"
        slip = (s.fills if kind == "fill" else s.credits).get(slip_id)
        if slip is None:
            return f"unknown_{kind}", f"no {kind} slip {slip_id} in shift {s.shift_id}"
        if slip.status != before:
            return f"{kind}_not_{before}", f"{kind} {slip_id} is {slip.status}"
        return s, slip

    def _issue_fill(self, state: CageState, cmd: CommandEnvelope, c: IssueFill, tag: str,
                    by: str) -> list[Emit | Send]:
        r = self._slip(state, cmd, tag, "fill", c.fill_id, "requested")
        if isinstance(r[0], str):
            return _reject(cmd, tag, *r)  # type: ignore[arg-type]
        s, slip = r
        return [Emit(FillIssued(fill_id=c.fill_id, shift_id=s.shift_id, total_cents=slip.total_cents, by=by,
                                runner_id=c.runner_id))]

    def _receive_fill(self, state: CageState, cmd: CommandEnvelope, c: ReceiveFill, tag: str,
                      by: str) -> list[Emit | Send]:
        r = self._slip(state, cmd, tag, "fill", c.fill_id, "issued")
        if isinstance(r[0], str):
            return _reject(cmd, tag, *r)  # type: ignore[arg-type]
        s, slip = r
        if c.supervisor_id == by:
            return _reject(cmd, tag, "same_person", "a fill is received by the dealer and approved by another")
        return [Emit(FillReceived(fill_id=c.fill_id, shift_id=s.shift_id, total_cents=slip.total_cents, by=by,
                                  supervisor_id=c.supervisor_id, tray_cents=s.tray_cents + slip.total_cents))]

    def _request_credit(self, state: CageState, cmd: CommandEnvelope, c: RequestCredit, tag: str,
                        by: str) -> list[Emit | Send]:
        s = self._slip_request(state, cmd, c.credit_id, c.chips, c.total_cents, tag)
        if not isinstance(s, Shift):
            return _reject(cmd, tag, *s)
        if c.total_cents > s.tray_cents - state.reserved_cents:
            return _reject(cmd, tag, "credit_exceeds_tray",
                           f"credit of {c.total_cents} cents, the tray holds {s.tray_cents - state.reserved_cents} "
                           "not reserved")
        return [Emit(CreditRequested(credit_id=c.credit_id, shift_id=s.shift_id, chips=c.chips,
                                     total_cents=c.total_cents, by=by))]

    def _hand_over_credit(self, state: CageState, cmd: CommandEnvelope, c: HandOverCredit, tag: str,
                          by: str) -> list[Emit | Send]:
        r = self._slip(state, cmd, tag, "credit", c.credit_id, "requested")
        if isinstance(r[0], str):
            return _reject(cmd, tag, *r)  # type: ignore[arg-type]
        s, slip = r
        if slip.total_cents > s.tray_cents - state.reserved_cents:
            return _reject(cmd, tag, "credit_exceeds_tray",
                           f"credit of {slip.total_cents} cents, the tray holds "
                           f"{s.tray_cents - state.reserved_cents} not reserved")
        return [Emit(CreditHandedOver(credit_id=c.credit_id, shift_id=s.shift_id, total_cents=slip.total_cents,
                                      by=by, runner_id=c.runner_id, tray_cents=s.tray_cents - slip.total_cents))]

    def _receive_credit(self, state: CageState, cmd: CommandEnvelope, c: ReceiveCredit, tag: str,
                        by: str) -> list[Emit | Send]:
        r = self._slip(state, cmd, tag, "credit", c.credit_id, "handed_over")
        if isinstance(r[0], str):
            return _reject(cmd, tag, *r)  # type: ignore[arg-type]
        s, slip = r
        return [Emit(CreditReceived(credit_id=c.credit_id, shift_id=s.shift_id, total_cents=slip.total_cents,
                                    by=by))]

    def _set_credit_line(self, state: CageState, cmd: CommandEnvelope, c: SetCreditLine, tag: str,
                         by: str) -> list[Emit | Send]:
        if state.table_id != CAGE_KEY:
            return _reject(cmd, tag, "cage_only", f"credit lines are casino-wide: set at {CAGE_KEY}, not at "
                                                  f"{state.table_id}")
        if c.line_cents < 0:
            return _reject(cmd, tag, "invalid_amount", f"credit line of {c.line_cents} cents")
        return [Emit(CreditLineSet(player_id=c.player_id, line_cents=c.line_cents, by=by))]

    def _buy_in(self, state: CageState, cmd: CommandEnvelope, c: BuyIn, tag: str, by: str) -> list[Emit | Send]:
        s = state.open_shift
        if s is None:
            return _reject(cmd, tag, "table_closed", f"no shift is open at {state.table_id}")
        if c.method not in BUY_IN_METHODS:
            return _reject(cmd, tag, "unknown_method", f"{c.method!r} is not one of {', '.join(BUY_IN_METHODS)}")
        if c.amount_cents <= 0:
            return _reject(cmd, tag, "invalid_amount", f"{c.amount_cents} cents")
        if f"{c.seat}:{c.player_id}" not in state.seated:
            return _reject(cmd, tag, "player_not_seated", f"{c.player_id} is not seated at seat {c.seat}")
        if c.cash:
            bad = count_problem(c.cash, c.amount_cents)
            if bad:
                return _reject(cmd, tag, *bad)
        tray = s.tray_cents
        if c.method != "chips":
            free = tray - state.reserved_cents
            if c.amount_cents > free:
                return _reject(cmd, tag, "tray_short", f"{c.amount_cents} cents of chips, the tray holds {free}"
                                                       + (" not reserved" if state.reserved else ""))
            tray -= c.amount_cents
        if c.method == "marker":
            if c.buy_in_id in state.reserved:
                return _reject(cmd, tag, "duplicate_slip", f"marker {c.buy_in_id} awaits the cage's answer")
            # step 1 of 3: the chips reserved; the cage's key decides the credit (step 2)
            draw = DrawMarker(table_id=state.table_id, buy_in_id=c.buy_in_id, player_id=c.player_id,
                              amount_cents=c.amount_cents)
            return [Emit(MarkerRequested(buy_in_id=c.buy_in_id, shift_id=s.shift_id, seat=c.seat,
                                         player_id=c.player_id, amount_cents=c.amount_cents, by=by)),
                    Send(T.CAGE_MARKERS, command(CAGE_KEY, marker_command_id("draw", state.table_id, c.buy_in_id, cmd.command_id),
                                                 cmd.issued_at, draw, correlation_id=cmd.command_id, actor=""))]
        return [Emit(BoughtIn(buy_in_id=c.buy_in_id, shift_id=s.shift_id, seat=c.seat, player_id=c.player_id,
                              method=c.method, amount_cents=c.amount_cents, tray_cents=tray, by=by))]

    def _draw_marker(self, state: CageState, cmd: CommandEnvelope, c: DrawMarker, tag: str,
                     by: str) -> list[Emit | Send]:
        """Step 2 of a marker buy-in, at ``CAGE``: issue the marker within the patron's casino-wide line, or
        refuse it ``over_credit_line``; either way answer the table (step 3)."""
        if state.table_id != CAGE_KEY:
            return _reject(cmd, tag, "cage_only", f"markers are drawn at {CAGE_KEY}, not at {state.table_id}")
        line = state.lines.get(c.player_id, 0)
        outstanding = state.markers.get(c.player_id, 0)
        after = outstanding + c.amount_cents
        settle_id = marker_command_id("settle", c.table_id, c.buy_in_id, cmd.command_id)
        if c.amount_cents <= 0 or after > line:
            reason, detail = (("invalid_amount", f"{c.amount_cents} cents") if c.amount_cents <= 0 else
                              ("over_credit_line", f"markers outstanding would total {after} cents, the credit line "
                                                   f"is {line} ({outstanding} outstanding at the tables)"))
            if reason == "over_credit_line" and c.player_id not in state.lines:
                # no line at CAGE: a line set at a table's key (a log from before casino-wide lines) decides nothing
                detail = (f"{c.player_id} has no credit line at {CAGE_KEY}: lines are casino-wide, set at the cage "
                          f"(a line set at a table before they were is not carried over); {detail}")
            answer = SettleMarker(buy_in_id=c.buy_in_id, issued=False, reason=reason, detail=detail)
            return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason=reason, detail=detail)),
                    Send(T.CAGE_MARKERS, command(c.table_id, settle_id, cmd.issued_at, answer,
                                                 correlation_id=cmd.correlation_id, actor=""))]
        answer = SettleMarker(buy_in_id=c.buy_in_id, issued=True, outstanding_cents=after)
        return [Emit(MarkerIssued(table_id=c.table_id, buy_in_id=c.buy_in_id, player_id=c.player_id,
                                  amount_cents=c.amount_cents, outstanding_cents=after, line_cents=line)),
                Send(T.CAGE_MARKERS, command(c.table_id, settle_id, cmd.issued_at, answer,
                                             correlation_id=cmd.correlation_id, actor=""))]

    def _settle_marker(self, state: CageState, cmd: CommandEnvelope, c: SettleMarker, tag: str,
                       by: str) -> list[Emit | Send]:
        """Step 3 of a marker buy-in, at the table: book it (``BoughtIn``) or refuse the buy-in with the
        cage's reason, the reservation released either way."""
        r = state.reserved.get(c.buy_in_id)
        if r is None:
            return _reject(cmd, tag, "unknown_buy_in", f"no marker buy-in {c.buy_in_id} awaits the cage at "
                                                       f"{state.table_id}")
        if not c.issued:
            return [Emit(CommandRejected(command_id=r.command_id, command="buy_in", reason=c.reason or
                                         "over_credit_line", detail=c.detail))]
        s = state.open_shift
        if s is None or s.shift_id != r.shift_id:  # never: a closer waits for every reservation
            return [Emit(CommandRejected(command_id=r.command_id, command="buy_in", reason="table_closed",
                                         detail=f"shift {r.shift_id} is not open at {state.table_id}"))]
        return [Emit(BoughtIn(buy_in_id=c.buy_in_id, shift_id=r.shift_id, seat=r.seat, player_id=r.player_id,
                              method="marker", amount_cents=r.amount_cents, tray_cents=s.tray_cents - r.amount_cents,
                              by=r.by, marker_balance_cents=c.outstanding_cents))]

    def _remove_drop_box(self, state: CageState, cmd: CommandEnvelope, c: RemoveDropBox, tag: str,
                         by: str) -> list[Emit | Send]:
        box = state.boxes.get(c.shift_id)
        if box is None:
            return _reject(cmd, tag, "unknown_shift", f"no uncounted box of shift {c.shift_id}")
        if state.open_shift is not None and state.open_shift.shift_id == c.shift_id:
            return _reject(cmd, tag, "shift_not_closed", f"shift {c.shift_id} is open: its closer first")
        if box[1]:
            return _reject(cmd, tag, "box_already_removed", f"the box of shift {c.shift_id} was removed")
        return [Emit(DropBoxRemoved(shift_id=c.shift_id, by=by))]

    def _count_drop_box(self, state: CageState, cmd: CommandEnvelope, c: CountDropBox, tag: str,
                        by: str) -> list[Emit | Send]:
        box = state.boxes.get(c.shift_id)
        if box is None:
            reason = "box_already_counted" if c.shift_id in state.shifts else "unknown_shift"
            return _reject(cmd, tag, reason, f"no uncounted box of shift {c.shift_id}")
        if not box[1]:
            return _reject(cmd, tag, "box_not_removed", f"the box of shift {c.shift_id} is still at the table")
        team = {by, *c.counters}
        if len(team) < MIN_COUNT_TEAM:
            return _reject(cmd, tag, "count_team_too_small",
                           f"{len(team)} distinct counters, at least {MIN_COUNT_TEAM} required")
        bad = count_problem(c.cash, c.cash_cents)
        if bad:
            return _reject(cmd, tag, *bad)
        if c.markers < 0 or c.markers_cents < 0 or (c.markers == 0) != (c.markers_cents == 0):
            return _reject(cmd, tag, "invalid_count", f"{c.markers} markers worth {c.markers_cents} cents")
        drop = c.cash_cents + c.markers_cents
        return [Emit(DropBoxCounted(shift_id=c.shift_id, cash=c.cash, cash_cents=c.cash_cents, markers=c.markers,
                                    markers_cents=c.markers_cents, drop_cents=drop, counters=sorted(team),
                                    expected_cents=box[0], drop_variance_cents=drop - box[0]))]

    def _redeem_chips(self, state: CageState, cmd: CommandEnvelope, c: RedeemChips, tag: str,
                      by: str) -> list[Emit | Send]:
        if c.amount_cents <= 0:
            return _reject(cmd, tag, "invalid_amount", f"{c.amount_cents} cents")
        if c.method not in ("cash", "marker_redemption"):
            return _reject(cmd, tag, "unknown_method", f"{c.method!r} is not cash or marker_redemption")
        balance = 0
        if c.method == "marker_redemption":
            outstanding = state.markers.get(c.player_id, 0)
            if c.amount_cents > outstanding:  # the outstanding never goes below zero
                return _reject(cmd, tag, "over_outstanding",
                               f"{c.amount_cents} cents repaid, {c.player_id} owes {outstanding} in markers"
                               + ("" if state.table_id == CAGE_KEY else f" at {state.table_id} (markers are "
                                                                          f"repaid at {CAGE_KEY})"))
            balance = outstanding - c.amount_cents
        return [Emit(ChipsRedeemed(redemption_id=c.redemption_id, player_id=c.player_id,
                                   amount_cents=c.amount_cents, method=c.method, by=by,
                                   marker_balance_cents=balance))]


def marker_command_id(step: str, table_id: str, buy_in_id: str, cause: str) -> str:
    """The deterministic command id of a marker buy-in's ``step`` (``draw`` | ``settle``) for ``buy_in_id``
    at ``table_id``, caused by command ``cause`` (the ``BuyIn``, the ``DrawMarker``): ``<step>-marker-`` and
    16 hex digits of BLAKE2b. A re-send is dropped by its id; a buy-in refused and asked again under the same
    buy-in id (a new command) draws anew."""
    digest = hashlib.blake2b(f"{table_id}\x00{buy_in_id}\x00{cause}".encode(), digest_size=8).hexdigest()
    return f"{step}-marker-{digest}"
