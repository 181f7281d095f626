"""Documentation generated from the code: ``python -m croupier.docs [--check]`` writes ``docs/``.

What it writes, deterministically (the same text for the same code and msgspec version):

* ``docs/asyncapi.json``: an AsyncAPI 3.0 document of the whole system. One channel per Kafka topic of
  :mod:`contracts.topics` (its partitions, its key ``table_id``, its retention), the messages that travel on
  it, which service sends and which receives them (read from the service cores' ``own_stream``,
  ``private_streams``, ``command_streams`` and ``input_streams``), Kafka bindings, and each message's payload
  as a ``$ref`` to a JSON Schema below, with the golden message of ``contracts/golden/v1`` as its example;
* ``docs/schema/*.json``: the JSON Schemas of :mod:`contracts.schema` (envelope, command envelope, dead
  letter, table spec), regenerated with its generator;
* ``docs/schema/events/<tag>.json``: an ``Envelope`` whose payload is that event, its ``stream`` the topic(s)
  the event travels on; ``docs/schema/commands/<tag>.json``: a ``CommandEnvelope`` carrying that command;
* ``docs/schema/topics/<topic>.json``: the envelope of everything that travels on one topic;
* ``docs/messages.md``: an index: topics, who writes and reads them, their messages;
* ``docs/parquet.md``: the files and typed columns of ``croupier export --format parquet``
  (:mod:`croupier.parquet`), one table per event type.

Which event travels on which topic is :data:`EVENT_TOPICS` (:mod:`croupier.docs_topics`; the same as the
table of ``contracts/README.md``); every event of :data:`contracts.events.AnyEvent` and every command of
:data:`contracts.commands.AnyCommand` must be in it, or the generator refuses to run (and the test that
checks ``docs/`` is current fails). ``--check`` writes nothing: it exits 1 listing every file that differs
from what would be generated, is missing, or is stale.

The parts, each in the module named for it (their public names re-exported here): :mod:`croupier.docs_topics`
(which message travels on which topic, who writes and reads it), :mod:`croupier.docs_schemas` (the JSON
Schemas), :mod:`croupier.docs_asyncapi` (the AsyncAPI document and the index) and :mod:`croupier.docs_parquet`
(the Parquet page).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from contracts.schema import render
from croupier.docs_asyncapi import GOLDEN_DIR, asyncapi, index  # noqa: F401
from croupier.docs_parquet import parquet_doc
from croupier.docs_schemas import schemas
from croupier.docs_topics import (COMMAND_TOPICS, EVENT_TOPICS, TOPIC_SUMMARY, WRITER_KINDS,  # noqa: F401
                                  MappingError, check_mapping, flows, messages_of)

ROOT = Path(__file__).resolve().parent.parent
#: where the generated documentation lives
DOCS_DIR = ROOT / "docs"


# ---- files -------------------------------------------------------------------------------------------------
def generate() -> dict[str, str]:
    """Relative path under ``docs/`` -> file text."""
    doc = asyncapi()
    files = {path: render(schema) for path, schema in schemas().items()}
    files["asyncapi.json"] = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    files["messages.md"] = index(doc)
    files["parquet.md"] = parquet_doc()
    return dict(sorted(files.items()))


#: the Markdown pages the generator writes in ``docs/`` (``README.md``: its old name for ``messages.md``)
GENERATED_PAGES = ("messages.md", "parquet.md", "README.md")


def _existing(directory: Path) -> set[str]:
    """The files of ``directory`` the generator answers for (a stale one among them is reported or removed):
    the ``schema/`` tree, every top-level file but a hand-written Markdown page, and its own pages. The rest of
    ``docs/`` is the documentation site written by hand (``guide/``, ``images/``, ``docs/cage.md`` …:
    ``mkdocs.yml``), which it neither checks nor removes."""
    if not directory.is_dir():
        return set()
    files = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    return {f for f in files if f.startswith("schema/")
            or ("/" not in f and (not f.endswith(".md") or f in GENERATED_PAGES))}


def differences(directory: Path = DOCS_DIR) -> list[str]:
    """What in ``directory`` differs from :func:`generate`: ``"<path>: changed" | "missing" | "stale"``."""
    wanted = generate()
    out = []
    for path, text in wanted.items():
        f = directory / path
        if not f.is_file():
            out.append(f"{path}: missing")
        elif f.read_text(encoding="utf-8") != text:
            out.append(f"{path}: changed")
    for path in sorted(_existing(directory) - set(wanted)):
        out.append(f"{path}: stale (not generated any more)")
    return out


def write(directory: Path = DOCS_DIR) -> list[str]:
    """Write every file (and remove stale ones); returns the paths written, changed or removed."""
    wanted = generate()
    changed = []
    for path, text in wanted.items():
        f = directory / path
        if not f.is_file() or f.read_text(encoding="utf-8") != text:
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    for path in sorted(_existing(directory) - set(wanted)):
        (directory / path).unlink()
        changed.append(f"{path} (removed)")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m croupier.docs",
                                     description="Generate docs/: the AsyncAPI document and the JSON Schemas.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the files that differ from what would be generated")
    parser.add_argument("--dir", type=Path, default=DOCS_DIR, help=f"output directory (default {DOCS_DIR})")
    args = parser.parse_args(argv)
    try:
        if args.check:
            diffs = differences(args.dir)
            if diffs:
                print(f"docs in {args.dir} are out of date (run `python -m croupier.docs`):", file=sys.stderr)
                for d in diffs:
                    print(f"  {d}", file=sys.stderr)
                return 1
            print(f"docs in {args.dir} are up to date ({len(generate())} files).")
            return 0
        changed = write(args.dir)
    except MappingError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(changed)} file(s) in {args.dir}" + (f": {', '.join(changed)}" if changed else
                                                           " (all up to date)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
