"""The cage's commands and events: table inventory (opener, closer), fills, credits, buy-ins, markers, the
drop box and the soft count (``cage.commands`` / ``cage.events``, keyed by table id; the cage window's own
key ``CAGE`` holds the casino-wide credit lines and markers outstanding; a marker buy-in's steps between the
table and ``CAGE`` travel on ``cage.markers``, written by the cage service alone).

Terms (``docs/cage.md``; general US practice): the **opener** and **closer** are the counts of a table's chip
tray when a shift starts and ends, by the dealer and attested by a floor supervisor; a **fill** brings chips
from the cage to the table (requested at the table, issued by the cage, received at the table), a **credit**
returns them (requested, handed over at the table, received by the cage); a **buy-in** exchanges cash (into the
drop box), a **marker** (a counter check on the patron's credit line, its copy into the drop box) or chips from
elsewhere for chips from the tray; the **soft count** counts each drop box (cash by denomination and markers) by
the count team. Every amount is integer cents; a count lists chips (or notes) by denomination and states its
total, which must be the sum (``count_mismatch`` otherwise).

Roles (``role`` of each command, the actor being the envelope's ``actor``): ``dealer``, ``supervisor``,
``cage_cashier``, ``security``, ``count_team``; which role may send which command is
:data:`services.cage.domain.ROLES`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.bounds import Code, EvCode, EvId, Id, OptPlayerId, PlayerId, Text, _doc
from contracts.base import Command, Event

#: the key of the cage window's own transactions (chips redeemed, credit lines, the markers outstanding): one
#: key, so one partition and one task decide every credit of the casino in turn
CAGE_KEY = "CAGE"
#: denominations in one count (chips: 12 colours at most on a tray; notes: $1 … $100)
MAX_DENOMINATIONS = 16
#: people named on one count (the count team: at least three, a few more allowed)
MAX_COUNTERS = 8


class ChipCount(msgspec.Struct, frozen=True):
    """``count`` pieces (chips or notes) of ``denomination_cents`` each."""

    denomination_cents: int
    count: int


Chips = Annotated[list[ChipCount], msgspec.Meta(max_length=MAX_DENOMINATIONS)]
Counters = Annotated[list[Id], msgspec.Meta(max_length=MAX_COUNTERS)]
EvChips = Annotated[list[ChipCount], _doc(maxItems=MAX_DENOMINATIONS)]
EvCounters = Annotated[list[EvId], _doc(maxItems=MAX_COUNTERS)]


# ---- cage.commands -----------------------------------------------------------------------------------------
class RecordOpener(Command, frozen=True, tag="record_opener"):
    """The opener of ``shift_id`` (gaming day ``gaming_day``, ``YYYY-MM-DD``; the table's ``pit``): the tray
    counted by the dealer (the envelope's actor, ``role`` ``dealer``) and attested by ``supervisor_id`` (another
    person). ``chips`` must add up to ``total_cents``. One opener a shift; the previous shift must be closed."""

    shift_id: Id
    gaming_day: Code
    chips: Chips
    total_cents: int
    supervisor_id: Id
    pit: Code = ""
    role: Code = "dealer"


class RecordCloser(Command, frozen=True, tag="record_closer"):
    """The closer of the open shift ``shift_id``: the tray counted by the dealer and attested by
    ``supervisor_id``; it closes the shift (no fill, credit or buy-in after it)."""

    shift_id: Id
    chips: Chips
    total_cents: int
    supervisor_id: Id
    role: Code = "dealer"


class RequestFill(Command, frozen=True, tag="request_fill"):
    """The table asks the cage for chips (``role`` ``supervisor``): fill slip ``fill_id``, by denomination."""

    fill_id: Id
    chips: Chips
    total_cents: int
    role: Code = "supervisor"


class IssueFill(Command, frozen=True, tag="issue_fill"):
    """The cage issues the requested fill ``fill_id`` (``role`` ``cage_cashier``), carried by ``runner_id``
    (security). Issued and not yet received, the fill is open."""

    fill_id: Id
    runner_id: Id
    role: Code = "cage_cashier"


class ReceiveFill(Command, frozen=True, tag="receive_fill"):
    """The dealer receives the issued fill ``fill_id`` into the tray (``role`` ``dealer``), approved by
    ``supervisor_id``: the tray grows by its total."""

    fill_id: Id
    supervisor_id: Id
    role: Code = "dealer"


class RequestCredit(Command, frozen=True, tag="request_credit"):
    """The table returns chips to the cage (``role`` ``supervisor``): credit slip ``credit_id``; refused
    ``credit_exceeds_tray`` when the tray does not hold that much."""

    credit_id: Id
    chips: Chips
    total_cents: int
    role: Code = "supervisor"


class HandOverCredit(Command, frozen=True, tag="hand_over_credit"):
    """The dealer takes the credit ``credit_id`` out of the tray and hands it to ``runner_id`` (security)."""

    credit_id: Id
    runner_id: Id
    role: Code = "dealer"


class ReceiveCredit(Command, frozen=True, tag="receive_credit"):
    """The cage receives the handed-over credit ``credit_id`` (``role`` ``cage_cashier``)."""

    credit_id: Id
    role: Code = "cage_cashier"


class SetCreditLine(Command, frozen=True, tag="set_credit_line"):
    """The cage sets ``player_id``'s casino-wide credit line to ``line_cents`` (``role`` ``cage_cashier``):
    the markers outstanding in his name, at every table together, may total that much. Sent keyed by the
    cage's own id ``CAGE`` (refused ``cage_only`` at a table's key)."""

    player_id: PlayerId
    line_cents: int
    role: Code = "cage_cashier"


class BuyIn(Command, frozen=True, tag="buy_in"):
    """``player_id`` at ``seat`` buys ``amount_cents`` of chips from the tray (``role`` ``dealer``): ``method``
    ``cash`` (into the drop box; ``cash`` the notes by denomination, optional), ``marker`` (a marker numbered
    ``buy_in_id`` on the credit line, its copy into the drop box) or ``chips`` (brought from elsewhere,
    exchanged: the tray and the drop box are unchanged)."""

    buy_in_id: Id
    seat: int
    player_id: PlayerId
    method: Code
    amount_cents: int
    cash: Chips = msgspec.field(default_factory=list)
    role: Code = "dealer"


class RemoveDropBox(Command, frozen=True, tag="remove_drop_box"):
    """The drop box of ``shift_id`` is removed from the table (``role`` ``count_team``, or ``security``)."""

    shift_id: Id
    role: Code = "count_team"


class CountDropBox(Command, frozen=True, tag="count_drop_box"):
    """The soft count of ``shift_id``'s drop box (``role`` ``count_team``; the actor and ``counters``, at least
    three distinct people with the actor): ``cash`` by denomination adding up to ``cash_cents``, ``markers``
    marker copies adding up to ``markers_cents``."""

    shift_id: Id
    cash: Chips
    cash_cents: int
    markers: int
    markers_cents: int
    counters: Counters
    role: Code = "count_team"


class RedeemChips(Command, frozen=True, tag="redeem_chips"):
    """The cage pays ``player_id`` ``amount_cents`` in ``method`` (``cash`` | ``marker_redemption``: the chips
    repay his outstanding markers, refused ``over_outstanding`` beyond them) for chips (``role``
    ``cage_cashier``); sent keyed by the cage's own id ``CAGE``."""

    redemption_id: Id
    player_id: PlayerId
    amount_cents: int
    method: Code = "cash"
    role: Code = "cage_cashier"
    card_number: OptPlayerId = ""


