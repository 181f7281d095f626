"""Chemin de fer as a service-run game (issue 12), on the in-memory bus with a physical shoe whose cards are
read: the Banker named at ``OpenRound``, the Dominant Player chosen at "No more bets" (13:69F-4.8(c)), each
option cell offered to its controller (4.8(b)-(c)) and decided by that participant, or by the table's default
on the clock's ``ExpireOption``; wagers against the bank refused when the bank cannot cover them; the bank's
settlement with the house's commission; the audit re-derives every round; a rebuild equals the live state.

Deals (P1 B1 P2 B2, then third cards) reaching each option cell (see tests/unit/test_chemin.py):
player_5 ``3 2 2 K`` (+``9`` +``5``); banker_3_9 ``K 2 2 A`` (+``9``); banker_4_1 ``K 2 3 2`` (+``A``);
banker_5_4 ``K 2 4 3`` (+``4``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from baccarat.chemin import ChemRules, TieBreak
from baccarat.money import CommissionMode
from baccarat.table import chemin_de_fer
from contracts import topics as T
from contracts.commands import (
    CloseBetting,
    DecideOption,
    ExpireOption,
    LoadShoe,
    OpenRound,
    OpenTable,
    PlaceBet,
    ReadCard,
    SeatPlayer,
)
from contracts.events import (
    BankSettled,
    BetPlaced,
    BetRejected,
    BetSettled,
    BettingClosed,
    CardDealt,
    CommandRejected,
    CommissionAccrued,
    DominantPlayerChosen,
    OptionDecided,
    OptionOffered,
    RoundOpened,
    RoundResolved,
    RoundSettled,
    RoundVoided,
)
from croupier.audit import audit
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.services.helpers import events, floor_bus, payloads

START = datetime(2026, 1, 1, tzinfo=UTC)
#: (seat, player): the Banker holds seat 1
PLAYERS = ((1, "banker"), (2, "ann"), (3, "ben"), (5, "cat"), (7, "dan"))

DEALS = {
    "player_5": ("3s", "2s", "2h", "Ks", "9s", "5s"),
    "banker_3_9": ("Kh", "2d", "2c", "Ad", "9d", "5d"),
    "banker_4_1": ("Kc", "2c", "3c", "2h", "Ac", "5c"),
    "banker_5_4": ("Kd", "2h", "4d", "3d", "4h", "5h"),
}


class Table:
    """A chemin de fer table with a physical shoe on the in-memory bus; command n is logged n seconds after
    START unless ``at`` says otherwise."""

    def __init__(self, config=None, shoe=None):  # type: ignore[no-untyped-def]
        self.bus, self.hosts = floor_bus()
        # CH1 is a test table (an unregulated training table may open there: CROUPIER_TEST_TABLES)
        self.hosts["dealing"].core.test_tables = ("CH*",)
        self.n = 0
        self.rounds = 0
        self.send(T.DEALING_COMMANDS, OpenTable(config=table_spec(config or chemin_de_fer())))
        # a physical shoe PS whose cards are read, or a shoe the shoe service shuffles (seeded entropy)
        self.send(T.SHOE_COMMANDS, shoe or LoadShoe(shoe_id="PS", physical=True))

    def send(self, topic, payload, cid=None, actor=None, at=None):  # type: ignore[no-untyped-def]
        self.n += 1
        cid = cid or f"c{self.n}"
        when = at or START + timedelta(seconds=self.n)
        self.now = max(getattr(self, "now", START), when)
        self.bus.send(topic, command("CH1", cid, when, payload, actor=actor))
        return cid

    def tick(self) -> datetime:
        """A log time one second after every command so far (the table's clock only moves forward)."""
        self.now = max(self.now, START + timedelta(seconds=self.n)) + timedelta(seconds=1)
        return self.now

    def bank_after(self, banker: str) -> int | None:
        """The bank the last round left ``banker`` (None: ``banker`` did not hold the last bank)."""
        banks = self.of(T.SETTLEMENT_EVENTS, BankSettled)
        return banks[-1].bank_after_cents if banks and banks[-1].player_id == banker else None

    async def open(self, banker=(1, "banker"), bank=None, rid=None) -> str:  # type: ignore[no-untyped-def]
        """Open a round; ``bank`` None: what the last round left this Banker (the bank stays in play), else
        $1,000."""
        await self.bus.pump()
        if bank is None:
            bank = self.bank_after(banker[1]) or 100_000
        if not self.rounds:
            for seat, player in PLAYERS:
                self.send(T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
            await self.bus.pump()  # dealing reads the registry (PlayerSeated) before the Banker is named
        self.rounds += 1
        rid = rid or f"R{self.rounds}"
        self.send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id="PS", banker_seat=banker[0],
                                                banker_player_id=banker[1], bank_cents=bank))
        await self.bus.pump()
        return rid

    def bet(self, rid, seat, player, cents, wager="player", cid=None):  # type: ignore[no-untyped-def]
        return self.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=seat, player_id=player, wager=wager,
                                                        amount_cents=cents), cid, actor=player)

    async def close(self, rid) -> None:  # type: ignore[no-untyped-def]
        self.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
        await self.bus.pump()

    async def read(self, rid, cards, first=1) -> None:  # type: ignore[no-untyped-def]
        for i, card in enumerate(cards, first):
            self.send(T.SHOE_COMMANDS, ReadCard(shoe_id="PS", round_id=rid, card_number=i, card=card))
        await self.bus.pump()

    async def decide(self, rid, hand, draw, seat, player, actor=None, cid=None):  # type: ignore[no-untyped-def]
        cid = self.send(T.DEALING_OPTIONS, DecideOption(round_id=rid, hand=hand, draw=draw, seat=seat,
                                                        player_id=player), cid, actor=actor or player)
        await self.bus.pump()
        return cid

    async def expire(self, rid, hand, at=None, cid=None):  # type: ignore[no-untyped-def]
        cid = self.send(T.DEALING_COMMANDS, ExpireOption(round_id=rid, hand=hand), cid, actor="dealer", at=at)
        await self.bus.pump()
        return cid

    def of(self, stream, kind):  # type: ignore[no-untyped-def]
        return payloads(self.bus, stream, kind)

    def rejected(self):  # type: ignore[no-untyped-def]
        return [(r.command_id, r.reason) for r in self.of(T.DEALING_EVENTS, CommandRejected)]

    def clean(self) -> None:
        rep = audit(events(self.bus))
        assert rep.clean, [str(d) for d in rep.discrepancies]
        return rep


async def _to_option(cell: str, t: Table | None = None):  # type: ignore[no-untyped-def]
    """A round at ``cell``'s option: ann (seat 2) $300 and ben (seat 3) $500 against a $1,000 bank: ben is the
    Dominant Player (the highest wager, 4.8(c))."""
    t = t or Table()
    rid = await t.open()
    t.bet(rid, 2, "ann", 30_000)
    t.bet(rid, 3, "ben", 50_000)
    await t.bus.pump()
    await t.close(rid)
    await t.read(rid, DEALS[cell][:4] if cell == "player_5" else DEALS[cell][:5])
    return t, rid


CONTROLLER = {"player": (3, "ben"), "banker": (1, "banker")}


