"""The shoe: verification, cut, burn, the end-of-shoe cutting card and its policy."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baccarat.cards import Card, Rank, Suit, standard_deck
from baccarat.drawing import PUNTO_BANCO
from baccarat.errors import ImpossibleCard, InsufficientCards, InvalidShoe, ShoeComplete
from baccarat.round import resolve
from baccarat.shoe import (
    BurnRule,
    EndOfShoePolicy,
    ShoeRules,
    begin_round,
    burn,
    check_read,
    cut,
    draw,
    load,
    round_refusal,
)


def order(decks=8, seed=7):
    cards = list(standard_deck() * decks)
    random.Random(seed).shuffle(cards)
    return cards


def test_load_verifies_the_composition():
    shoe = load(order(), ShoeRules())
    assert shoe.cards_left == 416
    assert shoe.remaining_by_value() == (128, 32, 32, 32, 32, 32, 32, 32, 32, 32)
    assert set(shoe.remaining_by_rank().values()) == {32}
    bad = order()
    bad[0] = bad[1]  # one card duplicated, one missing
    with pytest.raises(InvalidShoe, match="appears"):
        load(bad, ShoeRules())
    with pytest.raises(InvalidShoe, match="holds 416 cards"):
        load(order()[:-1], ShoeRules())
    with pytest.raises(InvalidShoe, match="rank and a suit"):
        load([Card(Rank.ACE)] * 416, ShoeRules())


@pytest.mark.parametrize("kw", [dict(decks=0), dict(decks=9), dict(end_card_offset=-1), dict(decks=1, end_card_offset=40), dict(min_cut_depth=300)])
def test_bad_rules(kw):
    with pytest.raises(InvalidShoe):
        ShoeRules(**kw)


def test_cut_moves_the_front_to_the_back_and_respects_depth():
    o = order()
    shoe = cut(load(o, ShoeRules()), 100)
    assert shoe.cards == tuple(o[100:] + o[:100]) and shoe.cut_at == 100
    for at in (9, 407):
        with pytest.raises(InvalidShoe, match="cut at"):
            cut(load(o, ShoeRules()), at)
    with pytest.raises(InvalidShoe, match="once"):
        cut(shoe, 50)


@pytest.mark.parametrize(
    "first,rule,burned",
    [(Rank.SEVEN, BurnRule.TENS_AS_TEN, 7), (Rank.KING, BurnRule.TENS_AS_TEN, 10), (Rank.ACE, BurnRule.TENS_AS_TEN, 1),
     (Rank.KING, BurnRule.BACCARAT_VALUE, 0), (Rank.NINE, BurnRule.BACCARAT_VALUE, 9), (Rank.NINE, BurnRule.NONE, 0)],
)
def test_burn(first, rule, burned):
    o = order()
    i = next(i for i, c in enumerate(o) if c.rank is first)
    o[0], o[i] = o[i], o[0]
    shoe, rec = burn(load(o, ShoeRules(burn=rule)))
    assert rec.exposed == o[0] and len(rec.burned) == burned
    out = 0 if rule is BurnRule.NONE else 1 + burned
    assert shoe.cards_left == 416 - out and sum(shoe.remaining) == 416 - out
    with pytest.raises(InvalidShoe):
        burn(shoe)


def play_shoe(rules, seed=3):
    shoe = load(order(rules.decks, seed), rules)
    shoe, _ = burn(shoe)
    rounds, cut_round = 0, None
    while round_refusal(shoe) is None:
        shoe = begin_round(shoe)
        rounds += 1
        # deal one round card by card
        cards = shoe.cards[shoe.position:]
        out, _ = resolve(cards, PUNTO_BANCO)
        for _ in range(out.cards_required):
            shoe, card, reached = draw(shoe)
            if reached:
                cut_round = rounds
    return shoe, rounds, cut_round


@pytest.mark.parametrize("policy,extra", [(EndOfShoePolicy.ONE_MORE_ROUND, 1), (EndOfShoePolicy.FINISH_ROUND, 0)])
def test_end_of_shoe_policy(policy, extra):
    shoe, rounds, cut_round = play_shoe(ShoeRules(end_of_shoe=policy))
    assert cut_round is not None and rounds == cut_round + extra
    assert round_refusal(shoe) == "shoe_complete"
    with pytest.raises(ShoeComplete):
        begin_round(shoe)
    # the cutting card came out within the last round dealt before the end was decided
    assert shoe.cards_left >= 14 - 6 * extra - 6


def test_a_round_never_starts_short_of_cards():
    shoe = load(order(1), ShoeRules(decks=1, end_card_offset=0, burn=BurnRule.NONE, min_cut_depth=0))
    while shoe.cards_left >= 6:
        shoe = begin_round(shoe)
        for _ in range(4):
            shoe, _, _ = draw(shoe)
    assert round_refusal(shoe) in ("insufficient_cards", "shoe_complete")
    if round_refusal(shoe) == "insufficient_cards":
        with pytest.raises(InsufficientCards):
            begin_round(shoe)


def test_check_read_refuses_an_impossible_card():
    o = [Card(r, s) for r in Rank for s in Suit]
    shoe = load(o, ShoeRules(decks=1, end_card_offset=0, min_cut_depth=0))
    shoe, card, _ = draw(shoe)
    with pytest.raises(ImpossibleCard):
        check_read(shoe, card)
    check_read(shoe, Card(Rank.ACE, Suit.DIAMONDS))
    check_read(shoe, Card(Rank.ACE))  # three aces remain
    for _ in range(3):
        shoe, _, _ = draw(shoe)
    with pytest.raises(ImpossibleCard):
        check_read(shoe, Card(Rank.ACE))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(10, 406))
def test_cards_are_conserved_through_a_shoe(seed, at):
    shoe = cut(load(order(8, seed), ShoeRules()), at)
    shoe, rec = burn(shoe)
    seen = [rec.exposed, *rec.burned]
    while round_refusal(shoe) is None:
        shoe = begin_round(shoe)
        out, _ = resolve(shoe.cards[shoe.position:], PUNTO_BANCO)
        for _ in range(out.cards_required):
            shoe, c, _ = draw(shoe)
            seen.append(c)
    assert sorted(seen + list(shoe.cards[shoe.position:])) == sorted(order(8, seed))
    assert sum(shoe.remaining) == shoe.cards_left
