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

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

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
    ShoeLoaded,
    ShoePassed,
    TableOpened,
)
from croupier.replay_common import (
    ReplayError,
    Unreachable,
    _ids_hint,
    iso,
    money,
    parse_time,
    unreachable,
)
from croupier.replay_marks import audit_marks


def _utc(t: datetime) -> datetime:
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def _fields(payload: Any, *drop: str) -> dict[str, Any]:
    d = msgspec.to_builtins(payload)
    for k in ("type", *drop):
        d.pop(k, None)
    return d


def _round_of(env: Envelope) -> str | None:
    return env.round_id or getattr(env.payload, "round_id", None) or None


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
        # every record, a second one at a seq already taken too: a forged or doubled record is shown, marked
        envs: list[Envelope] = [e for e in envelopes if e.table_id == table_id]
        if not envs:
            raise ReplayError(f"no events for table {table_id!r}")
        envs.sort(key=lambda e: (_STREAM_RANK.get(e.stream, 9), e.stream, e.seq))
        self.envs = envs
        #: the audit's findings, shown where they happened (croupier/replay_marks.py)
        self.marks = audit_marks(envs, table_id)
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
        drawn: dict[int, Envelope] = {}  # card number -> the first card drawn as it; any other is shown apart
        extra_draws: list[Envelope] = []
        for e in sorted((e for e in envs if isinstance(e.payload, CardDrawn)), key=lambda e: e.seq):
            number = e.payload.card_number if isinstance(e.payload, CardDrawn) else 0
            (extra_draws if number in drawn else []).append(e)
            drawn.setdefault(number, e)
        dealt_before: dict[int, int] = {}  # dealing seq -> cards dealt before it in the round
        k = 0
        card_no: dict[int, int] = {}
        for e in deal:
            if isinstance(e.payload, CardDealt):
                k += 1
                card_no[e.seq] = k
            dealt_before[e.seq] = k
        keyed: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

        def add(e: Envelope, phase: float, sub: float, entry: dict[str, Any], also: Envelope | None = None) -> None:
            at = _utc(e.occurred_at)
            marks = self.marks.of(e) + (self.marks.of(also) if also is not None else [])
            entry = {"at": iso(at), "event": entry.pop("event", type(e.payload).__struct_config__.tag),
                     "stream": e.stream, "seq": e.seq, **entry, "marks": marks}
            if also is not None:  # the card drawn for it: its marks are this line's
                entry["drawn"] = f"{also.stream}#{also.seq}"
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
                    # chemin de fer: the Banker deals (13:69F-4.8(d)); the dealer who keyed a read, if another
                    "dealt_by": e.actor, "keyed_by": dp.keyed_by if isinstance(dp, CardDrawn) else "",
                }, d)
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
        # a card drawn from the shoe that no CardDealt names (yet), or a second card drawn as the same card
        # number (a substituted card): still part of the story
        undealt = [d for n, d in drawn.items() if n not in dealt_numbers]
        for d in undealt + extra_draws:
            dp = d.payload
            assert isinstance(dp, CardDrawn)
            why = ("drawn from the shoe; not (yet) dealt to a hand" if d in undealt else
                   f"drawn again as card {dp.card_number}: a second card for one card number")
            add(d, 4, dp.card_number, {"event": "card", "n": dp.card_number, "card": dp.card, "hand": None,
                                       "hand_position": None, "rule": None, "row": None, "column": None,
                                       "source": None, "why": why, "shoe_position": dp.position,
                                       "cards_left": dp.cards_left, "cutting_card_out": dp.cutting_card_out,
                                       "dealt_by": d.actor, "keyed_by": dp.keyed_by})
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
            "marks": self.marks.of_round(r.round_id, {f"{e['stream']}#{e['seq']}" for _, e in keyed}
                                         | {e["drawn"] for _, e in keyed if "drawn" in e}),
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
            "marks": [m for m in self.marks.table if m["where"].split("@")[0] == s.shoe_id],
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
                "anomalies": len(self.marks.by_round.get(rid, ())),
            })
        shoes = []
        for sid, s in self.shoes.items():
            sv = self._shoe_view(s, None)
            shoes.append({"shoe_id": sid, "status": sv["status"],
                          "loaded_at": sv["loaded"]["at"] if sv["loaded"] else None,
                          "rounds": len(s.rounds), "dealt": sv["dealt"],
                          "commitment_verified": sv["closed"]["commitment_verified"] if sv["closed"] else None})
        # a voided round's bets were returned without action: not a round decided, not stakes (the cage's count,
        # services/projection/pit_state.py); counted apart
        settled = [r for r in rows if r["table_result"] is not None and not r["void"]]
        return {
            "table_id": self.table_id,
            "span": self.span(),
            "events": len(self.envs),
            "configs": [{"since": iso(_utc(e.occurred_at)), "variant": e.payload.config.variant,
                         "wagers": list(e.payload.config.wagers)} for e in self.configs
                        if isinstance(e.payload, TableOpened)],
            "shoes": shoes,
            "rounds": rows,
            "totals": {"rounds": len(rows), "settled": len(settled), "voided": sum(1 for r in rows if r["void"]),
                       "stakes": sum(r["stakes"] for r in settled),
                       "payouts": sum(r["payouts"] for r in settled),
                       "commission": sum(r["commission"] for r in settled),
                       "table_result": sum(r["table_result"] for r in settled)},
            "outside_rounds": [{"at": iso(_utc(e.occurred_at)), "stream": e.stream, "seq": e.seq,
                                "event": type(e.payload).__struct_config__.tag, **_fields(e.payload),
                                "marks": self.marks.of(e)} for e in self.orphans],
            #: every anomaly the audit found at the table, each on its own line
            "marks": list(self.marks.all),
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


# the human output lives in croupier/replay_render.py (re-exported here: the CLI and the pit pages import it)
# reading a table's log from Kafka lives in croupier/replay_read.py (re-exported: the CLI imports it from here)
from croupier.replay_read import known_tables, read_floor, read_table, unknown_table_message
from croupier.replay_render import describe, render

__all__ = ["ReplayError", "TableStory", "Unreachable", "describe", "iso", "known_tables", "money", "parse_time",
           "read_floor", "read_table", "render", "replay", "unknown_table_message", "unreachable"]
