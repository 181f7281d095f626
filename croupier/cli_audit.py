"""``croupier audit``: re-derive every round and settlement of the log with the rules core
(:mod:`croupier.audit`) and list every discrepancy.

Registered on the app by :mod:`croupier.cli`.
"""

from pathlib import Path
from typing import Annotated, Optional

import typer

from croupier.cli_common import BOOTSTRAP_HELP, PREFIX_HELP, _settings, fail, kafka_detail
from croupier.cli_common import print_json as _json


def audit(
    table: Annotated[Optional[str], typer.Option("--table", help="Audit one table (default: every table).")] = None,
    shoe: Annotated[Optional[str], typer.Option("--shoe", help="Audit the rounds of one shoe (a shoe id).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    vault_key_file: Annotated[Optional[Path], typer.Option(
        "--vault-key-file", help="The shoe service's vault key file (KEY_ID:BASE64 lines, mode 600): open each "
        "sealed shoe order on shoe.vault and check it against the reveal. Reading the vault needs a principal "
        "allowed to (the shoe one, on a secured broker).")] = None,
) -> None:
    """Audit the event log: re-deal every round from the cards drawn, re-settle every bet with the rules core,
    check each shoe's reveal against its commitment and every stream's gapless seq, every event's principal,
    and each event a command caused against that command's record (its topic's writer, its actor, the
    broker's append time; needs a principal that may read the command topics: surveillance); with
    ``--vault-key-file``, check that every sealed order on ``shoe.vault`` opens to the order revealed at close.
    List every discrepancy. Exit 0 when clean, 1 when a discrepancy is found."""
    import asyncio
    import gc
    import logging

    from aiokafka.errors import KafkaError

    from contracts.vault import VaultKeyError, VaultKeys
    from croupier.audit import audit as run_audit
    from croupier.log import CommandsUnreadable, VaultUnreadable, read_commands, read_for_audit, read_vault

    settings = _settings(bootstrap, prefix)
    keys = None
    if vault_key_file is not None:
        try:
            keys = VaultKeys.from_file(vault_key_file)
        except VaultKeyError as e:
            raise fail(str(e)) from None
    # aiokafka and asyncio log connection failures on their own: the one line below says it
    quiet = {name: logging.getLogger(name).level for name in ("aiokafka", "asyncio")}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    try:
        envs, undecodable, unknown = asyncio.run(read_for_audit(settings, table))
        vault, vault_reason = None, "no --vault-key-file given: the sealed shoe orders were not opened"
        if keys is not None:
            try:
                vault, bad_vault = asyncio.run(read_vault(settings, table))
                undecodable += bad_vault
            except (VaultUnreadable, KafkaError) as e:
                vault_reason = f"cannot read shoe.vault: {type(e).__name__}: {e}"
        commands, commands_reason = None, ""
        try:
            commands = asyncio.run(read_commands(settings, table))
        except (CommandsUnreadable, KafkaError) as e:
            commands_reason = f"cannot read the command topics: {type(e).__name__}: {e}"
    except Exception as e:  # a broker that cannot be reached, and the like: one line
        raise fail(f"cannot reach Kafka at {settings.bootstrap_servers}: {kafka_detail(settings, e)}",
                   code=1) from None
    finally:
        gc.collect()  # an unclosed client's complaint is made now, while the loggers are quiet
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
    where = f" under topic prefix {settings.topic_prefix!r}" if settings.topic_prefix else ""
    if table is not None and not envs:
        raise fail(f"no events for table {table!r} in the log at {settings.bootstrap_servers}{where}")
    if not envs and not undecodable:
        raise fail(f"no events in the log at {settings.bootstrap_servers}{where}")
    if shoe is not None and not any(e.shoe_id == shoe or getattr(e.payload, "shoe_id", None) == shoe for e in envs):
        raise fail(f"no events for shoe {shoe!r}" + (f" at table {table!r}" if table else ""))
    report = run_audit(envs, table_id=table, shoe_id=shoe, undecodable=undecodable, unknown=unknown,
                       vault=vault, vault_keys=keys, vault_reason=vault_reason, commands=commands,
                       commands_reason=commands_reason)
    if as_json:
        _json({"table": table, "shoe": shoe, **report.to_dict()})
    else:
        scope = (f"table {table}" if table else f"{report.tables} table(s)") + (f", shoe {shoe}" if shoe else "")
        typer.echo(f"audited {report.events} events of {scope}: {report.shoes_verified} shoe(s) verified, "
                   f"{report.rounds_checked} round(s) and {report.bets_checked} bet(s) checked, "
                   f"{report.rounds_pending} round(s) in play")
        skipped = sum(report.unknown_types.values())
        typer.echo(f"undecodable records: {report.undecodable_records}; events of unknown types skipped: {skipped}"
                   + (f" ({', '.join(f'{k} {v}' for k, v in sorted(report.unknown_types.items()))})"
                      if skipped else ""))
        if report.refused:
            typer.echo("commands refused with a reason (a person's command the log shows could not be done: the "
                       "floor worked, not discrepancies): "
                       + ", ".join(f"{k} {v}" for k, v in sorted(report.refused.items())))
        if report.broken_rejections:
            typer.echo("the floor is broken: commands rejected "
                       + ", ".join(f"{k} {v}" for k, v in sorted(report.broken_rejections.items())))
        found = report.discrepancies or []
        typer.echo(f"{len(found)} discrepanc{'y' if len(found) == 1 else 'ies'}" + (":" if found else ": clean"))
        for d in found:
            typer.echo(f"{d.table_id} {d.kind} {d.where}: {d.detail}")
        if report.notices:
            typer.echo(f"{len(report.notices)} notice(s), in flight at the end of the log (not discrepancies):")
            for d in report.notices:
                typer.echo(f"{d.table_id} {d.kind} {d.where}: {d.detail}")
        v = report.vault
        if v.status == "checked":
            typer.echo(f"vault: {v.opened} of {v.records} sealed order(s) opened and matched their reveal or "
                       f"commitment (keys {', '.join(f'{k} {n}' for k, n in sorted(v.key_ids.items())) or 'none'})")
        else:
            typer.echo(f"vault: not checked, the sealed shoe orders could not be opened ({v.reason})")
        pv = report.provenance
        if pv.status == "checked":
            typer.echo(f"provenance: {pv.events_checked} event(s) matched to their command among {pv.commands} "
                       "command record(s) (principal, actor, the log's time)")
        else:
            typer.echo(f"provenance: attribution only, events not matched to commands ({pv.reason})")
    if not report.clean:
        raise typer.Exit(1)
