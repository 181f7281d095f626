"""Exact odds engine (baccarat.odds) against published counts and independent enumerators.

Independent oracles written here, none sharing code with the engine:

* ``_physical_counts``: every ordered 6-card sequence of distinct *physical* cards of a tiny shoe
  (itertools.permutations), each resolved by :func:`baccarat.round.resolve`;
* ``_walk_counts``: recursion over card values with falling-factorial weights, asking
  :func:`baccarat.round.resolve` after each card whether the round is over;
* ``_naive_counts``: nested loops over values P1, B1, P2, B2 and third cards, reading the ruleset's Table 1 /
  Table 2 data directly (fast enough for full shoes).

Sources: shared spec odds-and-roads.md §1–§2; rules digest §1.14 (Wizard of Odds 8-deck combination counts).
"""

from __future__ import annotations

import dataclasses
import pickle
from collections import Counter
from fractions import Fraction
from itertools import permutations
from math import perm
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples

from baccarat import odds
from baccarat.cards import Card, Hand, Rank, Suit
from baccarat.drawing import (
    CASINO_NIGHT,
    CASINO_NIGHT_LITERAL,
    CHEMIN_DE_FER,
    PUNTO_BANCO,
    STOOD,
    Action,
    Ruleset,
)
from baccarat.errors import BaccaratError, IllegalDecision, InsufficientCards, InvalidComposition
from baccarat.odds_reference import naive_counts
from baccarat.odds import BonusCounts, Composition, OutcomeCounts, exact_counts, permut6
from baccarat.round import Outcome, resolve

RULESETS = [PUNTO_BANCO, CASINO_NIGHT_LITERAL]

# ----------------------------------------------------------------------------------------- expected shapes

BONUS_KEYS = ("natural_win", "natural_tie", *(f"win_by_{k}" for k in range(4, 10)), "lose")


def _empty() -> dict[str, Any]:
    return {
        "banker": 0,
        "player": 0,
        "tie": 0,
        "cards_4": 0,
        "cards_5": 0,
        "cards_6": 0,
        "dragon_7": 0,
        "panda_8": 0,
        "naturals": {"player_8": 0, "player_9": 0, "banker_8": 0, "banker_9": 0},
        "bonus": {"player": dict.fromkeys(BONUS_KEYS, 0), "banker": dict.fromkeys(BONUS_KEYS, 0)},
    }


def _bonus_class(mine: int, theirs: int, my_natural: bool, their_natural: bool) -> str:
    if my_natural and mine > theirs:
        return "natural_win"
    if my_natural and their_natural and mine == theirs:
        return "natural_tie"
    if not my_natural and mine - theirs >= 4:
        return f"win_by_{mine - theirs}"
    return "lose"


def _add(
    d: dict[str, Any],
    weight: int,
    *,
    p: int,
    b: int,
    p_natural: bool,
    b_natural: bool,
    cards: int,
    dragon: bool,
    panda: bool,
) -> None:
    d["player" if p > b else "banker" if b > p else "tie"] += weight
    d[f"cards_{cards}"] += weight
    d["dragon_7"] += weight * dragon
    d["panda_8"] += weight * panda
    if p_natural:
        d["naturals"][f"player_{p}"] += weight
    if b_natural:
        d["naturals"][f"banker_{b}"] += weight
    d["bonus"]["player"][_bonus_class(p, b, p_natural, b_natural)] += weight
    d["bonus"]["banker"][_bonus_class(b, p, b_natural, p_natural)] += weight


def _add_outcome(d: dict[str, Any], o: Outcome, weight: int) -> None:
    _add(
        d,
        weight,
        p=o.player_points,
        b=o.banker_points,
        p_natural=o.player_natural,
        b_natural=o.banker_natural,
        cards=o.cards_required,
        dragon=o.dragon_7,
        panda=o.panda_8,
    )


def _engine(counts: list[int] | tuple[int, ...], ruleset: Ruleset = PUNTO_BANCO) -> dict[str, Any]:
    d = exact_counts(Composition.of(counts), ruleset).to_dict()
    assert d.pop("total") == permut6(sum(counts))
    return d


# ------------------------------------------------------------------- oracle 1 & 2: round.resolve based

