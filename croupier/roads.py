"""Roadmaps for the terminal and as JSON: what ``croupier roads SEQUENCE [--json]`` prints.

:func:`roads_command` returns the exact text (no trailing newline). It contains ``[`` in JSON mode, so print
it with ``typer.echo``/``sys.stdout.write`` or ``Console.print(..., markup=False)``, never through Rich
markup. Bad input raises :class:`baccarat.roads.InvalidResult` (a ``BaccaratError``) naming the bad
character and its 1-based position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from baccarat.roads import BANKER, PLAYER, TIE, BigRoad, DerivedRoad, Roads, roads

_TITLES = {"big_eye_boy": "Big Eye Boy", "small_road": "Small Road", "cockroach_pig": "Cockroach Pig"}
_EMPTY = "."


def _grid(cells: Mapping[tuple[int, int], str], rows: int, indent: str = "  ") -> list[str]:
    """Rows of text for a ``{(col, row): label}`` grid; empty cells are ``.``; columns padded to equal width."""
    if not cells:
        return [indent + "(empty)"]
    ncols = max(c for c, _ in cells) + 1
    nrows = min(rows, max(r for _, r in cells) + 1) if rows else 0
    width = max(len(s) for s in cells.values())
    lines = []
    for r in range(nrows):
        line = " ".join(cells.get((c, r), _EMPTY).ljust(width) for c in range(ncols))
        lines.append(indent + line.rstrip())
    return lines


def _runs(columns: Sequence[Sequence[object]], letter: Sequence[str]) -> str:
    """``3B 2P 1B`` style summary of logical columns."""
    return " ".join(f"{len(col)}{side}" for col, side in zip(columns, letter)) or "(none)"


def _entry_position(road: BigRoad, entry: int) -> tuple[int, int]:
    """1-based (column, row) of the 0-based Big Road entry index."""
    for n, col in enumerate(road.columns, 1):
        if entry < len(col):
            return n, entry + 1
        entry -= len(col)
    raise IndexError(entry)  # pragma: no cover - entries always come from the road itself


def _big_road_lines(r: Roads) -> list[str]:
    br = r.big_road
    head = f"Big Road: {br.entries} entries in {len(br.columns)} columns, leading ties {br.leading_ties}"
    lines = [head + " (cell = side, then its tie count if any; dragon tails bend right)"]
    labels = {pos: c.side + (str(c.ties) if c.ties else "") for pos, c in r.big_road_display().items()}
    lines += _grid(labels, r.rows)
    lines.append("  logical columns: " + _runs(br.columns, [c[0].side for c in br.columns]))
    return lines


def _derived_lines(r: Roads, road: DerivedRoad) -> list[str]:
    head = f"{_TITLES.get(road.name, road.name)} (k={road.k}; R = red/regular, B = blue/choppy): "
    if road.first_entry is None:
        head += "no marks yet"
    else:
        n, m = _entry_position(r.big_road, road.first_entry)
        head += f"{len(road.marks)} marks, first from Big Road column {n} row {m}"
    lines = [head, "  marks: " + (road.marks or "(none)")]
    lines += _grid(r.derived_display(road), r.rows)
    lines.append("  logical columns: " + _runs(road.columns, [c[0] for c in road.columns]))
    return lines


def render(r: Roads) -> str:
    """Plain-text rendering of every road: bead plate, Big Road, then the three derived roads.

    Each road is shown as its display grid (rows top to bottom, ``.`` for an empty cell) followed by its
    logical columns as ``<length><letter>`` runs; derived roads also list their marks in order.
    """
    res = r.results
    counts = {s: res.count(s) for s in (BANKER, PLAYER, TIE)}
    lines = [f"Rounds: {len(res)} (Banker {counts[BANKER]}, Player {counts[PLAYER]}, Tie {counts[TIE]})", ""]
    lines.append(f"Bead plate ({r.rows} rows, read down then right)")
    plate = {(c, row): v for c, col in enumerate(r.bead_plate) for row, v in enumerate(col)}
    lines += _grid(plate, r.rows)
    lines.append("")
    lines += _big_road_lines(r)
    for road in r.derived:
        lines.append("")
        lines += _derived_lines(r, road)
    return "\n".join(lines)


def as_json(r: Roads) -> dict[str, object]:
    """The JSON-friendly dict of every road (:meth:`baccarat.roads.Roads.to_dict`)."""
    return r.to_dict()


def roads_command(sequence: str, as_json: bool = False) -> str:
    """The exact text ``croupier roads SEQUENCE [--json]`` prints (without a trailing newline).

    ``sequence`` is results text such as ``"BPPTB"`` (case-insensitive, spaces ignored). Raises
    :class:`baccarat.roads.InvalidResult` for anything else.
    """
    r = roads(sequence)
    if as_json:
        return msgspec.json.format(msgspec.json.encode(r.to_dict()), indent=2).decode()
    return render(r)


__all__ = ["as_json", "render", "roads_command"]
