"""The runtime's tasks under their former names (``Tasks``, and the helpers other modules import from here).

The runtime is in Kafka Streams' shapes (see ``services/runtime/README.md``): the task manager
(:mod:`services.runtime.task_manager`), the stream task, the partition group, the record collector, the commit
loop and the state restorer. This module keeps the names callers and tests used before the split:
:class:`Tasks` is the :class:`~services.runtime.task_manager.TaskManager` with its parts' state reachable by
the attribute names the single class had.
"""

from __future__ import annotations

from typing import Any

from aiokafka import TopicPartition

from services.runtime.assignor import partition_of
from services.runtime.commit_loop import DEFER_MAX_RECORDS, DEFER_MAX_S
from services.runtime.partition_group import CATCH_UP_MAX_S, in_log_order
from services.runtime.partition_group import position as _position
from services.runtime.record_collector import TaskFailed, producer_dead
from services.runtime.snapshot import snapshot_topic
from services.runtime.state_restorer import RESTORE_CHUNK, RESTORE_WORKERS
from services.runtime.task_manager import STUCK_AFTER_S, TaskManager

__all__ = ["CATCH_UP_MAX_S", "DEFER_MAX_RECORDS", "DEFER_MAX_S", "RESTORE_CHUNK", "RESTORE_WORKERS",
           "STUCK_AFTER_S", "TaskFailed", "Tasks", "_position", "in_log_order", "partition_of", "producer_dead",
           "snapshot_topic"]


class Tasks(TaskManager):
    """:class:`~services.runtime.task_manager.TaskManager`, with its parts' state under the names the single
    ``Tasks`` class gave it (the tests read and set them)."""

    @property
    def _waits(self) -> dict[int, dict[tuple[str, int], tuple[dict[TopicPartition, int], float]]]:
        return self.group.waits

    @property
    def _catch_up(self) -> dict[str, tuple[str, ...]]:
        return self.group.catch_up

    @property
    def _uncommitted(self) -> dict[int, dict[TopicPartition, int]]:
        return self.commits.uncommitted

    @property
    def _deferred_since(self) -> dict[int, float]:
        return self.commits.deferred_since

    @property
    def _flusher(self) -> Any:
        return self.commits.flusher

    @property
    def _last_checkpoint(self) -> dict[int, float]:
        return self.commits.last_checkpoint

    @property
    def _since_checkpoint(self) -> dict[int, int]:
        return self.commits.since_checkpoint

    @property
    def _workers(self) -> list[Any]:
        return self.restorer.workers
