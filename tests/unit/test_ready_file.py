"""``croupier serve --ready-file``: the file exists exactly while every service is ready (a container's
health check), and is gone before serve starts and after it stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

from croupier.readyfile import ReadyFile, keep_ready_file


class FakeService:
    def __init__(self, ready: bool = False):
        self.ready = ready


def test_a_file_left_by_an_earlier_run_is_removed_at_once(tmp_path: Path):
    path = tmp_path / "run" / "ready"
    path.parent.mkdir()
    path.write_text("left by a crashed run")
    rf = ReadyFile(path)
    assert not path.exists()
    rf.update(True)
    assert path.exists() and path.read_text() == ""
    rf.update(False)
    assert not path.exists()


async def test_the_file_follows_readiness_and_is_gone_after_stop(tmp_path: Path):
    path = tmp_path / "ready"
    running: list[FakeService] = []
    stop = asyncio.Event()
    keeper = asyncio.create_task(keep_ready_file(ReadyFile(path), lambda: running, stop, every_s=0.01))

    async def settle() -> None:
        await asyncio.sleep(0.05)

    await settle()
    assert not path.exists()  # no service yet: not ready
    running += [FakeService(True), FakeService(False)]
    await settle()
    assert not path.exists()  # one still restoring
    running[1].ready = True
    await settle()
    assert path.exists()
    running[0].ready = False  # a rebalance: restoring again
    await settle()
    assert not path.exists()
    running[0].ready = True
    await settle()
    assert path.exists()
    stop.set()
    await asyncio.wait_for(keeper, 1)
    assert not path.exists()
