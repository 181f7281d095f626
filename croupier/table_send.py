"""What every ``croupier table`` action shares: its options (``--table``, ``--actor``, ``--request-id``, the
broker, ``--timeout``, ``--lookback``, ``--json``), building the action (exit 2 naming each field refused) and
sending it through a Kafka gateway, printing its answer (:func:`_run`; the exit statuses of
:mod:`croupier.table_cli`).
"""

import uuid
from typing import Annotated, Any, Optional

import typer

TableOpt = Annotated[str, typer.Option("--table", help="The table id.")]
ActorOpt = Annotated[str, typer.Option("--actor", help="Who acts: the dealer's or pit boss's id.")]
RequestOpt = Annotated[Optional[str], typer.Option("--request-id", help="The request id (1-64 of letters, digits, "
                                                   ". _ : -): a retry repeats it. Default: a new one.")]
BootOpt = Annotated[Optional[str], typer.Option("--bootstrap", help="Kafka bootstrap servers (default: "
                                                "$KAFKA_BOOTSTRAP_SERVERS or 127.0.0.1:19092).")]
PrefixOpt = Annotated[Optional[str], typer.Option("--prefix", help="Topic prefix (default: $CROUPIER_TOPIC_PREFIX "
                                                  "or none).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds to wait for the answer.")]
LookbackOpt = Annotated[float, typer.Option("--lookback", help="Read the table's events from this many seconds "
                                            "ago, so that a retry finds its first attempt's answer.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")]


_PREFIX_HINT = ("; start the services on it first (croupier serve --prefix ...), or give the --prefix they use")


class _Common:
    def __init__(self, table: str, request_id: str | None, bootstrap: str | None, prefix: str | None,
                 timeout: float, lookback: float, as_json: bool):
        self.table, self.request_id, self.bootstrap, self.prefix = table, request_id, bootstrap, prefix
        self.timeout, self.lookback, self.as_json = timeout, lookback, as_json


def _fail(message: str, code: int = 2) -> typer.Exit:
    from croupier.cli_common import fail

    return fail(message, code)


def _kafka_detail(settings, e: BaseException) -> str:  # type: ignore[no-untyped-def]
    from croupier.cli_common import kafka_detail

    return kafka_detail(settings, e)


def _action(kind: type, **fields: Any) -> Any:
    """The action, or exit 2 naming each field pydantic refused."""
    from pydantic import ValidationError

    try:
        return kind(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as e:
        raise _fail("; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors())) \
            from None


def _run(c: _Common, action: Any) -> None:
    """Send ``action`` through a Kafka gateway and print its answer (exit statuses: the module's)."""
    import asyncio

    import msgspec

    from croupier.cli_common import _settings
    from croupier.group import is_closed_pipe
    from services.command_api.gateway import (
        AnswerTimeout,
        CommandApiError,
        MissingWriterCredential,
        writer_settings,
    )
    from croupier.topics import NoSuchPrefix, require_prefix
    from services.command_api.server import open_gateway

    if c.timeout <= 0:
        raise _fail(f"--timeout must be more than 0 seconds, got {c.timeout:g}")
    if c.lookback < 0:
        raise _fail(f"--lookback must be 0 or more seconds, got {c.lookback:g}")
    from contracts import topics as T
    from services.command_api.actions import InvalidAction, to_command

    try:  # what it becomes decides who writes it and where its answer comes (the gateway checks it again)
        planned = to_command(action, "0")
    except InvalidAction as e:
        raise _fail(f"{e.reason}: {e.detail}") from None
    streams = (planned.answer_stream,) + ((T.WAGERING_EVENTS,) if planned.then_betting_opened else ())
    settings = _settings(c.bootstrap, c.prefix)
    try:
        writers = writer_settings(settings, kinds=(planned.writer,))
    except MissingWriterCredential as e:
        raise _fail(str(e)) from None
    rid = c.request_id or uuid.uuid4().hex
    if not c.request_id:
        typer.echo(f"request id: {rid}", err=True)

    async def go() -> Any:
        await require_prefix(settings, hint=_PREFIX_HINT)  # never create topics under a mistyped prefix
        async with open_gateway(settings, writers, tables=[c.table], lookback_s=c.lookback,
                                timeout_s=c.timeout, streams=tuple(dict.fromkeys(streams))) as gw:
            return await gw.submit(action, c.table, rid)

    try:
        answer = asyncio.run(go())
    except NoSuchPrefix as e:
        raise _fail(str(e)) from None
    except AnswerTimeout as e:
        raise _fail(e.detail, code=1) from None
    except CommandApiError as e:
        raise _fail(f"{e.reason}: {e.detail}") from None
    except KeyboardInterrupt:
        raise _fail("interrupted", code=130) from None
    except Exception as e:  # a broker that cannot be reached: one line, no traceback
        if is_closed_pipe(e):
            raise
        raise _fail(f"cannot reach Kafka at {settings.bootstrap_servers}: {_kafka_detail(settings, e)}", code=1) from None
    if c.as_json:
        typer.echo(msgspec.json.format(msgspec.json.encode(answer), indent=2).decode())
    else:
        kinds = ", ".join(e["payload"]["type"] for e in answer.events)
        ids = " ".join(f"{k}={v}" for k, v in (("shoe", answer.shoe_id), ("round", answer.round_id),
                                                ("bet", answer.bet_id)) if v)
        typer.echo(f"{answer.status} {answer.action} at {answer.table_id}: {kinds}" + (f" ({ids})" if ids else ""))
    if not answer.accepted:
        raise _fail(f"rejected {answer.reason}: {answer.detail}")


def _common(table: str, request_id: str | None, bootstrap: str | None, prefix: str | None, timeout: float,
            lookback: float, as_json: bool) -> _Common:
    return _Common(table, request_id, bootstrap, prefix, timeout, lookback, as_json)


def _limits(items: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for item in items:
        wager, sep, rng = item.partition("=")
        lo, sep2, hi = rng.partition(":")
        try:
            if not sep or not sep2:
                raise ValueError
            out[wager.strip()] = {"min_cents": int(lo), "max_cents": int(hi)}
        except ValueError:
            raise _fail(f"--limit takes WAGER=MIN_CENTS:MAX_CENTS, got {item!r}") from None
    return out
