"""Casino night (N.J.A.C. 13:47-20.20) and a punto banco table with a curator (13:69F-3.6(b), 3.11) on a real
Kafka broker through the four services, audited clean from the log: casino night a full shoe (about 80 rounds,
so that a tie, 8 to 1 less 5 %, is all but certain to come), the curator a short shoe (tests/system/floors.py:
about 12 rounds, each one offered, kept or passed)."""

from __future__ import annotations

import asyncio
import random
from fractions import Fraction

from baccarat.table import profile
from contracts.events import BetSettled, RoundResolved, ShoeKept, ShoeOffered, ShoePassed
from croupier.audit import audit
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from tests.system.floors import short_shoe
from tests.system.test_floor_kafka import Floor


async def test_a_casino_night_shoe_and_a_curator_shoe_audit_clean(kafka_bootstrap: str):
    floor = Floor(kafka_bootstrap)
    await floor.start()
    try:
        cn = TableDealer(floor.io, "CN", profile("casino_night"), [Seat(i, f"cn-{i}") for i in range(1, 15)],
                         random.Random("CN"), Clock(), timeout=60)
        cu = TableDealer(floor.io, "CU", short_shoe(profile("punto_banco_curator")),
                         [Seat(i, f"cu-{i}") for i in (1, 2, 3, 5, 8)], random.Random("CU"), Clock(), timeout=60)
        runs = await asyncio.gather(cn.run(shoes=1), cu.run(shoes=1))
        log = await floor.log()
    finally:
        await floor.stop()
    assert runs[0].rounds >= 60 and runs[1].rounds >= 10, runs
    for r in runs:
        assert r.rejections == ["shoe_complete"], r
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert rep.shoes_verified == 2 and rep.rounds_checked == sum(r.rounds for r in runs)
    assert rep.bets_checked == sum(r.bets for r in runs)
    # casino night: every winning bet paid even money or 8 to 1, less 5 % of the win rounded up to the cent
    wins = [e.payload for e in log if e.table_id == "CN" and isinstance(e.payload, BetSettled)
            and e.payload.result == "win"]
    assert {w.wager for w in wins} == {"banker", "player", "tie"}
    for w in wins:
        assert w.win == w.stake * (8 if w.wager == "tie" else 1)
        assert w.commission == -(-w.win * Fraction(1, 20) // 1) and w.payout == w.stake + w.win - w.commission
    # the curator: offered once, passed by rule after every round the Banker's Hand lost, kept or passed after
    # every other round
    cu_log = [e.payload for e in log if e.table_id == "CU"]
    assert sum(isinstance(p, ShoeOffered) for p in cu_log) == 1
    lost = [p.round_id for p in cu_log if isinstance(p, RoundResolved) and p.winner == "player"]
    assert [p.round_id for p in cu_log if isinstance(p, ShoePassed) and p.reason == "banker_lost"] == lost
    decided = [p.round_id for p in cu_log if isinstance(p, ShoeKept)
               or (isinstance(p, ShoePassed) and p.reason != "banker_lost")]
    assert len(decided) + len(lost) == runs[1].rounds
