"""Audit of who did what and when: every event attributed, and each one a command caused checked against the
command's own record on its command topic (issue 9).

Pure, like :mod:`croupier.audit`, which calls :func:`check_provenance`. Checks:

* every event names its principal (``unattributed_event``): the writer of the command topic whose record
  caused it (``console``, ``bettor``, ``dealing`` for a ``DrawCard``), or the service that owns the stream for
  its own reactions;
* with the command topics' records (:class:`CommandRecord`, read by :func:`croupier.log.read_commands`), for
  every event a command caused (its principal is not its own service):

  - the command is in the log (``command_missing``: an event that claims a console's or a bettor's command
    no command topic holds, as a record written straight into an event topic would);
  - its principal is that topic's one writer (``principal_mismatch``) and its actor the command's
    (``actor_mismatch``; a chemin de fer card read is recorded under the Banker who dealt it, and its
    ``CardDrawn.keyed_by``, the person who keyed it, is then the command's actor);
  - its time is the broker's append time of the command's record (``event_time_mismatch``: a back-dated
    event) and its ``claimed_at``, when it has one, the command's ``issued_at`` (``claim_mismatch``), on a
    ``LogAppendTime`` topic;
  - a service's own reaction names an event of the log as its cause (``cause_missing``: an event relabelled
    as a reaction to hide that no command caused it);
  - unless it is the command's refusal (``CommandRejected``, ``BetRejected``): the topic carries that command
    (``wrong_topic_accepted``) and the command names its actor where the topic needs one
    (``unattributed_command``).

A command sent twice (a console's retry: a new record with the same id) is decided once; its events match one
of its records. Ids are the senders' own, so two principals may use the same one: an event is matched to the
record its own principal wrote. Events written before attribution existed carry no principal and are flagged: such a log
predates this check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from contracts import topics as T
from contracts.envelope import CommandEnvelope, Envelope
from contracts.envelope import sender as sender_of
from contracts.events import BetRejected, CommandRejected

#: ``flag(table_id, kind, where, detail)``
Flag = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """One record of a command topic: base topic name, where it sits, its Kafka timestamp (ms) and whether
    that is the broker's append time (``LogAppendTime``, timestamp type 1), and the command it holds."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    log_append_time: bool
    command: CommandEnvelope

    @property
    def logged_at(self) -> datetime:
        """The record's timestamp as a UTC datetime (ms precision, as the runtime reads it)."""
        return datetime.fromtimestamp(self.timestamp_ms / 1000, timezone.utc)


@dataclass(slots=True)
class ProvenanceReport:
    """What the provenance check did. ``status``: ``checked`` (the command topics were read) or
    ``not_read`` (``reason`` says why: only attribution was checked). ``commands``: command records read;
    ``events_checked``: events matched against their command's record."""

    status: str = "not_read"
    reason: str = ""
    commands: int = 0
    events_checked: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"status": self.status, "reason": self.reason, "commands": self.commands,
                "events_checked": self.events_checked}


def _owner(stream: str) -> str:
    """The service that writes ``stream`` (``shoe.vault`` is the shoe's, ``projection.odds`` the projection's)."""
    return stream.split(".", 1)[0]


def _where(env: Envelope) -> str:
    return f"{env.stream}#{env.seq}"