_RANK_OF_VALUE = {0: Rank.TEN, **{v: Rank(v) for v in range(1, 10)}}
_PREFIX: dict[tuple[str, tuple[int, ...]], Outcome | None] = {}


def _prefix_outcome(ruleset: Ruleset, values: tuple[int, ...]) -> Outcome | None:
    """round.resolve on exactly these card values: the Outcome, or None when the round needs more cards."""
    key = (ruleset.name, values)
    if key not in _PREFIX:
        try:
            outcome, unused = resolve([Card(_RANK_OF_VALUE[v]) for v in values], ruleset)
            assert unused == ()
            _PREFIX[key] = outcome
        except InsufficientCards:
            _PREFIX[key] = None
    return _PREFIX[key]


def _round_of(ruleset: Ruleset, six: tuple[int, ...]) -> Outcome:
    for k in range(1, 7):
        o = _prefix_outcome(ruleset, six[:k])
        if o is not None:
            return o
    raise AssertionError(f"round did not finish with six cards {six}")


def _physical_counts(counts: list[int], ruleset: Ruleset) -> dict[str, Any]:
    """Every ordered 6-card sequence of distinct physical cards, resolved by round.resolve."""
    ranks_by_value = {0: [Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING], **{v: [Rank(v)] for v in range(1, 10)}}
    suits = list(Suit)
    shoe: list[Card] = []
    for v, n in enumerate(counts):
        for i in range(n):
            shoe.append(Card(ranks_by_value[v][i % len(ranks_by_value[v])], suits[i % 4]))
    assert len(set(shoe)) == len(shoe) or len(shoe) > 52  # physical cards, distinct where a deck allows
    sequences = Counter(tuple(shoe[i].value for i in p) for p in permutations(range(len(shoe)), 6))
    d = _empty()
    for six, ways in sequences.items():
        _add_outcome(d, _round_of(ruleset, six), ways)
    return d


def _walk_counts(counts: list[int] | tuple[int, ...], ruleset: Ruleset) -> dict[str, Any]:
    """Walk card values one at a time with falling-factorial weights until round.resolve says the round is over."""
    n = list(counts)
    d = _empty()

    def rec(prefix: tuple[int, ...], weight: int, remaining: int) -> None:
        o = _prefix_outcome(ruleset, prefix)
        if o is not None:
            _add_outcome(d, o, weight * perm(remaining, 6 - len(prefix)))
            return
        for v in range(10):
            if n[v]:
                w = weight * n[v]
                n[v] -= 1
                rec(prefix + (v,), w, remaining - 1)
                n[v] += 1

    rec((), 1, sum(n))
    return d


# ------------------------------------------------------------------- oracle 3: nested loops over tables


def _naive_counts(counts: list[int] | tuple[int, ...], ruleset: Ruleset) -> dict[str, Any]:
    """Nested loops over values reading the ruleset's Table 1 / Table 2 cells (exact Python ints): the shared
    reference enumerator, :func:`baccarat.odds_reference.naive_counts`, in ``to_dict()`` shape."""
    d = naive_counts(tuple(counts), ruleset)
    d.pop("total")
    return d


# ------------------------------------------------------------------------------------ published counts

EIGHT_DECKS = (128, 32, 32, 32, 32, 32, 32, 32, 32, 32)


def test_eight_deck_published_counts_digit_for_digit() -> None:
    oc = exact_counts(Composition.full(8))
    assert oc.total == 4_998_398_275_503_360 == 416 * 415 * 414 * 413 * 412 * 411
    assert oc.banker == 2_292_252_566_437_888
    assert oc.player == 2_230_518_282_592_256
    assert oc.tie == 475_627_426_473_216


def test_eight_deck_full_distribution_matches_nested_loop_oracle() -> None:
    expected = _naive_counts(EIGHT_DECKS, PUNTO_BANCO)
    assert expected["banker"] == 2_292_252_566_437_888  # the oracle itself reproduces the published table
    assert _engine(EIGHT_DECKS) == expected


