"""Exact odds of the next round from a shoe composition (pure: no I/O, no clock, no randomness).

Conventions (shared spec ``odds-and-roads.md`` §1–§2, rules digest §1.10–§1.14):

* A shoe state is a :class:`Composition`: ten counts by baccarat value 0..9 (value 0 = 10/J/Q/K).
* The round is dealt P1, B1, P2, B2, then the Player's third card, then the Banker's, as the ruleset's
  Table 1 / Table 2 data require (:mod:`baccarat.drawing`, resolved exactly as :func:`baccarat.round.resolve`).
* **Counts are of ordered 6-card sequences of distinct physical cards.** A round that ends after 4 or 5 cards is
  weighted by the number of ways to deal the unused positions (a falling factorial), so every count is out of
  ``Permut(N, 6) = N (N-1) ... (N-5)`` (:attr:`OutcomeCounts.total`). This is the convention of the published
  Wizard of Odds combination tables: for a full 8-deck shoe under punto banco, Banker 2,292,252,566,437,888;
  Player 2,230,518,282,592,256; Tie 475,627,426,473,216 out of 4,998,398,275,503,360 (digest §1.14).
* Counts are exact Python ints. Probabilities / expected values are derived from them at the edge
  (:meth:`OutcomeCounts.probability` gives an exact :class:`fractions.Fraction`); never accumulate floats.

Engines (docs/odds-engine.md): the compiled kernel :mod:`baccarat._odds_native` where it was built (optional C
extension, see setup.py; :data:`ENGINE` ``native``), else the numpy paths below, which stay the reference
(``CROUPIER_ODDS_ENGINE=numpy`` selects them). Both give the same integers. Card-by-card updates:
:mod:`baccarat.odds_live`.

Method and cost: see :mod:`baccarat._odds_tables`. The first call for a ruleset builds its table from the
ruleset's Table 1 / Table 2 cells (~0.3 s, cached in memory for the life of the process, thread-safe; call
:func:`table_for` at start-up to pay it early). Every later :func:`exact_counts` call costs tens of microseconds.
Arithmetic is exact on every path, chosen by the card total N:

* N <= :data:`FLOAT64_MAX_CARDS` (458; every real shoe of up to 8 decks): the matrix product runs in float64
  BLAS, exact because every term and partial sum is a non-negative integer <= Permut(N, 6) <= 2**53;
* N <= :data:`INT64_MAX_CARDS` (1,450): int64 matrix product (Permut(N, 6) < 2**63);
* larger (only reachable through :meth:`Composition.of`): Python ints via object arrays, slower but exact.

Errors: :class:`~baccarat.errors.InvalidComposition`, :class:`~baccarat.errors.InsufficientCards`,
:class:`~baccarat.errors.IllegalDecision` (see :func:`exact_counts`).
"""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import perm
from typing import Any

import numpy as np

from baccarat import _odds_tables as _t
from baccarat.cards import VALUE_COUNTS_PER_DECK, Card, Hand
from baccarat.drawing import PUNTO_BANCO, Ruleset
from baccarat.errors import IllegalDecision, InsufficientCards, InvalidComposition

__all__ = [
    "ENGINE",
    "ENGINE_ENV",
    "FLOAT64_MAX_CARDS",
    "INT64_MAX_CARDS",
    "MAX_DECKS",
    "TABLE_COLUMNS",
    "BonusCounts",
    "Composition",
    "OutcomeCounts",
    "exact_counts",
    "outcome_counts",
    "permut6",
    "table_for",
]

#: ``Composition.full`` accepts 1..MAX_DECKS decks.
MAX_DECKS = 8
#: Cards a round can need (P1, B1, P2, B2 and two third cards): an evaluation needs at least this many.
ROUND_CARDS = _t.ROUND_CARDS
#: Largest card total N with Permut(N, 6) < 2**63: up to it the fast int64 path is exact.
INT64_MAX_CARDS = 1450


def permut6(n: int) -> int:
    """``Permut(n, 6) = n (n-1) (n-2) (n-3) (n-4) (n-5)``: ordered 6-card sequences from ``n`` cards."""
    return perm(n, ROUND_CARDS)


