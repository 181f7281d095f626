"""The start-up heap frozen out of the cyclic collector's walks (services/runtime/gc_policy.py, issue 30)."""

from __future__ import annotations

import gc

from services.runtime.gc_policy import freeze_startup_heap


def test_freezing_moves_the_heap_out_of_every_generation_and_new_objects_are_collected_as_before():
    gc.unfreeze()
    try:
        tracked = len(gc.get_objects())
        frozen = freeze_startup_heap()
        assert frozen == gc.get_freeze_count() >= tracked // 2 > 1000
        assert len(gc.get_objects()) < tracked // 2  # a full collection walks only what is not frozen
        # an object made afterwards is tracked and collected as before (cyclic garbage included)
        cycle: list[object] = []
        cycle.append(cycle)
        assert any(o is cycle for o in gc.get_objects())
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
