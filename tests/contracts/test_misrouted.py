"""A command on an events topic (or an event on a command topic) is garbage there, not an unknown type."""

from datetime import datetime, timezone

import pytest

from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event, encode
from contracts.commands import CloseBetting
from contracts.envelope import CommandEnvelope, Envelope, event_id
from contracts.events import BettingOpened

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
CMD = encode(CommandEnvelope(command_id="c", table_id="T", issued_at=AT, payload=CloseBetting(round_id="R")))
EVT = encode(Envelope(event_id=event_id("wagering.events", "T", 1), stream="wagering.events", table_id="T", seq=1,
                      causation_id="c", correlation_id="R", occurred_at=AT, payload=BettingOpened(round_id="R")))


def test_misrouted_messages_are_undecodable():
    with pytest.raises(Undecodable):
        decode_event(CMD)
    with pytest.raises(Undecodable):
        decode_command(EVT)


def test_an_unknown_type_needs_a_sound_envelope():
    with pytest.raises(UnknownMessageType):
        decode_event(EVT.replace(b'"betting_opened"', b'"betting_reopened"'))
    with pytest.raises(Undecodable):
        decode_event(b'{"payload":{"type":"betting_reopened"}}')
    broken = EVT.replace(b'"seq":1', b'"seq":"x"').replace(b'"betting_opened"', b'"betting_reopened"')
    with pytest.raises(Undecodable):
        decode_event(broken)
