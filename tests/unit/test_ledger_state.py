"""The projection's bounded ledger (services/projection/ledger_state.py) against the journal
(services/projection/ledger.py ``Ledger``, every entry kept): the running totals equal the journal's balances
scope by scope, the window holds each source stream's latest entries, a replay that folds one stream after
another holds what the live fold holds, and the state stays the same size however long the table runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import topics as TOP
from contracts.envelope import Envelope
from services.projection.ledger import Ledger, book, gaming_day, shoe_fact
from services.projection.ledger_state import CHUNK, ENTRY_WINDOW, LedgerState
from tests.unit.test_ledger import PLAYERS, WAGERS, Feed, bet, build_floor, outcomes
from tests.budget import examples


def fold_state(envs: list[Envelope], state: LedgerState | None = None) -> LedgerState:
    """Fold as ``ProjectionCore._post_ledger`` does: the shoe fact first, then the event's entries."""
    led = state or LedgerState()
    for env in envs:
        fact = shoe_fact(env)
        if fact is not None:
            led = led.learn_shoe(fact[0], fact[1], gaming_day(env.occurred_at))
        led = led.post(book(env), env.stream)
    return led


def by_stream(envs: list[Envelope]) -> list[Envelope]:
    """The order of a replay from offset zero: one stream after another, each in its own order."""
    return [e for s in (TOP.DEALING_EVENTS, TOP.WAGERING_EVENTS, TOP.SETTLEMENT_EVENTS) for e in envs
            if e.stream == s]


# one table, at most two gaming days (00:00 on 1 May is still the gaming day of 30 April): nothing is pruned
one_table_round = st.tuples(
    st.just("T1"), st.sampled_from(("s1", "s2", "s3")), st.integers(0, 24 * 60 - 20), st.integers(0, 15),
    st.lists(st.tuples(st.integers(1, 7), st.sampled_from(PLAYERS), st.sampled_from(WAGERS),
                       st.integers(1, 100_000), outcomes), max_size=5),
    st.booleans(),
)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(one_table_round, max_size=14))
def test_running_totals_equal_the_journal_scope_by_scope(rounds):
    envs, _, _ = build_floor(rounds)
    journal = Ledger().post_all(envs)
    live = fold_state(envs)
    days = sorted({x.gaming_day for x in journal.entries()})
    latest = days[-1] if days else None
    scopes = [{}] + [{"player_id": p} for p in PLAYERS]
    for shoe in ("s1", "s2", "s3"):
        scopes += [{"shoe_id": shoe}] + [{"shoe_id": shoe, "player_id": p} for p in PLAYERS]
        scopes += [{"shoe_id": shoe, "gaming_day": d} for d in days]
        scopes += [{"shoe_id": shoe, "gaming_day": d, "player_id": p} for d in days for p in PLAYERS]
    if latest:
        scopes += [{"gaming_day": latest}] + [{"gaming_day": latest, "player_id": p} for p in PLAYERS]
    for scope in scopes:
        want = {a: c for a, c in journal.balances(**scope).items() if c} if journal.entries(**scope) else {}
        got = {a: c for a, c in live.balances(**scope).items() if c}
        assert got == want, scope
        assert live.table_result("T1", **{k: v for k, v in scope.items() if k != "player_id"}) == \
            journal.table_result("T1", **{k: v for k, v in scope.items() if k != "player_id"})
    for old in days[:-1]:  # an older gaming day is no longer held, without a shoe
        assert live.balances(gaming_day=old) == {}
    assert len(live) == len(journal)
    assert sorted(live.entries(), key=lambda x: x.entry_id) == sorted(journal.entries(), key=lambda x: x.entry_id)

    replayed = fold_state(by_stream(envs))
    assert replayed.state_digest() == live.state_digest()
    assert replayed.totals == live.totals and replayed.entries() == live.entries()


def steady_floor(rounds: int, players: int = 3, start: datetime = datetime(2026, 1, 1, 12, tzinfo=UTC),
                 minutes_per_round: float = 1.0, rounds_per_shoe: int = 80) -> list[Envelope]:
    """A table dealt at a steady pace: each round opened, its bets closed and settled (every player bets
    the banker for $10; the Banker's Hand wins every round, commission deducted)."""
    from tests.unit.test_ledger import BANKER_BY_5, by_rules

    f = Feed()
    envs: list[Envelope] = []
    for n in range(rounds):
        rid, shoe = f"r{n}", f"shoe-{n // rounds_per_shoe}"
        at = start + timedelta(minutes=n * minutes_per_round)
        bets = [bet(f"{rid}-{p}", p + 1, f"p{p}", "banker", 1000) for p in range(players)]
        envs += [f.opened(rid, shoe, at), f.closed(rid, bets, at),
                 *f.settled(rid, [by_rules(rid, b, BANKER_BY_5) for b in bets], at + timedelta(seconds=20))]
    return envs


