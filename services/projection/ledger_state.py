"""The projection's view of one table's cage ledger: running totals plus a window of the latest entries.

Bounded and encodable (a msgspec struct, for snapshots): instead of every entry since the table opened
(:class:`services.projection.ledger.Ledger`, the journal as a library), it keeps

* running balances (cents, debits +) per account, exact whatever the window holds, for the whole table
  (``*``), per player (``p:<id>``), for the current gaming day (``d:<day>``, ``d:<day>|p:<id>``) and per
  shoe of the current and the previous gaming day (``s:<shoe>``, ``s:<shoe>|p:<id>``, ``s:<shoe>|d:<day>``,
  ``s:<shoe>|d:<day>|p:<id>``): what ``/ledger`` answers;
* the latest :data:`ENTRY_WINDOW` entries of each source stream (``recent``: stream -> chunks of
  :data:`CHUNK`, so that an append copies at most one chunk and the list of chunks), for
  ``/ledger/entries``; ``dropped`` counts the entries that left the window. The window is per stream because
  a stream's order is the log's, the same live and in a replay (which folds one stream after another), so
  a rebuilt projection holds exactly the entries the live one holds. The whole journal is on ``projection.ledger``. Holding every entry of the
  gaming day made the state grow with the day (2.3 MB of msgpack a table after 500 rounds, 98 % of the
  projection's snapshot), and a restart decode it all;
* which shoe each round of the current and the previous gaming day is dealt from (``round_shoe``, learnt
  from ``RoundOpened``/``RoundResolved`` or any envelope naming both): the settlement service's envelopes
  carry no shoe id, so an entry whose shoe is not known yet waits in ``unshod`` (by round) and is added to
  its shoe's balances when the shoe is learnt, whichever of the two arrived first.

Duplicates are not detected here: the runner drops a re-delivered input by its per-stream ``seq`` before the
core sees it. Entries are made by :func:`services.projection.ledger.book` (sign convention and accounts
there).
"""

from __future__ import annotations

import hashlib
import heapq
from datetime import date, datetime

import msgspec

from services.projection.ledger import DEFAULT_CUTOFF_HOUR, Entry, commission_account, game_account
from services.projection.pmap import PMap

CHUNK = 64
#: entries held per source stream for /ledger/entries: about the last 30 rounds of three players' bets. The
#: window is in every snapshot and so in every restore: at 512 it was 86 % of a table's projection state
#: (336 of 391 kB at 500 rounds); the whole journal pages through /ledger/journal.
ENTRY_WINDOW = 128
DIGEST_VERSION = b"croupier.ledger-state/v2\n"


def _day_str(day: str | date | None) -> str | None:
    return day.isoformat() if isinstance(day, date) else day


def _add(totals: dict[str, dict[str, int]], scopes: list[str], x: Entry) -> None:
    for s in scopes:
        acc = dict(totals.get(s, {}))
        for a, c in x.lines:
            acc[a] = acc.get(a, 0) + c
        totals[s] = acc


def _at(x: Entry) -> datetime:
    return x.occurred_at


def _shoe_scopes(x: Entry, shoe_id: str) -> list[str]:
    base = f"s:{shoe_id}"
    out = [base, f"{base}|d:{x.gaming_day}"]
    if x.player_id is not None:
        out += [f"{base}|p:{x.player_id}", f"{base}|d:{x.gaming_day}|p:{x.player_id}"]
    return out