def _as_count(x: object, where: str) -> int:
    """``x`` as a plain int; bools, floats, strings etc. raise :class:`InvalidComposition`."""
    if isinstance(x, (bool, np.bool_)):
        raise InvalidComposition(f"{where} is a bool ({x!r}), not a card count")
    try:
        return operator.index(x)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidComposition(f"{where} is {x!r} ({type(x).__name__}), not an int") from None


@dataclass(frozen=True, slots=True)
class Composition:
    """The cards left in a shoe by baccarat value: ``counts[v]`` cards of value ``v`` (0 = 10/J/Q/K).

    Immutable and hashable. Build with :meth:`full` or :meth:`of` (direct construction is validated the same
    way). Raises :class:`InvalidComposition` naming the problem for anything but exactly ten non-negative ints.
    """

    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if isinstance(self.counts, (str, bytes, Mapping)):
            raise InvalidComposition(
                f"counts must be a sequence of 10 ints, got {type(self.counts).__name__}"
            )
        try:
            counts = tuple(self.counts)
        except TypeError:
            raise InvalidComposition(f"counts must be a sequence of 10 ints, got {self.counts!r}") from None
        if len(counts) != _t.VALUES:
            raise InvalidComposition(
                f"a composition needs exactly 10 counts (values 0..9), got {len(counts)}"
            )
        clean = tuple(_as_count(x, f"count of value {v}") for v, x in enumerate(counts))
        for v, x in enumerate(clean):
            if x < 0:
                raise InvalidComposition(f"count of value {v} is negative ({x})")
        object.__setattr__(self, "counts", clean)

    @classmethod
    def full(cls, decks: int) -> Composition:
        """A freshly shuffled shoe of ``decks`` 52-card decks (1..8): 16 per deck of value 0, 4 of the others.

        Raises :class:`InvalidComposition` for a deck count outside 1..8 or not an int.
        """
        d = _as_count(decks, "decks")
        if not 1 <= d <= MAX_DECKS:
            raise InvalidComposition(f"decks must be 1..{MAX_DECKS}, got {d}")
        return cls(tuple(d * c for c in VALUE_COUNTS_PER_DECK))

    @classmethod
    def of(cls, counts: Iterable[int]) -> Composition:
        """A composition from ten counts by value 0..9 (any iterable of ints; bools are rejected)."""
        return cls(counts)  # type: ignore[arg-type]  # validated and normalised to a tuple in __post_init__

    @property
    def total(self) -> int:
        """Number of cards in the composition."""
        return sum(self.counts)

    def __getitem__(self, value: int) -> int:
        """Cards of baccarat value ``value`` (0..9)."""
        return self.counts[value]

    def without(self, values: Iterable[int | Card]) -> Composition:
        """The composition after removing seen cards, given as values 0..9 or :class:`Card` objects.

        Raises :class:`InvalidComposition` for a value outside 0..9 or when more cards of a value are removed
        than the composition holds (naming the value and both counts).
        """
        counts = list(self.counts)
        removed = [0] * _t.VALUES
        for i, item in enumerate(values, 1):
            v = item.value if isinstance(item, Card) else _as_count(item, f"removed card {i}")
            if not 0 <= v < _t.VALUES:
                raise InvalidComposition(f"removed card {i} has value {v}, not 0..9")
            removed[v] += 1
            if counts[v] == 0:
                raise InvalidComposition(
                    f"cannot remove {removed[v]} card(s) of value {v}: the composition holds {self.counts[v]}"
                )
            counts[v] -= 1
        return Composition(tuple(counts))


_BONUS_FIELDS = ("natural_win", "natural_tie", "win_by_4", "win_by_5", "win_by_6", "win_by_7", "win_by_8",
                 "win_by_9", "lose")


def _field(i: int, doc: str) -> property:
    """A read-only property giving item ``i`` of the instance's ``_c`` tuple."""
    get = operator.itemgetter(i)
    return property(lambda self: get(self._c), doc=doc)


class _Frozen:
    """Immutable value objects backed by one tuple ``_c`` (equality, hash and pickling by that tuple)."""

    __slots__ = ("_c",)
    _c: tuple[int, ...]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._c == other._c  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._c))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (type(self)._of, (self._c,))

    @classmethod
    def _of(cls, c: tuple[int, ...]) -> Any:
        obj = object.__new__(cls)
        object.__setattr__(obj, "_c", c)
        return obj


