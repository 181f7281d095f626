"""Replay: a table's story rebuilt from its event log, for investigators.

The core is pure: :class:`TableStory` takes decoded envelopes (from Kafka, a file or memory) and answers
with plain, JSON-ready dicts (the ``--json`` output); :func:`render` prints the same content with Rich.
Nothing here decides anything: it re-tells what the log says, in the order it happened.

* :meth:`TableStory.round` – one round's timeline: opened, bets and rejections, "No more bets" (the
  closed book), every card with the rule that required it (``CardDealt.why``) and the shoe position it came
  from (``CardDrawn``), the point announcement, the result, each settlement, the round total, and the
  cage ledger's entries and surveillance alerts for the round when the projection's streams are in the log.
* :meth:`TableStory.shoe` – every round of a shoe, with its load (commitment), cut, burn, end and close
  (the reveal, checked against the commitment).
* :meth:`TableStory.state_at` – the table at a moment (``occurred_at``): the configuration in force, the
  shoe in play and the cards out, the round in progress and the last finished round, up to that moment.
* :meth:`TableStory.summary` – one line per round of the whole table.

Events of one round share the time of the command that caused them (the cards, the result and the
settlements all carry the time of "No more bets"), so a timeline is ordered by time, then by the phase
of the round an event belongs to, then by its ``seq``.

:func:`read_table` reads a table's events from Kafka (infrastructure errors become :class:`Unreachable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hashlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Awaitable, Iterable, Iterator, TypeVar

import msgspec

from contracts import topics as T
from contracts.envelope import Envelope
from contracts.events import (
    AdvantageBetFlagged,
    BankSettled,
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BettingOpened,
    BetWithdrawn,
    CardDealt,
    CardDrawn,
    CardReadRefused,
    CommandRejected,
    CommissionAccrued,
    DominantPlayerChosen,
    Irregularity,
    LedgerPosted,
    OptionDecided,
    OptionOffered,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeFinished,
    ShoeKept,
    ShoePassed,
    ShoeLoaded,
    TableOpened,
)

UTC = timezone.utc
_R = TypeVar("_R")


class ReplayError(ValueError):
    """Bad input: an unknown table, round or shoe, or a time the log does not cover."""


class Unreachable(RuntimeError):
    """The Kafka broker could not be reached (or stopped answering, or refused this client's TLS)."""


async def unreachable(settings: Any, detail: str, what: str = "cannot reach Kafka") -> Unreachable:
    """An :class:`Unreachable` for ``settings``' broker: ``"<what> at <bootstrap> (<detail>)"``, or, when a TLS
    handshake explains the failure (:meth:`services.runtime.settings.Settings.connection_problem`: another CA, an
    expired certificate or another host name, a listener that does not speak TLS, or one that does to a
    plain-text client), ``"<that cause> (<detail>)"``."""
    try:
        problem = await settings.connection_problem(timeout_s=3.0)
    except Exception:  # noqa: BLE001 - the diagnosis must not hide the failure it explains
        problem = None
    if problem is not None:
        return Unreachable(f"{problem} ({detail})")
    return Unreachable(f"{what} at {settings.bootstrap_servers} ({detail})")


# ---- times and money ------------------------------------------------------------------------------------
def parse_time(text: str) -> datetime:
    """An ISO 8601 time; UTC when it has no offset."""
    s = text.strip()
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s[-1:] in ("Z", "z") else s)
    except ValueError:
        raise ReplayError(f"cannot read {text!r} as a time: give ISO 8601, e.g. 2026-01-01T00:00:05Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.astimezone(UTC)


def iso(t: datetime) -> str:
    """A time as ISO 8601 in UTC with a ``Z`` (microseconds only when there are any)."""
    t = t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)
    return t.isoformat().replace("+00:00", "Z")


def money(cents: int) -> str:
    """Cents as dollars, exactly: ``-1234`` → ``-12.34``."""
    sign = "-" if cents < 0 else ""
    c = abs(cents)
    return f"{sign}{c // 100:,}.{c % 100:02d}"


def _utc(t: datetime) -> datetime:
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def _fields(payload: Any, *drop: str) -> dict[str, Any]:
    d = msgspec.to_builtins(payload)
    for k in ("type", *drop):
        d.pop(k, None)
    return d


def _round_of(env: Envelope) -> str | None:
    return env.round_id or getattr(env.payload, "round_id", None) or None


def _ids_hint(what: str, ids: list[str], given: str) -> str:
    if not ids:
        return f"the table has no {what}s"
    near = difflib.get_close_matches(given, ids, n=1)
    if len(ids) <= 6:
        known = ", ".join(ids)
        listing = f"{len(ids)} {what}(s): {known}"
    else:
        listing = f"{len(ids)} {what}s, from {ids[0]} to {ids[-1]}"
    return listing + (f" (did you mean {near[0]}?)" if near else "")


# ---- phases of a round: the order of events that share a time ------------------------------------------
_STREAM_RANK = {T.DEALING_EVENTS: 0, T.WAGERING_EVENTS: 1, T.SHOE_EVENTS: 2, T.SETTLEMENT_EVENTS: 3,
                T.PROJECTION_LEDGER: 4, T.PROJECTION_ALERTS: 5}


