"""The command gateway's errors: each an HTTP status and a stable reason code (:mod:`services.command_api.http`
answers them as they are; ``croupier table`` prints ``error:`` lines from them)."""

from __future__ import annotations


class CommandApiError(Exception):
    """Base of the gateway's errors; ``status`` is the HTTP status, ``reason`` a stable code."""

    status = 400
    reason = "bad_request"

    def __init__(self, detail: str, field: str = ""):
        super().__init__(detail)
        self.detail = detail
        self.field = field


class BadRequest(CommandApiError):
    """Input that cannot become a command (422): an unknown profile, a refused configuration, a field outside
    the contracts' bounds. Nothing was sent."""

    status = 422

    def __init__(self, reason: str, detail: str, field: str = ""):
        super().__init__(detail, field)
        self.reason = reason


class Forbidden(CommandApiError):
    """The role may not send this action (403). Nothing was sent."""

    status = 403
    reason = "role_not_allowed"


class OrderNotAllowed(Forbidden):
    """A ``pass_shoe`` whose ``ordered_by`` is not the caller's role's own (403): the pit orders as the
    ``floorman``; the dealer orders as the ``dealer`` or enters the curator's own pass (``""``). Nothing was
    sent."""

    reason = "ordered_by_not_allowed"


class NotYourPlayer(Forbidden):
    """A betting terminal's action (``place_bet``, ``withdraw_bet``, ``decide_option``) naming a player its
    credential is not bound to (403): a bettor credential acts only for its own player(s)
    (:mod:`services.runtime.credentials`). Nothing was sent."""

    reason = "not_your_player"


class UnknownTable(CommandApiError):
    """A command for a table the gateway has read no ``TableOpened`` of (404; ``open_table`` excepted).
    Nothing was sent."""

    status = 404
    reason = "unknown_table"


class RequestIdReused(CommandApiError):
    """The request id was used for another request (409): the gateway's own answers say so, or the events the
    first command under this id caused (read from the log) are not what this request's command would cause,
    or the service refused this one ``command_id_reused``. Nothing was sent in the first two cases when the
    gateway had read the first use before sending; otherwise the second command was sent and the service
    refused it (it changes nothing)."""

    status = 409
    reason = "request_id_reused"


class ReaderFailed(CommandApiError):
    """The gateway's reader of the event topics is failing (503): answers cannot be read. Nothing was sent
    when it was failing before the send; otherwise the command may be decided: retry with the same request
    id once the reader recovers."""

    status = 503
    reason = "reader_failed"


class AnswerTimeout(CommandApiError):
    """No answer within the timeout (504): the command was sent and may still be decided; a retry with the
    same request id sends nothing new and waits again."""

    status = 504
    reason = "timeout"


class BrokerUnavailable(CommandApiError):
    """The command could not be handed to the broker (503); it may or may not have been appended: retry with
    the same request id (a retry of a command already in the log is dropped by its service)."""

    status = 503
    reason = "broker_unavailable"

