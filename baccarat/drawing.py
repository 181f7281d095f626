"""Drawing rules as data: one :class:`Ruleset` per variant.

A ruleset holds two tables:

* ``player``: the Player's Hand action for its first-two-card point count 0–7 (8 and 9 are naturals);
* ``banker``: the Banker's Hand action by its first-two-card point count 0–7 (row) and by what the
  Player's Hand did (column): ``STOOD`` (no third card) or the **value** 0–9 of the Player's third card.

A value-0 third card (a ten or face card) is *not* "stood": Banker 5 draws when the Player stood but stands
on a Player third card of 0 (digest §1.10 traps).

Sources: N.J.A.C. 13:69F-3.9(a)–(c) Tables 1 and 2 (punto banco, the standard tableau, [P] in the digest);
13:47-20.20(e)2–3 (casino night, both readings of the bank rule); chemin de fer options are common French
practice ([U], data so they can be changed when the NJ text is obtained).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from baccarat.errors import BaccaratError


class Action(Enum):
    """What a table cell tells the hand to do."""

    DRAW = "draw"
    STAND = "stand"
    #: Chemin de fer: the controlling participant decides (Dominant Player or Banker, 13:69F-4.8(b)-(c)).
    OPTION = "option"


#: Column index of the Banker table used when the Player's Hand took no third card.
STOOD = 10

D, S, O = Action.DRAW, Action.STAND, Action.OPTION


def _row(text: str) -> tuple[Action, ...]:
    """Row from 11 letters: column 0..9 (Player's third-card value) then the ``STOOD`` column."""
    table = {"D": D, "S": S, "O": O}
    assert len(text) == 11
    return tuple(table[ch] for ch in text)


class Variant(Enum):
    """The New Jersey baccarat games the engine knows."""

    PUNTO_BANCO = "punto_banco"  # N.J.A.C. 13:69F-3
    CASINO_NIGHT = "casino_night"  # N.J.A.C. 13:47-20.20
    CHEMIN_DE_FER = "chemin_de_fer"  # N.J.A.C. 13:69F-4


@dataclass(frozen=True, slots=True)
class Ruleset:
    """The drawing rules of one game.

    ``player[t]`` is the Player's Hand action on a two-card count ``t`` in 0..7; ``banker[b][c]`` the
    Banker's Hand action on a two-card count ``b`` in 0..7 with column ``c`` = the Player's third-card value
    0..9 or :data:`STOOD`. ``natural`` lists the two-card counts that stop the round (13:69F-3.9(a)).
    ``source`` names the regulation each table comes from, for the audit trail.
    """

    name: str
    variant: Variant
    player: tuple[Action, ...]
    banker: tuple[tuple[Action, ...], ...]
    player_source: str
    banker_source: str
    natural: frozenset[int] = frozenset({8, 9})

    def __post_init__(self) -> None:
        if len(self.player) != 8 or len(self.banker) != 8 or any(len(r) != 11 for r in self.banker):
            raise BaccaratError(f"ruleset {self.name}: player needs 8 cells and banker 8x11")

    @property
    def has_options(self) -> bool:
        """True when some cell needs a decision (chemin de fer)."""
        return O in self.player or any(O in r for r in self.banker)

    def player_action(self, total: int) -> Action:
        """Player's Hand action on a two-card count 0..7 (Table 1)."""
        return self.player[total]

    def banker_action(self, total: int, player_third: int | None) -> Action:
        """Banker's Hand action on a two-card count 0..7 given the Player's third-card value (None: stood)."""
        return self.banker[total][STOOD if player_third is None else player_third]


#: Table 1, 13:69F-3.9(b): draw on 0–5, stand on 6–7.
TABLE_1 = (D, D, D, D, D, D, S, S)

#: Table 2, 13:69F-3.9(c), "draws when giving" layout. Columns: Player third-card value 0..9, then stood.
TABLE_2 = (
    _row("DDDDDDDDDDD"),  # 0
    _row("DDDDDDDDDDD"),  # 1
    _row("DDDDDDDDDDD"),  # 2
    _row("DDDDDDDDSDD"),  # 3: stands when giving 8
    _row("SSDDDDDDSSD"),  # 4: draws when giving 2-7
    _row("SSSSDDDDSSD"),  # 5: draws when giving 4-7
    _row("SSSSSSDDSSS"),  # 6: draws when giving 6-7; stands when the Player stood
    _row("SSSSSSSSSSS"),  # 7: stands
)

#: 13:47-20.20(e)3 read literally: once the Player has drawn, the bank draws on 0-2 only.
CASINO_NIGHT_LITERAL_BANKER = (
    _row("DDDDDDDDDDD"),
    _row("DDDDDDDDDDD"),
    _row("DDDDDDDDDDD"),
    _row("SSSSSSSSSSD"),
    _row("SSSSSSSSSSD"),
    _row("SSSSSSSSSSD"),
    _row("SSSSSSSSSSS"),
    _row("SSSSSSSSSSS"),
)

#: Chemin de fer, common French tableau ([U] for NJ): Player draws 0–4, option at 5, stands 6–7.
CHEMIN_PLAYER = (D, D, D, D, D, O, S, S)
#: Chemin de fer Banker: 3 option on 9; 4 option on an ace; 5 option on 4; stood column draws 0–5.
CHEMIN_BANKER = (
    _row("DDDDDDDDDDD"),
    _row("DDDDDDDDDDD"),
    _row("DDDDDDDDDDD"),
    _row("DDDDDDDDSOD"),  # 3
    _row("SODDDDDDSSD"),  # 4
    _row("SSSSODDDSSD"),  # 5
    _row("SSSSSSDDSSS"),  # 6
    _row("SSSSSSSSSSS"),  # 7
)

PUNTO_BANCO = Ruleset(
    name="punto_banco",
    variant=Variant.PUNTO_BANCO,
    player=TABLE_1,
    banker=TABLE_2,
    player_source="N.J.A.C. 13:69F-3.9(b) Table 1",
    banker_source="N.J.A.C. 13:69F-3.9(c) Table 2",
)

CASINO_NIGHT = Ruleset(
    name="casino_night",
    variant=Variant.CASINO_NIGHT,
    player=TABLE_1,
    banker=TABLE_2,
    player_source="N.J.A.C. 13:47-20.20(e)2",
    banker_source="N.J.A.C. 13:47-20.20(e)3 read with 13:69F-3.9(c) Table 2",
)

CASINO_NIGHT_LITERAL = Ruleset(
    name="casino_night_literal",
    variant=Variant.CASINO_NIGHT,
    player=TABLE_1,
    banker=CASINO_NIGHT_LITERAL_BANKER,
    player_source="N.J.A.C. 13:47-20.20(e)2",
    banker_source="N.J.A.C. 13:47-20.20(e)3 (literal: bank draws on 0-2 once the player has drawn)",
)

CHEMIN_DE_FER = Ruleset(
    name="chemin_de_fer",
    variant=Variant.CHEMIN_DE_FER,
    player=CHEMIN_PLAYER,
    banker=CHEMIN_BANKER,
    player_source="chemin de fer tableau (French practice; NJ 13:69F-4 drawing text not retrieved)",
    banker_source="chemin de fer tableau (French practice; NJ 13:69F-4 drawing text not retrieved)",
)

RULESETS: dict[str, Ruleset] = {
    r.name: r for r in (PUNTO_BANCO, CASINO_NIGHT, CASINO_NIGHT_LITERAL, CHEMIN_DE_FER)
}


def ruleset_named(name: str) -> Ruleset:
    """Look up a ruleset by name (``punto_banco``, ``casino_night``, ``casino_night_literal``,
    ``chemin_de_fer``); raises :class:`BaccaratError` listing the known names."""
    try:
        return RULESETS[name]
    except KeyError:
        raise BaccaratError(f"unknown ruleset {name!r}; known: {', '.join(RULESETS)}") from None
