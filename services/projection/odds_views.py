"""The projection's odds per view, in exact integers, kept up to date card by card.

The projection publishes both views' odds (public, surveillance; odds-and-roads.md §3) after every card.
Each (table, view) has a :class:`baccarat.odds_live.LiveOdds` tracker that follows the shoe (a card, a burn:
only the cards gone are taken out, :meth:`~baccarat.odds_live.LiveOdds.follow`), and the per-wager figures
are computed from the integer counts (:func:`baccarat.expectation.expectation_terms`): no ``Fraction`` on
the per-card path. The trackers are a cache: what is published depends only on the composition (a tracker
equals the full evaluation after every step, tests/unit/test_odds_live.py), so a rebuild, a restart or a
fresh core publish the same odds.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from math import gcd
from typing import NamedTuple

from baccarat import odds as _odds
from baccarat.drawing import Ruleset
from baccarat.errors import BaccaratError
from baccarat.expectation import BONUS_CLASSES, FLAT_FIELDS, flat_terms
from baccarat.expectation import _plan_for  # the wager lines flat_terms runs, generated into code here
from baccarat.odds import permut6
from baccarat.odds_live import LiveOdds
from baccarat.table import TableConfig
from contracts.events import WagerOdds

__all__ = ["LiveViews", "ViewOdds", "counts_dict", "native_lines", "reference_wager_odds", "wager_odds",
           "wager_source"]

#: most trackers kept (two views and the round judge per table): beyond it the cache starts afresh
MAX_TRACKERS = 3072


class ViewOdds(NamedTuple):
    """One view's odds: ``total`` = Permut(N, 6), ``counts`` as ``OddsUpdated.counts``, ``wagers`` per wager."""

    total: int
    counts: dict[str, int]
    wagers: list[WagerOdds]


def wager_odds(total: int, flat: list[int], config: TableConfig) -> list[WagerOdds]:
    """Every wager ``config`` offers, from the counts in :data:`~baccarat.expectation.FLAT_FIELDS` order out of
    ``total``: probability of a win and of a void, EV per unit (float, for display) and the exact EV as
    ``ev_num / ev_den`` in lowest terms. Floats are the correctly rounded quotients of the integers (the same
    values ``float(Fraction(...))`` gives).

    Runs the configuration's generated function (:func:`wager_source`: the wager lines of
    :func:`baccarat.expectation.flat_terms` unrolled with their integer coefficients as constants), which gives
    exactly what :func:`reference_wager_odds` gives (tests compare them on whole shoes)."""
    return _compiled(config)(total, flat)


def reference_wager_odds(total: int, flat: list[int], config: TableConfig) -> list[WagerOdds]:
    """:func:`wager_odds` by the interpreted lines of :func:`baccarat.expectation.flat_terms` (the reference)."""
    return [WagerOdds(w.value, win / total, void / total, num / den, num, den)
            for w, win, void, num, den in flat_terms(total, flat, config)]


def _linear(coefficients: dict[int, int]) -> str:
    """``Σ s[i] * c`` as source, zero coefficients left out (``0`` when nothing is left)."""
    terms = [f"s[{i}]" if c == 1 else f"s[{i}] * {c}" for i, c in sorted(coefficients.items()) if c]
    return " + ".join(terms) or "0"