@dataclass
class _Round:
    round_id: str
    shoe_id: str
    number: int
    opened: Envelope
    envs: list[Envelope] = field(default_factory=list)


@dataclass
class _Shoe:
    shoe_id: str
    envs: list[Envelope] = field(default_factory=list)
    rounds: list[str] = field(default_factory=list)


class TableStory:
    """One table's events, indexed by round and shoe. Raises :class:`ReplayError` when there are none."""

    def __init__(self, envelopes: Iterable[Envelope], table_id: str):
        self.table_id = table_id
        seen: set[tuple[str, int]] = set()
        envs: list[Envelope] = []
        for e in envelopes:
            if e.table_id != table_id or (e.stream, e.seq) in seen:
                continue
            seen.add((e.stream, e.seq))
            envs.append(e)
        if not envs:
            raise ReplayError(f"no events for table {table_id!r}")
        envs.sort(key=lambda e: (_STREAM_RANK.get(e.stream, 9), e.stream, e.seq))
        self.envs = envs
        self.first = min(_utc(e.occurred_at) for e in envs)
        self.last = max(_utc(e.occurred_at) for e in envs)
        self.has_ledger = any(e.stream == T.PROJECTION_LEDGER for e in envs)
        self.has_alerts = any(e.stream == T.PROJECTION_ALERTS for e in envs)
        self.configs: list[Envelope] = [e for e in envs if isinstance(e.payload, TableOpened)]
        self.rounds: dict[str, _Round] = {}
        self.shoes: dict[str, _Shoe] = {}
        for e in envs:
            p = e.payload
            if isinstance(p, RoundOpened):
                self.rounds.setdefault(p.round_id, _Round(p.round_id, p.shoe_id, p.number, e))
            if isinstance(p, ShoeLoaded):
                self.shoes.setdefault(p.shoe_id, _Shoe(p.shoe_id))
        # rounds in the order they opened (dealing seq)
        self.rounds = dict(sorted(self.rounds.items(), key=lambda kv: kv[1].opened.seq))
        self.orphans: list[Envelope] = []
        for e in envs:
            p = e.payload
            rid = _round_of(e)
            if rid is not None and rid in self.rounds:
                self.rounds[rid].envs.append(e)
            elif isinstance(p, (BetRejected, CommandRejected)) or rid is not None:
                self.orphans.append(e)
            sid = getattr(p, "shoe_id", None) if not isinstance(p, (RoundOpened, RoundResolved)) else None
            if isinstance(p, (ShoeLoaded, ShoeCut, ShoeBurned, ShoeClosed, ShoeFinished, CardDrawn)) and sid:
                self.shoes.setdefault(sid, _Shoe(sid)).envs.append(e)
        for r in self.rounds.values():
            self.shoes.setdefault(r.shoe_id, _Shoe(r.shoe_id)).rounds.append(r.round_id)
        loaded_at = {sid: min((_utc(e.occurred_at) for e in s.envs), default=self.last)
                     for sid, s in self.shoes.items()}
        self.shoes = dict(sorted(self.shoes.items(), key=lambda kv: (loaded_at[kv[0]],
                                                                    kv[1].envs[0].seq if kv[1].envs else 0)))

    # ---- lookups with helpful errors --------------------------------------------------------------------
    def _round(self, round_id: str) -> _Round:
        r = self.rounds.get(round_id)
        if r is None:
            raise ReplayError(f"unknown round {round_id!r} at table {self.table_id}: "
                              + _ids_hint("round", list(self.rounds), round_id))
        return r

    def _shoe(self, shoe_id: str) -> _Shoe:
        s = self.shoes.get(shoe_id)
        if s is None:
            raise ReplayError(f"unknown shoe {shoe_id!r} at table {self.table_id}: "
                              + _ids_hint("shoe", list(self.shoes), shoe_id))
        return s

    def span(self) -> dict[str, str]:
        return {"first": iso(self.first), "last": iso(self.last)}

    # ---- one round --------------------------------------------------------------------------------------
    def round(self, round_id: str, until: datetime | None = None) -> dict[str, Any]:
        """The round's timeline (only what had happened by ``until``, when given)."""
        r = self._round(round_id)
        envs = [e for e in r.envs if until is None or _utc(e.occurred_at) <= until]
        return self._round_view(r, envs)

    def _round_view(self, r: _Round, envs: list[Envelope]) -> dict[str, Any]:
        deal = sorted((e for e in envs if e.stream == T.DEALING_EVENTS), key=lambda e: e.seq)
        closed_seq = next((e.seq for e in envs if isinstance(e.payload, BettingClosed)), None)
        drawn = {e.payload.card_number: e for e in envs if isinstance(e.payload, CardDrawn)}
        dealt_before: dict[int, int] = {}  # dealing seq -> cards dealt before it in the round
        k = 0
        card_no: dict[int, int] = {}
        for e in deal:
            if isinstance(e.payload, CardDealt):
                k += 1
                card_no[e.seq] = k
            dealt_before[e.seq] = k
        keyed: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

        def add(e: Envelope, phase: float, sub: float, entry: dict[str, Any]) -> None:
            at = _utc(e.occurred_at)
            entry = {"at": iso(at), "event": entry.pop("event", type(e.payload).__struct_config__.tag),
                     "stream": e.stream, "seq": e.seq, **entry}
            keyed.append(((at, phase, sub, _STREAM_RANK.get(e.stream, 9), e.seq), entry))

        status = "betting"
        result: dict[str, Any] | None = None
        total: dict[str, Any] | None = None
        void: str | None = None
        points: dict[str, Any] | None = None
        placed = rejected = withdrawn = 0
        book: list[dict[str, Any]] | None = None
        ledger: list[dict[str, Any]] = []
        alerts: list[dict[str, Any]] = []
        dealt_numbers: set[int] = set()
        for e in envs:
            p = e.payload
            if isinstance(p, RoundOpened):
                add(e, 0, 0, {"number": p.number, "shoe_id": p.shoe_id})
            elif isinstance(p, BettingOpened):
                add(e, 1, 0, {})
            elif isinstance(p, (BetPlaced, BetRejected, BetWithdrawn)):
                late = closed_seq is not None and e.seq > closed_seq
                add(e, 8 if late else 2, 0, _fields(p, "round_id"))
                if isinstance(p, BetPlaced):
                    placed += 1
                elif isinstance(p, BetRejected):
                    rejected += 1
                else:
                    withdrawn += 1
            elif isinstance(p, BettingClosed):
                book = [msgspec.to_builtins(b) for b in p.bets]
                add(e, 3, 0, {"bets": book, "count": len(p.bets), "total_cents": sum(b.amount_cents for b in p.bets)})
            elif isinstance(p, CardDealt):
                n = card_no[e.seq]
                dealt_numbers.add(n)
                d = drawn.get(n)
                dp = d.payload if d is not None else None
                add(e, 4, n, {
                    "event": "card", "n": n, "card": p.card, "hand": p.hand, "hand_position": p.position,
                    "rule": p.rule, "row": p.row, "column": p.column, "source": p.source, "why": p.why,
                    "shoe_position": dp.position if isinstance(dp, CardDrawn) else None,
                    "cards_left": dp.cards_left if isinstance(dp, CardDrawn) else None,
                    "cutting_card_out": dp.cutting_card_out if isinstance(dp, CardDrawn) else None,
                })
            elif isinstance(p, DominantPlayerChosen):  # chemin de fer, at "No more bets" (13:69F-4.8(c))
                add(e, 3, 1, _fields(p, "round_id"))
            elif isinstance(p, OptionOffered):  # chemin de fer: the option and its controller (4.8(b)-(c))
                add(e, 4, dealt_before.get(e.seq, 4) + 0.6, _fields(p, "round_id"))
            elif isinstance(p, OptionDecided):
                add(e, 4, dealt_before.get(e.seq, 4) + 0.7, _fields(p, "round_id"))
            elif isinstance(p, PointsAnnounced):
                points = _fields(p, "round_id")
                add(e, 4, dealt_before.get(e.seq, 4) + 0.5, dict(points))
            elif isinstance(p, Irregularity):
                add(e, 4, dealt_before.get(e.seq, 0) + 0.5, _fields(p, "round_id"))
            elif isinstance(p, CardReadRefused):
                add(e, 4, p.card_number - 0.5, _fields(p, "round_id"))
            elif isinstance(p, RoundResolved):
                result = _fields(p, "round_id")
                add(e, 5, 0, dict(result))
            elif isinstance(p, RoundVoided):
                void = p.reason
                add(e, 5, 0, _fields(p, "round_id"))
            elif isinstance(p, (ShoeKept, ShoePassed)):  # the curator's shoe after the round (13:69F-3.11(a))
                add(e, 5, 1, _fields(p, "round_id"))
            elif isinstance(p, (BetSettled, CommissionAccrued)):
                add(e, 6, 0, _fields(p, "round_id"))
            elif isinstance(p, BankSettled):  # chemin de fer: the bank's side, after the bets it paid or took
                add(e, 6, 1, _fields(p, "round_id"))
            elif isinstance(p, RoundSettled):
                total = _fields(p, "round_id")
                add(e, 7, 0, dict(total))
            elif isinstance(p, CommandRejected):
                add(e, 8, 0, _fields(p))
            elif isinstance(p, LedgerPosted):
                ledger.append({"at": iso(_utc(e.occurred_at)), "seq": e.seq, **_fields(p, "round_id")})
            elif isinstance(p, AdvantageBetFlagged):
                alerts.append({"at": iso(_utc(e.occurred_at)), "seq": e.seq, **_fields(p, "round_id")})
        # a card drawn from the shoe that no CardDealt names (yet): still part of the story
        for n, d in drawn.items():
            if n not in dealt_numbers:
                dp = d.payload
                assert isinstance(dp, CardDrawn)
                add(d, 4, n, {"event": "card", "n": n, "card": dp.card, "hand": None, "hand_position": None,
                              "rule": None, "row": None, "column": None, "source": None,
                              "why": "drawn from the shoe; not (yet) dealt to a hand", "shoe_position": dp.position,
                              "cards_left": dp.cards_left, "cutting_card_out": dp.cutting_card_out})
        keyed.sort(key=lambda x: x[0])
        if total is not None:
            status = "settled"
        elif void is not None:
            status = "voided"
        elif result is not None:
            status = "resolved"
        elif drawn or dealt_numbers:
            status = "dealing"
        elif book is not None:
            status = "betting_closed"
        ledger.sort(key=lambda x: x["seq"])
        alerts.sort(key=lambda x: x["seq"])
        return {
            "round_id": r.round_id,
            "shoe_id": r.shoe_id,
            "number": r.number,
            "opened_at": iso(_utc(r.opened.occurred_at)),
            "status": status,
            "config_since": self._config_for(r),
            "bets_placed": placed,
            "bets_rejected": rejected,
            "bets_withdrawn": withdrawn,
            "book": book,
            "points": points,
            "result": result,
            "void": void,
            "total": total,
            "timeline": [entry for _, entry in keyed],
            "ledger": ledger if self.has_ledger else None,
            "alerts": alerts if self.has_alerts else None,
        }

    def _config_for(self, r: _Round) -> str | None:
        cfg = [e for e in self.configs if e.seq < r.opened.seq]
        return iso(_utc(cfg[-1].occurred_at)) if cfg else None

    # ---- one shoe ---------------------------------------------------------------------------------------
    def shoe(self, shoe_id: str) -> dict[str, Any]:
        """Every round of the shoe and the shoe's own events: load, cut, burn, end, close and reveal."""
        s = self._shoe(shoe_id)
        view = self._shoe_view(s, None)
        view["rounds"] = [self.round(rid) for rid in s.rounds]
        return view

    def _shoe_view(self, s: _Shoe, until: datetime | None) -> dict[str, Any]:
        envs = [e for e in s.envs if until is None or _utc(e.occurred_at) <= until]
        loaded = cut = burn = closed = finished = None
        commitment = ""
        cards = 0
        drawn: list[CardDrawn] = []
        for e in envs:
            p = e.payload
            at = iso(_utc(e.occurred_at))
            if isinstance(p, ShoeLoaded):
                commitment, cards = p.commitment, p.cards
                loaded = {"at": at, "cards": p.cards, "source": p.source, "commitment": p.commitment,
                          "rules": msgspec.to_builtins(p.rules)}
            elif isinstance(p, ShoeCut):
                cut = {"at": at, "cut_at": p.cut_at}
            elif isinstance(p, ShoeBurned):
                burn = {"at": at, **_fields(p, "shoe_id")}
            elif isinstance(p, ShoeFinished):
                finished = {"at": at, "rounds": p.rounds}
            elif isinstance(p, CardDrawn):
                drawn.append(p)
            elif isinstance(p, ShoeClosed):
                verified: bool | None = None
                if commitment and p.order:
                    try:
                        digest = hashlib.sha256(bytes.fromhex(p.salt) + ",".join(p.order).encode()).hexdigest()
                        verified = digest == commitment
                    except ValueError:
                        verified = False
                closed = {"at": at, "reason": p.reason, "cards_dealt": p.cards_dealt, "order": list(p.order),
                          "salt": p.salt, "commitment_verified": verified}
        burned = (1 + burn["burned_count"]) if burn else 0
        left = drawn[-1].cards_left if drawn else max(cards - burned, 0)
        if closed is not None:
            status = "closed"
        elif finished is not None:
            status = "finished"
        elif loaded is not None:
            status = "in_play"
        else:
            status = "unknown"
        return {
            "shoe_id": s.shoe_id,
            "status": status,
            "loaded": loaded,
            "cut": cut,
            "burn": burn,
            "cards": cards,
            "burned": burned,
            "dealt": len(drawn),
            "cards_left": left,
            "cutting_card_out": any(d.cutting_card_out for d in drawn),
            "seen": ([burn["exposed"]] if burn else []) + [d.card for d in drawn],
            "finished": finished,
            "closed": closed,
            "rounds_played": len([rid for rid in s.rounds
                                  if until is None or _utc(self.rounds[rid].opened.occurred_at) <= until]),
        }

    # ---- the table at a moment --------------------------------------------------------------------------
    def state_at(self, at: datetime) -> dict[str, Any]:
        """The table as it stood at ``at`` (by the events' ``occurred_at``)."""
        at = _utc(at)
        if not self.first <= at <= self.last:
            raise ReplayError(f"{iso(at)} is outside the log of table {self.table_id}: its events span "
                              f"{iso(self.first)} to {iso(self.last)}")
        cfg = [e for e in self.configs if _utc(e.occurred_at) <= at]
        last_cfg = cfg[-1].payload if cfg else None
        config = ({"since": iso(_utc(cfg[-1].occurred_at)), "spec": msgspec.to_builtins(last_cfg.config)}
                  if isinstance(last_cfg, TableOpened) else None)
        shoe = None
        for s in self.shoes.values():  # in load order: the last one loaded by then is in play
            if any(_utc(e.occurred_at) <= at for e in s.envs if isinstance(e.payload, ShoeLoaded)):
                shoe = s
        in_progress = last_done = None
        for r in self.rounds.values():
            if _utc(r.opened.occurred_at) > at:
                continue
            done = any(isinstance(e.payload, RoundSettled) and _utc(e.occurred_at) <= at for e in r.envs)
            if done:
                last_done = r
                in_progress = None
            else:
                in_progress = r
        return {
            "table_id": self.table_id,
            "at": iso(at),
            "span": self.span(),
            "config": config,
            "shoe": self._shoe_view(shoe, at) if shoe else None,
            "round_in_progress": self.round(in_progress.round_id, at) if in_progress else None,
            "last_finished_round": self.round(last_done.round_id, at) if last_done else None,
        }

    # ---- the whole table --------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """One line per round of the table, its shoes and configurations."""
        rows = []
        for rid in self.rounds:
            v = self.round(rid)
            res, tot = v["result"], v["total"]
            rows.append({
                "round_id": rid, "shoe_id": v["shoe_id"], "number": v["number"], "opened_at": v["opened_at"],
                "status": v["status"], "bets": len(v["book"]) if v["book"] is not None else v["bets_placed"],
                "rejected": v["bets_rejected"],
                "winner": res["winner"] if res else None,
                "player_cards": res["player_cards"] if res else None,
                "banker_cards": res["banker_cards"] if res else None,
                "player_points": res["player_points"] if res else None,
                "banker_points": res["banker_points"] if res else None,
                "natural": bool(res and (res["player_natural"] or res["banker_natural"])),
                "dragon_7": bool(res and res["dragon_7"]), "panda_8": bool(res and res["panda_8"]),
                "void": v["void"],
                "stakes": tot["stakes"] if tot else None, "payouts": tot["payouts"] if tot else None,
                "commission": tot["commission"] if tot else None,
                "table_result": tot["table_result"] if tot else None,
            })
        shoes = []
        for sid, s in self.shoes.items():
            sv = self._shoe_view(s, None)
            shoes.append({"shoe_id": sid, "status": sv["status"],
                          "loaded_at": sv["loaded"]["at"] if sv["loaded"] else None,
                          "rounds": len(s.rounds), "dealt": sv["dealt"],
                          "commitment_verified": sv["closed"]["commitment_verified"] if sv["closed"] else None})
        settled = [r for r in rows if r["table_result"] is not None]
        return {
            "table_id": self.table_id,
            "span": self.span(),
            "events": len(self.envs),
            "configs": [{"since": iso(_utc(e.occurred_at)), "variant": e.payload.config.variant,
                         "wagers": list(e.payload.config.wagers)} for e in self.configs
                        if isinstance(e.payload, TableOpened)],
            "shoes": shoes,
            "rounds": rows,
            "totals": {"rounds": len(rows), "settled": len(settled),
                       "stakes": sum(r["stakes"] for r in settled),
                       "payouts": sum(r["payouts"] for r in settled),
                       "commission": sum(r["commission"] for r in settled),
                       "table_result": sum(r["table_result"] for r in settled)},
            "outside_rounds": [{"at": iso(_utc(e.occurred_at)), "stream": e.stream, "seq": e.seq,
                                "event": type(e.payload).__struct_config__.tag, **_fields(e.payload)}
                               for e in self.orphans],
        }