@pytest.mark.parametrize("cell", list(DEALS))
@pytest.mark.parametrize("draw", [True, False])
async def test_each_option_cell_decided_both_ways_by_its_controller(cell, draw):
    t, rid = await _to_option(cell)
    (dp,) = t.of(T.DEALING_EVENTS, DominantPlayerChosen)
    assert (dp.seat, dp.player_id, dp.wager_cents, dp.rule) == (3, "ben", 50_000, "highest_wager")
    (offer,) = t.of(T.DEALING_EVENTS, OptionOffered)
    hand = "player" if cell == "player_5" else "banker"
    seat, player = CONTROLLER[hand]
    assert (offer.cell, offer.hand, offer.seat, offer.player_id) == (cell, hand, seat, player)
    assert t.of(T.DEALING_EVENTS, RoundResolved) == []  # the round waits for the decision
    await t.decide(rid, hand, draw, seat, player)
    (dec,) = t.of(T.DEALING_EVENTS, OptionDecided)
    assert (dec.cell, dec.draw, dec.by, dec.player_id) == (cell, draw, "participant", player)
    rest = DEALS[cell][4:] if cell == "player_5" else DEALS[cell][5:]
    await t.read(rid, rest, first=5 if cell == "player_5" else 6)
    (res,) = t.of(T.DEALING_EVENTS, RoundResolved)
    hand_cards = res.player_cards if hand == "player" else res.banker_cards
    assert len(hand_cards) == (3 if draw else 2)
    if cell == "player_5":  # stand: 5 v the Banker's 2+K+9 = 1; draw the 9: 4 v 2+K+5 = 7
        assert (res.player_points, res.banker_points, res.winner) == ((4, 7, "banker") if draw else (5, 1, "player"))
    if cell == "banker_3_9":  # the Player's K 2 9 = 1; the Banker's 2 A (+5 when drawing) = 3 or 8
        assert (res.player_points, res.banker_points) == ((1, 8) if draw else (1, 3))
    t.clean()


async def test_the_money_of_a_round_is_conserved_between_participants_and_house():
    # banker_3_9 drawing: the Banker's 8 beats the Player's 1; ann $300 and ben $500 lose to a $1,000 bank
    t, rid = await _to_option("banker_3_9")
    await t.decide(rid, "banker", True, 1, "banker")
    await t.read(rid, ["5d"], first=6)
    bets = t.of(T.SETTLEMENT_EVENTS, BetSettled)
    assert sorted((b.player_id, b.result, b.payout) for b in bets) == [("ann", "lose", 0), ("ben", "lose", 0)]
    (bank,) = t.of(T.SETTLEMENT_EVENTS, BankSettled)
    assert (bank.player_id, bank.bank_cents, bank.wagers_cents, bank.won_cents, bank.commission_cents,
            bank.commission_accrued, bank.bank_after_cents) == ("banker", 100_000, 80_000, 80_000, 4_000, False,
                                                               176_000)
    (rs,) = t.of(T.SETTLEMENT_EVENTS, RoundSettled)
    assert (rs.stakes, rs.payouts, rs.commission, rs.table_result) == (80_000, 0, 4_000, 4_000)
    bettors = sum(b.payout - b.stake for b in bets)
    assert bettors + (bank.won_cents - bank.commission_cents) + rs.table_result == 0
    t.clean()


async def test_the_bank_loses_and_pays_every_wager_no_commission():
    t, rid = await _to_option("player_5")
    await t.decide(rid, "player", False, 3, "ben")  # stand on 5: the Banker's 2 draws the 9 -> 1
    await t.read(rid, ["9s"], first=5)
    bets = t.of(T.SETTLEMENT_EVENTS, BetSettled)
    assert sorted((b.player_id, b.result, b.payout) for b in bets) == [("ann", "win", 60_000), ("ben", "win", 100_000)]
    (bank,) = t.of(T.SETTLEMENT_EVENTS, BankSettled)
    assert (bank.won_cents, bank.commission_cents, bank.bank_after_cents) == (-80_000, 0, 20_000)
    (rs,) = t.of(T.SETTLEMENT_EVENTS, RoundSettled)
    assert rs.table_result == 0
    assert sum(b.payout - b.stake for b in bets) + bank.won_cents == 0
    t.clean()
    # the Banker's Hand lost: the bank passes (bank_passes_on_loss); the same Banker is refused
    await t.bus.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R2", shoe_id="PS", banker_seat=1, banker_player_id="banker",
                                         bank_cents=20_000), "same-banker")
    await t.bus.pump()
    assert ("same-banker", "bank_must_pass") in t.rejected()
    rid2 = await t.open(banker=(2, "ann"), bank=50_000)
    assert rid2 == "R2" and ("c" + str(t.n), "bank_must_pass") not in t.rejected()


async def test_commission_accrued_to_the_bankers_box_with_its_rounding():
    t = Table(chemin_de_fer(commission_mode=CommissionMode.ACCRUE))
    rid = await t.open(bank=100_000)
    t.bet(rid, 2, "ann", 33_325)  # 5 % of 33,325 = 1,666.25: never above 5 % on a regulated table, 1,666
    await t.bus.pump()
    await t.close(rid)
    await t.read(rid, ("Kh", "2d", "2c", "Ad", "9d"))
    await t.decide(rid, "banker", True, 1, "banker")
    await t.read(rid, ["5d"], first=6)
    (bank,) = t.of(T.SETTLEMENT_EVENTS, BankSettled)
    assert (bank.won_cents, bank.commission_cents, bank.commission_accrued) == (33_325, 1_666, True)
    (acc,) = t.of(T.SETTLEMENT_EVENTS, CommissionAccrued)
    assert (acc.seat, acc.player_id, acc.amount_cents, acc.owed_cents) == (1, "banker", 1_666, 1_666)
    (rs,) = t.of(T.SETTLEMENT_EVENTS, RoundSettled)
    assert rs.table_result == 1_666
    t.clean()


async def test_a_decision_from_anyone_but_the_controller_is_refused():
    t, rid = await _to_option("player_5")
    await t.decide(rid, "player", True, 2, "ann", cid="not-dominant")  # ann wagered less than ben
    await t.decide(rid, "player", True, 1, "banker", cid="banker-on-player")  # the Banker decides only his hand
    await t.decide(rid, "player", True, 3, "ben", actor="ann", cid="forged")  # ann's terminal names ben
    await t.decide(rid, "banker", True, 1, "banker", cid="out-of-turn")  # the Player's option is pending
    await t.decide(rid, "dealer", True, 1, "banker", cid="no-hand")
    assert t.rejected() == [("not-dominant", "not_controller"), ("banker-on-player", "not_controller"),
                            ("forged", "actor_mismatch"), ("out-of-turn", "option_out_of_turn"),
                            ("no-hand", "unknown_hand")]
    assert t.of(T.DEALING_EVENTS, OptionDecided) == []
    await t.decide(rid, "player", False, 3, "ben")
    await t.decide(rid, "player", True, 3, "ben", cid="twice")  # decided already: no option now
    await t.read(rid, ["9s"], first=5)
    await t.decide(rid, "banker", True, 1, "banker", cid="after")  # the round is over
    assert t.rejected()[-2:] == [("twice", "no_option_pending"), ("after", "no_option_pending")]
    (res,) = t.of(T.DEALING_EVENTS, RoundResolved)
    assert res.winner == "player"
    t.clean()


