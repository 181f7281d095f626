"""The dealing service's decider: the round state machine of each table.

Commands (``dealing.commands``): ``OpenTable``, ``OpenRound``, ``VoidRound``, and at a table with a curator
``OfferShoe``, ``KeepShoe``, ``PassShoe``. Inputs: ``shoe.events`` (the shoe's progress and the cards drawn)
and ``wagering.events`` ("No more bets"; the player registry, for where the shoe passes). Events
(``dealing.events``): ``TableOpened``, ``RoundOpened``, ``CardDealt`` (with the rule cell that required the
card), ``PointsAnnounced``, ``RoundResolved``, ``RoundVoided``, ``ShoeFinished``, ``ShoeOffered``,
``ShoeKept``, ``ShoePassed``, ``CommandRejected``.

The curator (13:69F-3.6(b), 3.11; ``TableSpec.curator``, off by default): the dealer offers the shoe to a
registered participant (``OfferShoe`` → ``ShoeOffered``). After each resolved round the curator keeps or
passes it: when the Banker's Hand lost, the shoe passes by rule in the same decision as the result
(``ShoePassed`` reason ``banker_lost``, 3.11(a)1); otherwise the curator's ``KeepShoe``/``PassShoe`` (the
command's actor is the curator: ``not_curator`` from anyone else; ``out_of_turn`` when no decision of that
round is due; ``must_pass`` to keep after a Banker loss), and a round opened before any decision records the
shoe kept (``ShoeKept`` reason ``next_round_opened``). The dealer or floorman may order it passed between
rounds (``PassShoe`` ``ordered_by``, 3.11(a)2). The shoe goes to the next participant by
:func:`baccarat.curator.next_holder`; a voided round asks no decision.

Flow of a round: ``OpenRound`` → ``RoundOpened`` (the wagering service opens betting) → ``BettingClosed``
arrives → ``DrawCard`` commands go to the shoe (cards 1–4 at once, then one at a time as Tables 1 and 2
require) → each ``CardDrawn`` becomes a ``CardDealt`` → ``RoundResolved``. The drawing rules are the
rules core's (:mod:`baccarat.round`); nothing about the game is decided here.

Chemin de fer (13:69F-4, :mod:`services.dealing.chemin`): ``OpenRound`` names the Banker and the bank; at "No
more bets" the Dominant Player is chosen from the book (``DominantPlayerChosen``, 4.8(c)); an option cell
is offered to its controller (``OptionOffered``: the Banker for the Banker's Hand, 4.8(b); the Dominant Player
for the Player's Hand, 4.8(c)) and decided by that participant's ``DecideOption`` (on ``dealing.options``)
or, from the offer's deadline, by the table's default on the console clock's ``ExpireOption``
(``OptionDecided``); the round is then dealt on.

The parts, each in the module named for it: :mod:`services.dealing.state` (the state, the irregularity kinds,
the card cursor; its names re-exported here), :mod:`services.dealing.curator` (the curator's commands) and
:mod:`services.dealing.chemin` (a chemin de fer round).
"""

from __future__ import annotations

from dataclasses import replace

from baccarat import curator as C
from baccarat import round as R
from baccarat.cards import Hand, hand_points, parse_card
from baccarat.errors import BaccaratError
from contracts import topics as T
from contracts.commands import (DecideOption, DrawCard, ExpireOption, KeepShoe, OfferShoe, OpenRound, OpenTable,
                                PassShoe, VoidRound)
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    BettingClosed,
    CardDealt,
    CardsCalled,
    CardDrawn,
    CommandRejected,
    DominantPlayerChosen,
    Irregularity,
    OptionDecided,
    OptionOffered,
    PlayerLeft,
    PlayerSeated,
    PointsAnnounced,
    RoundOpened,
    RoundResolved,
    RoundVoided,
    ShoeBurned,
    ShoeClosed,
    ShoeFinished,
    ShoeKept,
    ShoeLoaded,
    ShoeOffered,
    ShoePassed,
    TableOpened,
)
from services.configs import config_of, is_test_table
from services.dealing import chemin as CH
from services.dealing import curator as CU
from services.dealing.state import (AFTER_END, CARD_KINDS, EARLY, HANDLINGS, INITIAL_CARDS, MISDEAL,  # noqa: F401
                                    OUT_OF_ORDER, WRONG_HAND, DealingState, Drawn, RoundState, ShoeProgress,
                                    _draw_id, _handling, _next_number, _numbers_ahead, _reject)
