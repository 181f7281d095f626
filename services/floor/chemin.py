"""A simulated chemin de fer table (N.J.A.C. 13:69F-4): the participants hold the bank in turn, wager against
it, and decide the options of the hand they control.

:class:`ChemTableDealer` is a :class:`services.floor.dealer.TableDealer` whose rounds are chemin de fer rounds:
each ``OpenRound`` names the Banker and the bank (the whole bank the last round left a Banker who keeps it,
else a new bank within the table's limits); the other seated players wager against it (``player``, now and
then ``banco``, the whole bank; ``banco_suivi`` when the last banco lost to the same Banker), never more than
it covers; when the dealing service offers an option (``OptionOffered``), its controller decides it from the
terminal (``DecideOption`` on ``dealing.options``); after a round whose Banker's Hand lost, the bank passes to
the next seated player counter-clockwise (:meth:`baccarat.chemin.ChemRules.next_banker_seat`). Decisions and
amounts come from the injected ``random.Random``; time from the injected clock.
"""

from __future__ import annotations

import asyncio

from baccarat.wagers import Wager
from contracts import topics as T
from contracts.commands import CloseBetting, DecideOption, OpenRound, PlaceBet
from contracts.envelope import Envelope
from contracts.events import (
    BankSettled,
    BettingOpened,
    OptionDecided,
    OptionOffered,
    RoundResolved,
    RoundSettled,
)
from services.floor.bettors import STEP_CENTS, Seat
from services.floor.dealer import RETRIES, RETRY_DELAY_S, TableDealer


