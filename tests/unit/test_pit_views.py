"""The pit's, cage's and surveillance's figures (services/projection/pit_state.py, pit_views.py) on a small
hand-made gaming day at two tables: every drop, win, hold %, shift, hourly row, commission and ranking worked
out by hand; the same state whatever order the streams are folded in; two gaming days held, older ones
dropped; each closed shoe's commitment and cards verified, or not, and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from baccarat.money import CommissionMode
from baccarat.table import punto_banco_full
from contracts import topics as TOP
from contracts.envelope import Envelope
from contracts.events import (
    AdvantageBetFlagged,
    BetSettled,
    CardDrawn,
    Irregularity,
    RoundResolved,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeLoaded,
    TableOpened,
)
from contracts.tables import ShoeSpec
from services.projection.core import ProjectionCore, ProjectionState
from services.projection.pit_state import PitState, day_and_hour, verdict
from services.projection.pit_views import (
    CSV_COLUMNS,
    PitSettings,
    cage_view,
    closed_shoes,
    floor_view,
    hold_bps,
    hourly_csv,
    hourly_rows,
    irregularities,
    open_alerts,
    pct,
    player_ranking,
)
from services.runtime.translate import table_spec
from services.shoe.core import commitment
from tests.unit.test_ledger import BANKER_BY_5, TIE_3, Feed, bet, by_rules, outcome

DAY = "2026-03-02"
PLAYER_9 = "9,10,K,5"  # a Player natural 9 against a Banker 5
ACCRUE = punto_banco_full(commission_mode=CommissionMode.ACCRUE)


def H(hour: int, minute: int = 0) -> datetime:
    """``minute`` past hour ``hour`` of the gaming day 2026-03-02 (hour 0 starts at 06:00 UTC)."""
    return datetime(2026, 3, 2, 6, tzinfo=UTC) + timedelta(hours=hour, minutes=minute)


def _alert(f: Feed, table: str, player: str, bet_id: str, stake: int, gain: int, at: datetime) -> Envelope:
    return f.emit(TOP.PROJECTION_ALERTS, AdvantageBetFlagged(
        round_id="r", shoe_id="s1", bet_id=bet_id, seat=1, player_id=player, wager="dragon_7", stake_cents=stake,
        ev=0.1, ev_num=1, ev_den=10, expected_gain_cents=gain, cards_left=40), at, table=table, round_id="r")


def _resolved(f: Feed, table: str, rid: str, cards: str, at: datetime) -> Envelope:
    """The round's RoundResolved as the dealing service emits it (the settlement shares its time)."""
    o = outcome(cards)
    return f.emit(TOP.DEALING_EVENTS, RoundResolved(
        round_id=rid, shoe_id="s1", player_cards=[str(c) for c in o.player], banker_cards=[str(c) for c in o.banker],
        player_points=o.player_points, banker_points=o.banker_points, winner=o.winner.value,
        player_natural=o.player_natural, banker_natural=o.banker_natural, cards_required=o.cards_required,
        dragon_7=o.dragon_7, panda_8=o.panda_8), at, table=table, round_id=rid)


def _round(f: Feed, table: str, rid: str, bets: list, cards: str, at: datetime, config=None) -> list[Envelope]:
    return [f.opened(rid, "s1", at - timedelta(minutes=2), table), f.closed(rid, bets, at - timedelta(minutes=1), table),
            _resolved(f, table, rid, cards, at), *f.settled(rid, [by_rules(rid, b, cards, config) for b in bets], at, table)]


