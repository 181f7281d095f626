"""An independent check of a floor's raw topics: what a chaos run must leave behind.

It reads every partition of every topic under a prefix with a plain aiokafka consumer (``read_committed``)
and decodes with :mod:`contracts.codecs` only: nothing of the services (no runtime, no cores, no ledger
code) is used, so a bug there cannot hide itself here. The ledger rules it checks against are re-stated
below from the cage ledger's documented posting rules (``services/projection/ledger.py``'s docstring), not
imported.

What it counts (:class:`RawReport`):

* ``lost``: an accepted bet (``BetPlaced``, not ``BetWithdrawn``) never settled, or missing from its
  round's closed book; a round opened (``RoundOpened``) never resolved or voided; a round resolved or voided
  never settled (``RoundSettled``); a command of the floor (on ``dealing.commands``/``wagering.commands``/
  ``shoe.commands``) that no event names as its cause (``causation_id``) nor as a rejected command.
* ``doubled``: every settlement of a bet beyond its first (distinct events, i.e. distinct seqs), every
  ``RoundOpened``/``RoundResolved``/``RoundVoided``/``RoundSettled`` of a round beyond its first, every
  ``BetPlaced`` of a bet id beyond its first, every ledger ``entry_id`` posted more than once, every
  ``OddsUpdated`` of a point of a shoe (table, shoe, step, trigger, round, view) beyond its first (the odds
  are published ahead of their inputs' offsets: issue 30).
* ``seq_conflicts``: every (stream, table, seq) slot held by more than one record (identical copies and
  different events, counted apart in ``seq_duplicates_identical`` / ``seq_duplicates_different``) plus every
  missing seq (``seq_gaps``), over every event topic (the projection's and the shoe's vault included).
* ``ledger_diff_cents``: for every account, the absolute difference between its balance on
  ``projection.ledger`` (entries counted once per ``entry_id``) and the balance the settlement and wagering
  events imply (each event counted once per ``event_id``), summed over accounts.
* ``broken_rejections``: rejections whose reason means the floor is broken (``no_open_shoe``,
  ``unknown_round``), by reason; ``dlq_records``: records on any ``*.dlq`` topic; ``undecodable``: records of
  an event topic that do not decode at all.

:attr:`RawReport.clean` is true only when every one of these is zero.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    BetWithdrawn,
    CommandRejected,
    CommissionAccrued,
    CommissionCollected,
    LedgerPosted,
    OddsUpdated,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
)

#: rejection reasons that mean the floor is broken (issue 8: a dealer whose round cannot open, bets lost)
BROKEN_REASONS = frozenset({"no_open_shoe", "unknown_round"})
#: the streams whose events show a table making progress (the stall measure)
PROGRESS_STREAMS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
EVENT_TOPICS = T.EVENT_TOPICS + T.PROJECTION_TOPICS
#: commands the floor (or a service) sends that must each get an answer
ANSWERED_COMMANDS = T.COMMAND_TOPICS


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record as Kafka holds it: topic (base name, without the prefix), partition, offset, key, value
    bytes, timestamp (ms since the epoch)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int


def _connection(bootstrap: str) -> dict[str, object]:
    """aiokafka connection options for ``bootstrap``: on a secured broker the environment's SASL settings
    (``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*``). Only the connection settings of the services' package are
    used, none of their logic."""
    from services.runtime.settings import env_client_options

    return env_client_options(bootstrap)


async def read_all(bootstrap: str, prefix: str, topics: Iterable[str] = T.ALL_TOPICS,
                   timeout_s: float = 120.0) -> dict[str, list[RawRecord]]:
    """Every committed record of every partition of each existing ``prefix + topic``, by base topic name,
    in partition/offset order. Topics that do not exist are left out (reading one must not create it).
    Raises :class:`TimeoutError` if the end offsets are not reached within ``timeout_s``."""
    from aiokafka.protocol.metadata import MetadataRequest

    admin = AIOKafkaAdminClient(**_connection(bootstrap))
    await admin.start()
    try:
        # these topics' metadata alone (not the broker's every topic), none created by asking; a missing one
        # answers with an error code and is left out
        asked = MetadataRequest([prefix + b for b in topics], allow_auto_topic_creation=False)
        described = (await admin._send_request(asked)).to_object()["topics"]
    finally:
        await admin.close()
    partitions = {t["topic"]: sorted(p["partition"] for p in t["partitions"]) for t in described
                  if t["error_code"] == 0}
    consumer = AIOKafkaConsumer(**_connection(bootstrap), enable_auto_commit=False,
                                isolation_level="read_committed", auto_offset_reset="earliest",
                                max_partition_fetch_bytes=8 * 1024 * 1024)
    await consumer.start()
    out: dict[str, list[RawRecord]] = {}
    try:
        tps: list[TopicPartition] = []
        for base in topics:
            full = prefix + base
            if full not in partitions:
                continue
            out[base] = []
            tps += [TopicPartition(full, p) for p in partitions[full]]
        if not tps:
            return out
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        todo = {tp for tp in tps if ends[tp] > 0}
        while todo:
            if loop.time() > deadline:
                raise TimeoutError(f"could not read {len(todo)} partition(s) to their end in {timeout_s} s")
            batch = await consumer.getmany(*todo, timeout_ms=500)
            for tp, recs in batch.items():
                base = tp.topic[len(prefix):]
                out[base] += [RawRecord(base, tp.partition, r.offset, r.key, r.value, r.timestamp) for r in recs]
            for tp in list(todo):
                if await consumer.position(tp) >= ends[tp]:
                    todo.discard(tp)
    finally:
        await consumer.stop()
    return out


@dataclass
class Finding:
    """One thing wrong, for a person to read: its kind, the table, and where or what."""

    kind: str
    table_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.table_id} {self.kind}: {self.detail}"


@dataclass
class RawReport:
    """The figures of the raw check (see the module docstring) and the findings behind them."""

    rounds_opened: int = 0
    rounds_resolved: int = 0
    rounds_voided: int = 0
    rounds_settled: int = 0
    bets_accepted: int = 0
    bets_settled: int = 0
    ledger_entries: int = 0
    lost: int = 0
    doubled: int = 0
    seq_duplicates_identical: int = 0
    seq_duplicates_different: int = 0
    seq_gaps: int = 0
    ledger_diff_cents: int = 0
    broken_rejections: Counter[str] = field(default_factory=Counter)
    dlq_records: Counter[str] = field(default_factory=Counter)
    undecodable: int = 0
    unknown_types: Counter[str] = field(default_factory=Counter)
    lost_by_kind: Counter[str] = field(default_factory=Counter)
    doubled_by_kind: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    #: account balances (cents, debits +) on ``projection.ledger``, each entry once
    ledger: dict[str, int] = field(default_factory=dict)
    #: per table, the Kafka timestamps (ms) of its events on the service streams, sorted (stall measure)
    progress_ms: dict[str, list[int]] = field(default_factory=dict)

    @property
    def seq_conflicts(self) -> int:
        """Slots held twice (identical or not) plus missing seqs."""
        return self.seq_duplicates_identical + self.seq_duplicates_different + self.seq_gaps

    @property
    def clean(self) -> bool:
        return not (self.lost or self.doubled or self.seq_conflicts or self.ledger_diff_cents
                    or sum(self.broken_rejections.values()) or sum(self.dlq_records.values()) or self.undecodable)

    def summary_lines(self) -> list[str]:
        """A few lines saying what was counted and, when not clean, what kinds of failures were found."""
        lines = [
            (f"rounds opened {self.rounds_opened}, resolved {self.rounds_resolved}, voided {self.rounds_voided}, "
             f"settled {self.rounds_settled}; bets accepted {self.bets_accepted}, settled {self.bets_settled}; "
             f"ledger entries {self.ledger_entries}"),
            f"lost {self.lost} {dict(self.lost_by_kind)}; doubled {self.doubled} {dict(self.doubled_by_kind)}",
            (f"seq: {self.seq_duplicates_different} slots with different events, {self.seq_duplicates_identical} "
             f"identical copies, {self.seq_gaps} gaps; ledger diff {self.ledger_diff_cents} cents"),
            (f"broken-floor rejections {dict(self.broken_rejections)}; DLQ records {dict(self.dlq_records)}; "
             f"undecodable {self.undecodable}; unknown types {dict(self.unknown_types)}"),
        ]
        return lines


class _Decoded:
    """The decoded contents of the topics: events per topic (with their records) and commands."""

    def __init__(self, records: dict[str, list[RawRecord]], report: RawReport):
        self.events: dict[str, list[tuple[RawRecord, Envelope]]] = defaultdict(list)
        self.commands: dict[str, list[CommandEnvelope]] = defaultdict(list)
        for topic in EVENT_TOPICS:
            for rec in records.get(topic, []):
                try:
                    self.events[topic].append((rec, decode_event(rec.value)))
                except UnknownMessageType as e:
                    report.unknown_types[e.type_name] += 1
                except Undecodable as e:
                    report.undecodable += 1
                    report.findings.append(Finding("undecodable", _key(rec), f"{topic}[{rec.partition}]@{rec.offset}: {e}"))
        for topic in ANSWERED_COMMANDS:
            for rec in records.get(topic, []):
                try:
                    self.commands[topic].append(decode_command(rec.value))
                except (UnknownMessageType, Undecodable):
                    continue  # the service dead-letters or skips it: counted through the DLQ
        for topic in T.DLQ_TOPICS:
            if records.get(topic):
                report.dlq_records[topic] = len(records[topic])

    def unique(self, topic: str) -> list[Envelope]:
        """The topic's events, each ``event_id`` once (first occurrence), in partition/offset order."""
        seen: set[str] = set()
        out = []
        for _, env in self.events.get(topic, []):
            if env.event_id not in seen:
                seen.add(env.event_id)
                out.append(env)
        return out


