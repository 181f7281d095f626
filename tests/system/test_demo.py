"""`croupier demo` on the real broker: a small floor, each shoe closed after 12 rounds (`--rounds`: the end of
a shoe at its cutting card is proven by tests/system/test_floor_kafka.py), ending with a clean audit."""

from __future__ import annotations

import io

from rich.console import Console

from croupier.demo import run_demo


async def test_demo_two_tables_end_with_a_clean_audit_and_the_cage_to_the_cent(kafka_bootstrap: str):
    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=False)
    code = await run_demo(tables=2, shoes=1, speed=0, bootstrap=kafka_bootstrap, console=console, seed=5,
                          rounds=12)
    out = buf.getvalue()
    assert code == 0, out[-3000:]
    assert "Audit: clean" in out and "2 shoes verified" in out
    assert "Surveillance alerts:" in out and "croupier audit --prefix demo-" in out
    # the cage: both tables' shifts opened, filled or credited, closed and counted, to the cent
    (line,) = [ln for ln in out.splitlines() if ln.startswith("cage: ")]
    assert line.startswith("cage: tables=2 shifts=2 ") and " variance_cents=0 " in line, line


async def test_demo_mixed_floor_deals_each_game_and_ends_with_a_clean_audit(kafka_bootstrap: str):
    """``--floor mixed``: punto banco with a curator, no-vig dragon 7, casino night and chemin de fer side by
    side, a full shoe each, audited clean."""
    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False)
    code = await run_demo(tables=4, shoes=1, speed=0, bootstrap=kafka_bootstrap, console=console, seed=12,
                          floor="mixed", rounds=12)
    out = buf.getvalue()
    assert code == 0, out[-3000:]
    assert "Audit: clean" in out and "4 shoes verified" in out
    for game in ("punto banco+curator", "no-vig D7", "casino night", "chemin de fer"):
        assert game in out
