"""A table's whole shift through the cage's desk in the pit app, on the in-memory bus: the dealer counts the
opener (a supervisor attests), takes buy-ins in cash, by marker and in chips, counts the closer; the count team
removes and counts the drop box; the statement's win equals the game result. Every refusal on the way (a count
attested by its counter, a count that does not add up, a second opener, a buy-in for an unseated patron, a marker
past the line, a count by the cage's cashier) is shown with its reason code and its words, nothing booked."""

from __future__ import annotations

import re

from contracts import topics as T
from contracts.cage import BoughtIn, ShiftClosed, ShiftOpened
from contracts.commands import SeatPlayer
from contracts.events import CommandRejected
from services.cage.statement import statements
from services.projection.cage_desk import REASON_WORDS, build_command, reason_words
from services.runtime.core import command
from tests.cagedesk import AT, chips
from tests.services.helpers import events
from tests.services.test_cage_pages import act, as_role, bearer, client, floor, forms, outcome

TABLE = "T7"


def booked(bus) -> list:  # type: ignore[no-untyped-def]
    """The cage events of the table, refusals included."""
    return [e.payload for e in events(bus, T.CAGE_EVENTS) if e.table_id == TABLE]


async def test_opener_buy_ins_closer_and_count_through_the_desk():
    bus, pit, _ = await floor()
    bus.send(T.WAGERING_COMMANDS, command(TABLE, "seat-7", AT, SeatPlayer(seat=2, player_id="pat-7"), actor="dl-7"))
    await bus.pump()
    dealer, cage, team = [await as_role(pit, r) for r in ("dealer", "cage", "count_team")]
    page = (await dealer.get(f"/cage/desk?table={TABLE}")).text
    assert forms(page) == [f"{TABLE}-record_opener"] and 'value="T7-s1"' in page  # the next shift's id suggested
    assert f'action="/cage/desk/{TABLE}/record_opener?table={TABLE}"' in page  # the filter kept after a press
    # no shift open anywhere: the cage still has its window (a patron's line, a repayment are no table's)
    assert forms((await cage.get(f"/cage/desk?table={TABLE}")).text) == ["CAGE-set_credit_line",
                                                                        "CAGE-redeem_chips"]
    assert [w["action"] for w in (await cage.get("/cage/desk.json")).json()["window"]] == [
        "set_credit_line", "redeem_chips"]
    assert (await dealer.get("/cage/desk.json")).json()["window"] == []
    opener = {"actor": "dl-7", "shift_id": "T7-s1", "gaming_day": "2026-01-01", "pit": "pit-3",
              "chips": "25x80", "total": "$2,000"}
    r = await act(dealer, TABLE, "record_opener", **{**opener, "supervisor_id": "dl-7"})
    assert (r.status_code, outcome(r)) == (422, "same_person") and "two people sign" in r.text
    r = await act(dealer, TABLE, "record_opener", **{**opener, "total": "1,900", "supervisor_id": "sup-3"})
    assert outcome(r) == "count_mismatch" and "do not add up to the total" in r.text
    assert 'value="1,900"' in r.text  # kept to correct
    r = await act(dealer, TABLE, "record_opener", **{**opener, "gaming_day": "2026-02-30", "supervisor_id": "sup-3"})
    assert (r.status_code, outcome(r)) == (422, "invalid_form") and "gaming_day" in r.text
    assert [type(p) for p in booked(bus)] == [CommandRejected, CommandRejected]  # the page's refusal sent nothing
    assert outcome(await act(dealer, TABLE, "record_opener", **opener, supervisor_id="sup-3")) == "booked"
    page = (await dealer.get(f"/cage/desk?table={TABLE}")).text
    assert forms(page) == [f"{TABLE}-buy_in", f"{TABLE}-record_closer-T7-s1"]  # no second opener offered
    assert "seat 2 <b>pat-7</b>" in page and 'value="T7-s1-B1"' in page
    # a second opener sent anyway: refused (the same shift; another while one is open)
    assert outcome(await act(dealer, TABLE, "record_opener", **opener, supervisor_id="sup-3")) == \
        "shift_already_opened"
    assert outcome(await act(dealer, TABLE, "record_opener", **{**opener, "shift_id": "T7-s2"},
                             supervisor_id="sup-3")) == "shift_open"
    # buy-ins: an unseated patron, then $500 cash, a marker past the line, the line, the marker, chips
    buy = {"actor": "dl-7", "seat": "2", "player_id": "pat-7"}
    r = await act(dealer, TABLE, "buy_in", **{**buy, "seat": "3"}, buy_in_id="B1", method="cash", amount="500")
    assert outcome(r) == "player_not_seated" and "not seated at that seat" in r.text
    assert outcome(await act(dealer, TABLE, "buy_in", **buy, buy_in_id="B1", method="cash", amount="500",
                             cash="100x5")) == "booked"
    r = await act(dealer, TABLE, "buy_in", **buy, buy_in_id="M1", method="marker", amount="300.00")
    assert outcome(r) == "over_credit_line" and "past the credit line" in r.text
    r = await act(cage, "CAGE", "set_credit_line", actor="cashier-1", player_id="pat-7", line="1,000")
    assert outcome(r) == "booked" and "Set credit line (casino-wide) at the cage: booked" in r.text
    assert outcome(await act(dealer, TABLE, "buy_in", **buy, buy_in_id="M1", method="marker",
                             amount="300.00")) == "booked"
    assert outcome(await act(dealer, TABLE, "buy_in", **buy, buy_in_id="C1", method="chips", amount="100")) \
        == "booked"
    # the desk shows the patron's casino-wide credit: line, markers outstanding, available (cents in JSON,
    # dollars on the page), to the cage, the dealer and the pit; not to the count room
    credit = {c["player_id"]: c for c in (await cage.get("/cage/desk.json")).json()["credit"]}
    assert credit["pat-7"] == {"player_id": "pat-7", "line_cents": 100_000, "outstanding_cents": 30_000,
                               "available_cents": 70_000}
    for c in (cage, dealer):
        row = re.search(r'<tr id="credit-pat-7">(.*?)</tr>', (await c.get(f"/cage/desk?table={TABLE}")).text)
        assert row and re.findall(r'class="num \w+">([^<]*)<', row.group(1)) == ["$1,000.00", "$300.00", "$700.00"]
    assert (await team.get("/cage/desk.json")).json()["credit"] == []
    # the window takes a $100 repayment of pat-7's marker (keyed CAGE, from T7's desk); more than he owes is
    # refused (never below zero); the desk shows the outstanding fall
    repay = {"actor": "cashier-1", "player_id": "pat-7", "method": "marker_redemption"}
    r = await act(cage, TABLE, "redeem_chips", **repay, redemption_id="R-1", amount="300.01")
    assert (r.status_code, outcome(r)) == (422, "over_outstanding") and 'value="300.01"' in r.text
    assert outcome(await act(cage, TABLE, "redeem_chips", **repay, redemption_id="R-1", amount="100")) == "booked"
    credit = {c["player_id"]: c for c in (await cage.get("/cage/desk.json")).json()["credit"]}
    assert (credit["pat-7"]["outstanding_cents"], credit["pat-7"]["available_cents"]) == (20_000, 80_000)
    paid = [e for e in events(bus, T.CAGE_EVENTS) if type(e.payload).__name__ == "ChipsRedeemed"][-1]
    assert (paid.table_id, paid.payload.amount_cents, paid.payload.marker_balance_cents) == ("CAGE", 10_000, 20_000)
    assert 'id="credit-lines"' not in (await team.get("/cage/desk")).text
    bought = [p for p in booked(bus) if isinstance(p, BoughtIn)]
    assert [(b.method, b.amount_cents, b.tray_cents) for b in bought] == \
        [("cash", 50_000, 150_000), ("marker", 30_000, 120_000), ("chips", 10_000, 120_000)]
    # the closer as the tray stands ($1,200); the count team: the box removed, counted ($500 cash, 1 marker)
    assert forms((await team.get(f"/cage/desk?table={TABLE}")).text) == []  # open: no box to take yet
    closer = {"actor": "dl-7", "shift_id": "T7-s1", "chips": "25x48", "total": "1200", "supervisor_id": "sup-3"}
    assert outcome(await act(dealer, TABLE, "record_closer", **closer)) == "booked"
    assert next(p for p in booked(bus) if isinstance(p, ShiftClosed)).tray_variance_cents == 0
    assert forms((await dealer.get(f"/cage/desk?table={TABLE}")).text) == [f"{TABLE}-record_opener"]
    assert forms((await team.get(f"/cage/desk?table={TABLE}")).text) == [f"{TABLE}-remove_drop_box-T7-s1"]
    r = await act(cage, TABLE, "remove_drop_box", actor="cashier-1", shift_id="T7-s1")
    assert (r.status_code, outcome(r)) == (403, "role_not_permitted")
    assert outcome(await act(team, TABLE, "remove_drop_box", actor="ct-1", shift_id="T7-s1")) == "booked"
    count = {"actor": "ct-1", "shift_id": "T7-s1", "cash": "100x5", "cash_total": "500", "markers": "1",
             "markers_total": "300", "counters": "ct-2 ct-3"}
    assert outcome(await act(team, TABLE, "count_drop_box", **count)) == "booked"
    row = next(s for s in statements(events(bus, T.CAGE_EVENTS)) if s.table_id == TABLE)
    # win = closer - opener + credits - fills + drop = 1,200 - 2,000 + 0 - 0 + 800 = 0: no round was dealt
    assert (row.opener, row.closer, row.drop, row.win, row.game_result, row.variance) == \
        (200_000, 120_000, 80_000, 0, 0, 0)
    async with client(pit) as c:
        desk = (await c.get(f"/cage/desk.json?table={TABLE}", headers=bearer("dealer"))).json()
    assert desk["tables"] == [{"table_id": TABLE, "seated": [[2, "pat-7"]], "open_shift": None}]
    assert desk["openers"][0]["shift_id"] == "T7-s2" and desk["shifts"][0]["buy_ins"] == 3
    opened = [p for p in booked(bus) if isinstance(p, ShiftOpened)]
    assert [(o.counted_by, o.attested_by, o.pit) for o in opened] == [("dl-7", "sup-3", "pit-3")]
    for x in (dealer, cage, team):
        await x.aclose()


