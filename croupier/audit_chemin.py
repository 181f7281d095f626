"""The audit's chemin de fer checks (N.J.A.C. 13:69F-4.8): re-derive who controlled each hand and each option.

Called by :func:`croupier.audit.audit` for every round of a chemin de fer table. Pure, like the audit. Checks:

* the round opened with a Banker and a bank within the table's limits (``bank_mismatch``);
* ``DominantPlayerChosen`` is the Dominant Player 4.8(c) gives from the closed book under the table's seat
  order and tie break, exactly once before the first card (``dominant_player_mismatch``), or the round was
  voided because nobody wagered against the bank;
* every ``OptionOffered`` names an option cell the round reached and its controller (4.8(b): the Banker; 4.8(c):
  the Dominant Player), its deadline the log's time of the card before it plus ``option_seconds``, and the
  table's default for that cell; every ``OptionDecided`` follows its offer, names the same controller, and a
  ``default`` one is the configured default at or after the deadline by the log's time, a ``participant`` one
  logged before the deadline (``option_mismatch``);
* from round to round (:func:`check_passing`, ``bank_passing``): a Banker whose Banker's Hand lost does not hold
  the next bank under ``bank_passes_on_loss``; a Banker who keeps it puts all of it up under
  ``bank_stays_in_play``;
* a participant's ``OptionDecided`` came from a command whose envelope ``actor`` is the controller
  (``option_mismatch``);
* a card read at the console is recorded under the round's Banker, who deals (4.8(d)), with the person who
  keyed it as ``keyed_by`` (:func:`check_card_reads`, ``card_dealer_mismatch``);
* the bank's settlement (``BankSettled``) is :func:`baccarat.chemin.settle_bank` of the bank, the closed book's
  wagers and the result under the table's rate and rounding (``bank_mismatch``).

The decisions themselves feed the audit's re-deal of the round (:func:`decisions`), so the recorded hands must
follow from the cards drawn and the decisions recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from baccarat.chemin import ChemWager, OptionCell, dominant_participant, settle_table_bank
from baccarat.errors import BaccaratError
from baccarat.round import Outcome, Winner
from baccarat.table import TableConfig
from baccarat.wagers import AGAINST_THE_BANK, BANCO_WAGERS
from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    BetLine,
    CardDealt,
    CardDrawn,
    DominantPlayerChosen,
    OptionDecided,
    OptionOffered,
    RoundOpened,
)

Flag = Callable[[str, str, str], None]
#: the dealing events of a round this module reads
CHEM_EVENTS = (DominantPlayerChosen, OptionOffered, OptionDecided)


def decisions(envs: Sequence[Envelope]) -> dict[str, bool]:
    """The recorded option decisions of one round's events: hand (``player`` | ``banker``) -> draw."""
    return {e.payload.hand: e.payload.draw for e in envs if isinstance(e.payload, OptionDecided)}


