"""The cage desk's view of the log: what is open now at each table (shift, fill and credit slips, drop boxes),
which cage action each pit role may take on it, and how a form's text becomes a cage command.

Pure (no I/O): folded from ``cage.events`` envelopes. The pages (:mod:`croupier.cage_pages`) show
only the actions valid now, by role:

=============== ====================== ==============================================================
pit app role    cage command ``role``   actions
=============== ====================== ==============================================================
``pit``         ``supervisor``         request a fill, request a credit (at the table)
``dealer``      ``dealer``             count the opener and the closer (a supervisor attests each),
                                       take a buy-in (cash, marker or chips), receive an issued fill
                                       into the tray, hand a credit over
``cage``        ``cage_cashier``       issue a requested fill, receive a handed-over credit, set a
                                       patron's credit line, pay out chips or take a marker repayment
``count_team``  ``count_team``         remove a closed shift's drop box, enter its soft count
=============== ====================== ==============================================================

A refusal is shown with its reason code and its words (:data:`REASON_WORDS`, :func:`reason_words`).

Amounts are typed in dollars (:func:`baccarat.money.parse_dollars`) and become integer cents; a count is
typed ``denomination x pieces`` pairs (``25x40, 5x100``: forty $25 chips and a hundred $5), its total
typed apart so that a count that does not add up is refused by the cage (``count_mismatch``), not fixed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from baccarat.money import InvalidAmount, parse_dollars
from contracts import topics as T
from contracts.cage import (
    CAGE_KEY,
    BoughtIn,
    BuyIn,
    ChipCount,
    ChipsRedeemed,
    CountDropBox,
    CreditHandedOver,
    CreditLineSet,
    CreditReceived,
    CreditRequested,
    DropBoxCounted,
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
    ShiftClosed,
    ShiftOpened,
)
from contracts.commands import Command
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import CommandRejected, PlayerLeft, PlayerSeated

#: each action: (pit app role, cage command role, title); its fields are :data:`FIELDS`
ACTIONS: Mapping[str, tuple[str, str, str]] = {
    "record_opener": ("dealer", "dealer", "Record opener"),
    "buy_in": ("dealer", "dealer", "Buy-in"),
    "record_closer": ("dealer", "dealer", "Record closer"),
    "request_fill": ("pit", "supervisor", "Request a fill"),
    "request_credit": ("pit", "supervisor", "Request a credit"),
    "issue_fill": ("cage", "cage_cashier", "Issue fill"),
    "receive_fill": ("dealer", "dealer", "Receive fill"),
    "hand_over_credit": ("dealer", "dealer", "Hand over credit"),
    "receive_credit": ("cage", "cage_cashier", "Receive credit"),
    "set_credit_line": ("cage", "cage_cashier", "Set credit line (casino-wide)"),
    "redeem_chips": ("cage", "cage_cashier", "Pay out chips / take a marker repayment"),
    "remove_drop_box": ("count_team", "count_team", "Remove drop box"),
    "count_drop_box": ("count_team", "count_team", "Enter soft count"),
}
#: the form fields of each action (besides ``actor``, who acts: every form has it)
FIELDS: Mapping[str, tuple[str, ...]] = {
    "record_opener": ("shift_id", "gaming_day", "pit", "chips", "total", "supervisor_id"),
    "buy_in": ("buy_in_id", "seat", "player_id", "method", "amount", "cash"),
    "record_closer": ("shift_id", "chips", "total", "supervisor_id"),
    "request_fill": ("slip_id", "chips", "total"),
    "request_credit": ("slip_id", "chips", "total"),
    "issue_fill": ("slip_id", "runner_id"),
    "receive_fill": ("slip_id", "supervisor_id"),
    "hand_over_credit": ("slip_id", "runner_id"),
    "receive_credit": ("slip_id",),
    "set_credit_line": ("player_id", "line"),
    "redeem_chips": ("redemption_id", "player_id", "method", "amount"),
    "remove_drop_box": ("shift_id",),
    "count_drop_box": ("shift_id", "cash", "cash_total", "markers", "markers_total", "counters"),
}
#: the buy-in methods the dealer's form offers, as the cage names them (``services.cage.core.BUY_IN_METHODS``)
BUY_IN_METHODS = (("cash", "Cash"), ("marker", "Marker"), ("chips", "Chips from elsewhere"))
#: what the window's redemption form offers (``RedeemChips.method``): chips paid out in cash, or a marker repaid
REDEEM_METHODS = (("cash", "Chips paid out in cash"), ("marker_redemption", "Marker repaid"))
#: the actions decided at the cage's key ``CAGE`` (casino-wide), whichever table's desk they are pressed at
CAGE_KEY_ACTIONS = frozenset({"set_credit_line", "redeem_chips"})
#: the window's own forms, in the order the desk shows them (the cage role's, at the top of the desk whether or
#: not a table has a shift open: a patron's line and a repayment are no table's; :func:`window_actions`)
WINDOW_ACTIONS = ("set_credit_line", "redeem_chips")
#: the hour (UTC) a gaming day starts, as the cage's (``services.cage.patrons``): the opener's default day
GAMING_DAY_CUTOFF_HOUR = 6
#: each reason code the desk may show, in words (the cage service's, ``services.cage.core``, and the page's own)
REASON_WORDS: Mapping[str, str] = {
    "role_not_permitted": "your role may not do this",
    "same_person": "the one who counts may not also attest or approve: two people sign",
    "count_team_too_small": "a soft count needs at least three people of the count team",
    "invalid_count": "a count with a negative or empty denomination",
    "count_mismatch": "the chips by denomination do not add up to the total",
    "invalid_amount": "the amount must be more than zero",
    "shift_already_opened": "that shift already has its opener",
    "shift_open": "the table's shift is still open: count its closer first",
    "table_closed": "no shift is open at this table: count an opener first",
    "unknown_shift": "no such shift open at this table",
    "unknown_fill": "no such fill slip",
    "unknown_credit": "no such credit slip",
    "fill_not_requested": "the fill was not requested",
    "fill_not_issued": "the fill has not been issued by the cage yet",
    "credit_not_requested": "the credit was not requested",
    "credit_not_handed_over": "the credit has not been handed over at the table yet",
    "duplicate_slip": "a slip with that number exists already",
    "credit_exceeds_tray": "the credit is more than the tray holds",
    "tray_short": "the tray does not hold that many chips: request a fill first",
    "player_not_seated": "that patron is not seated at that seat",
    "unknown_method": "a buy-in is in cash, by marker or in chips",
    "over_credit_line": "the marker would take the patron's markers outstanding at all tables together past "
                        "the credit line the cage set",
    "cage_only": "credit lines and markers are decided at the cage (casino-wide), not at a table",
    "marker_pending": "a marker buy-in is waiting for the cage's answer: count the closer after it",
    "unknown_buy_in": "no marker buy-in of that number is waiting for the cage at this table",
    "over_outstanding": "the repayment is more than the patron's markers outstanding",
    "box_not_removed": "the drop box is still at the table: remove it first",
    "box_already_removed": "the drop box was removed already",
    "box_already_counted": "the drop box was counted already",
    "shift_not_closed": "the shift is still open: its closer first",
    "not_a_cage_command": "not a command the cage takes",
    "invalid_form": "a field is missing or not what it should be",
    "unknown_action": "no such action at the cage's desk",
    "broker_unavailable": "the log could not be reached: nothing was sent",
    "no_answer": "the cage did not answer in time",
}


def reason_words(code: str) -> str:
    """``code`` in words (:data:`REASON_WORDS`); an unknown code as itself, underscores as spaces."""
    return REASON_WORDS.get(code, code.replace("_", " "))


_PAIR = re.compile(r"^\s*\$?\s*([0-9][0-9,]*(?:\.[0-9]{1,2})?)\s*[x×*]\s*([0-9]+)\s*$")


class FormError(ValueError):
    """A form's field that cannot be a command (``field`` names it): shown beside the form, nothing sent."""

    def __init__(self, field_name: str, detail: str):
        super().__init__(f"{field_name}: {detail}")
        self.field = field_name
        self.detail = detail


