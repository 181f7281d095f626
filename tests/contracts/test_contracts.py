"""The wire contracts: round trips, schema snapshots, golden messages, tags, ids, decode errors.

Every message type is enumerated from the unions (``AnyEvent.__args__``, ``AnyCommand.__args__``), so a type
added to a union without a realistic strategy here and a golden message in ``contracts/golden/v1`` fails
these tests until both exist. The rules these tests enforce are written down in ``contracts/EVOLUTION.md``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from datetime import UTC, date, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.budget import examples

from contracts import topics as T
from contracts.codecs import (
    COMMAND_TAGS,
    EVENT_TAGS,
    Undecodable,
    UnknownMessageType,
    decode_command,
    decode_dead_letter,
    decode_event,
    encode,
)
from contracts.commands import (
    AnyCommand,
    CloseBetting,
    CloseShoe,
    CollectCommission,
    Command,
    DecideOption,
    DrawCard,
    ExpireOption,
    LoadShoe,
    OpenRound,
    OpenTable,
    PlaceBet,
    ReadBurn,
    ReadCard,
    VoidRound,
    OfferShoe,
    KeepShoe,
    PassShoe,
    SeatPlayer,
    LeaveSeat,
    WithdrawBet,
)
from contracts.envelope import (
    SCHEMA_VERSION,
    CommandEnvelope,
    DeadLetter,
    Envelope,
    derived_command_id,
    event_id,
)
from contracts.events import (
    AdvantageBetFlagged,
    AnyEvent,
    BankSettled,
    BetLine,
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    PlayerSeated,
    PlayerLeft,
    CardDealt,
    CardDrawn,
    CardReadRefused,
    CommandRejected,
    CommissionAccrued,
    CommissionCollected,
    CardsCalled,
    DominantPlayerChosen,
    Event,
    Irregularity,
    LedgerLine,
    LedgerPosted,
    OddsUpdated,
    OptionDecided,
    OptionOffered,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeFinished,
    ShoeOffered,
    ShoeKept,
    ShoePassed,
    ShoeLoaded,
    ShoeOrderEncrypted,
    ShoeOrderSealed,
    TableOpened,
    WagerOdds,
)
from contracts.cage import (
    BoughtIn,
    BuyIn,
    ChipCount,
    ChipsRedeemed,
    CountDropBox,
    CreditHandedOver,
    CreditLineSet,
    CreditReceived,
    CreditRequested,
    DrawMarker,
    DropBoxCounted,
    DropBoxRemoved,
    FillIssued,
    FillReceived,
    FillRequested,
    HandOverCredit,
    IssueFill,
    MarkerIssued,
    MarkerRequested,
    ReceiveCredit,
    ReceiveFill,
    RecordCloser,
    RecordOpener,
    RedeemChips,
    RemoveDropBox,
    RequestCredit,
    RequestFill,
    SetCreditLine,
    SettleMarker,
    ShiftClosed,
    ShiftOpened,
)
from contracts.schema import DOCUMENTS, SCHEMA_DIR, differences, generate
from contracts.schema import main as schema_main
from contracts.tables import ChemSpec, LimitSpec, ShoeSpec, TableSpec

EVENT_TYPES: tuple[type[Event], ...] = AnyEvent.__args__  # type: ignore[attr-defined]
COMMAND_TYPES: tuple[type[Command], ...] = AnyCommand.__args__  # type: ignore[attr-defined]
GOLDEN_DIR = Path(__file__).resolve().parents[2] / "contracts" / "golden" / "v1"
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
EXAMPLES = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tag(tp: type) -> str:
    return tp.__struct_config__.tag  # type: ignore[attr-defined]


def ids(tp: Any) -> str:
    return str(tp.__name__)


# =====================================================================================================
# Strategies
# =====================================================================================================
def from_info(t: mi.Type) -> st.SearchStrategy[Any]:
    """Any value of a msgspec type (arbitrary text, 64-bit ints, ...): the adversarial half of the round trips.

    Raises TypeError for a type it does not know, so a new kind of field is noticed here first."""
    if isinstance(t, mi.Metadata):  # a documented maximum (events): the value itself is unconstrained
        return from_info(t.type)
    if isinstance(t, mi.StrType):  # within the enforced bounds of a command (contracts.bounds)
        size = min(12, t.max_length) if t.max_length is not None else 12
        if t.pattern is not None:
            return st.from_regex(t.pattern, fullmatch=True).filter(lambda x: len(x) <= size)
        return st.text(max_size=size)
    if isinstance(t, mi.BoolType):  # before IntType: not a subclass there, but keep the order obvious
        return st.booleans()
    if isinstance(t, mi.IntType):
        return st.integers(min_value=-(2**63), max_value=2**64 - 1)
    if isinstance(t, mi.FloatType):
        # JSON has no NaN or infinity: msgspec writes them as null, which no float field decodes (Undecodable).
        # Producers compute every float from exact fractions, so they are always finite.
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.BytesType):
        return st.binary(max_size=64)
    if isinstance(t, mi.DateTimeType):
        return st.datetimes(timezones=st.just(UTC))
    if isinstance(t, mi.ListType):
        return st.lists(from_info(t.item_type), max_size=min(4, t.max_length or 4))
    if isinstance(t, mi.DictType):
        return st.dictionaries(from_info(t.key_type), from_info(t.value_type), max_size=min(3, t.max_length or 3))
    if isinstance(t, mi.UnionType):
        return st.one_of([from_info(x) for x in t.types])
    if isinstance(t, mi.StructType):
        return st.builds(t.cls, **{f.name: from_info(f.type) for f in t.fields})
    raise TypeError(f"no strategy for {t!r}: extend from_info in {__file__}")


def any_value(tp: Any) -> st.SearchStrategy[Any]:
    return from_info(mi.type_info(tp))


def realistic(cls: type, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``cls`` with domain-shaped values for ``fields``; any field not named gets :func:`any_value`."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    names = {f.name for f in info.fields}
    unknown = set(fields) - names
    assert not unknown, f"{cls.__name__} has no field(s) {sorted(unknown)}"
    return st.builds(cls, **{f.name: fields.get(f.name, from_info(f.type)) for f in info.fields})


def _id(prefix: str) -> st.SearchStrategy[str]:
    return st.integers(0, 99_999_999).map(lambda n: f"{prefix}-{n:08x}")


tables = st.sampled_from(["bac-01", "bac-03", "bac-07", "mini-12", "vip-2"])
shoe_ids = _id("shoe")
round_ids = _id("rnd")
bet_ids = _id("bet")
command_ids = st.one_of(_id("cmd"), st.uuids().map(str))
player_ids = st.integers(1, 99_999).map(lambda n: f"plr-{n:06d}")
cards = st.builds(lambda r, s: r + s, st.sampled_from("A23456789TJQK"), st.sampled_from("cdhs"))
card_lists = st.lists(cards, max_size=12)
hands = st.sampled_from(["player", "banker"])
wagers = st.sampled_from(
    ["banker", "player", "tie", "cards_4", "cards_5", "cards_6", "bonus_player", "bonus_banker", "dragon_7",
     "panda_8"]
)
cents = st.integers(0, 50_000_000)
signed_cents = st.integers(-50_000_000, 50_000_000)
seats = st.integers(1, 14)
points = st.integers(0, 9)
odds = st.builds(lambda a, b: f"{a} to {b}", st.integers(1, 200), st.integers(1, 20))
reasons = st.sampled_from(
    ["betting_closed", "betting_not_open", "wager_not_offered", "unknown_wager", "under_table_min",
     "over_table_max", "invalid_amount", "invalid_seat", "bonus_needs_base_bet", "unknown_bet", "unknown_round",
     "no_open_shoe", "round_in_progress", "invalid_config", "nothing_owed", "bonus_depends_on_bet",
     "stake_not_multiple_of_unit", "burn_count_mismatch", "burn_done", "impossible_card", "no_burn_rule"]
)
details = st.text(max_size=80)
hex64 = st.binary(min_size=32, max_size=32).map(bytes.hex)
salts = st.binary(min_size=16, max_size=32).map(bytes.hex)
times = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
)

shoe_specs = realistic(
    ShoeSpec,
    decks=st.integers(1, 8),
    end_card_offset=st.integers(0, 30),
    burn=st.sampled_from(["tens_as_ten", "baccarat_value", "none"]),
    end_of_shoe=st.sampled_from(["one_more_round", "finish_round"]),
    min_cut_depth=st.integers(0, 26),
)
option_cells = st.sampled_from(["player_5", "banker_3_9", "banker_4_1", "banker_5_4"])
chem_specs = realistic(
    ChemSpec,
    option_draws=st.lists(option_cells, max_size=4, unique=True),
    option_seconds=st.integers(1, 120),
    seats_counter_clockwise=st.one_of(st.just([]), st.permutations(list(range(1, 15)))),
    tie_break=st.sampled_from(["nearest_counter_clockwise", "first_wager"]),
    bank_min_cents=st.integers(100, 100_000),
    bank_max_cents=st.integers(100_000, 10**8),
    bank_passes_on_loss=st.booleans(),
    bank_stays_in_play=st.booleans(),
)
table_specs = realistic(
    TableSpec,
    variant=st.sampled_from(["punto_banco", "casino_night", "chemin_de_fer"]),
    shoe=shoe_specs,
    regulated=st.booleans(),
    wagers=st.lists(wagers, min_size=1, max_size=6, unique=True),
    no_vig=st.booleans(),
    allow_extensions=st.booleans(),
    pay=st.dictionaries(wagers, odds, max_size=3),
    commission_rate=st.sampled_from([[1, 20], [1, 25], [1, 10], [0, 1]]),
    commission_mode=st.sampled_from(["deduct_at_payout", "accrue"]),
    commission_scope=st.sampled_from(["banker_only", "all_winners"]),
    rounding=st.sampled_from(["house", "patron", "half_even"]),
    rounding_unit_cents=st.sampled_from([1, 5, 25, 100]),
    tie_pushes_main_bets=st.booleans(),
    bonus_requires_base_bet=st.booleans(),
    casino_night_banker_rule=st.sampled_from(["table_2", "option"]),
    max_players=st.integers(1, 14),
    curator=st.booleans(),
    limits=st.dictionaries(
        wagers, st.builds(LimitSpec, min_cents=st.integers(100, 10_000), max_cents=st.integers(10_000, 10**7)),
        max_size=4,
    ),
    chemin=chem_specs,
)
bet_lines = realistic(BetLine, bet_id=bet_ids, seat=seats, player_id=player_ids, wager=wagers, amount_cents=cents)
event_ids = st.uuids().map(str)
shoe_sizes = st.sampled_from([1, 2, 4, 6, 8])  # decks
#: a few payouts "to 1" of the wagers (banker's 0.95 after commission): EVs are (pay * won - lost) / total
pays = st.sampled_from([Fraction(1), Fraction(19, 20), Fraction(8), Fraction(9), Fraction(40), Fraction(22),
                        Fraction(25), Fraction(30)])
count_names = st.sampled_from(
    ["banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8",
     *(f"bonus_{side}_{k}" for side in ("player", "banker")
       for k in ("natural_win", "natural_tie", "win_by_4", "win_by_9", "lose")),
     "natural_player_8", "natural_player_9", "natural_banker_8", "natural_banker_9"]
)


@st.composite
def wager_odds(draw: st.DrawFn, wager: str, total: int) -> WagerOdds:
    """One wager's odds out of ``total`` outcomes: won + void <= total, EV = (pay * won - lost) / total."""
    won = draw(st.integers(0, total))
    void = draw(st.integers(0, total - won))
    ev = (draw(pays) * won - (total - won - void)) / Fraction(total)
    return WagerOdds(wager=wager, p_win=won / total, p_void=void / total, ev=float(ev), ev_num=ev.numerator,
                     ev_den=ev.denominator)


