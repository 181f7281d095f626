"""The simulated floor dealing the same tables again on the same topics: each run's command, shoe and round
ids live in the namespace of its run id (services/floor/ids.py), so a second run is not taken for retries of
the first; the same run id twice is."""

from __future__ import annotations

import random

import pytest

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.events import CommandRejected, RoundSettled, ShoeClosed, ShoeLoaded, TableOpened
from croupier.audit import audit
from services.floor import ids
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import FloorTimeout, MemoryFloorIO
from tests.services.helpers import events, floor_bus, payloads

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]


def _dealer(io: MemoryFloorIO, run_id: str, table: str = "T1") -> TableDealer:
    return TableDealer(io, table, punto_banco_full(), SEATS, random.Random(run_id), Clock(), run_id=run_id,
                       rounds_per_shoe=3)


async def test_two_runs_on_one_log_each_deal_their_rounds_and_the_audit_is_clean():
    bus, _ = floor_bus(seed=4)
    io = MemoryFloorIO(bus)
    first = await _dealer(io, "run-a").run(shoes=2)
    second = await _dealer(io, "run-b").run(shoes=2)
    assert first.round_ids == [f"T1-run-a-shoe-{s}-round-{r}" for s in (1, 2) for r in (1, 2, 3)]
    assert second.round_ids == [f"T1-run-b-shoe-{s}-round-{r}" for s in (1, 2) for r in (1, 2, 3)]
    assert (first.shoes, second.shoes) == (2, 2) and first.rejections == second.rejections == []
    settled = [p.round_id for p in payloads(bus, T.SETTLEMENT_EVENTS, RoundSettled)]
    assert settled == first.round_ids + second.round_ids
    assert [p.shoe_id for p in payloads(bus, T.SHOE_EVENTS, ShoeClosed)] == [
        "T1-run-a-shoe-1", "T1-run-a-shoe-2", "T1-run-b-shoe-1", "T1-run-b-shoe-2"]
    assert len(payloads(bus, T.DEALING_EVENTS, TableOpened)) == 2  # the second run opened the table again
    # nothing was refused: no id of the second run collided with one of the first
    refused = [(p.command_id, p.reason) for p in payloads(bus, T.WAGERING_EVENTS, CommandRejected)
               if p.reason != "already_seated"]
    refused += [(p.command_id, p.reason) for s in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.SETTLEMENT_EVENTS)
                for p in payloads(bus, s, CommandRejected)]
    assert refused == []
    causes = {e.causation_id for e in events(bus) if e.causation_id.startswith("T1:")}
    assert {c.split(":")[1] for c in causes} == {"run-a", "run-b"}
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert (rep.shoes_verified, rep.rounds_checked) == (4, 12)
    assert rep.bets_checked == first.bets + second.bets


async def test_the_same_run_id_twice_is_taken_for_retries_and_nothing_answers():
    bus, _ = floor_bus(seed=4)
    io = MemoryFloorIO(bus)
    await _dealer(io, "same").run(shoes=1)
    loaded = len(payloads(bus, T.SHOE_EVENTS, ShoeLoaded))
    with pytest.raises(FloorTimeout):  # its OpenTable repeats the first run's: a retry, decided once
        await _dealer(io, "same").run(shoes=1)
    assert len(payloads(bus, T.SHOE_EVENTS, ShoeLoaded)) == loaded == 1


async def test_the_historical_ids_without_a_run_id():
    bus, _ = floor_bus(seed=2)
    io = MemoryFloorIO(bus)
    run = await TableDealer(io, "T7", punto_banco_full(), SEATS, random.Random(1), Clock(),
                            rounds_per_shoe=2).run(shoes=1)
    assert run.round_ids == ["T7-shoe-1-round-1", "T7-shoe-1-round-2"]
    assert {e.causation_id.rsplit(":", 1)[0] for e in events(bus, T.DEALING_EVENTS)
            if isinstance(e.payload, TableOpened)} == {"T7:cmd"}


def test_ids_derive_from_the_run_id_alone():
    assert ids.command_id("BAC-01", "7f3a", 12) == "BAC-01:7f3a:cmd:12"
    assert ids.shoe_id("BAC-01", "7f3a", 2) == "BAC-01-7f3a-shoe-2"
    assert ids.round_id(ids.shoe_id("BAC-01", "7f3a", 2), 80) == "BAC-01-7f3a-shoe-2-round-80"
    assert (ids.command_id("T", "", 1), ids.shoe_id("T", "", 1)) == ("T:cmd:1", "T-shoe-1")


@pytest.mark.parametrize("good", ["a", "7f3a9c01", "night-2026.01_b", "X" * 32])
def test_run_ids_in_the_pattern_are_taken(good):
    assert ids.check_run_id(good) == good


@pytest.mark.parametrize("bad", ["", "-a", ".a", "a:b", "a b", "x" * 33, "é"])
def test_run_ids_outside_the_pattern_are_refused(bad):
    with pytest.raises(ids.BadRunId, match="1-32 letters"):
        ids.check_run_id(bad)


def test_a_dealer_refuses_a_bad_run_id_and_a_shoe_of_no_rounds():
    io = MemoryFloorIO(floor_bus()[0])
    with pytest.raises(ids.BadRunId):
        TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(0), Clock(), run_id="a:b")
    with pytest.raises(ValueError, match="at least 1"):
        TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(0), Clock(), rounds_per_shoe=0)
