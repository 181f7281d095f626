"""The cage ledger (services/projection/ledger.py): hand-worked settlements with every balance written out,
balance and reconciliation properties over random floors, idempotency, scopes (shoe, gaming day), digest."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.budget import examples

from baccarat.cards import parse_cards
from baccarat.drawing import PUNTO_BANCO
from baccarat.money import CommissionMode
from baccarat.round import resolve
from baccarat.table import punto_banco, punto_banco_full
from baccarat.wagers import Wager, settle
from contracts import topics as TOP
from contracts.envelope import Envelope, event_id
from contracts.events import (
    BetLine,
    BetPlaced,
    BetSettled,
    BettingClosed,
    CommissionAccrued,
    CommissionCollected,
    Event,
    RoundOpened,
    RoundSettled,
)
from services.projection.ledger import Entry, Ledger, gaming_day

T = "T1"
NIGHT = datetime(2024, 5, 1, 22, 0, tzinfo=UTC)  # gaming day 2024-05-01
BANKER_BY_5 = "10,10,K,5,10"  # P0 B5
TIE_3 = "2,10,3,3,8"  # 3-3


def outcome(cards: str):
    return resolve(parse_cards(cards), PUNTO_BANCO)[0]


# ---- building events as the services do ------------------------------------------------------------
@dataclass
class Feed:
    """Envelopes with gapless per-(stream, table) seq and contract event ids; settlement envelopes carry
    the round but no shoe, as the settlement service's do."""

    seq: dict[tuple[str, str], int] = field(default_factory=dict)
    owed: dict[tuple[str, int], int] = field(default_factory=dict)

    def emit(self, stream: str, payload: Event, at: datetime, *, table: str = T, round_id: str | None = None,
             shoe_id: str | None = None) -> Envelope:
        self.seq[(stream, table)] = n = self.seq.get((stream, table), 0) + 1
        return Envelope(event_id=event_id(stream, table, n), stream=stream, table_id=table, seq=n,
                        causation_id="cause", correlation_id=round_id or table, occurred_at=at,
                        round_id=round_id, shoe_id=shoe_id, payload=payload)

    def opened(self, round_id: str, shoe_id: str, at: datetime, table: str = T) -> Envelope:
        return self.emit(TOP.DEALING_EVENTS, RoundOpened(round_id=round_id, shoe_id=shoe_id, number=1), at,
                         table=table, round_id=round_id, shoe_id=shoe_id)

    def closed(self, round_id: str, bets: list[BetLine], at: datetime, table: str = T) -> Envelope:
        return self.emit(TOP.WAGERING_EVENTS, BettingClosed(round_id=round_id, bets=bets), at, table=table,
                         round_id=round_id)

    def settled(self, round_id: str, results: list[BetSettled], at: datetime,
                table: str = T) -> list[Envelope]:
        """The settlement service's decision: the BetSettled rows, CommissionAccrued per seat, RoundSettled."""
        out = [self.emit(TOP.SETTLEMENT_EVENTS, r, at, table=table, round_id=round_id) for r in results]
        accrued: dict[int, tuple[str, int]] = {}
        for r in results:
            if r.commission_accrued and r.commission:
                pid, amt = accrued.get(r.seat, (r.player_id, 0))
                accrued[r.seat] = (pid, amt + r.commission)
        for seat in sorted(accrued):
            pid, amt = accrued[seat]
            self.owed[(table, seat)] = owed = self.owed.get((table, seat), 0) + amt
            out.append(self.emit(TOP.SETTLEMENT_EVENTS, CommissionAccrued(
                seat=seat, player_id=pid, amount_cents=amt, owed_cents=owed, round_id=round_id),
                at, table=table, round_id=round_id))
        stakes, payouts = sum(r.stake for r in results), sum(r.payout for r in results)
        out.append(self.emit(TOP.SETTLEMENT_EVENTS, RoundSettled(
            round_id=round_id, bets=len(results), stakes=stakes, payouts=payouts,
            commission=sum(r.commission for r in results),
            table_result=stakes - payouts + sum(a for _, a in accrued.values())), at, table=table,
            round_id=round_id))
        return out

    def collected(self, seat: int, player_id: str, at: datetime, table: str = T) -> Envelope:
        amt = self.owed.pop((table, seat))
        return self.emit(TOP.SETTLEMENT_EVENTS, CommissionCollected(seat=seat, player_id=player_id,
                                                                    amount_cents=amt), at, table=table)


