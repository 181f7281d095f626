"""The ops broker probe's request (:func:`services.runtime.ops._ask_brokers`): a cluster with one node down is
reachable; the probe fails only when no known node answers, with the first node's error."""

from __future__ import annotations

import types
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError, NodeNotReadyError

from services.runtime.ops import _ask_brokers


class _Admin:
    def __init__(self, answering: set[int], nodes: tuple[int, ...] = (1, 2, 3), random_pick: int = 1) -> None:
        self.answering, self.random_pick, self.asked = answering, random_pick, []
        self._client = types.SimpleNamespace(cluster=types.SimpleNamespace(
            brokers=lambda: [types.SimpleNamespace(nodeId=n) for n in nodes]))

    async def _send_request(self, request: Any, node_id: int | None = None) -> Any:
        node = self.random_pick if node_id is None else node_id
        self.asked.append(node)
        if node not in self.answering:
            raise NodeNotReadyError(f"node {node} is not ready") if node == 1 else KafkaConnectionError(f"{node}")
        return object()


async def test_a_node_down_is_passed_by() -> None:
    admin = _Admin(answering={2, 3})
    await _ask_brokers(admin)
    assert admin.asked == [1, 1, 2]  # the random pick, then the known nodes in turn until one answers


async def test_one_answer_at_the_pick_asks_no_other() -> None:
    admin = _Admin(answering={1, 2, 3})
    await _ask_brokers(admin)
    assert admin.asked == [1]


async def test_no_node_answering_raises_the_first_error() -> None:
    admin = _Admin(answering=set())
    with pytest.raises(NodeNotReadyError, match="node 1"):
        await _ask_brokers(admin)
    assert admin.asked == [1, 1, 2, 3]
