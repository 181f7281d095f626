"""The chaos run on a cluster kills one node at a time, and the next only once the restarted one is back in
every partition's in-sync replicas (``croupier/chaos_faults.py``, issue 25): a node that serves again is not
yet in sync, and killing another meanwhile left partitions below ``min.insync.replicas``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import croupier.chaos_faults as F
from croupier.chaos_model import ChaosConfig


def _topics(isr_short: int) -> list[dict[str, Any]]:
    full = {"replicas": [1, 2, 3], "isr": [3, 1, 2]}
    short = {"replicas": [1, 2, 3], "isr": [3]}
    return [{"topic": "t", "partitions": [dict(full)] * 3 + [dict(short)] * isr_short},
            {"topic": "__transaction_state", "partitions": [dict(full)]}]


def test_under_replicated_counts_partitions_with_fewer_in_sync_replicas_than_replicas():
    assert F.under_replicated(_topics(0)) == 0
    assert F.under_replicated(_topics(2)) == 2
    assert F.under_replicated([{"topic": "one", "partitions": [{"replicas": [1], "isr": [1]}]}]) == 0


class FakeCluster:
    brokers = 3
    bootstrap = "unused:1"

    def __init__(self) -> None:
        self.killed: list[int] = []
        self.started: list[int] = []

    def kill9(self, node: int) -> None:
        self.killed.append(node)

    def start_node(self, node: int) -> None:
        self.started.append(node)


@pytest.mark.asyncio
async def test_a_restarted_node_counts_as_down_until_every_partition_is_in_sync_again(monkeypatch):
    answers = [5, 2, 0]
    seen: list[int | None] = []
    cluster = FakeCluster()
    inj = F.Injector(ChaosConfig(bootstrap="unused:1", prefix="p."), None, None, cluster, lambda s: None)  # type: ignore[arg-type]

    async def count(bootstrap: str) -> int:
        seen.append(inj.node_down)  # asked while the node still counts as down
        return answers.pop(0)

    monkeypatch.setattr(F, "count_under_replicated", count)
    monkeypatch.setattr(F, "RESYNC_POLL_S", 0.0)
    inj.rng.uniform = lambda a, b: 0.0  # type: ignore[method-assign]  # restarted at once
    inj.node_down = 2
    await asyncio.wait_for(inj._broker_restart(2), 10)
    assert cluster.killed == [2] and cluster.started == [2]
    assert seen == [2, 2, 2] and answers == []  # asked until nothing was under-replicated
    assert inj.node_down is None