@st.composite
def odds_updates(draw: st.DrawFn) -> OddsUpdated:
    """Odds of a plausible shoe state: the composition within the shoe's size, the cards out consistent with
    the view (public still counts burned cards in the shoe), ``total`` = Permut(cards left, 6)."""
    decks = draw(shoe_sizes)
    full = [16 * decks] + [4 * decks] * 9
    view = draw(st.sampled_from(["public", "surveillance"]))
    trigger = draw(st.sampled_from(["shoe_loaded", "burn", "card", "round_opened"]))
    if trigger == "shoe_loaded":
        composition, cards_out, step = full, 0, 0
    else:
        composition = [draw(st.integers(0, n)) for n in full]
        left = sum(composition)
        dealt = 52 * decks - left
        assume(left >= 6 and dealt >= 1)
        cards_out = dealt + (draw(st.integers(0, min(10, left - 6))) if view == "public" else 0)
        step = draw(st.integers(1, dealt))
    total = math.perm(sum(composition), 6)
    counts = {"total": total, **draw(st.dictionaries(count_names, st.integers(0, total), max_size=12))}
    names = draw(st.lists(wagers, min_size=1, max_size=10, unique=True))
    return OddsUpdated(
        shoe_id=draw(shoe_ids), view=view, trigger=trigger, step=step, cards_out=cards_out,
        composition=composition, total=total, counts=counts, wagers=[draw(wager_odds(w, total)) for w in names],
        round_id=draw(round_ids) if trigger in ("card", "round_opened") else "",
    )


def ledger_accounts(table_id: str) -> st.SearchStrategy[str]:
    return st.one_of(
        player_ids.map(lambda p: f"patron:{p}"),
        st.sampled_from(["wagers", "game", "commission"]).map(lambda a: f"table:{table_id}:{a}"),
        seats.map(lambda s: f"table:{table_id}:seat:{s}:commission_owed"),
    )


@st.composite
def ledger_posts(draw: st.DrawFn) -> LedgerPosted:
    """A balanced journal entry: the last line takes the negated sum of the others, so the lines sum to 0."""
    amounts = draw(st.lists(st.integers(-50_000_000, 50_000_000).filter(bool), min_size=1, max_size=3))
    amounts.append(-sum(amounts))
    source = draw(event_ids)
    round_id = draw(st.one_of(st.just(""), round_ids))
    accounts = ledger_accounts(draw(tables))
    return LedgerPosted(
        entry_id=f"{source}/{draw(st.integers(0, 13))}",
        kind=draw(st.sampled_from(["stake_taken", "bet_won", "bet_lost", "bet_voided", "bet_settled",
                                   "commission_deducted", "commission_accrued", "commission_collected"])),
        source_event_id=source,
        gaming_day=draw(st.dates(date(2020, 1, 1), date(2040, 1, 1))).isoformat(),
        lines=[LedgerLine(account=draw(accounts), amount_cents=a) for a in amounts],
        shoe_id=draw(st.one_of(st.just(""), shoe_ids)) if round_id else "", round_id=round_id,
        seat=draw(seats), player_id=draw(player_ids),
    )