def replay(envelopes: Iterable[Envelope], table_id: str, *, round_id: str | None = None,
           shoe_id: str | None = None, at: datetime | None = None) -> dict[str, Any]:
    """The replay of one table, by round, shoe, moment or (none given) as a summary; ``view`` says which."""
    given = [n for n, v in (("--round", round_id), ("--shoe", shoe_id), ("--at", at)) if v is not None]
    if len(given) > 1:
        raise ReplayError(f"give one of --round, --shoe or --at, not {' and '.join(given)}")
    story = TableStory(envelopes, table_id)
    if round_id is not None:
        return {"view": "round", "table_id": table_id, **story.round(round_id)}
    if shoe_id is not None:
        return {"view": "shoe", "table_id": table_id, **story.shoe(shoe_id)}
    if at is not None:
        return {"view": "at", **story.state_at(at)}
    return {"view": "summary", **story.summary()}


# ---- reading from Kafka -----------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet_aiokafka() -> Iterator[None]:
    """Silence aiokafka's own logging (connection retries) while the caller reports one clean line."""
    log = logging.getLogger("aiokafka")
    saved = (log.level, log.propagate, list(log.handlers))
    log.setLevel(logging.CRITICAL + 1)
    log.propagate = False
    log.addHandler(logging.NullHandler())
    try:
        yield
    finally:
        log.setLevel(saved[0])
        log.propagate = saved[1]
        log.handlers[:] = saved[2]


