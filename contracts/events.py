"""Events: what happened, past tense, explicit snake_case tags that are never reused.

Each event travels in a :class:`contracts.envelope.Envelope` (ids, stream, gapless per-table ``seq``,
causation and correlation, ``occurred_at`` taken from the command). Money is integer cents; cards are texts
like ``"Kd"`` (rank ``A 2-9 T J Q K``, suit ``c d h s``). New fields get defaults; consumers skip unknown
event types (see ``contracts/EVOLUTION.md``). Every string and list has a documented maximum (JSON Schema
``maxLength``/``maxItems``, :mod:`contracts.bounds`) that the producers guarantee; decoders do not enforce it,
so old log entries stay decodable.
"""

from __future__ import annotations

from typing import Annotated, Union

import msgspec

from contracts.bounds import (
    MAX_BETS_PER_ROUND,
    EvBurned,
    EvCard,
    EvCards,
    EvCode,
    EvDetail,
    EvHand,
    EvHex,
    EvId,
    EvSealed,
    EvText,
)
from contracts.tables import ShoeSpec, TableSpec


from contracts.base import Event  # noqa: E402  (re-exported: the base of every event)


class CommandRejected(Event, frozen=True, tag="command_rejected"):
    """A command refused by a service. ``reason`` is a stable code (``unknown_table``, ``shoe_complete``,
    ``invalid_config`` …; chemin de fer options: ``not_controller``, ``actor_mismatch``, ``no_option_pending``,
    ``option_out_of_turn``, ``option_not_expired``, ``option_expired``, ``unknown_hand``; its rounds: ``no_banker``,
    ``unknown_player``, ``bank_out_of_limits``, ``bank_must_pass``, ``bank_must_stay_in_play``,
    ``bank_over_max_must_pass``, ``not_chemin_de_fer``; the shoe: ``card_out_of_bounds``, ``round_not_dealing``,
    ``round_in_play``); ``detail`` says what exactly was
    wrong; ``command`` is the command's tag."""

    command_id: EvId
    command: EvCode
    reason: EvCode
    detail: EvDetail = ""


# ---- shoe.events -----------------------------------------------------------------------------------
class ShoeLoaded(Event, frozen=True, tag="shoe_loaded"):
    """A shoe was loaded. ``commitment`` = SHA-256 hex of the card order and salt (see ``ShoeClosed``),
    recorded before the first card so anyone can verify the order was fixed; empty for a physical shoe.
    ``source``: ``csprng`` | ``supplied`` | ``physical``."""

    shoe_id: EvId
    rules: ShoeSpec
    cards: int
    source: EvCode
    commitment: EvHex = ""


class ShoeCut(Event, frozen=True, tag="shoe_cut"):
    """The patron's cut: ``cut_at`` cards moved from the front to the back."""

    shoe_id: EvId
    cut_at: int


class ShoeBurned(Event, frozen=True, tag="shoe_burned"):
    """The burn: ``exposed`` was shown face up, then ``burned`` went to the discard rack face down.
    ``burned`` is surveillance information; the public view knows only ``exposed`` and ``burned_count``."""

    shoe_id: EvId
    exposed: EvCard
    burned_count: int
    burned: EvBurned = msgspec.field(default_factory=list)


class CardDrawn(Event, frozen=True, tag="card_drawn"):
    """A card left the shoe for ``round_id`` as its ``card_number``-th card (1-based). ``position``: index
    in the shoe after the cut, 0-based. ``cutting_card_out``: the end-of-shoe cutting card came out just
    before this card. ``cards_left``: cards still in the shoe after it."""

    shoe_id: EvId
    round_id: EvId
    card_number: int
    card: EvCard
    position: int
    cards_left: int
    cutting_card_out: bool = False
    #: where the dealer placed the card, when a physical shoe's reader says (``player`` | ``banker``)
    dealt_to: EvCode = ""
    #: chemin de fer, a physical shoe's card read: the person who keyed the read at the console (the command's
    #: actor, the dealer) when it is not the one who dealt the card; the envelope's ``actor`` is then the
    #: Banker of the round, who deals (13:69F-4.8(d)). ``""``: the envelope's actor keyed it (or a drawn card)
    keyed_by: EvId = ""


