"""The projection service's core: live odds, roads, the cage ledger and surveillance alerts, per table.

Inputs: ``shoe.events``, ``dealing.events``, ``wagering.events``, ``settlement.events``. Outputs (streams it
alone writes): ``projection.odds`` (``OddsUpdated``: both views after every card, burn and round start),
``projection.ledger`` (``LedgerPosted``: the cage's balanced journal entries), ``projection.alerts``
(``AdvantageBetFlagged``). Like every service it folds its inputs (``absorb``), and what becomes due is
published by ``react`` and folded back by ``evolve``; what was already published (its own streams) is never
published again, so a rebuild from offset zero republishes nothing and reaches the same state.

Two views of the shoe (odds-and-roads.md §3): **public** counts only cards seen at the table (the exposed
burn card and every dealt card; burned cards face down are still "in the shoe" for a player), and
**surveillance** the true remaining composition.

Surveillance (odds-and-roads.md §4): a bet of round *r* is judged against the true composition just before
*r*'s first card (the shoe as it stood while the bet could be placed). That composition is known as soon
as *r*'s first card is drawn, and the bets as soon as "No more bets" closes the book; when both are known,
every bet on a wager with a positive exact EV is flagged. This does not depend on which input arrived
first, so live and replay flag the same bets.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable
from datetime import datetime
from fractions import Fraction

import msgspec
from msgspec.structs import replace

from baccarat.cards import VALUE_COUNTS_PER_DECK, parse_card
from baccarat.drawing import PUNTO_BANCO
from baccarat.odds import table_for
from baccarat.table import TableConfig
from contracts import topics as T
from contracts.envelope import CommandEnvelope, Envelope
from contracts.events import (
    AdvantageBetFlagged,
    BetLine,
    BettingClosed,
    CardDrawn,
    LedgerLine,
    LedgerPosted,
    OddsUpdated,
    RoundOpened,
    RoundResolved,
    ShoeBurned,
    ShoeLoaded,
    ShoeOffered,
    ShoePassed,
    TableOpened,
)
from contracts.tables import TableSpec
from services.projection.ledger import book, gaming_day, shoe_fact
from services.projection.ledger_state import LedgerState
from services.projection.odds_views import LiveViews, ViewOdds
from services.projection.pit_state import PitState
from services.projection.pmap import PMap
from services.runtime.core import Emit, Send
from services.runtime.translate import table_config

VIEWS = ("public", "surveillance")
_WINNER_LETTER = {"banker": "B", "player": "P", "tie": "T"}
#: most alerts kept for ``/alerts`` (those of the latest gaming day, newest last)
MAX_ALERTS = 1000


def _add(a: tuple[int, ...], value: int, n: int = 1) -> tuple[int, ...]:
    out = list(a)
    out[value] += n
    return tuple(out)


def _sub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``a - b`` element by element (per-card path: ``map`` over ``operator.sub``, 2x a generator's speed)."""
    return tuple(map(operator.sub, a, b))


class ShoeView(msgspec.Struct, frozen=True):
    """What the projection knows of the table's current shoe, by baccarat value 0..9."""

    shoe_id: str
    full: tuple[int, ...]
    number: int = 1  # shoes loaded at the table so far, this one included
    seen: tuple[int, ...] = (0,) * 10  # exposed burn card + every card drawn
    hidden: tuple[int, ...] = (0,) * 10  # burned face down (known to surveillance only)
    cards_out: int = 0
    step: int = 0  # shoe events folded: 0 loaded, then +1 per burn and per card

    def composition(self, view: str) -> tuple[int, ...]:
        """Cards left by value in ``view``: ``public`` (full − seen) or ``surveillance`` (− burned too)."""
        left = _sub(self.full, self.seen)
        return left if view == "public" else _sub(left, self.hidden)


class OddsDue(msgspec.Struct, frozen=True):
    """Odds to publish for a shoe state: the key, what caused it and when."""

    shoe_id: str
    step: int
    trigger: str
    round_id: str
    cause: str
    at: datetime
    shoe_number: int = 1

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.shoe_id, self.step, self.trigger + ":" + self.round_id)

    @property
    def order(self) -> tuple[int, int, int]:
        """Position in the shoe's history, independent of the order inputs arrive in: a round opens after the
        card that made its step (the previous round's last) and before its own first card (the next step)."""
        return (self.shoe_number, self.step, 1 if self.trigger == "round_opened" else 0)