def test_eight_deck_side_bet_counts_and_published_edges() -> None:
    oc = exact_counts(Composition.full(8))
    assert oc.cards_4 == 1_893_735_611_458_560
    assert oc.cards_5 == 1_516_734_808_780_800
    assert oc.cards_6 == 1_587_927_855_264_000
    assert oc.dragon_7 == 112_633_011_329_024
    assert oc.panda_8 == 172_660_763_262_976
    assert (oc.player_natural_8, oc.player_natural_9) == (472_508_456_071_680, 474_361_430_409_216)
    assert (oc.banker_natural_8, oc.banker_natural_9) == (oc.player_natural_8, oc.player_natural_9)
    # Published house edges (Wizard of Odds, quoted to ~4 significant digits): EZ dragon 7 at 40 to 1 7.61 %,
    # panda 8 at 25 to 1 10.19 %; Dragon Bonus (30/10/6/4/2/1, natural win 1, natural tie push) Player 2.65 %,
    # Banker 9.37 %; Banker 1.0579 %, Player 1.2351 %, Tie 14.3596 % (digest §1.14).
    p = oc.probability
    assert abs(float(41 * p(oc.dragon_7) - 1) + 0.0761) < 1e-4
    assert abs(float(26 * p(oc.panda_8) - 1) + 0.1019) < 1e-4
    assert abs(float(p(oc.banker) * Fraction(19, 20) - p(oc.player)) + 0.010579) < 1e-6
    assert abs(float(p(oc.player) - p(oc.banker)) + 0.012351) < 1e-6
    assert abs(float(8 * p(oc.tie) - p(oc.banker) - p(oc.player)) + 0.143596) < 1e-6
    pays = {"natural_win": 1, "natural_tie": 0, "win_by_4": 1, "win_by_5": 2, "win_by_6": 4, "win_by_7": 6,
            "win_by_8": 10, "win_by_9": 30, "lose": -1}  # fmt: skip
    for side, edge in (("player", 0.0265), ("banker", 0.0937)):
        ev = sum(Fraction(pays[k] * v, oc.total) for k, v in oc.to_dict()["bonus"][side].items())
        assert abs(float(ev) + edge) < 5e-5


def test_six_deck_counts_match_oracle_and_published_probabilities() -> None:
    six = Composition.full(6)
    expected = _naive_counts(six.counts, PUNTO_BANCO)
    got = exact_counts(six)
    assert got.to_dict() == {"total": 312 * 311 * 310 * 309 * 308 * 307, **expected}
    assert (got.banker, got.player, got.tie) == (403_095_751_234_560, 392_220_492_728_832, 83_552_962_932_288)
    # Wizard of Odds 6-deck probabilities, 6 decimals.
    assert round(got.banker / got.total, 6) == 0.458653
    assert round(got.player / got.total, 6) == 0.446279
    assert round(got.tie / got.total, 6) == 0.095069


@pytest.mark.parametrize("ruleset", RULESETS, ids=lambda r: r.name)
def test_mid_shoe_full_support_matches_nested_loop_oracle(ruleset: Ruleset) -> None:
    comp = Composition.full(8).without([0] * 61 + [1, 5, 5, 9] * 7 + [7, 8] * 13)
    assert _engine(comp.counts, ruleset) == _naive_counts(comp.counts, ruleset)


def test_casino_night_literal_has_its_own_table() -> None:
    literal = exact_counts(Composition.full(8), CASINO_NIGHT_LITERAL)
    standard = exact_counts(Composition.full(8), CASINO_NIGHT)
    assert standard == exact_counts(Composition.full(8), PUNTO_BANCO)  # same tableau as punto banco
    assert literal.banker == 2_242_882_824_868_096
    assert literal.player == 2_278_587_341_832_448
    assert literal.tie == 476_928_108_802_816
    assert literal.cards_4 == standard.cards_4  # naturals and both-stand rounds do not depend on Table 2 rows
    assert literal.cards_6 < standard.cards_6  # the bank draws on 0-2 only once the player has drawn


# ------------------------------------------------------------------------------------ brute force oracles


