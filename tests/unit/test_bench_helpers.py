"""The benchmarks' own logic (no timing): the raw loop's hops per round, readiness detection, and that the
rebuild benchmark's generator hands every record of the in-memory bus to the writer and reports the
projection's real digest."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import rebuild
from bench.rawloop import FLOOR, close_route, transactions_on_path
from bench.readiness import LogWatch, flag
from contracts import topics as T
from services.runtime.settings import Settings


def test_close_route_follows_the_services_topic_hops():
    # "No more bets" -> wagering -> dealing (DrawCard 1-4) -> shoe -> dealing [-> shoe -> dealing per third card]
    # -> settlement -> floor
    assert close_route(4) == ["wagering", "dealing", "shoe", "dealing", "settlement", FLOOR]
    assert close_route(6) == ["wagering", "dealing", "shoe", "dealing", "shoe", "dealing", "shoe", "dealing",
                              "settlement", FLOOR]
    # open (dealing, wagering) + close
    assert [transactions_on_path(c) for c in (4, 5, 6)] == [7, 9, 11]


def _line(**fields: Any) -> str:
    return json.dumps(fields)


def test_log_watch_sees_only_the_rebuilt_line_of_each_service():
    w = LogWatch()
    w.line(_line(service="dealing", event="event", type="card_dealt", level="info"))
    w.line(_line(service="dealing", event="duplicate_command", level="info"))
    assert dict(w.seen) == {}
    w.line(_line(service="dealing", event="rebuilt", records=12, tables=3, level="info"))
    w.line(_line(service="shoe", event="dead_letter", level="warning"))
    w.line("not json with \"rebuilt\" in it")
    assert list(w.seen) == ["dealing"] and len(w.seen["dealing"]) == 1
    assert w.fields["dealing"][0]["records"] == 12
    assert w.problems == 1


def test_flag_reads_bool_event_callable_on_service_or_host_and_none_without():
    class Host:
        pass

    class Svc:
        def __init__(self) -> None:
            self.host = Host()

    s = Svc()
    assert flag(s) is None
    s.host.ready = False  # type: ignore[attr-defined]
    assert flag(s) is False
    ev = asyncio.Event()
    s.ready = ev  # type: ignore[attr-defined]
    assert flag(s) is False
    ev.set()
    assert flag(s) is True
    t = Svc()
    t.is_ready = lambda: True  # type: ignore[attr-defined]
    assert flag(t) is True


async def test_generator_writes_every_bus_record_and_the_projection_digest(monkeypatch):
    from services.projection.digest import state_digest

    written: list[Any] = []
    hosts_seen: dict[str, Any] = {}

    class Writer:
        def __init__(self, settings: Settings):
            self.producer = self

        async def start(self) -> None: ...

        async def stop(self) -> None: ...

        async def flush(self) -> None: ...

        async def write(self, records: list[Any], counts: Counter[str]) -> None:
            written.extend(records)
            for r in records:
                counts[r.topic] += 1

    real_floor = rebuild.memory_floor

    def floor(seed: int):
        bus, hosts, rand = real_floor(seed)
        hosts_seen.update(hosts)
        return bus, hosts, rand

    monkeypatch.setattr(rebuild, "KafkaWriter", Writer)
    monkeypatch.setattr(rebuild, "memory_floor", floor)
    hist = await rebuild.generate(Settings(), rounds=9, tables=2, chunk=200, budget=600)
    assert hist.rounds == 9 and hist.tables == 2
    assert sum(hist.records.values()) == len(written)
    # chunks were flushed (the bus is emptied between rounds) yet nothing was lost or repeated: each
    # service's seq runs 1..n without a gap for every table on its main stream
    from contracts.codecs import decode_event

    for stream in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
        by_table: dict[str, list[int]] = {}
        for r in written:
            if r.topic == stream:
                env = decode_event(r.value)
                by_table.setdefault(env.table_id, []).append(env.seq)
        assert sorted(by_table) == ["H000", "H001"]
        for seqs in by_table.values():
            assert seqs == list(range(1, len(seqs) + 1))
    settled = [decode_event(r.value) for r in written if r.topic == T.SETTLEMENT_EVENTS]
    assert sum(type(e.payload).__name__ == "RoundSettled" for e in settled) == 9
    assert all(r.key in (b"H000", b"H001") for r in written)
    assert hist.digest == state_digest(hosts_seen["projection"].runner.tables)


def _by_table(written: list[tuple[str, bytes | None, bytes]]) -> dict[tuple[str, bytes | None], list[bytes]]:
    out: dict[tuple[str, bytes | None], list[bytes]] = {}
    for topic, key, value in written:
        out.setdefault((topic, key), []).append(value)
    return out


async def test_history_split_over_processes_is_the_history_of_one_process():
    # tables are independent and draw their randomness from (seed, table index): two spawned workers write
    # byte for byte the records one process writes, table by table in the same order, and the digest taken
    # over the workers' projection states is the one process's
    one = await rebuild.generate(None, rounds=10, tables=3, chunk=150, budget=600)
    two = await rebuild.generate(None, rounds=10, tables=3, chunk=150, budget=600, workers=2)
    assert one.records == two.records and sum(one.records.values()) == len(one.written) > 0
    assert _by_table(one.written) == _by_table(two.written)
    assert one.digest == two.digest


async def test_generated_digest_is_what_a_projection_rebuilt_from_the_written_records_reaches():
    # the digest a restart must reach: a projection host rebuilt from the generated records alone (its own
    # streams, then its inputs, as a cold restart reads them) reaches it, and has nothing left to write
    # (the projection's topics hold all it would have written)
    from services.projection.core import ProjectionCore
    from services.projection.digest import state_digest
    from services.runtime.memory import MemoryBus, Record

    hist = await rebuild.generate(None, rounds=8, tables=2, chunk=10_000, budget=600)
    bus = MemoryBus()
    host = bus.add(ProjectionCore())

    async def read(topic: str) -> list[Record]:
        values = [(k, v) for t, k, v in hist.written if t == topic]
        return [Record(topic, 0, i, k, v) for i, (k, v) in enumerate(values)]

    folded = await host.rebuild(read)
    assert folded > 0 and sorted(host.runner.tables) == ["H000", "H001"]
    assert state_digest(host.runner.tables) == hist.digest
    assert bus.log == []


def test_partition_for_key_is_the_producers_default_partitioner():
    from aiokafka.partitioner import DefaultPartitioner

    from services.runtime.tasks import partition_of

    parts = list(range(12))
    for table in ("H000", "H017", "probe-shoe-x", "T-\u00e9"):
        key = T.key(table)
        assert rebuild.partition_for_key(key, 12) == DefaultPartitioner()(key, parts, parts) == partition_of(table, 12)


def test_restore_phases_are_the_marks_differences_summed_over_tasks_and_the_warm_figure_is_the_median():
    lines = [
        {"event": "restored", "seconds": 0.5, "marks": {"fence": 0.1, "committed": 0.15, "snapshot": 0.35,
                                                        "own": 0.4, "inputs": 0.45}},
        {"event": "restored", "seconds": 0.2, "marks": {"fence": 0.05, "committed": 0.05, "snapshot": 0.1,
                                                        "own": 0.1, "inputs": 0.2}},
    ]
    ph = rebuild.restore_phases(lines)
    assert {k: round(v, 6) for k, v in ph.items()} == {
        "fence": 0.15, "committed": 0.05, "snapshot": 0.25, "own": 0.05, "inputs": 0.15, "publish": 0.05,
        "tasks": 2.0}
    runs = [rebuild.Start(done=3.0), rebuild.Start(done=None), rebuild.Start(done=1.0)]
    assert rebuild.median_start(runs).done == 3.0  # an unfinished run counts as the slowest
    assert rebuild.median_start([rebuild.Start(done=2.0), rebuild.Start(done=1.0)]).done == 1.0


def test_pit_latency_marks_each_card_once_when_a_screen_first_shows_it():
    """bench/pit_latency.py: a console fragment showing ``next_card - 1`` cards puts every card not yet shown
    on the screen at that moment; a later fragment of the same round does not move them; a new round starts
    from its first card. Latency = screen − read; cards never shown are left out."""
    from bench.pit_latency import ROUND_FRAG, Cards

    c = Cards()
    c.read.update({("T", "R1", 1): 100.0, ("T", "R1", 2): 110.0, ("T", "R1", 3): 120.0, ("T", "R2", 1): 500.0,
                   ("T", "R2", 2): 510.0})
    c.dealt.update({("T", "R1", 1): 130.0, ("T", "R2", 1): 520.0})
    c.on_screen("T", "R1", 3, 150.0)  # cards 1 and 2 shown
    c.on_screen("T", "R1", 3, 190.0)  # the same again (odds or seats changed): no card moves
    c.on_screen("T", "R1", 4, 200.0)  # card 3
    c.on_screen("T", "R2", 2, 560.0)  # the next round's first card
    screen, kafka = c.latencies()
    assert sorted(screen) == [40.0, 50.0, 60.0, 80.0]  # R1: 150-110, 150-100, R2: 560-500, R1: 200-120
    assert sorted(kafka) == [20.0, 30.0]
    html = '<section id="round-T" class="panel round" data-shoe-id="S" data-round-id="R9" data-next-card="5" x>'
    m = ROUND_FRAG.search(html)
    assert m is not None and (m.group(1), m.group(2)) == ("R9", "5")


def test_pit_latency_watches_at_most_the_floor_s_tables_with_a_scoreboard(capsys):
    """bench/pit_latency.py: ``--board-tables`` (20 by default) scoreboards on a floor of ``--tables``; more
    scoreboards than tables, or none, is refused before anything starts (argparse's exit status 2)."""
    import pytest

    from bench.pit_latency import main

    for argv, words in ((["--tables", "4"], "--board-tables 20 is more than the floor's --tables 4"),
                        (["--board-tables", "0"], "must be positive")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and words in capsys.readouterr().err, argv


@pytest.mark.parametrize(("argv", "says"), [
    (["--fault-kinds", "sigterm,sigkill"], "unknown sigkill"),
    (["--fault-kinds", "broker"], "add --own-broker PORT or --brokers N"),
])
def test_the_chaos_bench_refuses_fault_kinds_that_would_inject_nothing(argv: list[str], says: str,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]):
    """An unknown kind, or broker kills without a broker of the run's own, would give a run with no faults
    that reads as a clean one: refused before anything starts (exit 2, the reason on stderr)."""
    from bench import chaos

    monkeypatch.setenv("CROUPIER_VAULT_KEYS", "unused")
    with pytest.raises(SystemExit) as exc:
        chaos.main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err