async def test_no_option_exists_refused():
    t = Table()
    rid = await t.open()
    t.bet(rid, 2, "ann", 10_000)
    await t.bus.pump()
    await t.decide(rid, "player", True, 2, "ann", cid="betting")  # no card yet
    await t.close(rid)
    await t.read(rid, ("4s", "Ks", "3s", "6s"))  # Player 7 v Banker 6: both stand, no option
    await t.decide(rid, "player", True, 2, "ann", cid="no-cell")
    await t.expire(rid, "banker", cid="no-cell-clock")
    assert t.rejected() == [("betting", "no_option_pending"), ("no-cell", "no_option_pending"),
                            ("no-cell-clock", "no_option_pending")]
    assert [r.winner for r in t.of(T.DEALING_EVENTS, RoundResolved)] == ["player"]
    t.clean()


async def test_the_configured_default_decides_when_the_controller_does_not_in_time():
    rules = ChemRules(option_seconds=20)
    t = Table(chemin_de_fer(chemin=rules))
    t, rid = await _to_option("banker_5_4", t)
    (offer_env,) = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, OptionOffered)]
    offer = offer_env.payload
    card5 = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, CardDealt)][-1]
    assert offer_env.occurred_at == card5.occurred_at and offer.option_seconds == 20
    deadline = card5.occurred_at + timedelta(seconds=20)
    assert offer.default_draw is True  # banker 5 giving 4 draws (the punto banco cell)
    await t.expire(rid, "banker", at=deadline - timedelta(milliseconds=1), cid="early")
    assert t.rejected() == [("early", "option_not_expired")]
    await t.expire(rid, "banker", at=deadline, cid="late")
    (dec,) = t.of(T.DEALING_EVENTS, OptionDecided)
    assert (dec.cell, dec.draw, dec.by, dec.player_id) == ("banker_5_4", True, "default", "banker")
    await t.decide(rid, "banker", False, 1, "banker", cid="too-late")
    assert t.rejected()[-1] == ("too-late", "no_option_pending")
    await t.read(rid, ["5h"], first=6)
    (res,) = t.of(T.DEALING_EVENTS, RoundResolved)
    assert res.banker_cards == ["2h", "3d", "5h"]
    t.clean()
    # a table whose default stands
    t = Table(chemin_de_fer(chemin=ChemRules(option_defaults=ChemRules().option_defaults.__class__(frozenset()))))
    t, rid = await _to_option("banker_5_4", t)
    (offer_env,) = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, OptionOffered)]
    await t.expire(rid, "banker", at=offer_env.occurred_at + timedelta(seconds=30))
    (dec,) = t.of(T.DEALING_EVENTS, OptionDecided)
    assert (dec.draw, dec.by) == (False, "default")
    (res,) = t.of(T.DEALING_EVENTS, RoundResolved)
    assert res.banker_cards == ["2h", "3d"]
    t.clean()


async def test_dominant_player_per_4_8_c_with_ties_broken_as_configured():
    async def chosen(config, wagers, banker=(1, "banker")):  # type: ignore[no-untyped-def]
        t = Table(config)
        rid = await t.open(banker=banker)
        for seat, player, cents, wager in wagers:
            t.bet(rid, seat, player, cents, wager)
        await t.bus.pump()
        await t.close(rid)
        (dp,) = t.of(T.DEALING_EVENTS, DominantPlayerChosen)
        return dp.seat, dp.player_id, dp.rule

    tie = [(7, "dan", 20_000, "player"), (2, "ann", 20_000, "player"), (3, "ben", 5_000, "player")]
    # equally high: the nearest seat counter-clockwise from the Banker at seat 1 is 2
    assert await chosen(chemin_de_fer(), tie) == (2, "ann", "nearest_counter_clockwise")
    # seats numbered the other way round the table: from seat 1 counter-clockwise comes 7 before 2
    ccw = ChemRules(seats_counter_clockwise=(1, 7, 6, 5, 4, 3, 2))
    assert await chosen(chemin_de_fer(chemin=ccw), tie) == (7, "dan", "nearest_counter_clockwise")
    # a training table's house rule: the first wager made
    first = chemin_de_fer(regulated=False, chemin=ChemRules(tie_break=TieBreak.FIRST_WAGER))
    assert await chosen(first, tie) == (7, "dan", "first_wager")
    # the highest wager against the Banker
    assert await chosen(chemin_de_fer(), [(2, "ann", 20_000, "player"), (5, "cat", 30_000, "player")]) == \
        (5, "cat", "highest_wager")
    # banco (the whole bank) takes control
    assert await chosen(chemin_de_fer(), [(5, "cat", 100_000, "banco")]) == (5, "cat", "banco")


async def test_wagers_the_bank_cannot_cover_are_refused_before_the_deal():
    t = Table()
    rid = await t.open(bank=50_000)
    t.bet(rid, 2, "ann", 30_000, cid="ok")
    t.bet(rid, 3, "ben", 25_000, cid="over")  # 55,000 against 50,000
    t.bet(rid, 1, "banker", 5_000, cid="self")
    t.bet(rid, 5, "cat", 50_000, wager="banco", cid="banco-late")  # another wager is already made
    t.bet(rid, 3, "ben", 20_000, cid="fits")
    await t.bus.pump()
    rej = [(r.command_id, r.reason) for r in t.of(T.WAGERING_EVENTS, BetRejected)]
    assert rej == [("over", "bank_cannot_cover"), ("self", "banker_cannot_wager"),
                   ("banco-late", "banco_needs_whole_bank")]
    t2 = Table()
    r2 = await t2.open(bank=50_000)
    t2.bet(r2, 5, "cat", 40_000, wager="banco", cid="short")
    t2.bet(r2, 5, "cat", 50_000, wager="banco", cid="banco")
    t2.bet(r2, 2, "ann", 2_500, cid="after-banco")
    await t2.bus.pump()
    rej = [(r.command_id, r.reason) for r in t2.of(T.WAGERING_EVENTS, BetRejected)]
    assert rej == [("short", "banco_needs_whole_bank"), ("after-banco", "banco_called")]
    # the bank itself within the table's limits, and a Banker named
    t3 = Table()
    await t3.bus.pump()
    t3.send(T.DEALING_COMMANDS, OpenRound(round_id="W", shoe_id="PS", banker_seat=1, banker_player_id="banker",
                                          bank_cents=100_000), "unseated")  # nobody is registered yet
    await t3.bus.pump()
    t3.send(T.WAGERING_COMMANDS, SeatPlayer(seat=1, player_id="banker"))
    await t3.bus.pump()
    t3.send(T.DEALING_COMMANDS, OpenRound(round_id="X", shoe_id="PS", banker_seat=1, banker_player_id="banker",
                                          bank_cents=5_000), "small")
    t3.send(T.DEALING_COMMANDS, OpenRound(round_id="Y", shoe_id="PS"), "nobody")
    t3.send(T.DEALING_COMMANDS, OpenRound(round_id="Z", shoe_id="PS", banker_seat=2, banker_player_id="banker",
                                          bank_cents=100_000), "other-seat")  # registered at seat 1, not 2
    await t3.bus.pump()
    assert t3.rejected() == [("unseated", "unknown_player"), ("small", "bank_out_of_limits"),
                             ("nobody", "no_banker"), ("other-seat", "unknown_player")]


async def test_nobody_against_the_bank_voids_the_round():
    t = Table()
    rid = await t.open()
    await t.close(rid)
    assert [v.reason for v in t.of(T.DEALING_EVENTS, RoundVoided)] == ["no_wager_against_the_bank"]
    t.clean()