@st.composite
def advantage_bets(draw: st.DrawFn) -> AdvantageBetFlagged:
    """A bet on a wager with a positive exact EV (up to 3 per unit); the expected gain is stake x EV rounded
    down."""
    den = draw(st.integers(1, 10**13))
    ev = Fraction(draw(st.integers(1, 3 * den)), den)
    stake = draw(st.integers(1, 50_000_000))
    return AdvantageBetFlagged(
        round_id=draw(round_ids), shoe_id=draw(shoe_ids), bet_id=draw(bet_ids), seat=draw(seats),
        player_id=draw(player_ids), wager=draw(wagers), stake_cents=stake, ev=float(ev), ev_num=ev.numerator,
        ev_den=ev.denominator, expected_gain_cents=stake * ev.numerator // ev.denominator,
        cards_left=draw(st.integers(6, 416)),
    )


#: one realistic strategy per message type: a type missing here fails test_every_type_has_a_strategy
REALISTIC: dict[type, st.SearchStrategy[Any]] = {
    # ---- events
    CommandRejected: realistic(CommandRejected, command_id=command_ids, command=st.sampled_from(sorted(COMMAND_TAGS)),
                               reason=reasons, detail=details),
    ShoeLoaded: realistic(ShoeLoaded, shoe_id=shoe_ids, rules=shoe_specs, cards=st.sampled_from([52, 312, 416]),
                          source=st.sampled_from(["csprng", "supplied", "physical"]),
                          commitment=st.one_of(st.just(""), hex64)),
    ShoeCut: realistic(ShoeCut, shoe_id=shoe_ids, cut_at=st.integers(10, 406)),
    ShoeBurned: realistic(ShoeBurned, shoe_id=shoe_ids, exposed=cards, burned_count=st.integers(0, 10),
                          burned=st.lists(cards, max_size=10)),
    CardDrawn: realistic(CardDrawn, shoe_id=shoe_ids, round_id=round_ids, card_number=st.integers(1, 6), card=cards,
                         position=st.integers(0, 415), cards_left=st.integers(0, 415), cutting_card_out=st.booleans()),
    CardReadRefused: realistic(CardReadRefused, shoe_id=shoe_ids, round_id=round_ids, card_number=st.integers(1, 6),
                               card=st.one_of(cards, st.sampled_from(["9", "Xx", ""])), reason=details),
    ShoeClosed: realistic(ShoeClosed, shoe_id=shoe_ids, reason=st.sampled_from(["end_of_shoe", "irregularity"]),
                          cards_dealt=st.integers(0, 416), order=card_lists, salt=st.one_of(st.just(""), salts)),
    ShoeOrderSealed: realistic(ShoeOrderSealed, shoe_id=shoe_ids, order=card_lists, salt=salts),
    ShoeOrderEncrypted: realistic(ShoeOrderEncrypted, shoe_id=shoe_ids,
                                  key_id=st.sampled_from(["test-1", "k2024-06", "vault.2025q1"]),
                                  nonce=st.binary(min_size=12, max_size=12).map(bytes.hex),
                                  ciphertext=st.binary(min_size=17, max_size=2_600)),
    TableOpened: realistic(TableOpened, config=table_specs),
    RoundOpened: realistic(RoundOpened, round_id=round_ids, shoe_id=shoe_ids, number=st.integers(1, 90),
                           banker_seat=st.integers(0, 14), banker_player_id=st.one_of(st.just(""), player_ids),
                           bank_cents=st.one_of(st.just(0), cents)),
    CardsCalled: realistic(CardsCalled, round_id=round_ids, banker_seat=seats, banker_player_id=player_ids,
                           rule=st.just("13:69F-4.8(d)")),
    DominantPlayerChosen: realistic(DominantPlayerChosen, round_id=round_ids, seat=seats, player_id=player_ids,
                                    wager_cents=cents, rule=st.sampled_from(
                                        ["banco", "highest_wager", "nearest_counter_clockwise", "first_wager"])),
    OptionOffered: realistic(OptionOffered, round_id=round_ids, hand=hands, cell=option_cells, row=st.integers(3, 5),
                             column=st.sampled_from(["", "1", "4", "9"]), seat=seats, player_id=player_ids,
                             option_seconds=st.integers(1, 120), default_draw=st.booleans()),
    OptionDecided: realistic(OptionDecided, round_id=round_ids, hand=hands, cell=option_cells, draw=st.booleans(),
                             by=st.sampled_from(["participant", "default"]), seat=seats, player_id=player_ids),
    CardDealt: realistic(CardDealt, round_id=round_ids, card=cards, hand=hands, position=st.integers(1, 3),
                         rule=st.sampled_from(["initial", "table_1", "table_2"]),
                         source=st.sampled_from(["13:69F-3.7", "N.J.A.C. 13:69F-3.9(b) Table 1",
                                                 "N.J.A.C. 13:69F-3.9(c) Table 2"]),
                         why=details, row=st.one_of(st.none(), points),
                         column=st.one_of(st.none(), st.sampled_from(["none", *"0123456789"]))),
    PointsAnnounced: realistic(PointsAnnounced, round_id=round_ids, player_points=points, banker_points=points,
                               natural=st.booleans()),
    Irregularity: realistic(Irregularity, round_id=round_ids, kind=st.sampled_from(
        ["unauthorised_player_third_card", "card_exposed", "card_face_up_in_shoe"]), detail=details,
        card=st.one_of(st.just(""), cards)),
    RoundResolved: realistic(RoundResolved, round_id=round_ids, shoe_id=shoe_ids,
                             player_cards=st.lists(cards, min_size=2, max_size=3),
                             banker_cards=st.lists(cards, min_size=2, max_size=3), player_points=points,
                             banker_points=points, winner=st.sampled_from(["player", "banker", "tie"]),
                             player_natural=st.booleans(), banker_natural=st.booleans(),
                             cards_required=st.integers(4, 6), dragon_7=st.booleans(), panda_8=st.booleans()),
    RoundVoided: realistic(RoundVoided, round_id=round_ids, reason=details),
    ShoeFinished: realistic(ShoeFinished, shoe_id=shoe_ids, rounds=st.integers(1, 90)),
    ShoeOffered: realistic(ShoeOffered, seat=seats, player_id=player_ids, rule=st.just("13:69F-3.6(b)")),
    ShoeKept: realistic(ShoeKept, round_id=round_ids, seat=seats, player_id=player_ids,
                        reason=st.sampled_from(["curator_kept", "next_round_opened"])),
    ShoePassed: realistic(ShoePassed, round_id=st.one_of(st.just(""), round_ids), from_seat=seats,
                          from_player_id=player_ids, to_seat=st.one_of(st.just(0), seats),
                          to_player_id=st.one_of(st.just(""), player_ids),
                          reason=st.sampled_from(["banker_lost", "curator_passed", "dealer_ordered",
                                                  "floorman_ordered"]),
                          rule=st.sampled_from(["13:69F-3.11(a)1", "13:69F-3.11(a)", "13:69F-3.11(a)2"])),
    BettingOpened: realistic(BettingOpened, round_id=round_ids),
    BetPlaced: realistic(BetPlaced, round_id=round_ids, bet_id=bet_ids, seat=seats, player_id=player_ids,
                         wager=wagers, amount_cents=cents),
    BetRejected: realistic(BetRejected, round_id=round_ids, command_id=command_ids, reason=reasons, detail=details,
                           seat=st.integers(0, 14), player_id=st.one_of(st.just(""), player_ids),
                           wager=st.one_of(st.just(""), wagers), amount_cents=signed_cents),
    BetWithdrawn: realistic(BetWithdrawn, round_id=round_ids, bet_id=bet_ids),
    PlayerSeated: realistic(PlayerSeated, seat=seats, player_id=player_ids),
    PlayerLeft: realistic(PlayerLeft, seat=seats, player_id=player_ids),
    BettingClosed: realistic(BettingClosed, round_id=round_ids, bets=st.lists(bet_lines, max_size=8)),
    BetSettled: realistic(BetSettled, round_id=round_ids, bet_id=bet_ids, seat=seats, player_id=player_ids,
                          wager=wagers, stake=cents, result=st.sampled_from(["win", "lose", "void"]),
                          category=st.sampled_from(["banker_wins", "player_wins", "tie_push", "round_voided"]),
                          win=cents, commission=cents, commission_accrued=st.booleans(), payout=cents,
                          odds=st.one_of(st.just(""), odds)),
    CommissionAccrued: realistic(CommissionAccrued, seat=seats, player_id=player_ids, amount_cents=cents,
                                 owed_cents=cents, round_id=st.one_of(st.just(""), round_ids)),
    CommissionCollected: realistic(CommissionCollected, seat=seats, player_id=player_ids, amount_cents=cents),
    BankSettled: realistic(BankSettled, round_id=round_ids, seat=seats, player_id=player_ids, bank_cents=cents,
                           wagers_cents=cents, won_cents=signed_cents, commission_cents=cents,
                           commission_accrued=st.booleans(), bank_after_cents=cents),
    RoundSettled: realistic(RoundSettled, round_id=round_ids, bets=st.integers(0, 40), stakes=cents, payouts=cents,
                            commission=cents, table_result=signed_cents),
    OddsUpdated: odds_updates(),
    LedgerPosted: ledger_posts(),
    AdvantageBetFlagged: advantage_bets(),
    # ---- commands
    LoadShoe: realistic(LoadShoe, shoe_id=shoe_ids, rules=shoe_specs, order=card_lists, physical=st.booleans(),
                        cut_at=st.one_of(st.none(), st.integers(10, 406))),
    DrawCard: realistic(DrawCard, shoe_id=shoe_ids, round_id=round_ids, card_number=st.integers(1, 6)),
    ReadCard: realistic(ReadCard, shoe_id=shoe_ids, round_id=round_ids, card_number=st.integers(1, 6), card=cards),
    ReadBurn: realistic(ReadBurn, shoe_id=shoe_ids, exposed=cards, burned=st.lists(cards, max_size=10)),
    CloseShoe: realistic(CloseShoe, shoe_id=shoe_ids, reason=st.sampled_from(["end_of_shoe", "irregularity"])),
    OpenTable: realistic(OpenTable, config=table_specs),
    OpenRound: realistic(OpenRound, round_id=round_ids, shoe_id=shoe_ids, banker_seat=st.integers(0, 14),
                         banker_player_id=st.one_of(st.just(""), player_ids), bank_cents=st.one_of(st.just(0), cents)),
    ExpireOption: realistic(ExpireOption, round_id=round_ids, hand=hands),
    DecideOption: realistic(DecideOption, round_id=round_ids, hand=hands, draw=st.booleans(), seat=seats,
                            player_id=player_ids),
    VoidRound: realistic(VoidRound, round_id=round_ids, reason=details),
    OfferShoe: realistic(OfferShoe, seat=seats, player_id=player_ids),
    KeepShoe: realistic(KeepShoe, round_id=round_ids),
    PassShoe: realistic(PassShoe, round_id=st.one_of(st.just(""), round_ids),
                        ordered_by=st.sampled_from(["", "dealer", "floorman"])),
    PlaceBet: realistic(PlaceBet, round_id=round_ids, seat=seats, player_id=player_ids, wager=wagers,
                        amount_cents=cents),
    WithdrawBet: realistic(WithdrawBet, round_id=round_ids, bet_id=bet_ids),
    SeatPlayer: realistic(SeatPlayer, seat=seats, player_id=player_ids),
    LeaveSeat: realistic(LeaveSeat, seat=seats, player_id=player_ids),
    CloseBetting: realistic(CloseBetting, round_id=round_ids),
    CollectCommission: realistic(CollectCommission, seat=seats, player_id=st.one_of(st.just(""), player_ids)),
}