from services.runtime.core import Emit, Send, command
from services.runtime.translate import shoe_rules, table_config


class DealingCore:
    """The dealing service's pure decide/evolve/react over :class:`DealingState`."""

    name = "dealing"
    state_type = DealingState
    own_stream = T.DEALING_EVENTS
    private_streams: tuple[str, ...] = ()
    command_streams = (T.DEALING_COMMANDS, T.DEALING_OPTIONS)
    same_time_first: tuple[str, ...] = ()
    #: a dealer's command is decided only once the service has read the inputs the log held when it was
    #: read, even when they come in a later fetch (their partitions led by other brokers): the dealer opens
    #: a round on the "ShoeBurned" the floor saw, and a call read before it was refused ``no_open_shoe``
    #: (seen on two brokers, tests/system/test_split_fetch.py)
    catch_up = ((T.DEALING_COMMANDS, T.SHOE_EVENTS), (T.DEALING_COMMANDS, T.WAGERING_EVENTS))
    input_streams = (T.SHOE_EVENTS, T.WAGERING_EVENTS)

    def __init__(self, test_tables: tuple[str, ...] = ()):
        """``test_tables``: ``fnmatch`` patterns of the table ids that may open unregulated
        (``TableSpec.regulated`` false: a test or training table, free of the locked terms of
        :mod:`baccarat.regulated`); any other table is refused ``unregulated_not_allowed``, so a console
        cannot unlock a live table's terms (``CROUPIER_TEST_TABLES``, :func:`services.configs.test_tables`)."""
        self.test_tables = tuple(test_tables)

    def initial(self, table_id: str) -> DealingState:
        return DealingState(table_id)

    def open_rounds(self, state: DealingState) -> int:
        """Rounds in play at the table: 1 while a round is betting or dealing (opened, neither resolved nor
        voided), else 0 (a query for operations; it decides nothing)."""
        rs = state.round
        return 1 if rs is not None and rs.status in ("betting", "dealing") else 0

    # -- evolve (own events) ---------------------------------------------------------------------
    def evolve(self, state: DealingState, env: Envelope) -> DealingState:
        e = env.payload
        if isinstance(e, TableOpened):
            config_of(e.config)  # validated (and cached) as it is folded
            if not e.config.curator:  # reconfigured without a curator: the dealer holds the shoe
                return replace(state, spec=e.config, curator=None, curator_due="")
            return replace(state, spec=e.config)
        if isinstance(e, RoundOpened):
            config = state.config
            assert config is not None
            rs = RoundState(e.round_id, e.shoe_id, e.number, R.start(config.ruleset),
                            chem=CH.opened(e) if config.variant.value == "chemin_de_fer" else None)
            return replace(state, round=rs, round_numbers=state.round_numbers.put(e.round_id, e.number),
                           shoe_rounds=state.shoe_rounds.put(e.shoe_id, e.number))
        rs = state.round
        if isinstance(e, CardDealt) and rs is not None:
            deal = R.add_card(rs.deal, parse_card(e.card))
            return replace(state, round=replace(rs, deal=deal, dealt=_next_number(rs), status="dealing"))
        if isinstance(e, Irregularity) and rs is not None and e.kind in CARD_KINDS and rs.round_id == e.round_id:
            if e.disposition == "dealt_by_the_rules":  # the CardDealt that follows deals it where the rules say
                return state
            return replace(state, round=replace(rs, skipped=rs.skipped | {e.card_number}))
        if isinstance(e, Irregularity) and rs is not None and e.kind == MISDEAL and rs.round_id == e.round_id:
            # 13:69F-3.12(a): the Player's Hand counts as having stood; a discarded card is consumed here, a card
            # that becomes the Banker's third is dealt by the CardDealt that follows
            deal = replace(rs.deal, player_stood_by_irregularity=True)
            dealt = rs.dealt
            if e.disposition == "discarded":
                deal = replace(deal, discarded=deal.discarded + (parse_card(e.card),))
                dealt = e.card_number
            return replace(state, round=replace(rs, deal=deal, dealt=dealt))
        if isinstance(e, (DominantPlayerChosen, CardsCalled, OptionOffered, OptionDecided)) and rs is not None \
                and rs.chem is not None and rs.round_id == e.round_id:
            chem, deal = CH.evolve(rs.chem, rs.deal, e, env.occurred_at)
            return replace(state, round=replace(rs, chem=chem, deal=deal))
        if isinstance(e, PointsAnnounced) and rs is not None:
            return replace(state, round=replace(rs, announced=True))
        if isinstance(e, RoundResolved) and rs is not None:
            if rs.chem is not None:
                state = replace(state, last_bank=CH.LastBank(rs.round_id, rs.chem.banker_seat,
                                                             rs.chem.banker_player_id, rs.chem.bank_cents, e.winner))
            due = e.round_id if state.curator is not None and not C.must_pass(e.winner) else ""
            return replace(state, round=replace(rs, status="resolved"), curator_due=due,
                           last_resolved=(e.round_id, e.winner))
        if isinstance(e, ShoeOffered):
            return replace(state, curator=(e.seat, e.player_id), curator_due="")
        if isinstance(e, ShoeKept):
            return replace(state, curator_due="")
        if isinstance(e, ShoePassed):
            to = (e.to_seat, e.to_player_id) if e.to_seat else None
            return replace(state, curator=to, curator_due="")
        if isinstance(e, RoundVoided) and rs is not None and rs.round_id == e.round_id and rs.chem is not None:
            state = replace(state, last_bank=CH.LastBank(rs.round_id, rs.chem.banker_seat, rs.chem.banker_player_id,
                                                         rs.chem.bank_cents, ""))
        if isinstance(e, RoundVoided) and rs is not None and rs.round_id == e.round_id:
            return replace(state, round=replace(rs, status="voided"))
        if isinstance(e, ShoeFinished) and state.shoe is not None:
            return replace(state, shoe=replace(state.shoe, finished=True))
        return state

    # -- absorb (inputs) -------------------------------------------------------------------------
    def absorb(self, state: DealingState, env: Envelope) -> DealingState:
        e = env.payload
        if isinstance(e, ShoeLoaded):
            rules = shoe_rules(e.rules)
            return replace(state, shoe=ShoeProgress(e.shoe_id, rules.end_of_shoe, e.cards))
        sh = state.shoe
        if isinstance(e, ShoeBurned) and sh is not None and sh.shoe_id == e.shoe_id:
            return replace(state, shoe=replace(sh, cards_left=sh.cards_left - 1 - e.burned_count))
        if isinstance(e, ShoeClosed) and sh is not None and sh.shoe_id == e.shoe_id:
            return replace(state, shoe=replace(sh, closed=True))
        if isinstance(e, CardDrawn) and sh is not None and sh.shoe_id == e.shoe_id:
            cut_round = sh.cutting_card_round
            if e.cutting_card_out and cut_round is None:
                cut_round = state.round_numbers.get(e.round_id, 0)
            state = replace(state, shoe=replace(sh, cards_left=e.cards_left, cutting_card_round=cut_round))
            rs = state.round
            if rs is not None and rs.round_id == e.round_id and e.card_number not in rs.received:
                got = dict(rs.received)
                got[e.card_number] = Drawn(e.card, env.event_id, env.occurred_at, e.dealt_to)
                state = replace(state, round=replace(rs, received=got))
            return state
        if isinstance(e, CommandRejected) and state.round is not None and e.command == "draw_card":
            rs = state.round
            mine = {_draw_id(state.table_id, rs.round_id, n) for n in range(1, max(rs.requested, 6) + 1)}
            if e.command_id in mine and not rs.failed:
                return replace(state, round=replace(rs, failed=f"{e.reason}: {e.detail}"))
        if isinstance(e, PlayerSeated):
            return replace(state, seated=state.seated | {(e.seat, e.player_id)})
        if isinstance(e, PlayerLeft):
            return replace(state, seated=state.seated - {(e.seat, e.player_id)})
        if isinstance(e, BettingClosed):
            rs = state.round
            cfg = state.config
            if cfg is not None and cfg.variant.value == "chemin_de_fer":
                state = replace(state, last_wagers=(e.round_id, CH.wagered(e.bets)))
            if rs is not None and rs.round_id == e.round_id and rs.closed_by is None:
                chem = replace(rs.chem, book=tuple(e.bets)) if rs.chem is not None else None
                return replace(state, round=replace(rs, closed_by=(env.event_id, env.occurred_at), chem=chem))
        return state

    def sent(self, state: DealingState, send: Send) -> DealingState:
        rs = state.round
        c = send.command.payload
        if rs is not None and isinstance(c, DrawCard) and c.round_id == rs.round_id:
            return replace(state, round=replace(rs, requested=max(rs.requested, c.card_number)))
        return state

    # -- react -----------------------------------------------------------------------------------
    def react(self, state: DealingState, last: Envelope | None) -> list[Emit | Send]:
        """What is due: an :class:`Irregularity` for a card that is not the round's next card by the rules
        (before "No more bets", out of order, on the wrong hand, after the round ended), the next
        ``CardDealt``, the result, or the next ``DrawCard`` requests. Every card the shoe reported for the
        round is either dealt or named by an irregularity: none is dropped silently."""
        rs = state.round
        if rs is None:
            return []
        ahead = sorted(n for n in rs.received if n > rs.dealt and n not in rs.skipped)
        if rs.status in ("resolved", "voided"):
            if not ahead:
                return []
            n = ahead[0]
            d = rs.received[n]
            # a card placed on the Player's Hand after the rules ended the round (a natural, or both standing):
            # 13:69F-3.12(a) discards it; the result stands
            if rs.status == "resolved" and n == _next_number(rs) and d.dealt_to == "player" \
                    and len(rs.deal.player) == 2 and len(rs.deal.banker) == 2 \
                    and not rs.deal.player_stood_by_irregularity:
                return self._misdeal(rs, n, d)
            why = ("the round was voided" if rs.status == "voided" else
                   "both hands had every card Tables 1 and 2 entitle them to (13:69F-3.9, 3.10(a))")
            return self._irregular(state, rs, AFTER_END, n, d, "13:69F-3.9, 3.10(a)",
                                   f"card {n} ({d.card}) came after the round ended: {why}; it was discarded "
                                   "and the result stands", void=False)
        if ahead and rs.closed_by is None:
            n = ahead[0]
            d = rs.received[n]
            return self._irregular(state, rs, EARLY, n, d, "13:69F-3.2(d), 3.7(b)",
                                   f'card {n} ({d.card}) came out before "No more bets" was called')
        if rs.closed_by is None:
            return []
        if rs.failed:
            cause = rs.received[rs.dealt].event_id if rs.dealt else rs.closed_by[0]
            return [Emit(RoundVoided(round_id=rs.round_id, reason=f"shoe refused a card: {rs.failed}"),
                         round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=cause,
                         occurred_at=rs.closed_by[1])]
        if rs.chem is not None and rs.chem.dominant is None:  # chemin de fer: 4.8(c) before the first card
            return CH.choose_dominant(state.config, rs.round_id, rs.shoe_id, rs.chem, rs.closed_by)
        if rs.chem is not None and not rs.chem.cards_called:  # 4.8(d): "Cards", then the Banker deals
            return CH.call_cards(rs.round_id, rs.shoe_id, rs.chem, *rs.closed_by)
        step = R.next_step(rs.deal)
        nxt = _next_number(rs)
        if isinstance(step, R.Outcome):
            return self._resolved(state, rs, step)
        if isinstance(step, R.NeedDecision):
            if rs.chem is None or state.config is None:  # an option cell on a table without options: defensive
                return [Emit(RoundVoided(round_id=rs.round_id, reason="option decision not supported"),
                             round_id=rs.round_id, causation_id=rs.closed_by[0], occurred_at=rs.closed_by[1])]
            last_card = rs.received[rs.dealt] if rs.dealt else None
            cause, at = (last_card.event_id, last_card.at) if last_card else rs.closed_by
            return CH.offer(state.config, rs.round_id, rs.shoe_id, rs.chem, step, cause, at)
        if nxt in rs.received:
            d = rs.received[nxt]
            reason = step.reason
            if d.dealt_to == "player" and step.hand is Hand.BANKER and len(rs.deal.player) == 2 \
                    and len(rs.deal.banker) == 2 and not rs.deal.player_stood_by_irregularity:
                return self._misdeal(rs, nxt, d)
            pre: list[Emit | Send] = []
            # the 3.12(a) card that becomes the Banker's third was read on the Player's Hand: no second irregularity
            by_312a = d.dealt_to == "player" and step.hand is Hand.BANKER and rs.deal.player_stood_by_irregularity
            if d.dealt_to and d.dealt_to != step.hand.value and not by_312a:
                detail = (f"card {nxt} ({d.card}) was reported on the {d.dealt_to.capitalize()}'s Hand; the rules "
                          f"give it to the {step.hand.value.capitalize()}'s Hand ({reason.describe()})")
                pre = self._irregular(state, rs, WRONG_HAND, nxt, d, reason.source, detail)
                if _handling(state) == "void_round":
                    return pre
            out: list[Emit | Send] = [*pre, Emit(
                CardDealt(round_id=rs.round_id, card=d.card, hand=reason.hand.value, position=reason.position,
                          rule=reason.rule, source=reason.source, why=reason.describe(), row=reason.row,
                          column=reason.column),
                round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=d.event_id, occurred_at=d.at,
                actor=rs.chem.banker_player_id if rs.chem is not None and rs.chem.banker_player_id else None)]
            if len(rs.deal.player) + len(rs.deal.banker) == INITIAL_CARDS - 1:
                deal = R.add_card(rs.deal, parse_card(d.card))
                pp, bp = hand_points(deal.player), hand_points(deal.banker)
                nat = pp in deal.ruleset.natural or bp in deal.ruleset.natural
                out.append(Emit(PointsAnnounced(round_id=rs.round_id, player_points=pp, banker_points=bp,
                                                natural=nat),
                                round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=d.event_id, occurred_at=d.at))
            return out
        if ahead:  # a later card came before the round's next one
            n = ahead[0]
            d = rs.received[n]
            return self._irregular(state, rs, OUT_OF_ORDER, n, d, "13:69F-3.7",
                                   f"card {n} ({d.card}) was reported before card {nxt}: the cards of a round are "
                                   "dealt one after another")
        have = len(rs.deal.player) + len(rs.deal.banker)
        want = _numbers_ahead(rs, INITIAL_CARDS - have)[-1] if have < INITIAL_CARDS else nxt
        first = max(rs.requested, rs.dealt, max(rs.received, default=0)) + 1
        if first > want:
            return []
        at = rs.received[rs.dealt].at if rs.dealt else rs.closed_by[1]
        return [
            Send(T.SHOE_DRAWS, command(state.table_id, _draw_id(state.table_id, rs.round_id, n),
                                          at, DrawCard(shoe_id=rs.shoe_id, round_id=rs.round_id, card_number=n),
                                          correlation_id=rs.round_id, actor=""))
            for n in range(first, want + 1) if n not in rs.skipped
        ]

    def _irregular(self, state: DealingState, rs: RoundState, kind: str, n: int, d: Drawn, rule: str,
                   detail: str, void: bool = True) -> list[Emit | Send]:
        """An :class:`Irregularity` for card ``n`` naming ``rule``, handled by the table's
        ``irregularity_handling`` (the texts read give no handling for these): ``void_round`` voids the round
        (every bet returned); ``record_only`` discards the card (a wrong-hand card is dealt where the rules
        say). ``void=False``: the round has ended, the card is discarded whatever the setting."""
        voiding = void and _handling(state) == "void_round"
        if voiding:
            disposition = "round_voided"
        elif kind == WRONG_HAND:
            disposition = "dealt_by_the_rules"
        else:
            disposition = "discarded"
        text = f"{detail} ({rule}); disposition: {disposition.replace('_', ' ')}"
        out: list[Emit | Send] = [Emit(
            Irregularity(round_id=rs.round_id, kind=kind, detail=text, card=d.card, card_number=n,
                         disposition=disposition, rule=rule),
            round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=d.event_id, occurred_at=d.at)]
        if voiding:
            out.append(Emit(RoundVoided(round_id=rs.round_id, reason=f"irregularity {kind}: {rule}"),
                            round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=d.event_id, occurred_at=d.at))
        return out

    def _misdeal(self, rs: RoundState, n: int, d: Drawn) -> list[Emit | Send]:
        """A Player third card the rules did not allow (13:69F-3.12(a)): it becomes the Banker's third card if
        Table 2 obliges the Banker to draw, decided as if the Player had stood; otherwise it is discarded."""
        _, disp = R.misdeal_player_third(rs.deal, parse_card(d.card))
        where = "became the Banker's third card" if disp.became_banker_third else "was discarded"
        detail = (f"card {n} ({d.card}) was dealt to the Player's Hand though Table 1 did not allow a third card; "
                  f"it {where} (13:69F-3.12(a))")
        return [Emit(Irregularity(round_id=rs.round_id, kind=MISDEAL, detail=detail, card=d.card, card_number=n,
                                  disposition="banker_third" if disp.became_banker_third else "discarded",
                                  rule="13:69F-3.12(a)"),
                     round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=d.event_id, occurred_at=d.at)]

    def _resolved(self, state: DealingState, rs: RoundState, o: R.Outcome) -> list[Emit | Send]:
        last = rs.received[rs.dealt]
        out: list[Emit | Send] = [Emit(
            RoundResolved(round_id=rs.round_id, shoe_id=rs.shoe_id, player_cards=[str(c) for c in o.player],
                          banker_cards=[str(c) for c in o.banker], player_points=o.player_points,
                          banker_points=o.banker_points, winner=o.winner.value, player_natural=o.player_natural,
                          banker_natural=o.banker_natural, cards_required=o.cards_required, dragon_7=o.dragon_7,
                          panda_8=o.panda_8),
            round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=last.event_id, occurred_at=last.at)]
        cfg = state.config
        if state.curator is not None and cfg is not None and cfg.curator and C.must_pass(o.winner):
            out.append(Emit(CU.passed(state, rs.round_id, "banker_lost", C.MUST_PASS_RULE),
                            round_id=rs.round_id, shoe_id=rs.shoe_id, causation_id=last.event_id, occurred_at=last.at))
        sh = state.shoe
        if sh is not None and not sh.finished and sh.shoe_id == rs.shoe_id:
            if state.refusal() is not None:
                out.append(Emit(ShoeFinished(shoe_id=sh.shoe_id, rounds=state.rounds_started(sh.shoe_id)),
                                shoe_id=sh.shoe_id,
                                causation_id=last.event_id, occurred_at=last.at))
        return out

    # -- decide ----------------------------------------------------------------------------------
    def decide(self, state: DealingState, cmd: CommandEnvelope) -> list[Emit | Send]:
        c = cmd.payload
        rs = state.round
        in_progress = rs is not None and rs.status in ("betting", "dealing")
        if isinstance(c, OpenTable):
            if in_progress:
                return _reject(cmd, "round_in_progress", "the configuration changes only between rounds")
            if not c.config.regulated and not is_test_table(state.table_id, self.test_tables):
                return _reject(cmd, "unregulated_not_allowed",
                               f"table {state.table_id} is not a test table: it opens regulated, with the terms "
                               "N.J.A.C. 13:69F-3 and 13:47-20.20 fix (CROUPIER_TEST_TABLES names the test tables)")
            try:
                table_config(c.config)
            except BaccaratError as e:
                return _reject(cmd, "invalid_config", str(e))
            if c.config.irregularity_handling not in HANDLINGS:
                return _reject(cmd, "invalid_config", f"irregularity_handling {c.config.irregularity_handling!r} "
                                                      f"is not one of {', '.join(HANDLINGS)}")
            return [Emit(TableOpened(config=c.config))]
        if isinstance(c, OpenRound):
            if state.config is None:
                return _reject(cmd, "table_not_open", "open the table first")
            if in_progress:
                assert rs is not None
                return _reject(cmd, "round_in_progress", f"round {rs.round_id} is not finished")
            if c.round_id in state.round_numbers:
                return _reject(cmd, "duplicate_round", f"round {c.round_id} was already played at this table")
            sh = state.shoe
            if sh is None or sh.closed or sh.shoe_id != c.shoe_id:
                return _reject(cmd, "no_open_shoe", f"shoe {c.shoe_id} is not the table's open shoe")
            why = state.refusal()
            if why is not None:
                return _reject(cmd, why, f"{sh.cards_left} cards left; cutting card out in round "
                                         f"{sh.cutting_card_round}")
            refused = CH.check_open_round(state.config, c, state.last_bank, state.last_wagers, state.seated)
            if refused is not None:
                return _reject(cmd, *refused)
            kept: list[Emit | Send] = []
            if state.curator_due and state.curator is not None:  # no decision came: the curator kept the shoe
                seat, pid = state.curator
                kept.append(Emit(ShoeKept(round_id=state.curator_due, seat=seat, player_id=pid,
                                          reason="next_round_opened"), round_id=state.curator_due))
            return [*kept, Emit(RoundOpened(round_id=c.round_id, shoe_id=c.shoe_id,
                                            number=state.rounds_started(sh.shoe_id) + 1, banker_seat=c.banker_seat,
                                            banker_player_id=c.banker_player_id, bank_cents=c.bank_cents),
                                round_id=c.round_id, shoe_id=c.shoe_id)]
        if isinstance(c, (DecideOption, ExpireOption)):
            if rs is None or rs.round_id != c.round_id or rs.chem is None:
                return _reject(cmd, "no_such_round", f"round {c.round_id} is not this table's chemin de fer round")
            refused, events = CH.decide_option(state.config, rs.chem, cmd)
            if refused is not None:
                return _reject(cmd, *refused)
            return [Emit(ev, round_id=rs.round_id, shoe_id=rs.shoe_id) for ev in events]
        if isinstance(c, VoidRound):
            if rs is None or rs.round_id != c.round_id or not in_progress:
                return _reject(cmd, "no_such_round", f"round {c.round_id} is not in progress")
            return [Emit(RoundVoided(round_id=c.round_id, reason=c.reason), round_id=c.round_id, shoe_id=rs.shoe_id)]
        if isinstance(c, (OfferShoe, KeepShoe, PassShoe)):
            return CU.decide(state, cmd, c, in_progress)
        return _reject(cmd, "not_a_dealing_command", f"{type(c).__name__} is not handled by the dealing service")
