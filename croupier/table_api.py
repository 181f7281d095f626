"""``croupier table round`` (a round as dealt, read through the gateway) and ``croupier table api`` (the command
API served over HTTP or HTTPS); registered on :data:`croupier.table_cli.table_app`."""

from typing import Annotated, Any

import typer

from croupier.https_options import TlsCertOpt, TlsKeyOpt, server_tls_or_fail
from croupier.table_send import (_PREFIX_HINT, BootOpt, LookbackOpt, PrefixOpt, TableOpt, TimeoutOpt, _fail,
                                 _kafka_detail)


def round_view(table: TableOpt, round_id: Annotated[str, typer.Option("--round", help="The round.")],
               wait: Annotated[float, typer.Option(help="Seconds to wait for the round's settlement.")] = 10.0,
               bootstrap: BootOpt = None, prefix: PrefixOpt = None, lookback: LookbackOpt = 600.0) -> None:
    """A round as dealt, as JSON: its status, the cards (with the rule cell behind each), the result, the bet
    book and each bet's settlement (cents), read from --lookback seconds ago; exit 1 if it is not settled
    within --wait."""
    import asyncio

    import msgspec

    from contracts import topics as T
    from croupier.cli_common import _settings
    from croupier.topics import NoSuchPrefix, require_prefix
    from services.command_api.server import open_gateway

    if wait < 0 or lookback < 0:
        raise _fail("--wait and --lookback must be 0 or more seconds")
    settings = _settings(bootstrap, prefix)

    async def go() -> Any:
        await require_prefix(settings, hint=_PREFIX_HINT)
        # read as the principal the environment names (pit, surveillance, console ...): the round's streams
        async with open_gateway(settings, {}, tables=[table], lookback_s=lookback,
                                streams=(T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)) as gw:
            return await gw.round_view(table, round_id, wait_s=wait)

    try:
        view = asyncio.run(go())
    except NoSuchPrefix as e:
        raise _fail(str(e)) from None
    except Exception as e:  # a broker that cannot be reached: one line, no traceback
        raise _fail(f"cannot reach Kafka at {settings.bootstrap_servers}: {_kafka_detail(settings, e)}", code=1) from None
    typer.echo(msgspec.json.format(msgspec.json.encode(view), indent=2).decode())
    if view["status"] != "settled":
        raise _fail(f"round {round_id} at {table} is {view['status']} (not settled within {wait:g} s)", code=1)


def api(port: Annotated[int, typer.Option(help="Port of the command API.")] = 8081,
        host: Annotated[str, typer.Option(help="Address it listens on (0.0.0.0: every interface).")] = "127.0.0.1",
        bootstrap: BootOpt = None, prefix: PrefixOpt = None,
        timeout: TimeoutOpt = 10.0, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None) -> None:
    """Serve the command API over HTTP, or HTTPS with --tls-cert/--tls-key (OpenAPI and its docs UI at /docs). Tokens per role from
    CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE, and each betting terminal's bettor credential,
    bound to its players, from that file (bettor:<player_id>=<token> lines); none configured is an error."""
    import asyncio

    from croupier.cli_common import _check_port, _settings
    from croupier.serve import PortTaken, check_port
    from croupier.topics import NoSuchPrefix, require_prefix
    from services.command_api.gateway import MissingWriterCredential, writer_settings
    from services.command_api.server import serve_command_api
    from services.runtime.credentials import BadCredentials, NoCredentials, load_credentials

    _check_port(port)
    tls = server_tls_or_fail(tls_cert, tls_key)
    try:
        tokens = load_credentials(what="the command API")
    except (NoCredentials, BadCredentials) as e:
        raise _fail(str(e)) from None
    from services.command_api.actions import BETTOR_ACTIONS, ROLE_ACTIONS, writer_of

    if "bettor" in tokens.roles:
        typer.echo("note: the shared bettor token (CROUPIER_API_TOKEN_BETTOR or bettor=) acts for no player in the "
                   "command API: give each betting terminal a bettor:<player_id>=<token> line in "
                   "CROUPIER_API_TOKENS_FILE", err=True)
    settings = _settings(bootstrap, prefix)
    sends = {a for role in tokens.roles for a in ROLE_ACTIONS.get(role, ()) if role != "bettor"}
    sends |= BETTOR_ACTIONS if tokens.bettors else set()
    kinds = sorted({writer_of(a) for a in sends}, key=("console", "bettor").index)
    try:
        writers = writer_settings(settings, kinds=kinds)
        check_port(host, port)
    except MissingWriterCredential as e:
        raise _fail(str(e)) from None
    except PortTaken as e:
        raise _fail(str(e), code=1) from None
    async def go() -> None:
        await require_prefix(settings, hint=_PREFIX_HINT)
        await serve_command_api(settings, host, port, tokens, writers, timeout_s=timeout, tls=tls)

    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        return
    except NoSuchPrefix as e:
        raise _fail(str(e)) from None
    except Exception as e:
        raise _fail(f"cannot run against Kafka at {settings.bootstrap_servers}: {_kafka_detail(settings, e)}",
                    code=1) from None
