"""Wagers, pay tables and the settlement of one bet against a finished round.

The permitted wagers are those of N.J.A.C. 13:69F-3.2(a): Banker's Hand, Player's Hand, Tie, the card-count
wagers on 4, 5 or 6 cards, the optional bonus wager on either hand, and (no-vigorish variation only) the
dragon 7 wager. Panda 8 is an extension outside 3.2 (it would need Division approval, 3.2(b)) and is off
unless a table explicitly enables extensions. Pay tables are data, written "X to Y".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Mapping

from baccarat.cards import Hand
from baccarat.errors import UnknownWager
from baccarat.money import CommissionMode, Odds, require_cents
from baccarat.round import Outcome, Winner

if TYPE_CHECKING:  # pragma: no cover
    from baccarat.table import TableConfig


class Wager(Enum):
    """Every wager the engine knows, with its stable snake_case name."""

    BANKER = "banker"  # 13:69F-3.2(a)1
    PLAYER = "player"  # 3.2(a)2
    TIE = "tie"  # 3.2(a)3
    CARDS_4 = "cards_4"  # 3.2(a)4
    CARDS_5 = "cards_5"
    CARDS_6 = "cards_6"
    BONUS_PLAYER = "bonus_player"  # 3.2(a)5
    BONUS_BANKER = "bonus_banker"
    DRAGON_7 = "dragon_7"  # 3.2(a)6.ii
    PANDA_8 = "panda_8"  # extension, outside 3.2
    #: chemin de fer: a wager of the whole bank by one participant, the wager of 13:69F-4.8(c) that makes the
    #: Dominant Player (read as 4.7(b)-(c)); it is settled like a wager against the Banker on the Player's Hand
    BANCO = "banco"
    #: chemin de fer: banco again by the participant whose banco lost the last round against the same Banker,
    #: who has precedence over every other wager (common practice [U]); settled like ``banco``
    BANCO_SUIVI = "banco_suivi"

    @classmethod
    def parse(cls, name: str) -> "Wager":
        """The wager named ``name`` (e.g. ``"bonus_player"``); raises :class:`UnknownWager` listing the names."""
        try:
            return cls(name.strip().lower())
        except ValueError:
            raise UnknownWager(f"unknown wager {name!r}; known: {', '.join(w.value for w in cls)}") from None


CARD_COUNT_WAGERS = frozenset({Wager.CARDS_4, Wager.CARDS_5, Wager.CARDS_6})
BONUS_WAGERS = frozenset({Wager.BONUS_PLAYER, Wager.BONUS_BANKER})
MAIN_WAGERS = frozenset({Wager.BANKER, Wager.PLAYER})
PANDA_AND_DRAGON = frozenset({Wager.DRAGON_7, Wager.PANDA_8})
EXTENSION_WAGERS = frozenset({Wager.PANDA_8})
#: chemin de fer: the wagers of the whole bank (the "13:69F-7.7(b) or (c)" wagers of 4.8(c), read as 4.7(b)-(c))
BANCO_WAGERS = frozenset({Wager.BANCO, Wager.BANCO_SUIVI})
#: chemin de fer: every wager against the Banker (all on the Player's Hand)
AGAINST_THE_BANK = frozenset({Wager.PLAYER}) | BANCO_WAGERS
_CARD_COUNT = {Wager.CARDS_4: 4, Wager.CARDS_5: 5, Wager.CARDS_6: 6}


class BetResult(Enum):
    """A settled bet: paid, collected, or returned (void)."""

    WIN = "win"
    LOSE = "lose"
    VOID = "void"


#: Bonus-wager classes for one side, 13:69F-3.2(a)5: the win/lose/void matrix plus the winning margin.
BONUS_CLASSES = (
    "natural_win",
    "natural_tie",
    "win_by_4",
    "win_by_5",
    "win_by_6",
    "win_by_7",
    "win_by_8",
    "win_by_9",
    "lose",
)


def bonus_class(outcome: Outcome, side: Hand) -> str:
    """Classify a round for a bonus wager on ``side`` (13:69F-3.2(a)5).

    Returns one of :data:`BONUS_CLASSES`: ``natural_win`` (the side is a natural and the other is not, or a
    natural 9 over a natural 8), ``natural_tie`` (both naturals with equal counts: void), ``win_by_k`` (the
    side is not a natural and wins by k = 4..9 points), else ``lose`` (including a non-natural win by 1–3
    and every case where the other side has a natural the side does not beat).
    """
    if side is Hand.PLAYER:
        s_nat, o_nat = outcome.player_natural, outcome.banker_natural
        s_pts, o_pts = outcome.player_points, outcome.banker_points
    else:
        s_nat, o_nat = outcome.banker_natural, outcome.player_natural
        s_pts, o_pts = outcome.banker_points, outcome.player_points
    if s_nat:
        if not o_nat or s_pts > o_pts:
            return "natural_win"
        return "natural_tie" if s_pts == o_pts else "lose"
    margin = s_pts - o_pts
    if margin >= 4:
        return f"win_by_{margin}"
    return "lose"


def _odds_map(table: Mapping[str, str]) -> dict[str, Odds]:
    return {k: Odds.parse(v) for k, v in table.items()}


#: The standard "Dragon Bonus" table (digest §1.4 [U]): natural win 1 to 1, natural tie void, 9 → 30 to 1 …
BONUS_STANDARD: Mapping[str, Odds] = _odds_map(
    {
        "natural_win": "1 to 1",
        "win_by_9": "30 to 1",
        "win_by_8": "10 to 1",
        "win_by_7": "6 to 1",
        "win_by_6": "4 to 1",
        "win_by_5": "2 to 1",
        "win_by_4": "1 to 1",
    }
)
#: One casino's published alternative (cypressbayou.com): 9 → 30, 8 → 10, 6–7 → 4, 4–5 → 2.
BONUS_ALTERNATIVE: Mapping[str, Odds] = _odds_map(
    {
        "natural_win": "1 to 1",
        "win_by_9": "30 to 1",
        "win_by_8": "10 to 1",
        "win_by_7": "4 to 1",
        "win_by_6": "4 to 1",
        "win_by_5": "2 to 1",
        "win_by_4": "2 to 1",
    }
)


@dataclass(frozen=True, slots=True)
class PayTable:
    """A table's payout odds for every wager ("X to Y"; profit = stake × X / Y).

    Defaults: Player 1 to 1 (3.3(a)); Banker 1 to 1 before commission (standard tables then take the
    commission; 19 to 20 overall, 3.3(c) [P]); Tie 8 to 1 (3.3(b) minimum); card count 4/5/6 cards
    3 to 2 / 2 to 1 / 2 to 1 (odds-and-roads.md §2, [U]); bonus: :data:`BONUS_STANDARD` ([U]);
    dragon 7 40 to 1 ([U]); panda 8 25 to 1 (extension).
    """

    player: Odds = Odds(1, 1)
    banker: Odds = Odds(1, 1)
    tie: Odds = Odds(8, 1)
    cards_4: Odds = Odds(3, 2)
    cards_5: Odds = Odds(2, 1)
    cards_6: Odds = Odds(2, 1)
    bonus: Mapping[str, Odds] = field(default_factory=lambda: dict(BONUS_STANDARD))
    dragon_7: Odds = Odds(40, 1)
    panda_8: Odds = Odds(25, 1)

    def odds_for(self, wager: Wager, category: str | None = None) -> Odds:
        """The odds a winning ``wager`` pays; bonus wagers need their winning ``category``."""
        if wager in BONUS_WAGERS:
            assert category is not None
            return self.bonus[category]
        if wager in BANCO_WAGERS:  # chemin de fer: the bank pays a winning banco as it pays the Player's Hand
            return self.player
        return getattr(self, wager.value)


@dataclass(frozen=True, slots=True)
class Settlement:
    """One bet settled, all money in cents.

    * ``win``: gross winnings at the pay odds (0 unless ``result`` is WIN);
    * ``commission``: commission charged on this bet, either deducted from the payout or, when
      ``commission_accrued``, owed by the seat (commission box) and collected later;
    * ``payout``: cents handed to the patron now: ``stake + win - deducted commission`` on a win, ``stake``
      on a void, 0 on a loss;
    * ``category``: why (``banker_wins``, ``tie_push``, ``natural_win``, ``win_by_9``, ``dragon_7_void`` …).

    Money is conserved: ``payout + house_net == stake + accrued`` where ``house_net`` is the house's gain
    including the commission owed; the patron's net is exactly the negative of the house's.
    """

    wager: Wager
    stake: int
    result: BetResult
    category: str
    odds: Odds | None
    win: int
    commission: int
    commission_accrued: bool
    payout: int

    @property
    def commission_owed(self) -> int:
        """Commission accrued to the seat by this bet (0 when deducted at payout)."""
        return self.commission if self.commission_accrued else 0

    @property
    def patron_net(self) -> int:
        """The patron's gain (negative: loss) in cents, counting commission owed."""
        return self.payout - self.stake - self.commission_owed

    @property
    def house_net(self) -> int:
        """The house's gain in cents: exactly ``-patron_net``."""
        return self.stake - self.payout + self.commission_owed


