"""Per-table state is sized by the live rounds, not by history: three shoes at one table on the in-memory
bus, the size of every core's state watched after every fold; a replay of the log equals the live state;
late commands and replayed inputs about long-finished rounds get exactly the answers they got before
pruning (``betting_closed``, ``duplicate_round``, nothing paid twice)."""

from __future__ import annotations

import math
import random
from datetime import datetime, timezone
from typing import Any

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.commands import CloseBetting, OpenRound, PlaceBet, WithdrawBet
from contracts.events import BetRejected, BetSettled, BettingOpened, CommandRejected, RoundOpened, RoundSettled
from services.dealing.core import DealingState
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.history import History
from services.runtime.core import Runner, command
from services.settlement.core import SettlementState
from services.shoe.core import ShoeState
from services.wagering.core import WageringState
from tests.services.helpers import floor_bus, make_cores, payloads

SEATS = [Seat(i, f"player-{i}") for i in range(1, 7)]
AT = datetime(2026, 1, 2, tzinfo=timezone.utc)
SHOES = 3
#: the designed bounds: live books / pending settlements at once, and rounds kept in full by dealing
MAX_BOOKS = 2
MAX_PENDING = 2


def sizes(state: Any) -> dict[str, int]:
    """The parts of a core's state that could grow with history, by count."""
    if isinstance(state, WageringState):
        return {"books": len(state.books)}
    if isinstance(state, SettlementState):
        return {"pending": len(state.pending), "seats": len(state.owed)}
    if isinstance(state, DealingState):
        return {"rounds_in_full": int(state.round is not None)}
    if isinstance(state, ShoeState):
        return {"sealed": len(state.sealed), "drawn": len(state.drawn)}
    raise AssertionError(type(state))


def watch(hosts: dict[str, Any]) -> dict[str, int]:
    """Record the largest of each size after every fold of every core."""
    peak: dict[str, int] = {}
    for host in hosts.values():
        core = host.core
        for name in ("evolve", "absorb", "sent"):
            real = getattr(core, name)

            def wrapped(state: Any, msg: Any, _real: Any = real) -> Any:
                out = _real(state, msg)
                for k, v in sizes(out).items():
                    peak[k] = max(peak.get(k, 0), v)
                return out

            setattr(core, name, wrapped)
    return peak


def runs_bound(h: History) -> int:
    return int(math.log2(max(len(h), 1))) + 1


async def _three_shoes() -> tuple[Any, dict[str, Any], dict[str, int], int]:
    bus, hosts = floor_bus(seed=7)
    peak = watch(hosts)
    run = await TableDealer(MemoryFloorIO(bus), "T1", punto_banco_full(), SEATS, random.Random(7), Clock()).run(
        shoes=SHOES)
    return bus, hosts, peak, run.rounds


async def test_state_is_bounded_by_live_rounds_over_three_shoes():
    bus, hosts, peak, rounds = await _three_shoes()
    assert rounds > 2 * 70 and len(payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)) == rounds
    cards_per_shoe = 8 * 52
    assert peak["books"] <= MAX_BOOKS and peak["pending"] <= MAX_PENDING
    assert peak["rounds_in_full"] == 1 and peak["sealed"] == 1 and peak["seats"] <= len(SEATS)
    assert 0 < peak["drawn"] <= cards_per_shoe  # cards of the current shoe only (reset at each ShoeLoaded)
    w = hosts["wagering"].runner.tables["T1"].state
    s = hosts["settlement"].runner.tables["T1"].state
    d = hosts["dealing"].runner.tables["T1"].state
    assert w.books == {} and s.pending == {}  # every round of the three shoes is over
    # what outlives a round: one id per round, in at most log2(n) + 1 runs
    for h in (w.closed, s.settled, d.round_numbers):
        assert len(h) == rounds and len(h.runs) <= runs_bound(h)
    assert len(d.shoe_rounds) == SHOES and len(d.shoe_rounds.runs) <= runs_bound(d.shoe_rounds)


async def test_replaying_the_log_equals_the_live_state():
    bus, hosts, _, _ = await _three_shoes()
    for name, core in make_cores(seed=7).items():
        live = hosts[name].runner.tables["T1"].state
        runner: Runner[Any] = Runner(core)  # type: ignore[arg-type]
        # in the order a restart reads them: private streams (the shoe's vault) before the own stream
        own = [bus.settings.topic(s) for s in (*core.private_streams, core.own_stream)]  # type: ignore[attr-defined]
        inputs = [bus.settings.topic(s) for s in core.input_streams]  # type: ignore[attr-defined]
        # as written (interleaved, as the live service folded them) ...
        for rec in bus.log:
            if rec.topic in own:
                runner.apply_own(decode_event(rec.value))
            elif rec.topic in inputs:
                runner.absorb_input(decode_event(rec.value))
        replayed = runner.tables["T1"].state
        # ... and as a restart does (own events first, then every input from offset zero)
        rebuilt = Runner(core)  # type: ignore[arg-type]
        for topic in (*own, *inputs):
            for rec in bus.topics[topic]:
                (rebuilt.apply_own if topic in own else rebuilt.absorb_input)(decode_event(rec.value))
        if isinstance(live, DealingState):
            # ``requested`` counts DrawCard commands sent (not events: a rebuild sends again, the shoe drops
            # the repeats by id); ``finished`` is folded from our ShoeFinished only when the shoe is known,
            # which a restart learns after its own events: neither is history, both are as before pruning
            from dataclasses import replace

            live = replace(live, round=replace(live.round, requested=0))
            rebuilt_state = replace(rebuilt.tables["T1"].state,
                                    shoe=replace(rebuilt.tables["T1"].state.shoe, finished=live.shoe.finished))
        else:
            rebuilt_state = rebuilt.tables["T1"].state
        assert replayed == live, name
        assert rebuilt_state == live, name