class LedgerState(msgspec.Struct, frozen=True, kw_only=True):
    """One table's ledger as the projection holds it. ``day``: the latest gaming day booked (``YYYY-MM-DD``,
    "" before any entry); ``recent``: source stream -> its latest :data:`ENTRY_WINDOW` entries in chunks
    (at most ``ENTRY_WINDOW + CHUNK`` held a stream); ``dropped``: entries no longer held; ``totals``: scope -> account ->
    cents; ``round_shoe``: round id -> ``(shoe id, gaming day of the fact)``; ``fact_day``: the latest such
    day; ``unshod``: round id -> entries booked before that round's shoe was known."""

    cutoff_hour: int = DEFAULT_CUTOFF_HOUR
    day: str = ""
    recent: dict[str, tuple[tuple[Entry, ...], ...]] = {}
    dropped: int = 0
    totals: dict[str, dict[str, int]] = {}
    round_shoe: PMap[tuple[str, str]] = PMap()
    fact_day: str = ""
    unshod: PMap[tuple[Entry, ...]] = PMap()

    # -- folding ---------------------------------------------------------------------------------
    def learn_shoe(self, round_id: str, shoe_id: str, day: str) -> LedgerState:
        """Record that ``round_id`` is dealt from ``shoe_id`` (the first word stands) and book the round's
        waiting entries to the shoe. On a new gaming day (one scan each), what can no longer be asked is
        dropped: the facts of the shoes with no round in the current or previous gaming day (a live shoe
        keeps all its rounds, so a shoe that straddles the cutoff keeps its older rounds' entries), those
        shoes' balances, and waiting entries older than the previous gaming day."""
        if not round_id or not shoe_id or round_id in self.round_shoe:
            return self
        rs, fact_day, unshod, totals = self.round_shoe, self.fact_day, self.unshod, self.totals
        if day > fact_day:
            prev = _previous_day(day)
            live = {s for _, (s, d) in rs.items() if d >= prev} | {shoe_id}
            for r, (s, _) in list(rs.items()):
                if s not in live:
                    rs = rs.remove(r)
            unshod = _prune_unshod(unshod, prev)
            totals = {k: v for k, v in totals.items() if not k.startswith("s:") or k[2:].split("|")[0] in live}
            fact_day = day
        elif day < _previous_day(fact_day):
            return self
        waiting = unshod.get(round_id)
        if waiting:
            unshod = unshod.remove(round_id)
            totals = dict(totals)
            for x in waiting:
                _add(totals, _shoe_scopes(x, shoe_id), x)
        return msgspec.structs.replace(self, round_shoe=rs.set(round_id, (shoe_id, day)), fact_day=fact_day,
                                       unshod=unshod, totals=totals)

    def post(self, new: tuple[Entry, ...], stream: str = "") -> LedgerState:
        """Book ``new`` (entries of one event of ``stream``): totals (the shoe's now, or once it is learnt)
        and the stream's window."""
        if not new:
            return self
        day, unshod = self.day, self.unshod
        d = new[0].gaming_day
        if d > day:
            day = d
            totals = {k: v for k, v in self.totals.items() if not k.startswith("d:")}
            unshod = _prune_unshod(unshod, _previous_day(d))
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
            shoe = self._shoe_of(x)
            if shoe is not None:
                scopes += _shoe_scopes(x, shoe)
            elif x.round_id is not None and x.gaming_day >= _previous_day(self.fact_day):
                # its shoe is not known yet; an older entry's shoe would no longer be answered anyway
                unshod = unshod.set(x.round_id, (unshod.get(x.round_id) or ()) + (x,))
            _add(totals, scopes, x)
        entries, dropped = self.recent.get(stream, ()), self.dropped
        last = entries[-1] if entries else ()
        if entries and len(last) + len(new) <= CHUNK:
            entries = entries[:-1] + (last + new,)
        else:
            entries = entries + (new,)
        held = sum(len(c) for c in entries)
        while len(entries) > 1 and held - len(entries[0]) >= ENTRY_WINDOW:
            held -= len(entries[0])
            dropped += len(entries[0])
            entries = entries[1:]
        return msgspec.structs.replace(self, day=day, recent={**self.recent, stream: entries}, dropped=dropped,
                                       totals=totals, unshod=unshod)

    # -- reading ---------------------------------------------------------------------------------
    def _shoe_of(self, x: Entry) -> str | None:
        if x.shoe_id is not None:
            return x.shoe_id
        if x.round_id is not None:
            got = self.round_shoe.get(x.round_id)
            if got is not None:
                return got[0]
        return None

    def _resolve(self, x: Entry) -> Entry:
        if x.shoe_id is None and x.round_id is not None:
            got = self.round_shoe.get(x.round_id)
            if got is not None:
                return msgspec.structs.replace(x, shoe_id=got[0])
        return x

    def entries(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                gaming_day: str | date | None = None) -> tuple[Entry, ...]:
        """The entries held (each source stream's latest :data:`ENTRY_WINDOW` or a few more, see
        :attr:`dropped`), oldest first (by ``occurred_at``; a stream's own order kept, streams by name at equal
        times), shoe ids resolved, narrowed by the filters given. ``table_id``: accepted, the state is one
        table's."""
        day = _day_str(gaming_day)
        out = []
        held = [[x for c in self.recent[k] for x in c] for k in sorted(self.recent)]
        for x in heapq.merge(*held, key=_at):
            if player_id is not None and x.player_id != player_id:
                continue
            if day is not None and x.gaming_day != day:
                continue
            x = self._resolve(x)
            if shoe_id is not None and x.shoe_id != shoe_id:
                continue
            out.append(x)
        return tuple(out)

    def balances(self, table_id: str | None = None, player_id: str | None = None, shoe_id: str | None = None,
                 gaming_day: str | date | None = None) -> dict[str, int]:
        """``{account: cents}`` sorted by account, from the running totals: the whole table, a player, the
        current gaming day (an older day gives ``{}``), a shoe of the current or previous gaming day (an
        older shoe gives ``{}``; a round whose shoe is not known yet is not in any shoe's), and their
        combinations. ``table_id`` is accepted for the journal's signature; the state is one table's."""
        day = _day_str(gaming_day)
        if shoe_id is not None:
            key = f"s:{shoe_id}" if day is None else f"s:{shoe_id}|d:{day}"
        else:
            key = "*" if day is None else f"d:{day}"
        if player_id is not None:
            key = f"p:{player_id}" if key == "*" else f"{key}|p:{player_id}"
        return dict(sorted(self.totals.get(key, {}).items()))

    def table_result(self, table_id: str, shoe_id: str | None = None, gaming_day: str | date | None = None) -> int:
        """The house's result at the table in cents (``game + commission``, + won) over the scope."""
        b = self.balances(shoe_id=shoe_id, gaming_day=gaming_day)
        return b.get(game_account(table_id), 0) + b.get(commission_account(table_id), 0)

    def __len__(self) -> int:
        """Entries booked, held or not."""
        return self.dropped + sum(len(c) for cs in self.recent.values() for c in cs)

    def state_digest(self) -> str:
        """SHA-256 hex over the totals, the current day, the entries held (shoe ids resolved, sorted by
        ``entry_id``) and the rounds waiting for their shoe: equal for two ledgers that booked the same
        events in any order that keeps each stream's own (the live fold and a replay that folds one stream
        after another, however many gaming days it covers; ``tests/unit/test_ledger_state.py``). One edge is
        known: a round of a shoe with no round left in the last two gaming days, settled after the cutoff
        that began the previous day, waits in a replay (its fact was dropped) where it was booked live to a
        shoe since dropped."""
        h = hashlib.sha256(DIGEST_VERSION)
        enc = msgspec.json.Encoder(order="sorted")
        h.update(enc.encode([self.cutoff_hour, self.day, self.dropped, self.totals, sorted(self.unshod.keys())]))
        held = sorted((self._resolve(x) for cs in self.recent.values() for c in cs for x in c),
                      key=lambda x: x.entry_id)
        h.update(enc.encode(held))
        return h.hexdigest()


def _prune_unshod(unshod: PMap[tuple[Entry, ...]], prev: str) -> PMap[tuple[Entry, ...]]:
    """``unshod`` without the rounds whose waiting entries are all older than ``prev`` (a gaming day)."""
    for r, xs in list(unshod.items()):
        if all(x.gaming_day < prev for x in xs):
            unshod = unshod.remove(r)
    return unshod


def _previous_day(day: str) -> str:
    if not day:
        return ""
    return date.fromordinal(date.fromisoformat(day).toordinal() - 1).isoformat()