# ---- cage.markers (the cage service's own commands: a marker buy-in's steps) ------------------------------
class DrawMarker(Command, frozen=True, tag="draw_marker"):
    """Step 2 of a marker buy-in, sent by the cage service keyed ``CAGE`` (on ``cage.markers``) when table
    ``table_id`` reserved the chips of buy-in ``buy_in_id``: may ``player_id`` sign a marker of
    ``amount_cents`` on his casino-wide line? Answered by ``MarkerIssued`` or a ``CommandRejected``
    ``over_credit_line`` at ``CAGE``, and a :class:`SettleMarker` back to the table either way."""

    table_id: Id
    buy_in_id: Id
    player_id: PlayerId
    amount_cents: int
    role: Code = "cage"


class SettleMarker(Command, frozen=True, tag="settle_marker"):
    """Step 3 of a marker buy-in, sent by the cage service keyed by the table (on ``cage.markers``): the
    marker of buy-in ``buy_in_id`` was ``issued`` (the table books ``BoughtIn``; ``outstanding_cents`` the
    patron's markers outstanding casino-wide after it) or not (the table refuses the buy-in with ``reason``
    and ``detail`` and releases the reserved chips)."""

    buy_in_id: Id
    issued: bool
    outstanding_cents: int = 0
    reason: Code = ""
    detail: Text = ""
    role: Code = "cage"


