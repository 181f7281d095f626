"""The cage's double-entry journal: every stake, payout, void and commission as balanced entries.

Pure: no I/O, no clock, no randomness; every time comes from the events. Money is integer cents.

Sign convention
---------------
Each line is ``(account, amount_cents)``; **debits are positive, credits negative**, and the lines of every
entry sum to exactly 0. The journal follows the cents: the account that *receives* cents is debited, the
one that *gives* them is credited, so an account's balance is the net number of cents it has received.

Accounts (ids are used verbatim; ``T`` table id, ``S`` seat number, ``P`` player id):

========================================== ==================================================================
account                                    balance (debit +, credit -)
========================================== ==================================================================
``patron:{P}``                             the patron's net position against the house in cents actually
                                           handed over: + the patron is up, - the patron is down. Unpaid
                                           accrued commission is not in it until collected (it is on the
                                           seat's commission account).
``table:{T}:wagers``                       stakes on the layout: taken at "No more bets", not yet settled
                                           (+ = held). Back to 0 once every bet of the table is settled.
``table:{T}:game``                         the house's gaming result from play, commission excluded:
                                           + the house won, - the house lost.
``table:{T}:commission``                   commission earned (deducted at payout or accrued to a seat), +.
``table:{T}:seat:{S}:commission_owed``     the seat's commission account: credit (-) = commission accrued
                                           and not yet collected, i.e. the house's receivable from the seat.
========================================== ==================================================================

The house's result of a table (:meth:`Ledger.table_result`) is ``game + commission``: for any round it is
``stakes - payouts + commission accrued``, i.e. ``RoundSettled.table_result``. The patrons' accounts, the
wagers held and the seats' commission accounts make up the other side: over the whole journal
``sum(patron) + wagers + game + commission + sum(commission_owed) == 0``.

Entries (``kind``; lines in cents; ``S`` stake, ``G`` = payout + deducted commission, ``C`` commission)
------------------------------------------------------------------------------------------------------
* ``stake_taken`` (``BettingClosed``, one per bet of the final book): ``patron -S``, ``wagers +S``.
  Booked from the closed book rather than ``BetPlaced``: the closed book is what the settlement service
  settles (a withdrawn bet never reaches it, a book voided before "No more bets" is closed as it stands and
  then voided), so every stake taken has exactly one settlement and ``wagers`` returns to 0, with no
  reversing entries for withdrawals.
* ``bet_won`` / ``bet_lost`` / ``bet_voided`` (``BetSettled``, entry 0): ``wagers -S``,
  ``game S-G``, ``patron +G`` (zero lines omitted). A loss: ``wagers -S, game +S``; a void: ``wagers -S,
  patron +S``; a win: the patron receives stake plus gross winnings, the house's game loses the winnings.
* ``commission_deducted`` (``BetSettled`` with deducted commission, entry 1): ``patron -C``,
  ``commission +C`` (so the patron nets ``payout - stake``).
* ``commission_accrued`` (``CommissionAccrued``; ``BetSettled`` rows with ``commission_accrued`` book no
  commission, the per-seat event does): ``commission_owed -C``, ``commission +C``.
* ``commission_collected`` (``CommissionCollected``): ``patron -C``, ``commission_owed +C``.
* ``bank_settled`` (``BankSettled``, chemin de fer, entry 0): the bets were against the bank a participant
  holds, not the house: ``game -W``, ``patron:{Banker} +W`` with ``W`` the bank's ``won_cents`` (what the
  round's bets put in ``game``), so the house's game nets 0 on the round; entry 1 (``commission_deducted``),
  when the house's commission on the bank's winnings is deducted: ``patron:{Banker} -C``, ``commission +C``
  (accrued: booked from ``CommissionAccrued``). The house's result of the round is its commission.

``entry_id`` is ``"{source_event_id}/{index}"`` (index: the bet's position in the closed book, or 0/1 for
a settlement and its deducted commission), so a re-delivered event yields the same ids.

Scope of an entry: ``table_id``; ``round_id``; ``shoe_id`` (the envelope's, else learnt from the table's
``RoundOpened``/``RoundResolved``/any envelope naming both round and shoe, whenever those arrive: the
settlement service's envelopes carry no shoe id); ``gaming_day`` (:func:`gaming_day`). A
``CommissionCollected`` belongs to no round, hence to no shoe: shoe filters leave it out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from operator import attrgetter

import msgspec

from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    BetSettled,
    BettingClosed,
    CommissionAccrued,
    CommissionCollected,
    RoundOpened,
    RoundResolved,
)

DEFAULT_CUTOFF_HOUR = 6
DIGEST_VERSION = b"croupier.ledger/v1\n"

STAKE_TAKEN = "stake_taken"
BET_WON = "bet_won"
BET_LOST = "bet_lost"
BET_VOIDED = "bet_voided"
BET_SETTLED = "bet_settled"  # a settlement whose result this version does not know
COMMISSION_DEDUCTED = "commission_deducted"
COMMISSION_ACCRUED = "commission_accrued"
COMMISSION_COLLECTED = "commission_collected"
BANK_SETTLED = "bank_settled"
_RESULT_KIND = {"win": BET_WON, "lose": BET_LOST, "void": BET_VOIDED}


# ---- accounts --------------------------------------------------------------------------------------
def patron_account(player_id: str) -> str:
    """``patron:{player_id}``: the patron's net position (+ up, - down), cents handed over."""
    return f"patron:{player_id}"


