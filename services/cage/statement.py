"""The cage's statements: per table and shift, then rolled up by table, pit, shift or gaming day.

Re-derived from ``cage.events`` alone (so the audit and any consumer get the same figures), in cents:

* ``opener``, ``closer``: the tray's counts (``ShiftOpened``, ``ShiftClosed``);
* ``fills``: fills received at the table; ``credits``: credits handed over (chips that left the tray);
  ``open_fills``: fills issued by the cage and not received (a fill on its way, or lost);
* ``drop`` = ``drop_cash`` + ``drop_markers``, from the soft count (``DropBoxCounted``);
* ``win`` = closer − opener + credits − fills + drop (the statistical win), ``hold`` = win / drop;
* ``game_result``: the shift's Σ ``RoundSettled.table_result`` (stakes − payouts + commission) as the cage
  service booked it (``ShiftClosed``); ``variance`` = win − game_result, the **count variance**: zero to the
  cent on a floor where nothing went missing, else an alert (:func:`alerts`).

Source of the formulas: ``docs/cage.md`` (general US table-games accounting practice).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from fractions import Fraction

from contracts.cage import (
    CreditHandedOver,
    DropBoxCounted,
    FillIssued,
    FillReceived,
    ShiftClosed,
    ShiftOpened,
)
from contracts.envelope import Envelope

#: the roll-ups :func:`rollup` knows: the statement's field each groups by
GROUPINGS = {"table": "table_id", "pit": "pit", "shift": "shift_id", "gaming_day": "gaming_day"}


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement, cents throughout. A table's shift, or a roll-up (then ``tables``/``shifts`` count what
    it sums and the grouping's key field holds the group; the other keys are ``"*"``). ``closed``: the
    closer is recorded; ``counted``: the drop box is counted (until both, win and variance are partial)."""

    table_id: str
    shift_id: str
    gaming_day: str
    pit: str
    opener: int = 0
    closer: int = 0
    fills: int = 0
    fill_slips: int = 0
    credits: int = 0
    credit_slips: int = 0
    open_fills: int = 0
    drop_cash: int = 0
    drop_markers: int = 0
    game_result: int = 0
    rounds: int = 0
    tray_variance: int = 0
    drop_variance: int = 0
    closed: bool = False
    counted: bool = False
    tables: int = 1
    shifts: int = 1

    @property
    def drop(self) -> int:
        """Cash + markers in the drop box, cents."""
        return self.drop_cash + self.drop_markers

    @property
    def win(self) -> int:
        """The statistical win: closer − opener + credits − fills + drop, cents."""
        return self.closer - self.opener + self.credits - self.fills + self.drop

    @property
    def hold(self) -> Fraction | None:
        """win / drop exactly (None with no drop)."""
        return Fraction(self.win, self.drop) if self.drop else None

    @property
    def hold_pct(self) -> str:
        """The hold as a percentage with two decimals, rounded half away from zero ("" with no drop)."""
        h = self.hold
        if h is None:
            return ""
        bp = h * 10_000
        n = int(abs(bp) + Fraction(1, 2)) * (1 if bp >= 0 else -1)
        return f"{'-' if n < 0 else ''}{abs(n) // 100}.{abs(n) % 100:02d}"

    @property
    def variance(self) -> int:
        """The count variance: win − game result, cents (0 on a floor where nothing went missing)."""
        return self.win - self.game_result

    def as_dict(self) -> dict[str, object]:
        """Every field and figure (drop, win, hold_pct, variance) for JSON and CSV."""
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(drop=self.drop, win=self.win, hold_pct=self.hold_pct, variance=self.variance)
        return out