# ---- the cage (contracts/cage.py) ----------------------------------------------------------------------------
chip_counts = st.lists(st.builds(ChipCount, denomination_cents=st.sampled_from([100, 500, 2_500, 10_000, 50_000]),
                                 count=st.integers(0, 400)), max_size=5)
shift_ids = _id("shift")
slip_ids = _id("slip")
staff = st.sampled_from(["dealer-07", "sup-02", "cashier-01", "sec-04", "ct-01", "ct-02", "ct-03"])
days = st.dates(date(2024, 1, 1), date(2030, 12, 31)).map(date.isoformat)
pits = st.sampled_from(["", "pit-1", "pit-2", "vip"])
methods = st.sampled_from(["cash", "marker", "chips"])
REALISTIC.update({
    ShiftOpened: realistic(ShiftOpened, shift_id=shift_ids, gaming_day=days, pit=pits, chips=chip_counts,
                           total_cents=cents, counted_by=staff, attested_by=staff),
    ShiftClosed: realistic(ShiftClosed, shift_id=shift_ids, chips=chip_counts, total_cents=cents, counted_by=staff,
                           attested_by=staff, expected_cents=cents, game_result_cents=signed_cents,
                           rounds=st.integers(0, 500), tray_variance_cents=signed_cents),
    FillRequested: realistic(FillRequested, fill_id=slip_ids, shift_id=shift_ids, chips=chip_counts,
                             total_cents=cents, by=staff),
    FillIssued: realistic(FillIssued, fill_id=slip_ids, shift_id=shift_ids, total_cents=cents, by=staff,
                          runner_id=staff),
    FillReceived: realistic(FillReceived, fill_id=slip_ids, shift_id=shift_ids, total_cents=cents, by=staff,
                            supervisor_id=staff, tray_cents=cents),
    CreditRequested: realistic(CreditRequested, credit_id=slip_ids, shift_id=shift_ids, chips=chip_counts,
                               total_cents=cents, by=staff),
    CreditHandedOver: realistic(CreditHandedOver, credit_id=slip_ids, shift_id=shift_ids, total_cents=cents,
                                by=staff, runner_id=staff, tray_cents=cents),
    CreditReceived: realistic(CreditReceived, credit_id=slip_ids, shift_id=shift_ids, total_cents=cents, by=staff),
    CreditLineSet: realistic(CreditLineSet, player_id=player_ids, line_cents=cents, by=staff),
    BoughtIn: realistic(BoughtIn, buy_in_id=slip_ids, shift_id=shift_ids, seat=seats, player_id=player_ids,
                        method=methods, amount_cents=cents, tray_cents=cents, by=staff, marker_balance_cents=cents),
    DropBoxRemoved: realistic(DropBoxRemoved, shift_id=shift_ids, by=staff),
    DropBoxCounted: realistic(DropBoxCounted, shift_id=shift_ids, cash=chip_counts, cash_cents=cents,
                              markers=st.integers(0, 40), markers_cents=cents, drop_cents=cents,
                              counters=st.lists(staff, max_size=5), expected_cents=cents,
                              drop_variance_cents=signed_cents),
    ChipsRedeemed: realistic(ChipsRedeemed, redemption_id=slip_ids, player_id=player_ids, amount_cents=cents,
                             method=st.sampled_from(["cash", "marker_redemption"]), by=staff,
                             marker_balance_cents=cents),
    MarkerRequested: realistic(MarkerRequested, buy_in_id=slip_ids, shift_id=shift_ids, seat=seats,
                               player_id=player_ids, amount_cents=cents, by=staff),
    MarkerIssued: realistic(MarkerIssued, table_id=st.sampled_from(["T1", "bj-07", "vip-2"]), buy_in_id=slip_ids,
                            player_id=player_ids, amount_cents=cents, outstanding_cents=cents, line_cents=cents),
    RecordOpener: realistic(RecordOpener, shift_id=shift_ids, gaming_day=days, chips=chip_counts, total_cents=cents,
                            supervisor_id=staff, pit=pits, role=st.just("dealer")),
    RecordCloser: realistic(RecordCloser, shift_id=shift_ids, chips=chip_counts, total_cents=cents,
                            supervisor_id=staff, role=st.just("dealer")),
    RequestFill: realistic(RequestFill, fill_id=slip_ids, chips=chip_counts, total_cents=cents,
                           role=st.just("supervisor")),
    IssueFill: realistic(IssueFill, fill_id=slip_ids, runner_id=staff, role=st.just("cage_cashier")),
    ReceiveFill: realistic(ReceiveFill, fill_id=slip_ids, supervisor_id=staff, role=st.just("dealer")),
    RequestCredit: realistic(RequestCredit, credit_id=slip_ids, chips=chip_counts, total_cents=cents,
                             role=st.just("supervisor")),
    HandOverCredit: realistic(HandOverCredit, credit_id=slip_ids, runner_id=staff, role=st.just("dealer")),
    ReceiveCredit: realistic(ReceiveCredit, credit_id=slip_ids, role=st.just("cage_cashier")),
    SetCreditLine: realistic(SetCreditLine, player_id=player_ids, line_cents=cents, role=st.just("cage_cashier")),
    BuyIn: realistic(BuyIn, buy_in_id=slip_ids, seat=seats, player_id=player_ids, method=methods, amount_cents=cents,
                     cash=chip_counts, role=st.just("dealer")),
    RemoveDropBox: realistic(RemoveDropBox, shift_id=shift_ids, role=st.sampled_from(["count_team", "security"])),
    CountDropBox: realistic(CountDropBox, shift_id=shift_ids, cash=chip_counts, cash_cents=cents,
                            markers=st.integers(0, 40), markers_cents=cents,
                            counters=st.lists(staff, max_size=5), role=st.just("count_team")),
    RedeemChips: realistic(RedeemChips, redemption_id=slip_ids, player_id=player_ids, amount_cents=cents,
                           method=st.sampled_from(["cash", "marker_redemption"]), role=st.just("cage_cashier"),
                           card_number=st.one_of(st.just(""), player_ids)),
    DrawMarker: realistic(DrawMarker, table_id=st.sampled_from(["T1", "bj-07", "vip-2"]), buy_in_id=slip_ids,
                          player_id=player_ids, amount_cents=cents, role=st.just("cage")),
    SettleMarker: realistic(SettleMarker, buy_in_id=slip_ids, issued=st.booleans(), outstanding_cents=cents,
                            reason=st.sampled_from(["", "over_credit_line", "invalid_amount"]),
                            detail=st.sampled_from(["", "markers outstanding would total 60000 cents"]),
                            role=st.just("cage")),
})