def _key(rec: RawRecord) -> str:
    return rec.key.decode("utf-8", "replace") if rec.key is not None else "?"


def check(records: dict[str, list[RawRecord]]) -> RawReport:
    """Check the raw records of a quiet floor (nothing still in play). Pure: no I/O."""
    rep = RawReport()
    d = _Decoded(records, rep)
    _check_seqs(d, rep)
    _check_rounds_and_bets(d, rep)
    _check_commands(d, rep)
    _check_ledger(d, rep)
    _check_odds(d, rep)
    progress: dict[str, list[int]] = defaultdict(list)
    for topic in PROGRESS_STREAMS:
        for rec, env in d.events.get(topic, []):
            progress[env.table_id].append(rec.timestamp_ms)
    rep.progress_ms = {t: sorted(v) for t, v in progress.items()}
    return rep


def _lose(rep: RawReport, kind: str, table: str, detail: str) -> None:
    rep.lost += 1
    rep.lost_by_kind[kind] += 1
    rep.findings.append(Finding(f"lost:{kind}", table, detail))


def _double(rep: RawReport, kind: str, table: str, detail: str, n: int = 1) -> None:
    rep.doubled += n
    rep.doubled_by_kind[kind] += n
    rep.findings.append(Finding(f"doubled:{kind}", table, detail))


