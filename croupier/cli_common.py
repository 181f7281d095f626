"""What every ``croupier`` command module shares: the one ``error:`` line and its exit status, the Kafka settings
of a command's ``--bootstrap`` and ``--prefix``, a port's check, and the cause of a failure against the broker.

:mod:`croupier.cli` (the app and most commands), :mod:`croupier.table_cli` (``croupier table``) and
:mod:`croupier.https_options` import these from here, so none of them imports another in a circle.
"""

from __future__ import annotations

import typer
from rich.console import Console


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``error: message`` on stderr and return the Exit to raise (status 2: bad input)."""
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"error: {message}", markup=False)
    return typer.Exit(code)


def _settings(bootstrap: str | None, prefix: str | None):  # type: ignore[no-untyped-def]
    """The environment's Kafka settings (:meth:`services.runtime.settings.Settings.from_env`) with a command's
    ``--bootstrap`` and ``--prefix`` (a prefix typed without its final dot gets one)."""
    import dataclasses

    from services.runtime.settings import Settings

    settings = Settings.from_env()
    if bootstrap:
        settings = dataclasses.replace(settings, bootstrap_servers=bootstrap)
    if prefix is not None:
        # topic prefixes end with a dot (demo-20261130-110143-72a3.): accept one typed without it
        settings = dataclasses.replace(settings, topic_prefix=prefix if not prefix or prefix.endswith(".")
                                       else prefix + ".")
    return settings


def _check_port(port: int | None) -> None:
    """Raise the usage error (exit 2) of a port outside 1..65535 (None: no port asked for)."""
    if port is not None and not 1 <= port <= 65535:
        raise fail(f"port must be 1..65535, got {port}")


def kafka_detail(settings, e: BaseException) -> str:  # type: ignore[no-untyped-def]
    """``Type: message`` of a failure against ``settings``' broker, led by the TLS cause when a handshake explains
    it (another CA, an expired certificate or another host name, a listener that does not speak TLS, or one that
    does to a plain-text client: :meth:`services.runtime.settings.Settings.connection_problem`, at most ~3 s)."""
    import asyncio

    from services.runtime.tls import BrokerTlsError

    if isinstance(e, BrokerTlsError):  # diagnosed already (a service's start)
        return str(e)
    detail = str(e) if str(e).startswith(type(e).__name__) else f"{type(e).__name__}: {e}"
    try:
        problem = asyncio.run(settings.connection_problem(timeout_s=3.0))
    except Exception:  # noqa: BLE001 - the diagnosis must not hide the failure it explains
        problem = None
    return f"{problem} ({detail})" if problem else detail