def hand_made_day() -> list[Envelope]:
    """Two tables, the gaming day 2026-03-02 (and one round of the day before). T1 deducts commission, T2
    accrues it to the seat's box. Every figure the tests expect is worked out in the comments."""
    f = Feed()
    envs = [f.emit(TOP.DEALING_EVENTS, TableOpened(config=table_spec(punto_banco_full())), H(-1), table="T1"),
            f.emit(TOP.DEALING_EVENTS, TableOpened(config=table_spec(ACCRUE)), H(-1), table="T2")]
    # the day before, 05:30 UTC: Bob's $10 Banker loses to a Player natural: win +1,000
    envs += _round(f, "T1", "r0", [bet("b0", 2, "bob", "banker", 1_000)], PLAYER_9, H(-1, 30))
    # hour 1 (07:00-08:00): Alice's $100 Banker wins (paid 19 to 20: 500 commission deducted), Bob's $50
    # Player loses: stakes 15,000, payouts 19,500, win -4,500 ...
    envs += _round(f, "T1", "r1", [bet("a1", 1, "alice", "banker", 10_000), bet("b1", 2, "bob", "player", 5_000)],
                   BANKER_BY_5, H(1, 10))
    # ... then a tie: Alice's $20 Banker pushes (in the drop), Bob's $10 Tie pays 8 to 1: win -8,000
    envs += _round(f, "T1", "r2", [bet("a2", 1, "alice", "banker", 2_000), bet("b2", 2, "bob", "tie", 1_000)],
                   TIE_3, H(1, 40))
    # hour 3 (09:00-10:00): Bob's $200 Player loses (+20,000); a round voided, Carol's $40 returned (no drop)
    envs += _round(f, "T1", "r3", [bet("b3", 2, "bob", "player", 20_000)], BANKER_BY_5, H(3, 5))
    carol = bet("c4", 3, "carol", "banker", 4_000)
    envs += [f.opened("r4", "s1", H(3, 20), "T1"), f.closed("r4", [carol], H(3, 21), "T1"),
             f.emit(TOP.DEALING_EVENTS, RoundVoided(round_id="r4", reason="card dealt to the wrong hand"), H(3, 29),
                    table="T1", round_id="r4"),
             *f.settled("r4", [BetSettled(round_id="r4", bet_id="c4", seat=3, player_id="carol", wager="banker",
                                          stake=4_000, result="void", category="round_voided", win=0, commission=0,
                                          commission_accrued=False, payout=4_000)], H(3, 30), "T1")]
    # hour 9 (15:00-16:00, the second shift): an irregularity, then Alice's $30 Banker wins (150 deducted): -2,850
    envs.append(f.emit(TOP.DEALING_EVENTS, Irregularity(round_id="r5", kind="card_out_of_order", detail="a card "
                                                        "read out of turn", card="7H", card_number=3,
                                                        disposition="discarded", rule="13:69F-3.7"),
                       H(9, 10), table="T1", round_id="r5"))
    envs += _round(f, "T1", "r5", [bet("a5", 1, "alice", "banker", 3_000)], BANKER_BY_5, H(9, 20))
    # T2, hour 2 (08:00-09:00): Dave's $100 Banker wins, 500 accrued to seat 1's box: win -9,500; collected at
    # hour 4; hour 5 (11:00-12:00): Dave's $30 Banker wins, 150 accrued (outstanding): win -2,850
    envs += _round(f, "T2", "r21", [bet("d1", 1, "dave", "banker", 10_000)], BANKER_BY_5, H(2), ACCRUE)
    envs.append(f.collected(1, "dave", H(4), "T2"))
    envs += _round(f, "T2", "r22", [bet("d2", 1, "dave", "banker", 3_000)], BANKER_BY_5, H(5), ACCRUE)
    # surveillance: Alice flagged at both tables (3,000 + 2,500 expected), Bob at T1 (400); Bob the day before
    envs += [_alert(f, "T1", "bob", "x0", 20_000, 9_000, H(-1, 0)), _alert(f, "T1", "alice", "x1", 10_000, 3_000, H(1, 4)),
             _alert(f, "T1", "bob", "x2", 2_000, 400, H(3, 4)), _alert(f, "T2", "alice", "x3", 5_000, 2_500, H(5, 59))]
    return envs


def fold(envs: list[Envelope], core: ProjectionCore | None = None) -> dict[str, ProjectionState]:
    """Each envelope folded as the projection does (own streams by ``evolve``, inputs by ``absorb``)."""
    core = core or ProjectionCore()
    own = {TOP.PROJECTION_ODDS, TOP.PROJECTION_LEDGER, TOP.PROJECTION_ALERTS}
    states: dict[str, ProjectionState] = {}
    for e in envs:
        s = states.get(e.table_id) or core.initial(e.table_id)
        states[e.table_id] = core.evolve(s, e) if e.stream in own else core.absorb(s, e)
    return states


def by_stream(envs: list[Envelope]) -> list[Envelope]:
    """A rebuild's order: the own stream first, then each input stream in turn."""
    order = (TOP.PROJECTION_ALERTS, TOP.SHOE_EVENTS, TOP.DEALING_EVENTS, TOP.WAGERING_EVENTS, TOP.SETTLEMENT_EVENTS)
    return [e for s in order for e in envs if e.stream == s]


@pytest.fixture(scope="module")
def day() -> dict[str, ProjectionState]:
    return fold(hand_made_day())