def _due(state: ProjectionState, due: OddsDue) -> ProjectionState:
    """Make ``due`` the odds to publish unless something later in the shoe's history already is, or the odds
    of this point of the shoe, or of a later one, are already published (``odds_sent``).

    The second rule matters after a restore: the odds are published ahead of the transaction that commits
    their input's offsets (the runtime's prompt stream, :mod:`services.runtime.prompt_lane`), so a restore
    folds odds already on ``projection.odds`` and then reads again the cards they were computed from; those
    cards must publish nothing a second time (issue 30: never twice)."""
    if state.odds_due is not None and state.odds_due.order >= due.order:
        return state
    if _sent_already(state, due):
        return state
    return replace(state, odds_due=due)


def _sent_already(state: ProjectionState, due: OddsDue) -> bool:
    """Whether the odds of ``due``'s point of its shoe, or of a later point, are already published."""
    sent = state.odds_sent.get(due.shoe_id)
    return sent is not None and sent >= due.order[1:]


#: shoes whose latest published odds point a table's state remembers (``ProjectionState.odds_sent``): the
#: current and the one before (a card of the old shoe can be read again after the new shoe's odds published)
ODDS_SENT_SHOES = 2


def _sent(state: ProjectionState, e: OddsUpdated) -> dict[str, tuple[int, int]]:
    """``state.odds_sent`` with published odds ``e``: its shoe's latest point (step, 1 for a round's
    opening else 0) kept as the highest seen, the shoe moved last, at most :data:`ODDS_SENT_SHOES` shoes."""
    point = (e.step, 1 if e.trigger == "round_opened" else 0)
    old = state.odds_sent.get(e.shoe_id)
    rest = [(k, v) for k, v in state.odds_sent.items() if k != e.shoe_id]
    return dict([*rest[-(ODDS_SENT_SHOES - 1):], (e.shoe_id, point if old is None else max(old, point))])


class PlayerWatch(msgspec.Struct, frozen=True):
    """Surveillance summary of one player: flagged bets, their total stake and expected gain (cents)."""

    bets: int = 0
    stake_cents: int = 0
    expected_gain_cents: int = 0


class BeforeRound(msgspec.Struct, frozen=True, array_like=True):
    """The true composition just before a round's first card, that card's event id and time, the shoe's
    step then and the shoe it was drawn from."""

    composition: tuple[int, ...]
    cause: str
    at: datetime
    step: int
    shoe_id: str = ""


_CONFIGS: dict[int, tuple[TableSpec, TableConfig]] = {}


def _config_of(spec: TableSpec) -> TableConfig:
    """The validated config of ``spec``, built once per spec object (kept for at most 4096 specs)."""
    got = _CONFIGS.get(id(spec))
    if got is not None and got[0] is spec:
        return got[1]
    if len(_CONFIGS) >= 4096:
        _CONFIGS.clear()
    cfg = table_config(spec)
    _CONFIGS[id(spec)] = (spec, cfg)
    return cfg


