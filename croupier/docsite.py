"""The generated reference pages of the documentation site (``mkdocs.yml``, ``docs/``).

Three references are generated from the code, never written by hand, so they cannot drift:

* ``reference/cli.md``: every ``croupier`` command with its options and help, from the Typer app
  (:data:`croupier.cli.app`) through Typer's own Markdown renderer;
* ``reference/http.md``: every endpoint of the query API (:func:`services.projection.api.create_api`) and of the
  command API (:func:`services.command_api.http.create_command_api`), from their OpenAPI documents, which are
  published beside it as ``reference/openapi-query.json`` and ``reference/openapi-command.json``;
* the events and commands: ``messages.md``, ``asyncapi.json`` and ``schema/`` (:mod:`croupier.docs`,
  committed and checked by ``tests/contracts/test_docs_current.py``).

:func:`pages` returns ``{path under docs/: text}``; ``scripts/mkdocs_hooks.py`` adds them to the site at build
time, and ``python -m croupier.docsite DIR`` writes them into ``DIR`` to read them without MkDocs. Building the
apps does no I/O: their hosts are in memory and never started.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: credentials for building the apps only (nothing is served)
_TOKENS = {"dealer": "docs-dealer-token-0123456789", "cage": "docs-cage-token-0123456789",
           "pit": "docs-pit-token-0123456789012", "surveillance": "docs-surveillance-token-0123456"}


def cli_reference() -> str:
    """``reference/cli.md``: the command line, from the Typer app (every command and sub-command)."""
    import typer
    from typer.cli import get_docs_for_click

    from croupier.cli import app

    command = typer.main.get_command(app)
    body = get_docs_for_click(obj=command, ctx=typer.Context(command), name="croupier", title="Command line")
    return body.rstrip("\n") + "\n"


def openapi_documents() -> dict[str, dict[str, Any]]:
    """``{"query": ..., "command": ...}``: the OpenAPI documents of the two HTTP APIs, built in memory."""
    from services.command_api.gateway import CommandGateway, MemoryCommandBus
    from services.command_api.http import create_command_api
    from services.floor.dealer import Clock
    from services.projection.api import create_api
    from services.projection.core import ProjectionCore
    from services.runtime.host import NullPublisher, ServiceHost
    from services.runtime.memory import MemoryBus
    from services.runtime.settings import Settings

    host = ServiceHost(ProjectionCore(), Settings(), NullPublisher())
    query = create_api(host, {r: t for r, t in _TOKENS.items()}, ready=lambda: True, journal=object())  # type: ignore[arg-type]
    gateway = CommandGateway(MemoryCommandBus(MemoryBus()), Clock(datetime(2026, 1, 1, tzinfo=timezone.utc)))
    command = create_command_api(gateway, {r: t for r, t in _TOKENS.items() if r != "surveillance"})
    return {"query": query.openapi(), "command": command.openapi()}


def _endpoints(doc: dict[str, Any]) -> list[str]:
    lines = ["| method | path | what it does |", "|---|---|---|"]
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            summary = (op.get("summary") or "").replace("|", "\\|")
            first = (op.get("description") or "").strip().split("\n\n")[0].replace("\n", " ").replace("|", "\\|")
            lines.append(f"| `{method.upper()}` | `{path}` | {summary}{': ' + first if first else ''} |")
    return lines


def http_reference(docs: dict[str, dict[str, Any]]) -> str:
    """``reference/http.md``: every endpoint of both APIs, from their OpenAPI documents."""
    lines = ["# HTTP APIs", "",
             "Generated from the apps' OpenAPI documents (`croupier/docsite.py`). A running service serves the",
             "same document at `/openapi.json` and its docs UI at `/docs`.", ""]
    for key, title in (("query", "Query API (`croupier api`, `croupier pit`)"),
                       ("command", "Command API (`croupier table api`, `croupier pit`)")):
        doc = docs[key]
        lines += [f"## {title}", "", doc["info"].get("description", ""), "",
                  f"OpenAPI document: [openapi-{key}.json](openapi-{key}.json).", ""]
        lines += _endpoints(doc) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def pages() -> dict[str, str]:
    """``{path under docs/: text}`` of every generated reference page."""
    docs = openapi_documents()
    out = {"reference/cli.md": cli_reference(), "reference/http.md": http_reference(docs)}
    for key, doc in docs.items():
        out[f"reference/openapi-{key}.json"] = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m croupier.docsite DIR``: write the generated pages under ``DIR``."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "var/docsite")
    for path, text in pages().items():
        f = target / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
