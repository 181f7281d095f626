"""The pit's, the cage's and surveillance's views of the floor: pure functions over the tables' projection states.

Everything here reads :class:`services.projection.core.ProjectionState` (its ``pit`` figures,
:mod:`services.projection.pit_state`, and its ledger's running totals) and returns plain values for the
query API (:mod:`services.projection.pit_api`). No I/O, no clock: the moment a view is "as of" is an argument.

Money is integer cents, exact. **Hold %** = win / drop (definitions of drop and win:
:mod:`services.projection.pit_state`), given as ``hold_bps``, an integer number of basis points (hundredths
of a percent) rounded by the policy :data:`HOLD_ROUNDING` (``half_even``: to the nearest basis point, halves
to the even one, :class:`baccarat.money.RoundingPolicy` ``HALF_EVEN``; Python's ``round`` of an exact
``Fraction``), and ``hold_pct``, the same number as a decimal string (``"12.35"``); both are null when the
drop is 0.

**Shifts** (:class:`PitSettings`): the gaming day (which starts at the cutoff hour, 06:00 UTC by default)
is cut into shifts at the hours of the gaming day given (default ``0, 8, 16``: 06:00-14:00, 14:00-22:00 and
22:00-06:00 UTC, a casino's day, swing and graveyard shifts); each shift is numbered from 1.

**Surveillance threshold**: a player is *raised* when the expected gain of their positive-EV bets over the
gaming day, summed over every table, reaches :attr:`PitSettings.raise_threshold_cents` (default
:data:`DEFAULT_RAISE_THRESHOLD_CENTS`); the ranking lists every flagged player by that expected gain. A
raised player is an *open alert* of every table they were flagged at, until the gaming day ends (there is no
acknowledging an alert).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import Any

from baccarat.money import RoundingPolicy
from services.projection.core import ProjectionState
from services.projection.ledger import DEFAULT_CUTOFF_HOUR
from services.projection.pit_state import DayFigures, HourFigures, day_and_hour, previous_day

#: the rounding of hold % to a basis point
HOLD_ROUNDING = RoundingPolicy.HALF_EVEN
#: a player is raised at $50.00 of expected gain in a gaming day
DEFAULT_RAISE_THRESHOLD_CENTS = 5_000
#: three 8-hour shifts from the cutoff
DEFAULT_SHIFT_STARTS = (0, 8, 16)
ENV_RAISE_THRESHOLD = "CROUPIER_SURVEILLANCE_RAISE_CENTS"
ENV_SHIFT_STARTS = "CROUPIER_SHIFT_STARTS"
CSV_COLUMNS = ("table_id", "gaming_day", "hour_start_utc", "hour_end_utc", "rounds", "drop_cents", "win_cents",
               "hold_pct")


@dataclass(frozen=True, slots=True)
class PitSettings:
    """The pit's settings. ``raise_threshold_cents``: a player's expected gain in a gaming day (cents, ≥ 1)
    at which surveillance raises them; ``shift_starts``: the hours of the gaming day (0-23, from the cutoff)
    at which a shift starts, ascending, the first 0. Raises ``ValueError`` for anything else."""

    raise_threshold_cents: int = DEFAULT_RAISE_THRESHOLD_CENTS
    shift_starts: tuple[int, ...] = DEFAULT_SHIFT_STARTS

    def __post_init__(self) -> None:
        t = self.raise_threshold_cents
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise ValueError(f"the raise threshold must be a whole number of cents ≥ 1, got {t!r}")
        s = self.shift_starts
        if not s or s[0] != 0 or list(s) != sorted(set(s)) or s[-1] > 23 or \
                any(isinstance(h, bool) or not isinstance(h, int) for h in s):
            raise ValueError(f"shift starts must be ascending hours of the gaming day 0-23 beginning with 0, "
                             f"got {s!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PitSettings:
        """From :data:`ENV_RAISE_THRESHOLD` (cents) and :data:`ENV_SHIFT_STARTS` (comma-separated hours, e.g.
        ``0,8,16``), each defaulted when unset or empty. Raises ``ValueError`` naming the variable."""
        env = os.environ if environ is None else environ
        kw: dict[str, Any] = {}
        raw = env.get(ENV_RAISE_THRESHOLD, "").strip()
        if raw:
            try:
                kw["raise_threshold_cents"] = int(raw)
            except ValueError:
                raise ValueError(f"{ENV_RAISE_THRESHOLD}={raw!r} is not a whole number of cents") from None
        raw = env.get(ENV_SHIFT_STARTS, "").strip()
        if raw:
            try:
                kw["shift_starts"] = tuple(int(h) for h in raw.split(","))
            except ValueError:
                raise ValueError(f"{ENV_SHIFT_STARTS}={raw!r} is not a comma-separated list of hours") from None
        try:
            return cls(**kw)
        except ValueError as e:
            names = " / ".join(n for n, k in ((ENV_RAISE_THRESHOLD, "raise_threshold_cents"),
                                             (ENV_SHIFT_STARTS, "shift_starts")) if k in kw)
            raise ValueError(f"{names}: {e}") from None

    def shift_of(self, hour: int) -> int:
        """The shift (1-based) of an hour of the gaming day."""
        return sum(1 for s in self.shift_starts if s <= hour)

    def shift_hours(self, shift: int) -> tuple[int, int]:
        """``(first hour, end hour)`` of a shift (1-based) in hours of the gaming day (end exclusive, ≤ 24)."""
        starts = self.shift_starts
        return starts[shift - 1], (starts[shift] if shift < len(starts) else 24)


# ---- figures -----------------------------------------------------------------------------------------
def hold_bps(win_cents: int, drop_cents: int) -> int | None:
    """win / drop in basis points, rounded half-even (:data:`HOLD_ROUNDING`); None when the drop is 0.
    ``hold_bps(1234, 10_000) == 1234``; ``hold_bps(1, 20_000) == 0`` (0.5 bp, to the even 0);
    ``hold_bps(3, 20_000) == 2`` (1.5 bp); ``hold_bps(-5, 40_000) == -1`` (-1.25 bp)."""
    if drop_cents <= 0:
        return None
    return round(Fraction(win_cents * 10_000, drop_cents))


def pct(bps: int | None) -> str | None:
    """Basis points as a percentage string with two decimals: ``1234 -> "12.34"``, ``-5 -> "-0.05"``."""
    if bps is None:
        return None
    whole, frac = divmod(abs(bps), 100)
    return f"{'-' if bps < 0 else ''}{whole}.{frac:02d}"


def figures(hours: Iterable[HourFigures]) -> dict[str, Any]:
    """Rounds, drop, win (cents) and hold of some hours summed."""
    rounds = drop = win = 0
    for h in hours:
        rounds, drop, win = rounds + h.rounds, drop + h.drop_cents, win + h.win_cents
    bps = hold_bps(win, drop)
    return {"rounds": rounds, "drop_cents": drop, "win_cents": win, "hold_bps": bps, "hold_pct": pct(bps)}


def day_of(state: ProjectionState, day: str) -> DayFigures:
    """The table's figures of ``day`` (empty when it has none)."""
    return state.pit.days.get(day) or DayFigures()