def test_hold_is_rounded_half_even_to_a_basis_point():
    assert hold_bps(1234, 10_000) == 1234
    assert hold_bps(1, 20_000) == 0 and hold_bps(3, 20_000) == 2  # 0.5 bp and 1.5 bp: to the even
    assert hold_bps(-5, 40_000) == -1 and hold_bps(-12_500, 18_000) == -6944
    assert hold_bps(100, 0) is None and pct(None) is None
    assert (pct(1234), pct(-5), pct(10_000), pct(0)) == ("12.34", "-0.05", "100.00", "0.00")


def test_day_and_hour_start_at_the_cutoff():
    assert day_and_hour(H(0), 6) == (DAY, 0) and day_and_hour(H(23, 59), 6) == (DAY, 23)
    assert day_and_hour(H(-1, 30), 6) == ("2026-03-01", 23)
    assert day_and_hour(datetime(2026, 3, 2, 6), 6) == (DAY, 0)  # naive: UTC


def test_the_hourly_results_of_the_hand_made_day(day):
    assert [(r["hour"], r["hour_start_utc"], r["rounds"], r["drop_cents"], r["win_cents"], r["hold_bps"],
             r["hold_pct"]) for r in hourly_rows("T1", day["T1"], DAY)] == [
        (1, "2026-03-02T07:00:00Z", 2, 18_000, -12_500, -6944, "-69.44"),
        # the voided round: no round (never decided), no drop, no win (issue 24 fix 9)
        (3, "2026-03-02T09:00:00Z", 1, 20_000, 20_000, 10_000, "100.00"),
        (9, "2026-03-02T15:00:00Z", 1, 3_000, -2_850, -9500, "-95.00"),
    ]
    assert [(r["hour"], r["drop_cents"], r["win_cents"]) for r in hourly_rows("T2", day["T2"], DAY)] == [
        (2, 10_000, -9_500), (5, 3_000, -2_850)]
    assert [(r["hour"], r["drop_cents"], r["win_cents"]) for r in hourly_rows("T1", day["T1"], "2026-03-01")] == [
        (23, 1_000, 1_000)]


def test_the_hourly_csv_bytes(day):
    rows = hourly_rows("T1", day["T1"], DAY) + hourly_rows("T2", day["T2"], DAY)
    assert hourly_csv(rows) == (
        "table_id,gaming_day,hour_start_utc,hour_end_utc,rounds,drop_cents,win_cents,hold_pct\r\n"
        "T1,2026-03-02,2026-03-02T07:00:00Z,2026-03-02T08:00:00Z,2,18000,-12500,-69.44\r\n"
        "T1,2026-03-02,2026-03-02T09:00:00Z,2026-03-02T10:00:00Z,1,20000,20000,100.00\r\n"
        "T1,2026-03-02,2026-03-02T15:00:00Z,2026-03-02T16:00:00Z,1,3000,-2850,-95.00\r\n"
        "T2,2026-03-02,2026-03-02T08:00:00Z,2026-03-02T09:00:00Z,1,10000,-9500,-95.00\r\n"
        "T2,2026-03-02,2026-03-02T11:00:00Z,2026-03-02T12:00:00Z,1,3000,-2850,-95.00\r\n")
    assert hourly_csv([]) == ",".join(CSV_COLUMNS) + "\r\n"


