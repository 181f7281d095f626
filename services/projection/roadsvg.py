"""The scoreboards drawn as casinos draw them, as inline SVG (pure: results in, markup out).

From :func:`baccarat.roads.roads` of one shoe's results (``"B"``/``"P"``/``"T"``, oldest first):

* **bead plate**: one filled disc per round, column by column, 6 rows: red Banker, blue Player, green tie,
  with its letter;
* **Big Road**: hollow rings, red Banker and blue Player, a run going down its column and turning right at
  the bottom (dragon tail); a tie is a green slash across the cell it follows (the count when more than one);
* **Big Eye Boy**: small hollow rings; **Small Road**: small filled discs; **Cockroach Pig**: slashes. Their
  red and blue are the derived roads' colours (regular, choppy), not Banker and Player.

Each board shows its last ``columns`` display columns (the newest at the right). Every value written is a
number or one of the fixed letters and colours here, so the markup needs no escaping.
"""

from __future__ import annotations

from collections.abc import Iterable

from baccarat.roads import Roads, roads

RED = "#c62828"
BLUE = "#1565c0"
GREEN = "#2e7d32"
GRID = "#d9d4c7"
_SIDE = {"B": RED, "P": BLUE, "T": GREEN}
_MARK = {"R": RED, "B": BLUE}


def _frame(cols: int, rows: int, cell: int, body: list[str], label: str) -> str:
    w, h = cols * cell, rows * cell
    grid = [f'<rect x="0" y="0" width="{w}" height="{h}" fill="#fffdf7" stroke="{GRID}"/>']
    grid += [f'<line x1="{x * cell}" y1="0" x2="{x * cell}" y2="{h}" stroke="{GRID}" stroke-width="0.5"/>'
             for x in range(1, cols)]
    grid += [f'<line x1="0" y1="{y * cell}" x2="{w}" y2="{y * cell}" stroke="{GRID}" stroke-width="0.5"/>'
             for y in range(1, rows)]
    return (f'<svg class="road" role="img" aria-label="{label}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(grid + body) + "</svg>")


def _window(cells: Iterable[tuple[int, int]], columns: int) -> int:
    """The first display column shown so that the newest ``columns`` columns fit."""
    last = max((c for c, _ in cells), default=-1)
    return max(0, last + 1 - columns)


def bead_plate_svg(r: Roads, columns: int = 14, cell: int = 16) -> str:
    """The bead plate: filled discs with their letter."""
    plate = r.bead_plate
    first = max(0, len(plate) - columns)
    body = []
    for c, col in enumerate(plate[first:]):
        for row, res in enumerate(col):
            cx, cy = c * cell + cell / 2, row * cell + cell / 2
            body.append(f'<circle class="bead bead-{res}" cx="{cx}" cy="{cy}" r="{cell / 2 - 1.5}" '
                        f'fill="{_SIDE[res]}"/>'
                        f'<text x="{cx}" y="{cy + 3.5}" font-size="{cell * 0.6:.0f}" text-anchor="middle" '
                        f'fill="#fff" font-family="sans-serif">{res}</text>')
    return _frame(columns, r.rows, cell, body, f"bead plate, {len(r.results)} rounds")


def big_road_svg(r: Roads, columns: int = 24, cell: int = 14) -> str:
    """The Big Road: hollow rings, ties as green slashes (with their count above one)."""
    shown = r.big_road_display()
    first = _window(shown, columns)
    body = []
    for (c, row), cellv in shown.items():
        if c < first:
            continue
        x, y = (c - first) * cell, row * cell
        body.append(f'<circle class="big big-{cellv.side}" cx="{x + cell / 2}" cy="{y + cell / 2}" '
                    f'r="{cell / 2 - 2}" fill="none" stroke="{_SIDE[cellv.side]}" stroke-width="2"/>')
        if cellv.ties:
            body.append(f'<line class="tie" x1="{x + 2}" y1="{y + cell - 2}" x2="{x + cell - 2}" y2="{y + 2}" '
                        f'stroke="{GREEN}" stroke-width="2"/>')
            if cellv.ties > 1:
                body.append(f'<text x="{x + cell / 2}" y="{y + cell / 2 + 3}" font-size="8" text-anchor="middle" '
                            f'fill="{GREEN}" font-family="sans-serif">{cellv.ties}</text>')
    if r.big_road.leading_ties and first == 0:
        body.append(f'<line class="tie-leading" x1="1" y1="{cell - 1}" x2="{cell - 1}" y2="1" stroke="{GREEN}" '
                    f'stroke-width="1" stroke-dasharray="2 2"/>')
    return _frame(columns, r.rows, cell, body, f"big road, {r.big_road.entries} entries")


def derived_svg(r: Roads, which: str, columns: int = 24, cell: int = 8) -> str:
    """A derived road (``big_eye_boy`` rings, ``small_road`` discs, ``cockroach_pig`` slashes)."""
    road = {d.name: d for d in r.derived}[which]
    shown = r.derived_display(road)
    first = _window(shown, columns)
    body = []
    for (c, row), mark in shown.items():
        if c < first:
            continue
        x, y, colour = (c - first) * cell, row * cell, _MARK[mark]
        if which == "big_eye_boy":
            body.append(f'<circle class="mark mark-{mark}" cx="{x + cell / 2}" cy="{y + cell / 2}" '
                        f'r="{cell / 2 - 1.5}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        elif which == "small_road":
            body.append(f'<circle class="mark mark-{mark}" cx="{x + cell / 2}" cy="{y + cell / 2}" '
                        f'r="{cell / 2 - 1}" fill="{colour}"/>')
        else:
            body.append(f'<line class="mark mark-{mark}" x1="{x + 1}" y1="{y + cell - 1}" x2="{x + cell - 1}" '
                        f'y2="{y + 1}" stroke="{colour}" stroke-width="1.5"/>')
    names = {"big_eye_boy": "big eye boy", "small_road": "small road", "cockroach_pig": "cockroach pig"}
    return _frame(columns, r.rows, cell, body, f"{names[which]}, {len(road.marks)} marks")


def scoreboard(results: Iterable[str] | str, compact: bool = False) -> dict[str, str]:
    """Every board of a shoe's results as SVG markup: ``bead_plate``, ``big_road``, ``big_eye_boy``,
    ``small_road``, ``cockroach_pig``. ``compact``: fewer columns (the floor view's cards)."""
    r = roads(results)
    n = 10 if compact else 14
    m = 18 if compact else 30
    k = 16 if compact else 22
    return {"bead_plate": bead_plate_svg(r, columns=n), "big_road": big_road_svg(r, columns=m),
            "big_eye_boy": derived_svg(r, "big_eye_boy", columns=k),
            "small_road": derived_svg(r, "small_road", columns=k),
            "cockroach_pig": derived_svg(r, "cockroach_pig", columns=k)}


__all__ = ["bead_plate_svg", "big_road_svg", "derived_svg", "scoreboard"]