def outcome_category(wager: Wager, outcome: Outcome, *, no_vig: bool, tie_pushes_main_bets: bool = True
                     ) -> tuple[BetResult, str]:
    """Win/lose/void of ``wager`` on ``outcome`` and the category naming why (13:69F-3.2(a), digest §1.11).

    ``no_vig``: the no-vigorish variation of 3.3(h), where a Banker's Hand wager is void on a dragon 7
    hand (3.2(a)6.i). ``tie_pushes_main_bets``: Banker/Player wagers are returned on a tie (3.2(a)1–2;
    configurable for casino night, 13:47-20.20 is silent).
    """
    w = outcome.winner
    if wager in BANCO_WAGERS:  # chemin de fer: against the Banker, on the Player's Hand
        wager = Wager.PLAYER
    if wager in MAIN_WAGERS:
        side = Winner.BANKER if wager is Wager.BANKER else Winner.PLAYER
        if w is Winner.TIE:
            return (BetResult.VOID, "tie_push") if tie_pushes_main_bets else (BetResult.LOSE, "tie_loses")
        if w is side:
            if wager is Wager.BANKER and no_vig and outcome.dragon_7:
                return BetResult.VOID, "dragon_7_void"
            return BetResult.WIN, f"{side.value}_wins"
        return BetResult.LOSE, f"{w.value}_wins"
    if wager is Wager.TIE:
        return (BetResult.WIN, "tie") if w is Winner.TIE else (BetResult.LOSE, f"{w.value}_wins")
    if wager in CARD_COUNT_WAGERS:
        n = outcome.cards_required
        return (BetResult.WIN if n == _CARD_COUNT[wager] else BetResult.LOSE), f"{n}_cards"
    if wager in BONUS_WAGERS:
        cls = bonus_class(outcome, Hand.PLAYER if wager is Wager.BONUS_PLAYER else Hand.BANKER)
        if cls == "natural_tie":
            return BetResult.VOID, cls
        return (BetResult.LOSE if cls == "lose" else BetResult.WIN), cls
    if wager is Wager.DRAGON_7:
        return (BetResult.WIN, "dragon_7") if outcome.dragon_7 else (BetResult.LOSE, "no_dragon_7")
    if wager is Wager.PANDA_8:
        return (BetResult.WIN, "panda_8") if outcome.panda_8 else (BetResult.LOSE, "no_panda_8")
    raise UnknownWager(f"no settlement rule for {wager!r}")  # pragma: no cover - enum is exhaustive