class BonusCounts(_Frozen):
    """One side's outcomes for the bonus wager ("Dragon Bonus", odds-and-roads.md §2), as counts.

    ``BonusCounts(natural_win, natural_tie, win_by_4, ..., win_by_9, lose)`` (positional or keyword, ints).
    Immutable, hashable, equal by value. The classes are disjoint and sum to :attr:`OutcomeCounts.total`:

    * ``natural_win``: this side has a natural (two-card 8/9) and wins (the other side has no natural, or a
      natural 9 beats a natural 8);
    * ``natural_tie``: both sides have naturals of equal points (the wager is void) — the same count for both
      sides;
    * ``win_by_4`` .. ``win_by_9``: this side has no natural and wins by exactly that many points;
    * ``lose``: everything else (losses, non-natural ties, non-natural wins by 1–3 points).
    """

    __slots__ = ()

    def __init__(self, natural_win: int, natural_tie: int, win_by_4: int, win_by_5: int, win_by_6: int,
                 win_by_7: int, win_by_8: int, win_by_9: int, lose: int) -> None:
        object.__setattr__(self, "_c", (natural_win, natural_tie, win_by_4, win_by_5, win_by_6, win_by_7,
                                        win_by_8, win_by_9, lose))

    natural_win = _field(0, "Natural wins of this side (count).")
    natural_tie = _field(1, "Ties of two naturals of equal points (count; the wager is void).")
    win_by_4 = _field(2, "Non-natural wins by exactly 4 points (count).")
    win_by_5 = _field(3, "Non-natural wins by exactly 5 points (count).")
    win_by_6 = _field(4, "Non-natural wins by exactly 6 points (count).")
    win_by_7 = _field(5, "Non-natural wins by exactly 7 points (count).")
    win_by_8 = _field(6, "Non-natural wins by exactly 8 points (count).")
    win_by_9 = _field(7, "Non-natural wins by exactly 9 points (count).")
    lose = _field(8, "Everything else (count).")

    def win_by(self, margin: int) -> int:
        """Count of non-natural wins by exactly ``margin`` points (4..9)."""
        if not 4 <= margin <= 9:
            raise ValueError(f"bonus margins are 4..9, got {margin}")
        return self._c[margin - 2]

    @property
    def total(self) -> int:
        """Sum of the classes (equals the evaluation's ``total``)."""
        return sum(self._c)

    def to_dict(self) -> dict[str, int]:
        """``{"natural_win", "natural_tie", "win_by_4", ..., "win_by_9", "lose"}``, all ints."""
        return dict(zip(_BONUS_FIELDS, self._c, strict=True))

    def __repr__(self) -> str:
        return f"BonusCounts({', '.join(f'{k}={v!r}' for k, v in zip(_BONUS_FIELDS, self._c, strict=True))})"


_NATURAL_KEYS = ("player_natural_8", "player_natural_9", "banker_natural_8", "banker_natural_9")
_TOP_KEYS = ("banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8")
#: OutcomeCounts' fields in argument order (after ``total`` come the 30 counts of :data:`_ARGUMENT_ROWS`)
_OUTCOME_FIELDS = ("total", *_TOP_KEYS, *_NATURAL_KEYS, "player_bonus", "banker_bonus")


