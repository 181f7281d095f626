"""Send an action's command once per request id and wait for what it caused (the library the HTTP API and
``croupier table`` both use).

:class:`CommandGateway` turns a request (an action of :mod:`services.command_api.actions`, a request id, the
table) into a command envelope whose ``command_id`` derives from the request id (the same request id gives the
same command id: the services drop a retry of a command id from the same principal), sends it on its topic
under the topic's writer principal, and waits until the deciding service's events caused by that command id
are all in (:class:`EventIndex`): the :class:`Answer` is ``accepted`` with them, or ``rejected`` with the
reason code of the ``CommandRejected`` / ``BetRejected`` / ``CardReadRefused``. A request id already answered
gets the same answer again without sending anything; the same request id with another request is refused
(:class:`RequestIdReused`), also by a gateway that never answered the first (a new ``croupier table``
process, a restarted API): the events the log holds for the command id must be what this command would cause
(:func:`caused_by`), and a service's ``command_id_reused`` refusal says so too; no answer within the timeout
raises :class:`AnswerTimeout` (the command may still be decided: retry with the same request id). A command
for a table no ``TableOpened`` was read for is refused :class:`UnknownTable` (404; not ``open_table``); while
the reader is failing, requests answer :class:`ReaderFailed` (503). A betting terminal's action (``place_bet``,
``withdraw_bet``, ``decide_option``) for a player the caller's bettor credential is not bound to is refused
:class:`NotYourPlayer` (403) before anything is sent.

Transports (:class:`CommandBus`): :class:`KafkaCommandBus` (aiokafka: an idempotent producer per writer
principal, one ``read_committed`` reader of the four event topics, no consumer group) and
:class:`MemoryCommandBus` (the in-memory bus of :mod:`services.runtime.memory`, for tests). Time enters through
the injected ``clock``; nothing here draws an id.

The parts, each in the module named for it (all re-exported here): :mod:`~services.command_api.errors` (the
errors and their HTTP statuses), :mod:`~services.command_api.answers` (the answer and which events are a
command's), :mod:`~services.command_api.index` (what has been read), :mod:`~services.command_api.bus` (the
transports), :mod:`~services.command_api.writers` (the writer principals' settings) and
:mod:`~services.command_api.views` (a round's view, a terminal's bets).
"""


from __future__ import annotations

import asyncio
import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec
from aiokafka.errors import KafkaError

from contracts import topics as T
from contracts.commands import PassShoe
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BettingOpened,
    OptionDecided,
    OptionOffered,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
)
from services.command_api.plans import InvalidAction, Planned, to_command
from services.command_api.roles import BETTOR_ACTIONS, allowed
from services.command_api.answers import (
    REUSED,
    Answer,
    _refusal,
    _reuse_refusal,
    caused_by,
    check_command,
    command_id_for,
    plain_event,
)
from services.command_api.bus import WATCHED, CommandBus, KafkaCommandBus, MemoryCommandBus
from services.command_api.errors import (
    AnswerTimeout,
    BadRequest,
    BrokerUnavailable,
    CommandApiError,
    Forbidden,
    NotYourPlayer,
    OrderNotAllowed,
    ReaderFailed,
    RequestIdReused,
    UnknownTable,
)
from services.command_api.index import EventIndex
from services.command_api.views import bets_of, round_view_of
from services.command_api.writers import MissingWriterCredential, writer_settings
from services.runtime.core import command as envelope_of

__all__ = ["REUSED", "WATCHED", "Answer", "AnswerTimeout", "BadRequest", "BrokerUnavailable", "CommandApiError",
           "CommandBus", "CommandGateway", "EventIndex", "Forbidden", "KafkaCommandBus", "MemoryCommandBus",
           "MissingWriterCredential", "NotYourPlayer", "OrderNotAllowed", "ReaderFailed", "RequestIdReused",
           "UnknownTable", "bets_of", "caused_by", "check_command", "command_id_for", "plain_event", "since_for",
           "writer_settings"]

#: a request id: what a client chooses to make a retry recognisable
REQUEST_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
DEFAULT_TIMEOUT_S = 10.0
#: the shortest bound on a command's delivery to the broker, even for a request that waits less (seconds)
MIN_DELIVERY_S = 0.5
#: answers remembered for retries (the oldest is forgotten first)
ANSWERS_KEPT = 10_000
#: a decision whose count of events is not known beforehand is taken as whole this long after its first
#: event was read, if the reader has not said so sooner (seconds)
SETTLE_S = 2.0
#: the least a round's view waits for the reader to catch up with every partition (seconds)
CATCH_UP_S = 2.0