@pytest.mark.parametrize(
    ("counts", "ruleset"),
    [
        ([2, 0, 1, 1, 0, 1, 1, 1, 1, 0], PUNTO_BANCO),  # 8 cards
        ([3, 1, 0, 0, 2, 0, 1, 0, 0, 2], PUNTO_BANCO),  # 9 cards
        ([4, 0, 2, 0, 0, 1, 0, 2, 0, 1], PUNTO_BANCO),  # 10 cards, repeated values
        ([4, 0, 0, 2, 1, 0, 2, 0, 1, 1], CASINO_NIGHT_LITERAL),  # 11 cards
        ([1, 1, 0, 1, 0, 1, 0, 1, 0, 1], CASINO_NIGHT_LITERAL),  # exactly 6 cards: 720 sequences
    ],
)
def test_physical_card_brute_force(counts: list[int], ruleset: Ruleset) -> None:
    expected = _physical_counts(counts, ruleset)
    got = _engine(counts, ruleset)
    assert got == expected
    assert sum(expected[k] for k in ("banker", "player", "tie")) == perm(sum(counts), 6)


@st.composite
def sparse_compositions(draw: st.DrawFn) -> list[int]:
    """6–30 cards over at most five distinct values (keeps the resolve-based walk small)."""
    values = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
    counts = [0] * 10
    for v in values:
        counts[v] = draw(st.integers(1, 6))
    counts[values[0]] += max(0, 6 - sum(counts))
    return counts


@st.composite
def small_any_values(draw: st.DrawFn) -> list[int]:
    """6 or 7 cards of any values: every one of the 5005 six-value multisets can come up."""
    cards = draw(st.lists(st.integers(0, 9), min_size=6, max_size=7))
    return [cards.count(v) for v in range(10)]


@pytest.mark.parametrize("ruleset", RULESETS, ids=lambda r: r.name)
@settings(max_examples=examples(75), deadline=None)
@given(counts=st.one_of(sparse_compositions(), small_any_values()))
def test_property_engine_equals_value_walk(ruleset: Ruleset, counts: list[int]) -> None:
    assert _engine(counts, ruleset) == _walk_counts(counts, ruleset)


@settings(max_examples=examples(25), deadline=None)
@given(
    removed=st.lists(st.integers(0, 9), min_size=0, max_size=400).filter(
        lambda r: all(r.count(v) <= (128 if v == 0 else 32) for v in range(10))
    )
)
def test_property_invariants_on_mid_shoe_compositions(removed: list[int]) -> None:
    comp = Composition.full(8).without(removed)
    oc = exact_counts(comp)
    assert oc.total == permut6(comp.total) == perm(416 - len(removed), 6)
    assert oc.banker + oc.player + oc.tie == oc.total
    assert oc.cards_4 + oc.cards_5 + oc.cards_6 == oc.total
    assert oc.player_bonus.total == oc.banker_bonus.total == oc.total
    assert oc.player_bonus.natural_tie == oc.banker_bonus.natural_tie
    # A natural round is won by a natural or is a natural tie; it needs exactly four cards.
    natural_rounds = oc.player_bonus.natural_win + oc.banker_bonus.natural_win + oc.player_bonus.natural_tie
    p_nat = oc.player_natural_8 + oc.player_natural_9
    b_nat = oc.banker_natural_8 + oc.banker_natural_9
    assert max(p_nat, b_nat) <= natural_rounds <= min(p_nat + b_nat, oc.cards_4)
    assert 0 <= oc.dragon_7 <= oc.banker and 0 <= oc.panda_8 <= oc.player
    assert all(isinstance(v, int) and v >= 0 for v in _leaves(oc.to_dict()))


