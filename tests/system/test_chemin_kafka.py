"""Chemin de fer against a real Kafka broker: the four services deal a few rounds of a chemin de fer table,
the options decided over ``dealing.options`` by their controllers (a stranger's decision refused), one left
to the table clock's ``ExpireOption``; the audit is clean, money is conserved between the participants and the
house, and a restarted dealing service rebuilds without deciding anything again."""

from __future__ import annotations

import asyncio
import random

from baccarat.chemin import ChemRules
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
    SeatPlayer,
)
from contracts.events import (
    BankSettled,
    BetSettled,
    BettingClosed,
    BettingOpened,
    CommandRejected,
    OptionDecided,
    OptionOffered,
    PlayerSeated,
    RoundResolved,
    RoundSettled,
    RoundVoided,
    ShoeBurned,
    TableOpened,
)
from croupier.audit import audit
from services.floor.dealer import Clock
from services.runtime.core import command
from services.runtime.translate import table_spec
from tests.system.test_floor_kafka import Floor

TID = "CK1"
PLAYERS = ((1, "bank-1"), (2, "ann"), (3, "ben"), (4, "cat"))
#: at most this many rounds: enough for an option of each kind (the seeded shoe is the same every run)
ROUNDS = 40
#: the options' time to decide: the stranger's and the controller's decisions are logged within it even on a
#: loaded CI machine (1 s was not: a stranger sent right after the offer was refused option_expired, not
#: not_controller, at load 15-25)
OPTION_S = 4


async def test_chemin_de_fer_rounds_on_kafka_with_options_audit_clean(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap)
    await floor.start()
    io, clock, rng = floor.io, Clock(), random.Random(5)
    n = 0

    async def send(topic, payload, actor="dealer-1"):  # type: ignore[no-untyped-def]
        nonlocal n
        n += 1
        cid = f"{TID}-c{n}"
        await io.send(topic, command(TID, cid, clock(), payload, actor=actor))
        return cid

    async def wait(match, since, timeout=60):  # type: ignore[no-untyped-def]
        return await io.wait(TID, match, since, timeout)

    try:
        since = io.log.mark(TID)
        await send(T.DEALING_COMMANDS, OpenTable(config=table_spec(chemin_de_fer(chemin=ChemRules(option_seconds=OPTION_S)))))
        await wait(lambda e: isinstance(e.payload, TableOpened), since)
        for seat, player in PLAYERS:
            since = io.log.mark(TID)
            await send(T.WAGERING_COMMANDS, SeatPlayer(seat=seat, player_id=player))
            await wait(lambda e, p=player: isinstance(e.payload, PlayerSeated) and e.payload.player_id == p, since)
        since = io.log.mark(TID)
        await send(T.SHOE_COMMANDS, LoadShoe(shoe_id=f"{TID}-shoe"))
        await wait(lambda e: isinstance(e.payload, ShoeBurned), since)
        stranger_refused = expired = decided = 0
        banks = [(1, "bank-1"), (2, "ann"), (3, "ben")]  # cat (seat 4) neither banks nor wagers
        for r in range(1, ROUNDS + 1):
            rid = f"{TID}-r{r}"
            since = io.log.mark(TID)
            await send(T.DEALING_COMMANDS, OpenRound(round_id=rid, shoe_id=f"{TID}-shoe", banker_seat=banks[0][0],
                                                     banker_player_id=banks[0][1], bank_cents=100_000))
            await wait(lambda e, rid=rid: isinstance(e.payload, BettingOpened) and e.payload.round_id == rid, since)
            for (seat, player), cents in zip(banks[1:], (20_000, 30_000)):
                await send(T.WAGERING_BETS, PlaceBet(round_id=rid, seat=seat, player_id=player, wager="player",
                                                     amount_cents=cents), actor=player)
            await asyncio.sleep(0.3)
            since = io.log.mark(TID)
            await send(T.WAGERING_COMMANDS, CloseBetting(round_id=rid))
            await wait(lambda e, rid=rid: isinstance(e.payload, BettingClosed) and e.payload.round_id == rid, since)
            while True:
                env = await wait(lambda e, rid=rid: e.payload.__class__ in (OptionOffered, RoundResolved, RoundVoided)
                                 and getattr(e.payload, "round_id", "") == rid, since)
                if not isinstance(env.payload, OptionOffered):
                    break
                o = env.payload
                since = io.log.mark(TID)
                if not expired:  # left to the table's clock: OPTION_S after the card that made it due
                    await asyncio.sleep(OPTION_S + 0.2)
                    await send(T.DEALING_COMMANDS, ExpireOption(round_id=rid, hand=o.hand))
                    expired += 1
                else:
                    if not stranger_refused:  # cat wagered nothing: she controls neither hand
                        cid = await send(T.DEALING_OPTIONS, DecideOption(round_id=rid, hand=o.hand, draw=True, seat=4,
                                                                         player_id="cat"), actor="cat")
                        rej = await wait(lambda e, cid=cid: isinstance(e.payload, CommandRejected)
                                         and e.payload.command_id == cid, since)
                        assert rej.payload.reason == "not_controller"
                        stranger_refused += 1
                    await send(T.DEALING_OPTIONS, DecideOption(round_id=rid, hand=o.hand, draw=rng.random() < 0.5,
                                                               seat=o.seat, player_id=o.player_id), actor=o.player_id)
                    decided += 1
                await wait(lambda e, rid=rid: isinstance(e.payload, OptionDecided) and e.payload.round_id == rid, since)
            res = await wait(lambda e, rid=rid: isinstance(e.payload, RoundSettled) and e.payload.round_id == rid,
                             since)
            won = io.log.find(TID, lambda e, rid=rid: isinstance(e.payload, RoundResolved) and e.payload.round_id == rid)
            if won is not None and won.payload.winner == "player":  # the Banker's Hand lost: the bank passes
                banks = banks[1:] + banks[:1]
            assert res
            if expired and decided:
                break
        # a restarted dealing service rebuilds from the log and publishes nothing new
        before = len(await floor.log())
        await floor.stop_service("dealing")
        await floor.start_service("dealing")
        await asyncio.sleep(1.0)
        assert len(await floor.log()) == before
    finally:
        await floor.stop()
    log = await floor.log()
    mine = [e for e in log if e.table_id == TID]
    rep = audit(mine)
    assert rep.clean, [str(d) for d in rep.discrepancies]
    resolved = [e.payload for e in mine if isinstance(e.payload, RoundResolved)]
    assert rep.rounds_checked == len(resolved) >= 1
    assert (expired, stranger_refused) == (1, 1) and decided >= 1
    assert {e.payload.by for e in mine if isinstance(e.payload, OptionDecided)} == {"default", "participant"}
    banks = {e.payload.round_id: e.payload for e in mine if isinstance(e.payload, BankSettled)}
    totals = {e.payload.round_id: e.payload for e in mine if isinstance(e.payload, RoundSettled)}
    for rid, b in banks.items():
        bets = [e.payload for e in mine if isinstance(e.payload, BetSettled) and e.payload.round_id == rid]
        assert sum(x.payout - x.stake for x in bets) + b.won_cents - b.commission_cents + totals[rid].table_result == 0
        assert totals[rid].table_result == b.commission_cents == (2_500 if b.won_cents == 50_000 else 0)