async def test_replay_equals_live():
    t, rid = await _to_option("player_5")
    await t.decide(rid, "player", True, 3, "ben")
    await t.read(rid, ["9s", "5s"], first=5)
    r2 = await t.open(banker=(1, "banker"))  # the Banker won: keeps the whole bank in play
    assert t.of(T.DEALING_EVENTS, RoundOpened)[-1].bank_cents == 100_000 + 80_000 - 4_000
    t.bet(r2, 5, "cat", 176_000, wager="banco")
    await t.bus.pump()
    await t.close(r2)
    await t.read(r2, DEALS["banker_4_1"][:5])
    (offer,) = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, OptionOffered)
                and e.payload.round_id == r2]
    await t.expire(r2, "banker", at=offer.occurred_at + timedelta(seconds=31))
    await t.read(r2, ["5c"], first=6)
    rep = t.clean()
    assert rep.rounds_checked == 2
    logged = {topic: len(recs) for topic, recs in t.bus.topics.items()}
    for name, host in t.hosts.items():
        live = host.runner.tables["CH1"].state
        await t.bus.rebuild(host)
        await t.bus.pump()
        rebuilt = host.runner.tables["CH1"].state
        if name == "dealing":  # DrawCard commands sent are not history (see test_bounded_state)
            live = replace(live, round=replace(live.round, requested=0))
            rebuilt = replace(rebuilt, round=replace(rebuilt.round, requested=0))
        assert rebuilt == live, name
    # the rebuilt services publish nothing new: no decision is taken twice
    assert {topic: len(recs) for topic, recs in t.bus.topics.items()} == logged


async def test_a_whole_shoe_of_chemin_de_fer_audits_clean_conserves_money_and_replays():
    """A CSPRNG shoe dealt to the end: the bank passes counter-clockwise when the Banker's Hand loses, every
    option is decided by its controller or, at random, left to the clock's default; money is conserved to the
    cent between the participants and the house, the audit re-derives every round, a rebuild equals live."""
    import random

    from contracts.events import ShoeFinished

    rng = random.Random(12)
    rules = ChemRules()
    t = Table(shoe=LoadShoe(shoe_id="S1"))
    await t.bus.pump()
    for seat, player in PLAYERS:
        t.send(T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
    await t.bus.pump()  # dealing reads the registry before the first Banker is named
    seats = dict(PLAYERS)
    banker = (1, "banker")
    suivi = None  # (Banker, player) whose banco lost the last round
    flip = False
    n = 0
    while not t.of(T.DEALING_EVENTS, ShoeFinished) and n < 120:
        n += 1
        rid = f"S1-{n}"
        bank = t.bank_after(banker[1]) or rng.choice([50_000, 100_000, 250_000])  # the bank stays in play
        t.send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id="S1", banker_seat=banker[0],
                                             banker_player_id=banker[1], bank_cents=bank), at=t.tick())
        await t.bus.pump()
        others = [(s, p) for s, p in PLAYERS if s != banker[0]]
        if suivi is not None and suivi[0] == banker and rng.random() < 0.7:  # banco suivi, over a wager
            t.bet(rid, *others[0], 2_500)
            t.bet(rid, *next(x for x in PLAYERS if x[1] == suivi[1]), bank, wager="banco_suivi")
        elif rng.random() < 0.15:
            s, p = rng.choice(others)
            t.bet(rid, s, p, bank, wager="banco")
        else:
            left = bank
            for s, p in rng.sample(others, rng.randint(1, len(others))):
                cents = min(left, rng.choice([2_500, 5_000, 10_000, 20_000]))
                if cents >= 2_500:
                    t.bet(rid, s, p, cents)
                    left -= cents
        await t.bus.pump()
        t.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid), at=t.tick())
        await t.bus.pump()
        for _ in range(3):  # at most two options a round
            offers = [e for e in events(t.bus, T.DEALING_EVENTS)
                      if isinstance(e.payload, (OptionOffered, OptionDecided)) and e.payload.round_id == rid]
            if not offers or not isinstance(offers[-1].payload, OptionOffered):
                break
            o = offers[-1]
            if rng.random() < 0.3:  # nobody decides: the table's clock applies the default
                await t.expire(rid, o.payload.hand, at=max(t.tick(), o.occurred_at + timedelta(seconds=30)))
            else:
                flip = not flip  # draw and stand in turn
                await t.decide(rid, o.payload.hand, flip, o.payload.seat, o.payload.player_id)
        res = [r for r in t.of(T.DEALING_EVENTS, RoundResolved) if r.round_id == rid]
        bancos = [e.payload for e in events(t.bus, T.WAGERING_EVENTS) if isinstance(e.payload, BettingClosed)
                  and e.payload.round_id == rid]
        banco = [b.player_id for b in bancos[0].bets if b.wager in ("banco", "banco_suivi")] if bancos else []
        suivi = (banker, banco[0]) if banco and res and res[0].winner == "banker" else None
        if res and res[0].winner == "player" and rules.bank_passes_on_loss:  # the bank passes
            nxt = rules.next_banker_seat(banker[0], 14, seats)
            banker = (nxt, seats[nxt])
    assert t.of(T.DEALING_EVENTS, ShoeFinished), "the shoe was dealt to its end"
    resolved = t.of(T.DEALING_EVENTS, RoundResolved)
    decided = t.of(T.DEALING_EVENTS, OptionDecided)
    assert len(resolved) >= 60 and {d.by for d in decided} == {"participant", "default"}
    assert {d.hand for d in decided} == {"player", "banker"} and {d.draw for d in decided if d.by == "participant"} == {True, False}
    assert "banco_suivi" in {b.wager for b in t.of(T.SETTLEMENT_EVENTS, BetSettled)}
    rep = t.clean()
    assert rep.rounds_checked == len(resolved)
    assert not [r for r in t.rejected() if r[1] not in ("option_not_expired",)]
    # money: what the participants against the bank won, the Banker's net and the house's commission sum to 0
    bets = t.of(T.SETTLEMENT_EVENTS, BetSettled)
    banks = t.of(T.SETTLEMENT_EVENTS, BankSettled)
    rounds = t.of(T.SETTLEMENT_EVENTS, RoundSettled)
    assert len(banks) == len(resolved) and len(rounds) == len(resolved) + len(t.of(T.DEALING_EVENTS, RoundVoided))
    by_round = {r.round_id: r for r in rounds}
    for b in banks:
        mine = [x for x in bets if x.round_id == b.round_id]
        assert sum(x.payout - x.stake for x in mine) + (b.won_cents - b.commission_cents) \
            + by_round[b.round_id].table_result == 0
        assert by_round[b.round_id].table_result == b.commission_cents == (
            b.won_cents // 20 if b.won_cents > 0 else 0)  # 5 %, never above it on a regulated table (issue 28)
    assert sum(b.commission_cents for b in banks) > 0
    logged = {topic: len(recs) for topic, recs in t.bus.topics.items()}
    for name, host in t.hosts.items():
        live = host.runner.tables["CH1"].state
        await t.bus.rebuild(host)
        await t.bus.pump()
        rebuilt = host.runner.tables["CH1"].state
        if name == "dealing":  # as test_bounded_state: DrawCards sent and ShoeFinished folded before the shoe
            live = replace(live, round=replace(live.round, requested=0))
            rebuilt = replace(rebuilt, round=replace(rebuilt.round, requested=0),
                              shoe=replace(rebuilt.shoe, finished=live.shoe.finished))
        assert rebuilt == live, name
    assert {topic: len(recs) for topic, recs in t.bus.topics.items()} == logged


async def test_the_audit_flags_a_chemin_de_fer_round_that_the_rules_contradict():
    import msgspec

    t, rid = await _to_option("player_5")
    await t.expire(rid, "player", at=t.now + timedelta(seconds=40))  # the default: draw
    await t.read(rid, ["9s", "5s"], first=5)
    log = events(t.bus)
    assert audit(log).clean

    def tampered(kind, **changes):  # type: ignore[no-untyped-def]
        out = []
        for e in log:
            if isinstance(e.payload, kind):
                env_changes = changes.pop("_env", {})
                e = msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, **changes), **env_changes)
            out.append(e)
        return sorted({d.kind for d in audit(out).discrepancies})

    # the decision recorded for someone who does not control the Player's Hand
    assert tampered(OptionDecided, seat=2, player_id="ann") == ["option_mismatch"]
    # the default applied before the deadline
    offer_at = next(e.occurred_at for e in log if isinstance(e.payload, OptionOffered))
    assert tampered(OptionDecided, _env={"occurred_at": offer_at + timedelta(seconds=29)}) == ["option_mismatch"]
    # a decision the table's default does not give: the re-dealt round differs from the recorded one
    assert "outcome_mismatch" in tampered(OptionDecided, draw=False)
    # the offer made to the wrong participant, or with another default
    assert tampered(OptionOffered, seat=2, player_id="ann") == ["option_mismatch"]
    assert tampered(OptionOffered, default_draw=False) == ["option_mismatch"]
    # the Dominant Player is not the highest wager against the Banker (ben, $500 to ann's $300)
    # (and the option, offered to ben, was then not offered to the recorded Dominant Player)
    assert tampered(DominantPlayerChosen, seat=2, player_id="ann") == ["dominant_player_mismatch", "option_mismatch"]
    # the bank's settlement: a commission the rules do not give
    assert tampered(BankSettled, commission_cents=3_999) == ["bank_mismatch"]
    assert tampered(RoundSettled, table_result=0) == ["round_totals"]