@dataclass
class SlipNow:
    """One fill or credit slip of an open shift: ``kind`` ``fill`` | ``credit``; ``status`` ``requested``,
    ``issued`` / ``handed_over``, ``received``; cents."""

    kind: str
    slip_id: str
    total_cents: int
    status: str


@dataclass
class ShiftNow:
    """One table's shift as the desk sees it: open (no closer yet) or closed; its slips; its drop box
    (``box``: ``at_table``, ``removed``, ``counted``)."""

    table_id: str
    shift_id: str
    gaming_day: str
    pit: str
    open: bool = True
    box: str = "at_table"
    slips: dict[str, SlipNow] = field(default_factory=dict)
    buy_ins: int = 0


def desk_state(events: Iterable[Envelope]) -> list[ShiftNow]:
    """Every table's shifts from ``cage.events`` (other events skipped), in the order they opened."""
    shifts: dict[tuple[str, str], ShiftNow] = {}
    for env in events:
        e = env.payload
        if isinstance(e, ShiftOpened):
            shifts[(env.table_id, e.shift_id)] = ShiftNow(env.table_id, e.shift_id, e.gaming_day, e.pit)
            continue
        s = shifts.get((env.table_id, getattr(e, "shift_id", "")))
        if s is None:
            continue
        if isinstance(e, ShiftClosed):
            s.open = False
        elif isinstance(e, BoughtIn):
            s.buy_ins += 1
        elif isinstance(e, DropBoxRemoved):
            s.box = "removed"
        elif isinstance(e, DropBoxCounted):
            s.box = "counted"
        elif isinstance(e, (FillRequested, CreditRequested)):
            kind = "fill" if isinstance(e, FillRequested) else "credit"
            sid = e.fill_id if isinstance(e, FillRequested) else e.credit_id
            s.slips[sid] = SlipNow(kind, sid, e.total_cents, "requested")
        elif isinstance(e, (FillIssued, FillReceived)):
            s.slips[e.fill_id] = SlipNow("fill", e.fill_id, e.total_cents,
                                         "issued" if isinstance(e, FillIssued) else "received")
        elif isinstance(e, (CreditHandedOver, CreditReceived)):
            s.slips[e.credit_id] = SlipNow("credit", e.credit_id, e.total_cents,
                                           "handed_over" if isinstance(e, CreditHandedOver) else "received")
    return list(shifts.values())


