"""The event-sourcing machinery every service shares, free of Kafka.

A service supplies a :class:`ServiceCore`: pure functions over one table's state. The :class:`Runner` owns
the per-table states and does the rest the same way for every service:

* folds its **own** events (:meth:`ServiceCore.evolve`) and its **input** events from other services
  (:meth:`ServiceCore.absorb`), dropping duplicates by per-table ``seq``;
* decides **commands** (:meth:`ServiceCore.decide`) once: a command whose id is already the cause of one of
  its own events produces nothing (at-least-once delivery, "no payout twice");
* after every input and every decision lets the core **react** to its state (:meth:`ServiceCore.react`)
  until nothing more is due, e.g. settle a round once both its bet book and its result are known. Reactions
  are state-driven, so a rebuild after a crash emits exactly what was due and never emitted;
* wraps new events in envelopes: gapless per-table ``seq``, deterministic ``event_id``, causation and
  correlation, ``occurred_at`` from the cause.

A :class:`Decision` (all events and commands of one step) is handed to the publisher as one unit; the
Kafka publisher writes it in one transaction, so a crash never leaves half a decision in the log.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from contracts.commands import Command
from contracts.topics import ROUTES, TOPIC_OF, CommandTopic
from contracts.envelope import CommandEnvelope, Envelope, event_id
from contracts.events import CommandRejected, Event

S = TypeVar("S")
#: the time given to a reaction whose core set none (cores set the time of the input that made it due)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class Emit:
    """A new event of the service's own stream.

    ``causation_id``/``occurred_at`` default to the command being decided; reactions must set them to
    the input event that makes the event due, so a re-emission after a crash is byte-identical.
    """

    payload: Event
    round_id: str | None = None
    shoe_id: str | None = None
    correlation_id: str | None = None
    causation_id: str | None = None
    occurred_at: datetime | None = None
    #: another stream the service owns (e.g. ``shoe.vault``); None: the service's main events stream
    stream: str | None = None
    #: who acted, for a reaction whose act is a participant's (chemin de fer: the Banker deals the card a
    #: ``CardDealt`` records, 13:69F-4.8(d)); None: the command's actor (a reaction: none)
    actor: str | None = None


@dataclass(frozen=True, slots=True)
class Send:
    """A command for another service, or for another key of this one (base topic name from
    :mod:`contracts.topics`): written to the partition of ``command.table_id``, keyed by it, in the
    decision's transaction (the cage's marker buy-in goes from a table to ``CAGE`` and back)."""

    topic: str
    command: CommandEnvelope


@dataclass(frozen=True, slots=True)
class Decision:
    """What one step produced: envelopes for the own stream and commands for other services."""

    table_id: str
    events: tuple[Envelope, ...] = ()
    sends: tuple[Send, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.events or self.sends)


class ServiceCore(Protocol[S]):
    """What a service defines: names, and pure functions over one table's state.

    Optional: ``prompt_stream``, the base name of one own stream whose events a transactional runtime
    publishes at once in short transactions of their own (:mod:`services.runtime.prompt_lane`); a core that
    names one must publish nothing for an input read again after a restore that its stream already holds."""

    name: str
    own_stream: str
    #: further streams only this service writes and reads (private state such as a sealed card order)
    private_streams: tuple[str, ...]
    #: the command topics it reads (base names, each in :data:`contracts.topics.ROUTES`)
    command_streams: tuple[str, ...]
    #: the command topics whose record is decided first when it shares one log time (milliseconds) with a
    #: record of another topic in a batch (base names, each in ``command_streams``; see ``in_log_order``)
    same_time_first: tuple[str, ...]
    #: pairs (command topic, topic read first), base names in ``command_streams``: before a record of the
    #: first topic is decided, the task has read every record of the second that the log held when the
    #: record was read (see ``Tasks.caught_up``); the wagering service's "No more bets" waits so for the bets
    catch_up: tuple[tuple[str, str], ...]
    input_streams: tuple[str, ...]

    def initial(self, table_id: str) -> S: ...

    def evolve(self, state: S, env: Envelope) -> S: ...

    def absorb(self, state: S, env: Envelope) -> S: ...

    def decide(self, state: S, cmd: CommandEnvelope) -> list[Emit | Send]:
        """Decide a command. ``cmd.issued_at`` is the time its events record: the broker's append time
        of its record on a command topic (the sender's claim stays in the events' ``claimed_at``)."""
        ...

    def react(self, state: S, last: Envelope | None) -> list[Emit | Send]: ...

    def sent(self, state: S, send: Send) -> S:
        """Fold a command this service sent (not persisted: a rebuild may send it again, and the
        receiver drops it by its deterministic command id)."""
        ...


#: how many of a table's most recent causing command ids are remembered for duplicate detection. Input
#: offsets are committed with the events they caused, so a record is never handled twice; a duplicate
#: command is a *new* record with an old id (a console's retry, a command re-sent by a service after its
#: restore), which comes within moments, not thousands of commands later. Events are deduplicated by seq,
#: exactly and without a window.
CAUSES_WINDOW = 4096


@dataclass(slots=True)
class TableSlot(Generic[S]):
    """A table's state plus the bookkeeping the runner keeps for it.

    ``causes``: the ids of the last :data:`CAUSES_WINDOW` commands/events that caused an own event, in
    order (a dict used as an ordered set, so the oldest is dropped first), each scoped by the principal of
    the events it caused (:func:`cause_key`), with the digest of the command it was (:func:`command_digest`;
    "" when not known, as after a rebuild from the events alone).
    """

    state: S
    seq: dict[str, int] = field(default_factory=dict)
    causes: dict[str, str] = field(default_factory=dict)
    input_seq: dict[str, int] = field(default_factory=dict)
    last_event_id: str | None = None

    def remember(self, cause: str, digest: str = "") -> None:
        """Add a cause key (with the digest of its command, when known), forgetting the oldest beyond
        :data:`CAUSES_WINDOW`."""
        if cause in self.causes:
            if digest and not self.causes[cause]:
                self.causes[cause] = digest
            return
        self.causes[cause] = digest
        if len(self.causes) > CAUSES_WINDOW:
            del self.causes[next(iter(self.causes))]


class Runner(Generic[S]):
    """Holds every table's state for one service and turns messages into :class:`Decision` s."""

    def __init__(self, core: ServiceCore[S]):
        self.core = core
        self.tables: dict[str, TableSlot[S]] = {}
        #: tables whose slot was used since the caller last cleared this set (what a checkpoint must write)
        self.touched: set[str] = set()
        #: called with every event folded (own or input), after the table's state took it: a live view's
        #: fan-out (:mod:`services.projection.live`); each must return at once and log its own failures (one
        #: that raises never stops the fold)
        self.observers: list[Callable[[Envelope], None]] = []

    def slot(self, table_id: str) -> TableSlot[S]:
        s = self.tables.get(table_id)
        if s is None:
            s = self.tables[table_id] = TableSlot(self.core.initial(table_id))
        self.touched.add(table_id)
        return s

    def reset(self, table_ids: Any = None) -> None:
        """Forget the given tables (all when None): they will be rebuilt from the log."""
        if table_ids is None:
            self.tables.clear()
        else:
            for t in list(table_ids):
                self.tables.pop(t, None)

    # -- folding ---------------------------------------------------------------------------------
    def apply_own(self, env: Envelope) -> bool:
        """Fold one of the service's own events (rebuild, or after publishing). False if a duplicate."""
        s = self.slot(env.table_id)
        if env.seq <= s.seq.get(env.stream, 0):
            return False
        s.state = self.core.evolve(s.state, env)
        s.seq[env.stream] = env.seq
        s.remember(cause_key(env.principal, env.causation_id))
        s.last_event_id = env.event_id
        self._observed(env)
        return True

    def absorb_input(self, env: Envelope) -> bool:
        """Fold an input event from another service's stream. False if a duplicate (already folded)."""
        s = self.slot(env.table_id)
        if env.seq <= s.input_seq.get(env.stream, 0):
            return False
        s.state = self.core.absorb(s.state, env)
        s.input_seq[env.stream] = env.seq
        self._observed(env)
        return True

    def _observed(self, env: Envelope) -> None:
        for observe in self.observers:
            try:
                observe(env)
            except Exception:  # noqa: BLE001 - a view's failure must never fail a fold
                pass

    # -- deciding --------------------------------------------------------------------------------
    def _wrap(self, table_id: str, outs: list[Emit | Send], cause_id: str, at: datetime,
              corr: str, claimed_at: datetime | None = None, principal: str | None = None,
              actor: str | None = None) -> Decision:
        s = self.slot(table_id)
        envs: list[Envelope] = []
        sends: list[Send] = []
        seq = dict(s.seq)
        for o in outs:
            if isinstance(o, Send):
                sends.append(o)
                continue
            stream = o.stream or self.core.own_stream
            seq[stream] = n = seq.get(stream, 0) + 1
            envs.append(
                Envelope(
                    event_id=event_id(stream, table_id, n),
                    stream=stream,
                    table_id=table_id,
                    seq=n,
                    causation_id=o.causation_id or cause_id,
                    correlation_id=o.correlation_id or o.round_id or corr or table_id,
                    occurred_at=o.occurred_at or at,
                    claimed_at=claimed_at if o.occurred_at is None else None,
                    principal=principal if o.occurred_at is None else self.core.name,
                    actor=o.actor if o.actor is not None else actor if o.occurred_at is None else None,
                    round_id=o.round_id,
                    shoe_id=o.shoe_id,
                    payload=o.payload,
                )
            )
        return Decision(table_id, tuple(envs), tuple(sends))

    def decide(self, cmd: CommandEnvelope, logged_at: datetime | None = None,
               max_skew: timedelta | None = None, route: CommandTopic | None = None) -> Decision:
        """Decide a command: nothing if it is a retry (its principal already sent this command under this
        id), a ``CommandRejected`` ``command_id_reused`` if its principal used the id for another command.

        ``route``: the command topic it came from. Its events record the topic's writer as ``principal`` and
        the command's ``actor``; a command type the topic does not carry is refused ``wrong_topic`` (a
        bettor's principal can write ``wagering.bets`` only, so a ``CloseBetting`` there is a forgery), and
        one without an actor on a topic that needs it ``unattributed``, each a ``CommandRejected`` that
        decides nothing else. None (tests of a core alone): no check, principal unknown.

        ``logged_at``: the broker's append time of the command record (``LogAppendTime`` on command
        topics): the events take it as ``occurred_at`` and keep the sender's ``issued_at`` as its claim
        (``claimed_at``), so a sender cannot back-date what it causes. Without it (the in-memory bus) the
        claim is the time. ``max_skew``: a command whose claim is further than this from ``logged_at`` is
        refused ``clock_skew`` (a ``CommandRejected``) and decides nothing else.
        """
        s = self.slot(cmd.table_id)
        key = cause_key(route.writer if route is not None else None, cmd.command_id)
        digest = command_digest(cmd)
        tag = type(cmd.payload).__struct_config__.tag
        at = logged_at or cmd.issued_at
        claimed = cmd.issued_at if logged_at is not None else None
        refusal: tuple[str, str] | None = None
        if key in s.causes:
            if s.causes[key] in ("", digest):
                return Decision(cmd.table_id)  # a retry: decided once
            # another command under an id its principal already used (a terminal taking another's bet id
            # to swallow it): refused, never silently dropped
            refusal = ("command_id_reused", f"command id {cmd.command_id} was already used by another "
                                            f"{route.writer if route else ''} command at this table: a retry "
                                            "must repeat the command, a new command needs a new id")
        else:
            s.remember(key, digest)
            refusal = _refusal(cmd, tag, route)
        if refusal is None and logged_at is not None and max_skew is not None \
                and abs(cmd.issued_at - logged_at) > max_skew:
            skew = (cmd.issued_at - logged_at).total_seconds()
            refusal = ("clock_skew", f"issued_at {cmd.issued_at.isoformat()} is {skew:+.3f} s from the log's "
                                     f"time {logged_at.isoformat()} (at most {max_skew.total_seconds():g} s)")
        if refusal is not None:
            outs: list[Emit | Send] = [Emit(CommandRejected(command_id=cmd.command_id, command=tag,
                                                            reason=refusal[0], detail=refusal[1]))]
        else:
            # the core sees the command at the log's time, the time its events record
            seen = cmd if logged_at is None else msgspec.structs.replace(cmd, issued_at=logged_at)
            outs = self.core.decide(s.state, seen)
        round_id = getattr(cmd.payload, "round_id", None)
        if round_id:  # events caused by a command about a round carry that round
            outs = [o if isinstance(o, Send) or o.round_id else replace(o, round_id=round_id) for o in outs]
        return self._wrap(cmd.table_id, outs, cmd.command_id, at, cmd.correlation_id, claimed,
                          route.writer if route is not None else None, cmd.actor or None)

    def react(self, table_id: str, last: Envelope | None) -> Decision:
        """What the table's state makes due now (after an input event, a decision, or a rebuild)."""
        s = self.slot(table_id)
        outs = self.core.react(s.state, last)
        if not outs:
            return Decision(table_id)
        at = last.occurred_at if last else _EPOCH
        cause = last.event_id if last else (s.last_event_id or table_id)
        return self._wrap(table_id, outs, cause, at, "", principal=self.core.name)

    def commit(self, decision: Decision) -> None:
        """Fold a decision's events once they are safely published."""
        for env in decision.events:
            self.apply_own(env)
        if decision.sends:
            s = self.slot(decision.table_id)
            for send in decision.sends:
                s.state = self.core.sent(s.state, send)