async def _existing_topics(settings: Any) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**settings.client_options(), request_timeout_ms=10_000)
    try:
        await admin.start()
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def _guarded(coro: Awaitable[_R], settings: Any, timeout_s: float) -> _R:
    from aiokafka.errors import KafkaError

    with _quiet_aiokafka():
        try:
            return await asyncio.wait_for(coro, timeout_s)
        except (KafkaError, OSError, TimeoutError) as e:
            detail = "timed out" if isinstance(e, TimeoutError) else (str(e) or type(e).__name__)
            raise await unreachable(settings, detail) from None


async def read_table(settings: Any, table_id: str, *, timeout_s: float = 300.0) -> list[Any]:
    """Every event of ``table_id`` on the four event streams and, when their topics exist, the projection's
    ledger and alerts, as :class:`croupier.log.LogRecord`. Reads only topics that exist (a broker that
    auto-creates topics would otherwise create them under a mistyped prefix). Raises :class:`Unreachable`."""
    from croupier.log import EVENT_STREAMS, PROJECTION_STREAMS, read_events

    async def run() -> list[Any]:
        existing = await _existing_topics(settings)
        streams = tuple(s for s in EVENT_STREAMS + PROJECTION_STREAMS if settings.topic(s) in existing)
        if not any(s in EVENT_STREAMS for s in streams):
            return []
        return await read_events(settings, table_id, streams)

    return await _guarded(run(), settings, timeout_s)


