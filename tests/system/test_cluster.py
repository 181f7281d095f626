"""The runtime on a real broker with several instances per service: co-partitioned tasks, instances joining
and leaving under load, fenced zombies, commands consumed once, restores from snapshots.

Every check reads the raw topics (``read_log``) and audits them with the rules core; "clean" also means the
floor worked: every round that was opened was dealt, resolved and settled.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.codecs import decode_event, encode
from contracts.commands import LoadShoe
from contracts.envelope import Envelope, event_id
from contracts.events import CommandRejected, RoundResolved, RoundSettled, ShoeBurned
from croupier.audit import audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import KafkaFloorIO
from services.runtime import snapshot as S
from services.runtime.app import Service, build_service
from services.runtime.core import command
from services.rawlog import read_topic as read_log
from services.runtime.kafka import ensure_topics
from services.runtime.tasks import partition_of, snapshot_topic
from tests.services.helpers import make_cores
from tests.system.conftest import broker_settings

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
EXTRA = {"dealing": (T.SHOE_DRAWS,)}
DECIDERS = ("shoe", "dealing", "wagering", "settlement")


class Cluster:
    """Several instances of each decider in this process, one consumer group per service, 5 partitions."""

    def __init__(self, bootstrap: str, **settings: object):
        self.settings = broker_settings(bootstrap, topic_prefix=f"c{uuid.uuid4().hex[:8]}.", partitions=5,
                                        **settings)
        self.cores = make_cores(seed=23)
        self.instances: dict[str, list[Service]] = {n: [] for n in DECIDERS}
        self.io = KafkaFloorIO(self.settings)

    async def start(self, per_service: int = 1) -> None:
        await ensure_topics(self.settings, T.ALL_TOPICS)
        for name in DECIDERS:
            for _ in range(per_service):
                await self.add(name, wait=False)
        for svcs in self.instances.values():
            await asyncio.gather(*(s.wait_ready(90) for s in svcs))
        await self.io.start()

    async def add(self, name: str, wait: bool = True) -> Service:
        core = self.cores[name]
        fresh = type(core)(core.entropy, core.vault) if name == "shoe" else type(core)()  # type: ignore[attr-defined]
        svc = build_service(fresh, self.settings, extra_topics=EXTRA.get(name, ()))
        await svc.start()
        self.instances[name].append(svc)
        if wait:
            await svc.wait_ready(90)
        return svc

    async def remove(self, name: str, index: int = 0) -> None:
        await self.instances[name].pop(index).stop()

    async def stop(self) -> None:
        await self.io.stop()
        for svcs in self.instances.values():
            for s in svcs:
                await s.stop()
            svcs.clear()

    async def log(self) -> list[Envelope]:
        out = []
        for stream in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
            for rec in await read_log(self.settings, self.settings.topic(stream)):
                out.append(decode_event(rec.value))
        return out

    async def load(self, dealer: TableDealer, shoe_id: str) -> None:
        tid = dealer.table_id
        since = self.io.log.mark(tid)
        await self.io.send(T.SHOE_COMMANDS, command(tid, f"{tid}-load-{shoe_id}", Clock()(),
                                                    LoadShoe(shoe_id=shoe_id, cut_at=77)))
        await self.io.wait(tid, lambda e: isinstance(e.payload, ShoeBurned) and e.payload.shoe_id == shoe_id,
                           since, 90)


@pytest.fixture
async def cluster(kafka_bootstrap: str) -> AsyncIterator[Cluster]:
    c = Cluster(kafka_bootstrap)
    try:
        yield c
    finally:
        await c.stop()


def _check_log(log: list[Envelope], rounds: int) -> None:
    """The raw log: one event per (stream, table, seq), the rounds all resolved and settled once, nothing
    rejected for reasons that mean the floor is broken, and a clean audit."""
    seqs = Counter((e.stream, e.table_id, e.seq) for e in log)
    assert [k for k, n in seqs.items() if n > 1] == []
    resolved = Counter(e.payload.round_id for e in log if isinstance(e.payload, RoundResolved))
    settled = Counter(e.payload.round_id for e in log if isinstance(e.payload, RoundSettled))
    assert len(resolved) == rounds and set(resolved.values()) == {1}
    assert settled == resolved
    broken = [e.payload.reason for e in log if isinstance(e.payload, CommandRejected)
              and e.payload.reason in ("unknown_round", "no_open_round", "betting_not_open")]
    assert broken == []
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.rounds_checked == rounds


async def test_three_instances_each_deal_and_instances_join_and_leave_under_load(cluster: Cluster):
    await cluster.start(per_service=3)
    # with 5 partitions and 3 members every member holds whole tasks: 2, 2 and 1
    for name, svcs in cluster.instances.items():
        held = sorted(len(s.tasks.state) for s in svcs if s.tasks is not None)
        assert held == [1, 2, 2], (name, held)
    tables = ["T1", "T3", "T4", "T5"]
    assert len({partition_of(t, 5) for t in tables}) >= 3  # the tables spread over tasks
    dealers = [TableDealer(cluster.io, t, punto_banco_full(), SEATS, random.Random(t), Clock(), timeout=90)
               for t in tables]
    rounds = 12

    async def deal(d: TableDealer) -> None:
        await d.open_table()
        await cluster.load(d, f"{d.table_id}-shoe-1")
        for n in range(1, rounds + 1):
            assert await d.play_round(f"{d.table_id}-shoe-1", f"{d.table_id}-shoe-1-round-{n}"), d.run_state

    async def churn() -> None:
        await asyncio.sleep(3)
        await cluster.add("dealing", wait=False)  # a fourth instance joins while rounds are in play
        await cluster.add("wagering", wait=False)
        await asyncio.sleep(3)
        await cluster.remove("settlement", 0)  # and one leaves
        await cluster.remove("shoe", 1)

    await asyncio.gather(*(deal(d) for d in dealers), churn())
    assert all(d.run_state.rounds == rounds for d in dealers)
    _check_log(await cluster.log(), rounds * len(tables))


async def test_a_fenced_writer_can_never_write_again_and_the_owner_carries_on(kafka_bootstrap: str):
    # a zombie takes the task's transactional id: a producer per task (exactly_once); under exactly_once_v2 an
    # old generation's offsets are refused instead (tests/system/test_eos_v2.py)
    cluster = Cluster(kafka_bootstrap, processing_guarantee="exactly_once")
    try:
        await _fenced_writer(cluster)
    finally:
        await cluster.stop()


async def _fenced_writer(cluster: Cluster) -> None:
    await cluster.start()
    d = TableDealer(cluster.io, "F1", punto_banco_full(), SEATS, random.Random(5), Clock(), timeout=90)
    await d.open_table()
    await cluster.load(d, "F1-shoe-1")
    assert await d.play_round("F1-shoe-1", "F1-shoe-1-round-1")
    dealing = cluster.instances["dealing"][0]
    assert dealing.tasks is not None
    p = partition_of("F1", 5)
    # a zombie's producer: the same task id, as a paused instance that comes back holds it
    zombie = AIOKafkaProducer(**cluster.settings.client_options(), transactional_id=dealing.tasks.transactional_id(p),
                              enable_idempotence=True)
    await zombie.start()  # this fences the live owner; its next transaction fails and it restores
    try:
        for n in (2, 3, 4):
            assert await d.play_round("F1-shoe-1", f"F1-shoe-1-round-{n}")
        assert dealing.tasks.fenced >= 1 and dealing.tasks.restores >= 6  # 5 tasks + the fenced one again
        # the owner's restore fenced the zombie in turn: nothing it writes can ever be committed
        forged = Envelope(event_id=event_id(T.DEALING_EVENTS, "F1", 999), stream=T.DEALING_EVENTS, table_id="F1",
                          seq=999, causation_id="x", correlation_id="x", occurred_at=Clock()(),
                          payload=CommandRejected(command_id="x", command="open_round", reason="forged"))
        with pytest.raises(Exception) as err:
            async with zombie.transaction():
                await zombie.send_and_wait(cluster.settings.topic(T.DEALING_EVENTS), encode(forged),
                                           key=T.key("F1"), partition=p)
        assert "Fenced" in type(err.value).__name__ or "Epoch" in type(err.value).__name__, err.value
    finally:
        try:
            await zombie.stop()
        except Exception:  # noqa: BLE001 - a fenced producer
            pass
    log = await cluster.log()
    assert not any(e.seq == 999 for e in log)
    _check_log(log, 4)


async def test_a_restart_consumes_no_command_twice_and_restores_from_a_snapshot(kafka_bootstrap: str):
    c = Cluster(kafka_bootstrap, snapshot_every_records=20, snapshot_interval_s=0.5)
    try:
        await c.start()
        d = TableDealer(c.io, "R1", punto_banco_full(), SEATS, random.Random(8), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "R1-shoe-1")
        for n in range(1, 9):
            assert await d.play_round("R1-shoe-1", f"R1-shoe-1-round-{n}")
        p = partition_of("R1", 5)
        snaps = await read_log(c.settings, c.settings.topic(snapshot_topic("wagering")), [p])
        assert any(r.key == S.CHECKPOINT_KEY for r in snaps) and any(r.key == b"R1" for r in snaps)
        for name in ("wagering", "settlement", "dealing"):
            await c.remove(name)
            svc = await c.add(name)
            assert svc.tasks is not None and svc.tasks.restored_from_snapshot >= 1, name
            assert svc.host.duplicate_commands == 0  # nothing was handled again
        for n in range(9, 13):
            assert await d.play_round("R1-shoe-1", f"R1-shoe-1-round-{n}")
        for name in DECIDERS:
            assert all(s.host.duplicate_commands == 0 for s in c.instances[name]), name
        _check_log(await c.log(), 12)
    finally:
        await c.stop()


async def test_a_snapshot_of_another_version_is_ignored_and_the_task_rebuilds(kafka_bootstrap: str):
    c = Cluster(kafka_bootstrap, snapshot_every_records=20, snapshot_interval_s=0.5)
    try:
        await c.start()
        d = TableDealer(c.io, "V1", punto_banco_full(), SEATS, random.Random(3), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "V1-shoe-1")
        for n in range(1, 5):
            assert await d.play_round("V1-shoe-1", f"V1-shoe-1-round-{n}")
        await c.remove("wagering")
        p = partition_of("V1", 5)
        prod = AIOKafkaProducer(**c.settings.client_options())
        await prod.start()
        try:  # a checkpoint written by "another version", and a table snapshot that is not msgpack at all
            cp = S.Checkpoint(version="wagering:0:other", partition=p, own={}, inputs={}, tables=1)
            await prod.send_and_wait(c.settings.topic(snapshot_topic("wagering")), S.encode(cp),
                                     key=S.CHECKPOINT_KEY, partition=p)
        finally:
            await prod.stop()
        svc = await c.add("wagering")
        assert svc.tasks is not None and svc.tasks.restored_from_snapshot == 0
        for n in range(5, 8):
            assert await d.play_round("V1-shoe-1", f"V1-shoe-1-round-{n}")
        _check_log(await c.log(), 7)
    finally:
        await c.stop()



def refuse_poison_outcomes(cluster: Cluster) -> Service:
    """The first wagering instance, its commits refused as too large whenever they carry an outcome of the
    command ``poison`` (what a broker does with a record over its limit); returns the instance."""
    from aiokafka.errors import MessageSizeTooLargeError

    wagering = cluster.instances["wagering"][0]
    assert wagering.tasks is not None
    real = wagering.tasks._commit

    async def broker_refuses_poison(p, decisions, letters, offsets, handled=0, **kw):  # type: ignore[no-untyped-def]
        if any(e.causation_id == "poison" for dd in decisions for e in dd.events):
            raise MessageSizeTooLargeError("the outcome of 'poison' exceeds the broker's record limit")
        await real(p, decisions, letters, offsets, handled, **kw)

    wagering.tasks._commit = broker_refuses_poison  # type: ignore[method-assign]
    return wagering


async def test_a_record_whose_outcome_cannot_be_published_is_dead_lettered_and_its_batch_goes_on(
        cluster: Cluster):
    from contracts.codecs import decode_dead_letter
    from contracts.commands import CloseBetting, OpenRound, PlaceBet

    await cluster.start()
    d = TableDealer(cluster.io, "P1", punto_banco_full(), SEATS, random.Random(2), Clock(), timeout=90)
    await d.open_table()
    await cluster.load(d, "P1-shoe-1")
    wagering = refuse_poison_outcomes(cluster)
    rid = "P1-shoe-1-round-1"
    since = cluster.io.log.mark("P1")
    at = Clock()()
    await cluster.io.send(T.DEALING_COMMANDS, command("P1", "open-1", at, OpenRound(round_id=rid, shoe_id="P1-shoe-1")))
    await cluster.io.wait("P1", lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
    for cid in ("ok-1", "poison", "ok-2"):  # one batch: the poison between two good bets and the close
        await cluster.io.send(T.WAGERING_BETS, command("P1", cid, at, PlaceBet(
            round_id=rid, seat=1, player_id="player-1", wager="banker", amount_cents=2_500)))
    await cluster.io.send(T.WAGERING_COMMANDS, command("P1", "close-1", at, CloseBetting(round_id=rid)))
    env = await cluster.io.wait("P1", lambda e: isinstance(e.payload, RoundSettled), since, 90)
    assert env.payload.bets == 2  # the two good bets, settled; the close was answered
    letters = [decode_dead_letter(r.value) for r in await read_log(cluster.settings, cluster.settings.topic(T.dlq("wagering")))]
    assert [(lt.error.split(":")[0], lt.offset) for lt in letters][:1] == [("unpublishable outcome", letters[0].offset)]
    assert len(letters) == 1 and b'"poison"' in letters[0].original
    assert wagering.tasks.aborts >= 3  # the batch, then the poison alone twice


async def test_a_record_on_another_tables_partition_is_dead_lettered_not_decided(cluster: Cluster):
    """A bettor who writes a table's PlaceBet to another partition (red team, finding 4) reaches a task that
    does not own the table: it is dead-lettered ``misrouted``, decides nothing, and the table carries on."""
    from datetime import datetime, timezone

    from contracts.codecs import decode_dead_letter
    from contracts.commands import CloseBetting, OpenRound, PlaceBet
    from contracts.events import BetPlaced, BettingOpened

    await cluster.start()
    tid = "M1"
    d = TableDealer(cluster.io, tid, punto_banco_full(), SEATS, random.Random(3), Clock(), timeout=90)
    await d.open_table()
    await cluster.load(d, "M1-shoe-1")
    since = cluster.io.log.mark(tid)
    await cluster.io.send(T.DEALING_COMMANDS, command(tid, "open-1", Clock()(), OpenRound(round_id="R1",
                                                                                        shoe_id="M1-shoe-1")))
    await cluster.io.wait(tid, lambda e: isinstance(e.payload, BettingOpened), since, 90)
    home = partition_of(tid, cluster.settings.partitions)
    elsewhere = (home + 1) % cluster.settings.partitions
    bet = command(tid, "misrouted", datetime.now(timezone.utc), PlaceBet(
        round_id="R1", seat=1, player_id="player-1", wager="banker", amount_cents=10_000))
    prod = AIOKafkaProducer(**cluster.settings.client_options())
    await prod.start()
    try:
        await prod.send_and_wait(cluster.settings.topic(T.WAGERING_BETS), encode(bet), key=T.key(tid),
                                 partition=elsewhere)
    finally:
        await prod.stop()
    letters: list = []  # type: ignore[type-arg]
    for _ in range(300):
        letters = [decode_dead_letter(r.value) for r in
                   await read_log(cluster.settings, cluster.settings.topic(T.dlq("wagering")))]
        if letters:
            break
        await asyncio.sleep(0.1)
    assert [(x.partition, x.error.split(":")[0]) for x in letters] == [(elsewhere, "misrouted")]
    assert f"table {tid!r} is on partition {home}" in letters[0].error
    await cluster.io.send(T.WAGERING_COMMANDS, command(tid, "close-1", Clock()(), CloseBetting(round_id="R1")))
    env = await cluster.io.wait(tid, lambda e: isinstance(e.payload, RoundSettled), since, 90)
    assert env.payload.bets == 0  # the misrouted bet was never taken
    assert not any(isinstance(e.payload, BetPlaced) for e in cluster.io.log.by_table[tid][since:])


async def test_an_undecodable_record_in_a_batch_whose_transaction_failed_is_still_dead_lettered(
        cluster: Cluster):
    """A batch holds a record that cannot be decoded (its dead letter goes in the batch's transaction) and
    a bet whose outcome the broker refuses: the transaction fails, the batch is read again one record a
    transaction, and the undecodable record is dead-lettered then (once), not skipped as already set aside
    by the transaction that failed."""
    from datetime import datetime, timezone

    from contracts.codecs import decode_dead_letter
    from contracts.commands import CloseBetting, OpenRound, PlaceBet

    await cluster.start()
    tid = "U1"
    d = TableDealer(cluster.io, tid, punto_banco_full(), SEATS, random.Random(4), Clock(), timeout=90)
    await d.open_table()
    await cluster.load(d, "U1-shoe-1")
    wagering = refuse_poison_outcomes(cluster)
    rid = "U1-shoe-1-round-1"
    since = cluster.io.log.mark(tid)
    at = datetime.now(timezone.utc)  # written raw: the broker's log time is now, and skew is checked
    await cluster.io.send(T.DEALING_COMMANDS, command(tid, "open-1", at,
                                                      OpenRound(round_id=rid, shoe_id="U1-shoe-1")))
    await cluster.io.wait(tid, lambda e: type(e.payload).__name__ == "BettingOpened", since, 90)
    home = partition_of(tid, cluster.settings.partitions)
    prod = AIOKafkaProducer(**cluster.settings.client_options())
    await prod.start()
    topic = cluster.settings.topic(T.WAGERING_BETS)
    try:  # one produce batch, so one fetch: the undecodable record and the poison share a transaction
        sent = [await prod.send(topic, b"\x00 not a command", key=T.key(tid), partition=home)]
        for cid in ("poison", "ok-1"):
            sent.append(await prod.send(topic, encode(command(tid, cid, at, PlaceBet(
                round_id=rid, seat=1, player_id="player-1", wager="banker", amount_cents=2_500))),
                key=T.key(tid), partition=home))
        await prod.flush()
        await asyncio.gather(*sent)
    finally:
        await prod.stop()
    got = await cluster.io.wait(tid, lambda e: e.causation_id == "ok-1", since, 90)  # re-read, one a transaction
    assert type(got.payload).__name__ == "BetPlaced", got.payload
    await cluster.io.send(T.WAGERING_COMMANDS, command(tid, "close-1", at, CloseBetting(round_id=rid)))
    env = await cluster.io.wait(tid, lambda e: isinstance(e.payload, RoundSettled), since, 90)
    assert env.payload.bets == 1
    letters = [decode_dead_letter(r.value) for r in
               await read_log(cluster.settings, cluster.settings.topic(T.dlq("wagering")))]
    kinds = sorted(lt.error.split(":")[0] for lt in letters)
    assert kinds == ["undecodable", "unpublishable outcome"], [lt.error for lt in letters]
    assert [lt.original for lt in letters if lt.error.startswith("undecodable")] == [b"\x00 not a command"]
    assert wagering.tasks.aborts >= 2
