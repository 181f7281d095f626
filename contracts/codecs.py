"""One reusable JSON encoder/decoder per message type, and the decode that tells garbage from the unknown.

:func:`decode_event` / :func:`decode_command` return the message, or raise :class:`UnknownMessageType`
for a well-formed message whose ``payload.type`` this version does not know (consumers skip and log it:
the evolution rules), or :class:`Undecodable` for anything else (the service dead-letters it).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from contracts.commands import AnyCommand
from contracts.envelope import CommandEnvelope, DeadLetter, Envelope
from contracts.events import AnyEvent

_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(Envelope)
_command_decoder = msgspec.json.Decoder(CommandEnvelope)
_dead_letter_decoder = msgspec.json.Decoder(DeadLetter)


class _EventProbe(msgspec.Struct):
    """An event envelope with its payload left as a plain mapping: is the envelope itself sound?"""

    event_id: str
    stream: str
    table_id: str
    seq: int
    causation_id: str
    correlation_id: str
    occurred_at: datetime
    payload: dict[str, object]


class _CommandProbe(msgspec.Struct):
    """A command envelope with its payload left as a plain mapping."""

    command_id: str
    table_id: str
    issued_at: datetime
    payload: dict[str, object]


_event_probe = msgspec.json.Decoder(_EventProbe)
_command_probe = msgspec.json.Decoder(_CommandProbe)


class Undecodable(ValueError):
    """Bytes that are not a valid message of the expected kind."""


class UnknownMessageType(ValueError):
    """A well-formed envelope whose payload type this version does not know."""

    def __init__(self, type_name: str):
        super().__init__(f"unknown message type {type_name!r}")
        self.type_name = type_name


def encode(message: msgspec.Struct) -> bytes:
    """JSON bytes of an envelope, command, event or dead letter."""
    return _encoder.encode(message)


def _classify(data: bytes, error: Exception, probe: msgspec.json.Decoder, known: set[str],
              other: set[str], kind: str) -> Exception:
    """Why a message failed to decode: an unknown payload type in a sound envelope (skip it), or garbage,
    including a command on an events topic or an event on a command topic (dead-letter it)."""
    try:
        envelope = probe.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Undecodable(str(error))
    t = envelope.payload.get("type")
    if isinstance(t, str) and t in other:
        return Undecodable(f"{t!r} is not {kind}: misrouted message")
    if isinstance(t, str) and t not in known:
        return UnknownMessageType(t)
    return Undecodable(str(error))


def _tags(union: object) -> set[str]:
    return {t.__struct_config__.tag for t in union.__args__}  # type: ignore[attr-defined]


EVENT_TAGS = _tags(AnyEvent)
COMMAND_TAGS = _tags(AnyCommand)


def decode_event(data: bytes) -> Envelope:
    """Decode an event envelope; raises :class:`UnknownMessageType` or :class:`Undecodable`."""
    try:
        return _event_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise _classify(data, e, _event_probe, EVENT_TAGS, COMMAND_TAGS, "an event") from None


def decode_command(data: bytes) -> CommandEnvelope:
    """Decode a command envelope; raises :class:`UnknownMessageType` or :class:`Undecodable`."""
    try:
        return _command_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise _classify(data, e, _command_probe, COMMAND_TAGS, EVENT_TAGS, "a command") from None


def decode_dead_letter(data: bytes) -> DeadLetter:
    """Decode a dead letter (raises msgspec errors on garbage: the DLQ is written only by us)."""
    return _dead_letter_decoder.decode(data)