@dataclass
class TableNow:
    """A table as the dealer's desk sees it: ``seated`` (seat, player id) registered now (``wagering.events``),
    ``shifts`` its cage shifts (:class:`ShiftNow`, oldest first)."""

    table_id: str
    seated: list[tuple[int, str]] = field(default_factory=list)
    shifts: list[ShiftNow] = field(default_factory=list)

    @property
    def open_shift(self) -> ShiftNow | None:
        """The shift open now (an opener, no closer), or None: then the dealer may count an opener."""
        return next((s for s in self.shifts if s.open), None)


def tables_now(events: Iterable[Envelope], shifts: Iterable[ShiftNow]) -> list[TableNow]:
    """Every table the log names (any event of it, the cage window's ``CAGE`` aside), sorted by id, with who is
    seated and its ``shifts`` (from :func:`desk_state`)."""
    seated: dict[str, set[tuple[int, str]]] = {}
    for env in events:
        if env.table_id == "CAGE":
            continue
        here = seated.setdefault(env.table_id, set())
        if isinstance(env.payload, PlayerSeated):
            here.add((env.payload.seat, env.payload.player_id))
        elif isinstance(env.payload, PlayerLeft):
            here.discard((env.payload.seat, env.payload.player_id))
    by_table: dict[str, list[ShiftNow]] = {}
    for s in shifts:
        by_table.setdefault(s.table_id, []).append(s)
        seated.setdefault(s.table_id, set())
    return [TableNow(t, sorted(seated[t]), by_table.get(t, [])) for t in sorted(seated)]