def _tag(env: Envelope) -> str:
    return str(type(env.payload).__struct_config__.tag)


def _check_seqs(d: _Decoded, rep: RawReport) -> None:
    for pairs in d.events.values():
        slots: dict[tuple[str, str, int], list[Envelope]] = defaultdict(list)
        for _, env in pairs:
            slots[(env.stream, env.table_id, env.seq)].append(env)
        top: dict[tuple[str, str], set[int]] = defaultdict(set)
        for (stream, table, seq), held in slots.items():
            top[(stream, table)].add(seq)
            if len(held) > 1:
                same = all(h == held[0] for h in held[1:])
                if same:
                    rep.seq_duplicates_identical += len(held) - 1
                else:
                    rep.seq_duplicates_different += len(held) - 1
                rep.findings.append(Finding("seq_conflict", table, f"{stream}#{seq} held {len(held)} times: "
                                            + ", ".join(_tag(h) for h in held) + (" (identical)" if same else "")))
        for (stream, table), seqs in top.items():
            missing = set(range(1, max(seqs) + 1)) - seqs
            if missing:
                rep.seq_gaps += len(missing)
                rep.findings.append(Finding("seq_gap", table, f"{stream} misses {len(missing)} seq(s), first "
                                            f"{min(missing)}"))


def _check_odds(d: _Decoded, rep: RawReport) -> None:
    """Every ``OddsUpdated`` of one point of a shoe beyond its first is doubled (distinct events: a copy of
    one event at its seq is a seq conflict instead)."""
    points: Counter[tuple[str, str, int, str, str, str]] = Counter()
    for env in d.unique(T.PROJECTION_ODDS):
        p = env.payload
        if isinstance(p, OddsUpdated):
            points[(env.table_id, p.shoe_id, p.step, p.trigger, p.round_id, p.view)] += 1
    for (table, shoe, step, trigger, round_id, view), n in points.items():
        if n > 1:
            _double(rep, "odds_updated", table, f"{view} odds of {shoe} step {step} ({trigger} {round_id}) "
                                                f"published {n} times", n - 1)


