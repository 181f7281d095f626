"""``croupier serve``, ``croupier api`` and ``croupier pit``: the commands that run services and serve HTTP, with the
query API's tokens (never on the command line) checked before anything starts.

Registered on the app by :mod:`croupier.cli`.
"""

from pathlib import Path
from typing import Annotated, Optional

import typer

from croupier.cli_common import (
    BOOTSTRAP_HELP,
    DEFAULT_API_HOST,
    DEFAULT_API_PORT,
    HOST_HELP,
    PREFIX_HELP,
    TOKEN_HELP,
    _check_port,
    _settings,
    fail,
)
from croupier.cli_common import (
    run_async as _run_async,
)
from croupier.https_options import TlsCertOpt, TlsKeyOpt, server_tls_or_fail


def _api_tokens(token: Optional[str]) -> dict[str, str]:
    """The query API's per-role tokens from the environment or the tokens file (never the command line);
    a clear error for ``--token``, when none is configured, or for a bad pit setting
    (``CROUPIER_SURVEILLANCE_RAISE_CENTS``, ``CROUPIER_SHIFT_STARTS``)."""
    from services.projection.auth import ENV_FILE, ENV_PREFIX, BadCredentials, NoCredentials, load_tokens

    if token is not None:
        raise fail(f"--token is no longer accepted (a token on the command line shows in the process list); "
                   f"set {ENV_PREFIX}<ROLE> (e.g. {ENV_PREFIX}CAGE) or {ENV_FILE}=<file of role=token lines, mode 600>")
    from services.projection.pit_views import PitSettings

    try:
        PitSettings.from_env()  # the pit endpoints' settings: a bad one is an error before anything starts
    except ValueError as e:
        raise fail(str(e)) from None
    try:
        return load_tokens()
    except (NoCredentials, BadCredentials) as e:
        raise fail(str(e)) from None


