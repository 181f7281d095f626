"""Precomputed tables behind :mod:`baccarat.odds` (internal; import :mod:`baccarat.odds` instead).

The idea (odds-and-roads.md §1): the outcome of a round is a function of the *ordered* sequence of the next
six card values ``(c1..c6)`` (dealt P1, B1, P2, B2, then third cards as the rules require), while the number
of ways a composition ``n[0..9]`` can deal one given value sequence is ``prod_v falling(n[v], k[v])`` where
``k[v]`` is how often value ``v`` occurs in the sequence. That weight depends only on the **multiset** of the
six values, and there are only C(15, 6) = 5005 multisets. So, once per ruleset:

* every one of the 10**6 value sequences is resolved with the ruleset's own Table 1 / Table 2 data
  (vectorised with numpy, well under a second);
* each sequence falls into one of at most 400 *classes* ``(player drew?, banker drew?, player points,
  banker points)``, which determines every quantity the odds engine reports;
* ``M[multiset, class]`` = number of orderings of the multiset that end in that class, and the classes are
  folded into the :data:`COLUMNS` the engine reports, giving the int64 matrix ``table[column, multiset]``.

Per composition the engine then only needs ``W[multiset]`` (factorised over two value groups, see
:data:`SUB_MULTISETS`) and one matrix-vector product ``table @ W``.
"""

from __future__ import annotations

from itertools import combinations_with_replacement, product

import numpy as np

from baccarat.drawing import STOOD, Action, Ruleset
from baccarat.errors import BaccaratError

#: Number of card values (0 = ten/face, 1..9).
VALUES = 10
#: Cards of the longest round: P1, B1, P2, B2, Player third, Banker third.
ROUND_CARDS = 6
#: Width of the falling-factorial table: ``F[v, k]`` for k = 0..6.
_F_WIDTH = ROUND_CARDS + 1

#: Every multiset of six card values, as a sorted tuple, in lexicographic order (5005 of them).
MULTISETS: tuple[tuple[int, ...], ...] = tuple(combinations_with_replacement(range(VALUES), ROUND_CARDS))


#: Values are split into two groups, 0..4 and 5..9. A multiset's weight factorises over the groups, and each
#: group has only C(11, 5) = 462 sub-multisets of at most six cards (count vectors ``k[0..4]`` with sum <= 6),
#: so the per-composition work is 2 x (5 x 462) look-ups and two 5005-entry gathers instead of 6 x 5005.
GROUP_VALUES = 5
SUB_MULTISETS: tuple[tuple[int, ...], ...] = tuple(
    k for k in product(range(ROUND_CARDS + 1), repeat=GROUP_VALUES) if sum(k) <= ROUND_CARDS
)


def _group_indices() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Index arrays for the factorised weight ``W[m] = GA[SUB_A[m]] * GB[SUB_B[m]]``.

    ``FACTOR_A[j, a] = j * 7 + k_j(a)`` indexes the flattened ``(10, 7)`` falling-factorial table ``F[v, k]`` for
    value ``j`` of sub-multiset ``a`` (group 0..4); ``FACTOR_B`` the same for values ``5 + j``. ``SUB_A[m]`` /
    ``SUB_B[m]`` give the sub-multiset of multiset ``m`` restricted to each group.
    """
    position = {k: i for i, k in enumerate(SUB_MULTISETS)}
    k = np.array(SUB_MULTISETS, dtype=np.int64).T  # (5, 462)
    j = np.arange(GROUP_VALUES, dtype=np.int64)[:, None]
    factor_a = j * _F_WIDTH + k
    factor_b = (j + GROUP_VALUES) * _F_WIDTH + k
    sub_a = np.empty(len(MULTISETS), dtype=np.int64)
    sub_b = np.empty(len(MULTISETS), dtype=np.int64)
    for m, multiset in enumerate(MULTISETS):
        counts = [multiset.count(v) for v in range(VALUES)]
        sub_a[m] = position[tuple(counts[:GROUP_VALUES])]
        sub_b[m] = position[tuple(counts[GROUP_VALUES:])]
    for a in (factor_a, factor_b, sub_a, sub_b):
        a.setflags(write=False)
    return factor_a, factor_b, sub_a, sub_b


FACTOR_A, FACTOR_B, SUB_A, SUB_B = _group_indices()


#: Output columns of a table, in order. ``*_lose`` and ``tie``/``cards_6`` are counted directly (not derived
#: by subtraction) so the "classes sum to the total" checks are real checks.
COLUMNS: tuple[str, ...] = (
    "banker",
    "player",
    "tie",
    "cards_4",
    "cards_5",
    "cards_6",
    "dragon_7",
    "panda_8",
    "player_natural_8",
    "player_natural_9",
    "banker_natural_8",
    "banker_natural_9",
    "natural_tie",
    "player_natural_win",
    *(f"player_win_by_{k}" for k in range(4, 10)),
    "player_lose",
    "banker_natural_win",
    *(f"banker_win_by_{k}" for k in range(4, 10)),
    "banker_lose",
)
COLUMN: dict[str, int] = {name: i for i, name in enumerate(COLUMNS)}

#: Number of round classes: (player drew 0/1) x (banker drew 0/1) x player points x banker points.
_CLASSES = 2 * 2 * 10 * 10


def _class_columns(natural: frozenset[int]) -> np.ndarray:
    """``(400, len(COLUMNS))`` 0/1 matrix: which reported columns a round class contributes to."""
    a = np.zeros((_CLASSES, len(COLUMNS)), dtype=np.int64)
    for c in range(_CLASSES):
        p_len, b_len = 2 + c // 200, 2 + (c // 100) % 2
        p, b = (c // 10) % 10, c % 10
        row = a[c]
        row[COLUMN["banker"]] = b > p
        row[COLUMN["player"]] = p > b
        row[COLUMN["tie"]] = p == b
        row[COLUMN[f"cards_{p_len + b_len}"]] = 1
        row[COLUMN["dragon_7"]] = b_len == 3 and b == 7 and b > p
        row[COLUMN["panda_8"]] = p_len == 3 and p == 8 and p > b
        p_nat = p_len == 2 and p in natural
        b_nat = b_len == 2 and b in natural
        row[COLUMN["player_natural_8"]] = p_len == 2 and p == 8
        row[COLUMN["player_natural_9"]] = p_len == 2 and p == 9
        row[COLUMN["banker_natural_8"]] = b_len == 2 and b == 8
        row[COLUMN["banker_natural_9"]] = b_len == 2 and b == 9
        row[COLUMN["natural_tie"]] = p_nat and b_nat and p == b
        for side, mine, theirs, nat in (("player", p, b, p_nat), ("banker", b, p, b_nat)):
            margin = mine - theirs
            if nat and margin > 0:
                row[COLUMN[f"{side}_natural_win"]] = 1
            elif not nat and margin >= 4:
                row[COLUMN[f"{side}_win_by_{margin}"]] = 1
            elif not (nat and margin == 0 and p_nat and b_nat):
                row[COLUMN[f"{side}_lose"]] = 1
    return a


def _draw_tables(ruleset: Ruleset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean look-ups from the ruleset's data: naturals (10,), Player draws (10,), Banker draws (10, 11).

    Rows 8 and 9 (no table cell) never draw; :func:`build_table` refuses rulesets where such a count is not a
    natural, because the rules would then be undefined for it.
    """
    natural = np.zeros(VALUES, dtype=bool)
    natural[sorted(ruleset.natural)] = True
    player = np.zeros(VALUES, dtype=bool)
    player[: len(ruleset.player)] = [a is Action.DRAW for a in ruleset.player]
    banker = np.zeros((VALUES, STOOD + 1), dtype=bool)
    banker[: len(ruleset.banker)] = [[a is Action.DRAW for a in row] for row in ruleset.banker]
    return natural, player, banker