@dataclass(frozen=True, slots=True)
class CreditNow:
    """A patron's casino-wide credit as the cage's key holds it now (cents): ``line_cents`` the line the cage
    set (0: none), ``outstanding_cents`` his markers issued at every table less those repaid at the window."""

    player_id: str
    line_cents: int
    outstanding_cents: int

    @property
    def available_cents(self) -> int:
        """What he may still sign in markers (cents): the line less the outstanding, 0 when the line was
        lowered below what he owes."""
        return max(0, self.line_cents - self.outstanding_cents)


def credit_now(events: Iterable[Envelope]) -> list[CreditNow]:
    """Every patron with a credit line or markers at the cage's key ``CAGE`` (``CreditLineSet``,
    ``MarkerIssued``'s ``outstanding_cents``, a marker redemption's ``marker_balance_cents``), by player id.
    A ``CreditLineSet`` at a table's key (a log written before lines were casino-wide) is no line: the cage
    decides markers at ``CAGE`` alone (``docs/cage.md``)."""
    lines: dict[str, int] = {}
    owed: dict[str, int] = {}
    for env in events:
        if env.table_id != CAGE_KEY or env.stream != T.CAGE_EVENTS:
            continue
        e = env.payload
        if isinstance(e, CreditLineSet):
            lines[e.player_id] = e.line_cents
        elif isinstance(e, MarkerIssued):
            owed[e.player_id] = e.outstanding_cents
        elif isinstance(e, ChipsRedeemed) and e.method == "marker_redemption":
            owed[e.player_id] = e.marker_balance_cents
    return [CreditNow(p, lines.get(p, 0), owed.get(p, 0)) for p in sorted(lines.keys() | owed.keys())]


def credit_dict(c: CreditNow) -> dict[str, Any]:
    """A patron's credit of :func:`credit_now` for JSON (cents)."""
    return {"player_id": c.player_id, "line_cents": c.line_cents, "outstanding_cents": c.outstanding_cents,
            "available_cents": c.available_cents}


def gaming_day(now: datetime) -> date:
    """The gaming day of ``now`` (UTC): the calendar day of ``now`` less :data:`GAMING_DAY_CUTOFF_HOUR` hours."""
    return (now - timedelta(hours=GAMING_DAY_CUTOFF_HOUR)).date()


def opener_defaults(table: TableNow, now: datetime) -> dict[str, str]:
    """The opener form's suggested values at ``table``: the next shift id (``<table>-s<n>``), today's gaming
    day, the pit of its last shift."""
    last = table.shifts[-1] if table.shifts else None
    return {"shift_id": f"{table.table_id}-s{len(table.shifts) + 1}", "gaming_day": gaming_day(now).isoformat(),
            "pit": last.pit if last else ""}


#: the one action valid now on a slip in each (kind, status), none once received
_NEXT = {("fill", "requested"): "issue_fill", ("fill", "issued"): "receive_fill",
         ("credit", "requested"): "hand_over_credit", ("credit", "handed_over"): "receive_credit"}


def next_action(slip: SlipNow) -> str | None:
    """The action that moves ``slip`` on (None when it is complete)."""
    return _NEXT.get((slip.kind, slip.status))


