"""What every ``croupier`` command module shares: the one ``error:`` line and its exit status, the Kafka settings
of a command's ``--bootstrap`` and ``--prefix``, a port's check, the cause of a failure against the broker, the
console and JSON output, and the help texts of the common options.

:mod:`croupier.cli` (the app, assembled from the command modules ``croupier.cli_*``), :mod:`croupier.table_cli`
(``croupier table``) and :mod:`croupier.https_options` import these from here, so none of them imports another in
a circle. Nothing here loads the rules core, the contracts or Kafka at import: ``croupier --help`` needs none.
"""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

import typer
from rich.console import Console

BOOTSTRAP_HELP = "Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS or 127.0.0.1:19092)."
PREFIX_HELP = "Topic prefix (default: $CROUPIER_TOPIC_PREFIX or none)."
TOKEN_HELP = "Removed: API tokens are read from CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE."
#: where the query API listens unless told otherwise (loopback: a container passes --host 0.0.0.0)
DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8080
HOST_HELP = "Address the query API listens on (0.0.0.0: every interface, e.g. in a container)."


def _console() -> Console:
    """stdout; when it is not a terminal (a file, a pipe) wide enough that nothing an investigator needs is cut."""
    c = Console(highlight=False, soft_wrap=True)
    if not c.is_terminal:
        c = Console(highlight=False, soft_wrap=True, width=max(200, c.width))
    return c


#: the commands' stdout console
out = _console()

F = TypeVar("F", bound=Callable[..., None])


def clean_errors(fn: F) -> F:
    """Turn rules-core errors (:class:`baccarat.errors.BaccaratError`) into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> None:
        from baccarat.errors import BaccaratError

        try:
            fn(*args, **kwargs)
        except BaccaratError as e:
            raise fail(str(e)) from None

    return wrapper  # type: ignore[return-value]


def print_json(obj: object) -> None:
    """Write ``obj`` (anything msgspec encodes) to stdout as indented JSON and a newline."""
    import msgspec

    sys.stdout.write(msgspec.json.format(msgspec.json.encode(obj), indent=2).decode() + "\n")


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


def run_async(coro, settings):  # type: ignore[no-untyped-def]
    """``asyncio.run(coro)``'s result; each failure one ``error:`` line: exit 2 for a prefix that is empty or
    has no topics, 1 for the broker (unreachable, refusing) or a prefix still in use; Ctrl-C returns None."""
    import asyncio

    from croupier.group import is_closed_pipe
    from croupier.replay import Unreachable
    from croupier.serve import PortTaken
    from croupier.topics import BadPrefix, NoSuchPrefix, PrefixInUse

    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        return None
    except (PortTaken, Unreachable, PrefixInUse) as e:
        raise fail(str(e), code=1) from None
    except (NoSuchPrefix, BadPrefix) as e:
        raise fail(str(e)) from None
    except Exception as e:  # a broker that cannot be reached: one line, no traceback
        if is_closed_pipe(e):
            raise
        raise fail(f"cannot run against Kafka at {settings.bootstrap_servers}: {kafka_detail(settings, e)}",
                   code=1) from None