# ---- cage.events -------------------------------------------------------------------------------------------
class ShiftOpened(Event, frozen=True, tag="shift_opened"):
    """The opener of ``shift_id``: the tray's count, by the dealer ``counted_by`` and attested by the
    supervisor ``attested_by``; the shift is open. ``last_round_id``: the last round whose settlement the cage
    had booked at the table when the opener was counted ("" for none): the shift's rounds are those settled
    after it (the audit re-derives the shift's game result from ``settlement.events`` by it)."""

    shift_id: EvId
    gaming_day: EvCode
    pit: EvCode
    chips: EvChips
    total_cents: int
    counted_by: EvId
    attested_by: EvId
    last_round_id: EvId = ""


class ShiftClosed(Event, frozen=True, tag="shift_closed"):
    """The closer of ``shift_id`` (counted and attested like the opener) and what the cage expected:
    ``expected_cents`` the tray as every buy-in, settled round, fill, credit and commission collected left
    it; ``game_result_cents`` the shift's game result (Σ ``RoundSettled.table_result`` of its rounds) and
    ``rounds`` how many; ``tray_variance_cents`` = ``total_cents`` − ``expected_cents``; ``last_round_id``: the
    last round whose settlement the cage had booked at the table when the closer was counted ("" for none):
    the shift's rounds are those settled after the opener's ``last_round_id`` up to this one."""

    shift_id: EvId
    chips: EvChips
    total_cents: int
    counted_by: EvId
    attested_by: EvId
    expected_cents: int
    game_result_cents: int
    rounds: int
    tray_variance_cents: int
    last_round_id: EvId = ""


class FillRequested(Event, frozen=True, tag="fill_requested"):
    """Fill slip ``fill_id`` of ``shift_id`` requested by ``by`` at the table."""

    fill_id: EvId
    shift_id: EvId
    chips: EvChips
    total_cents: int
    by: EvId


class FillIssued(Event, frozen=True, tag="fill_issued"):
    """The cage cashier ``by`` issued fill ``fill_id``, carried by ``runner_id``: open until received."""

    fill_id: EvId
    shift_id: EvId
    total_cents: int
    by: EvId
    runner_id: EvId


class FillReceived(Event, frozen=True, tag="fill_received"):
    """The dealer ``by`` received fill ``fill_id`` into the tray, approved by ``supervisor_id``;
    ``tray_cents`` the tray expected after it."""

    fill_id: EvId
    shift_id: EvId
    total_cents: int
    by: EvId
    supervisor_id: EvId
    tray_cents: int


class CreditRequested(Event, frozen=True, tag="credit_requested"):
    """Credit slip ``credit_id`` of ``shift_id`` requested by ``by`` at the table."""

    credit_id: EvId
    shift_id: EvId
    chips: EvChips
    total_cents: int
    by: EvId


class CreditHandedOver(Event, frozen=True, tag="credit_handed_over"):
    """The dealer ``by`` took credit ``credit_id`` out of the tray for ``runner_id``; ``tray_cents`` after."""

    credit_id: EvId
    shift_id: EvId
    total_cents: int
    by: EvId
    runner_id: EvId
    tray_cents: int


class CreditReceived(Event, frozen=True, tag="credit_received"):
    """The cage cashier ``by`` received credit ``credit_id``."""

    credit_id: EvId
    shift_id: EvId
    total_cents: int
    by: EvId