#: the projection's outputs, each on its own stream (every other event type is on one of ``T.EVENT_TOPICS``)
PROJECTION_STREAM: dict[type, str] = {
    OddsUpdated: T.PROJECTION_ODDS,
    LedgerPosted: T.PROJECTION_LEDGER,
    AdvantageBetFlagged: T.PROJECTION_ALERTS,
}


def streams_of(tp: type) -> tuple[str, ...]:
    return (PROJECTION_STREAM[tp],) if tp in PROJECTION_STREAM else T.EVENT_TOPICS


@st.composite
def event_envelopes(draw: st.DrawFn, payloads: st.SearchStrategy[Any],
                    streams: tuple[str, ...] = T.EVENT_TOPICS) -> Envelope:
    stream = draw(st.sampled_from(streams))
    table_id = draw(tables)
    seq = draw(st.integers(1, 10**7))
    return Envelope(
        event_id=event_id(stream, table_id, seq), stream=stream, table_id=table_id, seq=seq,
        causation_id=draw(st.one_of(command_ids, st.uuids().map(str))), correlation_id=draw(round_ids),
        occurred_at=draw(times), schema=SCHEMA_VERSION, round_id=draw(st.one_of(st.none(), round_ids)),
        shoe_id=draw(st.one_of(st.none(), shoe_ids)), payload=draw(payloads),
    )


@st.composite
def command_envelopes(draw: st.DrawFn, payloads: st.SearchStrategy[Any]) -> CommandEnvelope:
    return CommandEnvelope(
        command_id=draw(command_ids), table_id=draw(tables), issued_at=draw(times),
        correlation_id=draw(st.one_of(st.just(""), round_ids)), schema=SCHEMA_VERSION, payload=draw(payloads),
    )


def any_event_envelopes(tp: type) -> st.SearchStrategy[Envelope]:
    info = mi.type_info(Envelope)
    assert isinstance(info, mi.StructType)
    fields = {f.name: from_info(f.type) for f in info.fields if f.name != "payload"}
    return st.builds(Envelope, payload=any_value(tp), **fields)


def any_command_envelopes(tp: type) -> st.SearchStrategy[CommandEnvelope]:
    info = mi.type_info(CommandEnvelope)
    assert isinstance(info, mi.StructType)
    fields = {f.name: from_info(f.type) for f in info.fields if f.name != "payload"}
    return st.builds(CommandEnvelope, payload=any_value(tp), **fields)


# =====================================================================================================
# Round trips
# =====================================================================================================
@pytest.mark.parametrize("tp", EVENT_TYPES + COMMAND_TYPES, ids=ids)
def test_every_type_has_a_realistic_strategy(tp: type) -> None:
    assert tp in REALISTIC, f"add a realistic strategy for {tp.__name__} to REALISTIC"


def test_no_strategy_for_a_type_outside_the_unions() -> None:
    assert set(REALISTIC) <= set(EVENT_TYPES + COMMAND_TYPES)


