"""The projection's per-card odds in integers (services/projection/odds_views.py) against the Fraction path."""

from __future__ import annotations

import random

import pytest

from baccarat import odds
from baccarat.errors import InvalidComposition
from baccarat.expectation import FLAT_FIELDS, flat_counts, wager_expectations
from baccarat.odds import Composition, exact_counts, outcome_counts
from baccarat.odds import permut6
from baccarat.odds_live import LiveOdds
from baccarat.table import TABLE_PROFILES, chemin_de_fer, no_vig_dragon, punto_banco, punto_banco_full
from services.projection.odds_views import (
    LiveViews,
    counts_dict,
    native_lines,
    reference_wager_odds,
    wager_odds,
    wager_source,
)

CONFIGS = [punto_banco_full(), no_vig_dragon(panda=True)]


def fraction_odds(comp: tuple[int, ...], cfg):  # type: ignore[no-untyped-def]
    """What the projection published before: Fraction expectations, floats from the Fractions."""
    counts = exact_counts(comp, cfg.odds_ruleset)
    return [(w.value, float(e.p_win), float(e.p_void), float(e.ev), e.ev.numerator, e.ev.denominator)
            for w, e in wager_expectations(counts, cfg).items()]


def flat(c):  # type: ignore[no-untyped-def]
    d = c.to_dict()
    out = {k: v for k, v in d.items() if isinstance(v, int)}
    for side in ("player", "banker"):
        out.update({f"bonus_{side}_{k}": v for k, v in d["bonus"][side].items()})
    out.update({f"natural_{k}": v for k, v in d["naturals"].items()})
    return out


@pytest.mark.parametrize("cfg", CONFIGS, ids=["punto_banco", "no_vig"])
def test_views_follow_a_shoe_and_publish_what_the_fraction_path_did(cfg) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(11)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    rng.shuffle(shoe)
    views = LiveViews()
    comp = list(full.counts)
    steps = [1] * 30 + [4] + [1] * 30 + [9]  # cards, and burns of several cards at once
    i = 0
    for k in steps:
        for v in shoe[i:i + k]:
            comp[v] -= 1
        i += k
        got = views.odds(("T", "public"), tuple(comp), cfg)
        assert got is not None
        expected = exact_counts(comp, cfg.odds_ruleset)
        assert got.total == expected.total
        assert [(w.wager, w.p_win, w.p_void, w.ev, w.ev_num, w.ev_den) for w in got.wagers] == fraction_odds(
            tuple(comp), cfg)
        # what the projection published before: every count, in the same key order
        assert list(got.counts.items()) == list(flat(expected).items())
    # a jump back (a new shoe) and a fresh key give the same as a full evaluation
    assert views.odds(("T", "public"), full.counts, cfg).counts == flat(exact_counts(full, cfg.odds_ruleset))  # type: ignore[union-attr]
    assert views.odds(("U", "public"), tuple(comp), cfg).counts == flat(exact_counts(comp, cfg.odds_ruleset))  # type: ignore[union-attr]


def test_flat_fields_are_the_engines_order() -> None:
    c = outcome_counts(10, list(range(100, 130)))
    assert flat_counts(c) == list(range(100, 130))
    for i, name in enumerate(FLAT_FIELDS):
        side, _, cls = name.partition(".")
        assert (getattr(getattr(c, side), cls) if cls else getattr(c, name)) == 100 + i


def test_no_odds_below_six_cards_or_for_invalid_counts() -> None:
    views, cfg = LiveViews(), punto_banco_full()
    assert views.odds("k", (5, 0, 0, 0, 0, 0, 0, 0, 0, 0), cfg) is None
    assert views.odds("k", (-1, 9, 0, 0, 0, 0, 0, 0, 0, 0), cfg) is None
    assert views.odds("k", (6, 0, 0, 0, 0, 0, 0, 0, 0, 0), cfg) is not None


def test_chemin_de_fer_uses_its_stated_policy_each_time() -> None:
    cfg = chemin_de_fer()
    views = LiveViews()
    comp = Composition.full(6).without([1, 2, 3]).counts
    for _ in range(2):
        got = views.odds("c", comp, cfg)
        assert got is not None and got.counts == flat(exact_counts(comp, cfg.odds_ruleset))


