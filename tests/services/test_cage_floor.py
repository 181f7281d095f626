"""The simulated floor runs the cage: two tables' shifts (one accruing commission) with openers, rated
patrons buying in by cash and marker, a fill of a low tray and a credit of a high one, closers and soft
counts; every statement balances to the cent (in-memory bus)."""

from __future__ import annotations

import random

from baccarat.money import CommissionMode
from baccarat.table import punto_banco, punto_banco_full
from contracts import topics as T
from contracts.cage import ChipsRedeemed
from croupier.cage_report import cage_figures, cage_line
from services.cage.core import CageCore
from services.cage.statement import alerts, rollup, statements
from services.floor.bettors import Seat
from services.floor.cage import CageClerk
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from tests.services.helpers import events, floor_bus


def clerks() -> dict[str, CageClerk]:
    # T1 opens with a small tray (it will need a fill); T2 opens with twice its par (it will be credited)
    return {"T1": CageClerk("T1-day1-swing", "2026-01-01", "pit-1", random.Random(1), opener_cents=100_000,
                            high_roller_cents=1_200_000),
            "T2": CageClerk("T2-day1-swing", "2026-01-01", "pit-2", random.Random(2), opener_cents=1_000_000,
                            par_cents=400_000)}


def dealers(io, cl):  # type: ignore[no-untyped-def]
    cfgs = {"T1": punto_banco_full(), "T2": punto_banco(commission_mode=CommissionMode.ACCRUE)}
    return [TableDealer(io, tid, cfg, [Seat(i, f"{tid}-patron-{i}") for i in range(1, 5)], random.Random(tid),
                        Clock(), rounds_per_shoe=8, cage=cl[tid]) for tid, cfg in cfgs.items()]


async def test_two_tables_shift_balances_to_the_cent():
    bus, _ = floor_bus(seed=7)
    bus.add(CageCore())
    io = MemoryFloorIO(bus)
    cl = clerks()
    for d in dealers(io, cl):
        await d.run(shoes=1)
    rows = statements(events(bus, T.CAGE_EVENTS))
    assert [(r.table_id, r.closed, r.counted) for r in rows] == [("T1", True, True), ("T2", True, True)]
    for r in rows:
        assert (r.variance, r.tray_variance, r.drop_variance) == (0, 0, 0), r
        assert r.rounds == 8 and r.win == r.game_result
        assert r.closer == cl[r.table_id].tray
    t1, t2 = rows
    assert t1.fill_slips >= 1 and t2.credit_slips >= 1  # the low tray filled, the high one credited
    assert t1.drop_markers + t2.drop_markers > 0 and t1.drop_cash > 0 and t2.drop_cash > 0
    assert alerts(rows) == []
    (day,) = rollup(rows, "gaming_day")
    assert day.variance == 0 and day.tables == 2
    assert sum(c.tally.refused.count("over_credit_line") for c in cl.values()) == 0
    # the demo's line: every patron rated, cashed out at the cage (markers repaid first)
    log = events(bus, T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)
    f = cage_figures(log)
    assert (f["tables"], f["shifts"], f["variance_cents"], f["rated_patrons"]) == (2, 2, 0, 8)
    assert (f["fills"], f["credits"]) == (t1.fill_slips + t2.fill_slips, t1.credit_slips + t2.credit_slips)
    assert f["win_cents"] == f["game_result_cents"] == t1.win + t2.win and f["drop_cents"] == t1.drop + t2.drop
    assert cage_line(log).startswith("cage: tables=2 shifts=2 drop_cents=")
    # T1's high roller: $12,000 cash in (an MTL entry, a CTR), and his chips cashed out at the cage
    assert f["ctr"] >= 1 and f["mtl"] >= 1
    redeemed = [e.payload for e in events(bus, T.CAGE_EVENTS) if isinstance(e.payload, ChipsRedeemed)]
    assert {r.player_id for r in redeemed} <= {f"{t}-patron-{i}" for t in ("T1", "T2") for i in range(1, 5)}
    assert all(c.stacks[p] == 0 for c in cl.values() for p in c.stacks)