def bet(bet_id: str, seat: int, player: str, wager: str, cents: int) -> BetLine:
    return BetLine(bet_id=bet_id, seat=seat, player_id=player, wager=wager, amount_cents=cents)


def by_rules(round_id: str, b: BetLine, cards: str, config=None) -> BetSettled:
    """A BetSettled exactly as the settlement service derives it from the rules core."""
    s = settle(Wager(b.wager), b.amount_cents, outcome(cards), config or punto_banco_full())
    return BetSettled(round_id=round_id, bet_id=b.bet_id, seat=b.seat, player_id=b.player_id, wager=b.wager,
                      stake=s.stake, result=s.result.value, category=s.category, win=s.win,
                      commission=s.commission, commission_accrued=s.commission_accrued, payout=s.payout,
                      odds=str(s.odds) if s.odds else "")


def fold(envs, **kw) -> Ledger:
    return Ledger(**kw).post_all(envs)


def round_results(envs) -> list[tuple[Envelope, RoundSettled]]:
    return [(e, e.payload) for e in envs if isinstance(e.payload, RoundSettled)]


def lines(led: Ledger) -> list[tuple[str, tuple]]:
    return [(x.kind, x.lines) for x in led.entries()]


# ---- hand-worked settlements -------------------------------------------------------------------------
def test_banker_win_with_commission_deducted_pays_19_to_20():
    f = Feed()
    b = bet("b1", 1, "alice", "banker", 2000)
    s = by_rules("r1", b, BANKER_BY_5)
    assert (s.result, s.win, s.commission, s.commission_accrued, s.payout) == ("win", 2000, 100, False, 3900)
    opened, closed = f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b], NIGHT)
    led = fold([opened, closed])
    assert led.balances() == {"patron:alice": -2000, "table:T1:wagers": 2000}  # $20 on the layout
    envs = [opened, closed, *f.settled("r1", [s], NIGHT + timedelta(minutes=1))]
    led = fold(envs)
    # the patron is up $19; the house lost the $20 win and earned $1 commission
    assert led.balances() == {"patron:alice": 1900, "table:T1:commission": 100, "table:T1:game": -2000,
                              "table:T1:wagers": 0}
    assert lines(led) == [
        ("stake_taken", (("patron:alice", -2000), ("table:T1:wagers", 2000))),
        ("bet_won", (("table:T1:wagers", -2000), ("table:T1:game", -2000), ("patron:alice", 4000))),
        ("commission_deducted", (("patron:alice", -100), ("table:T1:commission", 100))),
    ]
    (_, rs), = round_results(envs)
    assert led.table_result(T) == rs.table_result == -1900
    settled = envs[2]
    assert [x.entry_id for x in led.entries()] == [f"{closed.event_id}/0", f"{settled.event_id}/0",
                                                  f"{settled.event_id}/1"]
    x = led.entries()[1]
    assert (x.table_id, x.shoe_id, x.round_id, x.seat, x.player_id, x.bet_id, x.gaming_day) == (
        T, "shoe-1", "r1", 1, "alice", "b1", "2024-05-01")
    assert x.source_event_id == settled.event_id and x.occurred_at == NIGHT + timedelta(minutes=1)


def test_a_loss_goes_to_the_house():
    f = Feed()
    b = bet("b2", 2, "bob", "player", 5000)
    s = by_rules("r1", b, BANKER_BY_5)
    assert (s.result, s.payout) == ("lose", 0)
    envs = [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b], NIGHT), *f.settled("r1", [s], NIGHT)]
    led = fold(envs)
    assert led.balances() == {"patron:bob": -5000, "table:T1:game": 5000, "table:T1:wagers": 0}
    assert lines(led)[1] == ("bet_lost", (("table:T1:wagers", -5000), ("table:T1:game", 5000)))
    assert led.table_result(T) == round_results(envs)[0][1].table_result == 5000


def test_a_void_returns_the_stake():
    f = Feed()
    b = bet("b3", 3, "carol", "banker", 2000)
    s = by_rules("r1", b, TIE_3)  # Banker pushes on a tie
    assert (s.result, s.category, s.payout) == ("void", "tie_push", 2000)
    envs = [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b], NIGHT), *f.settled("r1", [s], NIGHT)]
    led = fold(envs)
    assert led.balances() == {"patron:carol": 0, "table:T1:wagers": 0}
    assert lines(led)[1] == ("bet_voided", (("table:T1:wagers", -2000), ("patron:carol", 2000)))
    assert led.table_result(T) == round_results(envs)[0][1].table_result == 0