async def read_floor(settings: Any, *, timeout_s: float = 600.0) -> list[Any]:
    """Every event of every table, as :func:`read_table` reads one (the same streams, every partition of
    each, read once), in per-stream order. Raises :class:`Unreachable`."""
    from croupier.log import EVENT_STREAMS, PROJECTION_STREAMS, read_events

    async def run() -> list[Any]:
        existing = await _existing_topics(settings)
        streams = tuple(s for s in EVENT_STREAMS + PROJECTION_STREAMS if settings.topic(s) in existing)
        if not any(s in EVENT_STREAMS for s in streams):
            return []
        return await read_events(settings, None, streams)

    return await _guarded(run(), settings, timeout_s)


async def known_tables(settings: Any, *, timeout_s: float = 120.0) -> list[str]:
    """Tables with a dealing event (for the "unknown table" message); empty when the topic is missing."""
    from croupier.log import tables_in_log

    async def run() -> list[str]:
        if settings.topic(T.DEALING_EVENTS) not in await _existing_topics(settings):
            return []
        return await tables_in_log(settings)

    return await _guarded(run(), settings, timeout_s)


def unknown_table_message(table_id: str, tables: list[str], prefix: str) -> str:
    where = f" under topic prefix {prefix!r}" if prefix else ""
    if not tables:
        return f"no events for table {table_id!r}{where}: the log holds no table"
    return f"no events for table {table_id!r}{where}: the log has " + _ids_hint("table", tables, table_id)


