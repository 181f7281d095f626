"""``croupier vault-key`` and ``croupier topics``: the keys that seal the shoes, and the housekeeping of a floor's
Kafka topics (list, delete).

Sub-apps added to the app by :mod:`croupier.cli`.
"""

from pathlib import Path
from typing import Annotated, Optional

import typer

from croupier.cli_common import BOOTSTRAP_HELP, _settings, fail
from croupier.cli_common import run_async as _run_async

vault_key = typer.Typer(help="The shoe service's vault keys (AES-256-GCM, contracts/vault.py).",
                        no_args_is_help=True)


@vault_key.command("new")
def vault_key_new(
    file: Annotated[Path, typer.Option("--file", help="The key file (created with mode 600 if missing).")],
    key_id: Annotated[Optional[str], typer.Option("--id", help="The new key's id (default: k<UTC time>).")] = None,
) -> None:
    """Add a new key at the end of a vault key file: the shoe service seals new shoes with it from its next
    start, and still opens every shoe sealed under the older keys in the file. Prints the ids, never a key."""
    from datetime import datetime, timezone

    from contracts.vault import VaultKeyError, add_key

    kid = key_id or f"k{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    try:
        keys = add_key(file, kid)
    except VaultKeyError as e:
        raise fail(str(e)) from None
    typer.echo(f"{file}: keys {', '.join(keys.ids)}; {kid} seals new shoes from the shoe service's next start")


topics_app = typer.Typer(help="Housekeeping of a floor's Kafka topics: list them, delete them to reclaim space.",
                         no_args_is_help=True)

TOPICS_PREFIX_HELP = "The floor's topic prefix (required, never empty: e.g. demo-20261130-110143-72a3.)."


def _topics_settings(prefix: str, bootstrap: str | None):  # type: ignore[no-untyped-def]
    """Settings of ``prefix`` (a trailing dot added, as every command does); exit 2 for an empty one."""
    from croupier.topics import BadPrefix, check_prefix

    try:
        check_prefix(prefix)
    except BadPrefix as e:
        raise fail(str(e)) from None
    return _settings(bootstrap, prefix)


@topics_app.command("list")
def topics_list(
    prefix: Annotated[str, typer.Option(help=TOPICS_PREFIX_HELP)],
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
) -> None:
    """Print the topics under a prefix, one name a line (their count and consumer groups' on stderr)."""
    from croupier.topics import list_groups, list_topics

    settings = _topics_settings(prefix, bootstrap)
    pre = settings.topic_prefix
    names = _run_async(list_topics(settings, pre), settings)
    groups = _run_async(list_groups(settings, pre), settings)
    for name in names:
        typer.echo(name)
    typer.echo(f"{len(names)} topic(s) and {len(groups)} consumer group(s) under prefix {pre!r} at "
               f"{settings.bootstrap_servers}", err=True)


@topics_app.command("delete")
def topics_delete(
    prefix: Annotated[str, typer.Option(help=TOPICS_PREFIX_HELP)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
) -> None:
    """Delete every topic under a prefix and its consumer groups: the floor's whole log, for good. Asks first
    (unless --yes; declining exits 1); refuses while services still run on the prefix (exit 1) and an empty
    prefix (exit 2)."""
    from croupier.topics import delete_prefix, list_topics

    settings = _topics_settings(prefix, bootstrap)
    pre = settings.topic_prefix
    names = _run_async(list_topics(settings, pre), settings)
    if not names:
        typer.echo(f"no topics under prefix {pre!r} at {settings.bootstrap_servers}: nothing to delete", err=True)
        return
    shown = ", ".join(names[:3]) + (f", ... ({len(names) - 3} more)" if len(names) > 3 else "")
    if not yes and not typer.confirm(f"Delete {len(names)} topic(s) under prefix {pre!r} at "
                                     f"{settings.bootstrap_servers} ({shown}) for good?", default=False, err=True):
        typer.echo("nothing deleted", err=True)
        raise typer.Exit(1)
    d = _run_async(delete_prefix(settings, pre), settings)
    typer.echo(f"deleted {len(d.topics)} topic(s) and {len(d.groups)} consumer group(s) under prefix {pre!r}",
               err=True)
    for note in d.notes:
        typer.echo(f"note: {note}", err=True)