class ProjectionState(msgspec.Struct, frozen=True):
    """One table's projection; bounded by the current shoe and gaming day (issue 8, finding 6) and
    encodable with msgspec (``ProjectionCore.state_type``) so it can be snapshotted.

    ``spec``: the table's game as opened (``config`` is its validated :class:`TableConfig`); ``shoe``: the
    current shoe; ``past_shoes``: ids of the shoes loaded before it (one short id per shoe, so a late event of
    an old shoe is recognised as such); ``roads``: B/P/T per round for the current shoe and any shoe not yet
    loaded here (a result can arrive before its ``ShoeLoaded``). Working sets are pruned as soon as they can
    no longer matter: ``books``/``before_round`` when the round is judged, ``ledger_published`` (entry ids
    already on ``projection.ledger``, by source event) when the source event is folded, ``alerts_published``
    (bet ids already on ``projection.alerts``, by round) when the round is judged; all are :class:`PMap` s, so
    an update costs the same whatever their size (a rebuild folds the own streams first, then shoe, dealing,
    wagering and settlement in turn, and holds them for the whole history meanwhile). ``alerts``: the
    latest gaming day's, at most :data:`MAX_ALERTS`; ``watch``: per player flagged, the same gaming day's totals.
    ``pit``: the pit's, cage's and surveillance's figures of the latest two gaming days (drop and win by hour,
    commission by player, flagged play by player, voided rounds, irregularities) and the verdicts on the shoes
    closed in them (:mod:`services.projection.pit_state`).
    """

    table_id: str
    spec: TableSpec | None = None
    shoe: ShoeView | None = None
    past_shoes: frozenset[str] = frozenset()
    roads: dict[str, tuple[str, ...]] = {}
    odds_due: OddsDue | None = None
    odds_published: tuple[str, int, str] | None = None
    #: shoe id -> the latest point of it whose odds are published: (step, 1 for a round's opening else 0), the
    #: last :data:`ODDS_SENT_SHOES` shoes (see :func:`_due`)
    odds_sent: dict[str, tuple[int, int]] = {}
    last_odds: dict[str, OddsUpdated] = {}  # view -> latest published
    ledger: LedgerState = LedgerState()
    ledger_published: PMap[frozenset[str]] = PMap()
    ledger_pending: tuple[tuple[LedgerPosted, datetime], ...] = ()
    books: PMap[tuple[BetLine, ...]] = PMap()
    before_round: PMap[BeforeRound] = PMap()
    alerts_published: PMap[frozenset[str]] = PMap()
    alerts_pending: tuple[tuple[AdvantageBetFlagged, str, datetime], ...] = ()
    watch: dict[str, PlayerWatch] = {}
    alerts: tuple[AdvantageBetFlagged, ...] = ()
    alerts_day: str = ""
    #: who holds the shoe at a table with a curator (13:69F-3.6(b), 3.11): (seat, player id), None when the
    #: dealer holds it; ``curator_since``: the round after which it came to them ("" when offered)
    curator: tuple[int, str] | None = None
    curator_since: str = ""
    pit: PitState = PitState()

    @property
    def config(self) -> TableConfig | None:
        """The table's validated config (None before ``TableOpened``)."""
        return None if self.spec is None else _config_of(self.spec)

    def results(self, shoe_id: str) -> tuple[str, ...]:
        """B/P/T of every round resolved so far in ``shoe_id`` (held for the current shoe only)."""
        return self.roads.get(shoe_id, ())

    def knows_shoe(self, shoe_id: str) -> bool:
        """Whether ``shoe_id`` was ever loaded at this table (or has results waiting for its load)."""
        return shoe_id in self.past_shoes or shoe_id in self.roads or (
            self.shoe is not None and self.shoe.shoe_id == shoe_id)


_ONE_OFF = LiveViews()


def odds_for(composition: tuple[int, ...], config: TableConfig, views: LiveViews | None = None,
             key: Hashable = None) -> ViewOdds | None:
    """Exact counts (``total``, ``counts``) and per-wager odds (``wagers``) for ``composition`` under ``config``
    (None below 6 cards).

    ``views``/``key``: the tracker that follows this view of the shoe (the core's, one per table and view);
    without them a shared one-off tracker. Integer arithmetic only (:mod:`services.projection.odds_views`)."""
    return (views or _ONE_OFF).odds(key, composition, config)


