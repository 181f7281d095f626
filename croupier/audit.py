"""Audit: re-derive every round and every settlement from the raw card and bet events.

Pure: takes decoded envelopes (from the log, a file, or memory) and returns the discrepancies. Checks:

* every stream of every table has a gapless ``seq`` from 1 with no duplicate, and each ``event_id`` is
  the deterministic id of its (stream, table, seq);
* every closed shoe's reveal hashes to its commitment, and the cards drawn are the revealed order after
  the cut and the burn, in order;
* every round: the cards drawn for it, dealt by the rules core, give exactly the recorded hands, point
  counts, winner, naturals, cards required, dragon 7 / panda 8, and each ``CardDealt`` names the same rule;
* every bet of every closed book is settled exactly once, as the rules core settles it under the table
  configuration in force when the round opened; every ``RoundSettled`` equals the sum of its bets.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

from baccarat import round as R
from baccarat.cards import parse_card
from baccarat.table import TableConfig
from baccarat.wagers import Wager, settle
from contracts.envelope import Envelope, event_id
from contracts.events import (
    BetSettled,
    BettingClosed,
    CardDealt,
    CardDrawn,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeCut,
    ShoeLoaded,
    TableOpened,
)
from services.runtime.translate import shoe_rules, table_config


@dataclass(frozen=True, slots=True)
class Discrepancy:
    """One thing the log says that the rules (or the log's own bookkeeping) contradict."""

    table_id: str
    kind: str
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.table_id} {self.kind} {self.where}: {self.detail}"


@dataclass
class AuditReport:
    """Counts of what was checked and the discrepancies found (clean when there are none)."""

    events: int = 0
    tables: int = 0
    shoes_verified: int = 0
    rounds_checked: int = 0
    bets_checked: int = 0
    discrepancies: list[Discrepancy] | None = None

    @property
    def clean(self) -> bool:
        return not self.discrepancies


def audit(envelopes: Iterable[Envelope], *, table_id: str | None = None, shoe_id: str | None = None) -> AuditReport:
    """Audit the given events (any order across streams; per-stream order by ``seq``)."""
    by_table: dict[str, list[Envelope]] = defaultdict(list)
    n = 0
    for env in envelopes:
        if table_id is not None and env.table_id != table_id:
            continue
        by_table[env.table_id].append(env)
        n += 1
    report = AuditReport(events=n, tables=len(by_table), discrepancies=[])
    for tid, envs in sorted(by_table.items()):
        _audit_table(tid, envs, report, shoe_id)
    return report


