"""The projection's odds published ahead of their inputs' offsets (issue 30: the prompt stream) are never
published twice nor lost by a restore.

The runtime publishes ``projection.odds`` in transactions of its own, before the transaction that commits the
inputs they came from (:mod:`services.runtime.prompt_lane`). A crash between the two leaves a restore with
odds on the own stream for inputs past the committed offsets: it folds the own streams to their end, the
inputs to the committed offsets, then reads the rest of the inputs again. These tests replay exactly that
from a live run on the in-memory bus, at many cut points (a round's middle, a round's end, a shoe's change),
and compare what the restored projection publishes with what the live one published after the cut.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.events import OddsUpdated
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.runtime.host import NullPublisher, ServiceHost
from services.runtime.settings import Settings
from tests.services.helpers import floor_bus
from tests.system.floors import short_shoe

INPUTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
OWN = (T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS)


@pytest.fixture(scope="module")
def live() -> tuple[list[Any], dict[str, list[Any]]]:
    """One table through two short shoes with the projection live: the input records in the order the live
    projection read them, and its own streams' records."""
    async def run() -> tuple[list[Any], dict[str, list[Any]]]:
        bus, _ = floor_bus(seed=31)
        bus.add(ProjectionCore())
        dealer = TableDealer(MemoryFloorIO(bus), "T1", short_shoe(punto_banco_full()),
                             [Seat(i, f"player-{i}") for i in range(1, 4)], random.Random(31), Clock())
        await dealer.run(shoes=2)
        return [r for r in bus.log if r.topic in INPUTS], {t: list(bus.topics[t]) for t in OWN}

    return asyncio.run(run())


def _point(env: Any) -> tuple[Any, ...]:
    o = env.payload
    return (env.seq, o.shoe_id, o.step, o.trigger, o.round_id, o.view, tuple(o.composition), o.cards_out)


def _caused_by(records: list[Any], causes: set[str]) -> list[Any]:
    """The own records whose cause is one of ``causes`` (event ids), in order."""
    return [r for r in records if decode_event(r.value).causation_id in causes]


async def _restored(inputs: list[Any], own: dict[str, list[Any]], committed: int, decided: int,
                    ) -> tuple[list[Any], list[Any]]:
    """A projection restored after a crash: its odds published for ``inputs[:decided]`` (the prompt stream, ahead),
    its ledger and alerts and the input offsets committed for ``inputs[:committed]`` only. Returns what it
    publishes when it restores, then reads ``inputs[committed:]`` again (events), and the live run's own
    events caused by ``inputs[decided:]`` / ``inputs[committed:]`` (what it should publish)."""
    ids = [decode_event(r.value).event_id for r in inputs]
    host = ServiceHost(ProjectionCore(), Settings(), NullPublisher())
    for r in [*_caused_by(own[T.PROJECTION_LEDGER], set(ids[:committed])),
              *_caused_by(own[T.PROJECTION_ALERTS], set(ids[:committed]))]:
        host.fold_own(r.value)
    # the prompt stream's odds of every input decided before the crash: a prefix of the stream
    odds = own[T.PROJECTION_ODDS]
    ahead = len(_caused_by(odds, set(ids[:decided])))
    assert [r.value for r in odds[:ahead]] == [r.value for r in _caused_by(odds, set(ids[:decided]))]
    for r in odds[:ahead]:
        host.fold_own(r.value)
    for r in inputs[:committed]:
        host.fold_input(r.value)
    async with host.lock:
        published = [e for d in await host.collect_reactions(["T1"]) for e in d.events]
        out, _ = await host.collect([(r.topic, 0, i, r.key, r.value, None) for i, r in
                                     enumerate(inputs[committed:], start=committed)])
    published += [e for d in out for e in d.events]
    expected = [decode_event(r.value) for r in odds[ahead:]]
    return published, expected


@pytest.mark.parametrize("committed_at,decided_at", [
    (0.25, 0.25), (0.25, 0.3), (0.4, 0.55), (0.5, 0.5), (0.6, 0.61), (0.45, 0.7), (0.9, 0.97), (0.0, 0.1)])
async def test_odds_ahead_of_the_committed_inputs_are_published_once_after_a_restore(live, committed_at, decided_at):
    inputs, own = live
    committed, decided = int(len(inputs) * committed_at), int(len(inputs) * decided_at)
    published, expected = await _restored(inputs, own, committed, decided)
    odds = [e for e in published if isinstance(e.payload, OddsUpdated)]
    # exactly the odds the live projection published after the cut, with the same seqs: none twice, none lost
    assert [_point(e) for e in odds] == [_point(e) for e in expected]
    assert len(expected) > 0 or decided == len(inputs)


def test_the_cuts_fall_where_the_test_says(live):
    """The run has two shoes and the cut points above cut rounds, shoes and the odds stream apart."""
    inputs, own = live
    loads = [i for i, r in enumerate(inputs) if b"shoe_loaded" in r.value]
    assert len(loads) == 2 and 0.3 < loads[1] / len(inputs) < 0.7, (loads, len(inputs))
    assert len(own[T.PROJECTION_ODDS]) > 200


async def test_a_restore_with_no_odds_ahead_republishes_nothing_already_published(live):
    """The case before the prompt stream: own streams and inputs committed together (no cut between them)."""
    inputs, own = live
    for at in (0.2, 0.5, 0.8):
        n = int(len(inputs) * at)
        published, expected = await _restored(inputs, own, n, n)
        odds = [e for e in published if isinstance(e.payload, OddsUpdated)]
        assert [_point(e) for e in odds] == [_point(e) for e in expected]