class OutcomeCounts(_Frozen):
    """Exact outcome counts of the next round for one composition and ruleset.

    ``OutcomeCounts(total, banker, player, tie, cards_4, cards_5, cards_6, dragon_7, panda_8, player_natural_8,
    player_natural_9, banker_natural_8, banker_natural_9, player_bonus, banker_bonus)`` (positional or keyword;
    the bonuses are :class:`BonusCounts`). Immutable, hashable, equal by value. Held as one tuple of ``total``
    and the 30 counts in the engines' order; the :class:`BonusCounts` are built on first access (an evaluation
    costs one small object, not 33 frozen fields: ~9.6 -> ~1.4 us for outcome_counts).

    Units: every field is a count of ordered 6-card sequences of distinct physical cards (rounds ending after 4
    or 5 cards weighted by the ways to deal the unused positions), out of ``total = Permut(N, 6)``. Divide by
    ``total`` for a probability (:meth:`probability`). Plain Python ints.

    * ``banker``, ``player``, ``tie``: who wins (disjoint, sum to ``total``);
    * ``cards_4``, ``cards_5``, ``cards_6``: cards **required** by the rules (card-count wagers, 13:69F-3.2(a)4;
      disjoint, sum to ``total``);
    * ``dragon_7``: the Banker's Hand wins with three cards totalling 7 (the no-vig Banker void / Dragon 7
      wager); ``panda_8``: the Player's Hand wins with three cards totalling 8;
    * ``player_natural_8`` .. ``banker_natural_9``: that side's first two cards total 8 (resp. 9), whatever the
      other side holds (so a natural tie of 8s counts in both ``player_natural_8`` and ``banker_natural_8``);
    * ``player_bonus``, ``banker_bonus``: :class:`BonusCounts` for the bonus wager on that side.

    Cross-checks for the 8-deck punto banco shoe: see the module docstring (Wizard of Odds published counts).
    """

    __slots__ = ("_bb", "_pb")
    _bb: BonusCounts
    _pb: BonusCounts

    def __init__(self, total: int, banker: int, player: int, tie: int, cards_4: int, cards_5: int, cards_6: int,
                 dragon_7: int, panda_8: int, player_natural_8: int, player_natural_9: int, banker_natural_8: int,
                 banker_natural_9: int, player_bonus: BonusCounts, banker_bonus: BonusCounts) -> None:
        object.__setattr__(self, "_c", (total, banker, player, tie, cards_4, cards_5, cards_6, dragon_7, panda_8,
                                        player_natural_8, player_natural_9, banker_natural_8, banker_natural_9,
                                        *player_bonus._c, *banker_bonus._c))

    total = _field(0, "Permut(N, 6): ordered 6-card sequences of the composition's N cards.")
    banker = _field(1, "Banker wins (count).")
    player = _field(2, "Player wins (count).")
    tie = _field(3, "Ties (count).")
    cards_4 = _field(4, "Rounds requiring 4 cards (count).")
    cards_5 = _field(5, "Rounds requiring 5 cards (count).")
    cards_6 = _field(6, "Rounds requiring 6 cards (count).")
    dragon_7 = _field(7, "Banker wins with three cards totalling 7 (count).")
    panda_8 = _field(8, "Player wins with three cards totalling 8 (count).")
    player_natural_8 = _field(9, "Player's first two cards total 8 (count).")
    player_natural_9 = _field(10, "Player's first two cards total 9 (count).")
    banker_natural_8 = _field(11, "Banker's first two cards total 8 (count).")
    banker_natural_9 = _field(12, "Banker's first two cards total 9 (count).")

    @property
    def player_bonus(self) -> BonusCounts:
        """The Player's :class:`BonusCounts` (built once, on first access)."""
        try:
            return self._pb
        except AttributeError:
            object.__setattr__(self, "_pb", BonusCounts._of(self._c[13:22]))
            return self._pb

    @property
    def banker_bonus(self) -> BonusCounts:
        """The Banker's :class:`BonusCounts` (built once, on first access)."""
        try:
            return self._bb
        except AttributeError:
            object.__setattr__(self, "_bb", BonusCounts._of(self._c[22:31]))
            return self._bb

    def bonus(self, hand: Hand) -> BonusCounts:
        """The bonus classes of ``hand`` (Player or Banker)."""
        return self.player_bonus if hand is Hand.PLAYER else self.banker_bonus

    def probability(self, count: int) -> Fraction:
        """``count / total`` as an exact fraction, e.g. ``oc.probability(oc.banker)``."""
        return Fraction(count, self._c[0])

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (all ints)::

        {"total", "banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8",
         "naturals": {"player_8", "player_9", "banker_8", "banker_9"},
         "bonus": {"player": {"natural_win", "natural_tie", "win_by_4", ..., "win_by_9", "lose"},
                   "banker": {...}}}
        """
        out: dict[str, Any] = {"total": self.total}
        out.update({k: getattr(self, k) for k in _TOP_KEYS})
        out["naturals"] = {k.replace("_natural", ""): getattr(self, k) for k in _NATURAL_KEYS}
        out["bonus"] = {"player": self.player_bonus.to_dict(), "banker": self.banker_bonus.to_dict()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutcomeCounts:
        """Inverse of :meth:`to_dict` (``total`` may be omitted: it is the sum of banker, player and tie)."""
        top = {k: int(data[k]) for k in _TOP_KEYS}
        total = int(data["total"]) if "total" in data else top["banker"] + top["player"] + top["tie"]
        nats = {k: int(data["naturals"][k.replace("_natural", "")]) for k in _NATURAL_KEYS}
        player, banker = (
            BonusCounts(**{name: int(data["bonus"][side][name]) for name in _BONUS_FIELDS})
            for side in ("player", "banker")
        )
        return cls(total=total, player_bonus=player, banker_bonus=banker, **top, **nats)

    def __repr__(self) -> str:
        return f"OutcomeCounts({', '.join(f'{k}={getattr(self, k)!r}' for k in _OUTCOME_FIELDS)})"


# --------------------------------------------------------------------------------------------------- engine

#: Environment variable choosing the engine: ``native`` (the compiled kernel, the default where it was built)
#: or ``numpy`` (the reference path, always available). Read once, at import.
ENGINE_ENV = "CROUPIER_ODDS_ENGINE"


def _load_native() -> Any:
    """The compiled kernel :mod:`baccarat._odds_native`, or None when it was not built or ``numpy`` is asked.

    Raises :class:`ValueError` for an ``CROUPIER_ODDS_ENGINE`` other than ``native``/``numpy``/unset.
    """
    want = os.environ.get(ENGINE_ENV, "").strip().lower()
    if want not in ("", "native", "numpy"):
        raise ValueError(f"{ENGINE_ENV} must be 'native' or 'numpy', got {want!r}")
    if want == "numpy":
        return None
    try:
        from baccarat import _odds_native
    except ImportError:
        if want == "native":
            raise
        return None
    return _odds_native


#: The compiled kernel (None: not built, or the numpy path was asked for).
NATIVE: Any = _load_native()
#: Which engine :func:`exact_counts` and :class:`baccarat.odds_live.LiveOdds` use: ``native`` or ``numpy``.
ENGINE = "native" if NATIVE is not None else "numpy"

#: Largest card total N with Permut(N, 6) <= 2**53: up to it the matrix product runs in float64 (BLAS), which is
#: exact because every term and every partial sum is a non-negative integer <= the column's count <= 2**53.
FLOAT64_MAX_CARDS = 458
#: Rows of :func:`table_for`'s matrix (one per reported count).
TABLE_COLUMNS: tuple[str, ...] = _t.COLUMNS

#: Table rows in the order :class:`OutcomeCounts` / :class:`BonusCounts` take their arguments (after ``total``).
_ARGUMENT_ROWS = tuple(
    _t.COLUMN[name]
    for name in (
        *_TOP_KEYS,
        *_NATURAL_KEYS,
        *(
            name
            for side in ("player", "banker")
            for name in (
                f"{side}_natural_win",
                "natural_tie",
                *(f"{side}_win_by_{k}" for k in range(4, 10)),
                f"{side}_lose",
            )
        ),
    )
)
assert len(_ARGUMENT_ROWS) == 30  # exact_counts unpacks them by position
#: Positions (in :data:`_ARGUMENT_ROWS`) of the last class of each family summing to the total: ``tie``,
#: ``cards_6``, the Player's and the Banker's bonus ``lose``. The compiled kernel derives them from the total.
_DERIVED_OUTPUTS = (2, 5, 20, 29)


class _Plan:
    """Per-ruleset tables: the full int64 table, its distinct rows (int64 and float64) and the gather index."""

    __slots__ = ("_native", "_unique_obj", "gather", "ruleset", "table", "unique", "unique_f64")

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.table = _t.build_table(ruleset)
        # Identical rows are computed once (e.g. Player/Banker natural counts coincide by symmetry).
        unique, inverse = np.unique(self.table, axis=0, return_inverse=True)
        self.unique = np.ascontiguousarray(unique, dtype=np.int64)
        self.unique_f64 = self.unique.astype(np.float64)
        self.gather = np.asarray(inverse, dtype=np.int64).reshape(-1)[list(_ARGUMENT_ROWS)]
        self._unique_obj: np.ndarray | None = None
        self._native: Any = None
        for a in (self.unique, self.unique_f64, self.gather):
            a.setflags(write=False)

    @property
    def unique_obj(self) -> np.ndarray:
        if self._unique_obj is None:
            self._unique_obj = self.unique.astype(object)
        return self._unique_obj

    @property
    def native(self) -> Any:
        """This table in the compiled kernel's layout (a ``_odds_native.Plan``; needs :data:`NATIVE`)."""
        if self._native is None:
            if NATIVE is None:
                raise RuntimeError("the compiled odds kernel is not available")
            if self.unique.max() >= 1 << 16:
                raise AssertionError("table cells count orderings of 6 cards: at most 720")
            # The last class of each family that sums to the total (tie, cards_6, each side's bonus "lose")
            # is derived in the kernel as the total less the others; the numpy paths count it directly, so
            # the tests comparing the two check the derivation.
            derived = set(_DERIVED_OUTPUTS)
            rows = sorted({int(self.gather[i]) for i in range(len(self.gather)) if i not in derived})
            # Densest rows first: the kernel skips a group of four rows that is zero for a multiset, and the
            # sparse rows (wins by 8 or 9, the natural tie) then share the groups it skips most.
            rows.sort(key=lambda r: -int(np.count_nonzero(self.unique[r])))
            at = {r: k for k, r in enumerate(rows)}
            gather = [255 if i in derived else at[int(r)] for i, r in enumerate(self.gather)]
            self._native = NATIVE.Plan(
                self.unique[rows].astype("<u2").tobytes(), len(rows),
                _t.SUB_A.astype("<u2").tobytes(), _t.SUB_B.astype("<u2").tobytes(),
                np.array(_t.SUB_MULTISETS, dtype=np.uint8).tobytes(), np.array(gather, dtype=np.uint8).tobytes(),
            )
        return self._native


