"""The shoe: verification, cut, burn, the end-of-shoe cutting card and its policy."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples

from baccarat.cards import Card, Rank, Suit, parse_card, standard_deck
from baccarat.drawing import PUNTO_BANCO
from baccarat.errors import ImpossibleCard, InsufficientCards, InvalidShoe, ShoeComplete
from baccarat.round import resolve
from baccarat.shoe import (
    BurnRecord,
    BurnRule,
    EndOfShoePolicy,
    ShoeRules,
    begin_round,
    burn,
    burn_refusal,
    check_read,
    cut,
    draw,
    load,
    load_physical,
    read,
    read_burn,
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


@settings(max_examples=examples(25), deadline=None)
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


# ---- a physical shoe records its cut and its burn (issue 9, finding 8) ---------------------------------
def test_a_physical_shoe_records_the_cut():
    rules = ShoeRules(decks=8, min_cut_depth=10)
    s = cut(load_physical(rules), 200)
    assert (s.cut_at, s.position, s.cards_left, s.remaining) == (200, 0, 416, (8,) * 52)
    for at in (9, 407):
        with pytest.raises(InvalidShoe, match=r"10\.\.406"):
            cut(load_physical(rules), at)
    with pytest.raises(InvalidShoe, match="once"):
        cut(s, 100)


def _c(text: str) -> Card:
    return parse_card(text)


@pytest.mark.parametrize(("rule", "exposed", "burned"), [
    (BurnRule.TENS_AS_TEN, "Ks", "2c 3c 4c 5c 6c 7c 8c 9c Tc Jc"),  # a king burns 10
    (BurnRule.TENS_AS_TEN, "As", "2c"),
    (BurnRule.TENS_AS_TEN, "7h", "2c 3c 4c 5c 6c 7c 8c"),
    (BurnRule.BACCARAT_VALUE, "Ks", ""),  # a king is worth 0 in baccarat: burns none
    (BurnRule.BACCARAT_VALUE, "3d", "Ad Ad Ad"),
])
def test_a_physical_burn_is_read_card_by_card(rule, exposed, burned):
    shoe = load_physical(ShoeRules(burn=rule))
    cards = [_c(t) for t in burned.split()]
    assert burn_refusal(shoe, _c(exposed), cards) is None
    s, rec = read_burn(shoe, _c(exposed), cards)
    assert rec == BurnRecord(_c(exposed), tuple(cards))
    assert s.burn_record == rec and s.position == 1 + len(cards) and s.cards_left == 415 - len(cards)
    assert sum(s.remaining) == 415 - len(cards)
    assert s.remaining[_index(exposed)] == 7 - sum(1 for c in cards if c == _c(exposed))
    assert burn_refusal(s, _c(exposed), cards)[0] == "burn_done"  # once only


def _index(text: str) -> int:
    c = _c(text)
    return (int(c.rank) - 1) * 4 + list(Suit).index(c.suit)


def test_a_physical_burn_is_checked_against_the_rule_and_the_composition():
    shoe = load_physical(ShoeRules(decks=1))
    # the wrong number of cards after the exposed card
    code, detail = burn_refusal(shoe, _c("5s"), [_c("2c")])
    assert code == "burn_count_mismatch" and "5 card(s)" in detail and "got 1" in detail
    # a card the shoe cannot hold: one deck has one 2 of clubs
    code, detail = burn_refusal(shoe, _c("2s"), [_c("2c"), _c("2c")])
    assert code == "impossible_card" and "2c" in detail
    code, _ = burn_refusal(shoe, _c("As"), [_c("As")])  # the exposed As is out: no second As in one deck
    assert code == "impossible_card"
    # cards need their suit
    assert burn_refusal(shoe, Card(Rank.ACE, None), [_c("2c")])[0] == "impossible_card"
    # no burn under the 'none' rule; not once a card of a round is out; not on a shoe whose order is known
    assert burn_refusal(load_physical(ShoeRules(burn=BurnRule.NONE)), _c("As"), [])[0] == "no_burn_rule"
    dealt, _ = read(shoe, _c("9h"))
    assert burn_refusal(dealt, _c("As"), [_c("2c")])[0] == "burn_done"
    known = load(list(standard_deck()), ShoeRules(decks=1))
    assert burn_refusal(known, _c("As"), [_c("2c")])[0] == "not_physical"
    with pytest.raises(InvalidShoe, match="burn_count_mismatch"):
        read_burn(shoe, _c("5s"), [])


def test_the_automatic_burn_refuses_a_physical_shoe_with_a_clear_error():
    with pytest.raises(InvalidShoe, match="read_burn"):
        burn(load_physical(ShoeRules()))
