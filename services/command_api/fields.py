"""The field types of the command API's requests (pydantic ``Annotated`` types: each a bound and an OpenAPI
description), and the one rule that reads an amount written in dollars.

The alphabets and lengths are those of :mod:`contracts.bounds` (ids at most 128 characters of letters, digits and
``. _ : -``; free text without control characters). Money is integer cents; a seat is 1-based.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from baccarat.errors import InvalidAmount
from baccarat.money import parse_dollars
from contracts.bounds import MAX_CARD, MAX_ID

# The same alphabets as contracts.bounds (without its lookahead, which pydantic's regex engine lacks; the
# contract decoder checks every command again before it is sent: see gateway.check_command).
IdText = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
PlayerText = Annotated[str, Field(min_length=1, max_length=MAX_ID, pattern=r"^[^\x00-\x1f\x7f]+$")]
CardField = Annotated[str, Field(min_length=2, max_length=MAX_CARD, description='A card: rank A 2-9 T J Q K and '
                                                                                'suit c d h s, e.g. "Kd", "7s"')]
Seat = Annotated[int, Field(ge=1, le=1000, description="The seat, 1-based (the table's seats: max_players)")]
Cents = Annotated[int, Field(ge=0, le=10**12, description="Cents")]
#: an amount in dollars as people write it ("25", "25.50", "$1,000"): :func:`baccarat.money.parse_dollars`
Dollars = Annotated[str, Field(max_length=32, examples=["25.50"],
                               description='Dollars as people write them: "25", "25.50", "$1,000" (at most two '
                                           'decimals); the alternative to the field in cents')]


def dollars_to_cents(data: object, dollars: str, cents: str) -> object:
    """A request body with its ``dollars`` field (text, :func:`baccarat.money.parse_dollars`) turned into
    ``cents`` (integer cents); the dollars text is kept. Raises ``ValueError`` (a 422 naming the field) for
    text that is not an amount, or for both fields given."""
    if not isinstance(data, dict) or data.get(dollars) is None:
        return data
    if data.get(cents) is not None:
        raise ValueError(f"give {dollars} (dollars) or {cents}, not both")
    try:
        return {**data, cents: parse_dollars(str(data[dollars]), dollars)}
    except InvalidAmount as e:
        raise ValueError(str(e)) from None

