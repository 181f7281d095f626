"""The command API over HTTP (FastAPI): each route one action of :mod:`services.command_api.actions`, answered
by :class:`~services.command_api.gateway.CommandGateway`.

Every command route is ``POST /tables/{table_id}/...`` with a JSON body (the action) and an
``Idempotency-Key`` header (the request id, 1-64 characters of letters, digits and ``. _ : -``; without one
the API makes a fresh one, so the request cannot be retried safely). Answers:

* **200** ``status: accepted``: the events the command caused (``events``), and the ids it carries
  (``shoe_id``, ``round_id``, ``bet_id``);
* **409** ``status: rejected``: the service refused it; ``reason`` is the stable code (``betting_closed``,
  ``round_in_progress``, ``unknown_player`` ...), ``detail`` the words, ``events`` the refusal itself;
* **409** ``request_id_reused``: the request id was used for another request (nothing sent);
* **422**: input that cannot become a command (a field, an unknown profile, a refused configuration;
  ``reason`` and ``field`` say which); nothing sent;
* **401** no or an unknown bearer token; **403** a role that may not send the action (``role_not_allowed``),
  or a betting terminal's action for a player its credential is not bound to (``not_your_player``); nothing
  sent;
* **404** ``unknown_table``: no ``TableOpened`` was read for the table (any action but ``open_table``);
  nothing sent;
* **503** ``broker_unavailable``: the broker did not take the command within the request's wait (the broker
  is down or unreachable): the command is dropped, never delivered later; retry with the same request id;
  ``reader_failed``: the API's reader of the events is failing (its answers cannot be read);
* **500** ``internal_error``: an unexpected failure of the API itself (logged, ``command_api_internal_error``,
  with its traceback); the command may or may not have been sent: retry with the same request id;
* **504** ``timeout``: no answer in time; the command may still be decided: retry with the same request id.

Every request is answered within its wait (``wait_ms``, default the gateway's 10 s) plus
:data:`ANSWER_GRACE_S`, the broker up or down.

A retried request (same request id, same body) is answered with the same status and body, and sends no
second command. Error bodies are ``{"detail": {"reason", "detail", "field"}}``.

``GET /tables/{table_id}/rounds/{round_id}`` is the round as dealt (cards, result, each bet's settlement),
waiting up to ``wait_ms`` for its settlement: on a shuffled shoe the dealing service deals by itself once "No
more bets" is called. Roles and credentials: :mod:`services.runtime.credentials` (one bearer token per role,
``CROUPIER_API_TOKEN_<ROLE>`` or ``CROUPIER_API_TOKENS_FILE``; no default). A betting terminal's token is a
bettor credential bound to its player(s) (``bettor:<player_id>=<token>`` lines of the tokens file): its
``place_bet``, ``withdraw_bet`` and ``decide_option`` act as the player the body names, which must be one of
them (403 ``not_your_player`` otherwise). The plain ``bettor`` role token is bound to no player here.

``/docs`` is Swagger UI served from the package (no CDN: :mod:`services.runtime.docs_ui`); ReDoc is off.
"""

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Annotated, Any

import msgspec
from fastapi import Depends, FastAPI, Header, HTTPException, Query
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from services.command_api import actions as A
from services.command_api.gateway import Answer, CommandApiError, CommandGateway, bets_of
from services.runtime.credentials import ROLES, Caller, Credentials, check_roles
from services.runtime.docs_ui import mount_docs
from services.runtime.logging import get_logger

log = get_logger("command_api")

MAX_WAIT_MS = 60_000
#: how long past its wait a request may take before it is answered 504 whatever the gateway is doing (seconds)
ANSWER_GRACE_S = 2.0


def _error(status: int, reason: str, detail: str, field: str = "", headers: dict[str, str] | None = None
           ) -> HTTPException:
    return HTTPException(status, {"reason": reason, "detail": detail, "field": field}, headers=headers)


