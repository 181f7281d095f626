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


#: what `croupier --help` has no use for (issue 26/27): the rules core and the odds engine, the wire schemas and their
#: codec, the services and their Kafka client and logging, TLS, and the two Rich renderers Typer's help module
#: imports for modes the app does not use (croupier.fasthelp)
HEAVY = ("numpy", "msgspec", "baccarat", "contracts", "services", "aiokafka", "faststream", "structlog", "ssl",
         "rich.markdown", "rich.traceback", "markdown_it", "pygments")

_HEAVY_PROBE = """
import sys
sys.argv = ["croupier", *sys.argv[1:]]
import croupier.cli
try:
    croupier.cli.main()
except SystemExit:
    pass
heavy = %r
print(" ".join(sorted({m.split(".")[0] if m.split(".")[0] != "rich" else m for m in sys.modules
                       if any(m == h or m.startswith(h + ".") for h in heavy)})) or "NONE")
""" % (HEAVY,)


@pytest.mark.parametrize("args", [["--help"], ["table", "--help"]])
def test_help_imports_none_of_the_heavy_modules(args: list[str]) -> None:
    got = subprocess.run([sys.executable, "-c", _HEAVY_PROBE, *args], capture_output=True, text=True, timeout=120,
                         check=False)
    assert got.returncode == 0, got.stderr
    assert "Usage: croupier" in got.stdout
    assert got.stdout.strip().splitlines()[-1] == "NONE"


def test_the_deferred_rich_renderers_are_the_real_ones_when_used() -> None:
    # after the app's import, typer's help module holds stand-ins that build the real Rich objects, and an import
    # of rich.markdown / rich.traceback anywhere else gets the real modules (no stand-in left in sys.modules)
    probe = """
import sys
import croupier.cli
import typer.rich_utils as ru
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
md = ru.Markdown("**x**", style="none")
import rich.markdown, rich.traceback
assert type(md) is rich.markdown.Markdown, type(md)
assert rich.markdown.Markdown is not ru.Markdown and rich.markdown.Markdown.__module__ == "rich.markdown"
try:
    raise ValueError("boom")
except ValueError as e:
    tb = ru.Traceback.from_exception(type(e), e, e.__traceback__)
assert type(tb) is rich.traceback.Traceback, type(tb)
print("REAL")
"""
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "REAL"


def test_the_tls_options_read_the_variables_the_https_settings_name() -> None:
    from croupier import https_options
    from services.runtime import https

    assert (https_options.ENV_CERT, https_options.ENV_KEY) == (https.ENV_CERT, https.ENV_KEY)