def serve(
    services_: Annotated[str, typer.Option("--services", help="Comma-separated: shoe,dealing,wagering,"
                                                              "settlement,projection,cage.")
                         ] = "shoe,dealing,wagering,settlement,projection,cage",
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    api_port: Annotated[Optional[int], typer.Option(help="Serve the query API beside the projection.")] = None,
    api_host: Annotated[str, typer.Option(help=HOST_HELP)] = DEFAULT_API_HOST,
    ready_file: Annotated[Path | None, typer.Option(
        help="A file that exists exactly while every service here is ready (a container's health check: "
             "test -f FILE).")] = None,
    metrics_port: Annotated[int | None, typer.Option(
        envvar="CROUPIER_METRICS_PORT",
        help="Serve /metrics (Prometheus), /health/live and /health/ready on this port.")] = None,
    metrics_host: Annotated[str, typer.Option(
        envvar="CROUPIER_METRICS_HOST", help="Address the metrics port listens on.")] = "127.0.0.1",
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    dev_vault_key: Annotated[bool, typer.Option(
        "--dev-vault-key", help="Without a configured vault key, make (or reuse) a development key file "
        "var/vault/<prefix>.keys (mode 600) for the shoe service. Not for a real floor.")] = False,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """Run several services together in one process until Ctrl-C (each can also run alone with
    ``faststream run services.<name>.app:app``). The shoe service needs its vault key
    (``CROUPIER_VAULT_KEY_FILE`` or ``CROUPIER_VAULT_KEYS``) and refuses to start without one."""
    import services as svc_pkg
    from croupier.devkey import VaultKeyError, configured, with_dev_key
    from croupier.serve import serve as run_serve

    names = [n.strip() for n in services_.split(",") if n.strip()]
    unknown = [n for n in names if n not in svc_pkg.NAMES]
    if unknown or not names:
        raise fail(f"unknown service(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(svc_pkg.NAMES)}")
    if api_port is not None and "projection" not in names:
        raise fail("--api-port needs the projection service (add it to --services, or use `croupier api`)")
    _check_port(api_port)
    _check_port(metrics_port)
    if metrics_port is not None and metrics_port == api_port:
        raise fail(f"--metrics-port {metrics_port} is also the --api-port: give each its own port")
    tokens = _api_tokens(token) if api_port is not None or token is not None else None
    tls = server_tls_or_fail(tls_cert, tls_key)
    if tls is not None and api_port is None:
        raise fail("--tls-cert/--tls-key serve the query API over HTTPS: they need --api-port")
    settings = _settings(bootstrap, prefix)
    from services.runtime.logging import bind_process

    # every line of this process names its instance, the first ones too; a client's line logged outside any
    # service (at start, at exit) names `serve`
    bind_process(instance=settings.instance, service="serve")
    if "shoe" in names:
        try:
            if dev_vault_key:
                settings, path, created = with_dev_key(settings)
                if path is not None:  # a JSON line like every other line `serve` writes
                    from services.runtime.logging import get_logger

                    get_logger("serve").warning(
                        "dev_vault_key", path=str(path), created=created,
                        detail="no vault key configured: the shoe service uses this development key file "
                               "(mode 600); not for a real floor")
            elif not configured(settings):
                raise VaultKeyError("the shoe service needs a vault key: set CROUPIER_VAULT_KEY_FILE (a file of "
                                    "KEY_ID:BASE64 lines, mode 600; `croupier vault-key new --file PATH` makes "
                                    "one) or CROUPIER_VAULT_KEYS, or pass --dev-vault-key for a development key")
        except VaultKeyError as e:
            raise fail(str(e)) from None
    _run_async(run_serve(names, settings, api_port=api_port, api_host=api_host, tokens=tokens,
                         metrics_port=metrics_port, metrics_host=metrics_host, ready_file=ready_file, tls=tls),
               settings)


def api(
    port: Annotated[int, typer.Option(help="Port of the query API.")] = DEFAULT_API_PORT,
    host: Annotated[str, typer.Option(help=HOST_HELP)] = DEFAULT_API_HOST,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """The projection's query API alone: a read-only replica folds the streams and answers queries
    (OpenAPI at /docs; /metrics, /health/live and /health/ready for operations)."""
    from croupier.serve import api_alone

    tokens = _api_tokens(token)
    _check_port(port)
    tls = server_tls_or_fail(tls_cert, tls_key)
    settings = _settings(bootstrap, prefix)
    from services.runtime.logging import bind_process

    bind_process(instance=settings.instance, service="api")
    _run_async(api_alone(settings, port, host=host, tokens=tokens, tls=tls), settings)


def pit(
    port: Annotated[int, typer.Option(help="Port of the pit web app.")] = DEFAULT_API_PORT,
    host: Annotated[str, typer.Option(help="Address it listens on (0.0.0.0: every interface).")] = DEFAULT_API_HOST,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    timeout: Annotated[float, typer.Option(help="Seconds a console action waits for its answer.")] = 10.0,
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """The pit in a browser, one web app on one origin: the pages (floor, table console, surveillance, cage;
    log in at /login with a role's token), the query API and the command API (under /command), over a
    read-only projection replica and the command gateway. Tokens per role as for the APIs; a betting
    terminal logs in with its bettor credential (bettor:<player_id>=<token> lines of CROUPIER_API_TOKENS_FILE)
    and bets for its own players only. With --tls-cert/--tls-key over HTTPS, the session cookie Secure."""
    from croupier.pit import pit_alone
    from services.command_api.actions import BETTOR_ACTIONS, ROLE_ACTIONS, writer_of
    from services.command_api.gateway import MissingWriterCredential, writer_settings

    _check_port(port)
    if timeout <= 0:
        raise fail(f"--timeout must be more than 0 seconds, got {timeout:g}")
    _api_tokens(token)  # the same checks as the APIs' (no --token, the pit settings, role tokens)
    tls = server_tls_or_fail(tls_cert, tls_key)
    from services.runtime.credentials import BadCredentials, NoCredentials, load_credentials

    try:
        creds = load_credentials(what="croupier pit")  # the roles', and the betting terminals' bettor credentials
    except (NoCredentials, BadCredentials) as e:
        raise fail(str(e)) from None
    settings = _settings(bootstrap, prefix)
    sends = {a for role in creds.roles for a in ROLE_ACTIONS.get(role, ()) if role != "bettor"}
    sends |= BETTOR_ACTIONS if creds.bettors else set()
    kinds = sorted({writer_of(a) for a in sends}, key=("console", "bettor").index)
    try:
        writers = writer_settings(settings, kinds=kinds)
    except MissingWriterCredential as e:
        raise fail(str(e)) from None
    from services.runtime.logging import bind_process

    bind_process(instance=settings.instance, service="pit")
    _run_async(pit_alone(settings, port, host=host, tokens=creds, writers=writers, timeout_s=timeout, tls=tls),
               settings)
