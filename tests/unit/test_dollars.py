"""Amounts typed in dollars: the input policy (baccarat.money.parse_dollars) cell by cell, a brute-force
round trip against the display format, and the command API's dollar fields (a stake, a chemin de fer bank)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from baccarat.errors import InvalidAmount
from baccarat.money import format_cents, parse_dollars
from services.command_api import actions as A


@pytest.mark.parametrize(("text", "cents"), [
    ("25", 2500), ("25.5", 2550), ("25.50", 2550), ("25.05", 2505), ("$25", 2500), ("$ 25.50", 2550),
    ("$1,000", 100000), ("1,000.25", 100025), ("$1,234,567.89", 123456789), ("0.05", 5), (".", None),
    (" 2500.00 ", 250000), ("0", 0), ("1000", 100000), ("007", 700),
])
def test_dollars_as_people_write_them(text: str, cents: int | None) -> None:
    if cents is None:
        with pytest.raises(InvalidAmount):
            parse_dollars(text)
    else:
        assert parse_dollars(text) == cents


@pytest.mark.parametrize(("text", "words"), [
    ("25.555", "fraction of a cent"), ("$1,000.001", "fraction of a cent"), ("abc", "not an amount"),
    ("", "not an amount"), ("-25", "not an amount"), ("+25", "not an amount"), ("1,00", "not an amount"),
    ("1,0000", "not an amount"), ("25.", "not an amount"), ("$$25", "not an amount"), ("25 USD", "not an amount"),
    ("2 5", "not an amount"), ("1e3", "not an amount"), ("٢٥", "not an amount"),
])
def test_anything_else_is_refused_with_words_saying_why(text: str, words: str) -> None:
    with pytest.raises(InvalidAmount, match=words):
        parse_dollars(text, "stake")


@settings(max_examples=200)
@given(st.integers(min_value=0, max_value=10**12))
def test_what_the_pages_show_reads_back_as_the_same_cents(cents: int) -> None:
    shown = format_cents(cents)  # "$1,234.05"
    assert parse_dollars(shown) == cents
    assert parse_dollars(shown.replace(",", "").lstrip("$")) == cents


def test_a_bet_takes_dollars_or_cents_and_never_both() -> None:
    base = {"round_id": "R1", "seat": 1, "player_id": "p-1", "wager": "banker"}
    assert A.PlaceBetAction(**base, amount="25.50").amount_cents == 2550
    assert A.PlaceBetAction(**base, amount="$1,000").amount_cents == 100000
    assert A.PlaceBetAction(**base, amount_cents=2500).amount_cents == 2500
    with pytest.raises(ValidationError, match="fraction of a cent"):
        A.PlaceBetAction(**base, amount="25.555")
    with pytest.raises(ValidationError, match="not an amount in dollars"):
        A.PlaceBetAction(**base, amount="abc")
    with pytest.raises(ValidationError, match="not both"):
        A.PlaceBetAction(**base, amount="25", amount_cents=2500)
    with pytest.raises(ValidationError, match="stake is missing"):
        A.PlaceBetAction(**base)
    cmd = A.to_command(A.PlaceBetAction(**base, amount="2500.00"), "x").command
    assert cmd.amount_cents == 250000  # type: ignore[attr-defined]


def test_a_chemin_de_fer_bank_takes_dollars() -> None:
    a = A.OpenRoundAction(actor="d", shoe_id="S1", banker_seat=2, banker_player_id="p-2", bank="$1,000")
    assert a.bank_cents == 100000
    with pytest.raises(ValidationError, match="banker_player_id, banker_seat missing"):
        A.OpenRoundAction(actor="d", shoe_id="S1", bank="100")
