"""What a command caused, as the gateway answers it: the :class:`Answer`, its events as plain JSON, the refusal
among them, and whether the events read under a command id are this command's (:func:`caused_by`), with the
command id a request id derives (:func:`command_id_for`) and the contracts' check of a command before it is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from contracts.codecs import Undecodable, UnknownMessageType, decode_command, encode
from contracts.commands import PassShoe
from contracts.envelope import CommandEnvelope, Envelope, derived_command_id, sender
from contracts.events import (
    BetRejected,
    CardReadRefused,
    CommandRejected,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoePassed,
)
from services.command_api.plans import Planned
from services.command_api.errors import BadRequest


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """What a command caused. ``status``: ``accepted`` | ``rejected``; ``reason``/``detail``: the rejection's
    code and words (empty when accepted); ``events``: the deciding service's events caused by the command,
    in log order, as plain envelopes (``payload`` tagged by ``type``; a burn's face-down cards are left out:
    surveillance information). ``bet_id``/``shoe_id``/``round_id``: the ids the command carries, for the
    next request."""

    request_id: str
    command_id: str
    action: str
    table_id: str
    status: str
    reason: str = ""
    detail: str = ""
    shoe_id: str = ""
    round_id: str = ""
    bet_id: str = ""
    events: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """True unless the service refused the command."""
        return self.status == "accepted"


def plain_event(env: Envelope) -> dict[str, Any]:
    """An envelope as plain JSON values (``msgspec.to_builtins``), with a burn's face-down cards removed
    (``ShoeBurned.burned`` is surveillance information; ``burned_count`` stays)."""
    out: dict[str, Any] = msgspec.to_builtins(env)
    if isinstance(env.payload, ShoeBurned):
        out["payload"].pop("burned", None)
    return out  # type: ignore[no-any-return]


def _refusal(events: list[Envelope]) -> tuple[str, str] | None:
    for e in events:
        p = e.payload
        if isinstance(p, (CommandRejected, BetRejected)):
            return p.reason, p.detail
        if isinstance(p, CardReadRefused):
            return "card_read_refused", p.reason
    return None




def command_id_for(writer: str, table_id: str, request_id: str) -> str:
    """The command id of a request: a UUIDv5 of (writer principal kind, table, request id); the same request
    id at the same table under the same principal is the same command."""
    return derived_command_id("command-api", writer, table_id, request_id)


def check_command(cmd: CommandEnvelope) -> None:
    """Raise :class:`BadRequest` (``out_of_bounds``, naming the field) unless the contracts' decoder takes
    ``cmd`` as it will arrive (a command it refuses would be dead-lettered, never answered)."""
    try:
        decode_command(encode(cmd))
    except (Undecodable, UnknownMessageType) as e:
        where = str(e).rsplit("at `", 1)
        raise BadRequest("out_of_bounds", str(e), where[1].rstrip("`") if len(where) == 2 else "") from None


#: command fields that an event of its decision carries under the same name with the same value
_SAME_FIELDS = ("round_id", "shoe_id", "seat", "player_id", "wager", "amount_cents", "bet_id", "card_number",
                "card", "cut_at", "config", "exposed", "banker_seat", "banker_player_id", "bank_cents", "hand",
                "draw")
#: the reason a service gives a second, different command under a command id its principal already used
REUSED = "command_id_reused"


def _reuse_refusal(env: Envelope) -> bool:
    return isinstance(env.payload, CommandRejected) and env.payload.reason == REUSED


def caused_by(planned: Planned, events: Iterable[Envelope]) -> bool:
    """Whether ``events`` (the deciding service's events of one cause, as read from the log) could have been
    caused by ``planned``'s command: each event's ``actor`` is the command's, a ``CommandRejected`` names its
    command type, and every field of :data:`_SAME_FIELDS` that the command sets (not None or ``""``) and an
    event carries has the same value (a void's or a shoe close's ``reason``, a pass's order, too). False
    means the request id was used for another command (its events are not this one's)."""
    cmd = planned.command
    tag = type(cmd).__struct_config__.tag
    want: dict[str, Any] = msgspec.to_builtins(cmd)
    for e in events:
        p = e.payload
        if e.actor is not None and sender(e) != planned.actor:  # a chemin de fer read: its keyer
            return False
        if isinstance(p, CommandRejected):
            if p.command != tag:
                return False
            continue
        got: dict[str, Any] = msgspec.to_builtins(p)
        for f in _SAME_FIELDS:
            if f in got and want.get(f) not in (None, ""):
                if f == "wager":  # a placed bet records the wager's name, a refused one the words sent
                    if str(got[f]).strip().lower() != want[f].strip().lower():
                        return False
                elif got[f] != want[f]:
                    return False
        if isinstance(p, (RoundVoided, ShoeClosed)) and "reason" in want and p.reason != want["reason"]:
            return False
        if isinstance(p, ShoePassed) and isinstance(cmd, PassShoe) \
                and p.reason != (f"{cmd.ordered_by}_ordered" if cmd.ordered_by else "curator_passed"):
            return False
    return True