def cutoff_of(states: Iterable[ProjectionState]) -> int:
    """The gaming-day cutoff hour of the tables (their ledgers'; the default when there are none)."""
    for s in states:
        return s.ledger.cutoff_hour
    return DEFAULT_CUTOFF_HOUR


def latest_day(states: Iterable[ProjectionState]) -> str:
    """The latest gaming day any table folded ("" when none did)."""
    return max((s.pit.day for s in states), default="")


def is_held(states: Iterable[ProjectionState], day: str) -> bool:
    """Whether the pit figures of ``day`` are still held: the latest gaming day folded, the one before, or
    any later day (empty so far)."""
    return day >= previous_day(latest_day(states))


def hour_start(day: str, hour: int, cutoff_hour: int) -> datetime:
    """The UTC start of ``hour`` (0-23) of gaming day ``day``."""
    d = date.fromisoformat(day)
    return datetime(d.year, d.month, d.day, tzinfo=UTC) + timedelta(hours=cutoff_hour + hour)


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _span(day: str, first: int, end: int, cutoff_hour: int) -> dict[str, str]:
    return {"start_utc": _iso(hour_start(day, first, cutoff_hour)),
            "end_utc": _iso(hour_start(day, end, cutoff_hour))}


def shift_figures(state: ProjectionState, day: str, shift: int, settings: PitSettings) -> dict[str, Any]:
    """One shift of a table's gaming day: its number, span (UTC) and figures."""
    first, end = settings.shift_hours(shift)
    hours = day_of(state, day).hours
    return {"shift": shift, **_span(day, first, end, state.ledger.cutoff_hour),
            **figures(h for k, h in hours.items() if first <= k < end)}


# ---- cage --------------------------------------------------------------------------------------------
def ledger_day_result(table_id: str, state: ProjectionState, day: str) -> int | None:
    """The ledger's table result (``game + commission``, cents) for ``day``: None for a day before the ledger's
    current one, whose running totals it no longer holds (the pit's own ``win`` still is)."""
    if state.ledger.day and day < state.ledger.day:
        return None
    return state.ledger.table_result(table_id, gaming_day=day)