def actions_now(shift: ShiftNow, role: str) -> list[tuple[str, str]]:
    """``(action, slip or shift id)`` the pit app role ``role`` may take on ``shift`` now: the next step of each
    open slip that is its role's, a new fill or credit request on an open shift (pit), the dealer's buy-in and
    closer, the drop box's removal and soft count on a closed shift (count team). The window's actions (a credit
    line, a repayment) are no shift's: :func:`window_actions`."""
    out: list[tuple[str, str]] = []
    if shift.open:
        for slip in shift.slips.values():
            a = next_action(slip)
            if a is not None and ACTIONS[a][0] == role:
                out.append((a, slip.slip_id))
        if role == "pit":
            out += [("request_fill", ""), ("request_credit", "")]
        if role == "dealer":
            out += [("buy_in", ""), ("record_closer", shift.shift_id)]
    elif role == "count_team" and shift.box == "at_table":
        out.append(("remove_drop_box", shift.shift_id))
    elif role == "count_team" and shift.box == "removed":
        out.append(("count_drop_box", shift.shift_id))
    return out


def window_actions(role: str) -> list[str]:
    """The window's actions (:data:`WINDOW_ACTIONS`) the pit app role ``role`` may take: all of them for the
    ``cage``, none for any other role. Offered whether or not any table has a shift open."""
    return [a for a in WINDOW_ACTIONS if ACTIONS[a][0] == role]


def parse_count(text: str, what: str) -> list[ChipCount]:
    """``"25x40, 5x100"`` (dollars × pieces, ``,`` or ``;`` between pairs) as chip counts in cents; empty text
    is no pieces. Raises :class:`FormError` naming ``what`` for anything else."""
    out: list[ChipCount] = []
    for part in re.split(r"[,;]\s+|;", text.strip()) if text.strip() else []:
        m = _PAIR.match(part)
        if m is None:
            raise FormError(what, f"{part.strip()[:40]!r} is not 'dollars x pieces' (e.g. 25x40)")
        try:
            cents = parse_dollars(m.group(1), what)
        except InvalidAmount as e:
            raise FormError(what, str(e)) from None
        out.append(ChipCount(cents, int(m.group(2))))
    return out


def _dollars(form: Mapping[str, str], name: str) -> int:
    try:
        return parse_dollars(form.get(name, ""), name)
    except InvalidAmount as e:
        raise FormError(name, str(e)) from None


def _text(form: Mapping[str, str], name: str) -> str:
    v = form.get(name, "").strip()
    if not v:
        raise FormError(name, "required")
    return v