def test_tie_pays_8_to_1():
    f = Feed()
    b = bet("b4", 4, "dave", "tie", 1000)
    s = by_rules("r1", b, TIE_3)
    assert (s.result, s.odds, s.win, s.payout) == ("win", "8 to 1", 8000, 9000)
    envs = [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b], NIGHT), *f.settled("r1", [s], NIGHT)]
    led = fold(envs)
    assert led.balances() == {"patron:dave": 8000, "table:T1:game": -8000, "table:T1:wagers": 0}
    assert led.table_result(T) == round_results(envs)[0][1].table_result == -8000


def test_commission_accrued_to_the_seat_then_collected():
    f = Feed()
    accrue = punto_banco(commission_mode=CommissionMode.ACCRUE)
    b = bet("b5", 3, "erin", "banker", 2000)
    s = by_rules("r1", b, BANKER_BY_5, accrue)
    assert (s.result, s.win, s.commission, s.commission_accrued, s.payout) == ("win", 2000, 100, True, 4000)
    envs = [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b], NIGHT), *f.settled("r1", [s], NIGHT)]
    led = fold(envs)
    # paid the full $40; the house lost $20 at play, earned $1, and seat 3 owes it ($1 credit on its account)
    assert led.balances() == {"patron:erin": 2000, "table:T1:commission": 100, "table:T1:game": -2000,
                              "table:T1:seat:3:commission_owed": -100, "table:T1:wagers": 0}
    assert [k for k, _ in lines(led)] == ["stake_taken", "bet_won", "commission_accrued"]
    assert lines(led)[2][1] == (("table:T1:seat:3:commission_owed", -100), ("table:T1:commission", 100))
    assert led.table_result(T) == round_results(envs)[0][1].table_result == -1900

    later = NIGHT + timedelta(hours=3)  # 01:00 next calendar day, same gaming day
    led = led.post(f.collected(3, "erin", later))
    assert led.balances() == {"patron:erin": 1900, "table:T1:commission": 100, "table:T1:game": -2000,
                              "table:T1:seat:3:commission_owed": 0, "table:T1:wagers": 0}
    x = led.entries()[-1]
    assert (x.kind, x.lines, x.round_id, x.shoe_id, x.gaming_day) == (
        "commission_collected", (("patron:erin", -100), ("table:T1:seat:3:commission_owed", 100)), None, None,
        "2024-05-01")
    assert led.table_result(T) == -1900  # collecting is not a result


