"""The audit of the cage's books: every figure a shift statement is made of, re-derived from ``cage.events``.

:func:`check_cage` reads the cage's events of each table (in ``seq`` order) and checks, each finding at its
record (``cage.events#<seq>``) with its own kind:

* ``cage_count_mismatch``: a count (opener, closer, fill or credit slip, the drop box's cash) whose pieces by
  denomination do not add up to the total it states, or lists a denomination twice or a negative count (a
  tampered count);
* ``fill_forged`` / ``credit_forged``: a fill issued or received, a credit handed over or received, with no
  slip requested (or issued / handed over) before it in the same shift, or a second receipt of one slip
  (a forged fill, a slip booked twice);
* ``slip_amount_mismatch``: a slip's step whose total is not the total requested;
* ``tray_mismatch``: a closer whose ``tray_variance_cents`` is not its total less its ``expected_cents``;
* ``drop_mismatch``: a soft count whose drop is not its cash plus its markers, whose expected drop is not the
  cash and marker buy-ins the shift's ``BoughtIn`` events put in the box, or whose drop variance is not their
  difference; ``count_team_too_small`` for fewer than three counters;
* ``cage_out_of_shift``: a slip, buy-in or count of a shift that never opened (or after its closer, for a
  slip or buy-in);
* ``game_result_mismatch`` (when ``settlement.events`` are among the envelopes): a closer whose game result
  or rounds are not those the table's settlements give for the shift. The shift's rounds are the
  ``RoundSettled`` of the table, in ``settlement.events`` order, after the round its opener names
  (``ShiftOpened.last_round_id``: the last one the cage had booked when the opener was counted) up to the
  one its closer names; their game result is Σ ``table_result`` (stakes taken − payouts + commission
  accrued, cents), their rounds those not voided (a ``BetSettled`` of category ``round_voided``). An opener
  or closer naming a round the settlements do not hold is one too. So a closer whose game result was changed (and the statement's
  count variance with it), or whose rounds were, is found at its record even when its other figures agree.
* ``marker_mismatch`` (casino-wide credit, when the log holds the cage key's ``MarkerIssued`` or a table's
  ``MarkerRequested``; the whole floor, not one table): each marker buy-in's three steps, the table's
  reservation (``MarkerRequested``), the cage key's ``MarkerIssued`` and the table's marker ``BoughtIn``,
  matched by table and buy-in id. Found: a marker booked at a table that the cage never issued, or of
  another amount or patron (a forged ``BoughtIn``); a marker issued that no table asked for, of another
  amount or patron than asked, or that the table refused (a forged ``MarkerIssued``); a marker the table
  asked for or the cage issued while the shift closed without its answer (the cage refuses a closer while a
  marker is pending: the answer never came). Each patron's outstanding at ``CAGE`` is followed from his
  markers and repayments (``outstanding_cents`` of each ``MarkerIssued`` the one before plus its amount,
  within its line, its ``line_cents`` the last ``CreditLineSet`` of the patron at ``CAGE``;
  ``marker_balance_cents`` of each marker redemption the one before less its amount, never
  below zero).

  **In flight** is a marker whose last step on the log is the reservation or the ``MarkerIssued`` and whose
  table's shift is still open at the end of the log read: a live floor between two steps. It is a
  ``marker_unsettled`` *notice* (``notice``; :attr:`croupier.audit.AuditReport.notices`), not a finding,
  at its last record. The other order (a table's ``BoughtIn`` on the log, the cage's ``MarkerIssued`` not)
  is no log's state: the ``BoughtIn`` is caused by the ``SettleMarker`` written in the transaction of the
  ``MarkerIssued``, and the audit's reader reads the cage key's partition last
  (:func:`croupier.log.read_for_audit`), so such a ``BoughtIn`` is a finding. The result does not depend
  on the order of ``envelopes`` across tables. A log that spans the change to casino-wide credit holds
  marker ``BoughtIn`` with no step before them, per table as they were then: one whose ``occurred_at`` is
  before the log's first ``MarkerRequested`` or ``MarkerIssued`` is not matched (a log with no marker step
  at all is not checked).

Sources: the formulas of ``docs/cage.md`` (general US table-games accounting); the statement is
:func:`services.cage.statement.statements` of the same events, so a statement the audit passes adds up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from contracts.cage import (
    CAGE_KEY,
    BoughtIn,
    ChipCount,
    ChipsRedeemed,
    CreditHandedOver,
    CreditLineSet,
    CreditReceived,
    CreditRequested,
    DropBoxCounted,
    FillIssued,
    FillReceived,
    FillRequested,
    MarkerIssued,
    MarkerRequested,
    ShiftClosed,
    ShiftOpened,
)
from contracts.envelope import Envelope
from contracts.events import BetSettled, CommandRejected, RoundSettled
from services.cage.counts import count_problem

CAGE_STREAM = "cage.events"
SETTLEMENT_STREAM = "settlement.events"
MIN_COUNTERS = 3
Add = Callable[[str, str, str, str], None]
#: each slip step: the step before it it needs, and the slip's kind
_STEPS: dict[type, tuple[str, str]] = {FillIssued: ("requested", "fill"), FillReceived: ("issued", "fill"),
                                       CreditHandedOver: ("requested", "credit"),
                                       CreditReceived: ("handed_over", "credit")}
_AFTER = {FillIssued: "issued", FillReceived: "received", CreditHandedOver: "handed_over",
          CreditReceived: "received"}


@dataclass
class _Shift:
    open: bool = True
    box_cents: int = 0
    slips: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # id -> (kind, status, total)


def check_cage(envelopes: Iterable[Envelope], add: Add, table_id: str | None = None,
               notice: Add | None = None) -> int:
    """Check every cage event of ``envelopes`` (other streams skipped; one table with ``table_id``);
    ``add(table_id, kind, where, detail)`` is called for each finding, ``notice`` (same arguments; None:
    dropped) for each marker in flight at the end of the log (``marker_unsettled``: not a finding). Returns
    how many cage events were checked."""
    by_table: dict[str, list[Envelope]] = {}
    settled: dict[str, list[Envelope]] = {}
    for env in envelopes:
        if table_id is not None and env.table_id != table_id:
            continue
        if env.stream == CAGE_STREAM:
            by_table.setdefault(env.table_id, []).append(env)
        elif env.stream == SETTLEMENT_STREAM:
            settled.setdefault(env.table_id, []).append(env)
    n = 0
    for tid, envs in sorted(by_table.items()):
        envs.sort(key=lambda e: e.seq)
        n += len(envs)
        _check_table(tid, envs, add)
        if settled:  # the settlements were read: each shift's game result re-derived from them
            _check_game_results(tid, envs, sorted(settled.get(tid, []), key=lambda e: e.seq), add)
    if table_id is None:
        _check_markers(by_table, add, notice or (lambda *_: None))
    return n


@dataclass
class _TableMarker:
    """One marker buy-in as its table's log shows it: the reservation (``MarkerRequested``) and the table's
    answer after it (``BoughtIn`` or the buy-in's ``CommandRejected``), or the shift's closer with none."""

    requested: Envelope | None = None
    booked: Envelope | None = None
    refused: Envelope | None = None
    closed: Envelope | None = None


def _table_markers(tid: str, envs: list[Envelope]) -> dict[str, _TableMarker]:
    """``tid``'s marker buy-ins by buy-in id, from its cage events in ``seq`` order."""
    out: dict[str, _TableMarker] = {}
    waiting: dict[str, str] = {}  # the buy-in's command id -> buy-in id, while it awaits the cage
    for e in envs:
        p = e.payload
        if isinstance(p, MarkerRequested):
            out.setdefault(p.buy_in_id, _TableMarker()).requested = e
            waiting[e.causation_id] = p.buy_in_id
        elif isinstance(p, BoughtIn) and p.method == "marker":
            out.setdefault(p.buy_in_id, _TableMarker()).booked = e
            waiting = {k: v for k, v in waiting.items() if v != p.buy_in_id}
        elif isinstance(p, CommandRejected) and p.command == "buy_in" and p.command_id in waiting:
            out[waiting.pop(p.command_id)].refused = e
        elif isinstance(p, ShiftClosed):
            for bid in list(waiting.values()):
                m = out[bid]
                if m.requested is not None and m.requested.payload.shift_id == p.shift_id and m.closed is None:
                    m.closed = e
    return out


def _check_markers(by_table: dict[str, list[Envelope]], add: Add, notice: Add) -> None:
    """``marker_mismatch`` findings and ``marker_unsettled`` notices: the cage key's markers against the
    tables' (see the module docstring)."""
    cage = by_table.get(CAGE_KEY, [])
    if not any(isinstance(e.payload, (MarkerIssued, MarkerRequested)) for envs in by_table.values() for e in envs):
        return  # a log written before casino-wide credit: markers were per table
    issued: dict[tuple[str, str], Envelope] = {}
    outstanding: dict[str, int] = {}
    lines: dict[str, int] = {}
    for e in cage:
        p, where = e.payload, f"{CAGE_STREAM}#{e.seq}"
        if isinstance(p, CreditLineSet):
            lines[p.player_id] = p.line_cents
        elif isinstance(p, MarkerIssued):
            issued[(p.table_id, p.buy_in_id)] = e
            want = outstanding.get(p.player_id, 0) + p.amount_cents
            line = lines.get(p.player_id, 0)
            if p.outstanding_cents != want or want > line or p.line_cents != line or p.amount_cents <= 0:
                add(CAGE_KEY, "marker_mismatch", where,
                    f"marker {p.buy_in_id} of {p.amount_cents} cents states {p.player_id}'s outstanding "
                    f"{p.outstanding_cents} (line {p.line_cents}); his markers and repayments make {want}, "
                    f"his line set at {CAGE_KEY} is {line}")
            outstanding[p.player_id] = want
        elif isinstance(p, ChipsRedeemed) and p.method == "marker_redemption":
            want = outstanding.get(p.player_id, 0) - p.amount_cents
            if p.marker_balance_cents != want or want < 0:
                add(CAGE_KEY, "marker_mismatch", where,
                    f"a repayment of {p.amount_cents} cents states {p.player_id}'s outstanding "
                    f"{p.marker_balance_cents}; his markers and repayments make {want}")
            outstanding[p.player_id] = max(want, 0)
    # a marker booked before casino-wide credit (no step of it on the log, its time before the log's first
    # marker step): per table then, nothing issued at CAGE to match
    first_step = min(e.occurred_at for envs in by_table.values() for e in envs
                     if isinstance(e.payload, (MarkerIssued, MarkerRequested)))
    tables = {tid: _table_markers(tid, envs) for tid, envs in sorted(by_table.items()) if tid != CAGE_KEY}
    for tid, markers in tables.items():
        for bid, m in sorted(markers.items()):
            got = issued.pop((tid, bid), None)
            req = m.requested
            if m.booked is not None:  # step 3 on the log: step 2 must be too (the reader reads CAGE's key last)
                p = m.booked.payload
                if got is None and req is None and m.booked.occurred_at < first_step:
                    continue  # booked before casino-wide credit
                if got is None or (got.payload.amount_cents, got.payload.player_id) != (p.amount_cents, p.player_id):
                    said = "the cage issued none" if got is None else (
                        f"the cage issued {got.payload.amount_cents} cents to {got.payload.player_id} "
                        f"({CAGE_STREAM}#{got.seq})")
                    add(tid, "marker_mismatch", f"{CAGE_STREAM}#{m.booked.seq}",
                        f"marker {bid} of {p.amount_cents} cents booked to {p.player_id}: {said}")
                continue
            if got is None:
                if req is None:
                    continue
                if m.closed is not None:  # the table went on without the cage's answer
                    add(tid, "marker_mismatch", f"{CAGE_STREAM}#{m.closed.seq}",
                        f"shift {req.payload.shift_id} closed while marker {bid} of {req.payload.amount_cents} cents "
                        f"({CAGE_STREAM}#{req.seq}) awaited the cage, which never answered it")
                elif m.refused is None:
                    notice(tid, "marker_unsettled", f"{CAGE_STREAM}#{req.seq}",
                           f"marker {bid} of {req.payload.amount_cents} cents for {req.payload.player_id} awaits "
                           f"the cage's decision at the end of the log read (in flight: nothing booked yet)")
                continue
            g, where = got.payload, f"{CAGE_STREAM}#{got.seq}"
            what = f"marker {bid} of {g.amount_cents} cents issued to {g.player_id} for {tid}"
            if req is None:
                add(CAGE_KEY, "marker_mismatch", where, f"{what}: {tid} never asked for it (no MarkerRequested)")
            elif (req.payload.amount_cents, req.payload.player_id) != (g.amount_cents, g.player_id):
                add(CAGE_KEY, "marker_mismatch", where,
                    f"{what}: {tid} asked for {req.payload.amount_cents} cents for {req.payload.player_id} "
                    f"({CAGE_STREAM}#{req.seq})")
            elif m.refused is not None:
                add(CAGE_KEY, "marker_mismatch", where, f"{what}: {tid} refused the buy-in "
                    f"({CAGE_STREAM}#{m.refused.seq}, {m.refused.payload.reason}), no patron signed it")
            elif m.closed is not None:
                add(CAGE_KEY, "marker_mismatch", where, f"{what}: shift {req.payload.shift_id} closed at "
                    f"{CAGE_STREAM}#{m.closed.seq} without booking it")
            else:
                notice(CAGE_KEY, "marker_unsettled", where,
                       f"{what}: {tid} has not booked it at the end of the log read (in flight: its "
                       f"MarkerRequested {CAGE_STREAM}#{req.seq} awaits the cage's answer)")
    for (tid, bid), e in sorted(issued.items()):
        add(CAGE_KEY, "marker_mismatch", f"{CAGE_STREAM}#{e.seq}",
            f"marker {bid} of {e.payload.amount_cents} cents issued for {tid}: {tid} never asked for it "
            f"(no MarkerRequested)")


def _check_game_results(tid: str, envs: list[Envelope], settled: list[Envelope], add: Add) -> None:
    """``game_result_mismatch`` findings of ``tid``'s closers (see the module docstring)."""
    voided = {e.payload.round_id for e in settled
              if isinstance(e.payload, BetSettled) and e.payload.category == "round_voided"}
    rounds = [e.payload for e in settled if isinstance(e.payload, RoundSettled)]
    after = {r.round_id: i + 1 for i, r in enumerate(rounds)}  # a round id -> how many rounds up to it
    starts: dict[str, int] = {}
    for env in envs:
        e, where = env.payload, f"{CAGE_STREAM}#{env.seq}"
        if not isinstance(e, (ShiftOpened, ShiftClosed)):
            continue
        what = "opener" if isinstance(e, ShiftOpened) else "closer"
        if e.last_round_id and e.last_round_id not in after:
            add(tid, "game_result_mismatch", where, f"the {what} of shift {e.shift_id} names round "
                f"{e.last_round_id}, which {SETTLEMENT_STREAM} does not hold settled at {tid}")
            continue
        upto = after.get(e.last_round_id, 0)
        if isinstance(e, ShiftOpened):
            starts[e.shift_id] = upto
            continue
        start = starts.get(e.shift_id)
        if start is None:
            continue  # a closer of a shift never opened: cage_out_of_shift
        mine = rounds[start:upto]
        result, played = sum(r.table_result for r in mine), sum(1 for r in mine if r.round_id not in voided)
        if (result, played) != (e.game_result_cents, e.rounds):
            add(tid, "game_result_mismatch", where, f"the closer of shift {e.shift_id} states a game result of "
                f"{e.game_result_cents} cents in {e.rounds} rounds; {SETTLEMENT_STREAM} gives {result} cents in "
                f"{played} rounds (stakes − payouts + commission accrued of its rounds)")


def _count(tid: str, where: str, what: str, chips: list[ChipCount], total: int, add: Add) -> None:
    bad = count_problem(chips, total)
    if bad is not None:
        add(tid, "cage_count_mismatch", where, f"{what}: {bad[1]} ({bad[0]})")


def _check_table(tid: str, envs: list[Envelope], add: Add) -> None:
    shifts: dict[str, _Shift] = {}
    for env in envs:
        e = env.payload
        where = f"{CAGE_STREAM}#{env.seq}"
        if isinstance(e, ShiftOpened):
            shifts[e.shift_id] = _Shift()
            _count(tid, where, f"the opener of shift {e.shift_id}", e.chips, e.total_cents, add)
            continue
        shift_id = getattr(e, "shift_id", None)
        if not isinstance(shift_id, str):
            continue  # a rejection, a credit line: no shift figure
        s = shifts.get(shift_id)
        if s is None:
            add(tid, "cage_out_of_shift", where, f"{type(e).__name__} of shift {shift_id}, which never opened")
            continue
        if isinstance(e, (FillRequested, CreditRequested, FillIssued, FillReceived, CreditHandedOver,
                          CreditReceived, BoughtIn)) and not s.open:
            add(tid, "cage_out_of_shift", where, f"{type(e).__name__} after the closer of shift {shift_id}")
            continue
        if isinstance(e, ShiftClosed):
            s.open = False
            _count(tid, where, f"the closer of shift {shift_id}", e.chips, e.total_cents, add)
            if e.tray_variance_cents != e.total_cents - e.expected_cents:
                add(tid, "tray_mismatch", where, f"the closer of shift {shift_id} states a tray variance of "
                    f"{e.tray_variance_cents} cents; its count {e.total_cents} less the tray expected "
                    f"{e.expected_cents} is {e.total_cents - e.expected_cents}")
        elif isinstance(e, (FillRequested, CreditRequested)):
            kind, sid = ("fill", e.fill_id) if isinstance(e, FillRequested) else ("credit", e.credit_id)
            _count(tid, where, f"{kind} slip {sid}", e.chips, e.total_cents, add)
            if sid in s.slips:
                add(tid, f"{kind}_forged", where, f"{kind} slip {sid} requested a second time")
            else:
                s.slips[sid] = (kind, "requested", e.total_cents)
        elif type(e) in _STEPS:
            before, kind = _STEPS[type(e)]
            sid = e.fill_id if kind == "fill" else e.credit_id  # type: ignore[union-attr]
            got = s.slips.get(sid)
            if got is None or got[1] != before:
                state = "no slip" if got is None else f"the slip {got[1].replace('_', ' ')}"
                add(tid, f"{kind}_forged", where, f"{type(e).__name__} of {kind} {sid} with {state} (it needs it "
                    f"{before.replace('_', ' ')} first)")
                continue
            if e.total_cents != got[2]:  # type: ignore[union-attr]
                add(tid, "slip_amount_mismatch", where, f"{type(e).__name__} of {kind} {sid} for "
                    f"{e.total_cents} cents; the slip requested {got[2]}")  # type: ignore[union-attr]
            s.slips[sid] = (kind, _AFTER[type(e)], got[2])
        elif isinstance(e, BoughtIn):
            if e.method in ("cash", "marker"):
                s.box_cents += e.amount_cents
        elif isinstance(e, DropBoxCounted):
            _check_drop(tid, where, e, s.box_cents, add)


def _check_drop(tid: str, where: str, e: DropBoxCounted, box_cents: int, add: Add) -> None:
    _count(tid, where, f"the drop box of shift {e.shift_id}", e.cash, e.cash_cents, add)
    problems = []
    if e.drop_cents != e.cash_cents + e.markers_cents:
        problems.append(f"a drop of {e.drop_cents} cents, its cash {e.cash_cents} and markers "
                        f"{e.markers_cents} make {e.cash_cents + e.markers_cents}")
    if e.expected_cents != box_cents:
        problems.append(f"an expected drop of {e.expected_cents} cents, the shift's buy-ins put {box_cents} in")
    if e.drop_variance_cents != e.drop_cents - e.expected_cents:
        problems.append(f"a drop variance of {e.drop_variance_cents} cents, not {e.drop_cents - e.expected_cents}")
    if problems:
        add(tid, "drop_mismatch", where, f"the soft count of shift {e.shift_id} states " + "; ".join(problems))
    if len(set(e.counters)) < MIN_COUNTERS:
        add(tid, "count_team_too_small", where, f"the soft count of shift {e.shift_id} names "
            f"{len(set(e.counters))} counters, at least {MIN_COUNTERS} count a box")