class ChemTableDealer(TableDealer):
    """Deals a chemin de fer table (``config.variant`` ``chemin_de_fer``); see the module docstring.
    ``run_state.option_decisions`` counts the options decided, by cell."""

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        if self.config.variant.value != "chemin_de_fer":
            raise ValueError(f"{self.table_id}: a chemin de fer dealer needs a chemin de fer table")
        self.banker: Seat | None = None
        #: (Banker's player id, player id) of a banco that lost the last round: banco suivi is theirs next
        self.suivi: tuple[str, str] | None = None

    def _players(self) -> list[Seat]:
        return sorted(self.seated(), key=lambda s: s.seat)

    def _bank_after(self, banker: Seat) -> int | None:
        for e in reversed(self.io.log.by_table[self.table_id]):
            if isinstance(e.payload, BankSettled):
                return e.payload.bank_after_cents if e.payload.player_id == banker.player_id else None
        return None

    def _new_bank(self) -> int:
        rules = self.config.chemin
        top = min(rules.bank_max_cents, max(rules.bank_min_cents, 20 * rules.bank_min_cents))
        steps = max(1, top // rules.bank_min_cents)
        return rules.bank_min_cents * self.rng.randint(1, min(steps, 10))

    def _wagers(self, round_id: str, bank: int) -> list[PlaceBet]:
        assert self.banker is not None
        others = [s for s in self._players() if s.seat != self.banker.seat]
        if not others:
            return []
        if self.suivi is not None and self.suivi[0] == self.banker.player_id:
            loser = next((s for s in others if s.player_id == self.suivi[1]), None)
            if loser is not None and self.rng.random() < 0.6:
                return [PlaceBet(round_id=round_id, seat=loser.seat, player_id=loser.player_id, wager="banco_suivi",
                                 amount_cents=bank)]
        if self.rng.random() < 0.1:
            s = self.rng.choice(others)
            return [PlaceBet(round_id=round_id, seat=s.seat, player_id=s.player_id, wager="banco", amount_cents=bank)]
        lim = self.config.limits_for(Wager.PLAYER)
        left, out = bank, []
        for s in self.rng.sample(others, self.rng.randint(1, len(others))):
            hi = min(left, lim.max_cents, lim.min_cents * 20)
            if hi < lim.min_cents:
                break
            cents = self.rng.randint(-(-lim.min_cents // STEP_CENTS), hi // STEP_CENTS) * STEP_CENTS
            out.append(PlaceBet(round_id=round_id, seat=s.seat, player_id=s.player_id, wager="player",
                                amount_cents=cents))
            left -= cents
        return out

    async def play_round(self, shoe_id: str, round_id: str) -> bool:
        """One chemin de fer round; False when the dealing service refuses to open it (the shoe is finished)."""
        players = self._players()
        if len(players) < 2:
            return False
        if self.banker is None or self.banker.seat not in {s.seat for s in players}:
            self.banker = players[0]
        after = self._bank_after(self.banker)
        if after is not None and after > self.config.chemin.bank_max_cents:  # bank_over_max_must_pass
            nxt = self.config.chemin.next_banker_seat(self.banker.seat, self.config.max_players,
                                                      [s.seat for s in players])
            self.banker = next((s for s in players if s.seat == nxt), players[0])
        banker = self.banker
        bank = self._bank_after(banker) or self._new_bank()
        if not self.config.chemin.bank_min_cents <= bank <= self.config.chemin.bank_max_cents:
            bank = self._new_bank()
        for attempt in range(RETRIES):
            since = self.io.log.mark(self.table_id)
            cid = await self._send(T.DEALING_COMMANDS, OpenRound(round_id=round_id, shoe_id=shoe_id,
                                                                 banker_seat=banker.seat,
                                                                 banker_player_id=banker.player_id,
                                                                 bank_cents=bank), round_id)
            env = await self.io.wait(
                self.table_id,
                lambda e: (isinstance(e.payload, BettingOpened) and e.payload.round_id == round_id)
                or self._rejected(cid)(e),  # noqa: B023 - awaited at once
                since, self.timeout)
            if isinstance(env.payload, BettingOpened):
                break
            # no_open_shoe: the shoe is not loaded yet; unknown_player: dealing has not read the registry yet
            retry = env.payload.reason in ("no_open_shoe", "unknown_player")  # type: ignore[union-attr]
            if not retry or attempt == RETRIES - 1:
                self.run_state.rejections.append(env.payload.reason)  # type: ignore[union-attr]
                return False
            await asyncio.sleep(RETRY_DELAY_S)
        wagers = self._wagers(round_id, bank)
        for bet in wagers:
            await self._send(T.WAGERING_BETS, bet, round_id, actor=bet.player_id)
        await self._send(T.WAGERING_COMMANDS, CloseBetting(round_id=round_id), round_id)
        while True:
            env = await self.io.wait(
                self.table_id, lambda e: isinstance(e.payload, (OptionOffered, RoundSettled))
                and e.payload.round_id == round_id, since, self.timeout)
            if isinstance(env.payload, RoundSettled):
                break
            o = env.payload
            assert isinstance(o, OptionOffered)
            since = self.io.log.mark(self.table_id)
            await self._send(T.DEALING_OPTIONS, DecideOption(round_id=round_id, hand=o.hand,
                                                             draw=self.rng.random() < 0.5, seat=o.seat,
                                                             player_id=o.player_id), round_id, actor=o.player_id)
            d = await self.io.wait(self.table_id, lambda e: isinstance(e.payload, OptionDecided)
                                   and e.payload.round_id == round_id, since, self.timeout)
            cell = d.payload.cell  # type: ignore[union-attr]
            self.run_state.option_decisions[cell] = self.run_state.option_decisions.get(cell, 0) + 1
        self._count(env)
        res = self._result(round_id)
        banco = [b for b in wagers if b.wager in ("banco", "banco_suivi")]
        self.suivi = (banker.player_id, banco[0].player_id) if banco and res == "banker" else None
        if res == "player" and self.config.chemin.bank_passes_on_loss:  # the bank passes
            nxt = self.config.chemin.next_banker_seat(banker.seat, self.config.max_players,
                                                      [s.seat for s in players])
            self.banker = next((s for s in players if s.seat == nxt), None)
        if self.on_round:
            self.on_round(self.run_state, env)
        return True

    def _result(self, round_id: str) -> str:
        for e in reversed(self.io.log.by_table[self.table_id]):
            if isinstance(e.payload, RoundResolved) and e.payload.round_id == round_id:
                return e.payload.winner
        return ""  # voided

    def _count(self, env: Envelope) -> None:
        s = env.payload
        assert isinstance(s, RoundSettled)
        self.run_state.count(s)