def statements(events: Iterable[Envelope]) -> list[Statement]:
    """One :class:`Statement` per table and shift, in the order the shifts opened, from ``cage.events``
    (other events are skipped)."""
    by: dict[tuple[str, str], Statement] = {}
    issued: dict[tuple[str, str], dict[str, str]] = {}
    for env in events:
        e = env.payload
        if isinstance(e, ShiftOpened):
            by[(env.table_id, e.shift_id)] = Statement(env.table_id, e.shift_id, e.gaming_day, e.pit,
                                                       opener=e.total_cents)
            continue
        shift_id = getattr(e, "shift_id", None)
        st = by.get((env.table_id, shift_id)) if isinstance(shift_id, str) else None
        if st is None:
            continue
        key = (env.table_id, st.shift_id)
        if isinstance(e, ShiftClosed):
            st = replace(st, closer=e.total_cents, game_result=e.game_result_cents, rounds=e.rounds,
                         tray_variance=e.tray_variance_cents, closed=True)
        elif isinstance(e, FillIssued):
            issued.setdefault(key, {})[e.fill_id] = "issued"
            st = replace(st, open_fills=st.open_fills + 1)
        elif isinstance(e, FillReceived):
            was_open = issued.get(key, {}).pop(e.fill_id, None) is not None
            st = replace(st, fills=st.fills + e.total_cents, fill_slips=st.fill_slips + 1,
                         open_fills=st.open_fills - was_open)
        elif isinstance(e, CreditHandedOver):
            st = replace(st, credits=st.credits + e.total_cents, credit_slips=st.credit_slips + 1)
        elif isinstance(e, DropBoxCounted):
            st = replace(st, drop_cash=e.cash_cents, drop_markers=e.markers_cents,
                         drop_variance=e.drop_variance_cents, counted=True)
        by[key] = st
    return list(by.values())


_SUMMED = ("opener", "closer", "fills", "fill_slips", "credits", "credit_slips", "open_fills", "drop_cash",
           "drop_markers", "game_result", "rounds", "tray_variance", "drop_variance", "tables", "shifts")


def rollup(rows: Iterable[Statement], by: str) -> list[Statement]:
    """Sum statements by ``by`` (``table`` | ``pit`` | ``shift`` | ``gaming_day``: :data:`GROUPINGS`), groups
    in order of first appearance; win, hold and variance follow from the sums. ``closed``/``counted``: every
    statement of the group is. ``tables``: distinct tables; ``shifts``: distinct (table, shift) statements.
    Raises ``ValueError`` for an unknown grouping."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}: one of {', '.join(GROUPINGS)}")
    attr = GROUPINGS[by]
    groups: dict[str, list[Statement]] = {}
    for r in rows:
        groups.setdefault(getattr(r, attr), []).append(r)
    out = []
    for k, rs in groups.items():
        keys = {"table_id": "*", "shift_id": "*", "gaming_day": "*", "pit": "*", attr: k}
        sums = {f: sum(getattr(r, f) for r in rs) for f in _SUMMED}
        sums["tables"] = len({r.table_id for r in rs}) if by != "table" else 1
        sums["shifts"] = len(rs)
        out.append(Statement(**keys, **sums, closed=all(r.closed for r in rs),  # type: ignore[arg-type]
                             counted=all(r.counted for r in rs)))
    return out


def alerts(rows: Iterable[Statement]) -> list[Statement]:
    """The closed and counted statements whose count variance (or tray or drop variance) is not zero."""
    return [r for r in rows if r.closed and r.counted and (r.variance or r.tray_variance or r.drop_variance)]


def csv_text(rows: Iterable[Statement]) -> str:
    """The statements as CSV (a header line, then one line per statement; cents; ``\\n`` line ends)."""
    rows = list(rows)
    head = list(Statement("", "", "", "").as_dict())
    lines = [",".join(head)]
    for r in rows:
        d = r.as_dict()
        lines.append(",".join(_csv_cell(d[h]) for h in head))
    return "\n".join(lines) + "\n"


def _csv_cell(v: object) -> str:
    s = str(v).lower() if isinstance(v, bool) else str(v)
    return f'"{s.replace(chr(34), chr(34) * 2)}"' if any(ch in s for ch in ',"\n') else s