class CardReadRefused(Event, frozen=True, tag="card_read_refused"):
    """An impossible card read from a physical shoe (no copy left): recorded as an irregularity."""

    shoe_id: EvId
    round_id: EvId
    card_number: int
    card: EvCard
    reason: EvDetail


class ShoeClosed(Event, frozen=True, tag="shoe_closed"):
    """The shoe closed; the reveal: ``order`` (as loaded, before the cut) and ``salt`` (hex) hash to the
    commitment of ``ShoeLoaded``: ``sha256(salt_bytes + ",".join(order).encode())``. ``cards_dealt``: cards
    that left the shoe, the burn included (the shoe's position when it closed)."""

    shoe_id: EvId
    reason: EvText
    cards_dealt: int
    order: EvCards = msgspec.field(default_factory=list)
    salt: EvHex = ""


class ShoeOrderSealed(Event, frozen=True, tag="shoe_order_sealed"):
    """Deprecated: no longer written (it held the order and salt in clear; superseded by
    :class:`ShoeOrderEncrypted`). Old ``shoe.vault`` records still decode and rebuild their shoe.

    ``shoe.vault`` only (read by the shoe service alone): the order as loaded and the salt, kept so the
    shoe service can rebuild; published to everyone only by ``ShoeClosed``."""

    shoe_id: EvId
    order: EvCards
    salt: EvHex


class ShoeOrderEncrypted(Event, frozen=True, tag="shoe_order_encrypted"):
    """``shoe.vault`` only: the order as loaded and the salt, encrypted (AES-256-GCM) under the shoe
    service's vault key ``key_id``, so the shoe service can rebuild and an auditor with the key can check
    the reveal; without the key the record tells nothing. ``nonce``: 12 bytes hex; ``ciphertext``: the
    sealed JSON ``{"salt", "order"}`` with its 16-byte tag (base64 in JSON). Format and associated data
    (table id, shoe id, key id): :mod:`contracts.vault`."""

    shoe_id: EvId
    key_id: EvId
    nonce: EvHex
    ciphertext: EvSealed


# ---- dealing.events --------------------------------------------------------------------------------
class TableOpened(Event, frozen=True, tag="table_opened"):
    """The table's configuration (validated by the rules core) is in force from here on."""

    config: TableSpec


class RoundOpened(Event, frozen=True, tag="round_opened"):
    """A round opened on ``shoe_id``; ``number`` counts rounds of the shoe from 1. Chemin de fer: the Banker
    (``banker_seat``, ``banker_player_id``) and the bank in cents; 0 and ``""`` at the other games."""

    round_id: EvId
    shoe_id: EvId
    number: int
    banker_seat: int = 0
    banker_player_id: EvId = ""
    bank_cents: int = 0


class DominantPlayerChosen(Event, frozen=True, tag="dominant_player_chosen"):
    """Chemin de fer, at "No more bets": the participant who controls the Player's Hand (13:69F-4.8(c)).
    ``rule``: ``banco`` (a banco wager, 4.8(c) first sentence), ``highest_wager``, or the tie break of equally
    high wagers (``nearest_counter_clockwise`` 4.8(c), ``first_wager`` on an unregulated table);
    ``wager_cents``: the participant's wagers against the Banker in the round."""

    round_id: EvId
    seat: int
    player_id: EvId
    wager_cents: int
    rule: EvCode


class CardsCalled(Event, frozen=True, tag="cards_called"):
    """Chemin de fer: the dealer announces "Cards" and the Banker deals the initial four cards (13:69F-4.8(d)),
    after the Dominant Player is chosen and before the first card. ``banker_seat`` / ``banker_player_id``: the
    Banker who deals (every card of the round is dealt by that participant); ``rule``: ``13:69F-4.8(d)``."""

    round_id: EvId
    banker_seat: int
    banker_player_id: EvId
    rule: EvCode = "13:69F-4.8(d)"