class ProjectionCore:
    """The projection's pure absorb/react/evolve over :class:`ProjectionState`."""

    name = "projection"
    own_stream = T.PROJECTION_ODDS
    #: the odds go out at once, in short transactions of their own (:mod:`services.runtime.prompt_lane`; never
    #: twice after a restore: :func:`_due`), not behind a batch's transaction with ledger entries and offsets
    prompt_stream = T.PROJECTION_ODDS
    #: the rest (ledger entries, alerts, offsets, checkpoints) in at most one transaction per task every 100 ms
    #: (:class:`services.runtime.commit_queue.CommitQueue`): fewer transactions for the broker and this process
    commit_interval_ms = 100
    private_streams = (T.PROJECTION_LEDGER, T.PROJECTION_ALERTS)
    command_streams: tuple[str, ...] = ()
    same_time_first: tuple[str, ...] = ()
    catch_up: tuple[tuple[str, str], ...] = ()
    input_streams = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS)
    quiet_events = True  # two odds updates per card: logged at debug

    def __init__(self, gaming_day_cutoff_hour: int = 6):
        self.cutoff = gaming_day_cutoff_hour
        table_for(PUNTO_BANCO)  # build the odds engine's table now, not at the first card
        #: odds trackers per (table, view): a cache, see :mod:`services.projection.odds_views`
        self.views = LiveViews()

    #: the type a table's state decodes to: ``msgspec.msgpack.decode(encode(state), type=state_type) == state``
    state_type = ProjectionState

    def initial(self, table_id: str) -> ProjectionState:
        return ProjectionState(table_id, ledger=LedgerState(cutoff_hour=self.cutoff))

    # -- own outputs -----------------------------------------------------------------------------
    def evolve(self, state: ProjectionState, env: Envelope) -> ProjectionState:
        e = env.payload
        if isinstance(e, OddsUpdated):
            key = (e.shoe_id, e.step, e.trigger + ":" + e.round_id)
            return replace(state, odds_published=key, last_odds={**state.last_odds, e.view: e},
                           odds_sent=_sent(state, e))
        if isinstance(e, LedgerPosted):
            pending = tuple(p for p in state.ledger_pending if p[0].entry_id != e.entry_id)
            if len(pending) < len(state.ledger_pending):  # posted live, after its source was folded
                return replace(state, ledger_pending=pending)
            # folded before its source (a rebuild reads its own streams first): remember it until then
            done = state.ledger_published.get(e.source_event_id) or frozenset()
            return replace(state, ledger_published=state.ledger_published.set(e.source_event_id,
                                                                               done | {e.entry_id}))
        if isinstance(e, AdvantageBetFlagged):
            day = gaming_day(env.occurred_at, self.cutoff)
            watch = state.watch
            if day > state.alerts_day:  # a new gaming day: its alerts and its players' watch start afresh
                alerts: tuple[AdvantageBetFlagged, ...] = (e,)
                watch = {}
            elif day == state.alerts_day:
                alerts = (state.alerts + (e,))[-MAX_ALERTS:]
            else:
                alerts = state.alerts  # a late alert of an earlier gaming day: in ``pit``'s days only
            if day >= state.alerts_day:
                w = watch.get(e.player_id, PlayerWatch())
                w = PlayerWatch(w.bets + 1, w.stake_cents + e.stake_cents,
                                w.expected_gain_cents + e.expected_gain_cents)
                watch = {**watch, e.player_id: w}
            state = replace(state, watch=watch, alerts=alerts,
                            alerts_day=max(day, state.alerts_day), pit=state.pit.flagged(env, e, self.cutoff))
            pending = tuple(p for p in state.alerts_pending if p[0].bet_id != e.bet_id)
            if len(pending) < len(state.alerts_pending):
                return replace(state, alerts_pending=pending)
            done = state.alerts_published.get(e.round_id) or frozenset()
            return replace(state, alerts_published=state.alerts_published.set(e.round_id, done | {e.bet_id}))
        return state

    # -- inputs ----------------------------------------------------------------------------------
    def absorb(self, state: ProjectionState, env: Envelope) -> ProjectionState:
        state = self._post_ledger(state, env)
        pit = state.pit.absorb(env, self.cutoff)
        if pit is not state.pit:
            state = replace(state, pit=pit)
        e = env.payload
        if isinstance(e, TableOpened):
            if not e.config.curator:
                return replace(state, spec=e.config, curator=None, curator_since="")
            return replace(state, spec=e.config)
        if isinstance(e, ShoeOffered):
            return replace(state, curator=(e.seat, e.player_id), curator_since="")
        if isinstance(e, ShoePassed):
            to = (e.to_seat, e.to_player_id) if e.to_seat else None
            return replace(state, curator=to, curator_since=e.round_id)
        if isinstance(e, ShoeLoaded):
            full = tuple(n * e.rules.decks for n in VALUE_COUNTS_PER_DECK)
            old = state.shoe
            number = old.number + 1 if old is not None else 1
            past = state.past_shoes | {old.shoe_id} if old is not None and old.shoe_id != e.shoe_id \
                else state.past_shoes
            roads = {k: v for k, v in state.roads.items() if k not in past}
            state = replace(state, shoe=ShoeView(e.shoe_id, full, number=number), past_shoes=past, roads=roads)
            return _due(state, OddsDue(e.shoe_id, 0, "shoe_loaded", "", env.event_id, env.occurred_at, number))
        sh = state.shoe
        if isinstance(e, ShoeBurned) and sh is not None and sh.shoe_id == e.shoe_id:
            seen = _add(sh.seen, parse_card(e.exposed).value)
            hidden = sh.hidden
            for c in e.burned:
                hidden = _add(hidden, parse_card(c).value)
            sh = replace(sh, seen=seen, hidden=hidden, cards_out=sh.cards_out + 1 + e.burned_count, step=sh.step + 1)
            return _due(replace(state, shoe=sh), OddsDue(sh.shoe_id, sh.step, "burn", "", env.event_id,
                                                         env.occurred_at, sh.number))
        if isinstance(e, CardDrawn) and sh is not None and sh.shoe_id == e.shoe_id:
            if e.card_number == 1 and e.round_id not in state.before_round:
                state = replace(state, before_round=state.before_round.set(e.round_id, BeforeRound(
                    sh.composition("surveillance"), env.event_id, env.occurred_at, sh.step, e.shoe_id)))
            sh = replace(sh, seen=_add(sh.seen, parse_card(e.card).value), cards_out=sh.cards_out + 1,
                         step=sh.step + 1)
            state = _due(replace(state, shoe=sh), OddsDue(sh.shoe_id, sh.step, "card", e.round_id, env.event_id,
                                                          env.occurred_at, sh.number))
            return self._judge(state, e.round_id)
        if isinstance(e, RoundOpened):
            if sh is not None and sh.shoe_id == e.shoe_id:
                # the round opened at the shoe's step before its first card (if that card is already known)
                before = state.before_round.get(e.round_id)
                step = before.step if before is not None else sh.step
                state = _due(state, OddsDue(sh.shoe_id, step, "round_opened", e.round_id, env.event_id,
                                            env.occurred_at, sh.number))
            return state
        if isinstance(e, RoundResolved):
            if e.shoe_id in state.past_shoes and not (sh is not None and sh.shoe_id == e.shoe_id):
                return state  # a late result of a shoe already replaced: its road is no longer held
            res = state.roads.get(e.shoe_id, ())
            return replace(state, roads={**state.roads, e.shoe_id: res + (_WINNER_LETTER[e.winner],)})
        if isinstance(e, BettingClosed):
            state = replace(state, books=state.books.set(e.round_id, tuple(e.bets)))
            return self._judge(state, e.round_id)
        return state

    def _post_ledger(self, state: ProjectionState, env: Envelope) -> ProjectionState:
        ledger = state.ledger
        fact = shoe_fact(env)
        # learn_shoe changes nothing for a round it knows: the round's later events (every card) skip gaming_day
        if fact is not None and fact[0] not in ledger.round_shoe:
            ledger = ledger.learn_shoe(fact[0], fact[1], gaming_day(env.occurred_at, self.cutoff))
        new = book(env, self.cutoff)
        if not new:
            return state if ledger is state.ledger else replace(state, ledger=ledger)
        ledger = ledger.post(new, env.stream)
        published = state.ledger_published
        done = published.get(env.event_id) or frozenset()
        if done:
            published = published.remove(env.event_id)
        posts = tuple(
            (LedgerPosted(entry_id=x.entry_id, kind=x.kind, source_event_id=x.source_event_id,
                          gaming_day=x.gaming_day, lines=[LedgerLine(a, c) for a, c in x.lines],
                          shoe_id=x.shoe_id or "", round_id=x.round_id or "", seat=x.seat or 0,
                          player_id=x.player_id or ""), env.occurred_at)
            for x in new if x.entry_id not in done
        )
        return replace(state, ledger=ledger, ledger_published=published, ledger_pending=state.ledger_pending + posts)

    def _judge(self, state: ProjectionState, round_id: str) -> ProjectionState:
        """Flag the round's bets with a positive surveillance EV, once its bets and prior shoe are known;
        then forget the round's book, composition and published alerts (nothing of it can come again)."""
        book_ = state.books.get(round_id)
        before = state.before_round.get(round_id)
        if book_ is None or before is None:
            return state
        published = state.alerts_published.get(round_id) or frozenset()
        state = replace(state, books=state.books.remove(round_id), before_round=state.before_round.remove(round_id),
                        alerts_published=state.alerts_published.remove(round_id))
        config = state.config
        if config is None or not book_:
            return state
        got = odds_for(before.composition, config, self.views, (state.table_id, "judge"))
        if got is None:
            return state
        ev_of = {w.wager: w for w in got.wagers}
        shoe_id = before.shoe_id or (state.shoe.shoe_id if state.shoe else "")
        comp, cause, at = before.composition, before.cause, before.at
        pending = list(state.alerts_pending)
        for bet in book_:
            w = ev_of.get(bet.wager)
            if w is None or w.ev_num <= 0 or bet.bet_id in published:  # ev_den > 0: the sign is ev_num's
                continue
            x = Fraction(w.ev_num, w.ev_den)
            gain = bet.amount_cents * x
            pending.append((AdvantageBetFlagged(
                round_id=round_id, shoe_id=shoe_id, bet_id=bet.bet_id, seat=bet.seat, player_id=bet.player_id,
                wager=bet.wager, stake_cents=bet.amount_cents, ev=float(x), ev_num=x.numerator, ev_den=x.denominator,
                expected_gain_cents=gain.numerator // gain.denominator, cards_left=sum(comp)), cause, at))
        return replace(state, alerts_pending=tuple(pending))

    def sent(self, state: ProjectionState, send: Send) -> ProjectionState:
        return state

    def decide(self, state: ProjectionState, cmd: CommandEnvelope) -> list[Emit | Send]:
        return []

    # -- react -----------------------------------------------------------------------------------
    def react(self, state: ProjectionState, last: Envelope | None) -> list[Emit | Send]:
        out: list[Emit | Send] = []
        for p, at in state.ledger_pending:
            out.append(Emit(p, round_id=p.round_id or None, shoe_id=p.shoe_id or None,
                            causation_id=p.source_event_id, occurred_at=at, stream=T.PROJECTION_LEDGER))
        for alert, cause, at in state.alerts_pending:
            out.append(Emit(alert, round_id=alert.round_id, shoe_id=alert.shoe_id, causation_id=cause,
                            occurred_at=at, stream=T.PROJECTION_ALERTS))
        due = state.odds_due
        # not the odds of a point already published, nor of an earlier one: after a restore the own stream can
        # hold odds of cards past the committed offsets (the prompt stream), and the due of the checkpoint
        # is older than them
        if due is not None and due.key != state.odds_published and not _sent_already(state, due) \
                and state.config is not None and state.shoe is not None and state.shoe.shoe_id == due.shoe_id:
            comps = {view: state.shoe.composition(view) for view in VIEWS}
            # both views lose the card just dealt: one walk of the kernel for the two (a cache step, same odds)
            self.views.follow_pair(((state.table_id, "public"), (state.table_id, "surveillance")),
                                   (comps["public"], comps["surveillance"]), state.config)
            for view in VIEWS:
                comp = comps[view]
                got = odds_for(comp, state.config, self.views, (state.table_id, view))
                if got is None:
                    continue
                total, counts, wagers = got
                out.append(Emit(OddsUpdated(shoe_id=due.shoe_id, view=view, trigger=due.trigger, step=due.step,
                                            cards_out=state.shoe.cards_out, composition=list(comp),
                                            total=total, counts=counts, wagers=wagers,
                                            round_id=due.round_id),
                                round_id=due.round_id or None, shoe_id=due.shoe_id, causation_id=due.cause,
                                occurred_at=due.at))
        return out
