"""The process's garbage collector, kept off the live path (issue 30).

CPython's cyclic collector walks every tracked object of the generation it collects; a collection of the oldest
generation walks the whole heap, and the event loop waits for it. In the projection's process at 50 tables
(``bench/projection.py``, which prints each generation's collections and when the full ones ran) the full
collection during a run took 58-94 ms: every card in flight meanwhile waited. Most of that heap is what the
process imported and built before it served (aiokafka, FastStream, FastAPI, the odds engine's tables):
objects that live as long as the process and are freed, if ever, by reference counting. Frozen, the same
collection took 11-14 ms (two runs each, alternated; the collect before the freeze, 35-44 ms, runs before
the first card).

:func:`freeze_startup_heap` moves them to the permanent generation once the services are up (``gc.freeze``,
Python 3.7+): later collections walk only what was made since. Nothing changes for memory: a frozen object
that becomes unreachable is still freed by reference counting; only cyclic garbage among frozen objects would
stay, and the start-up heap holds none that matters (a module, a class, a table of the odds engine).
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect once, then freeze every object tracked now (``gc.freeze``): later collections skip them.
    Returns the number of objects frozen in all (``gc.get_freeze_count``). Idempotent in effect: a second call
    freezes what was made since the first."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