class OptionOffered(Event, frozen=True, tag="option_offered"):
    """Chemin de fer: the round reached an option cell (``cell``: ``player_5``, ``banker_3_9``,
    ``banker_4_1``, ``banker_5_4``; ``row``/``column`` as in ``CardDealt``) of ``hand``; its controller
    (``seat``, ``player_id``: 13:69F-4.8(b)-(c)) decides by ``DecideOption``; from the deadline, this event's
    ``occurred_at`` (the log's time of the card that made it due) plus ``option_seconds`` (the table's), an
    ``ExpireOption`` applies ``default_draw``."""

    round_id: EvId
    hand: EvCode
    cell: EvCode
    row: int
    column: EvCode
    seat: int
    player_id: EvId
    option_seconds: int
    default_draw: bool


class OptionDecided(Event, frozen=True, tag="option_decided"):
    """Chemin de fer: the option of ``hand`` decided, ``draw`` (True) or stand; ``by``: ``participant``
    (the controller's ``DecideOption``) or ``default`` (the table's configured default, on ``ExpireOption``);
    ``seat``/``player_id``: the controller."""

    round_id: EvId
    hand: EvCode
    cell: EvCode
    draw: bool
    by: EvCode
    seat: int
    player_id: EvId


class CardDealt(Event, frozen=True, tag="card_dealt"):
    """A card went to a hand. ``hand``: ``player`` | ``banker``; ``position`` within the hand (1–3);
    ``rule``: ``initial`` | ``table_1`` | ``table_2``; ``row``/``column``: the table cell that required
    it; ``source``: the regulation; ``why``: the same in words."""

    round_id: EvId
    card: EvCard
    hand: EvCode
    position: int
    rule: EvCode
    source: EvDetail
    why: EvDetail
    row: int | None = None
    column: EvCode | None = None


class PointsAnnounced(Event, frozen=True, tag="points_announced"):
    """After the first four cards: both point counts and whether either is a natural (13:69F-3.8(a))."""

    round_id: EvId
    player_points: int
    banker_points: int
    natural: bool


class Irregularity(Event, frozen=True, tag="irregularity"):
    """Something dealt outside the rules and how it was handled (13:69F-3.12). ``kind``
    ``unauthorised_player_third_card``: ``disposition`` ``banker_third`` (Table 2 obliged the Banker to draw,
    decided as if the Player had stood: the card is the Banker's third, dealt next) or ``discarded``.
    ``card_before_no_more_bets`` (3.2(d), 3.7(b)), ``card_out_of_order`` (3.7), ``card_on_wrong_hand`` (3.7,
    Tables 1–2) and ``card_after_round_ended`` (3.9, 3.10(a)): ``disposition`` ``round_voided`` (a
    ``RoundVoided`` follows), ``discarded`` (the card is not a card of the round) or ``dealt_by_the_rules``
    (a wrong-hand card dealt where the rules say, by the ``CardDealt`` that follows), as the table's
    ``irregularity_handling`` says. ``rule``: the regulation the card broke."""

    round_id: EvId
    kind: EvCode
    detail: EvDetail
    card: EvCard = ""
    card_number: int = 0
    disposition: EvCode = ""
    rule: EvDetail = ""


class RoundResolved(Event, frozen=True, tag="round_resolved"):
    """The result (13:69F-3.10(a)): both hands, point counts, the winner (``player`` | ``banker`` |
    ``tie``), naturals, cards the rules required, dragon 7 and panda 8."""

    round_id: EvId
    shoe_id: EvId
    player_cards: EvHand
    banker_cards: EvHand
    player_points: int
    banker_points: int
    winner: EvCode
    player_natural: bool
    banker_natural: bool
    cards_required: int
    dragon_7: bool
    panda_8: bool


class RoundVoided(Event, frozen=True, tag="round_voided"):
    """The round is void: every bet on it is returned."""

    round_id: EvId
    reason: EvText


class ShoeFinished(Event, frozen=True, tag="shoe_finished"):
    """The end-of-shoe policy allows no further round on ``shoe_id`` (the cutting card is out)."""

    shoe_id: EvId
    rounds: int


class ShoeOffered(Event, frozen=True, tag="shoe_offered"):
    """The dealer calling the game offered the shoe to a participant, who holds it from here on as the curator
    (13:69F-3.6(b)); only on a table with a curator (``TableSpec.curator``). ``seat``/``player_id``: the
    participant; ``rule``: the regulation."""

    seat: int
    player_id: EvId
    rule: EvDetail = "13:69F-3.6(b)"


