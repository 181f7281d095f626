"""The projection's per-card odds in integers (services/projection/odds_views.py) against the Fraction path."""

from __future__ import annotations

import random

import pytest

from baccarat.expectation import FLAT_FIELDS, flat_counts, wager_expectations
from baccarat.odds import Composition, exact_counts, outcome_counts
from baccarat.odds import permut6
from baccarat.odds_live import LiveOdds
from baccarat.table import TABLE_PROFILES, chemin_de_fer, no_vig_dragon, punto_banco, punto_banco_full
from services.projection.odds_views import LiveViews, counts_dict, reference_wager_odds, wager_odds, wager_source

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