async def test_the_cage_ledger_books_the_bank_not_the_house():
    from services.projection.ledger import Ledger, commission_account, game_account, patron_account

    t, rid = await _to_option("banker_3_9")  # the bank wins ann's $300 and ben's $500, pays 5 %
    await t.decide(rid, "banker", True, 1, "banker")
    await t.read(rid, ["5d"], first=6)
    ledger = Ledger().post_all(events(t.bus))
    bal = ledger.balances("CH1")
    assert (bal[patron_account("ann")], bal[patron_account("ben")]) == (-30_000, -50_000)
    assert bal[patron_account("banker")] == 80_000 - 4_000
    assert (bal[game_account("CH1")], bal[commission_account("CH1")]) == (0, 4_000)
    assert sum(bal.values()) == 0
    (rs,) = t.of(T.SETTLEMENT_EVENTS, RoundSettled)
    assert ledger.table_result("CH1") == rs.table_result == 4_000


async def test_banco_suivi_the_last_bancos_loser_has_precedence():
    from contracts.events import BetWithdrawn

    t = Table()
    r1 = await t.open(bank=100_000)
    t.bet(r1, 5, "cat", 100_000, wager="banco")
    t.bet(r1, 2, "ann", 10_000, wager="banco_suivi", cid="too-early")  # nobody's banco lost yet
    await t.bus.pump()
    await t.close(r1)
    await t.read(r1, ("2s", "9s", "3s", "Ks"))  # Player 5, Banker 9: the Banker's natural wins cat's banco
    assert [r.winner for r in t.of(T.DEALING_EVENTS, RoundResolved)] == ["banker"]
    r2 = await t.open()  # the Banker won: the whole bank stays in play, $1,000 + $1,000 - $50 commission
    assert t.of(T.DEALING_EVENTS, RoundOpened)[-1].bank_cents == 195_000
    t.bet(r2, 2, "ann", 20_000, cid="ann")
    t.bet(r2, 7, "dan", 195_000, wager="banco_suivi", cid="dan-suivi")  # dan's banco did not lose
    t.bet(r2, 5, "cat", 150_000, wager="banco_suivi", cid="short")  # the whole bank or nothing
    t.bet(r2, 5, "cat", 195_000, wager="banco_suivi", cid="suivi")  # returns ann's wager
    t.bet(r2, 3, "ben", 5_000, cid="after")
    await t.bus.pump()
    rej = [(r.command_id, r.reason) for r in t.of(T.WAGERING_EVENTS, BetRejected)]
    assert rej == [("too-early", "no_banco_suivi"), ("dan-suivi", "no_banco_suivi"),
                   ("short", "banco_needs_whole_bank"), ("after", "banco_called")]
    assert t.of(T.WAGERING_EVENTS, BetWithdrawn) == []  # the displacement waits for "No more bets"
    await t.close(r2)
    assert [(w.bet_id, w.reason) for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)] == [("ann", "banco_suivi")]
    (book,) = [b for b in t.of(T.WAGERING_EVENTS, BettingClosed) if b.round_id == r2]
    assert [(x.bet_id, x.wager, x.amount_cents) for x in book.bets] == [("suivi", "banco_suivi", 195_000)]
    dp = [d for d in t.of(T.DEALING_EVENTS, DominantPlayerChosen) if d.round_id == r2]
    assert [(d.seat, d.player_id, d.wager_cents, d.rule) for d in dp] == [(5, "cat", 195_000, "banco")]
    await t.read(r2, ("5h", "2h", "3h", "Kh"))  # Player 8: cat's banco suivi wins the whole bank
    (bank,) = [b for b in t.of(T.SETTLEMENT_EVENTS, BankSettled) if b.round_id == r2]
    assert (bank.won_cents, bank.commission_cents, bank.bank_after_cents) == (-195_000, 0, 0)
    (s,) = [b for b in t.of(T.SETTLEMENT_EVENTS, BetSettled) if b.round_id == r2]
    assert (s.player_id, s.wager, s.result, s.payout) == ("cat", "banco_suivi", "win", 390_000)
    # the bank passes; cat's banco won, so nobody has banco suivi against the next Banker
    r3 = await t.open(banker=(2, "ann"), bank=100_000)
    t.bet(r3, 5, "cat", 100_000, wager="banco_suivi", cid="won-last")
    await t.bus.pump()
    assert [(r.command_id, r.reason) for r in t.of(T.WAGERING_EVENTS, BetRejected)][-1] == ("won-last",
                                                                                          "no_banco_suivi")
    t.clean()


async def test_the_projection_publishes_odds_under_the_tables_default_decisions():
    from contracts.events import OddsUpdated
    from services.projection.core import ProjectionCore

    t = Table(shoe=LoadShoe(shoe_id="S1"))
    t.bus.add(ProjectionCore())
    await t.bus.pump()
    odds = payloads(t.bus, T.PROJECTION_ODDS, OddsUpdated)
    loaded = [o for o in odds if o.trigger == "shoe_loaded" and o.view == "surveillance"]
    assert loaded, "odds are published for a chemin de fer table"
    # a full 8-deck shoe under the default policy (the punto banco cells): the published counts
    assert (loaded[0].counts["banker"], loaded[0].counts["player"]) == (2_292_252_566_437_888, 2_230_518_282_592_256)
    assert {w.wager for w in loaded[0].wagers} == {"player", "banco", "banco_suivi"}


