"""Casino-wide credit lines on the in-memory bus (issue 23, ``docs/cage.md``): bob, with a $500 line set at the
cage, signs a $300 marker at T1 and asks for another $300 at T2. Each table alone is within the line; the two
together are not: the second is refused ``over_credit_line`` by the cage's key, and nothing is booked at T2
(no ``BoughtIn``, its tray and drop box as they were), while the first is booked at T1. Repaying $300 at the
window then lets a new $300 marker pass at T2. The audit finds the cage's markers and the tables' equal."""

from __future__ import annotations

import msgspec

from contracts import topics as T
from contracts.cage import (
    BoughtIn,
    BuyIn,
    ChipsRedeemed,
    DrawMarker,
    MarkerIssued,
    MarkerRequested,
    RedeemChips,
    SetCreditLine,
    SettleMarker,
)
from contracts.events import CommandRejected
from croupier.audit_cage import check_cage
from services.cage.core import CageCore
from services.runtime.core import command
from tests.services.helpers import events
from tests.services.test_cage_statement import AT, Floor
from tests.services.test_state_codec import round_trip_every_fold


def at(f: Floor, table: str) -> list:
    return [e for e in events(f.bus, T.CAGE_EVENTS) if e.table_id == table]


async def test_markers_at_two_tables_are_held_to_one_casino_wide_line():
    f = Floor()
    seen = round_trip_every_fold({"cage": f.cage_host})  # every state, reservations included, snapshots
    for table in ("T1", "T2"):
        await f.open_table(table, f"{table}-s1", 100_000, "pit-1", [(2, "bob")])
    f.cage("CAGE", SetCreditLine(player_id="bob", line_cents=50_000), "cashier-1")
    f.cage("T1", BuyIn(buy_in_id="M1", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    await f.bus.pump()
    (m1,) = [e for e in at(f, "T1") if isinstance(e.payload, BoughtIn)]
    assert (m1.payload.amount_cents, m1.payload.tray_cents, m1.payload.marker_balance_cents) == \
        (30_000, 70_000, 30_000)
    t2_before = f.cage_host.runner.slot("T2").state
    f.n += 1
    second = f"c{f.n}"
    f.bus.send(T.CAGE_COMMANDS, command("T2", second, AT, BuyIn(buy_in_id="M2", seat=2, player_id="bob",
                                                                method="marker", amount_cents=30_000),
                                        actor="dealer-1"))
    await f.bus.pump()
    # the steps: held at T2, refused at CAGE ($600 outstanding would pass $500), refused back at T2
    kinds = [(e.table_id, type(e.payload).__name__, getattr(e.payload, "reason", "")) for e in
             events(f.bus, T.CAGE_EVENTS)[-3:]]
    assert kinds == [("T2", "MarkerRequested", ""), ("CAGE", "CommandRejected", "over_credit_line"),
                     ("T2", "CommandRejected", "over_credit_line")]
    refusal = at(f, "T2")[-1]
    assert (refusal.payload.command_id, refusal.payload.command, refusal.correlation_id) == (second, "buy_in", second)
    assert "60000" in refusal.payload.detail and "50000" in refusal.payload.detail
    # nothing booked at T2: no BoughtIn, the tray and the drop box as before, the reservation released
    assert not [e for e in at(f, "T2") if isinstance(e.payload, BoughtIn)]
    t2 = f.cage_host.runner.slot("T2").state
    assert (t2.shift.tray_cents, t2.boxes["T2-s1"], t2.reserved) == (100_000, [0, 0], {})
    assert (t2.shift, t2.boxes) == (t2_before.shift, t2_before.boxes)
    assert f.cage_host.runner.slot("CAGE").state.markers == {"bob": 30_000}
    # repaid at the window: the outstanding falls to zero, and a new $300 marker passes at T2
    f.cage("CAGE", RedeemChips(redemption_id="X1", player_id="bob", amount_cents=30_000, method="marker_redemption"),
           "cashier-1")
    await f.bus.pump()
    (paid,) = [e.payload for e in at(f, "CAGE") if isinstance(e.payload, ChipsRedeemed)]
    assert paid.marker_balance_cents == 0
    f.cage("T2", BuyIn(buy_in_id="M3", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    await f.bus.pump()
    (m3,) = [e.payload for e in at(f, "T2") if isinstance(e.payload, BoughtIn)]
    assert (m3.buy_in_id, m3.tray_cents, m3.marker_balance_cents) == ("M3", 70_000, 30_000)
    issued = [e.payload for e in at(f, "CAGE") if isinstance(e.payload, MarkerIssued)]
    assert [(m.table_id, m.buy_in_id, m.outstanding_cents) for m in issued] == [("T1", "M1", 30_000),
                                                                               ("T2", "M3", 30_000)]
    assert seen["cage"] > 0
    # the audit: the cage's markers are the tables' marker buy-ins; a forged one is found at its record
    found: list[tuple[str, str, str, str]] = []
    log = events(f.bus, T.CAGE_EVENTS)
    check_cage(log, lambda *a: found.append(a))
    assert found == []
    forged = [e if not (isinstance(e.payload, BoughtIn) and e.payload.buy_in_id == "M3") else
              msgspec.structs.replace(e, payload=msgspec.structs.replace(e.payload, amount_cents=60_000))
              for e in log]
    check_cage(forged, lambda *a: found.append(a))
    assert [(t, k) for t, k, _, _ in found] == [("T2", "marker_mismatch")]
    assert "the cage issued 30000 cents" in found[0][3]


async def test_a_restart_between_the_steps_loses_no_marker_and_books_none_twice():
    """The cage service restarted (rebuilt from the bus, every topic delivered again) after the table held
    the chips and before the cage's key answered: the marker is issued once and booked once."""
    f = Floor()
    await f.open_table("T1", "T1-s1", 100_000, "pit-1", [(2, "bob")])
    f.cage("CAGE", SetCreditLine(player_id="bob", line_cents=50_000), "cashier-1")
    await f.bus.pump()
    f.cage("T1", BuyIn(buy_in_id="M1", seat=2, player_id="bob", method="marker", amount_cents=30_000), "dealer-1")
    await f.bus.pump(limit=1)  # the BuyIn decided: MarkerRequested and the DrawMarker written, not delivered
    assert [type(e.payload) for e in at(f, "T1")][-1] is MarkerRequested
    f.bus.remove(f.cage_host)
    again = f.bus.add(CageCore())
    await f.bus.rebuild(again)
    await f.bus.pump()
    assert [type(e.payload) for e in at(f, "CAGE")].count(MarkerIssued) == 1
    assert [type(e.payload) for e in at(f, "T1")].count(BoughtIn) == 1
    assert again.runner.slot("CAGE").state.markers == {"bob": 30_000}
    assert again.runner.slot("T1").state.reserved == {}
    # a forged step from a console on cage.commands is refused: cage.markers is the cage service's alone
    f.cage("CAGE", DrawMarker(table_id="T1", buy_in_id="M9", player_id="bob", amount_cents=100), "dealer-1")
    f.cage("T1", SettleMarker(buy_in_id="M9", issued=True), "dealer-1")
    await f.bus.pump()
    last = [e.payload for e in events(f.bus, T.CAGE_EVENTS)[-2:]]
    assert all(isinstance(p, CommandRejected) for p in last)
    assert [(p.command, p.reason) for p in last] == [("draw_marker", "wrong_topic"), ("settle_marker", "wrong_topic")]
