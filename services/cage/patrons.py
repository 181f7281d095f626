"""Rated patrons and currency reporting, re-derived from the log (pure: a fold over envelopes).

**Identity.** A patron is his player card number, the ``player_id`` the seat registry (``SeatPlayer``) takes
at every table; everything below is keyed by it.

**Rating** (:func:`ratings`): one session per patron and table from ``PlayerSeated`` to ``PlayerLeft`` (or
the end of the log): buy-in (cents, by cash, marker or chips: ``BoughtIn``), rounds played (rounds with a
bet of his), total staked and the average bet (staked / rounds, cents, rounded half up), time played (ms,
seated to left by the events' times), actual result (his payouts − stakes − commission accrued to him,
cents: positive when he is ahead) and two theoretical wins (the house's expected win from his play):

* ``theo_exact_cents``: Σ stake × (− the exact expected value of that wager per unit, as the shoe stood
  before the round's first card: the true remaining composition from ``shoe.events``, counted by
  :func:`baccarat.odds.exact_counts` and priced by :func:`baccarat.expectation.wager_expectations` under the
  table's configuration), summed exactly and rounded half up to the cent at the end;
* ``theo_fixed_cents``: average bet × rounds × one fixed edge per game (:data:`FIXED_EDGE`, configuration),
  what rating systems use today (general practice; ``docs/cage.md``).

**Currency reporting** (:func:`currency`): per patron and gaming day, cash in (cash buy-ins at every table)
and cash out (``ChipsRedeemed`` in cash at the cage); an MTL entry for every cash transaction above
``mtl_threshold_cents`` (configuration; commonly $2,500–$3,000), a CTR flag when the day's cash in or cash out
exceeds ``ctr_threshold_cents`` ($10,000, US Bank Secrecy Act for casinos). Nothing is filed: it lists what
must be. A buy-in's gaming day is its shift's; a redemption's, its time less ``cutoff_hour`` hours (UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from fractions import Fraction

from baccarat.cards import parse_card
from baccarat.expectation import wager_expectations
from baccarat.odds import Composition, exact_counts
from baccarat.wagers import Wager
from contracts.cage import BoughtIn, ChipsRedeemed, ShiftOpened
from contracts.envelope import Envelope
from contracts.events import (
    BetSettled,
    CardDrawn,
    CommissionAccrued,
    PlayerLeft,
    PlayerSeated,
    ShoeBurned,
    ShoeLoaded,
    TableOpened,
)
from services.configs import config_of

#: the one house edge per game a rating system applies to baccarat (configuration): 1.2 %, between the
#: Banker's 1.06 % and the Player's 1.24 % of an 8-deck shoe
FIXED_EDGE = Fraction(12, 1000)
MTL_THRESHOLD_CENTS = 300_000
CTR_THRESHOLD_CENTS = 1_000_000


def round_half_up(x: Fraction) -> int:
    """``x`` cents to whole cents, halves away from zero (the ratings' rounding policy)."""
    n = int(abs(x) + Fraction(1, 2))
    return n if x >= 0 else -n


@dataclass(frozen=True, slots=True)
class Rating:
    """One rated session (cents, ms); see the module docstring."""

    player_id: str
    table_id: str
    seat: int
    seated_at: datetime
    left_at: datetime | None = None
    buy_in_cents: int = 0
    rounds: int = 0
    staked_cents: int = 0
    result_cents: int = 0
    theo_exact: Fraction = Fraction(0)
    exact_bets: int = 0
    bets: int = 0

    @property
    def average_bet_cents(self) -> int:
        """Staked per round played, cents (0 before any)."""
        return round_half_up(Fraction(self.staked_cents, self.rounds)) if self.rounds else 0

    @property
    def time_played_ms(self) -> int:
        """Seated to left (0 while still seated)."""
        return int((self.left_at - self.seated_at) / timedelta(milliseconds=1)) if self.left_at else 0

    @property
    def theo_exact_cents(self) -> int:
        """The exact theoretical win, cents."""
        return round_half_up(self.theo_exact)

    def theo_fixed_cents(self, edge: Fraction = FIXED_EDGE) -> int:
        """Average bet × rounds × ``edge``, cents."""
        return round_half_up(Fraction(self.average_bet_cents * self.rounds) * edge)

    def as_dict(self) -> dict[str, object]:
        """The rating's figures for JSON."""
        return {"player_id": self.player_id, "table_id": self.table_id, "seat": self.seat,
                "buy_in_cents": self.buy_in_cents, "rounds": self.rounds, "average_bet_cents": self.average_bet_cents,
                "time_played_ms": self.time_played_ms, "result_cents": self.result_cents,
                "theo_exact_cents": self.theo_exact_cents, "theo_fixed_cents": self.theo_fixed_cents(),
                "exact_bets": self.exact_bets, "bets": self.bets}


class _Shoes:
    """Each table's remaining composition as its shoe events say, and a snapshot before each round's first
    card (the shoe as it stood when the round's bets were placed)."""

    def __init__(self) -> None:
        self.comp: dict[str, list[int]] = {}
        self.at_round: dict[tuple[str, str], tuple[int, ...]] = {}

    def fold(self, env: Envelope) -> None:
        e, t = env.payload, env.table_id
        if isinstance(e, ShoeLoaded):
            self.comp[t] = list(Composition.full(e.rules.decks).counts)
        elif isinstance(e, ShoeBurned) and t in self.comp:
            for c in (e.exposed, *e.burned):
                self.comp[t][parse_card(c).value] -= 1
        elif isinstance(e, CardDrawn) and t in self.comp:
            self.at_round.setdefault((t, e.round_id), tuple(self.comp[t]))
            self.comp[t][parse_card(e.card).value] -= 1


def ratings(events: Iterable[Envelope]) -> list[Rating]:
    """Every rated session in the log, in the order patrons sat down (see the module docstring). Reads
    ``dealing.events`` (table configuration), ``shoe.events``, ``wagering.events``, ``settlement.events`` and
    ``cage.events``; other events are skipped."""
    shoes = _Shoes()
    specs: dict[str, object] = {}
    out: list[Rating] = []
    left: list[tuple[Envelope, PlayerLeft]] = []
    moves: list[Envelope] = []
    for env in events:
        e, t = env.payload, env.table_id
        shoes.fold(env)
        if isinstance(e, TableOpened):
            specs[t] = e.config
        elif isinstance(e, PlayerSeated):
            out.append(Rating(e.player_id, t, e.seat, env.occurred_at))
        elif isinstance(e, PlayerLeft):
            left.append((env, e))
        elif isinstance(e, (BoughtIn, BetSettled, CommissionAccrued)):
            moves.append(env)
    # sessions and what happened in them are matched by table, player and time, not by the order topics
    # were read in (each topic is ordered, the topics are not ordered with each other)
    out.sort(key=lambda r: r.seated_at)
    for env, e in left:
        i = _session(out, env.table_id, e.player_id, env.occurred_at, open_only=True)
        if i is not None:
            out[i] = replace(out[i], left_at=env.occurred_at)
    played: dict[int, set[str]] = {}
    for env in moves:
        e = env.payload
        i = _session(out, env.table_id, e.player_id, env.occurred_at)  # type: ignore[union-attr]
        if i is None:
            continue
        r = out[i]
        if isinstance(e, BoughtIn):
            out[i] = replace(r, buy_in_cents=r.buy_in_cents + e.amount_cents)
        elif isinstance(e, CommissionAccrued):
            out[i] = replace(r, result_cents=r.result_cents - e.amount_cents)
        elif isinstance(e, BetSettled):
            out[i] = _rated_bet(r, e, played.setdefault(i, set()),
                                _ev(specs.get(env.table_id), shoes.at_round.get((env.table_id, e.round_id)), e.wager))
    return out


def _rated_bet(r: Rating, b: BetSettled, seen: set[str], ev: Fraction | None) -> Rating:
    """``r`` with one settled bet of it added (a void bet counts for neither rounds, stakes nor theo)."""
    void = b.result == "void"
    theo, exact = r.theo_exact, r.exact_bets
    if ev is not None and not void:
        theo, exact = theo - b.stake * ev, exact + 1
    new_round = not void and b.round_id not in seen
    if not void:
        seen.add(b.round_id)
    return replace(r, rounds=r.rounds + new_round, staked_cents=r.staked_cents + (0 if void else b.stake),
                   result_cents=r.result_cents + b.payout - b.stake, theo_exact=theo, exact_bets=exact,
                   bets=r.bets + 1)


def _session(out: list[Rating], table_id: str, player_id: str, at: datetime, open_only: bool = False) -> int | None:
    """The latest session of ``player_id`` at ``table_id`` begun by ``at`` (still open, with ``open_only``)."""
    for i in range(len(out) - 1, -1, -1):
        r = out[i]
        if r.table_id == table_id and r.player_id == player_id and r.seated_at <= at \
                and not (open_only and r.left_at is not None):
            return i
    return None


_EV_CACHE: dict[tuple[int, tuple[int, ...]], dict[Wager, Fraction]] = {}


def _ev(spec: object, comp: tuple[int, ...] | None, wager: str) -> Fraction | None:
    """The exact EV per unit of ``wager`` at a table of ``spec`` with ``comp`` left (None if unknown)."""
    if spec is None or comp is None:
        return None
    key = (id(spec), comp)
    evs = _EV_CACHE.get(key)
    if evs is None:
        cfg = config_of(spec)  # type: ignore[arg-type]
        if cfg.variant.value == "chemin_de_fer":
            return None  # the wagers are against a participant's bank: no house edge on them
        exp = wager_expectations(exact_counts(Composition(comp), cfg.odds_ruleset), cfg)
        evs = _EV_CACHE[key] = {w: x.ev for w, x in exp.items()}
        if len(_EV_CACHE) > 4096:
            _EV_CACHE.clear()
    return evs.get(Wager(wager))


@dataclass(frozen=True, slots=True)
class CashDay:
    """A patron's cash in one gaming day (cents), with his MTL entries and whether a CTR is due."""

    player_id: str
    gaming_day: str
    cash_in_cents: int = 0
    cash_out_cents: int = 0
    mtl: tuple[tuple[str, str, int], ...] = ()  # (kind ``cash_in`` | ``cash_out``, transaction id, cents)
    ctr: bool = False


def gaming_day_of(at: datetime, cutoff_hour: int = 6) -> str:
    """``YYYY-MM-DD``: the UTC date of ``at`` less ``cutoff_hour`` hours (a gaming day starts at the cutoff)."""
    return (at.astimezone(timezone.utc) - timedelta(hours=cutoff_hour)).date().isoformat()


def currency(events: Iterable[Envelope], mtl_threshold_cents: int = MTL_THRESHOLD_CENTS,
             ctr_threshold_cents: int = CTR_THRESHOLD_CENTS, cutoff_hour: int = 6) -> list[CashDay]:
    """Per patron and gaming day, in order of first transaction (see the module docstring)."""
    days: dict[tuple[str, str], CashDay] = {}
    shift_day: dict[tuple[str, str], str] = {}
    for env in events:
        e = env.payload
        if isinstance(e, ShiftOpened):
            shift_day[(env.table_id, e.shift_id)] = e.gaming_day
            continue
        if isinstance(e, BoughtIn) and e.method == "cash":
            day, kind, tx = shift_day.get((env.table_id, e.shift_id), ""), "cash_in", e.buy_in_id
        elif isinstance(e, ChipsRedeemed) and e.method == "cash":
            day, kind, tx = gaming_day_of(env.occurred_at, cutoff_hour), "cash_out", e.redemption_id
        else:
            continue
        d = days.get((e.player_id, day)) or CashDay(e.player_id, day)
        cents = e.amount_cents
        d = replace(d, cash_in_cents=d.cash_in_cents + cents * (kind == "cash_in"),
                    cash_out_cents=d.cash_out_cents + cents * (kind == "cash_out"),
                    mtl=d.mtl + (((kind, tx, cents),) if cents > mtl_threshold_cents else ()))
        days[(e.player_id, day)] = replace(d, ctr=max(d.cash_in_cents, d.cash_out_cents) > ctr_threshold_cents)
    return list(days.values())
