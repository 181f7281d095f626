"""The test suite's time budget (CI must finish within 20 minutes on a 2-core machine).

Hypothesis: ``tests/conftest.py`` loads the profile named by ``HYPOTHESIS_PROFILE`` (``.ci/run`` sets ``ci``;
default: Hypothesis' own). A test that asks for ``max_examples`` explicitly overrides any profile, so it asks
through :func:`examples`: its full count on a developer's machine (and under ``HYPOTHESIS_PROFILE=full``),
a quarter of it (at least :data:`CI_MIN_EXAMPLES`) under ``ci``. Every property still runs on every CI run; the
nightly-style deep run is ``HYPOTHESIS_PROFILE=full``.
"""

from __future__ import annotations

import os

#: the fewest examples a property runs under the ``ci`` profile
CI_MIN_EXAMPLES = 10
#: the share of a property's examples the ``ci`` profile runs
CI_SHARE = 4


def profile() -> str:
    """The Hypothesis profile of this session: ``ci``, ``full`` or ``default``."""
    return os.environ.get("HYPOTHESIS_PROFILE", "default").strip() or "default"


def examples(n: int) -> int:
    """``max_examples`` for a property that wants ``n`` (see the module): ``n``, or ``max(10, n // 4)`` in CI."""
    if profile() == "ci":
        return max(CI_MIN_EXAMPLES, n // CI_SHARE)
    return n
