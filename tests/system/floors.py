"""Floors as short as what a system test checks (issue 27: CI within 20 minutes).

A full 8-deck shoe is about 80 rounds; most system tests prove something of every round (dealt, settled,
audited, folded) and need a shoe's end only to see the cutting card, the last round and the reveal. A *short
shoe* is an 8-deck shoe (the regulated size, 13:69F-3.1(a)) whose end-of-shoe cutting card stands
``cards`` cards in instead of 14 from the back (``ShoeRules.end_card_offset``, configuration: rules digest),
so the same end of shoe comes after about ``cards / 5`` rounds.
"""

from __future__ import annotations

from dataclasses import replace

from baccarat.shoe import ShoeRules
from baccarat.table import TableConfig
from contracts.commands import ShoeSpec

#: cards before a short shoe's cutting card: after the burn (up to 11 cards), about 12 rounds (a round takes
#: 4 to 6 cards, 4.94 on average), so a floor of two tables deals about 25
SHORT_SHOE_CARDS = 70


def short_rules(rules: ShoeRules = ShoeRules(), cards: int = SHORT_SHOE_CARDS) -> ShoeRules:
    """``rules`` with the end-of-shoe cutting card ``cards`` cards in (same decks, burn and cut rules)."""
    return replace(rules, end_card_offset=rules.size - cards)


def short_shoe(config: TableConfig, cards: int = SHORT_SHOE_CARDS) -> TableConfig:
    """``config`` dealing short shoes (see the module); everything else as it was."""
    return replace(config, shoe=short_rules(config.shoe, cards))


def short_spec(cards: int = SHORT_SHOE_CARDS) -> ShoeSpec:
    """The ``LoadShoe`` rules of a short 8-deck shoe, for a test that loads its shoe by hand."""
    r = short_rules(cards=cards)
    return ShoeSpec(decks=r.decks, end_card_offset=r.end_card_offset, burn=r.burn.value,
                    end_of_shoe=r.end_of_shoe.value, min_cut_depth=r.min_cut_depth)