def settle(wager: Wager, stake: int, outcome: Outcome, table: "TableConfig") -> Settlement:
    """Settle one bet of ``stake`` cents on ``wager`` against ``outcome`` under ``table``'s rules.

    Commission (13:69F-3.3(c) [P]; 13:47-20.20(d)) is ``rate × win`` rounded by the table's named
    rounding policy, and on a regulated table (:attr:`TableConfig.commission_capped`) never above
    ``rate × win`` (rounded down where the policy would round up: toward the patron); it is deducted from the payout or accrued to the seat per ``table.commission_mode``.
    Raises :class:`baccarat.errors.InvalidAmount` for a stake that is not positive whole cents and
    :class:`baccarat.errors.WagerNotOffered` for a wager the table does not offer.
    """
    require_cents(stake, "stake")
    table.require_offered(wager)
    result, category = outcome_category(
        wager, outcome, no_vig=table.no_vig, tie_pushes_main_bets=table.tie_pushes_main_bets
    )
    if result is BetResult.LOSE:
        return Settlement(wager, stake, result, category, None, 0, 0, False, 0)
    if result is BetResult.VOID:
        return Settlement(wager, stake, result, category, None, 0, 0, False, stake)
    odds = table.pay.odds_for(wager, category)
    win = table.rounding.win(stake * odds.ratio)
    rate = table.commission_rate_for(wager)
    commission = table.rounding.commission(win * rate, at_most=table.commission_capped) if rate else 0
    commission = min(commission, win)
    accrued = commission > 0 and table.commission_mode is CommissionMode.ACCRUE
    payout = stake + win - (0 if accrued else commission)
    return Settlement(wager, stake, result, category, odds, win, commission, accrued, payout)


