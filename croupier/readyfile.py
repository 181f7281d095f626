"""A ready file for ``croupier serve --ready-file PATH``: it exists exactly while every service of the process
is ready (each assigned task restored), so a container's health check is ``test -f PATH``.

The file is removed when serve starts (a restarted container keeps its file system, and with it a file an
earlier run left) and when it stops; in between it is checked every ``every_s`` seconds. A service holding no
task (more replicas than partitions) is not ready, as :attr:`services.runtime.app.Service.ready` says.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol


class Readiness(Protocol):
    @property
    def ready(self) -> bool: ...


class ReadyFile:
    """The file at ``path``: :meth:`update` makes it exist or not; created removed."""

    def __init__(self, path: Path):
        self.path = path
        self.clear()

    def update(self, ready: bool) -> None:
        """Create the file when ``ready`` (empty, parent directories too), else remove it."""
        if ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch(exist_ok=True)
        else:
            self.clear()

    def clear(self) -> None:
        """Remove the file if it is there."""
        self.path.unlink(missing_ok=True)


async def keep_ready_file(ready_file: ReadyFile, services: Callable[[], Sequence[Readiness]],
                          stop: asyncio.Event, every_s: float = 1.0) -> None:
    """Until ``stop`` is set: every ``every_s`` s, the file exists when ``services()`` is not empty and each is
    ready. Removed when it returns (or is cancelled)."""
    try:
        while not stop.is_set():
            running = services()
            ready_file.update(bool(running) and all(s.ready for s in running))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_s)
    finally:
        ready_file.clear()