def command_digest(cmd: CommandEnvelope) -> str:
    """What makes a command the same command: its actor and payload (not its ``issued_at``: a retry is
    stamped anew), 16 hex digits of BLAKE2b."""
    return hashlib.blake2b(cmd.actor.encode() + b"\x00" + msgspec.json.encode(cmd.payload),
                           digest_size=8).hexdigest()


def cause_key(principal: str | None, cause_id: str) -> str:
    """The key a cause is remembered by: ``<principal>|<id>``. Command ids are chosen by their senders, so a
    duplicate is a command of the *same* principal with the same id: a bettor who sends a bet under the id of
    the console's next "No more bets" cannot make the console's real command look like a retry. Without a
    principal (a log written before attribution, a core tested alone): the id itself."""
    return f"{principal}|{cause_id}" if principal else cause_id


def _refusal(cmd: CommandEnvelope, tag: str, route: CommandTopic | None) -> tuple[str, str] | None:
    """(reason, detail) when ``cmd`` may not be decided from ``route``'s topic, else None."""
    if route is None:
        return None
    if tag not in route.commands:
        return ("wrong_topic", f"{tag} does not travel on {route.name}, whose one writer is the {route.writer} "
                               f"principal (it carries {', '.join(route.commands)})")
    if route.attributed and not cmd.actor:
        return ("unattributed", f"a command on {route.name} must name its actor (the dealer or player acting "
                                f"under the {route.writer} principal)")
    return None


def command(table_id: str, command_id: str, issued_at: datetime, payload: Command,
            correlation_id: str = "", actor: str | None = None) -> CommandEnvelope:
    """Shorthand for a command envelope. ``actor``: who acts (the dealer, or the betting player); None
    defaults to the player of a ``PlaceBet`` (a bettor's command) and to ``dealer-<table_id>`` otherwise, as the simulated floor's
    and the tests' dealer and bettors act (a real console names its own); ``""``: no actor (a service's own
    command, e.g. the dealing service's ``DrawCard``, attributed to the service by its topic)."""
    if actor is None:
        bettor = ROUTES[TOPIC_OF[type(payload).__struct_config__.tag]].writer == "bettor"
        actor = getattr(payload, "player_id", "") if bettor else f"dealer-{table_id}"
    return CommandEnvelope(command_id=command_id, table_id=table_id, issued_at=issued_at,
                           correlation_id=correlation_id, actor=actor, payload=payload)