def _check_rounds_and_bets(d: _Decoded, rep: RawReport) -> None:
    opened: Counter[tuple[str, str]] = Counter()
    done: Counter[tuple[str, str]] = Counter()
    voided: set[tuple[str, str]] = set()
    retried: list[Envelope] = []
    for env in d.unique(T.DEALING_EVENTS):
        p = env.payload
        t = env.table_id
        if isinstance(p, RoundOpened):
            opened[(t, p.round_id)] += 1
        elif isinstance(p, RoundResolved):
            done[(t, p.round_id)] += 1
            rep.rounds_resolved += 1
        elif isinstance(p, RoundVoided):
            done[(t, p.round_id)] += 1
            voided.add((t, p.round_id))
            rep.rounds_voided += 1
        elif isinstance(p, CommandRejected) and p.reason in BROKEN_REASONS:
            retried.append(env)
    # a round refused no_open_shoe that opened when the dealer tried again (the dealing service hears of a
    # just-loaded shoe a few ms after the dealer) is the floor working; one that never opened is not
    for env in retried:
        p = env.payload
        assert isinstance(p, CommandRejected)
        if p.reason == "no_open_shoe" and p.command == "open_round" and (env.table_id, env.round_id) in opened:
            continue
        rep.broken_rejections[p.reason] += 1
        rep.findings.append(Finding(f"rejected:{p.reason}", env.table_id, f"{p.command} {p.command_id}: {p.detail}"))
    rep.rounds_opened = len(opened)
    for (t, r), n in opened.items():
        if n > 1:
            _double(rep, "round_opened", t, f"round {r} opened {n} times", n - 1)
        if (t, r) not in done:
            _lose(rep, "round_unresolved", t, f"round {r} opened, never resolved nor voided")
    for (t, r), n in done.items():
        if n > 1:
            _double(rep, "round_resolved", t, f"round {r} resolved or voided {n} times", n - 1)

    placed: dict[tuple[str, str], BetPlaced] = {}
    withdrawn: set[tuple[str, str]] = set()
    books: dict[tuple[str, str], set[str]] = {}
    for env in d.unique(T.WAGERING_EVENTS):
        p = env.payload
        t = env.table_id
        if isinstance(p, BetPlaced):
            if (t, p.bet_id) in placed:
                _double(rep, "bet_placed", t, f"bet {p.bet_id} accepted twice")
            placed[(t, p.bet_id)] = p
        elif isinstance(p, BetWithdrawn):
            withdrawn.add((t, p.bet_id))
        elif isinstance(p, BettingClosed):
            if (t, p.round_id) in books:
                _double(rep, "betting_closed", t, f"round {p.round_id} closed twice")
            else:
                books[(t, p.round_id)] = {b.bet_id for b in p.bets}
        elif isinstance(p, BetRejected) and p.reason in BROKEN_REASONS:
            rep.broken_rejections[p.reason] += 1
            rep.findings.append(Finding(f"rejected:{p.reason}", t, f"bet {p.command_id} on {p.round_id}: {p.detail}"))
        elif isinstance(p, CommandRejected) and p.reason in BROKEN_REASONS:
            rep.broken_rejections[p.reason] += 1
            rep.findings.append(Finding(f"rejected:{p.reason}", t, f"{p.command} {p.command_id}: {p.detail}"))

    settled: Counter[tuple[str, str]] = Counter()
    rounds_settled: Counter[tuple[str, str]] = Counter()
    for env in d.unique(T.SETTLEMENT_EVENTS):
        p = env.payload
        if isinstance(p, BetSettled):
            settled[(env.table_id, p.bet_id)] += 1
        elif isinstance(p, RoundSettled):
            rounds_settled[(env.table_id, p.round_id)] += 1
    rep.rounds_settled = len(rounds_settled)
    for (t, r), n in rounds_settled.items():
        if n > 1:
            _double(rep, "round_settled", t, f"round {r} settled {n} times", n - 1)
    for (t, r) in done:
        if (t, r) not in rounds_settled:
            _lose(rep, "round_unsettled", t, f"round {r} {'voided' if (t, r) in voided else 'resolved'}, never settled")
    accepted = {k: p for k, p in placed.items() if k not in withdrawn}
    rep.bets_accepted = len(accepted)
    rep.bets_settled = sum(1 for k in accepted if settled[k])
    for (t, bet), p in accepted.items():
        n = settled[(t, bet)]
        if n == 0:
            _lose(rep, "bet_unsettled", t, f"bet {bet} ({p.wager} {p.amount_cents}c on {p.round_id}) never settled")
        elif n > 1:
            _double(rep, "bet_settled", t, f"bet {bet} settled {n} times", n - 1)
        book = books.get((t, p.round_id))
        if book is not None and bet not in book:
            _lose(rep, "bet_not_in_book", t, f"bet {bet} accepted on {p.round_id}, missing from its closed book")


