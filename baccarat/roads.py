"""Roadmaps (scoreboards): bead plate, Big Road and the three derived roads.

Everything here follows ``odds-and-roads.md`` §5 and is pure: the same results always give the same roads.

Input is the sequence of round results of one shoe, each ``"B"`` (Banker won), ``"P"`` (Player won) or
``"T"`` (tie), oldest first. :func:`parse_results` reads them from text such as ``"BPP T b"``;
:func:`roads` builds every scoreboard at once (about 0.1 ms for a 90-round shoe, so recomputing after every
round is fine).

- **Bead plate**: every round in order, column by column, ``rows`` (6) per column.
- **Big Road**: ties are not entries. A tie is counted on the previous Banker/Player cell; ties before the
  first entry are the ``leading_ties`` count. Each run of one side is one *logical column* (any length).
  The display grid (:func:`big_road_display`) bends long runs right ("dragon tail"); the display never
  changes logical columns, and nothing is ever derived from it.
- **Derived roads**: Big Eye Boy (k = 1), Small Road (k = 2), Cockroach Pig (k = 3), computed from the
  Big Road's logical column lengths only. For a new entry at logical column n, row m (both 1-based):

  - m = 1: red if columns n−1 and n−1−k have equal length, else blue; no mark if n−1−k < 1;
  - m ≥ 2: with p the length of column n−k: red if m ≤ p, blue if m = p + 1, red if m > p + 1
    ("straight drop"); no mark if n−k < 1.

  Every column referred to precedes column n, so it is complete when the entry arrives: a mark, once made,
  never changes, and the roads of a prefix of the shoe are a prefix of the shoe's roads.
  Marks are ``"R"`` (red: regular, the road repeats its pattern) and ``"B"`` (blue: choppy) — colours, not
  Banker and Player. They are laid out like a Big Road: same colour goes down, a change starts a new column.

Display rule (both Big Road and derived roads, :func:`layout`): a logical column starts at row 0 of the
display column right of where the previous logical column started (further right if that cell is already
taken by a tail along row 0). It goes down while the cell below exists (row < ``rows``) and is free; once
blocked — by the bottom row, or by an earlier column's tail — it turns right and stays in that row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from baccarat.errors import BaccaratError

BANKER = "B"
PLAYER = "P"
TIE = "T"
#: Derived-road marks: red = regular, blue = choppy (odds-and-roads.md §5). Not Banker/Player.
RED = "R"
BLUE = "B"
#: Rows of a standard scoreboard (bead plate, Big Road and derived-road displays).
STANDARD_ROWS = 6
#: The derived roads: (name, k).
DERIVED_ROADS: tuple[tuple[str, int], ...] = (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3))

_RESULTS = frozenset((BANKER, PLAYER, TIE))
_WINNER_LETTERS = {"banker": BANKER, "player": PLAYER, "tie": TIE}

T = TypeVar("T")


class InvalidResult(BaccaratError):
    """A round result that is not ``B``, ``P`` or ``T``.

    ``char`` is the offending text and ``position`` its 1-based position: the character position in the
    text given to :func:`parse_results` (spaces counted), or the item position in a sequence of results.
    """

    def __init__(self, message: str, char: str, position: int) -> None:
        super().__init__(message)
        self.char = char
        self.position = position


class InvalidRoadLayout(BaccaratError):
    """A display/bead-plate row count that is not a whole number ≥ 1, or a derived-road k that is not ≥ 1."""


# --------------------------------------------------------------------------------------------- results


def parse_results(text: str) -> tuple[str, ...]:
    """Parse results text such as ``"BPPTB"`` or ``"b p p t"`` into ``("B", "P", "P", "T", "B")``.

    Case-insensitive; whitespace anywhere is ignored; the empty text is an empty shoe. Raises
    :class:`InvalidResult` naming the first bad character and its 1-based position in ``text``.
    """
    if not isinstance(text, str):
        raise InvalidResult(f"results must be text like 'BPPTB', got {type(text).__name__}", repr(text), 0)
    out: list[str] = []
    for i, ch in enumerate(text, 1):
        if ch.isspace():
            continue
        up = ch.upper()
        if up not in _RESULTS:
            raise InvalidResult(f"bad result {ch!r} at position {i}: use B, P or T", ch, i)
        out.append(up)
    return tuple(out)


def coerce_results(results: str | Iterable[object]) -> tuple[str, ...]:
    """Normalise results to a tuple of ``"B"``/``"P"``/``"T"``.

    Accepts results text (see :func:`parse_results`) or an iterable whose items are one-letter strings
    (any case) or :class:`baccarat.round.Winner` members (or anything whose ``.value`` is ``"banker"``,
    ``"player"`` or ``"tie"``). Raises :class:`InvalidResult` naming the bad item and its 1-based position.
    """
    if isinstance(results, str):
        return parse_results(results)
    out: list[str] = []
    for i, item in enumerate(results, 1):
        if isinstance(item, str):
            up = item.strip().upper()
            if up in _RESULTS:
                out.append(up)
                continue
        else:
            letter = _WINNER_LETTERS.get(getattr(item, "value", None))  # type: ignore[arg-type]
            if letter is not None:
                out.append(letter)
                continue
        raise InvalidResult(f"bad result {item!r} at position {i}: use B, P or T", repr(item), i)
    return tuple(out)


def _check_rows(rows: int) -> int:
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise InvalidRoadLayout(f"rows must be a whole number >= 1, got {rows!r}")
    return rows


# ------------------------------------------------------------------------------------------ bead plate


def bead_plate(results: str | Iterable[object], rows: int = STANDARD_ROWS) -> list[list[str]]:
    """Every round in order, in columns of ``rows`` (column-major): ``plate[col][row]``.

    ``"BPTBPPB"`` with 6 rows → ``[["B","P","T","B","P","P"], ["B"]]``. Every column but the last is full;
    reading columns top to bottom, left to right gives the results back. Raises :class:`InvalidResult`
    or :class:`InvalidRoadLayout` (rows < 1).
    """
    _check_rows(rows)
    seq = coerce_results(results)
    return [list(seq[i : i + rows]) for i in range(0, len(seq), rows)]


# -------------------------------------------------------------------------------------------- Big Road


@dataclass(frozen=True, slots=True)
class Cell:
    """One Big Road entry: the winning side (``"B"`` or ``"P"``) and how many ties followed it."""

    side: str
    ties: int = 0


@dataclass(frozen=True, slots=True)
class BigRoad:
    """The Big Road's logical content.

    ``columns[i]`` is the i-th run of one side (0-based here; §5 numbers them from 1), oldest first, each
    cell carrying the ties that followed it. ``leading_ties`` counts ties before the first entry.
    """

    columns: tuple[tuple[Cell, ...], ...] = ()
    leading_ties: int = 0

    @property
    def entries(self) -> int:
        """Number of Big Road entries (= non-tie results)."""
        return sum(len(c) for c in self.columns)

    @property
    def lengths(self) -> tuple[int, ...]:
        """Length of each logical column."""
        return tuple(len(c) for c in self.columns)

    @property
    def cells(self) -> tuple[Cell, ...]:
        """Every entry in order."""
        return tuple(cell for col in self.columns for cell in col)


def big_road(results: str | Iterable[object]) -> BigRoad:
    """Build the Big Road from results (text or sequence, see :func:`coerce_results`).

    ``"TBBTTP"`` → ``leading_ties=1``, columns ``((Cell("B"), Cell("B", 2)), (Cell("P"),))``.
    Raises :class:`InvalidResult`.
    """
    seq = coerce_results(results)
    columns: list[list[Cell]] = []
    leading = 0
    for r in seq:
        if r == TIE:
            if not columns:
                leading += 1
            else:
                last = columns[-1][-1]
                columns[-1][-1] = Cell(last.side, last.ties + 1)
        elif columns and columns[-1][0].side == r:
            columns[-1].append(Cell(r))
        else:
            columns.append([Cell(r)])
    return BigRoad(tuple(tuple(c) for c in columns), leading)


# ------------------------------------------------------------------------------------------- layout


def layout_positions(lengths: Sequence[int], rows: int = STANDARD_ROWS) -> list[tuple[int, int]]:
    """Display position ``(col, row)`` (0-based) of every entry, in entry order, for logical column lengths.

    Implements the dragon-tail rule of the module docstring. Positions are distinct and all rows are
    ``< rows``. Raises :class:`InvalidRoadLayout` for rows < 1.
    """
    _check_rows(rows)
    taken: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    start = -1
    for length in lengths:
        start += 1
        while (start, 0) in taken:  # only after a tail along row 0: start right of it
            start += 1
        col, row = start, 0
        turned = False
        for i in range(length):
            if i:
                if not turned and row + 1 < rows and (col, row + 1) not in taken:
                    row += 1
                else:
                    turned = True
                    col += 1  # always free: an earlier tail in this row would have passed through (col, row)
            taken.add((col, row))
            out.append((col, row))
    return out


def layout(columns: Sequence[Sequence[T]], rows: int = STANDARD_ROWS) -> dict[tuple[int, int], T]:
    """Lay logical columns out on a ``rows``-row display grid: ``{(col, row): item}`` in entry order."""
    items = [item for c in columns for item in c]
    return dict(zip(layout_positions([len(c) for c in columns], rows), items))


def big_road_display(road: BigRoad, rows: int = STANDARD_ROWS) -> dict[tuple[int, int], Cell]:
    """The Big Road as displayed: ``{(col, row): Cell}`` (0-based, entry order), with dragon tails.

    Display only: :attr:`BigRoad.columns` is unaffected and is what derived roads use.
    """
    return layout(road.columns, rows)


# --------------------------------------------------------------------------------------- derived roads


@dataclass(frozen=True, slots=True)
class DerivedRoad:
    """One derived road (Big Eye Boy, Small Road or Cockroach Pig).

    ``marks``: one ``"R"``/``"B"`` per marked Big Road entry, in order. ``entries``: the 0-based Big Road
    entry index that made each mark (same length as ``marks``). ``columns``: the marks grouped into runs of
    one colour (the road's own logical columns).
    """

    name: str
    k: int
    marks: str = ""
    entries: tuple[int, ...] = ()
    columns: tuple[tuple[str, ...], ...] = ()

    @property
    def first_entry(self) -> int | None:
        """0-based index of the Big Road entry that made the first mark, or ``None`` if there is none yet."""
        return self.entries[0] if self.entries else None


def derived_marks(lengths: Sequence[int], k: int) -> tuple[str, tuple[int, ...]]:
    """Marks and their Big Road entry indices for the derived road of ``k`` from logical column lengths.

    The rule of §5 (see the module docstring), with ``j = n − 1`` the 0-based column index. Raises
    :class:`InvalidRoadLayout` unless k is a whole number ≥ 1.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidRoadLayout(f"derived road k must be a whole number >= 1, got {k!r}")
    marks: list[str] = []
    where: list[int] = []
    entry = 0
    for j, length in enumerate(lengths):
        if length <= 0:
            raise InvalidRoadLayout(f"logical column {j + 1} has length {length}: columns are never empty")
        # m = 1: compare complete columns n-1 and n-1-k (0-based j-1 and j-1-k).
        if j - 1 - k >= 0:
            marks.append(RED if lengths[j - 1] == lengths[j - 1 - k] else BLUE)
            where.append(entry)
        entry += 1
        # m >= 2: against p = length of column n-k (0-based j-k).
        if length > 1:
            if j - k >= 0:
                p = lengths[j - k]
                for m in range(2, length + 1):
                    marks.append(BLUE if m == p + 1 else RED)
                    where.append(entry)
                    entry += 1
            else:
                entry += length - 1
    return "".join(marks), tuple(where)


def group_runs(marks: Iterable[T]) -> tuple[tuple[T, ...], ...]:
    """Group a sequence into runs of equal items: ``"RRBR"`` → ``(("R","R"), ("B",), ("R",))``."""
    cols: list[list[T]] = []
    for m in marks:
        if cols and cols[-1][0] == m:
            cols[-1].append(m)
        else:
            cols.append([m])
    return tuple(tuple(c) for c in cols)


def derived_road(road: BigRoad, k: int, name: str | None = None) -> DerivedRoad:
    """The derived road of ``k`` (1 Big Eye Boy, 2 Small Road, 3 Cockroach Pig) from the logical columns."""
    marks, where = derived_marks(road.lengths, k)
    if name is None:
        name = {kk: n for n, kk in DERIVED_ROADS}.get(k, f"derived_k{k}")
    return DerivedRoad(name, k, marks, where, group_runs(marks))


def derived_road_display(road: DerivedRoad, rows: int = STANDARD_ROWS) -> dict[tuple[int, int], str]:
    """A derived road as displayed: ``{(col, row): "R"|"B"}`` with the same dragon-tail rule as the Big Road."""
    return layout(road.columns, rows)


# ----------------------------------------------------------------------------------------------- Roads


@dataclass(frozen=True, slots=True)
class Roads:
    """Every scoreboard of one shoe so far.

    ``results``: the rounds, ``"B"``/``"P"``/``"T"``; ``bead_plate[col][row]`` in ``rows``-row columns;
    ``big_road`` logical columns; the three derived roads. ``rows`` is used for the bead plate and every
    display grid; it never affects logical columns or marks.
    """

    results: tuple[str, ...]
    rows: int
    bead_plate: tuple[tuple[str, ...], ...]
    big_road: BigRoad
    big_eye_boy: DerivedRoad
    small_road: DerivedRoad
    cockroach_pig: DerivedRoad

    @property
    def derived(self) -> tuple[DerivedRoad, DerivedRoad, DerivedRoad]:
        """Big Eye Boy, Small Road, Cockroach Pig."""
        return (self.big_eye_boy, self.small_road, self.cockroach_pig)

    def big_road_display(self) -> dict[tuple[int, int], Cell]:
        """The Big Road display grid at this object's ``rows``."""
        return big_road_display(self.big_road, self.rows)

    def derived_display(self, road: DerivedRoad) -> dict[tuple[int, int], str]:
        """A derived road's display grid at this object's ``rows``."""
        return derived_road_display(road, self.rows)

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form (lists, strings, ints only)::

        {"bead_plate": [["B","P",...], ...],
         "big_road": {"leading_ties": n,
                      "columns": [[{"side": "B", "ties": 0}, ...], ...],
                      "display": [[col, row, side, ties], ...]},        # entry order
         "big_eye_boy": {"marks": "RRB...", "columns": [["R","R"], ["B"], ...],
                         "display": [[col, row, mark], ...]},           # mark order
         "small_road": {...}, "cockroach_pig": {...}}
        """
        d: dict[str, object] = {
            "bead_plate": [list(c) for c in self.bead_plate],
            "big_road": {
                "leading_ties": self.big_road.leading_ties,
                "columns": [[{"side": c.side, "ties": c.ties} for c in col] for col in self.big_road.columns],
                "display": [[x, y, c.side, c.ties] for (x, y), c in self.big_road_display().items()],
            },
        }
        for road in self.derived:
            d[road.name] = {
                "marks": road.marks,
                "columns": [list(c) for c in road.columns],
                "display": [[x, y, m] for (x, y), m in self.derived_display(road).items()],
            }
        return d


def roads(results: str | Iterable[object], rows: int = STANDARD_ROWS) -> Roads:
    """Build every scoreboard from a shoe's results (text or sequence, see :func:`coerce_results`).

    Raises :class:`InvalidResult` for a bad result, :class:`InvalidRoadLayout` for rows < 1.
    """
    _check_rows(rows)
    seq = coerce_results(results)
    br = big_road(seq)
    bey, sr, cp = (derived_road(br, k, name) for name, k in DERIVED_ROADS)
    plate = tuple(tuple(seq[i : i + rows]) for i in range(0, len(seq), rows))
    return Roads(seq, rows, plate, br, bey, sr, cp)


__all__ = [
    "BANKER",
    "BLUE",
    "DERIVED_ROADS",
    "PLAYER",
    "RED",
    "STANDARD_ROWS",
    "TIE",
    "BigRoad",
    "Cell",
    "DerivedRoad",
    "InvalidResult",
    "InvalidRoadLayout",
    "Roads",
    "bead_plate",
    "big_road",
    "big_road_display",
    "coerce_results",
    "derived_marks",
    "derived_road",
    "derived_road_display",
    "group_runs",
    "layout",
    "layout_positions",
    "parse_results",
    "roads",
]