def check_provenance(envelopes: Iterable[Envelope], commands: Iterable[CommandRecord] | None, flag: Flag,
                     reason: str = "", table_id: str | None = None) -> ProvenanceReport:
    """Check every event's attribution and, when ``commands`` is given, each command-caused event against
    its command's record (see the module docstring); ``flag`` is called once per discrepancy.
    ``table_id``: only that table's events and commands. Returns what was checked."""
    envs = [e for e in envelopes if table_id is None or e.table_id == table_id]
    for e in envs:
        if not e.principal:
            flag(e.table_id, "unattributed_event", _where(e),
                 f"{type(e.payload).__name__} names no principal: who caused it is not on record")
    if commands is None:
        return ProvenanceReport(reason=reason or "the command topics were not read")
    by_id: dict[tuple[str, str], list[CommandRecord]] = defaultdict(list)
    n = 0
    for rec in commands:
        if table_id is not None and rec.command.table_id != table_id:
            continue
        by_id[(rec.command.table_id, rec.command.command_id)].append(rec)
        n += 1
    report = ProvenanceReport(status="checked", commands=n)
    event_ids = {e.event_id for e in envs}
    for e in envs:
        if not e.principal:
            continue  # flagged above
        if e.principal == _owner(e.stream):  # the service's own reaction: caused by an event of the log
            if e.causation_id not in event_ids and e.causation_id != e.table_id \
                    and (e.table_id, e.causation_id) not in by_id:
                flag(e.table_id, "cause_missing", _where(e),
                     f"{type(e.payload).__name__} is the {e.principal} service's own reaction to {e.causation_id}, "
                     "which is no event of the log")
            continue
        recs = by_id.get((e.table_id, e.causation_id))
        if not recs:
            flag(e.table_id, "command_missing", _where(e),
                 f"{type(e.payload).__name__} says the {e.principal} principal's command {e.causation_id} caused "
                 "it, and no command topic holds that command")
            continue
        report.events_checked += 1
        _check_event(e, recs, flag)
    return report


def _check_event(e: Envelope, recs: list[CommandRecord], flag: Flag) -> None:
    """One command-caused event against the records of its command (one, or a retry's too)."""
    # the same id may come from two principals (ids are the senders' own): the event's is the one its topic
    # writer sent; of a retry's records, the one whose append time the event took
    mine = [r for r in recs if (route := T.ROUTES.get(r.topic)) is not None and route.writer == e.principal] or recs
    sender = sender_of(e)  # the actor; a chemin de fer card read's keyer (CardDrawn.keyed_by)
    mine = [r for r in mine if r.command.actor == sender] or mine  # a reused id: the event's sender's
    rec = next((r for r in mine if r.log_append_time and e.occurred_at == r.logged_at), mine[0])
    route = T.ROUTES.get(rec.topic)
    cmd = rec.command
    tag = type(cmd.payload).__struct_config__.tag
    at = f"{_where(e)} <- {rec.topic}[{rec.partition}]@{rec.offset}"
    if route is not None and e.principal != route.writer:
        flag(e.table_id, "principal_mismatch", at,
             f"the event names principal {e.principal!r}; {rec.topic}'s one writer is {route.writer!r}")
    if sender != cmd.actor:
        flag(e.table_id, "actor_mismatch", at, f"the event names actor {e.actor!r}"
             + (f" (keyed by {sender!r})" if sender != (e.actor or "") else "") + f"; the command's is {cmd.actor!r}")
    if rec.log_append_time:
        if e.occurred_at != rec.logged_at:
            flag(e.table_id, "event_time_mismatch", at,
                 f"occurred_at {e.occurred_at.isoformat()} is not the command record's append time "
                 f"{rec.logged_at.isoformat()}")
        if e.claimed_at is not None and e.claimed_at != cmd.issued_at:
            flag(e.table_id, "claim_mismatch", at,
                 f"claimed_at {e.claimed_at.isoformat() if e.claimed_at else None} is not the command's issued_at "
                 f"{cmd.issued_at.isoformat()}")
    if isinstance(e.payload, (CommandRejected, BetRejected)) or route is None:
        return
    if tag not in route.commands:
        flag(e.table_id, "wrong_topic_accepted", at,
             f"{tag} was acted on from {rec.topic}, which carries only {', '.join(route.commands)}")
    elif route.attributed and not cmd.actor:
        flag(e.table_id, "unattributed_command", at,
             f"{tag} on {rec.topic} names no actor and was acted on (it must be refused: unattributed)")