def _check_commands(d: _Decoded, rep: RawReport) -> None:
    answered: set[str] = set()
    for topic in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
        for _, env in d.events.get(topic, []):
            answered.add(env.causation_id)
            p = env.payload
            if isinstance(p, (CommandRejected, BetRejected)):
                answered.add(p.command_id)
    for topic in ANSWERED_COMMANDS:
        seen: set[str] = set()
        for cmd in d.commands.get(topic, []):
            if cmd.command_id in seen:
                continue  # a re-sent command (same id): one answer is owed
            seen.add(cmd.command_id)
            if cmd.command_id not in answered:
                _lose(rep, "command_unanswered", cmd.table_id,
                      f"{topic} {cmd.payload.__struct_config__.tag} {cmd.command_id} got no answer")


def expected_ledger(d: _Decoded) -> dict[str, int]:
    """Account balances (cents, debits +) the settlement and wagering events imply, by the cage ledger's
    posting rules: ``stake_taken`` per bet of a closed book (patron −S, table wagers +S); per
    ``BetSettled`` wagers −S, game S−G, patron +G with G = payout + deducted commission, then patron −C and
    commission +C for a deducted commission; ``CommissionAccrued`` seat owed −C, commission +C;
    ``CommissionCollected`` patron −C, seat owed +C."""
    bal: Counter[str] = Counter()
    for env in d.unique(T.WAGERING_EVENTS):
        p = env.payload
        if isinstance(p, BettingClosed):
            for b in p.bets:
                bal[f"patron:{b.player_id}"] -= b.amount_cents
                bal[f"table:{env.table_id}:wagers"] += b.amount_cents
    for env in d.unique(T.SETTLEMENT_EVENTS):
        p = env.payload
        t = env.table_id
        if isinstance(p, BetSettled):
            deducted = 0 if p.commission_accrued else p.commission
            gross = p.payout + deducted
            bal[f"table:{t}:wagers"] -= p.stake
            bal[f"table:{t}:game"] += p.stake - gross
            bal[f"patron:{p.player_id}"] += gross - deducted
            bal[f"table:{t}:commission"] += deducted
        elif isinstance(p, CommissionAccrued):
            bal[f"table:{t}:seat:{p.seat}:commission_owed"] -= p.amount_cents
            bal[f"table:{t}:commission"] += p.amount_cents
        elif isinstance(p, CommissionCollected):
            bal[f"patron:{p.player_id}"] -= p.amount_cents
            bal[f"table:{t}:seat:{p.seat}:commission_owed"] += p.amount_cents
    return dict(bal)


def ledger_balances(d: _Decoded, rep: RawReport) -> dict[str, int]:
    """Account balances on ``projection.ledger``, each ``entry_id`` counted once (a repeat is doubled)."""
    bal: Counter[str] = Counter()
    entries: Counter[str] = Counter()
    for env in d.unique(T.PROJECTION_LEDGER):
        p = env.payload
        if not isinstance(p, LedgerPosted):
            continue
        entries[p.entry_id] += 1
        if entries[p.entry_id] > 1:
            continue
        for line in p.lines:
            bal[line.account] += line.amount_cents
    rep.ledger_entries = len(entries)
    for entry, n in entries.items():
        if n > 1:
            _double(rep, "ledger_entry", "?", f"ledger entry {entry} posted {n} times", n - 1)
    return dict(bal)


def _check_ledger(d: _Decoded, rep: RawReport) -> None:
    want = expected_ledger(d)
    got = rep.ledger = ledger_balances(d, rep)
    for account in sorted(set(want) | set(got)):
        diff = abs(got.get(account, 0) - want.get(account, 0))
        if diff:
            rep.ledger_diff_cents += diff
            rep.findings.append(Finding("ledger_diff", account.split(":")[1] if account.startswith("table:") else "?",
                                        f"{account}: ledger {got.get(account, 0)}, settlements imply "
                                        f"{want.get(account, 0)}"))


async def check_prefix(bootstrap: str, prefix: str) -> RawReport:
    """Read every topic under ``prefix`` and :func:`check` it."""
    return check(await read_all(bootstrap, prefix))


__all__ = ["BROKEN_REASONS", "Finding", "RawRecord", "RawReport", "check", "check_prefix", "read_all"]
