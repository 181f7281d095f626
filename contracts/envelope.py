"""The envelope every event and command travels in (architecture §5).

``event_id`` is derived from (``stream``, ``table_id``, ``seq``) so an event re-emitted after a crash is
byte-identical and consumers drop the duplicate. ``seq`` counts a table's events in one stream from 1,
gapless. ``occurred_at`` is the broker's append time of the command record that caused the event (command topics
use ``LogAppendTime``), so a sender cannot choose it and a replay reproduces it; the sender's own
``issued_at`` is kept as ``claimed_at``. Never a clock inside a service's domain. ``schema`` is the envelope/payload schema version.

**Who did it.** Each command topic has one kind of writer, which the broker's ACLs enforce
(:data:`contracts.topics.COMMAND_ROUTES`); an event records it as ``principal`` (``console``, ``bettor``, or the
service that sent the command, e.g. ``dealing`` for a ``DrawCard``), and a service's own reactions (a
settlement, betting opening after a round opened) as that service's name. ``actor`` is who, under that
principal, acted: the dealer or the player at a betting terminal, as the command's sender names them
(``CommandEnvelope.actor``, required on the console's and the bettors' topics: ``unattributed``).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

import msgspec

from contracts.bounds import EvId, Id, OptId, OptPlayerId
from contracts.commands import AnyCommand
from contracts.events import AnyEvent, CardDrawn

SCHEMA_VERSION = 1
_EVENT_NS = uuid.UUID("5b0f3c8e-7f52-4f7c-9a0e-3c1d2b6a9e11")


def event_id(stream: str, table_id: str, seq: int) -> str:
    """Deterministic event id: UUIDv5 of ``stream/table_id/seq``."""
    return str(uuid.uuid5(_EVENT_NS, f"{stream}/{table_id}/{seq}"))


def derived_command_id(*parts: object) -> str:
    """Deterministic id for a command one service sends another (e.g. the dealing service's ``DrawCard``)."""
    return str(uuid.uuid5(_EVENT_NS, "/".join(str(p) for p in parts)))


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """An event with its identity and provenance (string maxima documented, not enforced on decode)."""

    event_id: EvId
    stream: EvId
    table_id: EvId
    seq: int
    causation_id: EvId
    correlation_id: EvId
    occurred_at: datetime
    schema: int = SCHEMA_VERSION
    round_id: EvId | None = None
    shoe_id: EvId | None = None
    #: the causing command's own ``issued_at`` (its sender's claim) when ``occurred_at`` is the broker's
    #: append time of the command record; None for events caused by events
    claimed_at: datetime | None = None
    #: the kind of principal whose record caused the event: the writer of the command's topic
    #: (``console``, ``bettor``, a service), or the service itself for its reactions; None in logs written
    #: before attribution existed
    principal: EvId | None = None
    #: the dealer or player who acted under ``principal`` (the command's ``actor``); None for reactions
    actor: EvId | None = None
    payload: AnyEvent


def sender(env: Envelope) -> str:
    """Who sent the command that caused ``env`` (``""``: none named): its ``actor``, except a chemin de fer card
    read, recorded under the Banker who deals it (13:69F-4.8(d)) and sent by the person who keyed it at the
    console (``CardDrawn.keyed_by``)."""
    p = env.payload
    return (p.keyed_by if isinstance(p, CardDrawn) else "") or env.actor or ""


class CommandEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    """A command with its own id (idempotency key) and the time it was issued (UTC). The ids are bounded and
    patterned on decode (:mod:`contracts.bounds`)."""

    command_id: Id
    table_id: Id
    issued_at: datetime
    correlation_id: OptId = ""
    #: who acts under the topic's principal: the dealer (console topics) or the player (``wagering.bets``:
    #: the player the terminal authenticated); empty only on a service's own commands (``DrawCard``)
    actor: OptPlayerId = ""
    schema: int = SCHEMA_VERSION
    payload: AnyCommand


#: the bytes of the original record a dead letter keeps: a record may be up to the broker's limit
#: (:data:`contracts.bounds.RECORD_LIMIT_BYTES`), and its letter (JSON: the bytes in base64, 4/3 as many, plus
#: the error and the rest) must fit under the same limit, or the letter can never be written and the record's
#: partition never advances (issue 28: a 900 KB record's 1.2 MB letter). 64 KiB shows what the record was.
MAX_DEAD_LETTER_ORIGINAL = 65_536
#: characters of a dead letter's ``error`` and ``key`` kept (an exception's text can quote its input)
MAX_DEAD_LETTER_TEXT = 2_000


class DeadLetter(msgspec.Struct, frozen=True, kw_only=True):
    """A message a service could not decode or validate: where it came from, the error and its bytes.

    ``original``: the record's value, or only its first :data:`MAX_DEAD_LETTER_ORIGINAL` bytes when
    ``original_truncated``; ``original_size`` (bytes) and ``original_sha256`` (hex) are always of the whole
    value, so the record can be matched on its topic at ``offset``. A letter written before these fields
    existed decodes with size 0, digest "" and not truncated (its ``original`` is whole). Build one with
    :meth:`of`, which bounds every field.
    """

    service: str
    topic: str
    partition: int
    offset: int
    key: str | None
    error: str
    original: bytes
    received_at: datetime
    original_size: int = 0
    original_sha256: str = ""
    original_truncated: bool = False

    @classmethod
    def of(cls, *, service: str, topic: str, partition: int, offset: int, key: bytes | None, error: str,
           original: bytes, received_at: datetime) -> "DeadLetter":
        """A letter whose size is bounded whatever the record: ``original`` cut to its first
        :data:`MAX_DEAD_LETTER_ORIGINAL` bytes (said so by ``original_truncated``, with the whole value's size
        and SHA-256), ``key`` (decoded as UTF-8, bad bytes replaced) and ``error`` to
        :data:`MAX_DEAD_LETTER_TEXT` characters (a cut text ends with ``"…"``)."""
        text = key.decode("utf-8", "replace") if key else None
        return cls(service=service, topic=topic, partition=partition, offset=offset,
                   key=_cut(text) if text is not None else None, error=_cut(error),
                   original=original[:MAX_DEAD_LETTER_ORIGINAL], received_at=received_at,
                   original_size=len(original), original_sha256=hashlib.sha256(original).hexdigest(),
                   original_truncated=len(original) > MAX_DEAD_LETTER_ORIGINAL)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_DEAD_LETTER_TEXT else text[:MAX_DEAD_LETTER_TEXT - 1] + "…"