async def test_every_chemin_de_fer_state_round_trips_for_snapshots():
    from tests.services.test_state_codec import round_trip_every_fold

    t = Table(chemin_de_fer(commission_mode=CommissionMode.ACCRUE))
    seen = round_trip_every_fold(t.hosts)
    t, r1 = await _to_option("player_5", t)  # a book, the Dominant Player, an option on offer
    await t.decide(r1, "player", True, 3, "ben")
    await t.read(r1, ["9s", "5s"], first=5)  # the Banker wins: commission accrued to the Banker's box
    r2 = await t.open()  # $1,000 + $800 won - $40 commission (accrued to the Banker's box: not the bank's)
    bank = t.of(T.DEALING_EVENTS, RoundOpened)[-1].bank_cents
    assert bank == 176_000
    t.bet(r2, 5, "cat", bank, wager="banco")
    await t.bus.pump()
    await t.close(r2)
    await t.read(r2, ("2s", "9s", "3s", "Ks"))  # the banco loses: cat may call banco suivi next
    r3 = await t.open()
    t.bet(r3, 2, "ann", 10_000)
    t.bet(r3, 5, "cat", t.of(T.DEALING_EVENTS, RoundOpened)[-1].bank_cents, wager="banco_suivi")
    await t.bus.pump()
    assert [w.wager for w in t.of(T.WAGERING_EVENTS, BetPlaced)][-1] == "banco_suivi"
    assert seen["dealing"] > 20 and seen["wagering"] > 20 and seen["settlement"] > 10
    assert seen["round_being_dealt"] and seen["commission_owed"]
    t.clean()


async def test_a_banker_who_keeps_the_bank_puts_all_of_it_up_again():
    t, rid = await _to_option("banker_3_9")
    await t.decide(rid, "banker", True, 1, "banker")  # the Banker's 8 wins $800, less the $40 commission
    await t.read(rid, ["5d"], first=6)
    await t.bus.pump()
    t.send(T.DEALING_COMMANDS, OpenRound(round_id="R2", shoe_id="PS", banker_seat=1, banker_player_id="banker",
                                         bank_cents=100_000), "takes-some-out")
    await t.bus.pump()
    assert t.rejected() == [("takes-some-out", "bank_must_stay_in_play")]
    assert "176000 cents" in t.of(T.DEALING_EVENTS, CommandRejected)[-1].detail
    r2 = await t.open(bank=176_000)
    assert r2 == "R2" and len(t.rejected()) == 1
    # another Banker may put up a bank of any size within the limits; a table may let the Banker take out
    t2 = Table(chemin_de_fer(chemin=ChemRules(bank_stays_in_play=False)))
    t2, rid = await _to_option("banker_3_9", t2)
    await t2.decide(rid, "banker", True, 1, "banker")
    await t2.read(rid, ["5d"], first=6)
    await t2.open(bank=100_000)
    assert t2.rejected() == []


async def test_the_simulated_floor_deals_a_whole_chemin_de_fer_shoe():
    import random

    from services.floor.bettors import Seat
    from services.floor.chemin import ChemTableDealer
    from services.floor.dealer import Clock
    from services.floor.io import MemoryFloorIO

    bus, _ = floor_bus(seed=31)
    io = MemoryFloorIO(bus)
    seats = [Seat(i, f"p{i}") for i in (1, 2, 3, 5, 6)]
    dealer = ChemTableDealer(io, "CF1", chemin_de_fer(), seats, random.Random(31), Clock())
    run = await dealer.run(shoes=1)
    assert run.rejections == ["shoe_complete"] and 60 <= run.rounds <= 90
    assert sum(run.option_decisions.values()) == len(payloads(bus, T.DEALING_EVENTS, OptionDecided)) > 0
    banks = payloads(bus, T.SETTLEMENT_EVENTS, BankSettled)
    assert run.table_result == run.commission == sum(b.commission_cents for b in banks) > 0
    assert len({b.player_id for b in banks}) > 1  # the bank passed
    wagers = {b.wager for b in payloads(bus, T.SETTLEMENT_EVENTS, BetSettled)}
    assert wagers == {"player", "banco", "banco_suivi"}
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.rounds_checked == run.rounds


async def test_replay_tells_a_chemin_de_fer_round():
    from croupier.replay import describe, replay

    t, rid = await _to_option("player_5")
    await t.decide(rid, "player", False, 3, "ben")
    await t.read(rid, ["9s"], first=5)
    view = replay(events(t.bus), "CH1", round_id=rid)
    lines = [describe(x) for x in view["timeline"]]
    labels = [label for label, _ in lines]
    assert labels.index("no more bets") < labels.index("dominant player") < labels.index("card 1")
    assert labels.index("card 4") < labels.index("option") < labels.index("decided") < labels.index("result")
    assert dict(lines)["dominant player"] == ("seat 3 ben controls the Player's Hand (highest_wager, 500.00 "
                                              "against the bank; 13:69F-4.8(c))")
    assert dict(lines)["option"] == "player_5: seat 3 ben decides, draw or stand, within 30 s (default: draw)"
    assert dict(lines)["decided"] == "player_5: stand, by seat 3 ben"
    assert dict(lines)["bank"] == ("seat 1 banker: bank 1,000.00 against 800.00, lost 800.00; "
                                   "bank after 200.00")


async def test_a_seat_outside_the_tables_seat_order_cannot_wager():
    t = Table(chemin_de_fer(chemin=ChemRules(seats_counter_clockwise=(1, 2, 3, 5))))
    rid = await t.open()
    t.bet(rid, 7, "dan", 10_000, cid="dan")  # seat 7 is not one of the table's seats
    t.bet(rid, 5, "cat", 10_000, cid="cat")
    await t.bus.pump()
    assert [(r.command_id, r.reason) for r in t.of(T.WAGERING_EVENTS, BetRejected)] == [("dan", "invalid_seat")]
    await t.close(rid)
    assert [(d.seat, d.player_id) for d in t.of(T.DEALING_EVENTS, DominantPlayerChosen)] == [(5, "cat")]


async def test_a_restart_between_two_rounds_keeps_the_banco_suivi_right():
    """The wagering service rebuilt from its own events first, then its inputs (as a restart reads them), knows
    whose banco lost the last round against this Banker: the same state as live, and cat's banco suivi
    stands."""
    from typing import Any

    from contracts.codecs import decode_event
    from services.runtime.core import Runner

    t = Table()
    r1 = await t.open(bank=100_000)
    t.bet(r1, 5, "cat", 100_000, wager="banco")
    await t.bus.pump()
    await t.close(r1)
    await t.read(r1, ("2s", "9s", "3s", "Ks"))  # the Banker's natural 9 wins cat's banco
    r2 = await t.open()
    host = t.hosts["wagering"]
    live = host.runner.tables["CH1"].state
    assert live.books[r2].suivi == "cat"
    core = host.core
    own = [t.bus.settings.topic(s) for s in (*core.private_streams, core.own_stream)]
    inputs = [t.bus.settings.topic(s) for s in core.input_streams]
    rebuilt: Runner[Any] = Runner(core)
    for topic in (*own, *inputs):
        for rec in t.bus.topics[topic]:
            (rebuilt.apply_own if topic in own else rebuilt.absorb_input)(decode_event(rec.value))
    assert rebuilt.tables["CH1"].state == live
    assert rebuilt.tables["CH1"].state.books[r2].suivi == "cat"
    await t.bus.rebuild(host)  # the host itself restarts
    await t.bus.pump()
    assert host.runner.tables["CH1"].state == live
    t.bet(r2, 5, "cat", 195_000, wager="banco_suivi", cid="suivi")
    await t.bus.pump()
    assert [b.bet_id for b in t.of(T.WAGERING_EVENTS, BetPlaced)][-1] == "suivi"
    assert [r.command_id for r in t.of(T.WAGERING_EVENTS, BetRejected)] == []