def build_command(action: str, form: Mapping[str, str]) -> Command:
    """The cage command of ``action`` from a form's fields (:data:`FIELDS`), with its cage ``role``
    (:data:`ACTIONS`). Raises ``KeyError`` for an unknown action, :class:`FormError` for a field that is
    missing or not an amount or count; everything else (a slip out of order, a count that does not add up, a
    credit the tray cannot cover) is the cage's to refuse, with its reason code."""
    role = ACTIONS[action][1]
    f = form
    if action in ("record_opener", "record_closer"):
        chips, total = parse_count(f.get("chips", ""), "chips"), _dollars(f, "total")
        shift, sup = _text(f, "shift_id"), _text(f, "supervisor_id")
        if action == "record_closer":
            return RecordCloser(shift_id=shift, chips=chips, total_cents=total, supervisor_id=sup, role=role)
        day = _text(f, "gaming_day")
        try:
            date.fromisoformat(day)
        except ValueError:
            raise FormError("gaming_day", f"{day[:20]!r} is not a date (YYYY-MM-DD)") from None
        return RecordOpener(shift_id=shift, gaming_day=day, pit=f.get("pit", "").strip(), chips=chips,
                            total_cents=total, supervisor_id=sup, role=role)
    if action == "buy_in":
        seat = f.get("seat", "").strip()
        if not seat.isdigit():
            raise FormError("seat", f"{seat[:10]!r} is not a seat number")
        return BuyIn(buy_in_id=_text(f, "buy_in_id"), seat=int(seat), player_id=_text(f, "player_id"),
                     method=_text(f, "method"), amount_cents=_dollars(f, "amount"),
                     cash=parse_count(f.get("cash", ""), "cash"), role=role)
    if action in ("request_fill", "request_credit"):
        chips, total = parse_count(f.get("chips", ""), "chips"), _dollars(f, "total")
        if action == "request_fill":
            return RequestFill(fill_id=_text(f, "slip_id"), chips=chips, total_cents=total, role=role)
        return RequestCredit(credit_id=_text(f, "slip_id"), chips=chips, total_cents=total, role=role)
    if action == "issue_fill":
        return IssueFill(fill_id=_text(f, "slip_id"), runner_id=_text(f, "runner_id"), role=role)
    if action == "receive_fill":
        return ReceiveFill(fill_id=_text(f, "slip_id"), supervisor_id=_text(f, "supervisor_id"), role=role)
    if action == "hand_over_credit":
        return HandOverCredit(credit_id=_text(f, "slip_id"), runner_id=_text(f, "runner_id"), role=role)
    if action == "receive_credit":
        return ReceiveCredit(credit_id=_text(f, "slip_id"), role=role)
    if action == "set_credit_line":
        return SetCreditLine(player_id=_text(f, "player_id"), line_cents=_dollars(f, "line"), role=role)
    if action == "redeem_chips":
        return RedeemChips(redemption_id=_text(f, "redemption_id"), player_id=_text(f, "player_id"),
                           amount_cents=_dollars(f, "amount"), method=_text(f, "method"), role=role)
    if action == "remove_drop_box":
        return RemoveDropBox(shift_id=_text(f, "shift_id"), role=role)
    if action == "count_drop_box":
        markers = f.get("markers", "0").strip() or "0"
        if not markers.isdigit():
            raise FormError("markers", f"{markers[:20]!r} is not a number of markers")
        counters = [c for c in re.split(r"[,\s]+", f.get("counters", "")) if c]
        return CountDropBox(shift_id=_text(f, "shift_id"), cash=parse_count(f.get("cash", ""), "cash"),
                            cash_cents=_dollars(f, "cash_total"), markers=int(markers),
                            markers_cents=_dollars({"markers_total": f.get("markers_total") or "0"}, "markers_total"),
                            counters=counters, role=role)
    raise KeyError(action)


def shift_dict(s: ShiftNow) -> dict[str, Any]:
    """A shift of :func:`desk_state` for JSON (cents)."""
    return {"table_id": s.table_id, "shift_id": s.shift_id, "gaming_day": s.gaming_day, "pit": s.pit,
            "open": s.open, "box": s.box, "buy_ins": s.buy_ins,
            "slips": [{"kind": x.kind, "slip_id": x.slip_id, "total_cents": x.total_cents, "status": x.status,
                       "next": next_action(x)} for x in s.slips.values()]}


def answer_of(events: Iterable[Envelope], cmd: CommandEnvelope) -> list[Envelope] | None:
    """The ``cage.events`` answering ``cmd`` (a ``CommandRejected`` when refused), or None while it is not
    answered yet. Most commands are answered by the events they caused at their key; a marker buy-in is
    answered in its third step: its ``MarkerRequested`` (caused by the ``BuyIn``) only holds the chips while
    ``CAGE`` decides, and the ``BoughtIn`` or the buy-in's ``CommandRejected`` comes caused by the cage's
    ``SettleMarker``, correlated to the buy-in's command id (``services.cage.core``)."""
    caused = [e for e in events if e.stream == T.CAGE_EVENTS and e.table_id == cmd.table_id
              and (e.causation_id == cmd.command_id
                   or (e.correlation_id == cmd.command_id and isinstance(e.payload, (BoughtIn, CommandRejected))))]
    if not any(e.causation_id == cmd.command_id for e in caused):
        return None
    if any(isinstance(e.payload, MarkerRequested) for e in caused):
        final = [e for e in caused if e.causation_id != cmd.command_id]
        return final or None
    return caused