def wager_source(config: TableConfig) -> str:
    """Python source of ``wagers(total, s)`` for ``config``: per wager line of
    :func:`baccarat.expectation.flat_terms` (same order), ``win`` (the winning classes), ``void``, the exact EV
    ``num / den`` (``num`` = Σ count × net payout − losing count, over the line's common denominator; the losing
    count is ``total − win − void``, folded into each count's coefficient), reduced by one gcd, and the
    :class:`WagerOdds` built from them. ``s``: the 30 counts in FLAT_FIELDS order; ``total``: Permut(N, 6)."""
    lines = ["def wagers(total, s):"]
    made = []
    for k, line in enumerate(_plan_for(config)):
        win: dict[int, int] = {}
        void: dict[int, int] = {}
        num: dict[int, int] = {}
        for i, j, pay in line.wins:  # a win counts s[i] (less s[j]): + pay, and it is not a loss: + den
            for at, sign in ((i, 1), (j, -1)) if j >= 0 else ((i, 1),):
                win[at] = win.get(at, 0) + sign
                num[at] = num.get(at, 0) + sign * (pay + line.den)
        for i in line.voids:
            void[i] = void.get(i, 0) + 1
            num[i] = num.get(i, 0) + line.den
        den = "total" if line.den == 1 else f"total * {line.den}"
        p_void = f"({_linear(void)}) / total" if any(void.values()) else "0.0"
        lines += [
            f"    num = {_linear(num)} - {den}",
            f"    den = {den}",
            "    g = gcd(num, den)",
            f"    w{k} = WagerOdds({line.wager.value!r}, ({_linear(win)}) / total, {p_void}, num / den, num // g,"
            " den // g)",
        ]
        made.append(f"w{k}")
    lines.append(f"    return [{', '.join(made)}]")
    return "\n".join(lines) + "\n"


#: id(config) -> (config, generated wagers function): the entry keeps the config alive, so its id is not reused
_COMPILED: dict[int, tuple[TableConfig, Callable[[int, list[int]], list[WagerOdds]]]] = {}


def _compiled(config: TableConfig) -> Callable[[int, list[int]], list[WagerOdds]]:
    """The generated ``wagers(total, s)`` of ``config`` (compiled once per configuration object)."""
    got = _COMPILED.get(id(config))
    if got is None or got[0] is not config:
        if len(_COMPILED) > 256:
            _COMPILED.clear()
        scope: dict[str, object] = {"gcd": gcd, "WagerOdds": WagerOdds}
        exec(compile(wager_source(config), "<generated wagers>", "exec"), scope)  # noqa: S102
        got = _COMPILED[id(config)] = (config, scope["wagers"])  # type: ignore[assignment]
    return got[1]


_KEYS: tuple[tuple[str, int], ...] = (
    *((k, FLAT_FIELDS.index(k)) for k in ("banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7",
                                          "panda_8")),
    *((f"bonus_{side}_{cls}", FLAT_FIELDS.index(f"{side}_bonus.{cls}"))
      for side in ("player", "banker") for cls in BONUS_CLASSES),
    *((f"natural_{side}_{p}", FLAT_FIELDS.index(f"{side}_natural_{p}")) for side in ("player", "banker")
      for p in (8, 9)),
)  # fmt: skip
#: ``counts_dict`` as one dict display (generated from :data:`_KEYS`)
_COUNTS_DICT: Callable[[int, list[int]], dict[str, int]] = eval(  # noqa: S307
    "lambda total, s: {'total': total, " + ", ".join(f"{k!r}: s[{i}]" for k, i in _KEYS) + "}")


#: id(config) -> (config, its odds ruleset, its Lines for the compiled kernel or None without the kernel)
_LINES: dict[int, tuple[TableConfig, Ruleset, object]] = {}


def _per_config(config: TableConfig) -> tuple[TableConfig, Ruleset, object]:
    """``(config, config.odds_ruleset, native_lines(config))``, built once per configuration object (chemin de
    fer's odds ruleset is otherwise a new object, compared cell by cell with the tracker's, at every card)."""
    got = _LINES.get(id(config))
    if got is None or got[0] is not config:
        if len(_LINES) > 256:
            _LINES.clear()
        got = _LINES[id(config)] = (config, config.odds_ruleset, _build_lines(config))
    return got


def native_lines(config: TableConfig) -> object:
    """``config``'s wager lines and the counts dict's keys as a ``baccarat._odds_native.Lines`` (built once per
    configuration object), for :meth:`baccarat.odds_live.LiveOdds.view`; None without the compiled kernel.

    Per wager line of :func:`baccarat.expectation.flat_terms` (same order) the same integer coefficients as
    :func:`wager_source`: ``win`` and ``void`` over the 30 counts, ``num`` = Σ count × (net payout + den) + Σ void
    × den less ``den × total``, ``den`` = the line's common denominator × ``total``. Tests compare the kernel's
    figures with :func:`reference_wager_odds` on every card of whole shoes for every table profile."""
    return _per_config(config)[2]


