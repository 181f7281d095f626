"""One reusable JSON encoder/decoder per message type, and the decode that tells garbage from the unknown.

:func:`decode_event` / :func:`decode_command` return the message, or raise :class:`UnknownMessageType`
for a well-formed message whose ``payload.type`` this version does not know (consumers skip and log it:
the evolution rules), or :class:`Undecodable` for anything else (the service dead-letters it).
"""

from __future__ import annotations

import msgspec

from contracts.commands import AnyCommand
from contracts.envelope import CommandEnvelope, DeadLetter, Envelope
from contracts.events import AnyEvent

_encoder = msgspec.json.Encoder()
_event_decoder = msgspec.json.Decoder(Envelope)
_command_decoder = msgspec.json.Decoder(CommandEnvelope)
_dead_letter_decoder = msgspec.json.Decoder(DeadLetter)


class _Probe(msgspec.Struct):
    payload: dict[str, object]


_probe_decoder = msgspec.json.Decoder(_Probe)


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


def _classify(data: bytes, error: Exception, known: set[str]) -> Exception:
    try:
        probe = _probe_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Undecodable(str(error))
    t = probe.payload.get("type")
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
        raise _classify(data, e, EVENT_TAGS) from None


def decode_command(data: bytes) -> CommandEnvelope:
    """Decode a command envelope; raises :class:`UnknownMessageType` or :class:`Undecodable`."""
    try:
        return _command_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise _classify(data, e, COMMAND_TAGS) from None


def decode_dead_letter(data: bytes) -> DeadLetter:
    """Decode a dead letter (raises msgspec errors on garbage: the DLQ is written only by us)."""
    return _dead_letter_decoder.decode(data)
