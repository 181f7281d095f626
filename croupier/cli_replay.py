"""``croupier replay`` and ``croupier export``: a table's event log read back from Kafka (:mod:`croupier.replay`,
:mod:`croupier.export`), as an investigator's timeline or as files for analytics.

Registered on the app by :mod:`croupier.cli`.
"""

import os
import sys
from typing import Annotated, Optional

import typer

from croupier.cli_common import BOOTSTRAP_HELP, PREFIX_HELP, _settings, fail, out
from croupier.cli_common import print_json as _json


def _log_records_or_fail(table: str, settings):  # type: ignore[no-untyped-def]
    """The table's log records; one line and exit 1 if Kafka cannot be reached, exit 2 if the table is unknown."""
    import asyncio

    from croupier.replay import Unreachable, known_tables, read_table, unknown_table_message

    try:
        records = asyncio.run(read_table(settings, table))
        if not records:
            tables = asyncio.run(known_tables(settings))
            raise fail(unknown_table_message(table, tables, settings.topic_prefix))
    except Unreachable as e:
        raise fail(str(e), code=1) from None
    return records


def replay(
    table: Annotated[str, typer.Option("--table", help="The table id.")],
    round_id: Annotated[Optional[str], typer.Option("--round", help="One round's timeline (a round id).")] = None,
    shoe_id: Annotated[Optional[str], typer.Option("--shoe", help="Every round of a shoe, with its load, cut, "
                                                                  "burn and close (a shoe id).")] = None,
    at: Annotated[Optional[str], typer.Option("--at", help="The table's state at this time (ISO 8601; UTC "
                                                           "when it has no offset).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
) -> None:
    """Rebuild a table's story from the event log.

    One round's timeline (--round), a whole shoe (--shoe), the table at a moment (--at), or one line per
    round of the whole table."""
    from croupier.replay import ReplayError, parse_time, render
    from croupier.replay import replay as build_replay

    given = [n for n, v in (("--round", round_id), ("--shoe", shoe_id), ("--at", at)) if v is not None]
    if len(given) > 1:
        raise fail(f"give one of --round, --shoe or --at, not {' and '.join(given)}")
    try:
        when = parse_time(at) if at is not None else None
    except ReplayError as e:
        raise fail(str(e)) from None
    settings = _settings(bootstrap, prefix)
    records = _log_records_or_fail(table, settings)
    try:
        view = build_replay([r.env for r in records], table, round_id=round_id, shoe_id=shoe_id, at=when)
    except ReplayError as e:
        raise fail(str(e)) from None
    if as_json:
        _json(view)
    else:
        render(view, out)


def _export_records(tables: list[str], settings):  # type: ignore[no-untyped-def]
    """The log records of ``tables`` (every table when empty), tables in the order given (sorted when all),
    each table's in per-stream order; exit 2 naming an unknown table or for an empty log, exit 1 if Kafka
    cannot be reached."""
    import asyncio

    from croupier.replay import Unreachable, read_floor

    if len(tables) == 1:
        return _log_records_or_fail(tables[0], settings)
    if tables:
        records = [r for t in dict.fromkeys(tables) for r in _log_records_or_fail(t, settings)]
        rank = {t: i for i, t in enumerate(dict.fromkeys(tables))}
    else:
        try:
            records = asyncio.run(read_floor(settings))
        except Unreachable as e:
            raise fail(str(e), code=1) from None
        if not records:
            where = f" under topic prefix {settings.topic_prefix!r}" if settings.topic_prefix else ""
            raise fail(f"no events{where}: the log holds no table")
        rank = {t: i for i, t in enumerate(sorted({r.env.table_id for r in records}))}
    return sorted(records, key=lambda r: rank[r.env.table_id])


def export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl, parquet (a directory of one typed file per "
                                                      "event type) or parquet-json (the former single file, "
                                                      "payload as JSON text).")],
    table: Annotated[list[str] | None, typer.Option(
        "--table", help="A table id; repeat for several (default: every table of the log).")] = None,
    out_path: Annotated[str | None, typer.Option("--out", help="Output file (jsonl, parquet-json; - for "
                                                                  "stdout) or directory (parquet). Default "
                                                                  "<table>.jsonl, <table>-parquet/, "
                                                                  "<table>.parquet; floor.jsonl, floor-parquet/, "
                                                                  "floor.parquet for several tables.")] = None,
    shoe: Annotated[str | None, typer.Option("--shoe", help="Only the events of this shoe (those naming it "
                                                               "and those of its rounds).")] = None,
    gaming_day: Annotated[str | None, typer.Option("--gaming-day", help="Only the events of this gaming day "
                                                                           "(YYYY-MM-DD; the ledger's: UTC, "
                                                                           "day starting 06:00).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only events with occurred_at at or after "
                                                                 "this time (ISO 8601; UTC without an "
                                                                 "offset). occurred_at: the envelope's time, "
                                                                 "the broker's append time of the causing "
                                                                 "command.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only events with occurred_at before this "
                                                                 "time (ISO 8601; UTC without an offset).")
                     ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="parquet: replace an earlier export's "
                                                                "<EventType>.parquet files in --out.")] = False,
    bootstrap: Annotated[str | None, typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[str | None, typer.Option(help=PREFIX_HELP)] = None,
) -> None:
    """Write tables' events for analytics, as JSON lines or typed Parquet.

    The shoe, dealing, wagering and settlement streams, and the projection's ledger and alerts when present,
    of one table, several (--table repeated) or every table, narrowed by --shoe, --gaming-day and
    --since/--until (all must hold; times are the envelope's occurred_at). JSON lines: the wire envelope plus
    topic, partition, offset and Kafka timestamp. Parquet: a directory with one flat, typed table per event
    type (BetSettled.parquet, ...), envelope and payload fields as columns (croupier/parquet.py)."""
    from collections import Counter
    from pathlib import Path

    from rich.console import Console

    from croupier.export import (
        FORMATS,
        PyarrowMissing,
        default_path,
        write_jsonl,
        write_parquet,
    )
    from croupier.replay import ReplayError, parse_time
    from croupier.selection import Selection, SelectionError, select, shoes_in

    if fmt not in FORMATS:
        raise fail(f"unknown format {fmt!r}: jsonl, parquet or parquet-json")
    if fmt != "jsonl":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise fail(f"--format {fmt} needs pyarrow, which is not installed (pip install 'pyarrow>=14')") from None
    if fmt == "parquet" and out_path == "-":
        raise fail("--format parquet writes a directory (one file per event type): give --out DIR, not -")
    tables = list(table or [])
    try:
        sel = Selection(tables=tuple(tables), shoe_id=shoe, gaming_day=gaming_day,
                        since=parse_time(since) if since is not None else None,
                        until=parse_time(until) if until is not None else None)
    except (ReplayError, SelectionError) as e:
        raise fail(str(e)) from None
    name = tables[0] if len(tables) == 1 else "floor"
    path = out_path or default_path(name, fmt)
    if fmt == "parquet":
        from croupier.parquet import owned_files

        target = Path(path)
        if target.exists() and not target.is_dir():
            raise fail(f"--out {path} is a file: --format parquet writes a directory (one file per event type)")
        earlier = owned_files(target)
        if earlier and not overwrite:
            raise fail(f"{path} already holds an export ({len(earlier)} event-type file(s), e.g. "
                       f"{earlier[0].name}): give --overwrite to replace them, or another --out")
    settings = _settings(bootstrap, prefix)
    records = _export_records(tables, settings)
    if shoe is not None and shoe not in shoes_in(records):
        known = shoes_in(records)
        raise fail(f"unknown shoe {shoe!r} at " + (f"table {tables[0]}" if len(tables) == 1 else "the tables read")
                   + (f": {len(known)} shoe(s): {', '.join(known[:6])}{', ...' if len(known) > 6 else ''}"
                      if known else ": no shoe"))
    records = select(records, sel)
    counts: dict[str, int]
    try:
        if fmt == "parquet":
            from croupier.parquet import ParquetError, owned_files, write_directory

            try:
                for old in owned_files(path):
                    old.unlink()
                counts = write_directory(records, path)
            except ParquetError as e:
                raise fail(str(e), code=1) from None
            n = sum(counts.values())
        else:
            writer = write_jsonl if fmt == "jsonl" else write_parquet
            if path == "-":
                try:
                    n = writer(records, sys.stdout.buffer)
                    sys.stdout.buffer.flush()
                except BrokenPipeError:  # `| head`: the reader has what it wanted
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    raise typer.Exit(0) from None
            else:
                with open(path, "wb") as f:
                    n = writer(records, f)
            counts = dict(Counter(r.env.stream for r in records))
    except PyarrowMissing as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(f"cannot write {path}: {e.strerror or e}") from None
    which = (f"table {tables[0]}" if len(tables) == 1 else
             f"tables {', '.join(dict.fromkeys(tables))}" if tables else
             f"{len({r.env.table_id for r in records})} table(s)")
    scope = f" ({sel.describe()})" if sel.filtered else ""
    summary = (f"exported {n} events of {which}{scope} to {'stdout' if path == '-' else path} ({fmt}): "
               + ", ".join(f"{s} {c}" for s, c in counts.items()))
    Console(stderr=path == "-", highlight=False, soft_wrap=True).print(summary, markup=False)

