"""The Prometheus metrics of the host layer on the in-memory bus: every record counted once by its stream and
type, refusals by their reason code, dead letters, duplicates, odds latency; open rounds per table; the live
gauges' exposition; label values bounded."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime

from baccarat.table import Limits, punto_banco_full
from baccarat.wagers import Wager
from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event
from contracts.commands import LoadShoe, OpenRound, PlaceBet
from contracts.events import BetRejected, OddsUpdated
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.core import ProjectionCore
from services.runtime import metrics as M
from services.runtime.core import command
from tests.services.helpers import floor_bus

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
AT = datetime(2026, 1, 1, tzinfo=UTC)


def value(name: str, **labels: str) -> float:
    return M.REGISTRY.get_sample_value(name, labels) or 0.0


def samples(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample called ``name`` in the registry: {sorted label pairs: value}."""
    return {tuple(sorted(s.labels.items())): s.value for fam in M.REGISTRY.collect() for s in fam.samples
            if s.name == name}


class OverLimitDealer(TableDealer):
    """Every round also carries a tie bet over the table's maximum: one ``over_table_max`` a round."""

    def extra_bets(self, round_id: str) -> list[PlaceBet]:
        return [PlaceBet(round_id=round_id, seat=1, player_id="player-1", wager="tie", amount_cents=20_000)]