@pytest.mark.parametrize("tp", EVENT_TYPES, ids=ids)
def test_event_round_trip_realistic(tp: type[Event]) -> None:
    @EXAMPLES
    @given(event_envelopes(REALISTIC[tp], streams_of(tp)))
    def check(env: Envelope) -> None:
        back = decode_event(encode(env))
        assert back == env
        assert type(back.payload) is tp
        assert encode(back) == encode(env)

    check()


@pytest.mark.parametrize("tp", EVENT_TYPES, ids=ids)
def test_event_round_trip_any_values(tp: type[Event]) -> None:
    @EXAMPLES
    @given(any_event_envelopes(tp))
    def check(env: Envelope) -> None:
        back = decode_event(encode(env))
        assert back == env
        assert type(back.payload) is tp

    check()


@pytest.mark.parametrize("tp", COMMAND_TYPES, ids=ids)
def test_command_round_trip_realistic(tp: type[Command]) -> None:
    @EXAMPLES
    @given(command_envelopes(REALISTIC[tp]))
    def check(env: CommandEnvelope) -> None:
        back = decode_command(encode(env))
        assert back == env
        assert type(back.payload) is tp
        assert encode(back) == encode(env)

    check()


@pytest.mark.parametrize("tp", COMMAND_TYPES, ids=ids)
def test_command_round_trip_any_values(tp: type[Command]) -> None:
    @EXAMPLES
    @given(any_command_envelopes(tp))
    def check(env: CommandEnvelope) -> None:
        back = decode_command(encode(env))
        assert back == env
        assert type(back.payload) is tp

    check()


@EXAMPLES
@given(any_value(DeadLetter))
def test_dead_letter_round_trip(letter: DeadLetter) -> None:
    assert decode_dead_letter(encode(letter)) == letter


@EXAMPLES
@given(st.one_of(table_specs, any_value(TableSpec)))
def test_table_spec_round_trip(spec: TableSpec) -> None:
    assert msgspec.json.decode(encode(spec), type=TableSpec) == spec


# =====================================================================================================
# Shape of the contracts: tags, frozen, tolerant decoders
# =====================================================================================================
def _structs_reachable(*roots: type) -> set[type]:
    seen: set[type] = set()

    def walk(t: mi.Type) -> None:
        if isinstance(t, mi.StructType):
            if t.cls in seen:
                return
            seen.add(t.cls)
            for f in t.fields:
                walk(f.type)
        elif isinstance(t, mi.Metadata):  # a documented bound (contracts.bounds)
            walk(t.type)
        elif isinstance(t, mi.UnionType):
            for x in t.types:
                walk(x)
        elif isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            walk(t.item_type)
        elif isinstance(t, mi.DictType):
            walk(t.key_type)
            walk(t.value_type)

    for r in roots:
        walk(mi.type_info(r))
    return seen


ALL_STRUCTS = _structs_reachable(Envelope, CommandEnvelope, DeadLetter, TableSpec)


def test_tags_are_explicit_unique_snake_case_and_in_type_field() -> None:
    all_types = EVENT_TYPES + COMMAND_TYPES
    tags = [tag(tp) for tp in all_types]
    duplicates = sorted({t for t in tags if tags.count(t) > 1})
    assert not duplicates, f"tags used twice across events and commands: {duplicates}"
    for tp in all_types:
        t = tag(tp)
        assert isinstance(t, str) and SNAKE.match(t), f"{tp.__name__}: tag {t!r} is not snake_case"
        assert t != tp.__name__, f"{tp.__name__}: tag defaulted to the class name; give an explicit tag"
        assert tp.__struct_config__.tag_field == "type", tp.__name__  # type: ignore[attr-defined]
    assert EVENT_TAGS == {tag(t) for t in EVENT_TYPES}
    assert COMMAND_TAGS == {tag(t) for t in COMMAND_TYPES}


def _subclasses(base: type) -> set[type]:
    out: set[type] = set()
    sub: type
    for sub in base.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def test_every_defined_event_and_command_is_in_its_union() -> None:
    # a Struct defined but left out of the union can be encoded but never decoded
    assert _subclasses(Event) == set(EVENT_TYPES)
    assert _subclasses(Command) == set(COMMAND_TYPES)


@pytest.mark.parametrize("tp", sorted(ALL_STRUCTS | set(EVENT_TYPES) | set(COMMAND_TYPES), key=ids), ids=ids)
def test_struct_is_frozen_and_tolerates_unknown_fields(tp: type) -> None:
    config = tp.__struct_config__  # type: ignore[attr-defined]
    assert config.frozen, f"{tp.__name__} must be frozen"
    assert not config.forbid_unknown_fields, f"{tp.__name__} must ignore unknown fields (forward tolerance)"


def test_every_reachable_struct_is_covered() -> None:
    nested = ALL_STRUCTS - set(EVENT_TYPES) - set(COMMAND_TYPES)
    assert nested == {Envelope, CommandEnvelope, DeadLetter, TableSpec, ShoeSpec, LimitSpec, ChemSpec, BetLine,
                      WagerOdds, LedgerLine, ChipCount}, (
        "a new nested Struct: check it is frozen, give it defaults for new fields, regenerate the schemas"
    )


def test_envelopes_carry_the_schema_version() -> None:
    assert SCHEMA_VERSION == 1
    for env_type in (Envelope, CommandEnvelope):
        f = {x.name: x for x in msgspec.structs.fields(env_type)}
        assert f["schema"].default == SCHEMA_VERSION


# =====================================================================================================
# Decode errors: unknown types are skipped, garbage is dead-lettered
# =====================================================================================================
def _golden_bytes(name: str) -> bytes:
    return (GOLDEN_DIR / name).read_bytes()


def _with_type(name: str, new_type: object) -> bytes:
    obj = json.loads(_golden_bytes(name))
    obj["payload"]["type"] = new_type
    return json.dumps(obj).encode()


def test_unknown_event_type_raises_unknown_message_type() -> None:
    with pytest.raises(UnknownMessageType) as e:
        decode_event(_with_type("event.bet_placed.json", "bet_placed_on_credit"))
    assert e.value.type_name == "bet_placed_on_credit"
    assert not isinstance(e.value, Undecodable)


def test_unknown_command_type_raises_unknown_message_type() -> None:
    with pytest.raises(UnknownMessageType) as e:
        decode_command(_with_type("command.place_bet.json", "place_parlay"))
    assert e.value.type_name == "place_parlay"