class ShoeKept(Event, frozen=True, tag="shoe_kept"):
    """After ``round_id`` the curator at ``seat``/``player_id`` kept the shoe (13:69F-3.11(a): the curator's
    option, the Banker's Hand did not lose). ``reason``: ``curator_kept`` (the curator said so) |
    ``next_round_opened`` (the next round opened before the curator passed: the shoe stayed)."""

    round_id: EvId
    seat: int
    player_id: EvId
    reason: EvCode


class ShoePassed(Event, frozen=True, tag="shoe_passed"):
    """The shoe passed from the curator ``from_seat``/``from_player_id`` to the next participant
    ``to_seat``/``to_player_id`` (the next seat in seat order among the registered players, one a seat;
    ``0``/``""``: none left, the dealer holds the shoe until it is offered again). ``round_id``: the round
    after which it passed (``""`` for an order between rounds before the first). ``reason``: ``banker_lost``
    (13:69F-3.11(a)1: the curator must pass whenever the Banker's Hand loses) | ``curator_passed`` (the
    curator's option, 3.11(a)) | ``dealer_ordered`` | ``floorman_ordered`` (3.11(a)2) | ``curator_left`` (the
    curator left the table). ``rule``: the regulation."""

    round_id: EvId
    from_seat: int
    from_player_id: EvId
    to_seat: int
    to_player_id: EvId
    reason: EvCode
    rule: EvDetail = ""


# ---- wagering.events -------------------------------------------------------------------------------
class BettingOpened(Event, frozen=True, tag="betting_opened"):
    """Bets are taken for ``round_id``."""

    round_id: EvId


class PlayerSeated(Event, frozen=True, tag="player_seated"):
    """``player_id`` is registered at ``seat``: their bets are taken there."""

    seat: int
    player_id: EvId


class PlayerLeft(Event, frozen=True, tag="player_left"):
    """``player_id`` left ``seat``: no further bet of theirs is taken there."""

    seat: int
    player_id: EvId


class BetPlaced(Event, frozen=True, tag="bet_placed"):
    """A bet accepted; ``bet_id`` is the id of the ``PlaceBet`` command."""

    round_id: EvId
    bet_id: EvId
    seat: int
    player_id: EvId
    wager: EvCode
    amount_cents: int


class BetRejected(Event, frozen=True, tag="bet_rejected"):
    """A bet refused. ``reason``: ``betting_closed``, ``betting_not_open``, ``wager_not_offered``,
    ``unknown_wager``, ``under_table_min``, ``over_table_max``, ``invalid_amount``, ``invalid_seat``,
    ``bonus_needs_base_bet``, ``unknown_bet``, ``unknown_round``, ``bonus_depends_on_bet`` (a withdrawal of the
    base bet a bonus bet on the seat needs), ``stake_not_multiple_of_unit``, ``too_many_bets``,
    ``unknown_player`` (not registered at the seat: ``SeatPlayer``), ``actor_mismatch`` (a terminal betting
    for a player other than the one it names as its actor), ``not_your_bet`` (a withdrawal of another
    player's bet); chemin de fer: ``no_bank``, ``banker_cannot_wager``, ``bank_cannot_cover`` (the wagers
    against the bank would exceed it), ``banco_needs_whole_bank``, ``banco_called``, ``no_banco_suivi``."""

    round_id: EvId
    command_id: EvId
    reason: EvCode
    detail: EvDetail
    seat: int = 0
    player_id: EvId = ""
    wager: EvCode = ""
    amount_cents: int = 0


class BetWithdrawn(Event, frozen=True, tag="bet_withdrawn"):
    """A bet out of the round's book; its stake is returned. ``reason``: ``""`` the player took it back
    before "No more bets" (``WithdrawBet``); ``betting_closed`` the log holds it after the call (its
    ``PlaceBet`` was appended after the ``CloseBetting``, though read before it), so the call returns it
    (13:69F-3.2(d)); ``banco_suivi`` chemin de fer: the participant whose banco lost the last round called
    banco suivi, which takes the whole bank and returns every other wager of the round (at "No more bets");
    ``banco_not_first`` chemin de fer: a banco the log holds after another wager of the round, read before it,
    is returned at "No more bets" (a banco is the whole bank before any other wager)."""

    round_id: EvId
    bet_id: EvId
    reason: EvCode = ""