def _types_delivered(bus, host) -> Counter[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(stream, type) of every record the bus delivered to ``host``, decoded independently."""
    out: Counter[tuple[str, str]] = Counter()
    for topic in host.subscribed_topics:
        is_command = topic in host.core.command_streams
        for rec in bus.topics.get(topic, []):
            try:
                msg = decode_command(rec.value) if is_command else decode_event(rec.value)
                kind = msg.payload.__struct_config__.tag
            except UnknownMessageType:
                kind = "unknown"
            except Undecodable:
                kind = "undecodable"
            out[(topic, kind)] += 1
    return out


async def test_a_floor_on_the_bus_is_counted_record_by_record():
    bus, hosts = floor_bus(seed=5)
    hosts["projection"] = bus.add(ProjectionCore())
    io = MemoryFloorIO(bus)
    cfg = punto_banco_full(limits={Wager.TIE: Limits(500, 10_000)})
    dealer = OverLimitDealer(io, "M1", cfg, SEATS, random.Random(5), Clock())
    before = samples("croupier_messages_handled_total")
    seconds_before = samples("croupier_handler_seconds_count")
    rejected_before = value("croupier_messages_rejected_total", service="wagering", type="place_bet",
                            reason="over_table_max")
    dead_before = value("croupier_dead_letters_total", service="dealing", reason="undecodable")
    dup_before = value("croupier_messages_ignored_total", service="dealing", reason="duplicate_command")
    odds_before = sum(value("croupier_odds_latency_seconds_count", view=v) for v in ("public", "surveillance"))

    await dealer.open_table()
    await io.send(T.SHOE_COMMANDS, command("M1", "load", AT, LoadShoe(shoe_id="S", cut_at=40)))
    assert hosts["dealing"].open_rounds() == {"M1": 0}
    for n in range(1, 4):
        assert await dealer.play_round("S", f"S-{n}")
    assert hosts["dealing"].open_rounds() == hosts["settlement"].open_rounds() == {"M1": 0}  # all settled
    bus.append(T.DEALING_COMMANDS, b"M1", b"\x00\xff not json")
    open4 = command("M1", "open-4", AT, OpenRound(round_id="S-4", shoe_id="S"))
    await io.send(T.DEALING_COMMANDS, open4)
    await io.send(T.DEALING_COMMANDS, open4)  # a retry: decided once, counted as a duplicate

    handled = samples("croupier_messages_handled_total")
    seconds = samples("croupier_handler_seconds_count")
    per_type: Counter[tuple[str, str]] = Counter()
    for name, host in hosts.items():
        for (stream, kind), n in _types_delivered(bus, host).items():
            key = (("service", name), ("stream", stream), ("type", kind))
            assert handled[key] - before.get(key, 0.0) == n, key
            per_type[(name, kind)] += n
    assert {k: v - before.get(k, 0.0) for k, v in handled.items()
            if dict(k)["service"] in hosts and v != before.get(k, 0.0)} == {
        (("service", n), ("stream", s), ("type", k)): c for n, h in hosts.items()
        for (s, k), c in _types_delivered(bus, h).items()}  # and nothing else was counted
    for (name, kind), n in per_type.items():
        key = (("service", name), ("type", kind))
        assert seconds[key] - seconds_before.get(key, 0.0) == n, key
    assert ("dealing", "undecodable") in per_type

    log = [decode_event(r.value) for r in bus.topics[T.WAGERING_EVENTS]]
    over = [e for e in log if isinstance(e.payload, BetRejected) and e.payload.reason == "over_table_max"]
    assert len(over) == 3
    assert value("croupier_messages_rejected_total", service="wagering", type="place_bet",
                 reason="over_table_max") - rejected_before == 3
    assert value("croupier_dead_letters_total", service="dealing", reason="undecodable") - dead_before == 1
    assert value("croupier_messages_ignored_total", service="dealing", reason="duplicate_command") - dup_before == 1
    odds = [decode_event(r.value) for r in bus.topics[T.PROJECTION_ODDS]]
    assert odds and all(isinstance(e.payload, OddsUpdated) for e in odds)
    assert sum(value("croupier_odds_latency_seconds_count", view=v) for v in ("public", "surveillance")) \
        - odds_before == len(odds)
    # round 4 is open (betting): in play for dealing, not settled for settlement
    assert hosts["dealing"].open_rounds() == {"M1": 1}
    assert hosts["settlement"].open_rounds() == {"M1": 1}
    assert hosts["wagering"].open_rounds() == {}  # a core without the measure reports nothing


async def test_a_rebuild_is_timed():
    bus, hosts = floor_bus(seed=6)
    io = MemoryFloorIO(bus)
    await TableDealer(io, "M2", punto_banco_full(), SEATS, random.Random(6), Clock()).open_table()
    before = value("croupier_restore_seconds_count", service="dealing", source="rebuild")
    await bus.rebuild(hosts["dealing"])
    assert value("croupier_restore_seconds_count", service="dealing", source="rebuild") == before + 1


def test_label_values_are_bounded():
    bounded = M._Bounded(limit=2)
    assert bounded("over_table_max") == "over_table_max"
    assert bounded("Over The Limit!") == "other"  # not a code
    assert bounded("x" * 49) == "other"  # too long
    assert bounded("unknown_round") == "unknown_round"
    assert bounded("third_code") == "other"  # the limit reached
    assert bounded("over_table_max") == "over_table_max"  # one seen before still is itself


class _Host:
    def __init__(self, service: str, rounds: dict[str, int]):
        self.metrics = M.ServiceMetrics(service)
        self._rounds = rounds
        self.runner = type("R", (), {"tables": dict.fromkeys(rounds)})()

    def open_rounds(self) -> dict[str, int]:
        return self._rounds


class _Tasks:
    """What the live collector reads of a running service's tasks."""

    def __init__(self, service: str, ready: bool = True):
        self.host = _Host(service, {"T1": 1, "T2": 0})
        self.state = {0: "ready", 1: "ready" if ready else "restoring"}
        self._ready = ready

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def assignment_held(self) -> bool:
        return True

    def lag(self) -> dict[tuple[str, int], int]:
        return {("dealing.events", 0): 7, ("dealing.events", 1): 0}

    def snapshot_ages(self, now: float) -> dict[int, float]:
        return {0: 12.5}


def test_the_live_gauges_are_read_when_scraped():
    from prometheus_client.parser import text_string_to_metric_families

    tasks, restoring = _Tasks("gauge-test"), _Tasks("gauge-test-2", ready=False)
    M.LIVE.track(tasks)
    M.LIVE.track(restoring)
    try:
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for fam in text_string_to_metric_families(M.exposition().decode()) for s in fam.samples}
    finally:
        M.LIVE.untrack(tasks)
        M.LIVE.untrack(restoring)
    svc = ("service", "gauge-test")
    assert samples[("croupier_consumer_lag", (("partition", "0"), svc, ("topic", "dealing.events")))] == 7
    assert samples[("croupier_consumer_lag", (("partition", "1"), svc, ("topic", "dealing.events")))] == 0
    assert samples[("croupier_snapshot_age_seconds", (("partition", "0"), svc))] == 12.5
    assert samples[("croupier_open_rounds", (svc, ("table", "T1")))] == 1
    assert samples[("croupier_tables", (svc,))] == 2
    assert samples[("croupier_tasks", (svc, ("state", "ready")))] == 2
    assert samples[("croupier_ready", (svc,))] == 1
    assert samples[("croupier_ready", (("service", "gauge-test-2"),))] == 0
    assert samples[("croupier_tasks", (("service", "gauge-test-2"), ("state", "restoring")))] == 1
    after = M.exposition().decode()
    assert 'service="gauge-test"' not in after  # untracked: gone