def check_round(cfg: TableConfig, rid: str, opened: RoundOpened | None, book: Sequence[BetLine] | None,
                envs: Sequence[Envelope], voided: bool, flag: Flag) -> None:
    """Check one chemin de fer round's participants and options (see the module docstring). ``envs``: the
    round's dealing events in log order (its ``CardDealt`` and the :data:`CHEM_EVENTS`)."""
    rules = cfg.chemin
    if opened is None or not opened.banker_player_id:
        flag("bank_mismatch", rid, "a chemin de fer round opened without a Banker")
        return
    if not rules.bank_min_cents <= opened.bank_cents <= rules.bank_max_cents:
        flag("bank_mismatch", rid, f"bank of {opened.bank_cents} cents outside the table's "
                                   f"{rules.bank_min_cents}..{rules.bank_max_cents}")
    chosen = [(e.seq, e.payload) for e in envs if isinstance(e.payload, DominantPlayerChosen)]
    against = [b for b in book or () if b.wager in {w.value for w in AGAINST_THE_BANK}]
    dealt = [e for e in envs if isinstance(e.payload, CardDealt)]
    dominant: tuple[int, str] | None = None
    if book is not None and against:
        wagers = [ChemWager(b.seat, b.amount_cents, banco=b.wager in {w.value for w in BANCO_WAGERS},
                            player_id=b.player_id) for b in against]
        try:
            want = dominant_participant(wagers, opened.banker_seat, rules.seat_order(cfg.max_players),
                                        rules.tie_break)
        except BaccaratError as ex:
            flag("dominant_player_mismatch", rid, f"the book gives no Dominant Player: {ex}")
            return
        got = [(c.seat, c.player_id) for _, c in chosen]
        if got != [want]:
            flag("dominant_player_mismatch", rid, f"recorded {got}, 13:69F-4.8(c) gives {want}")
        elif dealt and dealt[0].seq < chosen[0][0]:
            flag("dominant_player_mismatch", rid, "the Dominant Player was chosen after the first card")
        if len(chosen) == 1:
            dominant = got[0]
    elif chosen or (book is not None and not voided):
        flag("dominant_player_mismatch", rid, "no wager against the Banker, yet the round "
                                              + ("named a Dominant Player" if chosen else "was not voided"))
    offer: tuple[OptionOffered, datetime] | None = None  # the option open, and when it was offered
    last_card: Envelope | None = None
    for e in envs:
        p = e.payload
        if isinstance(p, CardDealt):
            last_card = e
            if offer is not None:
                flag("option_mismatch", rid, f"card {p.card} dealt while the {offer[0].cell} option was open")
        elif isinstance(p, OptionOffered):
            want_who = (opened.banker_seat, opened.banker_player_id) if p.hand == "banker" else dominant
            try:
                default = rules.option_defaults.draw(OptionCell(p.cell))
            except ValueError:
                flag("option_mismatch", rid, f"offered {p.cell!r}, not an option cell")
                continue
            at_card = last_card is not None and e.occurred_at == last_card.occurred_at
            if (p.seat, p.player_id) != want_who or p.default_draw != default \
                    or p.option_seconds != rules.option_seconds or not at_card:
                flag("option_mismatch", rid, f"offered {p.cell} to {(p.seat, p.player_id)} default {p.default_draw} "
                                             f"for {p.option_seconds} s at {e.occurred_at.isoformat()}; the rules "
                                             f"give {want_who}, {default}, {rules.option_seconds} s from the card "
                                             "that made it due")
            offer = (p, e.occurred_at)
        elif isinstance(p, OptionDecided):
            if offer is None or offer[0].hand != p.hand or offer[0].cell != p.cell:
                flag("option_mismatch", rid, f"{p.cell} decided with no such option offered")
                continue
            o, offered_at = offer
            if (p.seat, p.player_id) != (o.seat, o.player_id):
                flag("option_mismatch", rid, f"{p.cell} decided for {(p.seat, p.player_id)}, offered to "
                                             f"{(o.seat, o.player_id)} (13:69F-4.8(b)-(c))")
            if p.by == "participant" and e.actor != o.player_id:  # who sent it, not what it names
                flag("option_mismatch", rid, f"{p.cell} decided by a command from {e.actor!r}, not from its "
                                             f"controller {o.player_id!r} (13:69F-4.8(b)-(c))")
            deadline = offered_at + timedelta(seconds=o.option_seconds)
            if p.by == "default" and (p.draw != o.default_draw or e.occurred_at < deadline):
                flag("option_mismatch", rid, f"{p.cell} decided by default ({p.draw}) at {e.occurred_at.isoformat()}; "
                                             f"the default is {o.default_draw} from {deadline.isoformat()}")
            elif p.by == "participant" and e.occurred_at >= deadline:
                flag("option_mismatch", rid, f"{p.cell} decided by {p.player_id!r} at {e.occurred_at.isoformat()}, "
                                             f"at or after the deadline {deadline.isoformat()}")
            elif p.by not in ("default", "participant"):
                flag("option_mismatch", rid, f"{p.cell} decided by {p.by!r}")
            offer = None