_plans: dict[tuple[Any, ...], _Plan] = {}
#: id(ruleset) -> (ruleset, plan): hashing a Ruleset (96 enum cells) costs more than the whole look-up below.
_plans_by_id: dict[int, tuple[Ruleset, _Plan]] = {}
_lock = threading.Lock()
_ARANGE6 = np.arange(ROUND_CARDS, dtype=np.int64)
_FACTOR_A, _FACTOR_B, _SUB_A, _SUB_B = _t.FACTOR_A, _t.FACTOR_B, _t.SUB_A, _t.SUB_B


def _plan(ruleset: Ruleset) -> _Plan:
    """The cached plan of ``ruleset`` (built on first use; equal rulesets share one)."""
    entry = _plans_by_id.get(id(ruleset))
    if entry is not None and entry[0] is ruleset:
        return entry[1]
    _check_ruleset(ruleset)
    with _lock:
        key = (ruleset.player, ruleset.banker, ruleset.natural)
        plan = _plans.get(key)
        if plan is None:
            plan = _Plan(ruleset)
            _plans[key] = plan
        # The entry keeps the ruleset alive, so its id cannot be reused by another object.
        _plans_by_id[id(ruleset)] = (ruleset, plan)
    return plan


def table_for(ruleset: Ruleset) -> np.ndarray:
    """The ruleset's read-only ``(len(TABLE_COLUMNS), 5005)`` int64 table, building it now if needed.

    ``table[c, m]`` = orderings of multiset ``m`` (see :mod:`baccarat._odds_tables`) counted in
    ``TABLE_COLUMNS[c]``. Call it at service start to keep the one-time build (~0.3 s) off the first request.
    Raises :class:`IllegalDecision` for rulesets with option cells.
    """
    return _plan(ruleset).table