def _truncated(name: str) -> bytes:
    data = _golden_bytes(name)
    return data[: len(data) // 2]


def _seat_as_text() -> bytes:
    obj = json.loads(_golden_bytes("event.bet_placed.json"))
    obj["payload"]["seat"] = "three"
    return json.dumps(obj).encode()


def _without(name: str, *path: str) -> bytes:
    obj = json.loads(_golden_bytes(name))
    target = obj
    for p in path[:-1]:
        target = target[p]
    del target[path[-1]]
    return json.dumps(obj).encode()


GARBAGE_EVENTS = {
    "empty": b"",
    "not_json": b"\x00\x9fshoe",
    "json_list": b"[1, 2, 3]",
    "json_string": b'"card_drawn"',
    "empty_object": b"{}",
    "payload_not_object": b'{"payload": 7}',
    "truncated": _truncated("event.bet_placed.json"),
    "wrong_field_type": _seat_as_text(),
    "payload_without_type": _without("event.bet_placed.json", "payload", "type"),
    "type_not_a_string": _with_type("event.bet_placed.json", 17),
    "known_type_missing_field": _without("event.bet_placed.json", "payload", "amount_cents"),
    "envelope_missing_field": _without("event.bet_placed.json", "event_id"),
}


@pytest.mark.parametrize("data", GARBAGE_EVENTS.values(), ids=GARBAGE_EVENTS.keys())
def test_garbage_event_raises_undecodable(data: bytes) -> None:
    with pytest.raises(Undecodable):
        decode_event(data)


@pytest.mark.parametrize(
    "data",
    [b"", b"nope", b"{}", _truncated("command.place_bet.json"),
     _without("command.place_bet.json", "payload", "seat"), _without("command.place_bet.json", "command_id")],
    ids=["empty", "not_json", "empty_object", "truncated", "missing_payload_field", "missing_envelope_field"],
)
def test_garbage_command_raises_undecodable(data: bytes) -> None:
    with pytest.raises(Undecodable):
        decode_command(data)


def test_decode_errors_are_value_errors_and_distinct() -> None:
    assert issubclass(Undecodable, ValueError) and issubclass(UnknownMessageType, ValueError)
    assert not issubclass(Undecodable, UnknownMessageType) and not issubclass(UnknownMessageType, Undecodable)


# =====================================================================================================
# Deterministic ids
# =====================================================================================================
def test_event_id_is_deterministic() -> None:
    a = event_id(T.SHOE_EVENTS, "bac-03", 42)
    assert a == event_id(T.SHOE_EVENTS, "bac-03", 42)
    assert uuid.UUID(a).version == 5
    assert a != event_id(T.SHOE_EVENTS, "bac-03", 43)
    assert a != event_id(T.DEALING_EVENTS, "bac-03", 42)
    assert a != event_id(T.SHOE_EVENTS, "bac-04", 42)


@settings(max_examples=examples(50), deadline=None)
@given(st.sampled_from(T.EVENT_TOPICS), tables, st.integers(1, 10**9), st.integers(1, 10**9))
def test_event_id_differs_exactly_when_seq_differs(stream: str, table_id: str, s1: int, s2: int) -> None:
    assert (event_id(stream, table_id, s1) == event_id(stream, table_id, s2)) == (s1 == s2)


def test_event_id_is_pinned() -> None:
    # changing the namespace or the name layout would give replayed events new ids: consumers' dedup breaks
    assert event_id("dealing.events", "bac-03", 1) == "d7475a8a-c896-5484-b628-a19febc92796"
    assert derived_command_id("draw", "bac-03", "rnd-bac-03-20240601-0001", 1) == (
        "a88cf704-b0b0-55ad-a68f-6509c6b70bf4"
    )


# =====================================================================================================
# JSON Schema snapshots
# =====================================================================================================
def test_committed_schemas_equal_the_generated_ones() -> None:
    diffs = differences()
    assert not diffs, "JSON Schemas out of date; run `python -m contracts.schema` and commit:\n" + "\n".join(diffs)
    for name, text in generate().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text


def test_schema_generation_is_deterministic_and_well_formed() -> None:
    first, second = generate(), generate()
    assert first == second
    assert set(first) == set(DOCUMENTS)
    for name, text in first.items():
        assert text.endswith("}\n") and not text.endswith("\n\n")
        doc = json.loads(text)
        assert list(doc) == sorted(doc)
        assert doc["$ref"] == f"#/$defs/{DOCUMENTS[name].__name__}"
        assert DOCUMENTS[name].__name__ in doc["$defs"]


def test_event_schema_lists_every_event_tag() -> None:
    doc = json.loads(generate()["envelope.json"])
    mapping = doc["$defs"]["Envelope"]["properties"]["payload"]["discriminator"]["mapping"]
    assert set(mapping) == EVENT_TAGS
    doc = json.loads(generate()["command_envelope.json"])
    mapping = doc["$defs"]["CommandEnvelope"]["properties"]["payload"]["discriminator"]["mapping"]
    assert set(mapping) == COMMAND_TAGS


def test_schema_cli_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert schema_main(["--check", "--dir", str(tmp_path)]) == 1
    assert "envelope.json: missing" in capsys.readouterr().err
    assert schema_main(["--dir", str(tmp_path)]) == 0
    assert schema_main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "table_spec.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "old.json").write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert schema_main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "table_spec.json: changed" in err and "old.json: stale" in err


# =====================================================================================================
# Golden messages: what a version-1 producer wrote must decode forever
# =====================================================================================================
GOLDEN_FILES = sorted(p.name for p in GOLDEN_DIR.glob("*.json"))
_NAME = re.compile(r"^(?P<kind>event|command|dead_letter)(\.(?P<tag>[a-z0-9_]+))?(\.(?P<label>[a-z0-9-]+))?\.json$")

#: hand-written variants -> (the canonical golden they must decode equal to, envelope and payload changes):
#: ``older-*`` omit fields that have defaults (what an earlier producer wrote), ``unknown-fields`` carry
#: fields a newer producer may add (they are ignored)
VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "event.card_drawn.older-no-cutting-card-out.json": ("event.card_drawn.json", {}, {}),
    "event.bet_rejected.older-no-bet-fields.json": ("event.bet_rejected.withdrawal.json", {}, {}),
    "event.table_opened.older-variant-only.json": ("event.table_opened.json", {}, {"config": TableSpec()}),
    "event.shoe_loaded.older-no-commitment.json": ("event.shoe_loaded.physical.json", {}, {}),
    "event.card_dealt.older-no-row-column.json": ("event.card_dealt.initial.json", {}, {}),
    "event.shoe_closed.older-no-reveal.json": ("event.shoe_closed.json", {}, {"order": [], "salt": ""}),
    "event.round_opened.older-minimal-envelope.json": ("event.round_opened.json",
                                                       {"round_id": None, "shoe_id": None}, {}),
    "event.odds_updated.older-no-round-id.json": ("event.odds_updated.json", {}, {"round_id": ""}),
    "event.ledger_posted.older-no-scope.json": ("event.ledger_posted.json", {},
                                                {"shoe_id": "", "round_id": "", "seat": 0, "player_id": ""}),
    "command.load_shoe.older-shoe-id-only.json": ("command.load_shoe.json", {}, {"cut_at": None}),
    "command.open_table.older-no-config.json": ("command.open_table.json", {}, {"config": TableSpec()}),
    "command.collect_commission.older-minimal.json": ("command.collect_commission.json", {}, {"player_id": ""}),
    "event.bet_placed.unknown-fields.json": ("event.bet_placed.json", {}, {}),
    "event.table_opened.unknown-fields.json": ("event.table_opened.json", {}, {}),
    "command.place_bet.unknown-fields.json": ("command.place_bet.json", {}, {}),
}
CANONICAL = [n for n in GOLDEN_FILES if n not in VARIANTS]


def _decode_golden(name: str) -> Any:
    data = _golden_bytes(name)
    kind = name.split(".", 1)[0]
    if kind == "event":
        return decode_event(data)
    if kind == "command":
        return decode_command(data)
    return decode_dead_letter(data)