#: every named profile (commission and no-vig Banker lines, dragon 7 and panda 8, casino night's Tie, chemin de fer)
GENERATED_CONFIGS = [*(make() for make in TABLE_PROFILES.values())]


@pytest.mark.parametrize("cfg", GENERATED_CONFIGS, ids=list(TABLE_PROFILES))
def test_generated_wagers_equal_the_interpreted_lines_on_every_card_of_a_shoe(cfg) -> None:  # type: ignore[no-untyped-def]
    """The generated per-configuration function against flat_terms' interpreted lines, exact equality of every
    field (floats included), on every card of a whole 8-deck shoe down to six cards, and on edge counts."""
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    random.Random(26).shuffle(shoe)
    live = LiveOdds(full, cfg.odds_ruleset)
    checked = 0
    for v in shoe:
        if live.total == 6:
            break
        live.remove(v)
        total, flat_ = permut6(live.total), live.column_counts()
        assert wager_odds(total, flat_, cfg) == reference_wager_odds(total, flat_, cfg)
        checked += 1
    assert checked == 416 - 6
    # counts where classes are zero or everything (EVs of 0, of -1, wins of 0)
    for flat_ in ([0] * 30, [7] * 30, list(range(30))):
        assert wager_odds(1000, flat_, cfg) == reference_wager_odds(1000, flat_, cfg)


def test_generated_source_folds_the_pay_table_into_integer_coefficients() -> None:
    """Banker at 19 to 20 (5 % commission), void on a tie: num = 39 banker + 20 tie − 20 total over 20 total."""
    src = wager_source(punto_banco())
    assert "num = s[0] * 39 + s[2] * 20 - total * 20" in src
    assert "num = s[1] * 2 + s[2] - total" in src  # Player 1 to 1, void on a tie
    assert "Fraction" not in src


def test_counts_dict_keys_and_values() -> None:
    got = counts_dict(99, list(range(30)))
    assert list(got)[:9] == ["total", "banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7",
                             "panda_8"]
    assert got["total"] == 99 and got["panda_8"] == 7 and got["bonus_player_natural_win"] == 12
    assert got["bonus_banker_lose"] == 29 and got["natural_player_8"] == 8 and got["natural_banker_9"] == 11
    assert len(got) == 1 + 8 + 18 + 4


native = pytest.mark.skipif(odds.NATIVE is None, reason="the compiled odds kernel is not built")


def _python_view(live: LiveOdds, cfg):  # type: ignore[no-untyped-def]
    total, flat_ = permut6(live.total), live.column_counts()
    return total, counts_dict(total, flat_), reference_wager_odds(total, flat_, cfg)


@native
@pytest.mark.parametrize("cfg", GENERATED_CONFIGS, ids=list(TABLE_PROFILES))
def test_kernel_view_equals_the_interpreted_lines_on_every_card_of_a_shoe(cfg) -> None:  # type: ignore[no-untyped-def]
    """The compiled kernel's ``view`` (counts dict and wager lines from the 30 counts in C, issue 26) against
    counts_dict and flat_terms' interpreted lines: every field equal (floats, reduced EVs, key order) on every
    card of a whole 8-deck shoe down to six cards."""
    lines = native_lines(cfg)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    random.Random(261).shuffle(shoe)
    live = LiveOdds(full, cfg.odds_ruleset, engine="native")
    checked = 0
    for v in shoe:
        if live.total == 6:
            break
        live.remove(v)
        total, counts, wagers = live.view(lines)  # type: ignore[misc]
        assert (total, list(counts.items()), wagers) == (lambda t, c, w: (t, list(c.items()), w))(
            *_python_view(live, cfg))
        checked += 1
    assert checked == 416 - 6


@native
@pytest.mark.parametrize(("cfg", "beyond_int64"), [(punto_banco_full(), True), (no_vig_dragon(panda=True), False)],
                         ids=["punto_banco", "no_vig"])
