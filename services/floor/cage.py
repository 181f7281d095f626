"""The simulated floor's cage clerk: one table's shift as the pit, the cage and the count room run it.

A :class:`CageClerk` rides along a :class:`~services.floor.dealer.TableDealer` (its ``cage``): it opens the
shift with an opener (the dealer counts, a supervisor attests), has the cage set each rated patron's credit
line (casino-wide, at the cage's key; a marker the line no longer allows, his markers at other tables having
used it, becomes a cash buy-in), and before each round makes sure every patron holds the chips he bets (a buy-in, by cash or by marker
within the line, in whole $25) and that the tray can pay the round's worst case (a fill, requested, issued,
received); after the round it pays and takes chips as the ``BetSettled`` events say and credits the chips
above :attr:`high_water` times its par back to the cage. At the end it collects accrued commission, counts the closer,
the patrons take their chips to the cage (markers repaid first, the rest in cash), the drop box is removed
and the count team counts it. It keeps the **physical** chips (the tray, each patron's
stack, the drop box) from what happened at the table, not from the cage service's figures, so the
statements' count variance checks one against the other.

Amounts: cents; chips and notes by :data:`CHIPS` / :data:`NOTES` (:func:`services.cage.counts.chips_for`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contracts import topics as T
from contracts.cage import (
    CAGE_KEY,
    BoughtIn,
    BuyIn,
    CountDropBox,
    HandOverCredit,
    IssueFill,
    MarkerRequested,
    ReceiveCredit,
    ReceiveFill,
    RecordCloser,
    RecordOpener,
    RedeemChips,
    RemoveDropBox,
    RequestCredit,
    RequestFill,
    SetCreditLine,
)
from contracts.commands import CollectCommission, Command, PlaceBet
from contracts.envelope import Envelope
from contracts.events import BetSettled, CommandRejected, CommissionCollected
from services.cage.counts import chips_for
from services.runtime.core import command

if TYPE_CHECKING:  # pragma: no cover
    from services.floor.dealer import TableDealer

#: chip denominations in a tray (cents): $1,000, $500, $100, $25, $5, $1
CHIPS = (100_000, 50_000, 10_000, 2_500, 500, 100)
#: note denominations in a drop box (cents): $100, $50, $20, $10, $5, $1
NOTES = (10_000, 5_000, 2_000, 1_000, 500, 100)
#: the table id the cage window's own transactions (chips redeemed, credit lines) are keyed by
CAGE_ID = CAGE_KEY
#: buy-ins are whole multiples of this (cents): $25
UNIT = 2_500
#: the most a bet can win per unit staked, by wager (the rest pay at most 1 to 1 or less): a fill covers it
WORST_WIN = {"tie": 8, "dragon_7": 40, "panda_8": 25, "bonus_player": 30, "bonus_banker": 30, "cards_4": 2,
             "cards_5": 2, "cards_6": 2}


@dataclass
class CageTally:
    """What a clerk did, for the demo's summary."""

    fills: int = 0
    credits: int = 0
    buy_ins: int = 0
    markers: int = 0
    refused: list[str] = field(default_factory=list)


