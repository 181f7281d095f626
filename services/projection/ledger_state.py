"""The projection's view of one table's cage ledger: running totals plus the current gaming day's entries.

Bounded and encodable (a msgspec struct, for snapshots): instead of every entry since the table opened
(:class:`services.projection.ledger.Ledger`, the journal as a library), it keeps

* running balances (cents, debits +) per account for the whole table (``*``), per player (``p:<id>``), and
  for the current gaming day (``d:<day>`` and ``d:<day>|p:<id>``): what ``/ledger`` answers without a shoe;
* the entries of the current gaming day (the latest day booked), in posting order, in chunks of
  :data:`CHUNK` so that an append copies at most one chunk and the list of chunks; shoe-scoped balances and
  ``/ledger/entries`` read them, so they cover the current gaming day;
* which shoe each round of the current and the previous gaming day is dealt from (``round_shoe``, learnt
  from ``RoundOpened``/``RoundResolved`` or any envelope naming both): the settlement service's envelopes
  carry no shoe id, so an entry's shoe is resolved when read, whichever of the two arrived first.

Duplicates are not detected here: the runner drops a re-delivered input by its per-stream ``seq`` before the
core sees it. Entries are made by :func:`services.projection.ledger.book` (sign convention and accounts
there).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import date

import msgspec

from services.projection.ledger import DEFAULT_CUTOFF_HOUR, Entry, commission_account, game_account
from services.projection.pmap import PMap

CHUNK = 256
DIGEST_VERSION = b"croupier.ledger-state/v1\n"


def _day_str(day: str | date | None) -> str | None:
    return day.isoformat() if isinstance(day, date) else day


class LedgerState(msgspec.Struct, frozen=True, kw_only=True):
    """One table's ledger as the projection holds it. ``day``: the latest gaming day booked (``YYYY-MM-DD``,
    "" before any entry); ``day_entries``: that day's entries in chunks; ``totals``: scope -> account -> cents;
    ``round_shoe``: round id -> ``(shoe id, gaming day of the fact)``; ``fact_day``: the latest such day."""

    cutoff_hour: int = DEFAULT_CUTOFF_HOUR
    day: str = ""
    day_entries: tuple[tuple[Entry, ...], ...] = ()
    totals: dict[str, dict[str, int]] = {}
    round_shoe: PMap[tuple[str, str]] = PMap()
    fact_day: str = ""

    # -- folding ---------------------------------------------------------------------------------
    def learn_shoe(self, round_id: str, shoe_id: str, day: str) -> LedgerState:
        """Record that ``round_id`` is dealt from ``shoe_id`` (the first word stands). Facts older than the
        previous gaming day of the latest fact are dropped (one scan per new gaming day)."""
        if not round_id or not shoe_id or round_id in self.round_shoe:
            return self
        rs, fact_day = self.round_shoe, self.fact_day
        if day > fact_day:
            prev = _previous_day(day)
            for r, (_, d) in list(rs.items()):
                if d < prev:
                    rs = rs.remove(r)
            fact_day = day
        elif day < _previous_day(fact_day):
            return self
        return msgspec.structs.replace(self, round_shoe=rs.set(round_id, (shoe_id, day)), fact_day=fact_day)

    def post(self, new: tuple[Entry, ...]) -> LedgerState:
        """Book ``new`` (entries of one event): totals always, the entry list if of the latest day."""
        if not new:
            return self
        day, entries = self.day, self.day_entries
        d = new[0].gaming_day
        if d > day:
            day, entries = d, ()
            totals = {k: v for k, v in self.totals.items() if not k.startswith("d:")}
        else:
            totals = dict(self.totals)
        for x in new:
            scopes = ["*"]
            if x.player_id is not None:
                scopes.append(f"p:{x.player_id}")
            if x.gaming_day == day:
                scopes.append(f"d:{day}")
                if x.player_id is not None:
                    scopes.append(f"d:{day}|p:{x.player_id}")
            for s in scopes:
                acc = dict(totals.get(s, {}))
                for a, c in x.lines:
                    acc[a] = acc.get(a, 0) + c
                totals[s] = acc
        held = tuple(x for x in new if x.gaming_day == day)
        if held:
            last = entries[-1] if entries else ()
            if len(last) + len(held) <= CHUNK and entries:
                entries = entries[:-1] + (last + held,)
            else:
                entries = entries + (held,)
        return msgspec.structs.replace(self, day=day, day_entries=entries, totals=totals)

    # -- reading ---------------------------------------------------------------------------------
    def _resolve(self, x: Entry) -> Entry:
        if x.shoe_id is None and x.round_id is not None:
            got = self.round_shoe.get(x.round_id)
            if got is not None:
                return msgspec.structs.replace(x, shoe_id=got[0])
        return x

    def _select(self, player_id: str | None, shoe_id: str | None, gaming_day: str | None) -> Iterator[Entry]:
        if gaming_day is not None and gaming_day != self.day:
            return
        for chunk in self.day_entries:
            for x in chunk:
                if player_id is not None and x.player_id != player_id:
                    continue
                x = self._resolve(x)
                if shoe_id is not None and x.shoe_id != shoe_id:
                    continue
                yield x

    def entries(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                gaming_day: str | date | None = None) -> tuple[Entry, ...]:
        """The current gaming day's entries in posting order, narrowed by the filters given (a gaming day
        other than the current one selects nothing: it is no longer held). ``table_id``: accepted, the state is one table's."""
        return tuple(self._select(player_id, shoe_id, _day_str(gaming_day)))

    def balances(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                 gaming_day: str | date | None = None) -> dict[str, int]:
        """``{account: cents}`` sorted by account. Without a shoe: the running totals (whole table, a player,
        the current gaming day; an older day gives ``{}``). With a shoe: summed from the entries held
        (the current gaming day's). ``table_id`` is accepted for the journal's signature; the state is one
        table's."""
        day = _day_str(gaming_day)
        if shoe_id is None:
            key = "*" if day is None else f"d:{day}"
            if player_id is not None:
                key = f"p:{player_id}" if day is None else f"{key}|p:{player_id}"
            return dict(sorted(self.totals.get(key, {}).items()))
        out: dict[str, int] = {}
        for x in self._select(player_id, shoe_id, day):
            for a, c in x.lines:
                out[a] = out.get(a, 0) + c
        return dict(sorted(out.items()))

    def table_result(self, table_id: str, shoe_id: str | None = None, gaming_day: str | date | None = None) -> int:
        """The house's result at the table in cents (``game + commission``, + won) over the scope."""
        b = self.balances(shoe_id=shoe_id, gaming_day=gaming_day)
        return b.get(game_account(table_id), 0) + b.get(commission_account(table_id), 0)

    def __len__(self) -> int:
        return sum(len(c) for c in self.day_entries)

    def state_digest(self) -> str:
        """SHA-256 hex over the totals, the current day and its entries (shoe ids resolved, sorted by
        ``entry_id``): equal for two ledgers that booked the same events in any order."""
        h = hashlib.sha256(DIGEST_VERSION)
        enc = msgspec.json.Encoder(order="sorted")
        h.update(enc.encode([self.cutoff_hour, self.day, self.totals]))
        held = sorted((self._resolve(x) for c in self.day_entries for x in c), key=lambda x: x.entry_id)
        h.update(enc.encode(held))
        return h.hexdigest()


def _previous_day(day: str) -> str:
    if not day:
        return ""
    return date.fromordinal(date.fromisoformat(day).toordinal() - 1).isoformat()