def _check_ruleset(ruleset: Ruleset) -> None:
    if ruleset.has_options:
        raise IllegalDecision(
            f"ruleset {ruleset.name} has option cells (chemin de fer): exact odds need a fixed drawing strategy"
        )


def _weights(f: np.ndarray) -> np.ndarray:
    """``W[m] = prod_v F[v, k_v(m)]`` for all 5005 multisets from the ``(10, 7)`` falling-factorial table ``F``.

    Factorised over the value groups 0..4 and 5..9 (:data:`baccarat._odds_tables.SUB_MULTISETS`). Works for
    int64 ``F`` (exact while Permut(N, 6) < 2**63: every partial product counts physical card sequences) and for
    object ``F`` (Python ints).
    """
    flat = f.ravel()
    ga = flat.take(_FACTOR_A)
    gb = flat.take(_FACTOR_B)
    a = ga[0] * ga[1]
    a *= ga[2]
    a *= ga[3]
    a *= ga[4]
    b = gb[0] * gb[1]
    b *= gb[2]
    b *= gb[3]
    b *= gb[4]
    return a.take(_SUB_A) * b.take(_SUB_B)


def _falling_int64(counts: tuple[int, ...]) -> np.ndarray:
    """``F[v, k] = falling(n_v, k)`` for k = 0..6 as int64 (a zero factor keeps exhausted values at 0)."""
    f = np.ones((_t.VALUES, ROUND_CARDS + 1), dtype=np.int64)
    np.cumprod(np.array(counts, dtype=np.int64)[:, None] - _ARANGE6, axis=1, out=f[:, 1:])
    return f