def _leaves(d: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for v in d.values():
        out.extend(_leaves(v) if isinstance(v, dict) else [v])
    return out


# ------------------------------------------------------------------------------- arithmetic paths, sizes


@pytest.mark.parametrize("decks", [1, 2, 6, 8])
def test_float64_int64_and_python_int_paths_agree(decks: int) -> None:
    plan = odds._plan(PUNTO_BANCO)
    comp = Composition.full(decks).without([0, 0, 3, 9, 9, 9])
    n = comp.total
    assert n <= odds.FLOAT64_MAX_CARDS
    f = odds._column_counts(comp.counts, n, plan, "float64")
    assert f == odds._column_counts(comp.counts, n, plan, "int64")
    assert f == odds._column_counts(comp.counts, n, plan, "object")


def test_path_thresholds_are_the_largest_exact_ones() -> None:
    assert perm(odds.FLOAT64_MAX_CARDS, 6) <= 2**53 < perm(odds.FLOAT64_MAX_CARDS + 1, 6)
    assert perm(odds.INT64_MAX_CARDS, 6) < 2**63 <= perm(odds.INT64_MAX_CARDS + 1, 6)


def test_large_compositions_stay_exact() -> None:
    # 27 decks (1404 cards): int64 path; 30 decks (1560 cards, Permut > 2**63): Python-int path.
    for decks in (27, 30):
        counts = [decks * c for c in (16, 4, 4, 4, 4, 4, 4, 4, 4, 4)]
        assert _engine(counts) == _naive_counts(counts, PUNTO_BANCO)
    assert exact_counts([480] + [120] * 9).total == perm(1560, 6) > 2**63


# ------------------------------------------------------------------------------------ API and errors


def test_composition_constructors() -> None:
    assert Composition.full(8).counts == EIGHT_DECKS
    assert Composition.full(1).total == 52 and Composition.full(8).total == 416
    c = Composition.of([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert c.counts == (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) and c[9] == 10 and c.total == 55
    assert Composition.of(range(10)) == Composition.of(tuple(range(10)))
    assert hash(Composition.of([0] * 10)) == hash(Composition((0,) * 10))
    w = Composition.full(1).without([0, 0, 7, Card(Rank.KING, Suit.SPADES), Card(Rank.SEVEN)])
    assert w.counts == (13, 4, 4, 4, 4, 4, 4, 2, 4, 4)
    assert Composition.full(1).counts == (16, 4, 4, 4, 4, 4, 4, 4, 4, 4)  # immutable


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([1] * 9, "exactly 10"),
        ([1] * 11, "exactly 10"),
        ([1, 1, 1, -1, 1, 1, 1, 1, 1, 1], "value 3 is negative"),
        ([1, True, 1, 1, 1, 1, 1, 1, 1, 1], "bool"),
        ([1, 1, 1.0, 1, 1, 1, 1, 1, 1, 1], "not an int"),
        ([1, 1, "2", 1, 1, 1, 1, 1, 1, 1], "not an int"),
        ("0123456789", "sequence"),
        (None, "sequence"),
        ({v: 1 for v in range(10)}, "sequence"),
    ],
)
def test_composition_of_rejects(counts: Any, message: str) -> None:
    with pytest.raises(InvalidComposition, match=message):
        Composition.of(counts)


@pytest.mark.parametrize("decks", [0, 9, -1, True, 2.0])
def test_composition_full_rejects(decks: Any) -> None:
    with pytest.raises(InvalidComposition):
        Composition.full(decks)


def test_without_rejects_exhausted_and_bad_values() -> None:
    with pytest.raises(InvalidComposition, match="value 5"):
        Composition.of([0, 0, 0, 0, 0, 2, 0, 0, 0, 0]).without([5, 5, 5])
    with pytest.raises(InvalidComposition, match="not 0..9"):
        Composition.full(1).without([10])
    with pytest.raises(InvalidComposition, match="bool"):
        Composition.full(1).without([True])


def test_evaluation_errors() -> None:
    with pytest.raises(InsufficientCards, match="at least 6"):
        exact_counts(Composition.of([5, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(IllegalDecision, match="option"):
        exact_counts(Composition.full(8), CHEMIN_DE_FER)
    with pytest.raises(IllegalDecision):
        odds.table_for(CHEMIN_DE_FER)
    with pytest.raises(InvalidComposition):
        exact_counts([1, 2, 3])
    assert issubclass(InvalidComposition, BaccaratError)


def test_exactly_six_cards_and_exhausted_values() -> None:
    oc = exact_counts([6, 0, 0, 0, 0, 0, 0, 0, 0, 0])  # six tens: 0-0 after 6 cards, every ordering a tie
    assert (oc.tie, oc.cards_6, oc.total) == (720, 720, 720)
    assert oc.player_bonus.lose == oc.banker_bonus.lose == 720
    nat = exact_counts([0, 0, 0, 0, 6, 0, 0, 0, 0, 0])  # six 4s: both hands 4+4 = 8, a natural tie
    assert (nat.tie, nat.cards_4, nat.player_natural_8, nat.banker_natural_8) == (720, 720, 720, 720)
    assert nat.player_bonus.natural_tie == nat.banker_bonus.natural_tie == 720


def test_to_dict_shape_and_round_trip() -> None:
    oc = exact_counts(Composition.full(8))
    d = oc.to_dict()
    assert list(d) == ["total", "banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7",
                       "panda_8", "naturals", "bonus"]  # fmt: skip
    assert list(d["naturals"]) == ["player_8", "player_9", "banker_8", "banker_9"]
    assert list(d["bonus"]) == ["player", "banker"]
    assert list(d["bonus"]["player"]) == list(BONUS_KEYS) == list(d["bonus"]["banker"])
    assert all(type(v) is int for v in _leaves(d))
    assert OutcomeCounts.from_dict(d) == oc
    assert oc.bonus(Hand.PLAYER) is oc.player_bonus and oc.bonus(Hand.BANKER) is oc.banker_bonus
    assert oc.player_bonus.win_by(9) == oc.player_bonus.win_by_9
    assert oc.probability(oc.tie) == Fraction(475_627_426_473_216, 4_998_398_275_503_360)
    with pytest.raises(ValueError):
        oc.player_bonus.win_by(3)
    assert isinstance(oc.player_bonus, BonusCounts)


def test_table_is_built_from_ruleset_data() -> None:
    # A made-up tableau (Player draws on 0-4 only; Banker 6 draws when the Player stood) gets its own table
    # and agrees with the nested-loop oracle that reads the same cells.
    player = (Action.DRAW,) * 5 + (Action.STAND,) * 3
    banker = tuple(
        row[:STOOD] + (Action.DRAW,) if i == 6 else row for i, row in enumerate(PUNTO_BANCO.banker)
    )
    custom = Ruleset("custom", PUNTO_BANCO.variant, player, banker, "test", "test")
    comp = Composition.full(2).without([0] * 9 + [3, 4])
    assert _engine(comp.counts, custom) == _naive_counts(comp.counts, custom)
    assert odds.table_for(custom).shape == (len(odds.TABLE_COLUMNS), 5005)
    assert odds.table_for(custom) is not odds.table_for(PUNTO_BANCO)
    # An equal ruleset built separately shares the cached table; a renamed copy too (the name is not a rule).
    twin = Ruleset("custom", PUNTO_BANCO.variant, player, banker, "test", "test")
    assert odds.table_for(twin) is odds.table_for(custom)
    assert odds.table_for(dataclasses.replace(PUNTO_BANCO, name="pb2")) is odds.table_for(PUNTO_BANCO)


def test_outcome_counts_value_object() -> None:
    # outcome_counts maps the engines' 30 counts by position (issue 26: tuple-backed, bonuses built lazily)
    oc = odds.outcome_counts(10, list(range(100, 130)))
    assert oc.total == perm(10, 6)
    assert (oc.banker, oc.player, oc.tie, oc.cards_4, oc.cards_6, oc.dragon_7, oc.panda_8) == (
        100, 101, 102, 103, 105, 106, 107)
    assert (oc.player_natural_8, oc.player_natural_9, oc.banker_natural_8, oc.banker_natural_9) == (
        108, 109, 110, 111)
    assert oc.player_bonus == BonusCounts(*range(112, 121))
    assert (oc.banker_bonus.natural_win, oc.banker_bonus.win_by(4), oc.banker_bonus.lose) == (121, 123, 129)
    assert oc.player_bonus.total == sum(range(112, 121))
    # keyword construction, equality, hash, pickling and immutability as a frozen value
    again = OutcomeCounts(total=perm(10, 6), banker=100, player=101, tie=102, cards_4=103, cards_5=104,
                          cards_6=105, dragon_7=106, panda_8=107, player_natural_8=108, player_natural_9=109,
                          banker_natural_8=110, banker_natural_9=111, player_bonus=BonusCounts(*range(112, 121)),
                          banker_bonus=BonusCounts(*range(121, 130)))
    assert again == oc and hash(again) == hash(oc) and repr(again) == repr(oc)
    assert odds.outcome_counts(10, [*range(100, 129), 0]) != oc
    assert oc != oc.to_dict() and BonusCounts(*range(9)) != tuple(range(9))
    assert pickle.loads(pickle.dumps(oc)) == oc
    with pytest.raises(AttributeError):
        oc.banker = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        oc.player_bonus.lose = 1  # type: ignore[misc]
    with pytest.raises(ValueError):
        odds.outcome_counts(10, list(range(29)))
    assert repr(oc).startswith("OutcomeCounts(total=151200, banker=100, player=101,")