class BetLine(msgspec.Struct, frozen=True):
    """One bet of a closed bet book."""

    bet_id: EvId
    seat: int
    player_id: EvId
    wager: EvCode
    amount_cents: int


#: a round's bet book: the wagering service takes at most MAX_BETS_PER_ROUND bets a round (``too_many_bets``)
BetBook = Annotated[list[BetLine], msgspec.Meta(extra_json_schema={"maxItems": MAX_BETS_PER_ROUND})]


class BettingClosed(Event, frozen=True, tag="betting_closed"):
    """ "No more bets": the round's bet book, final (13:69F-3.2(d)). Chemin de fer: ``banker_player_id`` the
    participant holding the round's bank (from its ``RoundOpened``), so that a replay of the wagering service's
    own events alone knows whose bank a banco was against (banco suivi, 4.8); ``""`` at the other games and in
    records written before the field existed."""

    round_id: EvId
    bets: BetBook
    banker_player_id: EvId = ""


# ---- settlement.events -----------------------------------------------------------------------------
class BetSettled(Event, frozen=True, tag="bet_settled"):
    """One bet settled. ``result``: ``win`` | ``lose`` | ``void``; ``payout``: cents handed back
    (stake + win − deducted commission on a win, stake on a void, 0 on a loss); ``commission``: cents,
    accrued to the seat when ``commission_accrued``; ``category`` says why."""

    round_id: EvId
    bet_id: EvId
    seat: int
    player_id: EvId
    wager: EvCode
    stake: int
    result: EvCode
    category: EvCode
    win: int
    commission: int
    commission_accrued: bool
    payout: int
    odds: EvCode = ""


class CommissionAccrued(Event, frozen=True, tag="commission_accrued"):
    """Commission owed by a seat grew by ``amount_cents``; ``owed_cents`` is the new total."""

    seat: int
    player_id: EvId
    amount_cents: int
    owed_cents: int
    round_id: EvId = ""


class CommissionCollected(Event, frozen=True, tag="commission_collected"):
    """The commission a seat owed was collected."""

    seat: int
    player_id: EvId
    amount_cents: int


class BankSettled(Event, frozen=True, tag="bank_settled"):
    """Chemin de fer: the bank's side of a settled round (cents). ``won_cents``: the wagers against the bank
    it took less what it paid (negative when the Banker's Hand lost); ``commission_cents``: the house's
    commission on a positive ``won_cents`` (rate and rounding of the table), accrued to the Banker's
    commission box when ``commission_accrued`` (a ``CommissionAccrued`` follows), else deducted now;
    ``bank_after_cents`` = bank + won − commission. The bettors' side is their ``BetSettled``."""

    round_id: EvId
    seat: int
    player_id: EvId
    bank_cents: int
    wagers_cents: int
    won_cents: int
    commission_cents: int
    commission_accrued: bool
    bank_after_cents: int


class RoundSettled(Event, frozen=True, tag="round_settled"):
    """Every bet of the round is settled. Totals in cents; ``table_result`` = stakes − payouts +
    commission accrued (the house's result for the round). Chemin de fer: the bets are against the bank, so
    the house's result is the commission on the bank's winnings (``BankSettled``), ``commission`` included."""

    round_id: EvId
    bets: int
    stakes: int
    payouts: int
    commission: int
    table_result: int


# ---- projection.odds / projection.ledger / projection.alerts ----------------------------------------
class WagerOdds(msgspec.Struct, frozen=True):
    """One wager's exact odds for the next round: probabilities of winning and of a void, and the expected
    value per unit staked, as a float and exactly (``ev_num / ev_den``)."""

    wager: EvCode
    p_win: float
    p_void: float
    ev: float
    ev_num: int
    ev_den: int