def test_a_round_with_every_kind_reconciles_with_round_settled():
    f = Feed()
    book = [bet("a", 1, "alice", "banker", 2000), bet("b", 2, "bob", "player", 5000),
            bet("c", 2, "bob", "tie", 1000), bet("d", 5, "dave", "cards_5", 2500)]
    results = [by_rules("r1", b, BANKER_BY_5) for b in book]
    assert [(r.result, r.payout) for r in results] == [("win", 3900), ("lose", 0), ("lose", 0), ("win", 7500)]
    envs = [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", book, NIGHT), *f.settled("r1", results, NIGHT)]
    led = fold(envs)
    assert led.balances() == {"patron:alice": 1900, "patron:bob": -6000, "patron:dave": 5000,
                              "table:T1:commission": 100, "table:T1:game": -1000, "table:T1:wagers": 0}
    rs = round_results(envs)[0][1]
    assert (rs.stakes, rs.payouts, rs.table_result) == (10500, 11400, -900) and led.table_result(T) == -900
    assert led.balances(player_id="bob") == {"patron:bob": -6000, "table:T1:game": 6000, "table:T1:wagers": 0}


def test_stakes_are_taken_from_the_closed_book_not_from_placed_bets():
    f = Feed()
    placed = f.emit(TOP.WAGERING_EVENTS, BetPlaced(round_id="r1", bet_id="b1", seat=1, player_id="alice",
                                                   wager="banker", amount_cents=2000), NIGHT, round_id="r1")
    led = Ledger()
    assert led.post(placed) is led and led.balances() == {}
    led = led.post(f.closed("r1", [], NIGHT))  # withdrawn before "No more bets": nothing taken
    assert led.balances() == {} and len(led) == 0


# ---- scopes: gaming day and shoe ---------------------------------------------------------------------
def test_gaming_day_cutoff():
    assert gaming_day(datetime(2024, 5, 2, 3, 0, tzinfo=UTC)) == "2024-05-01"
    assert gaming_day(datetime(2024, 5, 2, 5, 59, 59, 999999, tzinfo=UTC)) == "2024-05-01"
    assert gaming_day(datetime(2024, 5, 2, 6, 0, tzinfo=UTC)) == "2024-05-02"
    assert gaming_day(datetime(2024, 5, 2, 3, 0, tzinfo=UTC), cutoff_hour=0) == "2024-05-02"
    assert gaming_day(datetime(2024, 5, 2, 3, 0, tzinfo=timezone(timedelta(hours=-4)))) == "2024-05-02"  # 07:00Z
    assert gaming_day(datetime(2024, 5, 2, 3, 0)) == "2024-05-01"  # naive = UTC
    with pytest.raises(ValueError):
        Ledger(cutoff_hour=24)


def test_filters_by_gaming_day_and_shoe():
    f = Feed()
    before, after = datetime(2024, 5, 2, 5, 30, tzinfo=UTC), datetime(2024, 5, 2, 6, 30, tzinfo=UTC)
    b1, b2, b3 = bet("b1", 1, "alice", "player", 1000), bet("b2", 1, "alice", "player", 3000), \
        bet("b3", 2, "bob", "banker", 2000)
    envs = [f.opened("r1", "shoe-1", before), f.closed("r1", [b1], before),
            *f.settled("r1", [by_rules("r1", b1, BANKER_BY_5)], before),  # alice loses $10 on 2024-05-01
            f.opened("r2", "shoe-2", after), f.closed("r2", [b2, b3], after),
            *f.settled("r2", [by_rules("r2", b2, BANKER_BY_5), by_rules("r2", b3, BANKER_BY_5)], after)]
    led = fold(envs)
    assert led.balances(gaming_day="2024-05-01") == {"patron:alice": -1000, "table:T1:game": 1000,
                                                     "table:T1:wagers": 0}
    assert led.balances(gaming_day=date(2024, 5, 2)) == {
        "patron:alice": -3000, "patron:bob": 1900, "table:T1:commission": 100, "table:T1:game": 1000,
        "table:T1:wagers": 0}
    assert led.balances(shoe_id="shoe-1") == led.balances(gaming_day="2024-05-01")
    assert led.balances(shoe_id="shoe-2") == led.balances(gaming_day="2024-05-02")
    assert led.balances(player_id="alice", shoe_id="shoe-2") == {"patron:alice": -3000, "table:T1:game": 3000,
                                                                "table:T1:wagers": 0}
    shoe_of = {"r1": "shoe-1", "r2": "shoe-2"}
    for scope in ({"gaming_day": "2024-05-01"}, {"gaming_day": "2024-05-02"}, {"shoe_id": "shoe-1"},
                  {"shoe_id": "shoe-2"}, {}):
        expect = sum(rs.table_result for e, rs in round_results(envs)
                     if all({"gaming_day": gaming_day(e.occurred_at), "shoe_id": shoe_of[rs.round_id]}[k] == v
                            for k, v in scope.items()))
        assert led.table_result(T, **scope) == expect, scope
    assert led.table_result(T, gaming_day="2024-05-01") == 1000
    assert led.table_result(T, gaming_day="2024-05-02") == 1100  # bob +$19 net, alice -$30
    assert led.table_result("T9") == 0 and led.balances(table_id="T9") == {}
    # a different cutoff moves the early round into the same day
    assert fold(envs, cutoff_hour=5).balances(gaming_day="2024-05-01") == {}


def test_a_round_straddling_the_cutoff_leaves_its_stake_on_the_layout_overnight():
    f = Feed()
    b = bet("b1", 1, "alice", "player", 1000)
    close, settle_at = datetime(2024, 5, 2, 5, 59, tzinfo=UTC), datetime(2024, 5, 2, 6, 1, tzinfo=UTC)
    envs = [f.opened("r1", "shoe-1", close), f.closed("r1", [b], close),
            *f.settled("r1", [by_rules("r1", b, BANKER_BY_5)], settle_at)]
    led = fold(envs)
    assert led.balances(gaming_day="2024-05-01") == {"patron:alice": -1000, "table:T1:wagers": 1000}
    assert led.balances(gaming_day="2024-05-02") == {"table:T1:game": 1000, "table:T1:wagers": -1000}
    assert led.table_result(T, gaming_day="2024-05-02") == round_results(envs)[0][1].table_result == 1000


def test_shoe_learnt_from_a_round_opened_that_arrives_after_the_settlement():
    f = Feed()
    b = bet("b1", 1, "alice", "player", 1000)
    opened, closed = f.opened("r1", "shoe-7", NIGHT), f.closed("r1", [b], NIGHT)
    settled = f.settled("r1", [by_rules("r1", b, BANKER_BY_5)], NIGHT)
    late = Ledger().post_all([closed, *settled])
    assert late.balances(shoe_id="shoe-7") == {} and late.entries()[1].shoe_id is None
    late = late.post(opened)
    in_order = fold([opened, closed, *settled])
    assert [x.shoe_id for x in late.entries()] == ["shoe-7", "shoe-7"]
    assert late.entries() == in_order.entries() and late.state_digest() == in_order.state_digest()
    assert late.balances(shoe_id="shoe-7") == {"patron:alice": -1000, "table:T1:game": 1000,
                                               "table:T1:wagers": 0}


# ---- idempotency, immutability, digest ----------------------------------------------------------------
def _session() -> list[Envelope]:
    f = Feed()
    accrue = punto_banco(commission_mode=CommissionMode.ACCRUE)
    b1, b2, b3 = bet("b1", 1, "alice", "banker", 2000), bet("b2", 2, "bob", "player", 5000), \
        bet("b3", 3, "erin", "banker", 4000)
    return [f.opened("r1", "shoe-1", NIGHT), f.closed("r1", [b1, b2, b3], NIGHT),
            *f.settled("r1", [by_rules("r1", b, BANKER_BY_5, accrue) for b in (b1, b2, b3)], NIGHT),
            f.collected(1, "alice", NIGHT + timedelta(minutes=5))]


def test_duplicate_delivery_books_nothing():
    envs = _session()
    led = fold(envs)
    for env in envs:
        assert led.post(env) is led
        assert led.post_with_entries(env) == (led, ())
    twice = fold([e for env in envs for e in (env, env)])
    replayed = fold(envs + envs[::-1] + envs)
    for other in (twice, replayed):
        assert other.entries() == led.entries() and other.balances() == led.balances()
        assert other.state_digest() == led.state_digest() and other == led
    assert len({x.entry_id for x in led.entries()}) == len(led) == 9


def test_snapshots_are_immutable_and_can_branch():
    envs = _session()
    mid = fold(envs[:3])
    before = (mid.entries(), mid.balances(), mid.state_digest())
    full = mid.post_all(envs[3:])
    assert (mid.entries(), mid.balances(), mid.state_digest()) == before
    branch = mid.post_all(envs[3:])  # posting to an older snapshot copies, the newer one is untouched
    assert branch == full and branch.entries() == full.entries()
    other = mid.post(envs[-1])
    assert len(other) == len(mid) + 1 and full.entries() == branch.entries()


def test_digest_differs_when_a_settlement_differs():
    envs = _session()
    led = fold(envs)
    i = next(k for k, e in enumerate(envs) if isinstance(e.payload, BetSettled) and e.payload.result == "lose")
    e = envs[i]
    won = BetSettled(**{**{k: getattr(e.payload, k) for k in e.payload.__struct_fields__},
                        "result": "win", "win": 5000, "payout": 10000})
    changed = envs[:i] + [Envelope(**{**{k: getattr(e, k) for k in e.__struct_fields__}, "payload": won})] \
        + envs[i + 1:]
    assert fold(changed).state_digest() != led.state_digest()
    assert fold(envs[:-1]).state_digest() != led.state_digest()
    assert fold(envs, cutoff_hour=23).state_digest() != led.state_digest()  # other gaming days
    assert fold(envs).state_digest() == led.state_digest()
    assert len(led.state_digest()) == 64 and Ledger().state_digest() == Ledger().state_digest()


# ---- properties over random floors -------------------------------------------------------------------
WAGERS = ("banker", "player", "tie", "bonus_banker")
PLAYERS = ("p1", "p2", "p3", "p4")

outcomes = st.one_of(
    st.tuples(st.just("lose"), st.just(0), st.just(0), st.just(False)),
    st.tuples(st.just("void"), st.just(0), st.just(0), st.just(False)),
    st.tuples(st.just("win"), st.integers(1, 10**6), st.integers(0, 5000), st.booleans()),
)
round_spec = st.tuples(
    st.sampled_from(("T1", "T2")), st.sampled_from(("s1", "s2", "s3")),
    st.integers(0, 3 * 24 * 60),  # minutes after the start: several gaming days and cutoffs
    st.integers(0, 15),  # minutes between "No more bets" and the settlement
    st.lists(st.tuples(st.integers(1, 7), st.sampled_from(PLAYERS), st.sampled_from(WAGERS),
                       st.integers(1, 100_000), outcomes), max_size=5),
    st.booleans(),  # then collect one seat's commission
)


def build_floor(rounds) -> tuple[list[Envelope], list[tuple[str, str, str, int]], dict]:
    """Envelopes of random rounds, each RoundSettled's scope and table_result, and expectations."""
    f = Feed()
    start = datetime(2024, 5, 1, 0, 0, tzinfo=UTC)
    envs: list[Envelope] = []
    settled: list[tuple[str, str, str, int]] = []
    patron: dict[str, int] = defaultdict(int)
    for n, (table, shoe, minute, lag, bets, collect) in enumerate(rounds):
        rid, at = f"r{n}", start + timedelta(minutes=minute)
        book = [bet(f"{rid}-{k}", seat, pid, w, cents) for k, (seat, pid, w, cents, _) in enumerate(bets)]
        results = []
        for b, (*_, (res, win, com, acc)) in zip(book, bets):
            payout = {"lose": 0, "void": b.amount_cents}.get(res, b.amount_cents + win - (0 if acc else com))
            results.append(BetSettled(round_id=rid, bet_id=b.bet_id, seat=b.seat, player_id=b.player_id,
                                      wager=b.wager, stake=b.amount_cents, result=res, category=res,
                                      win=win, commission=com, commission_accrued=acc, payout=payout))
            patron[b.player_id] += payout - b.amount_cents
        envs += [f.opened(rid, shoe, at, table), f.closed(rid, book, at, table)]
        out = f.settled(rid, results, at + timedelta(minutes=lag), table)
        envs += out
        rs = out[-1]
        settled.append((table, shoe, gaming_day(rs.occurred_at), rs.payload.table_result))
        owing = sorted(k for k, v in f.owed.items() if k[0] == table and v > 0)
        if collect and owing:
            seat = owing[0][1]
            env = f.collected(seat, "p1", at + timedelta(minutes=lag + 1), table)
            patron["p1"] -= env.payload.amount_cents
            envs.append(env)
    return envs, settled, {"patron": dict(patron), "owed": dict(f.owed)}


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(round_spec, max_size=12), st.data())
def test_random_floors_balance_and_reconcile(rounds, data):
    envs, settled, expect = build_floor(rounds)
    led = fold(envs)
    entries = led.entries()
    assert all(x.total == 0 and x.lines and all(c for _, c in x.lines) for x in entries)
    assert len({x.entry_id for x in entries}) == len(entries)
    bal = led.balances()
    assert sum(bal.values()) == 0
    for table in ("T1", "T2"):
        assert bal.get(f"table:{table}:wagers", 0) == 0
        assert led.table_result(table) == sum(r for t, _, _, r in settled if t == table)
        for shoe in ("s1", "s2", "s3"):
            assert led.table_result(table, shoe_id=shoe) == sum(
                r for t, s, _, r in settled if (t, s) == (table, shoe))
        for day in {d for *_, d, _ in settled}:
            assert led.table_result(table, gaming_day=day) == sum(
                r for t, _, d, r in settled if (t, d) == (table, day))
            for shoe in ("s1", "s2", "s3"):
                assert led.table_result(table, shoe_id=shoe, gaming_day=day) == sum(
                    r for t, s, d, r in settled if (t, s, d) == (table, shoe, day))
    for pid, net in expect["patron"].items():
        assert bal.get(f"patron:{pid}", 0) == net
    for (table, seat), owed in expect["owed"].items():
        assert bal.get(f"table:{table}:seat:{seat}:commission_owed", 0) == -owed

    # any duplicate pattern, in any order, gives the same ledger
    dup = data.draw(st.lists(st.sampled_from(envs), max_size=2 * len(envs)) if envs else st.just([]))
    order = data.draw(st.permutations(envs + dup))
    again = fold(order)
    assert again.state_digest() == led.state_digest() and again.balances() == bal
    assert sorted(again.entries(), key=lambda x: x.entry_id) == sorted(entries, key=lambda x: x.entry_id)
    assert fold(envs + dup).entries() == entries  # same first deliveries: same journal order too


def test_entries_are_frozen():
    x = fold(_session()).entries()[0]
    assert isinstance(x, Entry)
    with pytest.raises(AttributeError):
        x.kind = "other"  # type: ignore[misc]