# ---- human output -----------------------------------------------------------------------------------------
def _t(at: str) -> str:
    """``2026-01-01T00:00:00.120000Z`` → ``2026-01-01 00:00:00.120``."""
    d = parse_time(at)
    return d.strftime("%Y-%m-%d %H:%M:%S.") + f"{d.microsecond // 1000:03d}"


def _cards(cs: list[str] | None) -> str:
    return " ".join(cs) if cs else "-"


def describe(entry: dict[str, Any]) -> tuple[str, str]:
    """A timeline entry as (label, detail), plain text."""
    ev = entry["event"]
    if ev == "round_opened":
        return "round opened", f"round {entry['number']} of shoe {entry['shoe_id']}"
    if ev == "betting_opened":
        return "betting opened", "place your bets"
    if ev == "bet_placed":
        return "bet", (f"seat {entry['seat']} {entry['player_id']}: {entry['wager']} {money(entry['amount_cents'])} "
                       f"({entry['amount_cents']} cents) [{entry['bet_id']}]")
    if ev == "bet_rejected":
        what = (f"seat {entry['seat']} {entry['player_id']}: {entry['wager'] or '-'} {money(entry['amount_cents'])} "
                f"({entry['amount_cents']} cents)")
        return "bet rejected", f"{what} - {entry['reason']}: {entry['detail']} [{entry['command_id']}]"
    if ev == "bet_withdrawn":
        if entry.get("reason") == "betting_closed":
            return "bet returned", f"{entry['bet_id']}: placed after \"No more bets\" by the log's time"
        return "bet withdrawn", entry["bet_id"]
    if ev == "betting_closed":
        return "no more bets", f"{entry['count']} bet(s) in the book, {money(entry['total_cents'])} staked"
    if ev == "card":
        where = (f"shoe position {entry['shoe_position']}, {entry['cards_left']} left"
                 + (", cutting card out" if entry["cutting_card_out"] else "")
                 if entry["shoe_position"] is not None else "no CardDrawn")
        hand = f"{entry['hand']} {entry['hand_position']}" if entry["hand"] else "?"
        return f"card {entry['n']}", f"{entry['card']} to {hand} ({where}) - {entry['why']}"
    if ev == "points_announced":
        return "points", (f"Player {entry['player_points']}, Banker {entry['banker_points']}"
                          + (" - natural" if entry["natural"] else ""))
    if ev == "round_resolved":
        flags = [f for f in ("dragon_7", "panda_8") if entry[f]]
        nat = [h for h in ("player", "banker") if entry[f"{h}_natural"]]
        return "result", (f"{entry['winner']} wins" if entry["winner"] != "tie" else "tie") + (
            f": Player {_cards(entry['player_cards'])} = {entry['player_points']}, "
            f"Banker {_cards(entry['banker_cards'])} = {entry['banker_points']}; "
            f"{entry['cards_required']} cards"
            + (f"; natural: {', '.join(nat)}" if nat else "")
            + (f"; {', '.join(flags)}" if flags else ""))
    if ev == "round_voided":
        return "round void", entry["reason"]
    if ev == "dominant_player_chosen":
        return "dominant player", (f"seat {entry['seat']} {entry['player_id']} controls the Player's Hand "
                                   f"({entry['rule']}, {money(entry['wager_cents'])} against the bank; 13:69F-4.8(c))")
    if ev == "option_offered":
        return "option", (f"{entry['cell']}: seat {entry['seat']} {entry['player_id']} decides, draw or stand, within "
                          f"{entry['option_seconds']} s (default: {'draw' if entry['default_draw'] else 'stand'})")
    if ev == "option_decided":
        return "decided", (f"{entry['cell']}: {'draw' if entry['draw'] else 'stand'}, by "
                           + (f"seat {entry['seat']} {entry['player_id']}" if entry["by"] == "participant"
                              else "the table's default"))
    if ev == "bank_settled":
        com = entry["commission_cents"]
        return "bank", (f"seat {entry['seat']} {entry['player_id']}: bank {money(entry['bank_cents'])} against "
                        f"{money(entry['wagers_cents'])}, {'won' if entry['won_cents'] >= 0 else 'lost'} "
                        f"{money(abs(entry['won_cents']))}"
                        + (f", house commission {money(com)}{' accrued' if entry['commission_accrued'] else ''}"
                           if com else "") + f"; bank after {money(entry['bank_after_cents'])}")
    if ev == "bet_settled":
        c = entry["commission"]
        com = f", commission {money(c)}{' accrued' if entry['commission_accrued'] else ''}" if c else ""
        return "settled", (f"seat {entry['seat']} {entry['player_id']}: {entry['wager']} {money(entry['stake'])} "
                           f"{entry['result']} ({entry['category']}{', ' + entry['odds'] if entry['odds'] else ''})"
                           f", payout {money(entry['payout'])}{com}")
    if ev == "commission_accrued":
        return "commission owed", (f"seat {entry['seat']} {entry['player_id']}: +{money(entry['amount_cents'])}, "
                                   f"owes {money(entry['owed_cents'])}")
    if ev == "round_settled":
        return "round total", (f"{entry['bets']} bet(s): stakes {money(entry['stakes'])}, payouts "
                               f"{money(entry['payouts'])}, commission {money(entry['commission'])}, "
                               f"house {money(entry['table_result'])}")
    if ev == "irregularity":
        return "irregularity", f"{entry['kind']}: {entry['detail']}"
    if ev == "card_read_refused":
        return "card refused", f"{entry['card']} as card {entry['card_number']}: {entry['reason']}"
    if ev == "command_rejected":
        return "rejected", f"{entry['command']}: {entry['reason']} {entry['detail']} [{entry['command_id']}]"
    rest = {k: v for k, v in entry.items() if k not in ("at", "event", "stream", "seq")}
    return ev, str(rest)