async def test_an_option_decision_is_judged_by_its_log_time_not_by_read_order():
    """``DecideOption`` (dealing.options) and ``ExpireOption`` (dealing.commands) travel on two topics: a decision
    logged at the deadline is refused ``option_expired`` though read first; one logged in time but read after
    the clock's accepted expiry finds the default decided (``no_option_pending``); one logged a millisecond
    before the deadline stands. The audit flags a participant's decision logged after the deadline."""
    import msgspec

    def deadline_of(t):  # type: ignore[no-untyped-def]
        (o,) = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, OptionOffered)]
        return o.occurred_at + timedelta(seconds=o.payload.option_seconds)

    def decision(t, rid, at, cid):  # type: ignore[no-untyped-def]
        t.send(T.DEALING_OPTIONS, DecideOption(round_id=rid, hand="banker", draw=False, seat=1,
                                               player_id="banker"), cid, actor="banker", at=at)

    # logged at the deadline, read before the expiry: refused, the default decides
    t, rid = await _to_option("banker_5_4")
    deadline = deadline_of(t)
    decision(t, rid, deadline, "late")
    await t.bus.pump()
    assert t.rejected() == [("late", "option_expired")]
    assert t.of(T.DEALING_EVENTS, OptionDecided) == []
    await t.expire(rid, "banker", at=deadline, cid="clock")
    (dec,) = t.of(T.DEALING_EVENTS, OptionDecided)
    assert (dec.draw, dec.by) == (True, "default")
    await t.read(rid, ["5h"], first=6)
    t.clean()
    # logged in time, read after the clock's expiry: the default has decided, the decision is refused
    t, rid = await _to_option("banker_5_4")
    deadline = deadline_of(t)
    await t.expire(rid, "banker", at=deadline, cid="clock")
    decision(t, rid, deadline - timedelta(milliseconds=1), "in-time-read-late")
    await t.bus.pump()
    assert t.rejected() == [("in-time-read-late", "no_option_pending")]
    assert [(d.draw, d.by) for d in t.of(T.DEALING_EVENTS, OptionDecided)] == [(True, "default")]
    # logged a millisecond before the deadline, read first: it stands
    t, rid = await _to_option("banker_5_4")
    deadline = deadline_of(t)
    decision(t, rid, deadline - timedelta(milliseconds=1), "in-time")
    await t.bus.pump()
    (dec,) = t.of(T.DEALING_EVENTS, OptionDecided)
    assert (dec.draw, dec.by, dec.player_id) == (False, "participant", "banker")
    await t.read(rid, ["5h"], first=6)
    log = events(t.bus)
    assert audit(log).clean
    forged = [msgspec.structs.replace(e, occurred_at=deadline) if isinstance(e.payload, OptionDecided) else e
              for e in log]
    assert sorted({d.kind for d in audit(forged).discrepancies}) == ["option_mismatch"]
    assert any("at or after the deadline" in d.detail for d in audit(forged).discrepancies)


async def test_a_late_banco_suivi_read_before_no_more_bets_displaces_nothing():
    """A banco suivi the log holds after "No more bets", read before the call (the bettors' topic is another
    topic), is returned as late and the wagers in time stand; the same banco suivi in time returns them."""
    from contracts.events import BetWithdrawn

    async def round_two(suivi_late: bool):  # type: ignore[no-untyped-def]
        t = Table()
        r1 = await t.open(bank=100_000)
        t.bet(r1, 5, "cat", 100_000, wager="banco")
        await t.bus.pump()
        await t.close(r1)
        await t.read(r1, ("2s", "9s", "3s", "Ks"))  # the Banker wins cat's banco: cat has banco suivi
        r2 = await t.open()
        t.bet(r2, 2, "ann", 20_000, cid="ann")
        t.bet(r2, 3, "ben", 30_000, cid="ben")
        await t.bus.pump()
        close_at = t.tick()
        suivi_at = close_at + timedelta(milliseconds=1 if suivi_late else -1)
        t.send(T.WAGERING_BETS, PlaceBet(round_id=r2, seat=5, player_id="cat", wager="banco_suivi",
                                         amount_cents=195_000), "suivi", actor="cat", at=suivi_at)
        await t.bus.pump()  # read before the call
        t.send(T.WAGERING_COMMANDS, CloseBetting(round_id=r2), at=close_at)
        await t.bus.pump()
        withdrawn = [(w.bet_id, w.reason) for w in t.of(T.WAGERING_EVENTS, BetWithdrawn) if w.round_id == r2]
        (book,) = [b for b in t.of(T.WAGERING_EVENTS, BettingClosed) if b.round_id == r2]
        dp = [(d.player_id, d.wager_cents) for d in t.of(T.DEALING_EVENTS, DominantPlayerChosen) if d.round_id == r2]
        return withdrawn, sorted((x.bet_id, x.amount_cents) for x in book.bets), dp

    withdrawn, book, dp = await round_two(suivi_late=True)
    assert withdrawn == [("suivi", "betting_closed")]
    assert book == [("ann", 20_000), ("ben", 30_000)]
    assert dp == [("ben", 30_000)]
    withdrawn, book, dp = await round_two(suivi_late=False)
    assert sorted(withdrawn) == [("ann", "banco_suivi"), ("ben", "banco_suivi")]
    assert book == [("suivi", 195_000)]
    assert dp == [("cat", 195_000)]