def create_command_api(gateway: CommandGateway, tokens: Mapping[str, str] | Credentials,
                       new_request_id: Callable[[], str] = lambda: uuid.uuid4().hex,
                       bettors: Mapping[str, Iterable[str]] | None = None) -> FastAPI:
    """The command API app over ``gateway``. ``tokens``: ``{role: bearer token}``, or every credential
    (:func:`services.runtime.credentials.load_credentials`); ``bettors``: ``{token: players}``, the bettor
    credentials (besides those of ``tokens``); ``new_request_id``: the request id of a request that brings
    none (the edge's entropy). Raises :class:`~services.runtime.credentials.NoCredentials` for no credential
    at all, ``ValueError`` for an unknown role and :class:`~services.runtime.credentials.BadCredentials`
    for a token two callers share or a short bettor token: there is no default credential."""
    creds = tokens if isinstance(tokens, Credentials) else Credentials(tokens)
    bound = {**creds.bettors, **{t: frozenset(p) for t, p in (bettors or {}).items()}}
    check_roles(creds.roles, ROLES, bound)
    creds = Credentials(creds.roles, bound)
    api = FastAPI(
        title="Croupier command API",
        version="1",
        docs_url=None,
        redoc_url=None,
        description="A person's action at a table (dealer console, pit, betting terminal) as a command on "
                    "Kafka, answered with the events it caused or its rejection and reason code. Send an "
                    "`Idempotency-Key` with each request: a retry with the same key gets the same answer and "
                    "sends no second command.",
    )
    bearer = HTTPBearer(auto_error=False, scheme_name="bearer",
                        description="A role's API token (CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE), "
                                    "or a betting terminal's bettor credential (bettor:<player_id>=<token>)")

    async def identify(given: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Caller:
        who = creds.identify(given.credentials) if given is not None else None
        if who is None:
            raise _error(401, "unauthenticated", "this route needs a valid bearer token",
                         headers={"WWW-Authenticate": "Bearer"})
        return who

    async def caller(who: Annotated[Caller, Depends(identify)]) -> str:
        return who.role

    async def run(who: Caller, action: Any, table_id: str, request_id: str | None, wait_ms: int | None) -> Any:
        rid = request_id or new_request_id()
        wait = gateway.timeout_s if wait_ms is None else wait_ms / 1000
        try:
            # a bettor credential acts only for its own players: the gateway refuses any other (not_your_player);
            # whatever happens below, the request is answered within its wait (and ANSWER_GRACE_S)
            async with asyncio.timeout(wait + ANSWER_GRACE_S):
                answer = await gateway.submit(action, table_id, rid, role=who.role, players=who.players,
                                              timeout_s=wait)
        except TimeoutError:
            raise _error(504, "timeout", f"no answer within {wait:g} s: the command may still be decided; retry "
                                         "with the same Idempotency-Key to get its answer") from None
        except CommandApiError as e:
            raise _error(e.status, e.reason, e.detail, e.field) from None
        except Exception as e:  # a bug or a failure below the gateway: a JSON 500 with a code, never a bare one
            log.exception("command_api_internal_error", action=A.NAME_OF.get(type(action), "?"),
                          table_id=table_id, request_id=rid, error=f"{type(e).__name__}: {e}")
            return JSONResponse({"detail": {"reason": "internal_error",
                                            "detail": f"the command API failed ({type(e).__name__}); the command "
                                                      "may or may not have been sent: retry with the same "
                                                      "Idempotency-Key", "field": ""}}, status_code=500)
        return JSONResponse(msgspec.to_builtins(answer), status_code=200 if answer.accepted else 409)

    answer_schema = msgspec.json.schema(Answer)["$defs"]["Answer"]
    answer_content = {"application/json": {"schema": answer_schema}}
    responses: dict[int | str, dict[str, Any]] = {
        200: {"description": "accepted: the events the command caused", "content": answer_content},
        401: {"description": "no or an unknown bearer token"},
        404: {"description": "unknown_table: no TableOpened read for the table (nothing sent)"},
        500: {"description": "internal_error: an unexpected failure of the API (logged); retry with the same "
                             "Idempotency-Key"},
        403: {"description": "role_not_allowed: the role may not send this action, or not_your_player: a bettor "
                             "credential's action for a player it is not bound to (nothing sent)"},
        409: {"description": "rejected by the service (reason code), or the request id was used for another "
                             "request", "content": answer_content},
        422: {"description": "input that cannot become a command (nothing sent)"},
        503: {"description": "broker_unavailable: the broker did not take the command, or reader_failed: the "
                             "API cannot read answers; retry with the same Idempotency-Key"},
        504: {"description": "no answer in time: the command may still be decided; retry with the same "
                             "Idempotency-Key"},
    }

    def route(path: str, name: str, summary: str) -> None:
        model = A.ACTIONS[name]
        senders = sorted(r for r, acts in A.ROLE_ACTIONS.items() if name in acts)

        async def endpoint(table_id: str, body: model,  # type: ignore[valid-type]
                           who: Annotated[Caller, Depends(identify)],
                           idempotency_key: str | None = Header(None, description="The request id (1-64 of "
                                                                "letters, digits, . _ : -): a retry repeats it"),
                           wait_ms: int | None = Query(None, ge=0, le=MAX_WAIT_MS,
                                                       description="How long to wait for the answer (ms)")
                           ) -> Any:
            return await run(who, body, table_id, idempotency_key, wait_ms)

        endpoint.__name__ = name
        api.post(path, summary=summary, description=f"{model.__doc__}\n\nRoles: {', '.join(senders)}.",
                 responses=responses, response_model=None, operation_id=name)(endpoint)

    route("/tables/{table_id}/open", "open_table", "Open the table from a named profile")
    route("/tables/{table_id}/shoe", "load_shoe", "Load a shoe (shuffled by the shoe service, or physical)")
    route("/tables/{table_id}/shoe/burn", "read_burn", "Report a physical shoe's burn")
    route("/tables/{table_id}/shoe/cards", "read_card", "Report a card read from a physical shoe")
    route("/tables/{table_id}/shoe/close", "close_shoe", "Close the shoe (reveal its order)")
    route("/tables/{table_id}/rounds", "open_round", "Open a round (betting opens)")
    route("/tables/{table_id}/rounds/void", "void_round", "Void a round, with a reason")
    route("/tables/{table_id}/rounds/no-more-bets", "no_more_bets", '"No more bets"')
    route("/tables/{table_id}/curator/offer", "offer_shoe", "Offer the shoe to a participant (curator tables)")
    route("/tables/{table_id}/curator/keep", "keep_shoe", "The curator keeps the shoe")
    route("/tables/{table_id}/curator/pass", "pass_shoe", "Pass the shoe (the curator, or the dealer's or "
                                                          "floorman's order)")
    route("/tables/{table_id}/seats", "seat_player", "Seat a player")
    route("/tables/{table_id}/seats/leave", "leave_seat", "A player leaves a seat")
    route("/tables/{table_id}/bets", "place_bet", "Place a bet (betting terminal)")
    route("/tables/{table_id}/bets/withdraw", "withdraw_bet", "Withdraw a bet (betting terminal)")
    route("/tables/{table_id}/commission/collect", "collect_commission", "Collect the commission a player owes")
    route("/tables/{table_id}/options/expire", "expire_option", "The table clock: an option not decided in time "
                                                               "(chemin de fer)")
    route("/tables/{table_id}/options/decide", "decide_option", "Decide an option: draw or stand (chemin de fer, "
                                                               "the hand's controller)")

    def reader(allowed: frozenset[str], what: str) -> Callable[..., Awaitable[str]]:
        async def check(role: str = Depends(caller)) -> str:
            if role not in allowed:
                raise _error(403, "role_not_allowed",
                             f"the {role} role may not read {what} (allowed: {', '.join(sorted(allowed))})")
            return role
        return check

    @api.get("/tables/{table_id}/rounds/{round_id}", summary="A round as dealt: cards, result, settlement",
             operation_id="round_view",
             dependencies=[Depends(reader(A.ROUND_READERS, "a round's bets and settlements"))])
    async def round_view(table_id: str, round_id: str,
                         wait_ms: int = Query(0, ge=0, le=MAX_WAIT_MS,
                                              description="Wait up to this long (ms) for the round's settlement")
                         ) -> dict[str, Any]:
        return await gateway.round_view(table_id, round_id, wait_s=wait_ms / 1000)

    @api.get("/tables/{table_id}/rounds/{round_id}/option", operation_id="pending_option",
             summary="The chemin de fer option awaiting a decision (a terminal: only its own players')")
    async def pending_option(table_id: str, round_id: str, who: Annotated[Caller, Depends(identify)],
                             wait_ms: int = Query(0, ge=0, le=MAX_WAIT_MS,
                                                  description="Wait up to this long (ms) for an option to be "
                                                              "offered (or the round to end)")
                             ) -> dict[str, Any]:
        """``option_pending``: the ``OptionOffered`` awaiting its controller's ``decide_option`` (hand, cell,
        seat, player, ``default_draw``, ``offered_at`` and ``deadline``, the log's times), or null. The roles
        that read a round see any; a betting terminal sees only an option one of its players controls (null
        otherwise), so that it can ask its player to draw or stand before the deadline."""
        if who.role not in A.ROUND_READERS and who.role != "bettor":
            raise _error(403, "role_not_allowed", f"the {who.role} role may not read a round's options")
        view = await gateway.round_view(table_id, round_id, wait_s=wait_ms / 1000, until="option")
        option = view["option_pending"]
        if who.role == "bettor" and (option is None or option["player_id"] not in who.players):
            option = None
        return {"table_id": table_id, "round_id": round_id, "status": view["status"], "option_pending": option}

    @api.get("/tables/{table_id}/rounds/{round_id}/mine", operation_id="my_bets",
             summary="A betting terminal's own bets of a round and their results")
    async def my_bets(table_id: str, round_id: str, who: Annotated[Caller, Depends(identify)]) -> dict[str, Any]:
        """The bets the caller's players (its bettor credential's) placed in the round: each with its status
        (``placed``, ``withdrawn``, ``settled``) and, once settled, its result and payout (cents); and the
        round's ``status``. Only a betting terminal's own players' bets (a terminal bound to no player: none)."""
        if who.role != "bettor":
            raise _error(403, "role_not_allowed", f"the {who.role} role reads a round whole "
                                                  f"(GET /tables/{{table_id}}/rounds/{{round_id}}), not a terminal's bets")
        view = await gateway.round_view(table_id, round_id)
        return {"table_id": table_id, "round_id": round_id, "status": view["status"],
                "players": sorted(who.players), "bets": bets_of(gateway.bus.index, table_id, round_id, who.players)}

    @api.get("/actions", summary="Every action, its command and who may send it", operation_id="list_actions")
    async def list_actions(who: Annotated[Caller, Depends(identify)]) -> dict[str, Any]:
        role = who.role
        return {"role": role, "may_send": sorted(A.ROLE_ACTIONS.get(role, ())), "players": sorted(who.players),
                "actions": {n: sorted(r for r, acts in A.ROLE_ACTIONS.items() if n in acts) for n in A.ACTIONS},
                "profiles": sorted(A.TABLE_PROFILES)}

    @api.get("/health/live", summary="Liveness (no token)")
    async def live() -> dict[str, bool]:
        return {"live": True}

    mount_docs(api)
    return api


__all__ = ["Answer", "create_command_api"]