def _reused(request_id: str, table_id: str) -> RequestIdReused:
    return RequestIdReused(f"request id {request_id!r} was used at table {table_id} for another request: a retry "
                           "must repeat the request, a new request needs a new id")


@dataclass
class _Entry:
    digest: str
    done: asyncio.Future[Answer]


class CommandGateway:
    """Requests in, answers out, one command per request id.

    ``bus``: the transport (:class:`KafkaCommandBus`, started; or :class:`MemoryCommandBus`). ``clock``: the
    time each command claims (``issued_at``; the events take the broker's append time). ``timeout_s``: how
    long :meth:`submit` waits for an answer by default."""

    def __init__(self, bus: CommandBus, clock: Callable[[], datetime], timeout_s: float = DEFAULT_TIMEOUT_S,
                 answers_kept: int = ANSWERS_KEPT):
        self.bus = bus
        self.clock = clock
        self.timeout_s = timeout_s
        self.answers_kept = answers_kept
        self._answers: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()

    def plan(self, action: Any, table_id: str, request_id: str) -> tuple[Planned, CommandEnvelope]:
        """The command an action becomes and its envelope; raises :class:`BadRequest` (nothing is sent). The
        table is not checked here (:meth:`submit` does: :class:`UnknownTable`)."""
        if not re.fullmatch(REQUEST_ID_PATTERN, request_id):
            raise BadRequest("invalid_request_id", f"request id {request_id!r} must be 1-64 letters, digits, "
                                                   "'.', '_', ':' or '-', starting with a letter or digit",
                             "request_id")
        # the derived ids (a shoe or round the request leaves to the API) come from the request id alone
        derived = hashlib.blake2b(f"{table_id}/{request_id}".encode(), digest_size=8).hexdigest()
        try:
            planned = to_command(action, derived)
        except InvalidAction as e:
            raise BadRequest(e.reason, e.detail, e.field) from None
        cid = command_id_for(planned.writer, table_id, request_id)
        env = envelope_of(table_id, cid, self.clock(), planned.command,
                          correlation_id=getattr(planned.command, "round_id", "") or "", actor=planned.actor)
        check_command(env)
        return planned, env

    async def submit(self, action: Any, table_id: str, request_id: str, role: str | None = None,
                     timeout_s: float | None = None, players: Iterable[str] | None = None) -> Answer:
        """Send ``action`` at ``table_id`` once for ``request_id`` and answer what it caused.

        ``role``: the caller's role, checked against :data:`~services.command_api.actions.ROLE_ACTIONS`
        (None: not checked, for the command line, which the broker's credentials authorise). ``players``: the
        players the caller's bettor credential is bound to; with a ``role``, a betting terminal's action
        (:data:`~services.command_api.actions.BETTOR_ACTIONS`) must name one of them (None: none). Raises
        :class:`Forbidden` (:class:`OrderNotAllowed`: a ``pass_shoe`` ordered as another role;
        :class:`NotYourPlayer`: a bettor's action for a player not its own), :class:`BadRequest`,
        :class:`UnknownTable` (no ``TableOpened`` read for ``table_id``; ``open_table`` excepted) or
        :class:`RequestIdReused` before anything is sent (a reuse learnt from the log only after sending
        is a :class:`RequestIdReused` too), :class:`ReaderFailed` while the reader is failing, and
        :class:`AnswerTimeout` after ``timeout_s`` (default :attr:`timeout_s`) without a whole answer, and
        :class:`BrokerUnavailable` when the broker did not take the command.
        A rejection is an :class:`Answer` with ``status == "rejected"``, not an exception."""
        planned, env = self.plan(action, table_id, request_id)
        if role is not None and not allowed(role, planned.action):
            raise Forbidden(f"the {role} role may not send {planned.action}")
        if role is not None and planned.action in BETTOR_ACTIONS:
            mine = frozenset(players or ())
            if planned.actor not in mine:
                raise NotYourPlayer(
                    f"this bettor credential acts for {', '.join(repr(p) for p in sorted(mine))}, not for "
                    f"{planned.actor!r}: nothing was sent" if mine else
                    f"this bettor credential is bound to no player, so it may not act for {planned.actor!r} "
                    "(give each terminal a bettor:<player_id>=<token> credential); nothing was sent", "player_id")
        if role is not None and isinstance(planned.command, PassShoe):
            # 13:69F-3.11(a)2: the pit orders the pass as the floorman; the dealer orders it as the dealer or
            # enters the curator's own pass; neither speaks for the other
            may = {"pit": ("floorman",), "dealer": ("dealer", "")}.get(role, ())
            if planned.command.ordered_by not in may:
                raise OrderNotAllowed(f"the {role} role may not pass the shoe with ordered_by="
                                      f"{planned.command.ordered_by!r} (allowed: "
                                      f"{', '.join(repr(m) for m in may) or 'none'})", "ordered_by")
        if planned.action != "open_table":
            await self._known_table(table_id)
        key = (planned.writer, table_id, request_id)
        digest = hashlib.blake2b(planned.action.encode() + b"\0" + planned.actor.encode() + b"\0"
                                 + msgspec.json.encode(planned.command), digest_size=8).hexdigest()
        entry = self._answers.get(key)
        if entry is not None:
            if entry.digest != digest:
                raise _reused(request_id, table_id)
            if entry.done.done() and entry.done.exception() is None:
                return entry.done.result()
            if not entry.done.done():
                return await asyncio.shield(entry.done)
        entry = _Entry(digest, asyncio.get_running_loop().create_future())
        self._answers[key] = entry
        self._answers.move_to_end(key)
        while len(self._answers) > self.answers_kept:
            self._answers.popitem(last=False)
        try:
            answer = await self._send_and_wait(planned, env, request_id, timeout_s)
        except BaseException as e:
            entry.done.set_exception(e if isinstance(e, Exception) else AnswerTimeout(str(e)))
            entry.done.exception()  # retrieved: a timeout is not kept as the answer, a retry waits again
            if isinstance(e, RequestIdReused) and self._answers.get(key) is entry:
                del self._answers[key]  # the id belongs to the first request: its retry must still be answered
            raise
        entry.done.set_result(answer)
        return answer

    async def _known_table(self, table_id: str) -> None:
        """Raise :class:`UnknownTable` unless a ``TableOpened`` of ``table_id`` was read (and
        :class:`ReaderFailed` while the reader is failing)."""
        index = self.bus.index
        if table_id in index.tables:
            return
        await self.bus.settle()
        if index.reader_error is not None:
            raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): nothing was sent; "
                               "retry later")
        if table_id not in index.tables:
            raise UnknownTable(f"table {table_id!r} was never opened (no TableOpened read): open it first "
                               "(open_table); nothing was sent", "table_id")

    async def _send_and_wait(self, planned: Planned, env: CommandEnvelope, request_id: str,
                             timeout_s: float | None) -> Answer:
        wait = self.timeout_s if timeout_s is None else timeout_s
        index = self.bus.index
        table_id, cid, stream = env.table_id, env.command_id, planned.answer_stream
        if index.reader_error is not None:
            raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): {planned.action} was "
                               "not sent; retry with the same request id later")
        await self.bus.settle()
        first, _ = index.caused(table_id, stream, cid)
        first = [e for e in first if not _reuse_refusal(e)]
        if first and not caused_by(planned, first):  # the id's first command is in the log: another one
            raise _reused(request_id, table_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        try:  # the delivery is bounded by the request's wait: a command not delivered then is dropped
            await self.bus.send(planned.topic, env, planned.writer, timeout_s=max(MIN_DELIVERY_S, wait))
        except (KafkaError, OSError) as e:
            raise BrokerUnavailable(f"{planned.action} (command {cid}) could not be handed to the broker "
                                    f"({type(e).__name__}: {e}): it will not be delivered later; retry with the "
                                    "same request id once the broker is back") from None
        await self.bus.settle()

        first_seen: list[float] = []

        def whole(cause: str, where: str, ends: frozenset[str] | None) -> list[Envelope] | None:
            """The decision's events once all are in: its last event is here (or a refusal, always alone);
            when its count is not known, once the index says so, or :data:`SETTLE_S` after the first."""
            if index.reader_error is not None:
                raise ReaderFailed(f"the gateway's reader is failing ({index.reader_error}): {planned.action} "
                                   f"(command {cid}) may still be decided; retry with the same request id later")
            evs, done = index.caused(table_id, where, cause)
            if where == stream and cause == cid:
                own = [e for e in evs if not _reuse_refusal(e)]
                if len(own) < len(evs) and not own:  # the service says the id's first command was another
                    raise _reused(request_id, table_id)
                if not caused_by(planned, own):  # the id's first command, read now: another one
                    raise _reused(request_id, table_id)
                evs = own
            if not evs:
                return None
            if _refusal(evs) is not None:
                return evs
            if ends is not None:
                return evs if any(e.payload.__struct_config__.tag in ends for e in evs) else None
            first_seen[:1] = first_seen[:1] or [loop.time()]
            return evs if done or loop.time() - first_seen[0] >= SETTLE_S else None

        try:
            events = await index.wait_for(lambda: whole(cid, stream, planned.ends_with),
                                          max(0.0, deadline - loop.time()))
            refusal = _refusal(events)
            if refusal is None and planned.then_betting_opened:
                opened = next(e for e in events if isinstance(e.payload, RoundOpened))
                events = events + await index.wait_for(
                    lambda: [e for e in (whole(opened.event_id, T.WAGERING_EVENTS, frozenset({"betting_opened"})) or [])
                             if isinstance(e.payload, BettingOpened)],
                    max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise AnswerTimeout(f"no answer to {planned.action} (command {cid}) at table {table_id} within "
                                f"{wait:g} s: the command may still be decided; retry with the same request id "
                                "to get its answer without a second command") from None
        c = planned.command
        return Answer(request_id=request_id, command_id=cid, action=planned.action, table_id=table_id,
                      status="rejected" if refusal else "accepted",
                      reason=refusal[0] if refusal else "", detail=refusal[1] if refusal else "",
                      shoe_id=getattr(c, "shoe_id", "") or "", round_id=getattr(c, "round_id", "") or "",
                      bet_id=cid if planned.action == "place_bet" else getattr(c, "bet_id", "") or "",
                      events=[plain_event(e) for e in events])

    async def round_view(self, table_id: str, round_id: str, wait_s: float = 0.0,
                         until: str = "settled") -> dict[str, Any]:
        """The round as the gateway has read it: ``status`` (``unknown`` | ``betting`` | ``betting_closed`` |
        ``dealing`` | ``resolved`` | ``voided`` | ``settled``), the cards dealt (hand, position, the rule cell
        behind each), the points announced, the result, irregularities, the closed bet book, the bets withdrawn
        (``reason`` ``betting_closed``: a bet the log holds after "No more bets", though its answer was
        ``BetPlaced``, returned by the call), each bet's settlement and the round's totals (cents). Chemin de
        fer: ``bank`` (the Banker's seat and player, ``bank_cents``), ``dominant_player``, ``options`` (each
        ``OptionOffered`` with its ``offered_at`` and ``deadline``, the log's times, and ``decided``: ``{draw,
        by}`` or None), ``option_pending`` (the one awaiting a decision, or None: the table clock may send
        ``expire_option`` from its deadline on) and ``bank_settled`` (``BankSettled``); None or empty at the
        other games. Waits up to ``wait_s`` for ``until`` (``option``: an option pending, or the round's end;
        ``settled``: the
        ``RoundSettled``; ``resolved``: the result or a void). Never raises for an unknown round: its status
        is ``unknown`` (the gateway reads from its start only; ``croupier replay`` reads the whole log)."""
        index = self.bus.index

        def reached() -> bool:
            kinds = tuple(type(e.payload) for e in index.round_events(table_id, round_id))
            ended = RoundResolved in kinds or RoundVoided in kinds or RoundSettled in kinds
            if until == "resolved":
                return ended
            if until == "option":  # an option awaiting its decision, or none to come
                return ended or kinds.count(OptionOffered) > kinds.count(OptionDecided)
            return RoundSettled in kinds

        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        await self.bus.catch_up(max(CATCH_UP_S, wait_s))  # all that is in the log now, on every topic
        if wait_s > 0 and not reached():
            try:
                await index.wait_for(reached, max(0.0, deadline - loop.time()))
            except TimeoutError:
                pass
            # reached on one topic: the round's events on the others, appended before, are read too
            await self.bus.catch_up(max(CATCH_UP_S, deadline - loop.time()))
        return round_view_of(table_id, round_id, index.round_events(table_id, round_id))


def since_for(now: datetime, lookback_s: float) -> datetime:
    """Where a fresh reader starts so that a retry finds its first attempt's answer: ``lookback_s`` before
    ``now``."""
    return now - timedelta(seconds=lookback_s)
