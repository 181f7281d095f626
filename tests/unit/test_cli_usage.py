"""The command line's exit statuses: every usage error exits 2 (never 1 as if Kafka had failed), a broker that
cannot be reached exits 1 saying so, and a closed output pipe (``croupier … | head -1``) is a quiet exit 0."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from croupier.cli import app
from croupier.group import is_closed_pipe

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "args,message",
    [
        (["demo", "--no-services"], "--no-services needs the --prefix"),
        (["demo", "--no-services", "--prefix", "p.", "--run-id", "a:b"], "--run-id: run id 'a:b' must be 1-32"),
        (["demo", "--tables", "0"], "--tables must be 1..50, got 0"),
        (["demo", "--rounds", "-1"], "--rounds must be 0 or more, got -1"),
        (["demo", "--no-services", "--prefix", "p.", "--timeout", "0"], "--timeout must be more than 0"),
        (["demo", "--tables", "many"], "Invalid value for '--tables'"),
        (["demo", "--floor", "chemin_de_fer"], "--floor must be one of standard, mixed, got 'chemin_de_fer'"),
        (["topics", "list"], "Missing option '--prefix'"),
        (["topics", "delete", "--yes"], "Missing option '--prefix'"),
        (["topics", "delete", "--prefix", "", "--yes"], "the prefix is empty"),
        (["topics", "delete", "--prefix", "   ", "--yes"], "the prefix is empty"),
        (["topics", "list", "--prefix", "__consumer"], "internal topics"),
        (["topics", "delete", "--prefix", "dealing", "--yes"], "names the topics of a floor that runs without"),
        (["topics", "delete", "--prefix", "projection.", "--yes"], "names the topics of a floor that runs without"),
        (["topics", "delete", "--prefix", "s", "--yes"], "names the topics of a floor that runs without"),
        (["topics", "purge", "--prefix", "p."], "No such command 'purge'"),
        (["replay"], "Missing option '--table'"),
        (["replay", "--table", "T", "--round", "r", "--shoe", "s"], "give one of --round, --shoe or --at"),
        (["replay", "--table", "T", "--at", "yesterday"], "cannot read 'yesterday' as a time"),
        (["export", "--table", "T", "--format", "xml"], "unknown format 'xml'"),
        (["serve", "--services", "nope"], "unknown service(s) nope"),
        (["serve", "--services", "projection", "--api-port", "70000"], "port must be 1..65535"),
        (["vault-key", "new"], "Missing option '--file'"),
        (["pit", "--port", "70000"], "port must be 1..65535"),
        (["pit", "--timeout", "0"], "--timeout must be more than 0 seconds"),
        (["demo", "--pit-port", "70000"], "port must be 1..65535"),
        (["odds", "--decks", "x"], "Invalid value for '--decks'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
    ],
)
def test_usage_errors_exit_2_and_never_blame_kafka(args, message):
    # a broker nobody runs: a usage error must be found before anything connects
    r = runner.invoke(app, [*args, *(["--bootstrap", f"127.0.0.1:{closed_port()}"]
                                     if args[0] in ("demo", "topics") and len(args) > 2 else [])])
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert message in r.output, r.output
    assert "Kafka" not in r.output and "Traceback" not in r.output


def _commands(group, path=()):  # type: ignore[no-untyped-def]
    for name, cmd in group.commands.items():
        yield (*path, name)
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


COMMANDS = sorted(_commands(typer.main.get_command(app)))


def test_the_command_tree_is_what_the_readme_lists():
    assert ("topics", "list") in COMMANDS and ("topics", "delete") in COMMANDS and ("demo",) in COMMANDS
    assert len(COMMANDS) >= 14


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_an_unknown_option_is_a_usage_error_for_every_command(path):
    r = runner.invoke(app, [*path, "--no-such-option"])
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert "No such option" in r.output or "Missing" in r.output or "No such command" in r.output, r.output


@pytest.mark.parametrize("args", [
    ["demo", "--no-services", "--prefix", "opsunit."],
    ["topics", "list", "--prefix", "opsunit."],
    ["topics", "delete", "--prefix", "opsunit.", "--yes"],
])
def test_no_broker_is_exit_1_and_says_kafka_cannot_be_reached(args):
    port = closed_port()
    r = runner.invoke(app, [*args, "--bootstrap", f"127.0.0.1:{port}"])
    assert r.exit_code == 1, r.output
    err = r.stderr.strip()
    assert err.startswith(f"error: cannot reach Kafka at 127.0.0.1:{port}"), err
    assert "\n" not in err


def _to_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``croupier ARGS`` with stdout a pipe whose reader has already gone (``| head -1`` once it has its
    line): every write to stdout fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "croupier.cli", *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120, check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [["odds"], ["odds", "--json"], ["roads", "BPPTBBBP"], ["--help"],
                                  ["replay", "--help"], ["topics", "--help"]])
def test_a_closed_output_pipe_is_a_quiet_exit_0(args):
    p = _to_closed_pipe(*args)
    assert (p.returncode, p.stderr) == (0, "")


def test_a_closed_pipe_keeps_an_error_status_and_its_message():
    p = _to_closed_pipe("resolve", "A,2,3")
    assert p.returncode == 2
    assert p.stderr.startswith("error: the round needs card 4")


def test_head_1_gets_its_line_and_the_pipeline_exits_0():
    p = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{sys.executable}' -m croupier.cli odds | head -1"],
                       capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("Shoe: 416 cards")


def test_a_broken_pipe_elsewhere_is_not_taken_for_a_closed_stdout():
    assert not is_closed_pipe(BrokenPipeError(errno.EPIPE, "a socket to the broker"))
    assert not is_closed_pipe(OSError(errno.ECONNRESET, "reset"))
