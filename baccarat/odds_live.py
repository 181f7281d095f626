"""Exact odds of the next round kept up to date card by card (pure: no I/O, no clock, no randomness).

:func:`baccarat.odds.exact_counts` evaluates a composition from scratch: ``sums[r] = Σ_m T[r, m] · W[m]`` over
the 5005 multisets ``m`` of six card values, with ``W[m] = Π_v falling(n_v, k_v(m))`` (odds-and-roads.md §1,
:mod:`baccarat._odds_tables`). When one card of value ``v`` leaves the shoe only ``falling(n_v, ·)`` changes,
so only the weights of the C(14, 5) = 2002 multisets holding ``v`` change, and

    ``sums'[r] = sums[r] + Σ_{m ∋ v} T[r, m] · (W'[m] − W[m])``

is the new evaluation, exactly, at 40 % of the work. :class:`LiveOdds` keeps the state (the numpy path: ``W``,
its two group factors and the sums; the compiled kernel: the group factors and the sums, ``W'[m] − W[m]``
being the change of one group's factor times the other's) and applies that update on :meth:`LiveOdds.remove`. Every count is an integer; the
arithmetic is that of :mod:`baccarat.odds` (int64, exact because every true result is at most Permut(N, 6)
< 2**63 for N <= :data:`~baccarat.odds.INT64_MAX_CARDS` cards; the compiled kernel carries the same integers
in float64 below 459 cards, where they are at most 2**53). Beyond that bound (compositions built by hand)
every step is a full evaluation with Python ints.

Two engines give the same counts (the tests compare them on random compositions and whole shoes):
``native`` (the compiled kernel :mod:`baccarat._odds_native`, the default where it was built) and ``numpy``
(the reference). ``CROUPIER_ODDS_ENGINE=numpy`` selects the reference for the whole process
(:data:`baccarat.odds.ENGINE`); ``LiveOdds(..., engine="numpy")`` for one tracker.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from baccarat import _odds_tables as _t
from baccarat import odds as _odds
from baccarat.drawing import PUNTO_BANCO, Ruleset
from baccarat.errors import InsufficientCards, InvalidComposition
from baccarat.odds import Composition, OutcomeCounts

__all__ = ["LiveOdds"]

_VALUES = _t.VALUES
_KS = np.array(_t.SUB_MULTISETS, dtype=np.int64)  # (462, 5): k_j of each sub-multiset
_MULTI_K = np.array([[m.count(v) for v in range(_VALUES)] for m in _t.MULTISETS], dtype=np.int64)  # (5005, 10)
#: per value v: the multisets holding v, and the sub-multisets of v's group holding v
_AFFECTED = tuple(np.flatnonzero(_MULTI_K[:, v] > 0) for v in range(_VALUES))
_AFFECTED_SUB = tuple(np.flatnonzero(_KS[:, v % _t.GROUP_VALUES] > 0) for v in range(_VALUES))


class _NumpyTracker:
    """The reference implementation of the update, in int64 numpy arrays (same interface as the kernel's
    ``Tracker``: ``remove(v)``, ``reset(counts)``, ``sums()``, ``copy()``, ``counts``)."""

    __slots__ = ("_affected_table", "_plan", "counts", "f", "ga", "gb", "sums_", "w")

    def __init__(self, plan: Any, counts: tuple[int, ...]) -> None:
        self._plan = plan
        self._affected_table = _affected_tables(plan)
        self.reset(counts)

    def reset(self, counts: tuple[int, ...]) -> None:
        self.counts = tuple(counts)
        self.f = _odds._falling_int64(self.counts)
        flat = self.f.ravel()
        self.ga = np.prod(flat.take(_t.FACTOR_A), axis=0)
        self.gb = np.prod(flat.take(_t.FACTOR_B), axis=0)
        self.w = self.ga.take(_t.SUB_A) * self.gb.take(_t.SUB_B)
        self.sums_ = self._plan.unique @ self.w

    def remove(self, v: int) -> None:
        if self.counts[v] == 0:  # as the kernel: refused before anything changes
            raise ValueError(f"no card of value {v} left")
        counts = list(self.counts)
        counts[v] -= 1
        self.counts = tuple(counts)
        n = counts[v]
        self.f[v, 1:] = np.cumprod(n - np.arange(_t.ROUND_CARDS, dtype=np.int64))
        group, factor = (self.ga, _t.FACTOR_A) if v < _t.GROUP_VALUES else (self.gb, _t.FACTOR_B)
        subs = _AFFECTED_SUB[v]
        group[subs] = np.prod(self.f.ravel().take(factor[:, subs]), axis=0)
        aff = _AFFECTED[v]
        new = self.ga.take(_t.SUB_A[aff]) * self.gb.take(_t.SUB_B[aff])
        delta = new - self.w[aff]
        self.w[aff] = new
        self.sums_ += self._affected_table[v] @ delta

    def sums(self) -> list[int]:
        return self.sums_.take(self._plan.gather).tolist()  # type: ignore[no-any-return]

    def copy(self) -> _NumpyTracker:
        c = object.__new__(_NumpyTracker)
        c._plan, c._affected_table, c.counts = self._plan, self._affected_table, self.counts
        c.f, c.ga, c.gb, c.w, c.sums_ = self.f.copy(), self.ga.copy(), self.gb.copy(), self.w.copy(), self.sums_.copy()
        return c


_AFFECTED_TABLES: dict[int, tuple[Any, tuple[np.ndarray, ...]]] = {}


def _affected_tables(plan: Any) -> tuple[np.ndarray, ...]:
    """Per value v, the plan's distinct rows restricted to the multisets holding v (contiguous, int64)."""
    got = _AFFECTED_TABLES.get(id(plan))
    if got is None or got[0] is not plan:
        got = _AFFECTED_TABLES[id(plan)] = (plan, tuple(np.ascontiguousarray(plan.unique[:, a]) for a in _AFFECTED))
    return got[1]


