"""The ``croupier`` command line: how auditors, tests and operators poke the rules and run the floor.

This module assembles the Typer app (:data:`app`) from the command modules, each named for what it holds:
:mod:`croupier.cli_rules` (``odds``, ``resolve``, ``roads``), :mod:`croupier.cli_serve` (``serve``, ``api``,
``pit``), :mod:`croupier.cli_topics` (``vault-key``, ``topics``), :mod:`croupier.cli_demo` (``demo``),
:mod:`croupier.cli_replay` (``replay``, ``export``), :mod:`croupier.cli_audit` (``audit``) and
:mod:`croupier.table_cli` (``table``); what they share is :mod:`croupier.cli_common`. Each command imports what
it runs when it runs: ``croupier --help`` loads no rules core, contracts, Kafka client or numpy
(``tests/unit/test_cli_imports.py``). The command modules do without ``from __future__ import annotations``:
Typer reads every command's signature to build the app, and string annotations would be ``eval``-ed one by one
(a fifth of ``--help``'s time); :mod:`croupier.fasthelp` keeps the Rich renderers the help never uses unloaded.

Exit statuses: 0 done (also when the reader of stdout closed the pipe: ``croupier replay … | head -1``,
:mod:`croupier.group`); 2 bad input or usage (a missing or unknown option, a rules-core error, an unknown
table or prefix), one line ``error: …`` on stderr and never a traceback; 1 infrastructure (a broker that
cannot be reached, services that do not answer) or a dirty audit.
"""

from __future__ import annotations

import typer

from croupier.cli_audit import audit
from croupier.cli_common import DEFAULT_API_HOST, DEFAULT_API_PORT, clean_errors, fail, out
from croupier.cli_demo import demo
from croupier.cli_replay import export, replay
from croupier.cli_rules import odds, resolve, roads
from croupier.cli_serve import api, pit, serve
from croupier.cli_topics import topics_app, vault_key
from croupier.fasthelp import import_help_renderer
from croupier.group import CroupierGroup
from croupier.table_cli import table_app

import_help_renderer()  # Typer's help panels without the Rich renderers the app never uses (croupier.fasthelp)

__all__ = ["DEFAULT_API_HOST", "DEFAULT_API_PORT", "api", "app", "audit", "clean_errors", "demo", "export", "fail",
           "main", "odds", "out", "pit", "replay", "resolve", "roads", "serve"]

app = typer.Typer(
    cls=CroupierGroup,
    name="croupier",
    help="Croupier: New Jersey baccarat tables, exact rules, money and odds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# the order of `croupier --help`: the commands, then the sub-apps
for _command in (odds, resolve, roads, serve):
    app.command()(_command)
app.add_typer(vault_key, name="vault-key")
app.add_typer(topics_app, name="topics")
for _command in (api, pit, demo, replay, export, audit):
    app.command()(_command)
app.add_typer(table_app, name="table")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
