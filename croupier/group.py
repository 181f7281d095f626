"""The ``croupier`` command group: a closed output pipe is a quiet exit 0.

``croupier replay … | head -1`` closes the pipe once ``head`` has its line; the next write raises
``BrokenPipeError``. Typer turns that into exit 1, Rich into ``SystemExit(1)`` (``Console.on_broken_pipe``),
and Python complains on stderr when it flushes stdout at exit. :class:`CroupierGroup` (the Typer app's group
class) ends such a command with status 0 and nothing on stderr, but only when stdout really is a pipe nobody
reads (:func:`stdout_closed`): a broken pipe on any other file (a socket to the broker) is still an error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
from collections.abc import Iterator
from typing import Any, NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup


def stdout_closed() -> bool:
    """True when stdout is a pipe whose reading end is closed (``poll`` reports ``POLLERR`` on it). False when
    stdout has no file descriptor (a test runner's buffer) or is open; True where ``poll`` does not exist (a
    ``BrokenPipeError`` is then taken at its word)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return False
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLERR)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def is_closed_pipe(e: BaseException) -> bool:
    """``e`` is a broken pipe (``EPIPE``) and stdout is the pipe nobody reads any more."""
    return isinstance(e, OSError) and e.errno == errno.EPIPE and stdout_closed()


def quiet_exit(code: int = 0) -> NoReturn:
    """Point stdout at ``/dev/null`` (what is still buffered goes nowhere, without a complaint at exit) and
    end the command with status ``code`` (0: the reader has what it wanted)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, ValueError, OSError):
        pass
    raise typer.Exit(code)


def flush_stdout(code: int = 0) -> None:
    """Flush stdout now (a write still buffered fails here, not at interpreter exit): on a closed pipe,
    :func:`quiet_exit` with ``code``."""
    try:
        sys.stdout.flush()
    except OSError as e:
        if is_closed_pipe(e):
            quiet_exit(code)
        raise


def _raise_broken_pipe(console: Console) -> None:
    raise BrokenPipeError(errno.EPIPE, "stdout closed")


@contextlib.contextmanager
def rich_raises_broken_pipe() -> Iterator[None]:
    """While inside, a Rich console (ours, and Typer's help and error panels) lets a closed pipe's
    ``BrokenPipeError`` through instead of ending the process with status 1 (its ``on_broken_pipe``), so that
    :class:`CroupierGroup` can tell a closed stdout from anything else."""
    saved = Console.on_broken_pipe
    Console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
    try:
        yield
    finally:
        Console.on_broken_pipe = saved  # type: ignore[method-assign]


class CroupierGroup(TyperGroup):
    """Typer's group, with a closed output pipe turned into a quiet exit 0 (for every subcommand and for the
    group's own ``--help``); a command that ends with another status keeps it."""

    def make_context(self, info_name: str | None, args: list[str], parent: typer.Context | None = None,
                     **extra: Any) -> typer.Context:
        try:
            with rich_raises_broken_pipe():
                return super().make_context(info_name, args, parent, **extra)
        except OSError as e:
            if is_closed_pipe(e):
                quiet_exit()
            raise

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            with rich_raises_broken_pipe():
                rv = super().invoke(ctx)
        except typer.Exit as done:
            flush_stdout(done.exit_code)
            raise
        except OSError as e:
            if is_closed_pipe(e):
                quiet_exit()
            raise
        flush_stdout()
        return rv
