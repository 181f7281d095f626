"""Counts by denomination (a table inventory slip, a fill or credit slip, a drop box's cash): their checks.

A count is a list of :class:`contracts.cage.ChipCount` (denomination in cents, pieces) and the total it
states. It is sound when every denomination is positive and listed once, every count is not negative and
the pieces add up to the total, to the cent; otherwise :func:`count_problem` names the reason code the cage
refuses it with (``invalid_count``, ``count_mismatch``).
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.cage import ChipCount


def count_value(chips: Iterable[ChipCount]) -> int:
    """Σ denomination × pieces, in cents."""
    return sum(c.denomination_cents * c.count for c in chips)


def count_problem(chips: list[ChipCount], total_cents: int) -> tuple[str, str] | None:
    """``(reason, detail)`` when the count is not sound, else None.

    ``invalid_count``: a denomination not positive or listed twice, a negative count or total;
    ``count_mismatch``: the pieces do not add up to ``total_cents``.
    """
    seen: set[int] = set()
    for c in chips:
        if c.denomination_cents <= 0 or c.count < 0:
            return "invalid_count", f"{c.count} x {c.denomination_cents} cents is not a count"
        if c.denomination_cents in seen:
            return "invalid_count", f"denomination {c.denomination_cents} cents listed twice"
        seen.add(c.denomination_cents)
    if total_cents < 0:
        return "invalid_count", f"total {total_cents} cents is negative"
    value = count_value(chips)
    if value != total_cents:
        return "count_mismatch", f"the denominations add up to {value} cents, the total says {total_cents}"
    return None


def chips_for(amount_cents: int, denominations: Iterable[int]) -> list[ChipCount]:
    """``amount_cents`` made up greedily from ``denominations`` (cents, largest first), the remainder (if any
    cannot be made) in 1-cent pieces: a count that always adds up to the amount. For the floor and tests."""
    out: list[ChipCount] = []
    left = amount_cents
    for d in sorted(set(denominations), reverse=True):
        n, left = divmod(left, d)
        if n:
            out.append(ChipCount(d, n))
    if left:
        out.append(ChipCount(1, left))
    return out
