"""Type stub of the compiled odds kernel (baccarat/_odds_native.c; optional, see setup.py)."""

from collections.abc import Callable, Sequence
from typing import Any

from typing_extensions import Buffer

#: 1 when the AVX2+FMA float64 loop is used (CPU has it, CROUPIER_ODDS_NO_SIMD unset), else 0
SIMD: int
#: cards up to which the float64 loop is exact (Permut(N, 6) <= 2**53)
FLOAT64_MAX_CARDS: int

class Plan:
    """One ruleset's table: ``Plan(table_u16, rows, sub_a_u16, sub_b_u16, subk_u8, gather_u8)``; a gather entry
    of 255 derives that count (the last of its family: tie, cards_6, each side's bonus lose) from the total."""

    def __init__(self, table: Buffer, rows: int, sub_a: Buffer, sub_b: Buffer, subk: Buffer,
                 gather: Buffer) -> None: ...

class Lines:
    """Per-wager integer linear forms over the 30 counts and the counts dict's keys: ``Lines(keys, key_index,
    names, make, coef_i64, dens_i64, has_void_u8)`` (see the C source and services/projection/odds_views.py)."""

    def __init__(self, keys: tuple[str, ...], key_index: Buffer, names: tuple[object, ...],
                 make: Callable[..., object], coef: Buffer, dens: Buffer, has_void: Buffer) -> None: ...

class Tracker:
    """Exact counts of one composition (N <= 1,450 cards), updated card by card."""

    counts: tuple[int, ...]
    def __init__(self, plan: Plan, counts: Sequence[int]) -> None: ...
    def remove(self, value: int) -> None: ...
    def reset(self, counts: Sequence[int]) -> None: ...
    def sums(self) -> list[int]: ...
    def copy(self) -> Tracker: ...
    def view(self, lines: Lines) -> tuple[int, dict[str, int], list[Any]]: ...
    def follow(self, counts: Sequence[int], max_cards: int) -> int: ...

def evaluate(plan: Plan, counts: Sequence[int]) -> list[int]: ...
