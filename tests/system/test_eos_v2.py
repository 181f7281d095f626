"""``exactly_once_v2`` on a real broker (issue 25): one transactional producer per instance, fenced by the consumer
group's generation (KIP-447), its tasks' outcomes grouped into one transaction.

* Several instances of every service deal while instances join and leave; the raw log holds every round once,
  audited clean, and each instance wrote through one producer (no task producers).
* A transaction whose offsets carry an old generation (as a member paused past its session sends them when it
  resumes) is refused by the group coordinator: nothing it wrote is seen by a ``read_committed`` reader, the
  tasks in it are restored, the same producer goes on (a fencing by generation is not fatal), and the floor
  carries on.
* Twins: two instances started with one configuration (same ``CROUPIER_INSTANCE``) never fence each other.

The distributed faults (SIGSTOP past the session, kill -9, SIGTERM) run on separate processes in the chaos
test (``tests/system/test_chaos.py``, both guarantees).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from baccarat.table import punto_banco_full
from services.floor.dealer import Clock, TableDealer
from services.runtime.tasks import partition_of
from tests.system import test_cluster as tc

V2 = "exactly_once_v2"


@pytest.fixture
async def cluster(kafka_bootstrap: str) -> AsyncIterator[tc.Cluster]:
    c = tc.Cluster(kafka_bootstrap, processing_guarantee=V2)
    try:
        yield c
    finally:
        await c.stop()


def instance_producers(cluster: tc.Cluster) -> dict[str, set[str]]:
    """Service -> the transactional ids its instances' tasks write through."""
    out: dict[str, set[str]] = {}
    for name, svcs in cluster.instances.items():
        for s in svcs:
            assert s.tasks is not None
            for prod in s.tasks.producers.values():
                out.setdefault(name, set()).add(prod._txn_manager.transactional_id)
    return out


async def test_under_v2_instances_deal_join_and_leave_each_through_one_producer(cluster: tc.Cluster):
    await tc.test_three_instances_each_deal_and_instances_join_and_leave_under_load(cluster)
    ids = instance_producers(cluster)
    for name, svcs in cluster.instances.items():
        assert len(ids.get(name, ())) == len([s for s in svcs if s.tasks and s.tasks.producers]), (name, ids)
        assert not any(".task-" in i for i in ids.get(name, ())), ids  # no producer per task
    grouped = [s.tasks.collector.group_commit for svcs in cluster.instances.values() for s in svcs
               if s.tasks is not None and s.tasks.collector.group_commit is not None]
    assert grouped and sum(g.transactions for g in grouped) > 0
    assert sum(g.parts for g in grouped) > sum(g.transactions for g in grouped)  # some carried several tasks


async def test_under_v2_a_transaction_of_an_old_generation_is_refused_and_nothing_it_wrote_is_seen(
        cluster: tc.Cluster):
    await cluster.start()
    d = TableDealer(cluster.io, "F1", punto_banco_full(), tc.SEATS, random.Random(5), Clock(), timeout=90)
    await d.open_table()
    await cluster.load(d, "F1-shoe-1")
    assert await d.play_round("F1-shoe-1", "F1-shoe-1-round-1")
    dealing = cluster.instances["dealing"][0]
    tasks = dealing.tasks
    assert tasks is not None and tasks.collector.v2
    producer = tasks.collector.instance_producer
    p = partition_of("F1", 5)
    real = tasks.collector.metadata
    assert real is not None
    stale: list[Any] = []

    def metadata() -> Any:  # the next transaction's offsets go with the generation before this one
        m = real()
        if not stale:
            stale.append(m)
            return m._replace(generation_id=m.generation_id - 1)
        return m

    tasks.collector.metadata = metadata
    aborts, restores = tasks.aborts, tasks.restores
    for n in (2, 3, 4):
        assert await d.play_round("F1-shoe-1", f"F1-shoe-1-round-{n}")
    assert stale, "no transaction sent offsets"
    assert tasks.aborts > aborts and tasks.restores > restores  # refused, aborted, and its tasks restored
    assert tasks.state[p] == "ready"
    # refused by the group coordinator, not fenced by id: the instance's producer goes on
    assert tasks.collector.instance_producer is producer
    log = await cluster.log()  # read_committed: the refused transaction's events were aborted
    tc._check_log(log, 4)


async def test_under_v2_twins_with_one_configuration_never_fence_each_other(kafka_bootstrap: str):
    c = tc.Cluster(kafka_bootstrap, processing_guarantee=V2, instance="twin")
    try:
        await c.start(per_service=2)
        ids = instance_producers(c)
        assert all(len(v) == 2 for v in ids.values()), ids  # two producers, one per twin, both alive
        d = TableDealer(c.io, "T3", punto_banco_full(), tc.SEATS, random.Random(3), Clock(), timeout=90)
        await d.open_table()
        await c.load(d, "T3-shoe-1")
        for n in range(1, 4):
            assert await d.play_round("T3-shoe-1", f"T3-shoe-1-round-{n}")
        assert sum(s.tasks.fenced for svcs in c.instances.values() for s in svcs if s.tasks) == 0
        tc._check_log(await c.log(), 3)
    finally:
        await c.stop()