def _audit_table(tid: str, envs: list[Envelope], rep: AuditReport, only_shoe: str | None) -> None:
    bad = rep.discrepancies
    assert bad is not None

    def flag(kind: str, where: str, detail: str) -> None:
        bad.append(Discrepancy(tid, kind, where, detail))

    streams: dict[str, list[Envelope]] = defaultdict(list)
    for e in envs:
        streams[e.stream].append(e)
    for stream, es in streams.items():
        es.sort(key=lambda e: e.seq)
        seen: set[int] = set()
        for e in es:
            if e.seq in seen:
                flag("duplicate_seq", f"{stream}#{e.seq}", "the same seq appears twice")
            seen.add(e.seq)
            if e.event_id != event_id(stream, tid, e.seq):
                flag("bad_event_id", f"{stream}#{e.seq}", f"event_id {e.event_id} is not derived from its seq")
        expected = set(range(1, max(seen) + 1)) if seen else set()
        for missing in sorted(expected - seen):
            flag("seq_gap", f"{stream}#{missing}", "missing event")

    shoe_ev = sorted(streams.get("shoe.events", []), key=lambda e: e.seq)
    deal_ev = sorted(streams.get("dealing.events", []), key=lambda e: e.seq)
    wager_ev = sorted(streams.get("wagering.events", []), key=lambda e: e.seq)
    settle_ev = sorted(streams.get("settlement.events", []), key=lambda e: e.seq)

    # ---- shoes: commitment, and cards drawn follow the revealed order after cut and burn ------------
    loaded: dict[str, ShoeLoaded] = {}
    cuts: dict[str, int] = {}
    burns: dict[str, ShoeBurned] = {}
    drawn: dict[str, list[CardDrawn]] = defaultdict(list)
    drawn_by_round: dict[str, list[CardDrawn]] = defaultdict(list)
    for e in shoe_ev:
        p = e.payload
        if isinstance(p, ShoeLoaded):
            loaded[p.shoe_id] = p
        elif isinstance(p, ShoeCut):
            cuts[p.shoe_id] = p.cut_at
        elif isinstance(p, ShoeBurned):
            burns[p.shoe_id] = p
        elif isinstance(p, CardDrawn):
            drawn[p.shoe_id].append(p)
            drawn_by_round[p.round_id].append(p)
        elif isinstance(p, ShoeClosed):
            if only_shoe and p.shoe_id != only_shoe:
                continue
            ld = loaded.get(p.shoe_id)
            if ld is None or not ld.commitment:
                continue
            digest = hashlib.sha256(bytes.fromhex(p.salt) + ",".join(p.order).encode()).hexdigest()
            if digest != ld.commitment:
                flag("commitment_mismatch", p.shoe_id, "the revealed order and salt do not hash to the commitment")
                continue
            order = p.order
            at = cuts.get(p.shoe_id, 0)
            order = order[at:] + order[:at]
            b = burns.get(p.shoe_id)
            if b is not None:
                if order[0] != b.exposed or order[1:1 + b.burned_count] != b.burned:
                    flag("burn_mismatch", p.shoe_id, "the burn is not the first cards of the revealed order")
                if b.burned_count != shoe_rules(ld.rules).burn.count_after(parse_card(b.exposed)):
                    flag("burn_count", p.shoe_id, f"burned {b.burned_count} after {b.exposed}")
            for d in drawn[p.shoe_id]:
                if d.position >= len(order) or order[d.position] != d.card:
                    flag("card_not_in_order", f"{p.shoe_id}@{d.position}",
                         f"drew {d.card} where the revealed order has "
                         f"{order[d.position] if d.position < len(order) else 'nothing'}")
            positions = [d.position for d in drawn[p.shoe_id]]
            first = 1 + (b.burned_count if b else 0) if b else 0
            if positions != list(range(first, first + len(positions))):
                flag("draw_positions", p.shoe_id, "cards did not leave the shoe one after another")
            rep.shoes_verified += 1

    # ---- rounds: re-deal each from its drawn cards ----------------------------------------------------
    config: TableConfig | None = None
    round_config: dict[str, TableConfig] = {}
    round_shoe: dict[str, str] = {}
    dealt: dict[str, list[CardDealt]] = defaultdict(list)
    resolved: dict[str, RoundResolved] = {}
    voided: set[str] = set()
    for e in deal_ev:
        p = e.payload
        if isinstance(p, TableOpened):
            config = table_config(p.config)
        elif isinstance(p, RoundOpened):
            if config is not None:
                round_config[p.round_id] = config
            round_shoe[p.round_id] = p.shoe_id
        elif isinstance(p, CardDealt):
            dealt[p.round_id].append(p)
        elif isinstance(p, RoundResolved):
            resolved[p.round_id] = p
        elif isinstance(p, RoundVoided):
            voided.add(p.round_id)
    outcomes: dict[str, R.Outcome] = {}
    for rid, res in resolved.items():
        if only_shoe and round_shoe.get(rid) != only_shoe:
            continue
        cfg = round_config.get(rid)
        if cfg is None:
            flag("no_config", rid, "round resolved without a table configuration")
            continue
        cards = [parse_card(d.card) for d in sorted(drawn_by_round.get(rid, []), key=lambda d: d.card_number)]
        try:
            o, rest = R.resolve(cards, cfg.ruleset)
        except Exception as ex:  # too few cards drawn for the round
            flag("round_underivable", rid, str(ex))
            continue
        outcomes[rid] = o
        rep.rounds_checked += 1
        if rest:
            flag("extra_cards", rid, f"{len(rest)} card(s) drawn beyond what the rules required")
        want = (
            [str(c) for c in o.player], [str(c) for c in o.banker], o.player_points, o.banker_points,
            o.winner.value, o.player_natural, o.banker_natural, o.cards_required, o.dragon_7, o.panda_8,
        )
        got = (
            res.player_cards, res.banker_cards, res.player_points, res.banker_points, res.winner,
            res.player_natural, res.banker_natural, res.cards_required, res.dragon_7, res.panda_8,
        )
        if want != got:
            fields = ("player_cards", "banker_cards", "player_points", "banker_points", "winner",
                      "player_natural", "banker_natural", "cards_required", "dragon_7", "panda_8")
            diffs = [f"{f}: recorded {g!r}, rules give {w!r}" for f, w, g in zip(fields, want, got) if w != g]
            flag("outcome_mismatch", rid, "; ".join(diffs))
        rules = [(r.hand.value, r.rule, r.row, r.column) for r in o.reasons]
        recorded = [(d.hand, d.rule, d.row, d.column) for d in dealt.get(rid, [])]
        if rules != recorded:
            flag("draw_reason_mismatch", rid, f"recorded {recorded}, rules give {rules}")

    # ---- settlements -----------------------------------------------------------------------------------
    books: dict[str, BettingClosed] = {}
    for e in wager_ev:
        if isinstance(e.payload, BettingClosed):
            books[e.payload.round_id] = e.payload
    settled: dict[str, list[BetSettled]] = defaultdict(list)
    summaries: dict[str, list[RoundSettled]] = defaultdict(list)
    for e in settle_ev:
        p = e.payload
        if isinstance(p, BetSettled):
            settled[p.bet_id].append(p)
        elif isinstance(p, RoundSettled):
            summaries[p.round_id].append(p)
    for rid, book in books.items():
        if only_shoe and round_shoe.get(rid) != only_shoe:
            continue
        if rid not in outcomes and rid not in voided:
            if rid in resolved:
                continue  # already reported above
            flag("unresolved_round", rid, "bets closed but the round has no result")
            continue
        total_stake = total_payout = 0
        for bet in book.bets:
            rep.bets_checked += 1
            ss = settled.get(bet.bet_id, [])
            if len(ss) != 1:
                flag("settlement_count", bet.bet_id, f"settled {len(ss)} times")
                if not ss:
                    continue
            s = ss[0]
            if rid in voided:
                want = ("void", bet.amount_cents, 0)
                got = (s.result, s.payout, s.commission)
            else:
                cfg = round_config[rid]
                x = settle(Wager(bet.wager), bet.amount_cents, outcomes[rid], cfg)
                want = (x.result.value, x.payout, x.commission, x.win, x.commission_accrued)
                got = (s.result, s.payout, s.commission, s.win, s.commission_accrued)
            if want != got or s.stake != bet.amount_cents or s.wager != bet.wager or s.seat != bet.seat:
                flag("settlement_mismatch", bet.bet_id, f"recorded {got}, rules give {want}")
            total_stake += s.stake
            total_payout += s.payout
        sums = summaries.get(rid, [])
        if len(sums) != 1:
            flag("round_settled_count", rid, f"{len(sums)} RoundSettled events")
        elif (sums[0].stakes, sums[0].payouts, sums[0].bets) != (total_stake, total_payout, len(book.bets)):
            flag("round_totals", rid, f"recorded {sums[0].stakes}/{sums[0].payouts}/{sums[0].bets}, "
                                      f"bets add up to {total_stake}/{total_payout}/{len(book.bets)}")
    known = {b.bet_id for bk in books.values() for b in bk.bets}
    for bet_id in settled:
        if bet_id not in known:
            flag("unknown_bet_settled", bet_id, "a settlement for a bet no closed book holds")