def test_the_cage_view_shifts_day_and_commission(day):
    v = cage_view("T1", day["T1"], DAY, PitSettings())
    assert v["day"] == {"rounds": 4, "drop_cents": 41_000, "win_cents": 4_650, "hold_bps": 1134, "hold_pct": "11.34"}
    assert v["ledger_table_result_cents"] == 4_650  # the ledger's game + commission agrees to the cent
    assert [(s["shift"], s["start_utc"], s["end_utc"], s["rounds"], s["drop_cents"], s["win_cents"], s["hold_pct"])
            for s in v["shifts"]] == [
        (1, "2026-03-02T06:00:00Z", "2026-03-02T14:00:00Z", 3, 38_000, 7_500, "19.74"),  # r1, r2, r3 (r4 voided)
        (2, "2026-03-02T14:00:00Z", "2026-03-02T22:00:00Z", 1, 3_000, -2_850, "-95.00"),
        (3, "2026-03-02T22:00:00Z", "2026-03-03T06:00:00Z", 0, 0, 0, None)]
    assert v["commission"] == [{"player_id": "alice", "deducted_cents": 650, "accrued_cents": 0, "owed_cents": 650,
                                "collected_cents": 650, "collected_from_box_cents": 0, "outstanding_cents": 0}]
    v2 = cage_view("T2", day["T2"], DAY, PitSettings())
    assert v2["day"]["win_cents"] == v2["ledger_table_result_cents"] == -12_350 and v2["day"]["hold_pct"] == "-95.00"
    assert v2["commission"] == [{"player_id": "dave", "deducted_cents": 0, "accrued_cents": 650, "owed_cents": 650,
                                 "collected_cents": 500, "collected_from_box_cents": 500, "outstanding_cents": 150}]
    assert v2["commission_totals"]["outstanding_cents"] == 150
    prev = cage_view("T1", day["T1"], "2026-03-01", PitSettings())  # the ledger keeps the current day's totals
    assert (prev["day"]["win_cents"], prev["ledger_table_result_cents"]) == (1_000, None)
    # two shifts of 12 hours from 18:00 UTC: hours 12-23 of the day are the second
    v12 = cage_view("T1", day["T1"], DAY, PitSettings(shift_starts=(0, 12)))
    assert [(s["end_utc"], s["drop_cents"]) for s in v12["shifts"]] == [("2026-03-02T18:00:00Z", 41_000),
                                                                         ("2026-03-03T06:00:00Z", 0)]


def test_players_are_ranked_by_expected_gain_and_raised_at_the_threshold(day):
    ranked = player_ranking(day, DAY, 5_000)
    assert ranked == [
        {"rank": 1, "player_id": "alice", "flagged_bets": 2, "stake_cents": 15_000, "expected_gain_cents": 5_500,
         "tables": ["T1", "T2"], "raised": True, "first_flagged_at": "2026-03-02T07:04:00Z",
         "last_flagged_at": "2026-03-02T11:59:00Z"},
        {"rank": 2, "player_id": "bob", "flagged_bets": 1, "stake_cents": 2_000, "expected_gain_cents": 400,
         "tables": ["T1"], "raised": False, "first_flagged_at": "2026-03-02T09:04:00Z",
         "last_flagged_at": "2026-03-02T09:04:00Z"}]
    assert open_alerts(ranked) == {"T1": 1, "T2": 1}
    assert [p["raised"] for p in player_ranking(day, DAY, 5_501)] == [False, False]
    assert [(p["player_id"], p["expected_gain_cents"]) for p in player_ranking(day, "2026-03-01", 5_000)] == [
        ("bob", 9_000)]  # the day before is its own day


def test_voided_rounds_and_irregularities_per_table(day):
    got = irregularities(day, DAY)
    assert [t["table_id"] for t in got] == ["T1"]
    t1 = got[0]
    assert (t1["voided_total"], t1["voided"]) == (1, [{"round_id": "r4", "reason": "card dealt to the wrong hand",
                                                       "at": "2026-03-02T09:29:00Z"}])
    assert t1["irregularities_total"] == 1 and t1["irregularities"][0]["kind"] == "card_out_of_order"
    assert t1["irregularities"][0]["disposition"] == "discarded" and t1["irregularities"][0]["rule"] == "13:69F-3.7"


def test_the_floor_at_a_moment_of_the_second_shift(day):
    v = floor_view(day, H(9, 30), PitSettings(), money=True)
    assert (v["gaming_day"], v["shift"]) == (DAY, {"shift": 2, "start_utc": "2026-03-02T14:00:00Z",
                                                   "end_utc": "2026-03-02T22:00:00Z"})
    t1, t2 = v["tables"]
    assert (t1["shift"]["drop_cents"], t1["shift"]["win_cents"], t1["day"]["win_cents"]) == (3_000, -2_850, 4_650)
    assert t1["table_result_day_cents"] == 4_650 and (t1["open_alerts"], t2["open_alerts"]) == (1, 1)
    assert (t1["voided_rounds"], t1["irregularities"]) == (1, 1)
    assert t2["shift"] == {"rounds": 0, "drop_cents": 0, "win_cents": 0, "hold_bps": None, "hold_pct": None}
    assert v["totals"]["day"] == {"rounds": 6, "drop_cents": 54_000, "win_cents": -7_700, "hold_bps": -1426,
                                  "hold_pct": "-14.26"}
    public = floor_view(day, H(9, 30), PitSettings(), money=False)
    assert set(public["tables"][0]) == {"table_id", "variant", "shoe_id", "cards_out", "rounds_this_shoe",
                                        "last_result"}
    assert "totals" not in public and "alice" not in repr(public)
    # the live floor's rows of the tables that changed: the same rows (alerts still ranked over every table)
    t2_only = floor_view(day, H(9, 30), PitSettings(), money=True, only=["T2", "T9"], totals=False)
    assert t2_only["tables"] == [t2] and "totals" not in t2_only