def check_passing(rounds: Sequence[tuple[str, TableConfig, RoundOpened, Sequence[BetLine] | None, str | None]],
                  flag: Flag) -> None:
    """Re-check the bank from round to round of one table (``bank_passing``). ``rounds``: its chemin de fer
    rounds in the order they opened, each (round id, configuration, ``RoundOpened``, the closed book or None,
    the result: ``player`` | ``banker`` | ``tie``, ``""`` voided, None not finished). A round whose Banker is the
    last finished round's Banker is flagged when that Banker's Hand lost under ``bank_passes_on_loss`` (the bank
    passes), or, under ``bank_stays_in_play``, when its bank (cents) is not all of what the last round left:
    :func:`baccarat.chemin.settle_bank` of the last bank, the wagers against it and the result (the bank
    unchanged after a voided round), unless that is under the table's bank minimum; a bank grown past the
    table's maximum passes (the dealing service refuses it ``bank_over_max_must_pass``). Configured practice ([U],
    13:69F-4.8 does not give it)."""
    last: tuple[str, RoundOpened, Sequence[BetLine] | None, str] | None = None
    for rid, cfg, opened, book, winner in rounds:
        rules = cfg.chemin
        if last is not None and opened.banker_player_id and last[1].banker_player_id == opened.banker_player_id:
            prev_rid, prev, prev_book, prev_winner = last
            if rules.bank_passes_on_loss and prev_winner == "player":
                flag("bank_passing", rid, f"{opened.banker_player_id!r} holds the bank again, though the Banker's "
                                          f"Hand lost round {prev_rid}: the bank passes (bank_passes_on_loss)")
            elif rules.bank_stays_in_play:
                after: int | None = prev.bank_cents
                if prev_winner:
                    wagered = sum(b.amount_cents for b in prev_book or ()
                                  if b.wager in {w.value for w in AGAINST_THE_BANK})
                    try:
                        after = settle_table_bank(prev.bank_cents, wagered, Winner(prev_winner),
                                                  cfg).bank_after_cents if prev_book is not None else None
                    except (BaccaratError, ValueError):
                        after = None
                if after is not None and after > rules.bank_max_cents:
                    flag("bank_passing", rid, f"{opened.banker_player_id!r} holds the bank again, though it grew to "
                                              f"{after} cents after round {prev_rid}, over the maximum "
                                              f"{rules.bank_max_cents}: the bank passes (bank_over_max_must_pass)")
                elif after is not None and after >= rules.bank_min_cents and opened.bank_cents != after:
                    flag("bank_passing", rid, f"{opened.banker_player_id!r} keeps the bank with {opened.bank_cents} "
                                              f"cents; all of it, {after} cents after round {prev_rid}, stays in "
                                              "play (bank_stays_in_play)")
        if winner is not None:
            last = (rid, opened, book, winner)


def check_bank(cfg: TableConfig, rid: str, opened: RoundOpened | None, book: Sequence[BetLine],
               outcome: Outcome | None, got: Sequence[BankSettled], flag: Flag) -> tuple[int, int]:
    """Check the bank's settlement of one chemin de fer round; returns the house's commission on it (cents)
    and the part accrued to the Banker's box (0 when deducted), for the round's totals."""
    if outcome is None or opened is None or not opened.banker_player_id:
        if got:
            flag("bank_mismatch", rid, "a bank settled for a round without a result or a Banker")
        return 0, 0
    wagered = sum(b.amount_cents for b in book)
    try:
        want = settle_table_bank(opened.bank_cents, wagered, outcome.winner, cfg)
    except BaccaratError as ex:
        flag("bank_mismatch", rid, f"the bank cannot be settled: {ex}")
        return 0, 0
    accrued = want.commission_cents > 0 and cfg.commission_mode.value == "accrue"
    w = (opened.banker_seat, opened.banker_player_id, want.bank_cents, want.wagers_cents, want.won_cents,
         want.commission_cents, accrued, want.bank_after_cents)
    g = [(b.seat, b.player_id, b.bank_cents, b.wagers_cents, b.won_cents, b.commission_cents, b.commission_accrued,
          b.bank_after_cents) for b in got]
    if g != [w]:
        flag("bank_mismatch", rid, f"recorded {g}, the rules give {[w]}")
    return want.commission_cents, want.commission_cents if accrued else 0


def check_card_reads(rid: str, opened: RoundOpened | None, draws: Sequence[Envelope], flag: Flag) -> None:
    """A chemin de fer round's card reads (``draws``: its ``CardDrawn`` envelopes): a card read from a physical
    shoe (a ``CardDrawn`` with an actor, or a ``keyed_by``) is recorded under the round's Banker, who deals
    (13:69F-4.8(d)), the person who keyed it at the console being its ``keyed_by`` (``card_dealer_mismatch``:
    a read logged under the dealer, as before issue 28, or under anyone else). A card the shoe service drew
    itself (a shuffled shoe, for the dealing service's ``DrawCard``) names no actor: its ``CardDealt`` names
    the Banker."""
    banker = opened.banker_player_id if opened is not None else ""
    for e in draws:
        p = e.payload
        if isinstance(p, CardDrawn) and (p.keyed_by or e.actor) and e.actor != banker:
            flag("card_dealer_mismatch", rid, f"card {p.card_number} ({p.card}) keyed by {p.keyed_by!r} is recorded "
                                              f"under {e.actor!r}, not the round's Banker {banker!r} (13:69F-4.8(d))")