def test_every_reason_the_cage_gives_has_words():
    from pathlib import Path

    from services.cage import core, counts

    src = Path(core.__file__).read_text() + Path(counts.__file__).read_text()
    codes = set(re.findall(r'_reject\(cmd, tag, "([a-z_]+)"', src)) | set(re.findall(r'\("([a-z_]+)", f"', src)) \
        | set(re.findall(r'return "([a-z_]+)", f"', src)) | set(re.findall(r'reason = "([a-z_]+)" if', src))
    codes |= set(re.findall(r'else "([a-z_]+)"', src))
    for kind, before in re.findall(r'_slip\(state, cmd, tag, "(\w+)", c\.\w+, "(\w+)"\)', src):
        codes |= {f"unknown_{kind}", f"{kind}_not_{before}"}  # the slip steps' codes, formatted
    assert {"count_mismatch", "tray_short", "over_credit_line", "box_already_counted", "unknown_fill"} <= codes
    assert sorted(codes - set(REASON_WORDS)) == []
    assert reason_words("player_not_seated") == "that patron is not seated at that seat"
    assert reason_words("some_new_code") == "some new code"


def test_dealer_forms_become_commands_in_cents():
    o = build_command("record_opener", {"shift_id": "S1", "gaming_day": "2026-01-01", "pit": " p ",
                                        "chips": "25x40, 5x100", "total": "1,500", "supervisor_id": "sup"})
    assert (o.chips, o.total_cents, o.pit, o.role) == (chips((2_500, 40), (500, 100)), 150_000, "p", "dealer")
    b = build_command("buy_in", {"buy_in_id": "B", "seat": "3", "player_id": "p", "method": "marker",
                                 "amount": "2,500.50"})
    assert (b.seat, b.amount_cents, b.method, b.cash) == (3, 250_050, "marker", [])
    import pytest

    from services.projection.cage_desk import FormError

    for action, form, name in (("buy_in", {"seat": "two"}, "seat"),
                               ("record_opener", {"gaming_day": "today", "shift_id": "S", "supervisor_id": "x",
                                                  "total": "1"}, "gaming_day"),
                               ("record_closer", {"shift_id": "S", "supervisor_id": "x", "total": "-1"}, "total")):
        with pytest.raises(FormError) as e:
            build_command(action, form)
        assert e.value.field == name
