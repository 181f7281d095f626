"""The dealing service's state (pure data): one table's configuration, its shoe's progress and the one round in
progress (:class:`DealingState`, :class:`RoundState`), the irregularity kinds a card can be recorded under, and
the small helpers the decisions share (the round's card cursor, the ``DrawCard`` ids, a refusal).

:class:`services.dealing.core.DealingCore` folds and decides over it; the curator's commands are
:mod:`services.dealing.curator`'s, a chemin de fer round's :mod:`services.dealing.chemin`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from baccarat import round as R
from baccarat.shoe import EndOfShoePolicy, refusal
from baccarat.table import TableConfig
from contracts.envelope import CommandEnvelope, derived_command_id
from contracts.events import CommandRejected
from contracts.tables import TableSpec
from services.configs import config_of
from services.dealing import chemin as CH
from services.history import History
from services.runtime.core import Emit, Send

INITIAL_CARDS = 4
#: Irregularity kind of a Player third card the rules did not allow (13:69F-3.12(a))
MISDEAL = "unauthorised_player_third_card"
#: a card of the round reported before its "No more bets" (13:69F-3.2(d), 3.7(b))
EARLY = "card_before_no_more_bets"
#: a card reported with a card number that skips the next card of the round (13:69F-3.7: one after another)
OUT_OF_ORDER = "card_out_of_order"
#: a card reported on the hand the rules do not give it (13:69F-3.7 for the first four, Tables 1–2 after)
WRONG_HAND = "card_on_wrong_hand"
#: a card reported after the round had every card it is entitled to, or after it was voided (3.9, 3.10(a))
AFTER_END = "card_after_round_ended"
#: the kinds whose card is not a card of the round (skipped by the deal and by the audit's re-derivation),
#: unless the disposition is ``dealt_by_the_rules``
CARD_KINDS = frozenset({EARLY, OUT_OF_ORDER, WRONG_HAND, AFTER_END})
#: ``TableSpec.irregularity_handling``: what an irregularity the texts read do not settle does to the round
HANDLINGS = ("void_round", "record_only")


@dataclass(frozen=True, slots=True)
class ShoeProgress:
    """What dealing knows of the table's shoe (from ``shoe.events``): enough to apply the end-of-shoe policy."""

    shoe_id: str
    policy: EndOfShoePolicy
    cards_left: int
    #: number (within the shoe) of the round in which the end-of-shoe cutting card came out
    cutting_card_round: int | None = None
    closed: bool = False
    finished: bool = False


@dataclass(frozen=True, slots=True)
class Drawn:
    """A card the shoe handed out for a round, with the event that carried it and, for a physical shoe, the
    hand the dealer placed it on."""

    card: str
    event_id: str
    at: datetime
    dealt_to: str = ""


@dataclass(frozen=True, slots=True)
class RoundState:
    """The round in progress: the rules core's :class:`baccarat.round.Deal` plus the I/O bookkeeping."""

    round_id: str
    shoe_id: str
    number: int
    deal: R.Deal
    status: str = "betting"  # betting | dealing | resolved | voided
    closed_by: tuple[str, datetime] | None = None  # the BettingClosed event
    requested: int = 0
    received: dict[int, Drawn] = field(default_factory=dict)
    #: the cursor: card numbers up to ``dealt`` are consumed (dealt, or discarded under 3.12(a)); numbers in
    #: ``skipped`` are cards recorded as an :class:`Irregularity` that are not cards of the round
    dealt: int = 0
    skipped: frozenset[int] = frozenset()
    announced: bool = False
    failed: str = ""
    #: chemin de fer (:mod:`services.dealing.chemin`): the Banker, the closed book, the Dominant Player, the
    #: option offered and not yet decided
    chem: CH.ChemRound | None = None


@dataclass(frozen=True, slots=True)
class DealingState:
    """One table's dealing: the configuration, the shoe's progress and the one round in progress.

    Only the current round is kept in full (:class:`RoundState`): dealing opens a round only after the last
    one ended, and nothing about an ended round is decided again. What must outlive a round is in two
    :class:`History` maps (O(log n) per round, see :mod:`services.history`): ``round_numbers`` (every round
    id played here → its number within its shoe: a re-used id is refused ``duplicate_round`` however old, and
    the round in which the cutting card came out is looked up by id) and ``shoe_rounds`` (rounds started per
    shoe id). ``spec`` is the wire configuration; :attr:`config` derives the rules core's one.
    """

    table_id: str
    spec: TableSpec | None = None
    shoe: ShoeProgress | None = None
    round: RoundState | None = None
    #: every round played at the table → its number within its shoe (from our own RoundOpened events)
    round_numbers: History = field(default_factory=History)
    #: rounds started per shoe id
    shoe_rounds: History = field(default_factory=History)
    #: the player registry (seat, player id), from ``wagering.events``: the participants the shoe passes among
    seated: frozenset[tuple[int, str]] = frozenset()
    #: the curator (seat, player id) holding the shoe (None: the dealer holds it)
    curator: tuple[int, str] | None = None
    #: the round whose keep-or-pass decision is due from the curator (resolved, the Banker's Hand did not lose)
    curator_due: str = ""
    #: the latest round resolved here: (round id, winner)
    last_resolved: tuple[str, str] = ("", "")
    #: chemin de fer: the last resolved round's Banker and bank (:class:`services.dealing.chemin.LastBank`)
    last_bank: CH.LastBank | None = None
    #: chemin de fer: the last closed book's (round id, cents wagered against the bank), from ``BettingClosed``
    #: (an input: a rebuild folds it after our own events, so it is kept apart from ``last_bank``)
    last_wagers: tuple[str, int] | None = None

    @property
    def config(self) -> TableConfig | None:
        """The rules core's table configuration (None until ``TableOpened``)."""
        return config_of(self.spec) if self.spec is not None else None

    def rounds_started(self, shoe_id: str) -> int:
        return self.shoe_rounds.get(shoe_id, 0) or 0

    def refusal(self) -> str | None:
        """Why no round may start now on the table's shoe (None: one may)."""
        sh = self.shoe
        if sh is None:
            return "no_open_shoe"
        return refusal(sh.cards_left, self.rounds_started(sh.shoe_id), sh.cutting_card_round, sh.policy)


def _next_number(rs: RoundState) -> int:
    """The card number the round's next card has: the first after the cursor that is not skipped."""
    n = rs.dealt + 1
    while n in rs.skipped:
        n += 1
    return n


def _numbers_ahead(rs: RoundState, k: int) -> list[int]:
    """The next ``k`` card numbers of the round (after the cursor, skipped ones left out)."""
    out: list[int] = []
    n = rs.dealt
    while len(out) < k:
        n += 1
        if n not in rs.skipped:
            out.append(n)
    return out


def _handling(state: DealingState) -> str:
    """The table's ``irregularity_handling`` (``void_round`` when the spec predates the setting)."""
    return state.spec.irregularity_handling if state.spec is not None else "void_round"


def _draw_id(table_id: str, round_id: str, n: int) -> str:
    """The deterministic id of the ``DrawCard`` for card ``n`` of a round (the shoe drops re-sends)."""
    return derived_command_id("draw", table_id, round_id, n)


def _reject(cmd: CommandEnvelope, reason: str, detail: str) -> list[Emit | Send]:
    tag = type(cmd.payload).__struct_config__.tag
    return [Emit(CommandRejected(command_id=cmd.command_id, command=tag, reason=reason, detail=detail))]