def test_kernel_view_beyond_exact_doubles_and_beyond_int64(cfg, beyond_int64: bool) -> None:  # type: ignore[no-untyped-def]
    """From 459 cards the counts exceed 2**53 (floats by Python's int division); beyond 1,450
    the kernel does not follow the shoe (``view`` is None) and LiveViews computes the same in Python."""
    lines = native_lines(cfg)
    for counts in ((300, 83, 79, 71, 80, 89, 73, 97, 67, 81), (431, 107, 109, 113, 103, 97, 101, 89, 127, 131)):
        live = LiveOdds(counts, cfg.odds_ruleset, engine="native")
        for v in (0, 9, 5, 0, 1):
            live.remove(v)
            got = live.view(lines)
            assert got is not None and got[0] > 2**53
            assert got == _python_view(live, cfg)
    # a commission's denominator (20) takes some EVs' reduced terms beyond 64 bits (the kernel's 128-bit path)
    assert (max(w.ev_den for w in got[2]) > 2**63) is beyond_int64
    live = LiveOdds((16 * 30, *(4 * 30,) * 9), cfg.odds_ruleset, engine="native")
    assert live.total > 1450 and live.view(lines) is None
    views = LiveViews()
    got = views.odds("big", live.composition, cfg)
    assert got is not None and (got.total, got.counts, got.wagers) == _python_view(live, cfg)


@native
def test_kernel_follow_steps_and_refuses() -> None:
    """``Tracker.follow``: cards out by value (0 when equal), -1 (unchanged) for a card back or a jump beyond
    ``max_cards``; LiveOdds.follow then evaluates in full, and rejects invalid counts naming the problem."""
    live = LiveOdds(Composition.full(1), engine="native")
    t = live._tracker
    assert t.follow((4, 4, 4, 4, 4, 4, 4, 4, 4, 16), 16) == -1  # a value gained cards
    assert t.follow(Composition.full(1).without([0] * 13 + [1] * 4).counts, 16) == -1  # 17 cards
    assert t.counts == Composition.full(1).counts
    assert t.follow(Composition.full(1).counts, 16) == 0
    assert t.follow(Composition.full(1).without([0, 3, 3]).counts, 16) == 3
    assert t.counts == Composition.full(1).without([0, 3, 3]).counts
    with pytest.raises(ValueError):
        t.follow((1, 2, 3), 16)
    live = LiveOdds(Composition.full(1), engine="native")
    live.follow(Composition.full(1).without([5] * 4 + [0] * 16).counts)  # 20 cards: one full evaluation
    assert live.total == 32 and live.counts() == exact_counts(Composition.full(1).without([5] * 4 + [0] * 16))
    for bad in ((1, 2, 3), (-1, 4, 4, 4, 4, 4, 4, 4, 4, 4), (1.5, 4, 4, 4, 4, 4, 4, 4, 4, 4)):
        with pytest.raises(InvalidComposition):
            live.follow(bad)  # type: ignore[arg-type]
    assert live.total == 32


@pytest.mark.parametrize("cfg", CONFIGS, ids=["punto_banco", "no_vig"])
def test_follow_pair_then_odds_equal_each_view_alone(cfg) -> None:  # type: ignore[no-untyped-def]
    """The core steps both views' trackers together (``LiveViews.follow_pair``) before asking each view's odds:
    what it publishes equals a second LiveViews that steps each view by its own ``odds`` call, on every card of a
    shoe with face-down burns (surveillance only); a pair without trackers yet, or bad counts, is a no-op."""
    rng = random.Random(12)
    full = Composition.full(8)
    shoe = [v for v in range(10) for _ in range(full[v])]
    rng.shuffle(shoe)
    paired, apart = LiveViews(), LiveViews()
    keys = (("T", "public"), ("T", "surveillance"))
    pub, sur = list(full.counts), list(full.counts)
    paired.follow_pair(keys, (tuple(pub), tuple(sur)), cfg)  # no trackers yet: nothing to step
    for i, v in enumerate(shoe[:120]):
        sur[v] -= 1
        if i % 25 != 3:  # else burned face down
            pub[v] -= 1
        comps = (tuple(pub), tuple(sur))
        paired.follow_pair(keys, comps, cfg)
        for key, comp in zip(keys, comps):
            got, want = paired.odds(key, comp, cfg), apart.odds(key, comp, cfg)
            assert got is not None and got == want
            assert got.counts == flat(exact_counts(comp, cfg.odds_ruleset))
    paired.follow_pair(keys, ((1,) * 9, (-1,) * 10), cfg)  # bad counts: left to odds(), nothing raised
    assert paired.odds(keys[0], tuple(pub), cfg) == apart.odds(keys[0], tuple(pub), cfg)