def test_the_state_is_the_same_whatever_the_order_of_the_streams():
    envs = hand_made_day()
    live, rebuilt = fold(envs), fold(by_stream(envs))
    assert {t: s.pit for t, s in live.items()} == {t: s.pit for t, s in rebuilt.items()}
    assert rebuilt["T1"].pit.days.keys() == {"2026-03-01", DAY}


def test_two_gaming_days_are_held_and_older_ones_dropped():
    envs = hand_made_day()
    f = Feed(seq={(e.stream, e.table_id): e.seq for e in envs})
    later = _round(f, "T1", "r9", [bet("b9", 2, "bob", "banker", 1_000)], PLAYER_9, H(49))  # 2026-03-04
    for order in (envs + later, by_stream(envs + later), later + envs):
        s = fold(order)
        assert s["T1"].pit.days.keys() == {"2026-03-04"}  # 03-03 had nothing; 03-02 and before are gone
        assert s["T2"].pit.days.keys() == {DAY}  # T2 folded nothing later: its day stays
    assert fold(envs + later)["T1"].pit == fold(later + envs)["T1"].pit


def test_settings_from_the_environment():
    assert PitSettings.from_env({}) == PitSettings(5_000, (0, 8, 16))
    s = PitSettings.from_env({"CROUPIER_SURVEILLANCE_RAISE_CENTS": "25000", "CROUPIER_SHIFT_STARTS": "0, 12"})
    assert (s.raise_threshold_cents, s.shift_starts, s.shift_of(11), s.shift_of(12), s.shift_hours(2)) == (
        25_000, (0, 12), 1, 2, (12, 24))
    for env, name in (({"CROUPIER_SURVEILLANCE_RAISE_CENTS": "fifty"}, "CROUPIER_SURVEILLANCE_RAISE_CENTS"),
                      ({"CROUPIER_SURVEILLANCE_RAISE_CENTS": "0"}, "CROUPIER_SURVEILLANCE_RAISE_CENTS"),
                      ({"CROUPIER_SHIFT_STARTS": "8,16"}, "CROUPIER_SHIFT_STARTS"),
                      ({"CROUPIER_SHIFT_STARTS": "0,16,8"}, "CROUPIER_SHIFT_STARTS"),
                      ({"CROUPIER_SHIFT_STARTS": "0,24"}, "CROUPIER_SHIFT_STARTS"),
                      ({"CROUPIER_SHIFT_STARTS": "0,x"}, "CROUPIER_SHIFT_STARTS")):
        with pytest.raises(ValueError, match=name):
            PitSettings.from_env(env)


# ---- shoe commitments ----------------------------------------------------------------------------------
ORDER = ["AS", "2H", "3D", "4C", "5S", "6H", "7D", "8C", "9S", "TH", "JD", "QC", "KS", "AH", "2D", "3C"]
SALT = "00112233445566778899aabbccddeeff"
SPEC = ShoeSpec(decks=1)


def _shoe_events(f: Feed, *, order=ORDER, salt=SALT, committed=True, drawn=None, positions=None,
                 cards_dealt=None) -> list[Envelope]:
    """A shoe cut at 3 (so it deals from "4C"), "4C" exposed and 2 burned, then cards drawn from position 3,
    all at 08:00 UTC."""
    at = H(2)
    cut = ORDER[3:] + ORDER[:3]
    drawn = drawn if drawn is not None else cut[3:8]
    positions = positions if positions is not None else list(range(3, 3 + len(drawn)))
    sh = TOP.SHOE_EVENTS
    out = [f.emit(sh, ShoeLoaded(shoe_id="s1", rules=SPEC, cards=16, source="csprng" if committed else "physical",
                                 commitment=commitment(ORDER, SALT) if committed else ""), at),
           f.emit(sh, ShoeCut(shoe_id="s1", cut_at=3), at),
           f.emit(sh, ShoeBurned(shoe_id="s1", exposed=cut[0], burned_count=2, burned=cut[1:3]), at)]
    for n, (card, pos) in enumerate(zip(drawn, positions), 1):
        out.append(f.emit(sh, CardDrawn(shoe_id="s1", round_id="r1", card_number=n, card=card, position=pos,
                                        cards_left=16 - pos - 1), at))
    out.append(f.emit(sh, ShoeClosed(shoe_id="s1", reason="dealer closed", cards_dealt=cards_dealt or 3 + len(drawn),
                                     order=order if committed else [], salt=salt if committed else ""), at))
    return out


