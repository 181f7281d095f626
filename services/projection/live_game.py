"""What the pit's live pages know of a chemin de fer round and of a curator table, beside the punto banco fold.

:func:`fold_game` takes the events :class:`services.projection.live.TableLive` does not fold itself: the
game a table deals (``TableOpened``), a chemin de fer round's Banker and bank (``RoundOpened``, 13:69F-4.8(b)),
its Dominant Player (``DominantPlayerChosen``, 4.8(c)), the dealer's "Cards" call (``CardsCalled``, 4.8(d)),
the option awaiting its controller and those decided (``OptionOffered``/``OptionDecided``, with the deadline:
the offer's log time plus the table's option seconds) and the bank's settlement (``BankSettled``); at a table
with a curator (13:69F-3.6(b), 3.11) who holds the shoe and whether a keep-or-pass decision is due.
Pure: no I/O; times are the log's (``Envelope.occurred_at``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from baccarat.curator import must_pass
from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    CardsCalled,
    DominantPlayerChosen,
    OptionDecided,
    OptionOffered,
    RoundOpened,
    RoundResolved,
    ShoeKept,
    ShoeOffered,
    ShoePassed,
    TableOpened,
)

if TYPE_CHECKING:
    from services.projection.live import TableLive

#: how a Dominant Player was chosen, in words (``DominantPlayerChosen.rule``; 13:69F-4.8(c))
DOMINANT_RULES = {"banco": "banco", "highest_wager": "the highest wager",
                  "nearest_counter_clockwise": "the tie break: nearest counter-clockwise",
                  "first_wager": "the tie break: the first wager"}
#: why the shoe passed (``ShoePassed.reason``; 13:69F-3.11(a))
PASS_WORDS = {"banker_lost": "the Banker's Hand lost (it must pass)", "curator_passed": "the curator passed it",
              "dealer_ordered": "the dealer's order", "floorman_ordered": "the floorman's order",
              "curator_left": "the curator left"}


@dataclass
class ChemLive:
    """A chemin de fer round: the Banker (``banker_seat``, ``banker_player_id``) and the bank (cents); the
    Dominant Player (``{seat, player_id, wager_cents, rule}``); whether "Cards" was called; the option
    awaiting its controller (``{hand, cell, seat, player_id, default_draw, deadline}``, the deadline an aware
    UTC datetime) or None; the options decided (``{hand, cell, draw, by, seat, player_id}``); the bank's
    settlement (``{won_cents, commission_cents, bank_after_cents}``) or None."""

    banker_seat: int
    banker_player_id: str
    bank_cents: int
    dominant: dict[str, Any] | None = None
    cards_called: bool = False
    option: dict[str, Any] | None = None
    decided: list[dict[str, Any]] = field(default_factory=list)
    bank: dict[str, Any] | None = None


@dataclass
class GameLive:
    """The table's game: ``variant`` (``punto_banco``, ``chemin_de_fer`` ...); ``curator_table``: a curator
    holds the shoe (13:69F-3.6(b)); ``holder``: who holds it (seat, player id), None when the dealer does;
    ``due``: the round after which the curator's keep-or-pass decision is due ("" none); ``last_move``: the
    shoe's last move in words."""

    variant: str = ""
    curator_table: bool = False
    holder: tuple[int, str] | None = None
    due: str = ""
    last_move: str = ""

    @property
    def chemin(self) -> bool:
        """Whether the table deals chemin de fer (13:69F-4)."""
        return self.variant == "chemin_de_fer"


def fold_game(table: TableLive, env: Envelope) -> None:
    """Fold one event into ``table.game`` and its rounds' ``chem`` (after the table's own fold of it)."""
    p = env.payload
    g = table.game
    if isinstance(p, TableOpened):
        g.variant, g.curator_table = str(p.config.variant), bool(p.config.curator)
        if not g.curator_table:
            g.holder, g.due = None, ""
    elif isinstance(p, RoundOpened):
        r = table.round_of(p.round_id)
        if r is not None and p.banker_seat:
            r.chem = ChemLive(p.banker_seat, p.banker_player_id, p.bank_cents)
    elif isinstance(p, ShoeOffered):
        g.holder, g.due = (p.seat, p.player_id), ""
        g.last_move = f"offered to seat {p.seat} ({p.player_id})"
    elif isinstance(p, ShoeKept):
        g.due, g.last_move = "", f"kept by seat {p.seat} ({p.player_id})"
    elif isinstance(p, ShoePassed):
        g.holder = (p.to_seat, p.to_player_id) if p.to_seat else None
        g.due = ""
        to = f"seat {p.to_seat} ({p.to_player_id})" if p.to_seat else "the dealer (no one left to take it)"
        g.last_move = f"passed to {to}: {PASS_WORDS.get(p.reason, p.reason)}"
    elif isinstance(p, RoundResolved):
        # a Banker win or a tie leaves the curator the option; a Banker loss passes it (ShoePassed follows)
        if g.curator_table and g.holder is not None and not must_pass(p.winner):
            g.due = p.round_id
    else:
        _fold_chem(table, env)


def _fold_chem(table: TableLive, env: Envelope) -> None:
    p = env.payload
    rid = getattr(p, "round_id", None)
    r = table.round_of(rid) if rid else None
    c = r.chem if r is not None else None
    if c is None:
        return
    if isinstance(p, DominantPlayerChosen):
        c.dominant = {"seat": p.seat, "player_id": p.player_id, "wager_cents": p.wager_cents,
                      "rule": DOMINANT_RULES.get(p.rule, p.rule)}
    elif isinstance(p, CardsCalled):
        c.cards_called = True
    elif isinstance(p, OptionOffered):
        c.option = {"hand": p.hand, "cell": p.cell, "seat": p.seat, "player_id": p.player_id,
                    "default_draw": p.default_draw,
                    "deadline": env.occurred_at + timedelta(seconds=p.option_seconds)}
    elif isinstance(p, OptionDecided):
        c.option = None
        c.decided.append({"hand": p.hand, "cell": p.cell, "draw": p.draw, "by": p.by, "seat": p.seat,
                          "player_id": p.player_id})
    elif isinstance(p, BankSettled):
        c.bank = {"won_cents": p.won_cents, "commission_cents": p.commission_cents,
                  "bank_after_cents": p.bank_after_cents}


__all__ = ["ChemLive", "GameLive", "fold_game"]