async def test_the_audit_rechecks_the_bank_from_round_to_round_and_who_sent_a_decision():
    """Forged logs: a Banker whose Banker's Hand lost holds the next bank (``bank_passes_on_loss``); a Banker who
    keeps the bank puts up less than all of it (``bank_stays_in_play``); a participant's decision whose
    envelope's actor is not the controller."""
    import msgspec

    def forge(log, kind, rid, _env=None, **changes):  # type: ignore[no-untyped-def]
        out = []
        for e in log:
            if isinstance(e.payload, kind) and e.payload.round_id == rid:
                e = msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, **changes), **(_env or {}))
            out.append(e)
        return audit(out)

    # R1: the Player's 5 stands against the Banker's 1: the Banker's Hand loses, the bank passes to ann
    t, r1 = await _to_option("player_5")
    await t.decide(r1, "player", False, 3, "ben")
    await t.read(r1, ["9s"], first=5)
    assert [r.winner for r in t.of(T.DEALING_EVENTS, RoundResolved)] == ["player"]
    r2 = await t.open(banker=(2, "ann"), bank=100_000)
    await t.close(r2)  # nobody wagers: voided
    log = events(t.bus)
    assert audit(log).clean
    rep = forge(log, RoundOpened, r2, banker_seat=1, banker_player_id="banker")
    assert sorted({d.kind for d in rep.discrepancies}) == ["bank_passing"]
    assert any("bank_passes_on_loss" in d.detail for d in rep.discrepancies)
    # the decision sent by ann's terminal, though the record names ben, the controller
    rep = forge(log, OptionDecided, r1, _env={"actor": "ann"})
    assert sorted({d.kind for d in rep.discrepancies}) == ["option_mismatch"]
    assert any("'ann'" in d.detail and "controller 'ben'" in d.detail for d in rep.discrepancies)
    # R1 drawn: 4 v 7, the Banker's Hand wins: $1,000 + $800 - $40 commission stays in play
    t, r1 = await _to_option("player_5")
    await t.decide(r1, "player", True, 3, "ben")
    await t.read(r1, ["9s", "5s"], first=5)
    r2 = await t.open()
    assert t.of(T.DEALING_EVENTS, RoundOpened)[-1].bank_cents == 176_000
    await t.close(r2)  # voided: the bank is unchanged for the next round
    r3 = await t.open()
    await t.close(r3)
    log = events(t.bus)
    assert audit(log).clean
    rep = forge(log, RoundOpened, r2, bank_cents=150_000)
    assert [(d.kind, d.detail.split(";")[0]) for d in rep.discrepancies if d.kind == "bank_passing"] == [
        ("bank_passing", "'banker' keeps the bank with 150000 cents"),  # R2: not all of R1's 176,000
        ("bank_passing", "'banker' keeps the bank with 176000 cents")]  # R3: not R2's (forged) 150,000
    rep = forge(log, RoundOpened, r3, bank_cents=180_000)
    assert sorted({d.kind for d in rep.discrepancies}) == ["bank_passing"]


async def test_a_bank_grown_past_the_maximum_passes():
    """A Banker whose Banker's Hand won and whose bank, all of it in play, is now over ``bank_max_cents`` holds
    no further bank: refused ``bank_over_max_must_pass`` whatever bank is offered; the next Banker opens. The
    audit flags a log in which that Banker held the bank again."""
    import msgspec

    t = Table(chemin_de_fer(chemin=ChemRules(bank_max_cents=150_000)))
    t, r1 = await _to_option("player_5", t)
    await t.decide(r1, "player", True, 3, "ben")
    await t.read(r1, ["9s", "5s"], first=5)  # the Banker's Hand wins: $1,000 + $800 - $40 = $1,760
    assert t.bank_after("banker") == 176_000
    for cid, bank in (("all", 176_000), ("capped", 150_000)):
        t.send(T.DEALING_COMMANDS, OpenRound(round_id="R2", shoe_id="PS", banker_seat=1, banker_player_id="banker",
                                             bank_cents=bank), cid)
    await t.bus.pump()
    assert t.rejected() == [("all", "bank_over_max_must_pass"), ("capped", "bank_over_max_must_pass")]
    r2 = await t.open(banker=(2, "ann"), bank=100_000)
    assert [(o.round_id, o.banker_player_id) for o in t.of(T.DEALING_EVENTS, RoundOpened)][-1] == (r2, "ann")
    await t.close(r2)
    log = events(t.bus)
    assert audit(log).clean
    forged = [msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, banker_seat=1,
                                                                         banker_player_id="banker",
                                                                         bank_cents=150_000))
              if isinstance(e.payload, RoundOpened) and e.payload.round_id == r2 else e for e in log]
    found = [d for d in audit(forged).discrepancies if d.kind == "bank_passing"]
    assert len(found) == 1 and "bank_over_max_must_pass" in found[0].detail


async def test_a_banco_is_judged_by_the_logs_order_not_by_read_order():
    """A late banco read before "No more bets" neither blocks the wagers in time read after it nor stands; a
    banco in time, but logged after a wager read after it, is not before any other wager: it is returned
    (``banco_not_first``) and the wager stands."""
    from contracts.events import BetWithdrawn

    async def round_of(banco_at, ann_at, close_at):  # type: ignore[no-untyped-def]
        t = Table()
        rid = await t.open(bank=100_000)
        t.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=5, player_id="cat", wager="banco",
                                         amount_cents=100_000), "banco", actor="cat", at=banco_at)
        await t.bus.pump()  # the banco is read first
        t.send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=2, player_id="ann", wager="player",
                                         amount_cents=30_000), "ann", actor="ann", at=ann_at)
        await t.bus.pump()
        t.send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid), at=close_at)
        await t.bus.pump()
        rejected = [(r.command_id, r.reason) for r in t.of(T.WAGERING_EVENTS, BetRejected)]
        withdrawn = [(w.bet_id, w.reason) for w in t.of(T.WAGERING_EVENTS, BetWithdrawn)]
        (book,) = t.of(T.WAGERING_EVENTS, BettingClosed)
        dp = [(d.player_id, d.wager_cents) for d in t.of(T.DEALING_EVENTS, DominantPlayerChosen)]
        return rejected, withdrawn, [x.bet_id for x in book.bets], dp

    base = START + timedelta(minutes=5)
    # the banco logged after the call: returned; ann's wager in time stands
    assert await round_of(base + timedelta(seconds=2), base, base + timedelta(seconds=1)) == (
        [], [("banco", "betting_closed")], ["ann"], [("ann", 30_000)])
    # both in time, ann's logged first: the banco is not before any other wager
    assert await round_of(base + timedelta(seconds=1), base, base + timedelta(seconds=2)) == (
        [], [("banco", "banco_not_first")], ["ann"], [("ann", 30_000)])
    # the banco logged first and read first: it takes the whole bank, ann's later wager is refused
    assert await round_of(base, base + timedelta(seconds=1), base + timedelta(seconds=2)) == (
        [("ann", "banco_called")], [], ["banco"], [("cat", 100_000)])


async def test_cards_is_called_before_the_deal_and_the_banker_deals_every_card():
    """13:69F-4.8(d): "After the dealer announces 'Cards,' the Banker shall deal an initial four cards" (issue
    28, item 8): ``CardsCalled`` names the Banker, after the Dominant Player and before the first card, and each
    ``CardDealt`` is logged under the Banker who dealt it."""
    from contracts.events import CardDealt, CardsCalled, DominantPlayerChosen

    t = Table()
    rid = await t.open(banker=(1, "banker"), bank=100_000)
    t.bet(rid, 2, "ann", 20_000)
    await t.close(rid)
    dealing = events(t.bus, T.DEALING_EVENTS)
    (called,) = [e for e in dealing if isinstance(e.payload, CardsCalled)]
    assert (called.payload.round_id, called.payload.banker_seat, called.payload.banker_player_id,
            called.payload.rule) == (rid, 1, "banker", "13:69F-4.8(d)")
    kinds = [type(e.payload) for e in dealing]
    assert kinds.index(DominantPlayerChosen) < kinds.index(CardsCalled)
    assert CardDealt not in kinds  # no card yet
    await t.read(rid, ["9s", "2s", "Ks", "3s"])  # a Player natural: four cards
    dealt = [e for e in events(t.bus, T.DEALING_EVENTS) if isinstance(e.payload, CardDealt)]
    assert len(dealt) == 4 and {e.actor for e in dealt} == {"banker"}
    assert all(e.seq > called.seq for e in dealt)
    t.clean()
