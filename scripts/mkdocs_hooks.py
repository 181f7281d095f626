"""MkDocs hook (``mkdocs.yml``: ``hooks``): adds the generated reference pages of :mod:`croupier.docsite`
(the command line from the Typer app, the HTTP APIs from their OpenAPI documents) to the site at build time,
so they are never committed and never stale."""

from __future__ import annotations

from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - MkDocs' hook signature
    from croupier.docsite import pages

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files