def render(view: dict[str, Any], console: Any) -> None:
    """Print a :func:`replay` view with Rich; every piece of data goes in as plain text (no markup)."""
    kind = view["view"]
    if kind == "round":
        _render_round(view, console)
    elif kind == "shoe":
        _render_shoe(view, console)
    elif kind == "at":
        _render_at(view, console)
    else:
        _render_summary(view, console)


def _p(console: Any, text: str, style: str | None = None) -> None:
    console.print(text, markup=False, highlight=False, style=style)


def _clock(at: str, day: str) -> str:
    """The time of day (ms) when ``at`` falls on ``day`` (``YYYY-MM-DD``), else the full date and time."""
    full = _t(at)
    return full[11:] if full.startswith(day) else full


def _render_round(v: dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    day = _t(v["opened_at"])[:10]
    _p(console, f"Round {v['round_id']} at table {v.get('table_id', '?')}: round {v['number']} of shoe "
                f"{v['shoe_id']}, opened {_t(v['opened_at'])}, {v['status']}", "bold")
    t = Table("time", "event", "detail")
    for e in v["timeline"]:
        label, detail = describe(e)
        t.add_row(Text(_clock(e["at"], day)), Text(label), Text(detail))
    console.print(t)
    if v.get("ledger") is None:
        _p(console, "Ledger: no projection.ledger events in the log (the projection has not run)")
    elif v["ledger"]:
        lt = Table("kind", "seat", "lines (debit +, credit -)", title="Ledger (projection.ledger)",
                   title_justify="left")
        for x in v["ledger"]:
            lines = ", ".join(f"{ln['account']} {money(ln['amount_cents'])}" for ln in x["lines"])
            seat = f"{x['seat']} {x['player_id']}" if x.get("seat") else ""
            lt.add_row(Text(x["kind"]), Text(seat), Text(lines))
        console.print(lt)
    else:
        _p(console, "Ledger: no entries for this round")
    for a in v.get("alerts") or []:
        _p(console, f"Surveillance alert: seat {a['seat']} {a['player_id']} bet {money(a['stake_cents'])} on "
                    f"{a['wager']} at EV {a['ev']:+.6f} per unit (expected gain {money(a['expected_gain_cents'])}, "
                    f"{a['cards_left']} cards left)")


def _shoe_lines(s: dict[str, Any]) -> list[str]:
    out = []
    if s["loaded"]:
        ld = s["loaded"]
        out.append(f"loaded {_t(ld['at'])}: {ld['cards']} cards ({ld['rules']['decks']} decks), source "
                   f"{ld['source']}, commitment {ld['commitment'] or '-'}")
    if s["cut"]:
        out.append(f"cut {_t(s['cut']['at'])}: {s['cut']['cut_at']} cards moved to the back")
    if s["burn"]:
        b = s["burn"]
        out.append(f"burn {_t(b['at'])}: exposed {b['exposed']}, {b['burned_count']} burned"
                   + (f" ({' '.join(b['burned'])})" if b["burned"] else ""))
    out.append(f"cards: {s['dealt']} dealt, {s['burned']} burned, {s['cards_left']} left"
               + ("; cutting card out" if s["cutting_card_out"] else ""))
    if s["finished"]:
        out.append(f"finished {_t(s['finished']['at'])}: no further round after {s['finished']['rounds']}")
    if s["closed"]:
        c = s["closed"]
        check = {True: "matches the commitment", False: "DOES NOT match the commitment",
                 None: "nothing to check"}[c["commitment_verified"]]
        out.append(f"closed {_t(c['at'])}: {c['reason']}, {c['cards_dealt']} cards out (burn included); reveal of "
                   f"{len(c['order'])} cards {check}")
    return out


def _render_shoe(v: dict[str, Any], console: Any) -> None:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text(f"Shoe {v['shoe_id']} at table {v['table_id']}: {v['status']}, {len(v['rounds'])} round(s)",
                     style="bold"))
    for line in _shoe_lines(v):
        tree.add(Text(line))
    console.print(tree)
    for r in v["rounds"]:
        console.print()
        _render_round({**r, "table_id": v["table_id"]}, console)


