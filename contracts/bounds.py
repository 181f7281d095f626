"""The maximum size of every string, list and map on the wire, so that no message outgrows a Kafka record.

The broker refuses a record over 1,000,000 bytes (``message.max.bytes`` ~1 MB). A command is one record; the
events it causes are others, and one of them aggregates many commands: ``BettingClosed`` carries the whole
bet book of a round. Two bare 600 KB player ids once made that event too big to publish, and the table never
got past "No more bets" again. So:

* **Commands are bounded when decoded.** Every string and list of a command, of its
  :class:`~contracts.envelope.CommandEnvelope` and of the nested specs (``TableSpec``, ``ShoeSpec``,
  ``LimitSpec``) has a ``msgspec.Meta`` maximum, ids a pattern too (letters, digits and ``. _ : -``; player
  ids any printable text). An over-long or ill-formed field makes
  the command :class:`~contracts.codecs.Undecodable`: the service host dead-letters it with msgspec's error,
  which names the field (``Expected `str` of length <= 128 - at `$.payload.player_id```), and decides
  nothing. Amounts, seats and other ints are not bounded here: JSON ints are at most 20 digits (msgspec
  refuses anything past 64 bits) and their ranges are business rules, answered with reason codes
  (``invalid_seat``, ``invalid_amount``) by the deciders.
* **Events carry documented maxima.** Each string and list of an event has a ``maxLength`` / ``maxItems`` in
  its JSON Schema, which the producers guarantee by construction (everything in an event comes from a bounded
  command, from the rules core, or from a bounded count such as :data:`MAX_BETS_PER_ROUND`), but the event
  decoders do not enforce it, so a log written before the bounds existed stays decodable (EVOLUTION rule 8).
* **Aggregates are counted.** The wagering service refuses a bet past :data:`MAX_BETS_PER_ROUND` in a round
  (``too_many_bets``); a shoe holds at most :data:`MAX_SHOE_CARDS` cards; a burn at most :data:`MAX_BURN`.

``tests/contracts/test_bounds.py`` encodes the largest ``BettingClosed`` these bounds allow and checks it is
under the record limit, and that every string and list of every message has its maximum.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

#: the broker's record limit this project keeps every message under (Kafka's default ``message.max.bytes``
#: is 1,048,588 bytes; a round number leaves room for the record's own overhead)
RECORD_LIMIT_BYTES = 1_000_000

#: ids (table, shoe, round, command/bet, player, correlation): length and alphabet
MAX_ID = 128
#: (``(?!\n)``: Python's ``$`` also matches before a final newline, ECMAScript's does not; this reads the same in both)
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$(?!\n)"
#: a card text (``"Kd"``, ``"10h"``): read cards that do not parse are refused by the shoe service
MAX_CARD = 4
#: a code or name (wager, hand, variant, rule, reason code, enum value, pay-table key, odds text)
MAX_CODE = 32
#: a reason or detail in words
MAX_TEXT = 500
#: an event's generated explanation (``detail``, ``why``, ``source``): rules-core messages quoting bounded input
MAX_DETAIL = 2_000
#: a shoe: 8 decks of 52 (13:69F-3.1(a) asks at least 6; the rules core accepts 1 to 8)
MAX_SHOE_CARDS = 416
#: cards burned after the exposed card: 10 at most (a ten-value card under the ``tens_as_ten`` rule)
MAX_BURN = 10
#: bets in one round's book (14 seats x 10 wagers, several players a seat, with room to spare)
MAX_BETS_PER_ROUND = 1_000
#: players registered at one table at once (``SeatPlayer``; 14 seats, several patrons a seat)
MAX_SEATED_PLAYERS = 112
#: entries of a table's wager list, pay table or limits map (there are 10 wagers and 15 pay entries)
MAX_TABLE_ENTRIES = 32
#: hex texts: a salt (16-32 bytes) or a SHA-256 commitment
MAX_HEX = 128
#: a sealed shoe order (``ShoeOrderEncrypted.ciphertext``), bytes: the JSON of 416 card texts and a salt
#: (at most 416 × 5 + 300) plus the 16-byte GCM tag, rounded up
MAX_SEALED = 4_096

# ---- enforced on decode (commands, the command envelope, the table and shoe specs) ---------------------
Id = Annotated[str, msgspec.Meta(max_length=MAX_ID, pattern=ID_PATTERN)]
#: a player id: any printable text up to MAX_ID (no control characters); which ids exist is the floor's
#: player registry's business, not the decoder's
PLAYER_ID_PATTERN = r"^[^\x00-\x1f\x7f]+$(?!\n)"
PlayerId = Annotated[str, msgspec.Meta(max_length=MAX_ID, pattern=PLAYER_ID_PATTERN)]
OptPlayerId = Annotated[str, msgspec.Meta(max_length=MAX_ID, pattern=r"^[^\x00-\x1f\x7f]*$(?!\n)")]
#: an id that may be empty (``correlation_id``)
OptId = Annotated[str, msgspec.Meta(max_length=MAX_ID, pattern=r"^([A-Za-z0-9][A-Za-z0-9._:-]*)?$(?!\n)")]
CardText = Annotated[str, msgspec.Meta(max_length=MAX_CARD)]
Code = Annotated[str, msgspec.Meta(max_length=MAX_CODE)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
ShoeOrder = Annotated[list[CardText], msgspec.Meta(max_length=MAX_SHOE_CARDS)]
BurnedCards = Annotated[list[CardText], msgspec.Meta(max_length=MAX_BURN)]
CodeList = Annotated[list[Code], msgspec.Meta(max_length=MAX_TABLE_ENTRIES)]
Ratio = Annotated[list[int], msgspec.Meta(max_length=2)]


# ---- documented on events (JSON Schema maxLength / maxItems; not enforced on decode) ---------------------
def _doc(**schema: object) -> msgspec.Meta:
    return msgspec.Meta(extra_json_schema=schema)


EvId = Annotated[str, _doc(maxLength=MAX_ID)]
EvCard = Annotated[str, _doc(maxLength=MAX_CARD)]
EvCode = Annotated[str, _doc(maxLength=MAX_CODE)]
EvText = Annotated[str, _doc(maxLength=MAX_TEXT)]
EvDetail = Annotated[str, _doc(maxLength=MAX_DETAIL)]
EvHex = Annotated[str, _doc(maxLength=MAX_HEX)]
#: bytes, base64 in JSON: the documented ``maxLength`` is of the base64 text of :data:`MAX_SEALED` bytes
EvSealed = Annotated[bytes, _doc(maxLength=4 * -(-MAX_SEALED // 3))]
EvCards = Annotated[list[EvCard], _doc(maxItems=MAX_SHOE_CARDS)]
EvBurned = Annotated[list[EvCard], _doc(maxItems=MAX_BURN)]
#: a hand: at most 3 cards (13:69F-3.9)
EvHand = Annotated[list[EvCard], _doc(maxItems=3)]

__all__ = [
    "ID_PATTERN",
    "MAX_BETS_PER_ROUND",
    "MAX_SEATED_PLAYERS",
    "MAX_BURN",
    "MAX_CARD",
    "MAX_CODE",
    "MAX_DETAIL",
    "MAX_HEX",
    "MAX_ID",
    "MAX_SEALED",
    "MAX_SHOE_CARDS",
    "MAX_TABLE_ENTRIES",
    "MAX_TEXT",
    "PLAYER_ID_PATTERN",
    "RECORD_LIMIT_BYTES",
    "BurnedCards",
    "CardText",
    "Code",
    "CodeList",
    "EvBurned",
    "EvCard",
    "EvCards",
    "EvCode",
    "EvDetail",
    "EvHand",
    "EvHex",
    "EvId",
    "EvSealed",
    "EvText",
    "Id",
    "OptId",
    "OptPlayerId",
    "PlayerId",
    "Ratio",
    "ShoeOrder",
    "Text",
]