def _falling_object(counts: tuple[int, ...]) -> np.ndarray:
    """``F[v, k] = falling(n_v, k)`` as Python ints (object array), for compositions beyond int64."""
    f = np.empty((_t.VALUES, ROUND_CARDS + 1), dtype=object)
    for v, n in enumerate(counts):
        acc = 1
        for k in range(ROUND_CARDS + 1):
            f[v, k] = acc
            acc *= n - k
    return f


def _column_counts(counts: tuple[int, ...], n: int, plan: _Plan, method: str | None = None) -> list[int]:
    """Counts in :data:`_ARGUMENT_ROWS` order. ``method`` forces a path (tests): native, float64, int64 or object."""
    if method is None:
        if n <= INT64_MAX_CARDS and NATIVE is not None:
            return NATIVE.evaluate(plan.native, counts)  # type: ignore[no-any-return]
        method = "float64" if n <= FLOAT64_MAX_CARDS else "int64" if n <= INT64_MAX_CARDS else "object"
    if method == "native":
        if n > INT64_MAX_CARDS:
            raise ValueError(f"the compiled kernel is exact up to {INT64_MAX_CARDS} cards, not {n}")
        return NATIVE.evaluate(plan.native, counts)  # type: ignore[no-any-return]
    if method == "float64":
        u = (plan.unique_f64 @ _weights(_falling_int64(counts)).astype(np.float64)).astype(np.int64)
    elif method == "int64":
        u = plan.unique @ _weights(_falling_int64(counts))
    else:
        u = plan.unique_obj.dot(_weights(_falling_object(counts)))
    return u.take(plan.gather).tolist()  # Python ints


def exact_counts(composition: Composition | Iterable[int], ruleset: Ruleset = PUNTO_BANCO) -> OutcomeCounts:
    """Exact :class:`OutcomeCounts` of the next round dealt from ``composition`` under ``ruleset``.

    ``composition`` is a :class:`Composition` (or ten counts, validated by :meth:`Composition.of`).
    Raises :class:`InsufficientCards` when fewer than 6 cards remain (a round may need 6, digest §1.12),
    :class:`IllegalDecision` for rulesets with option cells (chemin de fer: odds need a fixed strategy),
    :class:`InvalidComposition` for invalid counts. The first call for a ruleset builds its table (see
    :func:`table_for`).
    """
    comp = composition if isinstance(composition, Composition) else Composition.of(composition)
    plan = _plan(ruleset)
    counts = comp.counts
    n = sum(counts)
    if n < ROUND_CARDS:
        raise InsufficientCards(
            f"an odds evaluation needs at least {ROUND_CARDS} cards, the composition has {n}"
        )
    return outcome_counts(n, _column_counts(counts, n, plan))


def outcome_counts(n: int, s: list[int]) -> OutcomeCounts:
    """:class:`OutcomeCounts` of an ``n``-card composition from its 30 counts in :data:`_ARGUMENT_ROWS` order
    (as the engines return them)."""
    if len(s) != len(_ARGUMENT_ROWS):
        raise ValueError(f"an evaluation has {len(_ARGUMENT_ROWS)} counts, got {len(s)}")
    return OutcomeCounts._of((perm(n, ROUND_CARDS), *s))  # type: ignore[no-any-return]