def hourly_rows(table_id: str, state: ProjectionState, day: str) -> list[dict[str, Any]]:
    """Every hour of ``day`` with a round settled at the table, in order: the table, the hour's span (UTC),
    rounds, drop, win, hold."""
    cutoff = state.ledger.cutoff_hour
    out = []
    for hour, h in sorted(day_of(state, day).hours.items()):
        out.append({"table_id": table_id, "gaming_day": day, "hour": hour,
                    "hour_start_utc": _iso(hour_start(day, hour, cutoff)),
                    "hour_end_utc": _iso(hour_start(day, hour + 1, cutoff)), **figures([h])})
    return out


def hourly_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    """The hourly rows as CSV (RFC 4180: a header line, ``\\r\\n`` line ends): :data:`CSV_COLUMNS`, cents
    as integers, ``hold_pct`` empty when the drop is 0."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        w.writerow(["" if r[c] is None else r[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def outstanding_by_player(table_id: str, state: ProjectionState) -> dict[str, int]:
    """Commission still owed at the table per player (cents > 0), from the ledger's running totals over the
    table's life: minus the balance of the player's lines on the seats' ``commission_owed`` accounts
    (accrued − collected)."""
    prefix = f"table:{table_id}:seat:"
    out = {}
    for key, accounts in state.ledger.totals.items():
        if not key.startswith("p:") or "|" in key:
            continue
        owed = -sum(c for a, c in accounts.items() if a.startswith(prefix) and a.endswith(":commission_owed"))
        if owed:
            out[key[2:]] = owed
    return out


def commission_rows(table_id: str, state: ProjectionState, day: str) -> list[dict[str, Any]]:
    """Per player, by player id: commission of ``day`` deducted at payout, accrued to a commission box,
    ``owed`` (= both: what the player came to owe that day), ``collected`` that day (deducted + collected
    from the box), and ``outstanding`` (the player's commission boxes at the table now: accrued over the
    table's life and not yet collected). Players with any of them."""
    figs = day_of(state, day).commission
    outstanding = outstanding_by_player(table_id, state)
    out = []
    for pid in sorted(set(figs) | set(outstanding)):
        c = figs.get(pid)
        d, a, k = (c.deducted_cents, c.accrued_cents, c.collected_cents) if c else (0, 0, 0)
        out.append({"player_id": pid, "deducted_cents": d, "accrued_cents": a, "owed_cents": d + a,
                    "collected_cents": d + k, "collected_from_box_cents": k,
                    "outstanding_cents": outstanding.get(pid, 0)})
    return out


def cage_view(table_id: str, state: ProjectionState, day: str, settings: PitSettings) -> dict[str, Any]:
    """A table's cage view of ``day``: the day's figures, each shift's, each hour's, the commission by
    player and its totals, and the ledger's table result for the day (equal to the day's win; null for the
    day before the ledger's current one, :func:`ledger_day_result`)."""
    shifts = [shift_figures(state, day, i, settings) for i in range(1, len(settings.shift_starts) + 1)]
    commission = commission_rows(table_id, state, day)
    totals = {k: sum(r[k] for r in commission) for k in ("deducted_cents", "accrued_cents", "owed_cents",
                                                         "collected_cents", "collected_from_box_cents",
                                                         "outstanding_cents")}
    return {"table_id": table_id, "gaming_day": day, "hold_rounding": HOLD_ROUNDING.value,
            "day": figures(day_of(state, day).hours.values()),
            "ledger_table_result_cents": ledger_day_result(table_id, state, day),
            "shifts": shifts, "hours": hourly_rows(table_id, state, day),
            "commission": commission, "commission_totals": totals}


# ---- surveillance ------------------------------------------------------------------------------------
def player_ranking(states: Mapping[str, ProjectionState], day: str, threshold_cents: int) -> list[dict[str, Any]]:
    """Every player flagged on ``day`` at any table, by expected gain (highest first; then stake, then id):
    rank, raised (expected gain ≥ ``threshold_cents``), flagged bets, stake, expected gain (cents), the
    tables, and the first and last flagged time (UTC)."""
    by: dict[str, dict[str, Any]] = {}
    for tid in sorted(states):
        for pid, w in day_of(states[tid], day).flagged.items():
            p = by.setdefault(pid, {"player_id": pid, "flagged_bets": 0, "stake_cents": 0,
                                    "expected_gain_cents": 0, "tables": [], "first": w.first_at,
                                    "last": w.last_at})
            p["flagged_bets"] += w.bets
            p["stake_cents"] += w.stake_cents
            p["expected_gain_cents"] += w.expected_gain_cents
            p["tables"].append(tid)
            p["first"], p["last"] = min(p["first"], w.first_at), max(p["last"], w.last_at)
    ranked = sorted(by.values(), key=lambda p: (-p["expected_gain_cents"], -p["stake_cents"], p["player_id"]))
    out = []
    for i, p in enumerate(ranked, 1):
        first, last = p.pop("first"), p.pop("last")
        out.append({"rank": i, **p, "raised": p["expected_gain_cents"] >= threshold_cents,
                    "first_flagged_at": _iso(first), "last_flagged_at": _iso(last)})
    return out


def open_alerts(ranking: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per table, how many raised players of the ranking were flagged there."""
    out: dict[str, int] = {}
    for p in ranking:
        if p["raised"]:
            for t in p["tables"]:
                out[t] = out.get(t, 0) + 1
    return out


def closed_shoes(states: Mapping[str, ProjectionState], day: str) -> list[dict[str, Any]]:
    """The shoes closed on ``day``, by table then close time: the verdict on each commitment and its cards
    (:class:`services.projection.pit_state.ClosedShoe`)."""
    out = []
    for tid in sorted(states):
        for s in states[tid].pit.closed_shoes:
            if s.gaming_day == day:
                out.append({"table_id": tid, "shoe_id": s.shoe_id, "closed_at": _iso(s.closed_at),
                            "reason": s.reason, "cards_dealt": s.cards_dealt, "commitment": s.commitment,
                            "cards": s.cards, "detail": s.detail})
    return out


def irregularities(states: Mapping[str, ProjectionState], day: str) -> list[dict[str, Any]]:
    """Per table with any on ``day``: the voided rounds (reason, time) and the irregularities (kind,
    disposition, rule, detail, card), the latest held of each, and how many there were in all."""
    out = []
    for tid in sorted(states):
        f = day_of(states[tid], day)
        if not (f.voided_total or f.irregularities_total):
            continue
        out.append({"table_id": tid, "gaming_day": day, "voided_total": f.voided_total,
                    "voided": [{"round_id": v.round_id, "reason": v.reason, "at": _iso(v.at)} for v in f.voided],
                    "irregularities_total": f.irregularities_total,
                    "irregularities": [{"round_id": i.round_id, "kind": i.kind, "disposition": i.disposition,
                                        "rule": i.rule, "detail": i.detail, "card": i.card,
                                        "card_number": i.card_number, "at": _iso(i.at)}
                                       for i in f.irregularities]})
    return out


# ---- floor -------------------------------------------------------------------------------------------
def floor_view(states: Mapping[str, ProjectionState], at: datetime, settings: PitSettings,
               money: bool, only: Iterable[str] | None = None, totals: bool = True) -> dict[str, Any]:
    """Every table at ``at``: its game, shoe, rounds this shoe and last result; with ``money`` (a role that
    may read ledgers) also the gaming day's and the current shift's rounds, drop, win and hold, the table's
    result for the day and the open alert count (raised players flagged there). No player id either way.
    ``only``: the rows of these tables alone (the live floor re-renders the tables that changed; a player is
    still raised by their play at every table); ``totals``: False leaves out the floor's totals."""
    cutoff = cutoff_of(states.values())
    day, hour = day_and_hour(at, cutoff)
    shift = settings.shift_of(hour)
    first, end = settings.shift_hours(shift)
    alerts = open_alerts(player_ranking(states, day, settings.raise_threshold_cents)) if money else {}
    tables = []
    for tid in sorted(states if only is None else set(only) & set(states)):
        s = states[tid]
        if s.config is None:
            continue
        shoe = s.shoe
        row: dict[str, Any] = {
            "table_id": tid, "variant": s.config.variant.value, "shoe_id": shoe.shoe_id if shoe else None,
            "cards_out": shoe.cards_out if shoe else 0,
            "rounds_this_shoe": len(s.results(shoe.shoe_id)) if shoe else 0,
            "last_result": (s.results(shoe.shoe_id) or ("",))[-1] if shoe else "",
        }
        if money:
            f = day_of(s, day)
            row.update({"day": figures(f.hours.values()),
                        "shift": figures(h for k, h in f.hours.items() if first <= k < end),
                        "table_result_day_cents": ledger_day_result(tid, s, day),
                        "open_alerts": alerts.get(tid, 0), "voided_rounds": f.voided_total,
                        "irregularities": f.irregularities_total})
        tables.append(row)
    out: dict[str, Any] = {"at": _iso(at), "gaming_day": day,
                           "shift": {"shift": shift, **_span(day, first, end, cutoff)}, "tables": tables}
    if money:
        out["hold_rounding"] = HOLD_ROUNDING.value
    if money and totals:
        out["totals"] = {"day": figures(h for s in states.values() for h in day_of(s, day).hours.values()),
                         "shift": figures(h for s in states.values() for k, h in day_of(s, day).hours.items()
                                          if first <= k < end)}
    return out