def _engine(engine: str | None) -> str:
    chosen = _odds.ENGINE if engine is None else engine
    if chosen not in ("native", "numpy"):
        raise ValueError(f"engine must be 'native' or 'numpy', got {chosen!r}")
    if chosen == "native" and _odds.NATIVE is None:
        raise ValueError("the compiled odds kernel is not available (built without a C compiler?)")
    return chosen


class LiveOdds:
    """Exact outcome counts of one shoe's composition, updated in place as cards leave it.

    ``LiveOdds(composition, ruleset=PUNTO_BANCO, engine=None)``: ``composition`` a :class:`Composition` or ten
    counts by value 0..9 (validated); ``engine`` ``"native"``/``"numpy"`` (default :data:`baccarat.odds.ENGINE`).
    :meth:`counts` gives the same :class:`OutcomeCounts` as :func:`baccarat.odds.exact_counts` of
    :attr:`composition`, always. Raises :class:`InvalidComposition` (bad counts), :class:`ValueError` (unknown
    or unavailable engine), :class:`~baccarat.errors.IllegalDecision` (rulesets with option cells). Not
    thread-safe: one tracker per thread (:meth:`copy` makes an independent one).
    """

    __slots__ = ("_n", "_ruleset", "_tracker", "engine")

    def __init__(self, composition: Composition | Iterable[int], ruleset: Ruleset = PUNTO_BANCO,
                 engine: str | None = None) -> None:
        comp = composition if isinstance(composition, Composition) else Composition.of(composition)
        self.engine = _engine(engine)
        self._ruleset = ruleset
        self._tracker: Any = None
        self._n = comp.total
        self._start(comp.counts)

    def _start(self, counts: tuple[int, ...]) -> None:
        plan = _odds._plan(self._ruleset)
        if self._n > _odds.INT64_MAX_CARDS:
            self._tracker = counts  # beyond int64: full evaluations with Python ints, step by step
        elif self.engine == "native":
            self._tracker = _odds.NATIVE.Tracker(plan.native, counts)
        else:
            self._tracker = _NumpyTracker(plan, counts)

    @property
    def composition(self) -> tuple[int, ...]:
        """The ten counts by value 0..9 now."""
        t = self._tracker
        return t if isinstance(t, tuple) else tuple(t.counts)

    @property
    def ruleset(self) -> Ruleset:
        """The drawing rules the counts are for."""
        return self._ruleset

    def follow(self, composition: tuple[int, ...], max_cards: int = 16) -> None:
        """Bring the tracker to ``composition`` (ten counts): card by card when it holds at most ``max_cards``
        fewer cards and none more of any value (a card, a burn), else by one full evaluation.

        Raises :class:`InvalidComposition` for invalid counts (the tracker is unchanged then).
        """
        t = self._tracker
        if self.engine == "native" and not isinstance(t, tuple):  # the kernel compares and steps in C
            try:
                k = t.follow(composition, max_cards)
            except (TypeError, ValueError, OverflowError):
                k = -1  # not ten non-negative ints: Composition.of below says what is wrong
            if k >= 0:
                self._n -= k
                return
            comp = Composition.of(composition)
            self._n = comp.total
            self._start(comp.counts)
            return
        current = t if isinstance(t, tuple) else t.counts
        if composition == current:
            return
        if len(composition) == _VALUES:
            gone = list(map(operator.sub, current, composition))
            k = sum(gone)
            if 0 < k <= max_cards and min(gone) >= 0:
                if isinstance(t, tuple):
                    for v, g in enumerate(gone):
                        for _ in range(g):
                            self.remove(v)
                else:  # the counts are checked here: the tracker's own checks would only repeat them
                    remove = t.remove
                    if k == 1:  # one card (the usual step): its value, then one update
                        remove(gone.index(1))
                    else:
                        for v, g in enumerate(gone):
                            for _ in range(g):
                                remove(v)
                    self._n -= k
                return
        comp = Composition.of(composition)
        self._n = comp.total
        self._start(comp.counts)

    def follow_pair(self, other: LiveOdds, composition: tuple[int, ...], other_composition: tuple[int, ...],
                    max_cards: int = 16) -> None:
        """``self.follow(composition, max_cards)`` and ``other.follow(other_composition, max_cards)``, with the
        same results; where both trackers run the compiled kernel on one ruleset, the cards both lose (two views
        of one shoe: a card dealt) are taken out of both in one walk over the table (each table group read once
        for the two, ~1.3x less CPU than two follows). ``other`` must be another tracker (:class:`ValueError`
        else). Raises :class:`InvalidComposition` as :meth:`follow` does (that tracker is unchanged then).
        """
        if other is self:
            raise ValueError("follow_pair needs two trackers")
        t, u = self._tracker, other._tracker
        if self.engine == "native" and other.engine == "native" and not isinstance(t, tuple) \
                and not isinstance(u, tuple):
            try:
                ka, kb = t.follow_pair(u, composition, other_composition, max_cards)
            except (TypeError, ValueError, OverflowError):
                ka = kb = -1  # not ten non-negative ints: follow() below says what is wrong
            if ka >= 0:
                self._n -= ka
            if kb >= 0:
                other._n -= kb
            if ka >= 0 and kb >= 0:
                return
            if ka < 0:
                self.follow(composition, max_cards)
            if kb < 0:
                other.follow(other_composition, max_cards)
            return
        self.follow(composition, max_cards)
        other.follow(other_composition, max_cards)

    @property
    def total(self) -> int:
        """Cards left (N)."""
        return self._n

    def remove(self, value: int) -> None:
        """One card of baccarat ``value`` (0..9) leaves the shoe; the counts follow exactly.

        Raises :class:`InvalidComposition` for a value outside 0..9 or when no card of it is left (nothing
        changes then).
        """
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _VALUES:
            raise InvalidComposition(f"a card value is 0..9, got {value!r}")
        t = self._tracker
        if not isinstance(t, tuple):
            try:
                t.remove(value)  # checks that a card of the value is left, and then changes nothing
            except ValueError:
                raise InvalidComposition(f"no card of value {value} is left in the shoe") from None
            self._n -= 1
            return
        if t[value] == 0:
            raise InvalidComposition(f"no card of value {value} is left in the shoe")
        self._n -= 1
        listed = list(t)
        listed[value] -= 1
        self._tracker = tuple(listed)
        if self._n <= _odds.INT64_MAX_CARDS:  # back within int64: incremental from here on
            self._start(self._tracker)

    def column_counts(self) -> list[int]:
        """The 30 counts in :class:`OutcomeCounts` argument order (after ``total``); see :meth:`counts`.

        Raises :class:`InsufficientCards` below six cards.
        """
        if self._n < _t.ROUND_CARDS:
            raise InsufficientCards(
                f"an odds evaluation needs at least {_t.ROUND_CARDS} cards, the composition has {self._n}"
            )
        t = self._tracker
        if isinstance(t, tuple):
            return _odds._column_counts(t, self._n, _odds._plan(self._ruleset))
        return t.sums()  # type: ignore[no-any-return]

    def view(self, lines: Any) -> tuple[int, dict[str, int], list[Any]] | None:
        """``(total, counts, objects)`` of the composition now from the compiled kernel, or None where it does
        not follow this shoe (numpy engine, more than 1,450 cards): the caller computes the same from
        :meth:`column_counts` then.

        ``lines`` is a ``baccarat._odds_native.Lines`` (per-wager integer linear forms over the 30 counts and the
        counts dict's keys; ``services/projection/odds_views.py`` builds them): ``total`` is Permut(N, 6),
        ``counts`` the dict of the lines' keys, ``objects`` one ``make(name, p_win, p_void, ev, ev_num, ev_den)``
        per line (exact integers, floats correctly rounded). Raises :class:`InsufficientCards` below six cards.
        """
        t = self._tracker
        if self.engine != "native" or isinstance(t, tuple):
            return None
        if self._n < _t.ROUND_CARDS:
            raise InsufficientCards(
                f"an odds evaluation needs at least {_t.ROUND_CARDS} cards, the composition has {self._n}"
            )
        return t.view(lines)  # type: ignore[no-any-return]

    def counts(self) -> OutcomeCounts:
        """The exact :class:`OutcomeCounts` of the next round from :attr:`composition` (ints, out of
        Permut(N, 6)). Raises :class:`InsufficientCards` below six cards."""
        return _odds.outcome_counts(self._n, self.column_counts())

    def copy(self) -> LiveOdds:
        """An independent tracker in the same state (e.g. to keep a view while another follows the shoe)."""
        c = object.__new__(LiveOdds)
        c.engine, c._ruleset, c._n = self.engine, self._ruleset, self._n
        t = self._tracker
        c._tracker = t if isinstance(t, tuple) else t.copy()
        return c