Composition = Annotated[list[int], msgspec.Meta(extra_json_schema={"maxItems": 10})]
#: outcome counts by name (banker, player, tie, card counts, bonus classes ...)
OutcomeCounts = Annotated[dict[EvCode, int], msgspec.Meta(extra_json_schema={"maxProperties": 64})]
WagerOddsList = Annotated[list[WagerOdds], msgspec.Meta(extra_json_schema={"maxItems": 16})]


class OddsUpdated(Event, frozen=True, tag="odds_updated"):
    """Exact odds of the next round after a change of the shoe (``trigger``: ``shoe_loaded`` | ``burn`` |
    ``card`` | ``round_opened``); ``step`` counts the shoe's changes (0 loaded, +1 per burn and card).
    ``view``: ``public`` (only cards seen at the table: burned cards face down
    are still counted as in the shoe) or ``surveillance`` (the true remaining composition).
    ``composition``: ten counts by value 0..9; ``counts``: integer outcome counts out of ``total`` =
    Permut(cards, 6) (odds-and-roads.md §1–§2)."""

    shoe_id: EvId
    view: EvCode
    trigger: EvCode
    step: int
    cards_out: int
    composition: Composition
    total: int
    counts: OutcomeCounts
    wagers: WagerOddsList
    round_id: EvId = ""


class LedgerLine(msgspec.Struct, frozen=True):
    """One line of a journal entry: ``amount_cents`` added to ``account`` (debits positive)."""

    account: EvText
    amount_cents: int


LedgerLines = Annotated[list[LedgerLine], msgspec.Meta(extra_json_schema={"maxItems": 16})]


class LedgerPosted(Event, frozen=True, tag="ledger_posted"):
    """A balanced journal entry of the cage ledger (the lines sum to zero). ``entry_id`` is derived from the
    source event, so a re-delivered event posts nothing new."""

    entry_id: EvId
    kind: EvCode
    source_event_id: EvId
    gaming_day: EvCode
    lines: LedgerLines
    shoe_id: EvId = ""
    round_id: EvId = ""
    seat: int = 0
    player_id: EvId = ""


class AdvantageBetFlagged(Event, frozen=True, tag="advantage_bet_flagged"):
    """Surveillance: a bet landed on a wager whose expected value in the surveillance view (the true
    remaining composition before the round's first card) was positive. ``ev``: per unit staked
    (``ev_num / ev_den`` exactly); ``expected_gain_cents``: stake × ev, rounded down."""

    round_id: EvId
    shoe_id: EvId
    bet_id: EvId
    seat: int
    player_id: EvId
    wager: EvCode
    stake_cents: int
    ev: float
    ev_num: int
    ev_den: int
    expected_gain_cents: int
    cards_left: int


from contracts.cage import (  # noqa: E402  (the cage's events)
    BoughtIn, ChipsRedeemed, CreditHandedOver, CreditLineSet, CreditReceived, CreditRequested, DropBoxCounted,
    DropBoxRemoved, FillIssued, FillReceived, FillRequested, MarkerIssued, MarkerRequested, ShiftClosed, ShiftOpened,
)

AnyEvent = Union[
    CommandRejected,
    ShoeLoaded, ShoeCut, ShoeBurned, CardDrawn, CardReadRefused, ShoeClosed, ShoeOrderSealed, ShoeOrderEncrypted,
    TableOpened, RoundOpened, CardDealt, PointsAnnounced, Irregularity, RoundResolved, RoundVoided, ShoeFinished,
    ShoeOffered, ShoeKept, ShoePassed,
    DominantPlayerChosen, CardsCalled, OptionOffered, OptionDecided, BankSettled,
    BettingOpened, BetPlaced, BetRejected, BetWithdrawn, BettingClosed, PlayerSeated, PlayerLeft,
    BetSettled, CommissionAccrued, CommissionCollected, RoundSettled,
    OddsUpdated, LedgerPosted, AdvantageBetFlagged,
    ShiftOpened, ShiftClosed, FillRequested, FillIssued, FillReceived, CreditRequested, CreditHandedOver,
    CreditReceived, CreditLineSet, BoughtIn, DropBoxRemoved, DropBoxCounted, ChipsRedeemed, MarkerRequested,
    MarkerIssued,
]
