"""Audit: re-derive every round and every settlement from the raw card and bet events.

Pure: takes decoded envelopes (from the log, a file, or memory) and returns the discrepancies. Checks:

* every stream of every table has a gapless ``seq`` from 1 with no duplicate, and each ``event_id`` is
  the deterministic id of its (stream, table, seq);
* every closed shoe's reveal hashes to its commitment, and every card drawn from it, wherever the log holds
  it (after the shoe's ``ShoeClosed`` too), is the revealed order's after the cut and the burn, in order, with
  the right count of cards left and the cutting card where the rules put it (:mod:`croupier.audit_shoes`:
  ``card_not_in_order``, ``card_after_shoe_closed``, ``duplicate_card`` at the record); a round with a card
  substituted is re-dealt from the card the reveal confirms;
* every round: the cards drawn for it (from the round's own shoe), dealt by the rules core, give exactly the
  recorded hands, point counts, winner, naturals, cards required, dragon 7 / panda 8; each ``CardDealt``
  carries the card drawn for it and names the same rule and table cell; ``PointsAnnounced`` gives the
  two-card point counts;
* chemin de fer (:mod:`croupier.audit_chemin`): each round is re-dealt with its recorded option decisions; the
  Dominant Player is the one 13:69F-4.8(c) gives from the closed book, each option was offered to and decided
  by its controller (4.8(b)-(c)) or by the table's default from its deadline, and the bank's settlement is
  the rules core's (``dominant_player_mismatch``, ``option_mismatch``, ``bank_mismatch``);
* the order of play (13:69F-3.2(d), 3.7(b)), by the log's times (each event's ``occurred_at`` is the broker's
  append time of the command record that caused it): no card of a round left the shoe before its
  ``BettingClosed`` ("No more bets") unless dealing recorded it as an ``Irregularity`` that keeps it out of
  the round (``card_before_no_more_bets``), no card was drawn for a round that was never opened
  (``card_outside_round``), and no bet was placed or withdrawn after the round's first card left the shoe
  (``bet_after_first_card``, whatever dealing made of that card);
* every closed bet book is the bets placed minus the bets withdrawn, and holds no bet placed after its
  "No more bets" by the log's time (``bet_after_no_more_bets``: the call returns such a bet);
* every bet of every closed book is settled, and every ``BetSettled`` record, wherever it stands, is the
  rules core's settlement of its bet under the table configuration in force when the round opened
  (:mod:`croupier.audit_settle`: ``settlement_mismatch``, ``bet_settled_twice``, ``unknown_bet_settled`` at
  the record); every ``RoundResolved`` is the re-deal's (``outcome_mismatch``, ``duplicate_result``); no bet is
  placed or withdrawn after its round's book closed (``bet_after_book_closed``); every ``RoundSettled`` equals the sum of its bets; every
  ``CommissionAccrued`` is the commission a player's bets at a seat accrued in the round, with a running
  total per seat and player that ``CommissionCollected`` empties;
* the floor worked: every round opened was dealt (resolved or voided: ``round_not_dealt``) and every round
  dealt was settled (``round_not_settled``), beyond the rounds still in play at a table's tail (counted as
  pending, below); and no command was refused for a reason that means the system failed
  (:mod:`croupier.audit_floor`: ``no_open_shoe`` on the shoe the log shows in play; ``unknown_round`` for a
  round dealing had opened): each such rejection is a ``floor_broken`` discrepancy, counted by reason
  (``broken_rejections``). A person's command rightly refused (Open round after Close shoe, a shoe or round
  not in play) is the floor working: counted by reason (``refused``), not a discrepancy;
* the curator (13:69F-3.6(b), 3.11(a)), at a table with one: the shoe offered only at such a table and only
  when no one holds it (``curator_on_dealer_table``, ``curator_offer_while_held``); every ``ShoeKept`` and
  ``ShoePassed`` names the participant holding the shoe (``curator_mismatch``); after every round the Banker's
  Hand lost the shoe passed by rule before the next round (``curator_not_passed``) and was never kept
  (``curator_kept_on_banker_loss``), and no pass claims that rule for a round the Banker's Hand did not lose
  (``curator_pass_unfounded``); the curator's own keep or pass names the round just resolved
  (``curator_out_of_turn``), and every other resolved round has its keep or pass before the next round
  opens (``curator_decision_missing``); a pass goes to another seat (``curator_mismatch``);
* the vault (:mod:`croupier.vaultcheck`), when the reader passes its records: each sealed shoe order opens
  under the vault key (when given) to the order revealed at close, or before the close to the commitment
  (``vault_unopenable``, ``vault_mismatch``, ``vault_missing``); without the key the encrypted records are
  counted as not checked (:attr:`AuditReport.vault`), neither clean nor dirty;
* who did what (:mod:`croupier.provenance`): every event names its principal, and, when the reader passes
  the command topics' records, each event a command caused matches that command's record: its topic's one
  writer, the command's actor, the record's append time as the event's time (``unattributed_event``,
  ``command_missing``, ``principal_mismatch``, ``actor_mismatch``, ``event_time_mismatch``,
  ``claim_mismatch``, ``wrong_topic_accepted``, ``unattributed_command``, ``cause_missing``); without them
  :attr:`AuditReport.provenance` says the commands were not read;
* the cage's books (:mod:`croupier.audit_cage`), when the reader passes ``cage.events``: every count adds up,
  every slip's steps follow its request with its amount, every closer's and soft count's figures are their
  parts' (``cage_count_mismatch``, ``fill_forged``, ``credit_forged``, ``slip_amount_mismatch``,
  ``tray_mismatch``, ``drop_mismatch``, ``count_team_too_small``, ``cage_out_of_shift``, ``game_result_mismatch``,
  ``marker_mismatch``); a marker buy-in in flight at the end of the log is a ``marker_unsettled`` notice
  (:attr:`AuditReport.notices`), not a discrepancy;
* records that could not be decoded at all (passed in by the reader as :class:`UndecodableRecord`) are
  discrepancies of kind ``undecodable_record``; well-formed events of a type this version does not know
  (passed in as :class:`UnknownEvent`) are only counted (``unknown_types``), as the evolution rules say
  consumers skip them, but they hold their ``seq``: a newer producer's event is not a gap.

The log of a live floor ends mid-round. A round at a table's tail (no later round of the table is resolved,
voided or settled) that is not resolved yet, or resolved but not settled at all yet, is counted as pending
(``rounds_pending``), not as a discrepancy. A round settled in part is always a discrepancy (a round's
settlements are published in one transaction).

Each discrepancy names where (:attr:`Discrepancy.where`: the record, ``stream#seq``, when one record is at
fault; else the round, bet or shoe), a plain sentence, and its round (:attr:`Discrepancy.round_id`).

Discrepancy kinds: ``duplicate_seq``, ``bad_event_id``, ``seq_gap``, ``undecodable_record``,
``commitment_mismatch``, ``burn_mismatch``, ``burn_count``, ``card_not_in_order``, ``draw_positions``,
``shoe_bookkeeping``, ``shoe_mismatch``, ``no_config``, ``round_underivable``, ``extra_cards``,
``outcome_mismatch``, ``draw_reason_mismatch``, ``dealt_card_mismatch``, ``points_mismatch``,
``book_mismatch``, ``unresolved_round``, ``settlement_count``, ``settlement_mismatch``, ``bet_settled_twice``,
``card_after_shoe_closed``, ``duplicate_card``, ``duplicate_result``, ``bet_after_book_closed``,
``round_settled_count``, ``round_totals``, ``commission_mismatch``, ``unknown_bet_settled``,
``round_not_dealt``, ``round_not_settled``, ``floor_broken``, ``card_before_no_more_bets``,
``card_outside_round``, ``bet_after_first_card``, ``bet_after_no_more_bets``, ``vault_unopenable``, ``vault_mismatch``, ``vault_missing``,
``unattributed_event``, ``command_missing``, ``principal_mismatch``, ``actor_mismatch``, ``event_time_mismatch``,
``claim_mismatch``, ``wrong_topic_accepted``, ``unattributed_command``, ``cause_missing``,
``curator_on_dealer_table``, ``curator_offer_while_held``, ``curator_mismatch``, ``curator_not_passed``,
``curator_kept_on_banker_loss``, ``curator_pass_unfounded``, ``curator_out_of_turn``,
``curator_decision_missing``, ``dominant_player_mismatch``, ``option_mismatch``, ``bank_mismatch``,
``bank_passing``, ``card_dealer_mismatch``, and the cage's above.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from baccarat import round as R
from baccarat.cards import hand_points, parse_card
from baccarat.errors import BaccaratError
from baccarat.table import TableConfig
from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    BetLine,
    BetPlaced,
    BetSettled,
    BettingClosed,
    BetWithdrawn,
    CardDealt,
    CommissionAccrued,
    CommissionCollected,
    Irregularity,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    TableOpened,
)
from contracts.vault import VaultKeys
from croupier import (
    audit_cage,
    audit_chemin,
    audit_curator,
    audit_floor,
    audit_play,
    audit_seq,
    audit_settle,
    audit_shoes,
)
from croupier.audit_report import AuditReport, Discrepancy, UndecodableRecord, UnknownEvent
from croupier.provenance import CommandRecord, check_provenance
from croupier.vaultcheck import VaultReport, check_vault
from services.runtime.translate import table_config

#: the ``Irregularity`` kinds whose card dealing kept out of the round (unless ``dealt_by_the_rules``)
CARD_IRREGULARITIES = frozenset({"card_before_no_more_bets", "card_out_of_order", "card_on_wrong_hand",
                                 "card_after_round_ended"})
#: re-exported: the rejection reasons and commands the floor verdict looks at (croupier/audit_floor.py)
BROKEN_REASONS, BROKEN_COMMANDS = audit_floor.BROKEN_REASONS, audit_floor.BROKEN_COMMANDS


def audit(
    envelopes: Iterable[Envelope],
    *,
    table_id: str | None = None,
    shoe_id: str | None = None,
    undecodable: Iterable[UndecodableRecord] = (),
    unknown: Iterable[UnknownEvent] = (),
    vault: Iterable[Envelope] | None = None,
    vault_keys: VaultKeys | None = None,
    vault_reason: str = "",
    commands: Iterable[CommandRecord] | None = None,
    commands_reason: str = "",
) -> AuditReport:
    """Audit the given events (any order across streams; per-stream order by ``seq``).

    ``table_id`` / ``shoe_id`` restrict the audit to one table / the rounds of one shoe (the ``seq``
    checks still cover every event of the tables audited). ``undecodable``: records the reader could not
    decode (each one is a discrepancy); ``unknown``: events of types this version does not know (counted
    by type, not discrepancies; each holds its seq). ``vault``: the records of ``shoe.vault`` (None: not
    read, with ``vault_reason`` saying why), checked with ``vault_keys`` when given
    (:func:`croupier.vaultcheck.check_vault`). ``commands``: the command topics' records (None: not read,
    with ``commands_reason`` saying why), for :func:`croupier.provenance.check_provenance`.
    """
    by_table: dict[str, list[Envelope]] = defaultdict(list)
    n = 0
    envelopes = list(envelopes)
    for env in envelopes:
        if table_id is not None and env.table_id != table_id:
            continue
        by_table[env.table_id].append(env)
        n += 1
    skipped: dict[str, list[UnknownEvent]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for k in unknown:
        if table_id is not None and k.table_id != table_id:
            continue
        skipped[k.table_id].append(k)
        counts[k.type_name] += 1
    # the tables that played (an event on a game stream): the cage window's own key (cage.events alone) is no table
    played = sum(1 for evs in by_table.values() if any(e.stream != "cage.events" for e in evs))
    report = AuditReport(events=n, tables=played, discrepancies=[], unknown_types=dict(sorted(counts.items())))
    for tid in sorted(set(by_table) | set(skipped)):
        _audit_table(tid, by_table.get(tid, []), report, shoe_id, skipped.get(tid, []))
    assert report.discrepancies is not None
    found = report.discrepancies
    if vault is not None:
        report.vault = check_vault(vault, (e for e in envelopes if e.stream == "shoe.events"), vault_keys,
                                   lambda t, k, w, d: found.append(Discrepancy(t, k, w, d)),
                                   table_id=table_id, shoe_id=shoe_id)
    else:
        report.vault = VaultReport(reason=vault_reason or "the vault was not read")
    report.provenance = check_provenance(envelopes, commands, lambda t, k, w, d: found.append(Discrepancy(t, k, w, d)),
                                         commands_reason, table_id=table_id)
    audit_cage.check_cage(envelopes, lambda t, k, w, d: found.append(Discrepancy(t, k, w, d)), table_id=table_id,
                          notice=lambda t, k, w, d: report.notices.append(Discrepancy(t, k, w, d)))
    for u in undecodable:
        if table_id is not None and u.table_id not in (table_id, "?"):
            continue
        report.undecodable_records += 1
        report.discrepancies.append(Discrepancy(u.table_id, "undecodable_record",
                                                f"{u.topic}[{u.partition}]@{u.offset}", u.error))
    return report


def _audit_table(tid: str, envs: list[Envelope], rep: AuditReport, only_shoe: str | None,
                 unknown: list[UnknownEvent]) -> None:
    bad = rep.discrepancies
    assert bad is not None
    mine = len(bad)  # this table's discrepancies start here

    def flag(kind: str, where: str, detail: str, round_id: str = "") -> None:
        bad.append(Discrepancy(tid, kind, where, detail, round_id))

    # ---- bookkeeping: gapless seq, no duplicates, derived event ids (croupier/audit_seq.py) -------------
    streams = audit_seq.check_seqs(tid, envs, unknown, flag)

    # ---- the floor worked: a person's refused command is not a failure (croupier/audit_floor.py) -------------
    audit_floor.judge_rejections(streams, only_shoe, flag, rep.broken_rejections, rep.refused)

    shoe_ev = streams.get("shoe.events", [])
    deal_ev = streams.get("dealing.events", [])
    wager_ev = streams.get("wagering.events", [])
    settle_ev = streams.get("settlement.events", [])

    # ---- shoes: commitment, and every card drawn is the revealed order's (croupier/audit_shoes.py) ---------
    shoes = audit_shoes.check_shoes(shoe_ev, only_shoe, flag)
    rep.shoes_verified += shoes.verified

    # ---- rounds: re-deal each from its drawn cards ----------------------------------------------------
    config: TableConfig | None = None
    round_config: dict[str, TableConfig] = {}
    round_shoe: dict[str, str] = {}
    round_opened: dict[str, RoundOpened] = {}
    chem_ev: dict[str, list[Envelope]] = defaultdict(list)  # chemin de fer: a round's cards and options
    opened_order: list[str] = []
    dealt: dict[str, list[CardDealt]] = defaultdict(list)
    announced: dict[str, list[PointsAnnounced]] = defaultdict(list)
    resolved: dict[str, RoundResolved] = {}  # the round's first result
    results: dict[str, list[Envelope]] = defaultdict(list)  # every result record of the round
    voided: set[str] = set()
    misdealt: dict[str, int] = {}  # round -> card number put on the Player's Hand against Table 1 (3.12(a))
    skipped: dict[str, set[int]] = defaultdict(set)  # round -> card numbers dealing kept out of the round
    for e in deal_ev:
        p = e.payload
        if isinstance(p, TableOpened):
            try:
                config = table_config(p.config)
            except (BaccaratError, ValueError) as ex:
                flag("no_config", f"dealing.events#{e.seq}", f"the table configuration does not validate: {ex}")
                config = None
        elif isinstance(p, RoundOpened):
            if config is not None:
                round_config[p.round_id] = config
            round_shoe[p.round_id] = p.shoe_id
            round_opened[p.round_id] = p
            opened_order.append(p.round_id)
        elif isinstance(p, CardDealt):
            dealt[p.round_id].append(p)
            chem_ev[p.round_id].append(e)
        elif isinstance(p, audit_chemin.CHEM_EVENTS):
            chem_ev[p.round_id].append(e)
        elif isinstance(p, PointsAnnounced):
            announced[p.round_id].append(p)
        elif isinstance(p, RoundResolved):
            resolved.setdefault(p.round_id, p)
            results[p.round_id].append(e)
        elif isinstance(p, Irregularity) and p.kind == "unauthorised_player_third_card" and p.card_number:
            misdealt[p.round_id] = p.card_number
        elif isinstance(p, Irregularity) and p.kind in CARD_IRREGULARITIES and p.card_number \
                and p.disposition != "dealt_by_the_rules":
            skipped[p.round_id].add(p.card_number)
        elif isinstance(p, RoundVoided):
            voided.add(p.round_id)

    def in_scope(rid: str) -> bool:
        return not only_shoe or round_shoe.get(rid) == only_shoe

    outcomes: dict[str, R.Outcome] = {}
    for rid, res in resolved.items():
        if not in_scope(rid):
            continue
        cfg = round_config.get(rid)
        if cfg is None:
            flag("no_config", rid, "round resolved without a table configuration")
            continue
        shoe = round_shoe.get(rid)
        if res.shoe_id != shoe:
            flag("shoe_mismatch", rid, f"resolved on shoe {res.shoe_id}, opened on {shoe}")
        all_draws = shoes.draws_by_round.get(rid, [])
        others = sorted({sid for d in all_draws if (sid := str(getattr(d.payload, "shoe_id", ""))) != shoe})
        draws = audit_shoes.genuine_draws(all_draws, shoes.orders.get(shoe or ""))
        if others:
            flag("shoe_mismatch", rid, f"cards drawn from shoe(s) {', '.join(others)}, opened on {shoe}")
        if [d.card_number for d in draws] != list(range(1, len(draws) + 1)):
            flag("round_underivable", rid, f"card numbers drawn {[d.card_number for d in draws]}")
            continue
        draws = [d for d in draws if d.card_number not in skipped.get(rid, ())]
        numbers = [d.card_number for d in draws]
        mis = misdealt.get(rid)
        options = audit_chemin.decisions(chem_ev.get(rid, []))
        try:
            cards = [parse_card(d.card) for d in draws]
            o, rest = R.resolve_recorded(cards, cfg.ruleset, numbers.index(mis) + 1 if mis in numbers else None,
                                         player_option=options.get("player"), banker_option=options.get("banker"))
        except (BaccaratError, ValueError) as ex:  # too few cards drawn for the round, or not cards
            flag("round_underivable", rid, str(ex))
            continue
        outcomes[rid] = o
        rep.rounds_checked += 1
        if rest:
            flag("extra_cards", rid, f"{len(rest)} card(s) drawn beyond what the rules required")
        _check_results(results[rid], o, flag)
        cells = dealt.get(rid, [])
        rules = [(r.hand.value, r.position, r.rule, r.row, r.column) for r in o.reasons]
        recorded = [(d.hand, d.position, d.rule, d.row, d.column) for d in cells]
        if rules != recorded:
            flag("draw_reason_mismatch", rid, f"recorded {recorded}, rules give {rules}")
        used = [d.card for d in draws[:len(o.reasons)]]
        if [d.card for d in cells] != used:
            flag("dealt_card_mismatch", rid, f"dealt {[d.card for d in cells]}, the shoe gave {used}")
        pa = announced.get(rid, [])
        want_pa = (hand_points(o.player[:2]), hand_points(o.banker[:2]), o.player_natural or o.banker_natural)
        got_pa = [(a.player_points, a.banker_points, a.natural) for a in pa]
        if got_pa != [want_pa]:
            flag("points_mismatch", rid, f"announced {got_pa}, the first four cards give {want_pa}")

    # ---- the order of play: no card before "No more bets", no bet after a card (croupier/audit_play.py) -----
    audit_play.check_order_of_play(shoe_ev, wager_ev, set(round_shoe), skipped, in_scope, flag)

    # ---- bet books: placed minus withdrawn ---------------------------------------------------------------
    books: dict[str, BettingClosed] = {}
    book_seq: dict[str, int] = {}  # round -> the seq of its "No more bets"
    placed: dict[str, dict[str, BetLine]] = defaultdict(dict)
    placed_at: dict[str, datetime] = {}
    for e in wager_ev:
        p = e.payload
        if isinstance(p, (BetPlaced, BetWithdrawn)) and p.round_id in books and in_scope(p.round_id):
            # the wagering service refuses a bet once the book is closed: a record after it is forged
            flag("bet_after_book_closed", f"wagering.events#{e.seq}",
                 f"bet {p.bet_id} {'placed' if isinstance(p, BetPlaced) else 'withdrawn'} on round {p.round_id} "
                 f"after its book closed with \"No more bets\" (wagering.events#{book_seq[p.round_id]}); not in the "
                 "book, so neither settled nor returned", p.round_id)
        if isinstance(p, BetPlaced):
            placed[p.round_id][p.bet_id] = BetLine(bet_id=p.bet_id, seat=p.seat, player_id=p.player_id,
                                                   wager=p.wager, amount_cents=p.amount_cents)
            placed_at[p.bet_id] = e.occurred_at
        elif isinstance(p, BetWithdrawn):
            placed[p.round_id].pop(p.bet_id, None)
        elif isinstance(p, BettingClosed):
            books[p.round_id] = p
            book_seq[p.round_id] = e.seq
            if in_scope(p.round_id) and list(p.bets) != list(placed[p.round_id].values()):
                want_ids = list(placed[p.round_id])
                flag("book_mismatch", p.round_id, f"closed book {[b.bet_id for b in p.bets]} differs from the "
                                                  f"bets placed and not withdrawn {want_ids}")
            for b in p.bets if in_scope(p.round_id) else ():
                if b.bet_id in placed_at and placed_at[b.bet_id] > e.occurred_at:
                    flag("bet_after_no_more_bets", f"wagering.events#{e.seq}",
                         f"bet {b.bet_id} placed at {placed_at[b.bet_id].isoformat()} is in the book of round "
                         f"{p.round_id}, closed at {e.occurred_at.isoformat()} (13:69F-3.2(d))")

    # ---- chemin de fer: the Dominant Player and the options (13:69F-4.8(b)-(c)) --------------------------
    for rid, cfg in round_config.items():
        if cfg.variant.value == "chemin_de_fer" and in_scope(rid) and (rid in resolved or rid in voided):
            bk = books.get(rid)
            audit_chemin.check_round(cfg, rid, round_opened.get(rid), bk.bets if bk else None, chem_ev.get(rid, []),
                                     rid in voided, flag)
            audit_chemin.check_card_reads(rid, round_opened.get(rid), shoes.draws_by_round.get(rid, []), flag)
    chem_rounds = []  # the bank from round to round: every chemin de fer round in the order it opened
    for rid in opened_order:
        cfg_c, op = round_config.get(rid), round_opened.get(rid)
        if cfg_c is None or op is None or cfg_c.variant.value != "chemin_de_fer":
            continue
        bk = books.get(rid)
        result = "" if rid in voided else resolved[rid].winner if rid in resolved else None
        chem_rounds.append((rid, cfg_c, op, bk.bets if bk else None, result))
    audit_chemin.check_passing(chem_rounds, lambda k, r, d: flag(k, r, d) if in_scope(r) else None)

    # ---- settlements -----------------------------------------------------------------------------------
    bank_settled: dict[str, list[BankSettled]] = defaultdict(list)
    settled: dict[str, list[BetSettled]] = defaultdict(list)
    summaries: dict[str, list[RoundSettled]] = defaultdict(list)
    accrued_events: dict[str, list[CommissionAccrued]] = defaultdict(list)
    settled_rounds: set[str] = set()
    owed: dict[tuple[int, str], int] = defaultdict(int)  # (seat, player id): each player's commission box
    for e in settle_ev:
        p = e.payload
        if isinstance(p, BetSettled):
            settled[p.bet_id].append(p)
            settled_rounds.add(p.round_id)
        elif isinstance(p, RoundSettled):
            summaries[p.round_id].append(p)
            settled_rounds.add(p.round_id)
        elif isinstance(p, BankSettled):
            bank_settled[p.round_id].append(p)
        elif isinstance(p, CommissionAccrued):
            accrued_events[p.round_id].append(p)
            box = (p.seat, p.player_id)
            if p.owed_cents != owed[box] + p.amount_cents and (not only_shoe or in_scope(p.round_id)):
                flag("commission_mismatch", f"settlement.events#{e.seq}",
                     f"seat {p.seat} player {p.player_id} owed {owed[box]} + {p.amount_cents} accrued, "
                     f"recorded {p.owed_cents}")
            owed[box] = p.owed_cents
        elif isinstance(p, CommissionCollected):
            box = (p.seat, p.player_id)
            if p.amount_cents != owed[box] and not only_shoe:
                flag("commission_mismatch", f"settlement.events#{e.seq}",
                     f"seat {p.seat} player {p.player_id} owed {owed[box]}, collected {p.amount_cents}")
            owed[box] -= p.amount_cents

    # rounds in play at the table's tail: after the last round that was resolved, voided or settled
    position = {rid: i for i, rid in enumerate(opened_order)}
    last_done = max((position[r] for r in set(resolved) | voided if r in position), default=-1)
    last_settled = max((position[r] for r in settled_rounds if r in position), default=-1)

    for rid, book in books.items():
        if not in_scope(rid):
            continue
        if rid not in outcomes and rid not in voided:
            if rid in resolved:
                continue  # already reported above
            if rid in position and position[rid] > last_done:
                rep.rounds_pending += 1
                continue
            flag("unresolved_round", rid, "bets closed but the round has no result")
            continue
        if (rid not in settled_rounds and rid in position and position[rid] > last_settled
                and not any(settled.get(b.bet_id) for b in book.bets)):
            rep.rounds_pending += 1  # resolved, settlement not published yet
            continue
        total_stake = total_payout = total_commission = total_accrued = 0
        accrued_by_seat: dict[tuple[int, str], int] = defaultdict(int)  # (seat, player id)
        for bet in book.bets:
            rep.bets_checked += 1
            ss = settled.get(bet.bet_id, [])
            if not ss:  # a second settlement is ``bet_settled_twice`` at its record (croupier/audit_settle.py)
                flag("settlement_count", bet.bet_id, f"bet {bet.bet_id} of round {rid} was never settled "
                                                     "(settled 0 times)")
                continue
            s = ss[0]  # each record is checked against the rules by audit_settle, below
            total_stake += s.stake
            total_payout += s.payout
            total_commission += s.commission
            if s.commission_accrued:
                total_accrued += s.commission
                accrued_by_seat[(s.seat, s.player_id)] += s.commission
        house_result = total_stake - total_payout + total_accrued
        cfg_r = round_config.get(rid)
        if cfg_r is not None and cfg_r.variant.value == "chemin_de_fer":  # the bets are the bank's money
            opened_r = round_opened.get(rid)
            bank_commission, bank_accrued = audit_chemin.check_bank(
                cfg_r, rid, opened_r, book.bets, None if rid in voided else outcomes.get(rid),
                bank_settled.get(rid, []), flag)
            total_commission += bank_commission
            house_result = total_accrued + bank_commission
            if bank_accrued and opened_r is not None:
                accrued_by_seat[(opened_r.banker_seat, opened_r.banker_player_id)] += bank_accrued
        sums = summaries.get(rid, [])
        if len(sums) != 1:
            flag("round_settled_count", rid, f"{len(sums)} RoundSettled events")
        else:
            got_t = (sums[0].bets, sums[0].stakes, sums[0].payouts, sums[0].commission, sums[0].table_result)
            want_t = (len(book.bets), total_stake, total_payout, total_commission, house_result)
            if got_t != want_t:
                flag("round_totals", rid, f"recorded bets/stakes/payouts/commission/result {got_t}, "
                                          f"the bets add up to {want_t}")
        got_acc = sorted(((a.seat, a.player_id), a.amount_cents) for a in accrued_events.get(rid, []))
        if got_acc != sorted(accrued_by_seat.items()):
            flag("commission_mismatch", rid, f"accrued {got_acc}, the bets accrued {sorted(accrued_by_seat.items())}")
    for rid in opened_order:
        if not in_scope(rid) or rid in books and (rid in resolved or rid in voided):
            continue  # a closed book: its round was checked above
        if rid not in resolved and rid not in voided:
            if rid in books:
                continue  # unresolved_round, above
            if position[rid] > last_done:
                rep.rounds_pending += 1
            else:
                flag("round_not_dealt", rid, "round opened, never dealt: neither resolved nor voided, and "
                                             "later rounds of the table were")
        elif rid not in settled_rounds and rid not in books:
            if position[rid] > last_settled:
                rep.rounds_pending += 1
            else:
                flag("round_not_settled", rid, "round dealt without a closed bet book, never settled, and later "
                                               "rounds of the table were")
    audit_settle.check_settlement_records(settle_ev, books, outcomes, voided, round_config, in_scope, flag)
    audit_curator.check_curator(streams.get("dealing.events", []), flag)
    # every finding about a round names it: by the round's id, or the round of the record it points at
    round_of = {f"{e.stream}#{e.seq}": e.round_id or getattr(e.payload, "round_id", "") for e in envs}
    bet_round = {b.bet_id: rid for rid, bk in books.items() for b in bk.bets}
    for k in range(mine, len(bad)):
        d = bad[k]
        if not d.round_id:
            rid = d.where if d.where in round_shoe else round_of.get(d.where) or bet_round.get(d.where, "")
            if rid:
                bad[k] = Discrepancy(d.table_id, d.kind, d.where, d.detail, rid)


def _check_results(records: list[Envelope], o: R.Outcome, flag) -> None:  # type: ignore[no-untyped-def]
    """Every ``RoundResolved`` record of a round against the rules' re-deal ``o``: ``outcome_mismatch`` (a
    result the cards contradict) and ``duplicate_result`` (a second result for the round), at the record."""
    want = (
        [str(c) for c in o.player], [str(c) for c in o.banker], o.player_points, o.banker_points,
        o.winner.value, o.player_natural, o.banker_natural, o.cards_required, o.dragon_7, o.panda_8,
    )
    fields = ("player_cards", "banker_cards", "player_points", "banker_points", "winner",
              "player_natural", "banker_natural", "cards_required", "dragon_7", "panda_8")
    for k, e in enumerate(records):
        res = e.payload
        assert isinstance(res, RoundResolved)
        at = f"{e.stream}#{e.seq}"
        if k:
            flag("duplicate_result", at, f"round {res.round_id} resolved again ({res.winner}); "
                                         f"{records[0].stream}#{records[0].seq} resolved it first", res.round_id)
        got = tuple(getattr(res, f) for f in fields)
        if want != got:
            diffs = [f"{f}: recorded {g!r}, rules give {w!r}" for f, w, g in zip(fields, want, got) if w != g]
            flag("outcome_mismatch", at, f"round {res.round_id}: the cards drawn contradict the result: "
                                         + "; ".join(diffs), res.round_id)


__all__ = ["BROKEN_COMMANDS", "BROKEN_REASONS", "AuditReport", "CommandRecord", "Discrepancy", "UndecodableRecord",
           "UnknownEvent", "audit"]
