"""The incremental odds update (baccarat.odds_live) and the compiled kernel against the full evaluation.

Every comparison is against ``baccarat.odds._column_counts`` forced onto a numpy path (the reference), never
against the engine under test; whole shoes are checked on every step.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baccarat import odds
from baccarat.drawing import PUNTO_BANCO, Ruleset
from baccarat.errors import InsufficientCards, InvalidComposition
from baccarat.odds import Composition, exact_counts
from baccarat.odds_live import LiveOdds
from baccarat.table import no_vig_dragon

native = pytest.mark.skipif(odds.NATIVE is None, reason="the compiled odds kernel was not built")
ENGINES = ["numpy", pytest.param("native", marks=native)]


def reference(counts: tuple[int, ...], ruleset: Ruleset = PUNTO_BANCO) -> list[int]:
    """The full evaluation on the numpy reference path (float64 up to 458 cards, int64 above, ints beyond)."""
    n = sum(counts)
    method = "float64" if n <= odds.FLOAT64_MAX_CARDS else "int64" if n <= odds.INT64_MAX_CARDS else "object"
    return odds._column_counts(tuple(counts), n, odds._plan(ruleset), method)


def shuffled_shoe(decks: int, seed: int) -> list[int]:
    full = Composition.full(decks)
    shoe = [v for v in range(10) for _ in range(full[v])]
    random.Random(seed).shuffle(shoe)
    return shoe


def walk(decks: int, seed: int, engine: str, steps: int | None = None) -> int:
    """Deal a shuffled shoe card by card; after every card the tracker must equal the full evaluation."""
    live = LiveOdds(Composition.full(decks), engine=engine)
    counts = list(Composition.full(decks).counts)
    assert live.column_counts() == reference(tuple(counts))
    checked = 0
    for v in shuffled_shoe(decks, seed)[:steps]:
        if sum(counts) == 6:
            break
        live.remove(v)
        counts[v] -= 1
        assert live.composition == tuple(counts)
        assert live.column_counts() == reference(tuple(counts)), (checked, counts)
        checked += 1
    return checked


@native
@pytest.mark.parametrize("seed", [1, 2])
def test_native_tracker_equals_full_evaluation_on_every_card_of_an_8_deck_shoe(seed: int) -> None:
    assert walk(8, seed, "native") == 416 - 6


def test_numpy_tracker_equals_full_evaluation_on_every_card_of_a_2_deck_shoe() -> None:
    assert walk(2, 3, "numpy") == 104 - 6


def test_numpy_tracker_mid_way_through_an_8_deck_shoe() -> None:
    assert walk(8, 4, "numpy", steps=150) == 150


@st.composite
def compositions_and_removals(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    counts = draw(st.lists(st.integers(0, 40), min_size=10, max_size=10).filter(lambda c: sum(c) >= 16))
    left = [v for v in range(10) for _ in range(counts[v])]
    removals = draw(st.lists(st.sampled_from(left), max_size=10))
    kept = list(counts)
    out = []
    for v in removals:
        if kept[v] > 0 and sum(kept) > 6:
            kept[v] -= 1
            out.append(v)
    return counts, out


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=30, deadline=None)
@given(case=compositions_and_removals())
def test_property_tracker_equals_full_evaluation(engine: str, case: tuple[list[int], list[int]]) -> None:
    counts, removals = case
    live = LiveOdds(counts, engine=engine)
    for v in removals:
        live.remove(v)
        counts[v] -= 1
        assert live.column_counts() == reference(tuple(counts))
    assert live.counts() == exact_counts(counts)


@native
@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.integers(0, 150), min_size=10, max_size=10).filter(lambda c: sum(c) >= 6))
def test_property_native_full_evaluation_equals_numpy(counts: list[int]) -> None:
    # up to 1,500 cards: the kernel's float64 path (<= 458), its integer path, and the Python-int fallback
    plan = odds._plan(PUNTO_BANCO)
    n = sum(counts)
    if n <= odds.INT64_MAX_CARDS:
        assert odds._column_counts(tuple(counts), n, plan, "native") == reference(tuple(counts))
    assert exact_counts(counts).to_dict() == odds.outcome_counts(n, reference(tuple(counts))).to_dict()


@pytest.mark.parametrize("engine", ENGINES)
def test_other_rulesets_and_the_float64_boundary(engine: str) -> None:
    ez = no_vig_dragon().odds_ruleset
    live = LiveOdds(Composition.full(1), ez, engine=engine)
    counts = list(Composition.full(1).counts)
    for v in (0, 9, 8, 7):
        live.remove(v)
        counts[v] -= 1
        assert live.column_counts() == reference(tuple(counts), ez)
    # 460 cards: the first update crosses from the integer kernel into the float64 one (<= 458 after two)
    counts = [140] + [40] * 8 + [0]
    live = LiveOdds(counts, engine=engine)
    for v in (0, 1, 2):
        live.remove(v)
        counts[v] -= 1
        assert live.column_counts() == reference(tuple(counts))


@pytest.mark.parametrize("engine", ENGINES)
def test_beyond_int64_steps_back_into_the_incremental_path(engine: str) -> None:
    counts = [490] + [107] * 9  # 1,453 cards: Permut(N, 6) >= 2**63
    live = LiveOdds(counts, engine=engine)
    for v in (0, 0, 3, 5):  # 1,452 .. 1,449: the last step is back within int64
        live.remove(v)
        counts[v] -= 1
        assert live.total == sum(counts)
        assert live.column_counts() == reference(tuple(counts))
    assert live.counts().total == odds.permut6(1449)


@pytest.mark.parametrize("engine", ENGINES)
def test_copies_are_independent(engine: str) -> None:
    live = LiveOdds(Composition.full(1), engine=engine)
    kept = live.copy()
    live.remove(9)
    assert kept.composition == Composition.full(1).counts
    assert kept.column_counts() == reference(Composition.full(1).counts)
    assert live.column_counts() == reference(Composition.full(1).without([9]).counts)


@pytest.mark.parametrize("engine", ENGINES)
def test_errors_change_nothing(engine: str) -> None:
    live = LiveOdds([1, 0, 0, 0, 0, 0, 0, 0, 3, 3], engine=engine)
    for bad in (10, -1, True, 2.0, "3"):
        with pytest.raises(InvalidComposition, match="0..9"):
            live.remove(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidComposition, match="no card of value 1"):
        live.remove(1)
    assert live.composition == (1, 0, 0, 0, 0, 0, 0, 0, 3, 3)
    live.remove(0)
    assert live.counts() == exact_counts([0, 0, 0, 0, 0, 0, 0, 0, 3, 3])
    live.remove(8)
    with pytest.raises(InsufficientCards, match="at least 6"):
        live.counts()
    with pytest.raises(ValueError, match="engine"):
        LiveOdds(Composition.full(1), engine="fortran")
    with pytest.raises(InvalidComposition):
        LiveOdds([1, 2, 3])


def _engine_in_subprocess(value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, odds.ENGINE_ENV: value}
    return subprocess.run([sys.executable, "-c", "from baccarat import odds; print(odds.ENGINE)"],
                          check=False, env=env, capture_output=True, text=True, timeout=60)


def test_engine_is_chosen_by_the_environment() -> None:
    got = _engine_in_subprocess("numpy")
    assert got.returncode == 0 and got.stdout.strip() == "numpy"
    bad = _engine_in_subprocess("fortran")
    assert bad.returncode != 0 and "CROUPIER_ODDS_ENGINE must be 'native' or 'numpy'" in bad.stderr


@native
def test_portable_integer_loop_equals_the_reference() -> None:
    # CROUPIER_ODDS_NO_SIMD=1: the kernel's uint64 loop on every N (the float64 AVX2 loop is otherwise used up
    # to 458 cards); a full evaluation and 40 updates of a 1-deck shoe, compared here with the numpy reference
    probe = (
        "import json; from baccarat import odds; from baccarat.odds_live import LiveOdds\n"
        "assert odds.NATIVE.SIMD == 0\n"
        "live = LiveOdds(odds.Composition.full(8).without([1, 2, 3]), engine='native'); out = [live.column_counts()]\n"
        f"for v in {shuffled_shoe(1, 9)[:40]}:\n"
        "    live.remove(v); out.append(live.column_counts())\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "CROUPIER_ODDS_NO_SIMD": "1"}
    got = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120,
                         check=False)
    assert got.returncode == 0, got.stderr
    results = json.loads(got.stdout)
    counts = list(Composition.full(8).without([1, 2, 3]).counts)
    assert results[0] == reference(tuple(counts))
    for v, result in zip(shuffled_shoe(1, 9)[:40], results[1:]):
        counts[v] -= 1
        assert result == reference(tuple(counts))


@pytest.mark.parametrize("engine", ENGINES)
def test_follow_whole_shoe_in_steps_of_one_two_three_and_jumps(engine: str) -> None:
    """``follow`` (the projection's per-card entry): one card, a burn and a card, three cards, and jumps past
    ``max_cards`` (a full evaluation) over a whole 2-deck shoe, equal to the reference at every step."""
    shoe = shuffled_shoe(2, seed=261)
    counts = list(Composition.full(2).counts)
    live = LiveOdds(counts, engine=engine)
    rng = random.Random(262)
    steps = 0
    while sum(counts) - 6 > 20:
        k = rng.choice((1, 1, 1, 2, 3, 17))  # 17 > max_cards=16: taken by one full evaluation
        for _ in range(k):
            counts[shoe.pop()] -= 1
        live.follow(tuple(counts))
        assert live.composition == tuple(counts) and live.total == sum(counts)
        assert live.column_counts() == reference(tuple(counts))
        steps += 1
    assert steps > 15


def _public_and_surveillance_steps(decks: int, seed: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The two views of a shuffled shoe, step by step as the projection sees them: a card dealt (both views lose
    it), a burn face down (surveillance only), two cards at once, a jump past ``max_cards``; then a fresh shoe
    (cards back: neither tracker can step to it)."""
    shoe = shuffled_shoe(decks, seed)
    rng = random.Random(seed + 1)
    public, surveillance = list(Composition.full(decks).counts), list(Composition.full(decks).counts)
    for v in shoe[:3]:  # burned face down at the start of the shoe
        surveillance[v] -= 1
    shoe = shoe[3:]
    steps = []
    while len(shoe) > 30:
        kind = rng.choice(("card",) * 14 + ("burn", "burn", "two", "two", "jump"))
        for _ in range({"card": 1, "burn": 1, "two": 2, "jump": 17}[kind]):
            v = shoe.pop()
            surveillance[v] -= 1
            if kind != "burn":
                public[v] -= 1
        steps.append((tuple(public), tuple(surveillance)))
    full = Composition.full(decks).counts
    steps.append((full, Composition.full(decks).without([shoe[0]]).counts))  # a new shoe, one card burned
    return steps


@pytest.mark.parametrize(("engine", "decks"), [("numpy", 2), pytest.param("native", 8, marks=native)])
def test_follow_pair_equals_the_reference_for_both_views_on_every_step(engine: str, decks: int) -> None:
    """``follow_pair`` (the projection's two views stepped together: the kernel takes a card both lose out of
    both in one walk) leaves each tracker equal to the full evaluation of its own composition at every step of
    a whole shoe: cards, face-down burns (one view only), two cards, jumps (full evaluations), a new shoe."""
    steps = _public_and_surveillance_steps(decks, seed=271)
    public = LiveOdds(Composition.full(decks), engine=engine)
    surveillance = LiveOdds(Composition.full(decks), engine=engine)
    for pub, sur in steps:
        public.follow_pair(surveillance, pub, sur)
        assert public.composition == pub and public.total == sum(pub)
        assert surveillance.composition == sur and surveillance.total == sum(sur)
        assert public.column_counts() == reference(pub)
        assert surveillance.column_counts() == reference(sur)
    assert len(steps) > (180 if decks == 8 else 40)


@native
def test_remove_pair_in_the_kernel_equals_two_removes() -> None:
    """The kernel's paired removal on every path: the float64 walk shared by two trackers (different
    compositions, one plan), trackers of two plans (each its own walk), beyond 458 cards (integer loop)."""
    plan = odds._plan(PUNTO_BANCO).native
    ez = no_vig_dragon().odds_ruleset
    cases = [
        (plan, [32] * 9 + [128], plan, [30, 31, 32, 29, 32, 32, 31, 32, 32, 127]),
        (plan, [32] * 9 + [128], odds._plan(ez).native, [30, 31, 32, 29, 32, 32, 31, 32, 32, 127]),
        (plan, [140] + [40] * 8 + [0], plan, [139] + [40] * 8 + [0]),  # 460 and 459 cards
    ]
    for case, (pa, ca, pb, cb) in enumerate(cases):
        rb = PUNTO_BANCO if pb is plan else ez
        a, b = odds.NATIVE.Tracker(pa, ca), odds.NATIVE.Tracker(pb, cb)
        for v in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 0) if case < 2 else (0, 1, 2, 3):
            a.remove_pair(b, v)
            ca[v] -= 1
            cb[v] -= 1
            assert a.sums() == reference(tuple(ca)), (case, v)
            assert b.sums() == reference(tuple(cb), rb), (case, v)
    a, b = odds.NATIVE.Tracker(plan, [1] * 10), odds.NATIVE.Tracker(plan, [1] * 9 + [0])
    with pytest.raises(ValueError, match="no card of value 9"):
        a.remove_pair(b, 9)
    with pytest.raises(ValueError, match="two trackers"):
        a.remove_pair(a, 0)
    assert a.counts == (1,) * 10 and b.counts == (1,) * 9 + (0,)  # nothing changed


@pytest.mark.parametrize("engine", ENGINES)
def test_follow_pair_errors_and_one_side_restarting(engine: str) -> None:
    full = Composition.full(1).counts
    a, b = LiveOdds(full, engine=engine), LiveOdds(full, engine=engine)
    with pytest.raises(ValueError, match="two trackers"):
        a.follow_pair(a, full, full)
    with pytest.raises(InvalidComposition):
        a.follow_pair(b, (4,) * 9, full)  # nine counts: a is unchanged
    assert a.composition == full
    # a steps one card; b gets cards back (a new shoe: a full evaluation)
    one_less = Composition.full(1).without([3]).counts
    b.follow(one_less)
    a.follow_pair(b, one_less, Composition.full(2).counts)
    assert a.composition == one_less and a.column_counts() == reference(one_less)
    assert b.total == 104 and b.column_counts() == reference(Composition.full(2).counts)