def _is_wire_subset(old: Any, new: Any, where: str = "$") -> list[str]:
    """Where ``new`` (today's encoding) lost or changed something ``old`` (the golden) had."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where}: was an object"]
        problems = []
        for k, v in old.items():
            if k not in new:
                problems.append(f"{where}.{k}: no longer written")
            else:
                problems += _is_wire_subset(v, new[k], f"{where}.{k}")
        return problems
    if isinstance(old, list):
        if not isinstance(new, list) or len(old) != len(new):
            return [f"{where}: list changed"]
        return [p for i, (a, b) in enumerate(zip(old, new)) for p in _is_wire_subset(a, b, f"{where}[{i}]")]
    return [] if (type(old) is type(new) and old == new) else [f"{where}: {old!r} became {new!r}"]


def test_golden_files_are_named_and_known() -> None:
    assert GOLDEN_FILES, f"no golden messages in {GOLDEN_DIR}"
    for name in GOLDEN_FILES:
        m = _NAME.match(name)
        assert m, f"{name}: expected <event|command>.<tag>[.<label>].json or dead_letter.json"
        label = m["label"] or ""
        if label.startswith("older-") or label == "unknown-fields":
            assert name in VARIANTS, f"{name}: add it to VARIANTS with the canonical golden it must equal"
    for name, (base, _, _) in VARIANTS.items():
        assert name in GOLDEN_FILES and base in CANONICAL, name
        assert name.split(".")[:2] == base.split(".")[:2], f"{name} and {base} are not the same message type"


@pytest.mark.parametrize("tp", EVENT_TYPES, ids=ids)
def test_every_event_type_has_a_golden_message(tp: type) -> None:
    assert f"event.{tag(tp)}.json" in CANONICAL, f"write contracts/golden/v1/event.{tag(tp)}.json"


@pytest.mark.parametrize("tp", COMMAND_TYPES, ids=ids)
def test_every_command_type_has_a_golden_message(tp: type) -> None:
    assert f"command.{tag(tp)}.json" in CANONICAL, f"write contracts/golden/v1/command.{tag(tp)}.json"


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_golden_decodes_and_re_encodes_to_an_equal_struct(name: str) -> None:
    msg = _decode_golden(name)
    m = _NAME.match(name)
    assert m is not None
    if m["tag"]:
        assert tag(type(msg.payload)) == m["tag"], f"{name} holds a {tag(type(msg.payload))}"
    assert _decode_golden_bytes(m["kind"], encode(msg)) == msg
    if hasattr(msg, "schema"):
        assert msg.schema == 1


def _decode_golden_bytes(kind: str, data: bytes) -> Any:
    return {"event": decode_event, "command": decode_command, "dead_letter": decode_dead_letter}[kind](data)


@pytest.mark.parametrize("name", CANONICAL)
def test_canonical_golden_is_still_written_the_same_way(name: str) -> None:
    """Today's encoder writes every field a version-1 producer wrote, with the same value (new fields with
    defaults may be added; nothing may be renamed, dropped or re-typed)."""
    old = json.loads(_golden_bytes(name))
    new = json.loads(encode(_decode_golden(name)))
    problems = _is_wire_subset(old, new)
    assert not problems, f"{name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_older_and_newer_variants_decode_to_the_canonical_message(name: str) -> None:
    base, env_changes, payload_changes = VARIANTS[name]
    expected = _decode_golden(base)
    expected = msgspec.structs.replace(
        expected, payload=msgspec.structs.replace(expected.payload, **payload_changes), **env_changes
    )
    assert _decode_golden(name) == expected


@pytest.mark.parametrize("name", [n for n in CANONICAL if n.startswith("event.")])
def test_golden_event_ids_follow_stream_table_seq(name: str) -> None:
    env = decode_event(_golden_bytes(name))
    assert env.event_id == event_id(env.stream, env.table_id, env.seq)
    assert env.stream in streams_of(type(env.payload))
    offset = env.occurred_at.utcoffset()
    assert offset is not None and offset.total_seconds() == 0, "occurred_at must be UTC"


def test_golden_draw_card_id_is_derived() -> None:
    env = decode_command(_golden_bytes("command.draw_card.json"))
    assert isinstance(env.payload, DrawCard)
    assert env.command_id == derived_command_id("draw", env.table_id, env.payload.round_id, env.payload.card_number)


def test_golden_shoe_reveal_matches_its_commitment() -> None:
    loaded = decode_event(_golden_bytes("event.shoe_loaded.json")).payload
    sealed = decode_event(_golden_bytes("event.shoe_order_sealed.json")).payload
    closed = decode_event(_golden_bytes("event.shoe_closed.json")).payload
    assert isinstance(loaded, ShoeLoaded) and isinstance(sealed, ShoeOrderSealed) and isinstance(closed, ShoeClosed)
    assert loaded.shoe_id == sealed.shoe_id == closed.shoe_id
    assert closed.order == sealed.order and closed.salt == sealed.salt
    assert len(closed.order) == loaded.cards == 52 * loaded.rules.decks
    digest = hashlib.sha256(bytes.fromhex(closed.salt) + ",".join(closed.order).encode()).hexdigest()
    assert digest == loaded.commitment


def test_golden_encrypted_order_opens_under_the_test_key_to_the_reveal() -> None:
    from contracts.vault import VaultOpenError, open_sealed
    from tests.vaultkeys import KEYS, OTHER_KEY

    env = decode_event(_golden_bytes("event.shoe_order_encrypted.json"))
    closed = decode_event(_golden_bytes("event.shoe_closed.json")).payload
    p = env.payload
    assert isinstance(p, ShoeOrderEncrypted) and isinstance(closed, ShoeClosed) and p.shoe_id == closed.shoe_id
    order, salt = open_sealed(KEYS, env.table_id, p.shoe_id, p.key_id, p.nonce, p.ciphertext)
    assert list(order) == closed.order and salt == closed.salt and len(order) == 416
    assert "".join(closed.order[:3]).encode() not in p.ciphertext  # no run of the order in clear
    with pytest.raises(VaultOpenError):
        open_sealed(type(KEYS)((("test-1", OTHER_KEY),)), env.table_id, p.shoe_id, p.key_id, p.nonce,
                    p.ciphertext)


def test_golden_dead_letter_holds_the_original_bytes() -> None:
    letter = decode_dead_letter(_golden_bytes("dead_letter.json"))
    assert letter.topic == T.WAGERING_COMMANDS and letter.service in T.SERVICES
    with pytest.raises(Undecodable):
        decode_command(letter.original)


# =====================================================================================================
# contracts/README.md stays in step with the code
# =====================================================================================================
def test_readme_lists_every_topic_and_message_type() -> None:
    readme = (GOLDEN_DIR.parents[1] / "README.md").read_text(encoding="utf-8")
    missing = [f"topic {t}" for t in T.ALL_TOPICS if f"`{t}`" not in readme]
    missing += [f"type {tag(tp)} ({tp.__name__})" for tp in EVENT_TYPES + COMMAND_TYPES
                if f"| `{tag(tp)}` | `{tp.__name__}` |" not in readme]
    assert not missing, "contracts/README.md does not list: " + ", ".join(missing)