def _multiset_lookup() -> np.ndarray:
    """Map ``sorted 6-digit value key -> multiset index`` (a 10**6 int32 array; -1 for unsorted keys)."""
    lut = np.full(VALUES**ROUND_CARDS, -1, dtype=np.int32)
    digits = np.array(MULTISETS, dtype=np.int64)
    keys = digits @ (VALUES ** np.arange(ROUND_CARDS - 1, -1, -1, dtype=np.int64))
    lut[keys] = np.arange(len(MULTISETS), dtype=np.int32)
    return lut


def build_table(ruleset: Ruleset) -> np.ndarray:
    """The ``(len(COLUMNS), 5005)`` int64 matrix for ``ruleset`` (C-contiguous, read-only).

    ``table[c, m]`` = number of orderings of multiset ``m`` (``MULTISETS[m]``) that, dealt as the next six
    cards, give a round counted in column ``COLUMNS[c]``. Built from ``ruleset.player``, ``ruleset.banker``
    and ``ruleset.natural`` only. The caller must reject rulesets with OPTION cells first (they are treated
    as STAND here). Raises :class:`BaccaratError` when a two-card count with no table row is not a natural.
    """
    missing = set(range(len(ruleset.player), VALUES)) - set(ruleset.natural)
    if missing or not set(ruleset.natural) <= set(range(VALUES)):
        raise BaccaratError(
            f"ruleset {ruleset.name}: two-card counts {sorted(missing)} have no Table 1 row and are not naturals"
        )
    natural, player_draws, banker_draws = _draw_tables(ruleset)

    seq = np.arange(VALUES**ROUND_CARDS, dtype=np.int32)
    c = [((seq // VALUES ** (ROUND_CARDS - 1 - i)) % VALUES).astype(np.int8) for i in range(ROUND_CARDS)]
    p2 = (c[0] + c[2]) % VALUES  # Player's two-card count (P1 + P2)
    b2 = (c[1] + c[3]) % VALUES  # Banker's two-card count (B1 + B2)
    stop = natural[p2] | natural[b2]
    p_draws = ~stop & player_draws[p2]
    # Table 2 column: the Player's third-card value (5th card) or STOOD.
    column = np.where(p_draws, c[4], np.int8(STOOD))
    b_draws = ~stop & banker_draws[b2, column]
    # The Banker's third card is the 5th card when the Player stood, else the 6th.
    b_third = np.where(p_draws, c[5], c[4])
    p_pts = ((p2 + np.where(p_draws, c[4], 0)) % VALUES).astype(np.int32)
    b_pts = ((b2 + np.where(b_draws, b_third, 0)) % VALUES).astype(np.int32)
    cls = (p_draws.astype(np.int32) * 2 + b_draws) * 100 + p_pts * 10 + b_pts

    sorted_digits = np.sort(np.stack(c, axis=1), axis=1).astype(np.int64)
    keys = sorted_digits @ (VALUES ** np.arange(ROUND_CARDS - 1, -1, -1, dtype=np.int64))
    multiset = _multiset_lookup()[keys].astype(np.int64)
    by_class = np.bincount(multiset * _CLASSES + cls, minlength=len(MULTISETS) * _CLASSES)
    by_class = by_class.reshape(len(MULTISETS), _CLASSES).astype(np.int64)

    table = np.ascontiguousarray((by_class @ _class_columns(frozenset(ruleset.natural))).T)
    table.setflags(write=False)
    return table