def _render_at(v: dict[str, Any], console: Any) -> None:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text(f"Table {v['table_id']} at {_t(v['at'])} (log from {_t(v['span']['first'])} "
                     f"to {_t(v['span']['last'])})", style="bold"))
    c = v["config"]
    if c:
        sp = c["spec"]
        node = tree.add(Text(f"configuration in force since {_t(c['since'])}: {sp['variant']}, "
                             f"{sp['shoe']['decks']} decks"))
        node.add(Text(f"wagers: {', '.join(sp['wagers'])}"))
        node.add(Text(f"commission {sp['commission_rate'][0]}/{sp['commission_rate'][1]} "
                      f"{sp['commission_mode']} ({sp['commission_scope']}); no-vig: {sp['no_vig']}"))
        if sp["limits"]:
            node.add(Text("limits: " + ", ".join(f"{w} {money(x['min_cents'])}-{money(x['max_cents'])}"
                                                 for w, x in sp["limits"].items())))
    else:
        tree.add(Text("no configuration yet"))
    s = v["shoe"]
    if s:
        node = tree.add(Text(f"shoe {s['shoe_id']}: {s['status']}, {s['rounds_played']} round(s) opened"))
        for line in _shoe_lines(s):
            node.add(Text(line))
    else:
        tree.add(Text("no shoe loaded yet"))
    ip, done = v["round_in_progress"], v["last_finished_round"]
    tree.add(Text(f"round in progress: {ip['round_id']} ({ip['status']})" if ip else "no round in progress"))
    tree.add(Text(f"last finished round: {done['round_id']}" if done else "no round finished yet"))
    console.print(tree)
    for r in (ip, done):
        if r:
            console.print()
            _render_round({**r, "table_id": v["table_id"]}, console)


def _render_summary(v: dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    _p(console, f"Table {v['table_id']}: {v['events']} events from {_t(v['span']['first'])} to "
                f"{_t(v['span']['last'])}", "bold")
    for c in v["configs"]:
        _p(console, f"configuration since {_t(c['since'])}: {c['variant']}; wagers {', '.join(c['wagers'])}")
    for s in v["shoes"]:
        check = {True: ", reveal verified", False: ", REVEAL DOES NOT MATCH", None: ""}[s["commitment_verified"]]
        _p(console, f"shoe {s['shoe_id']}: {s['status']}, {s['rounds']} round(s), {s['dealt']} cards dealt{check}")
    t = Table("round", "result", "Player", "Banker", "bets", "stakes", "house")
    for r in v["rounds"]:
        flags = [f for f, on in (("natural", r["natural"]), ("dragon 7", r["dragon_7"]),
                                 ("panda 8", r["panda_8"])) if on]
        if r["void"] is not None:
            result = f"void: {r['void']}"
        elif r["winner"]:
            result = r["winner"] + (f" ({', '.join(flags)})" if flags else "")
        else:
            result = r["status"]
        if r["rejected"]:
            result += f"; {r['rejected']} rejected"

        def m(x: int | None) -> str:
            return money(x) if x is not None else "-"

        pl = f"{_cards(r['player_cards'])} = {r['player_points']}" if r["player_cards"] else "-"
        bk = f"{_cards(r['banker_cards'])} = {r['banker_points']}" if r["banker_cards"] else "-"
        t.add_row(*(Text(x) for x in (r["round_id"], result, pl, bk, str(r["bets"]), m(r["stakes"]),
                                      m(r["table_result"]))))
    console.print(t)
    tot = v["totals"]
    _p(console, f"{tot['rounds']} round(s), {tot['settled']} settled: stakes {money(tot['stakes'])}, payouts "
                f"{money(tot['payouts'])}, commission {money(tot['commission'])}, house {money(tot['table_result'])}")
    for e in v["outside_rounds"]:
        label, detail = describe(e)
        _p(console, f"outside any round, {_t(e['at'])}: {label} {detail}")