async def test_late_commands_and_replayed_inputs_about_old_rounds_answer_as_before():
    bus, hosts, _, _ = await _three_shoes()
    first = payloads(bus, T.DEALING_EVENTS, RoundOpened)[0]
    settled_before = len(payloads(bus, T.SETTLEMENT_EVENTS, BetSettled))
    opened_before = len(payloads(bus, T.WAGERING_EVENTS, BettingOpened))
    old = first.round_id  # closed and pruned two shoes ago
    bus.send(T.WAGERING_BETS, command("T1", "late-bet", AT, PlaceBet(round_id=old, seat=1, player_id="p",
                                                                          wager="banker", amount_cents=2500)))
    bus.send(T.WAGERING_BETS, command("T1", "late-withdraw", AT, WithdrawBet(round_id=old, bet_id="x"), actor="p"))
    bus.send(T.WAGERING_COMMANDS, command("T1", "late-close", AT, CloseBetting(round_id=old)))
    bus.send(T.WAGERING_BETS, command("T1", "never", AT, PlaceBet(round_id="no-such-round", seat=1,
                                                                       player_id="p", wager="banker",
                                                                       amount_cents=2500)))
    bus.send(T.DEALING_COMMANDS, command("T1", "reuse", AT, OpenRound(round_id=old, shoe_id=first.shoe_id)))
    await bus.pump()
    rejected = {r.command_id: r.reason for r in payloads(bus, T.WAGERING_EVENTS, BetRejected)}
    assert rejected["late-bet"] == rejected["late-withdraw"] == "betting_closed"
    assert rejected["never"] == "unknown_round"
    cmd_rejected = {r.command_id: r.reason for s in (T.WAGERING_EVENTS, T.DEALING_EVENTS)
                    for r in payloads(bus, s, CommandRejected)}
    assert cmd_rejected["late-close"] == "betting_closed"
    assert cmd_rejected["reuse"] == "duplicate_round"  # checked before the shoe: the id is 3 shoes old
    # a restart replays every input from offset zero over the pruned state: nothing is opened or paid again
    for name in ("wagering", "settlement", "dealing"):
        await bus.rebuild(hosts[name])
        await bus.pump()
    assert len(payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)) == settled_before
    assert len(payloads(bus, T.WAGERING_EVENTS, BettingOpened)) == opened_before


def test_the_players_watch_covers_the_latest_gaming_day_only():
    """``watch`` (``/players/{id}/surveillance``) starts afresh with each gaming day, as the alerts do: it does
    not grow with every player ever flagged at the table; a late flag of an earlier day changes neither."""
    from datetime import timedelta

    from contracts import topics as TOP
    from contracts.events import AdvantageBetFlagged
    from services.projection.core import ProjectionCore
    from tests.unit.test_ledger import Feed

    core, f = ProjectionCore(), Feed()
    day1 = datetime(2026, 3, 2, 12, tzinfo=timezone.utc)  # gaming day 2026-03-02 (it starts at 06:00 UTC)

    def flag(n: int, player: str, at: datetime):  # type: ignore[no-untyped-def]
        return f.emit(TOP.PROJECTION_ALERTS, AdvantageBetFlagged(
            round_id=f"R{n}", shoe_id="s1", bet_id=f"b{n}", seat=1, player_id=player, wager="dragon_7",
            stake_cents=1000, ev=0.01, ev_num=1, ev_den=100, expected_gain_cents=10, cards_left=40),
            at, table="T1", round_id=f"R{n}")

    s = core.initial("T1")
    for n, p in enumerate(["a", "b", "a"], 1):
        s = core.evolve(s, flag(n, p, day1))
    assert {p: (w.bets, w.stake_cents, w.expected_gain_cents) for p, w in s.watch.items()} == {
        "a": (2, 2000, 20), "b": (1, 1000, 10)}
    s = core.evolve(s, flag(4, "c", day1 + timedelta(days=1)))
    assert {p: w.bets for p, w in s.watch.items()} == {"c": 1} and [a.bet_id for a in s.alerts] == ["b4"]
    late = core.evolve(s, flag(5, "a", day1))
    assert late.watch == s.watch and late.alerts == s.alerts
