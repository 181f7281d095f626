"""Tables 1 and 2 of 13:69F-3.9, cell by cell, through the round state machine."""

import pytest

from baccarat.cards import Card, Hand, Rank
from baccarat.drawing import (
    CASINO_NIGHT,
    CASINO_NIGHT_LITERAL,
    CHEMIN_DE_FER,
    PUNTO_BANCO,
    Action,
    ruleset_named,
)
from baccarat.errors import BaccaratError
from baccarat.round import NeedCard, NeedDecision, Outcome, add_card, next_step, start

# The digest's full Banker decision matrix (rules.md §1.10), typed independently of baccarat.drawing.
# Columns: stood, then the Player's third-card value 0..9.
DIGEST_TABLE_2 = {
    0: "D DDDDDDDDDD",
    1: "D DDDDDDDDDD",
    2: "D DDDDDDDDDD",
    3: "D DDDDDDDDSD",
    4: "D SSDDDDDDSS",
    5: "D SSSSDDDDSS",
    6: "S SSSSSSDDSS",
    7: "S SSSSSSSSSS",
}

V = {v: Card(Rank(v) if v else Rank.TEN) for v in range(10)}


def two_cards(total: int) -> tuple[Card, Card]:
    """Two cards making ``total`` without a natural-looking first card issue (0 + total)."""
    return V[0], V[total]


def banker_draws(ruleset, banker_total: int, player_third: int | None) -> bool:
    """Run the state machine to the Banker's decision and report whether it asks for a Banker card."""
    p1, p2 = two_cards(5 if player_third is not None else 6)
    b1, b2 = two_cards(banker_total)
    deal = start(ruleset)
    for c in (p1, b1, p2, b2):
        deal = add_card(deal, c)
    step = next_step(deal)
    if player_third is not None:
        assert isinstance(step, NeedCard) and step.hand is Hand.PLAYER
        deal = add_card(deal, V[player_third])
        step = next_step(deal)
    if isinstance(step, Outcome):
        return False
    assert isinstance(step, NeedCard) and step.hand is Hand.BANKER
    return True


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("column", ["stood"] + list(range(10)))
def test_table_2_cell(banker_total, column):
    row = DIGEST_TABLE_2[banker_total].replace(" ", "")
    expected = row[0] if column == "stood" else row[1 + column]
    third = None if column == "stood" else column
    assert banker_draws(PUNTO_BANCO, banker_total, third) is (expected == "D")


@pytest.mark.parametrize("total,draws", [(t, t <= 5) for t in range(8)])
def test_table_1_cell(total, draws):
    deal = start(PUNTO_BANCO)
    for c in (V[0], V[0], V[total], V[7]):  # Banker 7: no natural, stands
        deal = add_card(deal, c)
    step = next_step(deal)
    if draws:
        assert isinstance(step, NeedCard) and step.hand is Hand.PLAYER
        assert step.reason.rule == "table_1" and step.reason.row == total
    else:
        assert isinstance(step, Outcome) and step.cards_required == 4


@pytest.mark.parametrize("p,b", [(p, b) for p in range(10) for b in range(10) if p >= 8 or b >= 8])
def test_natural_ends_the_drawing(p, b):
    deal = start(PUNTO_BANCO)
    for c in (V[0], V[0], V[p], V[b]):
        deal = add_card(deal, c)
    out = next_step(deal)
    assert isinstance(out, Outcome)
    assert out.cards_required == 4
    assert out.player_natural is (p >= 8) and out.banker_natural is (b >= 8)


def test_value_zero_third_card_is_not_stood():
    # Banker 5 draws when the Player stood, stands on a Player third card of 0 (digest §1.10 traps).
    assert banker_draws(PUNTO_BANCO, 5, None) is True
    assert banker_draws(PUNTO_BANCO, 5, 0) is False
    # Banker 6 draws only on 6 or 7 and stands when the Player stood.
    assert banker_draws(PUNTO_BANCO, 6, None) is False
    assert [banker_draws(PUNTO_BANCO, 6, v) for v in range(10)] == [v in (6, 7) for v in range(10)]


def test_casino_night_table_2_reading_equals_punto_banco():
    assert CASINO_NIGHT.player == PUNTO_BANCO.player and CASINO_NIGHT.banker == PUNTO_BANCO.banker


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("column", ["stood"] + list(range(10)))
def test_casino_night_literal_reading(banker_total, column):
    # 13:47-20.20(e)3: player stood -> bank draws 0-5; player drew -> bank draws on 0, 1, 2 only.
    third = None if column == "stood" else column
    expected = banker_total <= 5 if third is None else banker_total <= 2
    assert banker_draws(CASINO_NIGHT_LITERAL, banker_total, third) is expected


def test_chemin_de_fer_option_cells():
    assert CHEMIN_DE_FER.has_options and not PUNTO_BANCO.has_options
    assert CHEMIN_DE_FER.player_action(5) is Action.OPTION
    assert [CHEMIN_DE_FER.player_action(t) for t in (0, 4, 6, 7)] == [Action.DRAW, Action.DRAW, Action.STAND, Action.STAND]
    options = {(b, v) for b in range(8) for v in range(10) if CHEMIN_DE_FER.banker_action(b, v) is Action.OPTION}
    assert options == {(3, 9), (4, 1), (5, 4)}
    assert [CHEMIN_DE_FER.banker_action(b, None) for b in range(8)] == [Action.DRAW] * 6 + [Action.STAND] * 2


def test_chemin_de_fer_player_option_needs_a_decision():
    deal = start(CHEMIN_DE_FER)
    for c in (V[0], V[0], V[5], V[4]):
        deal = add_card(deal, c)
    step = next_step(deal)
    assert isinstance(step, NeedDecision) and step.hand is Hand.PLAYER and step.row == 5


def test_ruleset_named():
    assert ruleset_named("punto_banco") is PUNTO_BANCO
    with pytest.raises(BaccaratError, match="unknown ruleset"):
        ruleset_named("blackjack")