def _verdict(envs: list[Envelope]) -> tuple[str, str, str]:
    p = PitState()
    for e in envs:
        p = p.absorb(e, 6)
    assert p.shoe is None  # a closed shoe is forgotten
    (s,) = p.closed_shoes
    return s.commitment, s.cards, s.detail


def test_a_closed_shoe_is_verified_against_its_commitment_and_cards():
    assert _verdict(_shoe_events(Feed())) == ("verified", "verified", "")
    assert _verdict(_shoe_events(Feed(), salt="ff" + SALT[2:])) == (
        "mismatch", "not_checked", "the revealed order and salt do not hash to the commitment")
    assert _verdict(_shoe_events(Feed(), salt="not hex")) == ("mismatch", "not_checked", "the revealed salt is not hex")
    cut = ORDER[3:] + ORDER[:3]
    swapped = [cut[4], cut[3], *cut[5:8]]
    assert _verdict(_shoe_events(Feed(), drawn=swapped)) == ("verified", "mismatch",
                                                             "the cards drawn are not the revealed order")
    assert _verdict(_shoe_events(Feed(), positions=[3, 4, 6, 7, 8])) == (
        "verified", "mismatch", "cards did not leave the shoe one after another")
    assert _verdict(_shoe_events(Feed(), cards_dealt=9)) == ("verified", "mismatch",
                                                             "closed with 9 cards dealt, 8 folded")
    assert _verdict(_shoe_events(Feed(), committed=False)) == ("no_commitment", "not_checked", "")


def test_a_shoe_closed_without_its_load_is_not_seen():
    f = Feed()
    envs = _shoe_events(f)
    assert verdict(None, envs[-1].payload) == ("not_seen", "not_checked",
                                               "its ShoeLoaded was not folded by this projection")
    day = fold([f.emit(TOP.DEALING_EVENTS, TableOpened(config=table_spec(punto_banco_full())), H(0)), *envs])
    assert [(s["table_id"], s["shoe_id"], s["commitment"], s["cards"], s["closed_at"])
            for s in closed_shoes(day, DAY)] == [("T1", "s1", "verified", "verified", "2026-03-02T08:00:00Z")]
    assert closed_shoes(day, "2026-03-01") == []


def test_notes_and_closed_shoes_are_capped_and_counted():
    from services.projection.pit_state import MAX_CLOSED_SHOES, MAX_NOTES

    f = Feed()
    envs = [f.emit(TOP.DEALING_EVENTS, RoundVoided(round_id=f"v{i}", reason="misdeal"), H(1, i % 60))
            for i in range(MAX_NOTES + 50)]
    for i in range(MAX_CLOSED_SHOES + 3):
        envs += [f.emit(TOP.SHOE_EVENTS, ShoeLoaded(shoe_id=f"s{i}", rules=SPEC, cards=16, source="physical"), H(2)),
                 f.emit(TOP.SHOE_EVENTS, ShoeClosed(shoe_id=f"s{i}", reason="done", cards_dealt=0), H(2))]
    p = fold(envs)["T1"].pit
    d = p.days[DAY]
    assert (len(d.voided), d.voided_total, d.voided[-1].round_id) == (MAX_NOTES, MAX_NOTES + 50, f"v{MAX_NOTES + 49}")
    assert len(p.closed_shoes) == MAX_CLOSED_SHOES and p.closed_shoes[-1].shoe_id == f"s{MAX_CLOSED_SHOES + 2}"
    assert {s.commitment for s in p.closed_shoes} == {"no_commitment"}


def test_each_profile_is_labelled_by_the_game_it_deals():
    from baccarat.table import TABLE_PROFILES
    from services.projection.pages import game_label

    assert {name: game_label(make()) for name, make in TABLE_PROFILES.items()} == {
        "punto_banco": "Punto Banco", "punto_banco_basic": "Punto Banco",
        "no_vig_dragon_7": "No-vig Dragon 7", "no_vig_dragon_7_panda_8": "No-vig Dragon 7 & Panda 8",
        "casino_night": "Casino Night", "casino_night_literal": "Casino Night",
        "punto_banco_curator": "Punto Banco (curator)", "chemin_de_fer": "Chemin de fer"}