class CageClerk:
    """The cage side of one table's shift (see the module docstring). ``opener_cents``: the tray at the opener;
    ``par_cents``: the tray's par (its standard bankroll; default the opener); ``credit_line_cents``: each
    patron's line; ``marker_share``: the chance a buy-in is by marker; ``high_water``: credit the tray down to
    its par when it holds more than this multiple of it (or of the last round's worst case, if larger);
    ``high_roller_cents``: the first patron seated buys in this much cash at once (0: nobody does), which the
    currency reporting lists (an MTL entry, a CTR over $10,000)."""

    def __init__(self, shift_id: str, gaming_day: str, pit: str, rng: random.Random, *,
                 opener_cents: int = 2_000_000, par_cents: int | None = None, credit_line_cents: int = 2_000_000,
                 marker_share: float = 0.3, high_water: float = 1.6, high_roller_cents: int = 0):
        self.shift_id = shift_id
        self.gaming_day = gaming_day
        self.pit = pit
        self.rng = rng
        self.opener_cents = opener_cents
        self.par_cents = opener_cents if par_cents is None else par_cents
        self.credit_line_cents = credit_line_cents
        self.marker_share = marker_share
        self.high_water = high_water
        self.tray = opener_cents
        self.stacks: dict[str, int] = {}
        self.seats: dict[str, int] = {}
        self.cash = 0
        self.markers: list[int] = []
        self.signed: dict[str, int] = {}
        self.tally = CageTally()
        self.high_roller_cents = high_roller_cents
        self._slips = 0
        self._worst = 0

    async def _do(self, d: TableDealer, payload: Command, actor: str) -> Envelope:
        """Send a cage command as ``actor`` and wait for the cage's answer (its event, or a refusal). A marker
        buy-in's answer is its third step (``docs/cage.md``): the ``BoughtIn`` or the buy-in's refusal,
        caused by the cage's ``SettleMarker`` and correlated to the buy-in's command id; its
        ``MarkerRequested`` only reserves the chips while the cage's key decides."""
        since = d.io.log.mark(d.table_id)
        cid = await d._send(T.CAGE_COMMANDS, payload, actor=actor)

        def answer(e: Envelope) -> bool:
            if e.stream != T.CAGE_EVENTS:
                return False
            if e.causation_id == cid:
                return not isinstance(e.payload, MarkerRequested)
            return e.correlation_id == cid and isinstance(e.payload, (BoughtIn, CommandRejected))

        env = await d.io.wait(d.table_id, answer, since, d.timeout)
        if isinstance(env.payload, CommandRejected):
            self.tally.refused.append(env.payload.reason)
        return env

    def _staff(self, d: TableDealer) -> dict[str, str]:
        t = d.table_id
        return {"dealer": d.dealer_id, "sup": f"sup-{t}", "cashier": "cashier-1", "runner": "security-1",
                "count": "count-1"}

    async def open_shift(self, d: TableDealer) -> None:
        """The opener, then every seated patron's credit line."""
        s = self._staff(d)
        env = await self._do(d, RecordOpener(shift_id=self.shift_id, gaming_day=self.gaming_day, pit=self.pit,
                                             chips=chips_for(self.opener_cents, CHIPS),
                                             total_cents=self.opener_cents, supervisor_id=s["sup"]), s["dealer"])
        if isinstance(env.payload, CommandRejected):
            raise RuntimeError(f"{d.table_id}: opener refused: {env.payload.detail}")

    async def seat(self, d: TableDealer, seat: int, player_id: str) -> None:
        """A rated patron sat down at ``seat``: the cage sets his credit line (once a shift)."""
        self.seats[player_id] = seat
        self.stacks.setdefault(player_id, 0)
        if player_id not in self.signed:
            self.signed[player_id] = 0
            await self._at_cage(d, f"{self.shift_id}:line:{player_id}", SetCreditLine(
                player_id=player_id, line_cents=self.credit_line_cents))

    async def _at_cage(self, d: TableDealer, cid: str, payload: Command) -> Envelope:
        """Send a command of the cage window (keyed :data:`CAGE_ID`: credit lines, chips redeemed) as the
        cashier, under the deterministic id ``cid``, and wait for its answer."""
        since = d.io.log.mark(CAGE_ID)
        await d.io.send(T.CAGE_COMMANDS, command(CAGE_ID, cid, d.clock(), payload, actor=self._staff(d)["cashier"]))
        env = await d.io.wait(CAGE_ID, lambda e: e.causation_id == cid, since, d.timeout)
        if isinstance(env.payload, CommandRejected):
            self.tally.refused.append(env.payload.reason)
        return env

    async def _fill(self, d: TableDealer, cents: int) -> None:
        s = self._staff(d)
        self._slips += 1
        fid = f"{self.shift_id}-fill-{self._slips}"
        await self._do(d, RequestFill(fill_id=fid, chips=chips_for(cents, CHIPS), total_cents=cents), s["sup"])
        await self._do(d, IssueFill(fill_id=fid, runner_id=s["runner"]), s["cashier"])
        env = await self._do(d, ReceiveFill(fill_id=fid, supervisor_id=s["sup"]), s["dealer"])
        if not isinstance(env.payload, CommandRejected):
            self.tray += cents
            self.tally.fills += 1

    async def _credit(self, d: TableDealer, cents: int) -> None:
        s = self._staff(d)
        self._slips += 1
        cid = f"{self.shift_id}-credit-{self._slips}"
        await self._do(d, RequestCredit(credit_id=cid, chips=chips_for(cents, CHIPS), total_cents=cents), s["sup"])
        env = await self._do(d, HandOverCredit(credit_id=cid, runner_id=s["runner"]), s["dealer"])
        if not isinstance(env.payload, CommandRejected):
            self.tray -= cents
            self.tally.credits += 1
        await self._do(d, ReceiveCredit(credit_id=cid), s["cashier"])

    async def _buy_in(self, d: TableDealer, player_id: str, cents: int, cash_only: bool = False) -> None:
        if cents > self.tray:  # the dealer cannot hand out chips the tray does not hold: a fill first
            await self._fill(d, -(-(cents - self.tray + self.par_cents // 2) // UNIT) * UNIT)
        used = self.markers_of(player_id)
        method = "marker" if (not cash_only and self.rng.random() < self.marker_share
                              and used + cents <= self.credit_line_cents) else "cash"
        self._slips += 1
        cash = chips_for(cents, NOTES) if method == "cash" else []
        env = await self._do(d, BuyIn(buy_in_id=f"{self.shift_id}-buyin-{self._slips}",
                                      seat=self.seats.get(player_id, 0), player_id=player_id, method=method,
                                      amount_cents=cents, cash=cash), self._staff(d)["dealer"])
        if isinstance(env.payload, CommandRejected) and env.payload.reason == "over_credit_line":
            # his markers at other tables used the line up (it is casino-wide): he pays cash
            return await self._buy_in(d, player_id, cents, cash_only=True)
        if isinstance(env.payload, CommandRejected):
            return
        self.tray -= cents
        self.stacks[player_id] = self.stacks.get(player_id, 0) + cents
        self.tally.buy_ins += 1
        if method == "cash":
            self.cash += cents
        else:
            self.markers.append(cents)
            self.signed[player_id] = used + cents
            self.tally.markers += 1

    def markers_of(self, player_id: str) -> int:
        """Markers the patron signed at this table this shift, cents."""
        return self.signed.get(player_id, 0)

    async def before_bets(self, d: TableDealer, bets: list[PlaceBet]) -> list[PlaceBet]:
        """Buy-ins so every patron holds what he bets (unseated bettors' bets are dropped: no chips, no bet),
        then a fill if the tray could not pay the round's worst case. Returns the bets to place."""
        need: dict[str, int] = {}
        out = []
        for b in bets:
            if b.player_id not in self.seats:
                continue
            need[b.player_id] = need.get(b.player_id, 0) + b.amount_cents
            out.append(b)
        for pid, cents in need.items():
            short = cents - self.stacks.get(pid, 0)
            if short > 0 and self.high_roller_cents and pid == next(iter(self.seats)):
                await self._buy_in(d, pid, max(self.high_roller_cents, -(-short // UNIT) * UNIT), cash_only=True)
                self.high_roller_cents = 0
            elif short > 0:
                await self._buy_in(d, pid, -(-short // UNIT) * UNIT + UNIT * self.rng.randint(4, 40))
        out = [b for b in out if self.stacks.get(b.player_id, 0) >= need[b.player_id]]
        for b in out:
            self.stacks[b.player_id] -= b.amount_cents
        worst = self._worst = sum(b.amount_cents * WORST_WIN.get(b.wager, 1) for b in out)
        if worst > self.tray:
            await self._fill(d, -(-(worst - self.tray) // UNIT) * UNIT)
        return out

    def after_round(self, d: TableDealer, round_id: str, since: int) -> None:
        """Take the stakes and hand the payouts of ``round_id``'s ``BetSettled`` (in the log before its
        ``RoundSettled``)."""
        for e in d.io.log.by_table[d.table_id][since:]:
            p = e.payload
            if isinstance(p, BetSettled) and p.round_id == round_id:
                self.tray += p.stake - p.payout
                self.stacks[p.player_id] = self.stacks.get(p.player_id, 0) + p.payout

    async def between_rounds(self, d: TableDealer) -> None:
        """Credit a tray running high back down to its par (or the last round's worst case, if larger: a
        tray is not credited only to be filled again)."""
        par = max(self.par_cents, self._worst)
        if self.tray > self.high_water * par:
            await self._credit(d, (self.tray - par) // UNIT * UNIT)

    async def cash_out(self, d: TableDealer) -> None:
        """Each patron takes his chips to the cage (table id :data:`CAGE_ID`): they repay his markers first
        (``marker_redemption``), the rest is paid in cash."""
        for pid, stack in sorted(self.stacks.items()):
            owed = self.signed.get(pid, 0)
            for method, cents in (("marker_redemption", min(stack, owed)), ("cash", stack - min(stack, owed))):
                if cents <= 0:
                    continue
                cid = f"{self.shift_id}:redeem:{pid}:{method}"
                await self._at_cage(d, cid, RedeemChips(redemption_id=cid.replace(":", "-"), player_id=pid,
                                                        amount_cents=cents, method=method))
            self.stacks[pid] = 0

    async def close_shift(self, d: TableDealer) -> None:
        """Collect accrued commission at every seat, count the closer, remove and count the drop box."""
        s = self._staff(d)
        for pid, seat in sorted(self.seats.items()):
            since = d.io.log.mark(d.table_id)
            cid = await d._send(T.SETTLEMENT_COMMANDS, CollectCommission(seat=seat, player_id=pid))
            await d.io.wait(d.table_id, lambda e: e.causation_id == cid, since, d.timeout)
            for e in d.io.log.by_table[d.table_id][since:]:
                if isinstance(e.payload, CommissionCollected) and e.causation_id == cid:
                    self.tray += e.payload.amount_cents
                    self.stacks[e.payload.player_id] = self.stacks.get(e.payload.player_id, 0) \
                        - e.payload.amount_cents
        env = await self._do(d, RecordCloser(shift_id=self.shift_id, chips=chips_for(self.tray, CHIPS),
                                             total_cents=self.tray, supervisor_id=s["sup"]), s["dealer"])
        if isinstance(env.payload, CommandRejected):
            raise RuntimeError(f"{d.table_id}: closer refused: {env.payload.detail}")
        await self.cash_out(d)
        await self._do(d, RemoveDropBox(shift_id=self.shift_id), s["count"])
        await self._do(d, CountDropBox(shift_id=self.shift_id, cash=chips_for(self.cash, NOTES),
                                       cash_cents=self.cash, markers=len(self.markers),
                                       markers_cents=sum(self.markers), counters=["count-2", "count-3"]),
                       s["count"])