def _build_lines(config: TableConfig) -> object:
    native = _odds.NATIVE
    if native is None:
        return None
    names, coef, dens, has_void = [], array("q"), array("q"), bytearray()
    for line in _plan_for(config):
        win = [0] * len(FLAT_FIELDS)
        void = [0] * len(FLAT_FIELDS)
        num = [0] * len(FLAT_FIELDS)
        for i, j, pay in line.wins:
            for at, sign in ((i, 1), (j, -1)) if j >= 0 else ((i, 1),):
                win[at] += sign
                num[at] += sign * (pay + line.den)
        for i in line.voids:
            void[i] += 1
            num[i] += line.den
        names.append(line.wager.value)
        coef.extend(win + void + num)
        dens.append(line.den)
        has_void.append(1 if any(void) else 0)
    keys = ("total", *(k for k, _ in _KEYS))
    index = bytes([0, *(1 + i for _, i in _KEYS)])
    return native.Lines(keys, index, tuple(names), WagerOdds, coef.tobytes(), dens.tobytes(), bytes(has_void))


def counts_dict(total: int, flat: list[int]) -> dict[str, int]:
    """The flat counts of ``OddsUpdated.counts``: ``total``, ``banker`` .. ``panda_8``, ``bonus_<side>_<class>``,
    ``natural_<side>_<8|9>`` (all ints, this key order)."""
    return _COUNTS_DICT(total, flat)


class LiveViews:
    """Odds trackers by key (e.g. ``(table_id, view)``): :meth:`odds` follows the key's tracker to the
    composition asked and evaluates it. Not thread-safe (a core runs in one event loop)."""

    def __init__(self) -> None:
        self._trackers: dict[object, LiveOdds] = {}

    def follow_pair(self, keys: tuple[object, object], compositions: tuple[tuple[int, ...], tuple[int, ...]],
                    config: TableConfig) -> None:
        """Bring the trackers of two keys (two views of one shoe) to their compositions before :meth:`odds` asks
        for them: the cards both views lose (a card dealt) are taken out of both in one walk over the kernel's
        table (:meth:`baccarat.odds_live.LiveOdds.follow_pair`). A cache step only: :meth:`odds` gives the same
        results with or without it; a key without a tracker for ``config``'s ruleset, or invalid counts, is
        left to :meth:`odds`. Never raises for bad counts."""
        a, b = self._trackers.get(keys[0]), self._trackers.get(keys[1])
        if a is None or b is None or a is b:
            return
        ruleset = _per_config(config)[1]
        if a.ruleset is not ruleset or b.ruleset is not ruleset:
            return
        try:
            a.follow_pair(b, compositions[0], compositions[1])
        except BaccaratError:
            return

    def odds(self, key: object, composition: tuple[int, ...], config: TableConfig) -> ViewOdds | None:
        """Exact counts and per-wager odds of ``composition`` under ``config`` (None below 6 cards, for invalid
        counts, or for a ruleset without fixed drawing: chemin de fer)."""
        _, ruleset, lines = _per_config(config)
        try:
            live = self._trackers.get(key)
            if live is None or (live.ruleset is not ruleset and live.ruleset != ruleset):
                if len(self._trackers) >= MAX_TRACKERS:
                    self._trackers.clear()
                live = self._trackers[key] = LiveOdds(composition, ruleset)
            else:
                live.follow(composition)
            if live.total < 6:
                return None
            if lines is not None:
                got = live.view(lines)
                if got is not None:  # the compiled kernel: counts, dict and wager lines in one call
                    return ViewOdds(*got)
            flat = live.column_counts()
        except BaccaratError:
            return None
        total = permut6(live.total)
        return ViewOdds(total, _COUNTS_DICT(total, flat), _compiled(config)(total, flat))