class CreditLineSet(Event, frozen=True, tag="credit_line_set"):
    """``player_id``'s credit line is ``line_cents`` (set by the cage cashier ``by``): casino-wide when at
    ``CAGE``; logs written before casino-wide lines hold it at a table's key too (per table then)."""

    player_id: EvId
    line_cents: int
    by: EvId


class BoughtIn(Event, frozen=True, tag="bought_in"):
    """``player_id`` at ``seat`` bought ``amount_cents`` of chips in ``method`` (``cash`` | ``marker`` |
    ``chips``) during ``shift_id``; ``tray_cents`` the tray expected after it; a marker's ``marker_balance_cents``
    is the patron's outstanding markers casino-wide after it (as ``MarkerIssued`` at ``CAGE`` said; at the
    table in logs written before casino-wide lines)."""

    buy_in_id: EvId
    shift_id: EvId
    seat: int
    player_id: EvId
    method: EvCode
    amount_cents: int
    tray_cents: int
    by: EvId
    marker_balance_cents: int = 0


class MarkerRequested(Event, frozen=True, tag="marker_requested"):
    """Step 1 of a marker buy-in at the table: ``player_id`` at ``seat`` asks for ``amount_cents`` of chips by
    marker ``buy_in_id`` during ``shift_id``; the chips are reserved in the tray (no other buy-in or credit
    may take them) until the cage answers. Nothing is booked: the tray expected and the drop box change at
    the ``BoughtIn``, or not at all (the buy-in's ``CommandRejected``, which releases the reservation)."""

    buy_in_id: EvId
    shift_id: EvId
    seat: int
    player_id: EvId
    amount_cents: int
    by: EvId


class MarkerIssued(Event, frozen=True, tag="marker_issued"):
    """At ``CAGE``: ``player_id`` may sign marker ``buy_in_id`` of ``amount_cents`` at table ``table_id``;
    ``outstanding_cents`` his markers outstanding casino-wide after it, within ``line_cents``."""

    table_id: EvId
    buy_in_id: EvId
    player_id: EvId
    amount_cents: int
    outstanding_cents: int
    line_cents: int


class DropBoxRemoved(Event, frozen=True, tag="drop_box_removed"):
    """The drop box of ``shift_id`` was removed by ``by``."""

    shift_id: EvId
    by: EvId


class DropBoxCounted(Event, frozen=True, tag="drop_box_counted"):
    """The soft count of ``shift_id``'s drop box by ``counters``: ``cash_cents`` (by denomination) and
    ``markers`` worth ``markers_cents``; ``drop_cents`` their sum. ``expected_cents``: what the buy-ins put in;
    ``drop_variance_cents`` = ``drop_cents`` − ``expected_cents``."""

    shift_id: EvId
    cash: EvChips
    cash_cents: int
    markers: int
    markers_cents: int
    drop_cents: int
    counters: EvCounters
    expected_cents: int
    drop_variance_cents: int


class ChipsRedeemed(Event, frozen=True, tag="chips_redeemed"):
    """The cage paid ``player_id`` ``amount_cents`` for chips (``method`` ``cash`` | ``marker_redemption``);
    a marker redemption's ``marker_balance_cents`` is his markers outstanding casino-wide after it."""

    redemption_id: EvId
    player_id: EvId
    amount_cents: int
    method: EvCode
    by: EvId
    marker_balance_cents: int = 0


CAGE_COMMANDS = (RecordOpener, RecordCloser, RequestFill, IssueFill, ReceiveFill, RequestCredit, HandOverCredit,
                 ReceiveCredit, SetCreditLine, BuyIn, RemoveDropBox, CountDropBox, RedeemChips, DrawMarker,
                 SettleMarker)
CAGE_EVENTS = (ShiftOpened, ShiftClosed, FillRequested, FillIssued, FillReceived, CreditRequested,
               CreditHandedOver, CreditReceived, CreditLineSet, BoughtIn, DropBoxRemoved, DropBoxCounted,
               ChipsRedeemed, MarkerRequested, MarkerIssued)