def test_the_window_holds_each_streams_latest_entries_and_counts_the_rest():
    envs = steady_floor(600)
    journal, live = Ledger().post_all(envs), fold_state(envs)
    for stream, chunks in live.recent.items():
        held = sum(len(c) for c in chunks)
        assert ENTRY_WINDOW <= held < ENTRY_WINDOW + CHUNK, stream
    assert live.dropped == len(journal) - sum(len(c) for cs in live.recent.values() for c in cs) > 0
    assert len(live) == len(journal) == 600 * 9  # a stake and two settlement entries per bet, 3 bets a round
    by_id = {x.entry_id: x for x in journal.entries()}
    held = live.entries()
    assert all(by_id[x.entry_id] == x for x in held)  # shoe ids resolved as the journal does
    stakes = [x.entry_id for x in journal.entries() if x.kind == "stake_taken"]
    held_stakes = [x.entry_id for x in held if x.kind == "stake_taken"]
    assert len(held_stakes) == sum(len(c) for c in live.recent[TOP.WAGERING_EVENTS]) >= ENTRY_WINDOW
    assert held_stakes == stakes[-len(held_stakes):]  # the stream's latest, in its order
    assert [x.occurred_at for x in held] == sorted(x.occurred_at for x in held)
    # balances are exact whatever the window holds
    assert live.balances() == journal.balances()
    assert live.balances(shoe_id="shoe-0") == journal.balances(shoe_id="shoe-0")
    assert live.balances(player_id="p2", shoe_id="shoe-7") == journal.balances(player_id="p2", shoe_id="shoe-7")
    assert live.entries(shoe_id="shoe-0") == ()  # long out of the window


def test_a_settlement_booked_before_its_shoe_is_known_reaches_the_shoe_once_it_is():
    envs = steady_floor(3)
    opened = [e for e in envs if e.stream == TOP.DEALING_EVENTS]
    rest = [e for e in envs if e.stream != TOP.DEALING_EVENTS]
    early = fold_state(rest)
    assert early.balances(shoe_id="shoe-0") == {} and set(early.unshod.keys()) == {"r0", "r1", "r2"}
    late = fold_state(opened, early)
    assert late.unshod == fold_state(envs).unshod and len(late.unshod) == 0
    assert late.balances(shoe_id="shoe-0") == Ledger().post_all(envs).balances(shoe_id="shoe-0") != {}
    assert late.state_digest() == fold_state(envs).state_digest()


def test_state_is_sized_by_the_shoe_and_the_day_not_by_history():
    # a round every 3 minutes for two days, then for four: 960 and 1,920 rounds (17,280 entries); the state
    # holds the last two gaming days' shoes, so twice the history must not make it any larger
    per_day = 1440 // 3
    long_envs = steady_floor(4 * per_day, minutes_per_round=3)
    short, long_ = fold_state(steady_floor(2 * per_day, minutes_per_round=3)), fold_state(long_envs)
    assert len(long_) == 4 * per_day * 9
    size = {k: len(msgspec.msgpack.encode(v)) for k, v in (("short", short), ("long", long_))}
    # what is held is as many entries, facts and totals; only their ids are longer (round 1,919, not 959)
    for v in (short, long_):
        assert all(ENTRY_WINDOW <= sum(len(c) for c in cs) < ENTRY_WINDOW + CHUNK for cs in v.recent.values())
    assert (len(long_.round_shoe), len(long_.totals)) == (len(short.round_shoe), len(short.totals))
    assert size["long"] <= size["short"] * 1.2, size
    assert len(long_.round_shoe) <= 2 * per_day + 1
    shoes = {k.split("|")[0] for k in long_.totals if k.startswith("s:")}
    assert len(shoes) <= 2 * per_day // 80 + 2 and "s:shoe-0" not in shoes
    assert not [k for k in long_.totals if k.startswith("d:") and not k.startswith(f"d:{long_.day}")]
    # what is held still answers exactly for the current gaming day and the latest shoe
    journal = Ledger().post_all(long_envs)
    assert long_.balances(gaming_day=long_.day) == journal.balances(gaming_day=long_.day)
    last_shoe = f"shoe-{(4 * per_day - 1) // 80}"
    assert long_.balances(shoe_id=last_shoe) == journal.balances(shoe_id=last_shoe)
    assert long_.balances() == journal.balances()


def test_the_digest_cache_equals_the_full_digest_as_tables_change():
    from dataclasses import dataclass

    from services.projection.core import ProjectionState
    from services.projection.digest import DigestCache, state_digest

    @dataclass
    class Slot:
        state: ProjectionState

    envs = steady_floor(5)
    tables = {t: Slot(ProjectionState(t, ledger=fold_state(envs[:i]))) for t, i in (("T1", 5), ("T2", 9))}
    cache = DigestCache()
    first = cache.digest(tables)
    assert first == state_digest(tables) == cache.digest(tables)
    tables["T1"].state = ProjectionState("T1", ledger=fold_state(envs))
    assert cache.digest(tables) == state_digest(tables) != first
    del tables["T2"]
    assert cache.digest(tables) == state_digest(tables)


def test_a_replay_of_many_gaming_days_equals_the_live_fold_and_stays_bounded():
    # five days, a round a minute from noon, 80 rounds a shoe: shoes straddle the 06:00 cutoff. A replay folds
    # every RoundOpened (all five days of shoe facts) before the first settlement.
    envs = steady_floor(5 * 1440)
    live, replayed = fold_state(envs), fold_state(by_stream(envs))
    journal = Ledger().post_all(envs)
    assert replayed.state_digest() == live.state_digest() and replayed.totals == live.totals
    assert len(replayed.unshod) == len(live.unshod) == 0
    size = len(msgspec.msgpack.encode(replayed))
    assert size <= len(msgspec.msgpack.encode(live)) * 1.01, size
    shoes = sorted({k.split("|")[0][2:] for k in live.totals if k.startswith("s:")}, key=lambda s: int(s[5:]))
    straddling = [s for s in shoes if len({x.gaming_day for x in journal.entries(shoe_id=s)}) > 1]
    assert straddling, shoes
    for s in shoes:
        assert replayed.balances(shoe_id=s) == live.balances(shoe_id=s) == journal.balances(shoe_id=s), s
