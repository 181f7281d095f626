"""The command line starts without the odds engine: no numpy until a command computes odds (issue 26)."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = """
import sys
import croupier.cli
assert "numpy" not in sys.modules, "importing croupier.cli loaded numpy"
sys.argv = ["croupier", *sys.argv[1:]]
try:
    croupier.cli.main()
except SystemExit:
    pass
print("NUMPY" if "numpy" in sys.modules else "NO-NUMPY")
"""


def _modules_after(*args: str) -> str:
    got = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120,
                         check=False)
    assert got.returncode == 0, got.stderr
    return got.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("args", [["--help"], ["replay", "--help"], ["topics", "--help"], ["odds", "--help"]])
def test_commands_that_compute_no_odds_start_without_numpy(args: list[str]) -> None:
    assert _modules_after(*args) == "NO-NUMPY"


def test_the_odds_command_still_loads_the_engine() -> None:
    # the probe can tell: the one command that evaluates odds does load numpy
    assert _modules_after("odds", "--decks", "1") == "NUMPY"