def wagers_account(table_id: str) -> str:
    """``table:{T}:wagers``: stakes held on the layout, taken and not yet settled (+)."""
    return f"table:{table_id}:wagers"


def game_account(table_id: str) -> str:
    """``table:{T}:game``: the house's gaming result, commission excluded (+ house won)."""
    return f"table:{table_id}:game"


def commission_account(table_id: str) -> str:
    """``table:{T}:commission``: commission earned, deducted or accrued (+)."""
    return f"table:{table_id}:commission"


def commission_owed_account(table_id: str, seat: int) -> str:
    """``table:{T}:seat:{S}:commission_owed``: - the commission the seat owes (accrued, not collected)."""
    return f"table:{table_id}:seat:{seat}:commission_owed"


# ---- entries ---------------------------------------------------------------------------------------
Line = tuple[str, int]


class Entry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One balanced journal entry. ``lines``: ``(account, amount_cents)``, debits positive, summing to 0.

    ``gaming_day``: ``YYYY-MM-DD``; ``occurred_at``: the source event's time, UTC; ``shoe_id``/``round_id``/
    ``seat``/``player_id``/``bet_id``: None where the source event has none.
    """

    entry_id: str
    kind: str
    table_id: str
    shoe_id: str | None
    round_id: str | None
    seat: int | None
    player_id: str | None
    bet_id: str | None
    gaming_day: str
    occurred_at: datetime
    source_event_id: str
    lines: tuple[Line, ...]

    @property
    def total(self) -> int:
        """Sum of the lines in cents: 0 for every entry this module makes."""
        return sum(a for _, a in self.lines)


_HOURS = tuple(timedelta(hours=h) for h in range(24))


def _utc(at: datetime) -> datetime:
    tz = at.tzinfo
    if tz is UTC:
        return at
    return at.replace(tzinfo=UTC) if tz is None else at.astimezone(UTC)


def gaming_day(at: datetime, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> str:
    """The gaming day (``YYYY-MM-DD``) of an instant: its UTC calendar date after moving it back by
    ``cutoff_hour`` hours (0-23), so with the default 6 an event at 03:00 UTC belongs to the previous day
    and one at 06:00 to the same day. A naive datetime is taken as UTC."""
    if not 0 <= cutoff_hour <= 23:
        raise ValueError(f"cutoff_hour must be an hour 0-23, got {cutoff_hour!r}")
    return (_utc(at) - _HOURS[cutoff_hour]).date().isoformat()


def _lines(*pairs: Line) -> tuple[Line, ...]:
    return tuple([p for p in pairs if p[1]])


def stake_entries(env: Envelope, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> tuple[Entry, ...]:
    """``BettingClosed``: one ``stake_taken`` per bet of the final book (``patron -S``, ``wagers +S``)."""
    e = env.payload
    assert isinstance(e, BettingClosed)
    t, at = env.table_id, _utc(env.occurred_at)
    day, wagers = gaming_day(at, cutoff_hour), wagers_account(t)
    return tuple(
        Entry(entry_id=f"{env.event_id}/{i}", kind=STAKE_TAKEN, table_id=t, shoe_id=env.shoe_id,
              round_id=e.round_id or None, seat=b.seat, player_id=b.player_id, bet_id=b.bet_id, gaming_day=day,
              occurred_at=at, source_event_id=env.event_id,
              lines=((patron_account(b.player_id), -b.amount_cents), (wagers, b.amount_cents)))
        for i, b in enumerate(e.bets) if b.amount_cents
    )


def settlement_entries(env: Envelope, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> tuple[Entry, ...]:
    """``BetSettled``: the settlement (entry 0) and the deducted commission if any (entry 1).

    With ``G = payout + deducted commission`` (what the bet returns before commission): ``wagers -stake``,
    ``game stake - G``, ``patron +G``; then ``patron -C``, ``commission +C``. Accrued commission is booked
    from ``CommissionAccrued``, not here."""
    e = env.payload
    assert isinstance(e, BetSettled)
    t, at = env.table_id, _utc(env.occurred_at)
    deducted = 0 if e.commission_accrued else e.commission
    gross = e.payout + deducted
    patron, eid, day = patron_account(e.player_id), env.event_id, gaming_day(at, cutoff_hour)
    lines = _lines((wagers_account(t), -e.stake), (game_account(t), e.stake - gross), (patron, gross))
    settled = Entry(entry_id=f"{eid}/0", kind=_RESULT_KIND.get(e.result, BET_SETTLED), table_id=t,
                    shoe_id=env.shoe_id, round_id=e.round_id or None, seat=e.seat, player_id=e.player_id,
                    bet_id=e.bet_id, gaming_day=day, occurred_at=at, source_event_id=eid, lines=lines)
    if not deducted:
        return (settled,) if lines else ()
    commission = msgspec.structs.replace(settled, entry_id=f"{eid}/1", kind=COMMISSION_DEDUCTED,
                                         lines=((patron, -deducted), (commission_account(t), deducted)))
    return (settled, commission) if lines else (commission,)


def commission_entries(env: Envelope, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> tuple[Entry, ...]:
    """``CommissionAccrued``: ``commission_owed -C``, ``commission +C``. ``CommissionCollected``:
    ``patron -C``, ``commission_owed +C``."""
    e = env.payload
    t, at = env.table_id, _utc(env.occurred_at)
    if isinstance(e, CommissionAccrued):
        kind, round_id = COMMISSION_ACCRUED, e.round_id or env.round_id
        lines = _lines((commission_owed_account(t, e.seat), -e.amount_cents),
                       (commission_account(t), e.amount_cents))
    elif isinstance(e, CommissionCollected):
        kind, round_id = COMMISSION_COLLECTED, env.round_id
        lines = _lines((patron_account(e.player_id), -e.amount_cents),
                       (commission_owed_account(t, e.seat), e.amount_cents))
    else:
        raise TypeError(f"not a commission event: {type(e).__name__}")
    if not lines:
        return ()
    return (Entry(entry_id=f"{env.event_id}/0", kind=kind, table_id=t, shoe_id=env.shoe_id,
                  round_id=round_id or None, seat=e.seat, player_id=e.player_id, bet_id=None,
                  gaming_day=gaming_day(at, cutoff_hour), occurred_at=at, source_event_id=env.event_id,
                  lines=lines),)


def bank_entries(env: Envelope, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> tuple[Entry, ...]:
    """``BankSettled`` (chemin de fer): ``game -W``, ``patron:{Banker} +W`` (entry 0, ``W`` = the bank's
    ``won_cents``), then, when the commission is deducted, ``patron:{Banker} -C``, ``commission +C``."""
    e = env.payload
    assert isinstance(e, BankSettled)
    t, at = env.table_id, _utc(env.occurred_at)
    patron, eid, day = patron_account(e.player_id), env.event_id, gaming_day(at, cutoff_hour)
    base = Entry(entry_id=f"{eid}/0", kind=BANK_SETTLED, table_id=t, shoe_id=env.shoe_id,
                 round_id=e.round_id or None, seat=e.seat, player_id=e.player_id, bet_id=None, gaming_day=day,
                 occurred_at=at, source_event_id=eid,
                 lines=_lines((game_account(t), -e.won_cents), (patron, e.won_cents)))
    out = [base] if base.lines else []
    if e.commission_cents and not e.commission_accrued:
        out.append(msgspec.structs.replace(base, entry_id=f"{eid}/1", kind=COMMISSION_DEDUCTED, lines=(
            (patron, -e.commission_cents), (commission_account(t), e.commission_cents))))
    return tuple(out)


def book(env: Envelope, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> tuple[Entry, ...]:
    """The entries one event books (empty for every event type the ledger does not book)."""
    e = env.payload
    if isinstance(e, BankSettled):
        return bank_entries(env, cutoff_hour)
    if isinstance(e, BetSettled):
        return settlement_entries(env, cutoff_hour)
    if isinstance(e, BettingClosed):
        return stake_entries(env, cutoff_hour)
    if isinstance(e, (CommissionAccrued, CommissionCollected)):
        return commission_entries(env, cutoff_hour)
    return ()


def shoe_fact(env: Envelope) -> tuple[str, str] | None:
    """``(round_id, shoe_id)`` if the event says which shoe a round is dealt from."""
    e = env.payload
    if isinstance(e, (RoundOpened, RoundResolved)):
        return e.round_id, e.shoe_id
    if env.round_id and env.shoe_id:
        return env.round_id, env.shoe_id
    return None


# ---- the ledger ------------------------------------------------------------------------------------
class _Journal:
    """Append-only storage shared by successive :class:`Ledger` snapshots (never exposed)."""

    __slots__ = ("entries", "event_at", "events", "round_shoe")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.events: list[str] = []  # ids of the events that changed the ledger, in posting order
        self.event_at: dict[str, int] = {}  # event id -> its index in ``events``
        self.round_shoe: dict[tuple[str, str], tuple[str, int]] = {}  # (table, round) -> (shoe, event index)

    def upto(self, n_events: int, n_entries: int) -> _Journal:
        j = _Journal()
        j.entries = self.entries[:n_entries]
        j.events = self.events[:n_events]
        j.event_at = {eid: i for i, eid in enumerate(j.events)}
        j.round_shoe = {k: v for k, v in self.round_shoe.items() if v[1] < n_events}
        return j


class Ledger:
    """The journal as an immutable value: :meth:`post` returns a new ledger, the old one is unchanged.

    Snapshots share one append-only store; posting to a snapshot that is not the newest copies the store
    first (copy-on-write), so folding is O(1) per event. Idempotent: an event already booked (same
    ``event_id``) books nothing. Two ledgers are equal when their entries are (:meth:`state_digest`),
    whatever the order or the duplicates in which the same events arrived.
    """

    __slots__ = ("_cutoff", "_digest", "_j", "_n_entries", "_n_events")

    def __init__(self, cutoff_hour: int = DEFAULT_CUTOFF_HOUR) -> None:
        if not isinstance(cutoff_hour, int) or not 0 <= cutoff_hour <= 23:
            raise ValueError(f"cutoff_hour must be an hour 0-23, got {cutoff_hour!r}")
        self._j = _Journal()
        self._n_events = 0
        self._n_entries = 0
        self._cutoff = cutoff_hour
        self._digest: str | None = None

    @classmethod
    def _snapshot(cls, j: _Journal, n_events: int, n_entries: int, cutoff: int) -> Ledger:
        led = cls.__new__(cls)
        led._j, led._n_events, led._n_entries, led._cutoff, led._digest = j, n_events, n_entries, cutoff, None
        return led

    @property
    def cutoff_hour(self) -> int:
        """Hour (UTC) at which a gaming day starts."""
        return self._cutoff

    # -- folding ---------------------------------------------------------------------------------
    def post(self, env: Envelope) -> Ledger:
        """This ledger with ``env`` folded in (``self`` itself if it books nothing new)."""
        return self.post_with_entries(env)[0]

    def post_all(self, envs: Iterable[Envelope]) -> Ledger:
        """Fold every envelope of ``envs`` in order."""
        led = self
        for env in envs:
            led = led.post_with_entries(env)[0]
        return led

    def post_with_entries(self, env: Envelope) -> tuple[Ledger, tuple[Entry, ...]]:
        """Fold ``env``; returns the new ledger and the entries it booked (empty for a duplicate or an
        event the ledger does not book; then the ledger returned is ``self``)."""
        j = self._j
        i = j.event_at.get(env.event_id)
        if i is not None and i < self._n_events:
            return self, ()
        new = book(env, self._cutoff)
        fact = shoe_fact(env)
        key = (env.table_id, fact[0]) if fact else None
        if key is not None and self._shoe_of(key) is not None:
            fact = None  # the first word on a round's shoe stands
        if not new and fact is None:
            return self, ()
        if len(j.events) != self._n_events or len(j.entries) != self._n_entries:
            j = j.upto(self._n_events, self._n_entries)  # a branch from an older snapshot: copy on write
        at = len(j.events)
        j.events.append(env.event_id)
        j.event_at[env.event_id] = at
        if fact is not None and key is not None:
            j.round_shoe[key] = (fact[1], at)
        led = Ledger._snapshot(j, at + 1, self._n_entries + len(new), self._cutoff)
        if new and new[0].shoe_id is None and new[0].round_id is not None:
            new = tuple([led._resolve(x) for x in new])  # stored with the shoe if already known
        j.entries.extend(new)
        return led, new

    # -- reading ---------------------------------------------------------------------------------
    def _shoe_of(self, key: tuple[str, str]) -> str | None:
        v = self._j.round_shoe.get(key)
        return v[0] if v is not None and v[1] < self._n_events else None

    def _resolve(self, x: Entry) -> Entry:
        if x.shoe_id is None and x.round_id is not None:
            shoe = self._shoe_of((x.table_id, x.round_id))
            if shoe is not None:
                return msgspec.structs.replace(x, shoe_id=shoe)
        return x

    def _select(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                gaming_day: str | date | None = None, round_id: str | None = None) -> Iterator[Entry]:
        day = gaming_day.isoformat() if isinstance(gaming_day, date) else gaming_day
        for x in islice(self._j.entries, self._n_entries):
            if ((table_id is not None and x.table_id != table_id)
                    or (player_id is not None and x.player_id != player_id)
                    or (day is not None and x.gaming_day != day)
                    or (round_id is not None and x.round_id != round_id)):
                continue
            x = self._resolve(x)
            if shoe_id is not None and x.shoe_id != shoe_id:
                continue
            yield x

    def entries(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                gaming_day: str | date | None = None, round_id: str | None = None) -> tuple[Entry, ...]:
        """The entries in posting order, narrowed by every filter given (None: any). ``gaming_day``:
        ``YYYY-MM-DD`` or a date. ``shoe_id`` matches the entry's shoe as known now."""
        return tuple(self._select(table_id, player_id, shoe_id, gaming_day, round_id))

    def balances(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                 gaming_day: str | date | None = None, round_id: str | None = None) -> dict[str, int]:
        """``{account: balance_cents}`` (debits +) over the entries :meth:`entries` selects, sorted by
        account; every account those entries touch is present, even at 0."""
        out: dict[str, int] = {}
        for x in self._select(table_id, player_id, shoe_id, gaming_day, round_id):
            for a, c in x.lines:
                out[a] = out.get(a, 0) + c
        return dict(sorted(out.items()))

    def table_result(self, table_id: str, shoe_id: str | None = None,
                     gaming_day: str | date | None = None) -> int:
        """The house's result at ``table_id`` in cents (+ won): ``game + commission`` over the scope; equal
        to the sum of ``RoundSettled.table_result`` of the same table, shoe and gaming day."""
        game, comm = game_account(table_id), commission_account(table_id)
        return sum(c for x in self._select(table_id, None, shoe_id, gaming_day)
                   for a, c in x.lines if a == game or a == comm)

    def __len__(self) -> int:
        return self._n_entries

    def state_digest(self) -> str:
        """SHA-256 hex of the journal in canonical form: the entries (shoe ids resolved) sorted by
        ``entry_id``, one JSON line each, after a version line. Independent of delivery order and
        duplicates; any differing amount, account, time or scope changes it."""
        if self._digest is None:
            h = hashlib.sha256(DIGEST_VERSION)
            ordered = sorted((self._resolve(x) for x in islice(self._j.entries, self._n_entries)),
                             key=attrgetter("entry_id"))
            enc = msgspec.json.Encoder()
            for k in range(0, len(ordered), 8192):
                h.update(enc.encode_lines(ordered[k:k + 8192]))
            self._digest = h.hexdigest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ledger):
            return NotImplemented
        return self._cutoff == other._cutoff and self.state_digest() == other.state_digest()

    def __hash__(self) -> int:
        return hash((self._cutoff, self.state_digest()))

    def __repr__(self) -> str:
        return f"Ledger(entries={self._n_entries}, cutoff_hour={self._cutoff})"
