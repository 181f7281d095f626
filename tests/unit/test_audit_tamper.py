"""The investigator sees every tamper where it happened (issue 28, items 1-2): a compromised writer appends a
forged record at the next ``seq`` of a stream with the right ``event_id``; the audit names it with a stable
code at the record's position (``stream#seq``) and a plain sentence, and the replay shows the record, marked
on its own line. The log: one table, three rounds of one shoe, the shoe closed (its order revealed)."""

from __future__ import annotations

import asyncio
import io
import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from msgspec.structs import replace
from rich.console import Console
from typer.testing import CliRunner

from baccarat.table import punto_banco_full
from contracts import topics as T
from contracts.commands import CloseShoe, LoadShoe, OpenRound
from contracts.envelope import Envelope, event_id
from contracts.events import BetSettled, CardDrawn, RoundResolved, ShoeClosed
from croupier.audit import AuditReport, audit
from croupier.cli import app
from croupier.replay import render, replay
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.runtime.core import command
from tests.services.helpers import events, floor_bus

SEATS = [Seat(i, f"player-{i}") for i in range(1, 4)]
TABLE = "F1"


async def _floor() -> list[Envelope]:
    bus, _ = floor_bus(seed=28)
    fio = MemoryFloorIO(bus)
    dealer = TableDealer(fio, TABLE, punto_banco_full(), SEATS, random.Random(28), Clock())
    await dealer.open_table()
    at = datetime(2026, 1, 2, tzinfo=UTC)
    await fio.send(T.SHOE_COMMANDS, command(TABLE, "load", at, LoadShoe(shoe_id="S", cut_at=40)))
    for n in range(1, 4):
        assert await dealer.play_round("S", f"S-{n}")
    after = datetime(2026, 1, 3, tzinfo=UTC)
    await fio.send(T.SHOE_COMMANDS, command(TABLE, "close", after, CloseShoe(shoe_id="S")))
    # the dealer's mis-click: "Open round" after the pit closed the shoe, refused no_open_shoe (issue 28, item 4)
    await fio.send(T.DEALING_COMMANDS, command(TABLE, "misclick", after + timedelta(seconds=2),
                                               OpenRound(round_id="S-4", shoe_id="S")))
    log = events(bus)
    assert any(isinstance(e.payload, ShoeClosed) for e in log)
    return log


@pytest.fixture(scope="module")
def log() -> list[Envelope]:
    return asyncio.run(_floor())


def append(log: list[Envelope], model: Envelope, **payload: object) -> tuple[list[Envelope], str]:
    """The log with a forged copy of ``model`` (its payload changed) appended at its stream's next seq, with
    the right event id, as a compromised writer would; and the forged record's position."""
    seq = 1 + max(e.seq for e in log if e.table_id == model.table_id and e.stream == model.stream)
    forged = replace(model, seq=seq, event_id=event_id(model.stream, model.table_id, seq),
                     round_id=payload.get("round_id", model.round_id),
                     occurred_at=model.occurred_at + timedelta(milliseconds=1), payload=replace(model.payload, **payload))
    return log + [forged], f"{model.stream}#{seq}"


def found(rep: AuditReport, where: str) -> dict[str, str]:
    """The discrepancies at ``where``: kind -> sentence."""
    return {d.kind: d.detail for d in rep.discrepancies or [] if d.where == where}


def first(log: list[Envelope], kind: type, **attrs: object) -> Envelope:
    return next(e for e in log if isinstance(e.payload, kind) and all(getattr(e.payload, k) == v
                                                                     for k, v in attrs.items()))


def order(log: list[Envelope]) -> list[str]:
    """The shoe's revealed order after the cut."""
    close = first(log, ShoeClosed).payload
    return list(close.order[40:]) + list(close.order[:40])


def timeline_marks(log: list[Envelope], round_id: str) -> dict[str, list[str]]:
    """The replay's marks on each record of the round's timeline (``stream#seq`` -> kinds)."""
    v = replay(log, TABLE, round_id=round_id)
    return {f"{e['stream']}#{e['seq']}": [m["kind"] for m in e["marks"]] for e in v["timeline"] if e["marks"]}


def rendered(view: dict) -> list[str]:  # type: ignore[type-arg]
    out = io.StringIO()
    render(view, Console(file=out, width=400, color_system=None))
    return out.getvalue().splitlines()


def test_the_untampered_log_is_clean_and_its_replay_unmarked(log):
    assert audit(log).clean
    assert all(timeline_marks(log, f"S-{n}") == {} for n in range(1, 4))
    v = replay(log, TABLE)
    assert v["marks"] == [] and "audit: 0 anomalies in the log: clean" in rendered(v)


def test_a_card_drawn_after_the_shoe_closed_is_compared_with_the_reveal(log):
    # one more card for round S-2, from the position after the last card drawn, after the shoe's ShoeClosed
    last = max((e for e in log if isinstance(e.payload, CardDrawn)), key=lambda e: e.seq)
    pos = last.payload.position + 1
    n = 1 + max(e.payload.card_number for e in log if isinstance(e.payload, CardDrawn) and e.round_id == "S-2")
    wrong = next(c for c in ("Ah", "2c", "3d") if c != order(log)[pos])
    forged, at = append(log, last, round_id="S-2", card_number=n, card=wrong, position=pos)
    rep = audit(forged)
    got = found(rep, at)
    assert set(got) == {"card_after_shoe_closed", "card_not_in_order"}, [str(d) for d in rep.discrepancies]
    assert got["card_not_in_order"] == (f"card {n} of round S-2 is {wrong} from shoe S position {pos}, where the "
                                        f"revealed order has {order(log)[pos]}: not the shoe's card")
    assert got["card_after_shoe_closed"].startswith(f"card {n} ({wrong}) of round S-2 drawn from shoe S after the "
                                                    "shoe closed at shoe.events#")
    # the one that matches the reveal is still a card out of a closed shoe
    right, there = append(log, last, round_id="S-2", card_number=n, card=order(log)[pos], position=pos)
    assert set(found(audit(right), there)) == {"card_after_shoe_closed"}
    # and the replay shows the card, marked, in its round
    assert timeline_marks(forged, "S-2")[at] == ["card_after_shoe_closed", "card_not_in_order"]


def test_a_substituted_first_card_is_a_card_not_the_shoes_not_an_underivable_round(log):
    genuine = first(log, CardDrawn, round_id="S-2", card_number=1)
    g = genuine.payload
    other = next(c for c in ("Kh", "Qs", "Jd") if c != g.card)
    forged, at = append(log, genuine, card=other)
    rep = audit(forged)
    assert "round_underivable" not in {d.kind for d in rep.discrepancies}
    got = found(rep, at)
    assert set(got) == {"card_not_in_order", "duplicate_card", "card_after_shoe_closed"}
    assert got["duplicate_card"].startswith(f"card 1 of round S-2 drawn again ({other}, shoe position {g.position}); "
                                            f"shoe.events#{genuine.seq} drew it first ({g.card}")
    # the round is still re-dealt from the genuine card: its result and settlements check out
    assert rep.rounds_checked == 3
    # the replay shows both cards 1: the dealt one and the substitute, marked on its own line
    v = replay(forged, TABLE, round_id="S-2")
    cards = [e for e in v["timeline"] if e["event"] == "card" and e["n"] == 1]
    assert [c["card"] for c in cards] == [g.card, other]
    assert [m["kind"] for m in cards[1]["marks"]] == ["duplicate_card", "card_after_shoe_closed", "card_not_in_order"]
    lines = rendered({**v, "view": "round"})
    k = next(i for i, ln in enumerate(lines) if f"{other} to ?" in ln)
    assert "! ANOMALY" in lines[k + 1] and f"duplicate_card at {at}" in lines[k + 1]


def test_a_forged_settlement_paying_100_to_1_on_a_losing_bet_names_the_rules_payout(log):
    lost = first(log, BetSettled, result="lose")
    s = lost.payload
    forged, at = append(log, lost, result="win", win=s.stake * 100, payout=s.stake * 101, odds="100:1",
                        category="forged")
    rep = audit(forged)
    got = found(rep, at)
    assert set(got) == {"bet_settled_twice", "settlement_mismatch"}, [str(d) for d in rep.discrepancies]
    winner = first(log, RoundResolved, round_id=s.round_id).payload.winner
    stake = f"{s.stake // 100}.{s.stake % 100:02d}"
    assert got["settlement_mismatch"].startswith(
        f"bet {s.bet_id} ({s.wager} {stake} at seat {s.seat}, round {s.round_id}, {winner} wins) is recorded win "
        f"with payout {s.stake * 101 // 100:,}.{s.stake * 101 % 100:02d} at 100:1; the rules give lose with payout "
        "0.00: ")
    assert got["bet_settled_twice"].endswith(f"settlement.events#{lost.seq} settled it first")
    # the replay: the forged settlement is on the round's timeline, marked on its own line
    assert timeline_marks(forged, s.round_id)[at] == ["bet_settled_twice", "settlement_mismatch"]
    lines = rendered({**replay(forged, TABLE, round_id=s.round_id), "view": "round"})
    k = next(i for i, ln in enumerate(lines) if "win (forged, 100:1)" in ln)
    assert "! ANOMALY" in lines[k + 1] and f"bet_settled_twice at {at}" in lines[k + 1]
    assert "! ANOMALY" in lines[k + 2] and "settlement_mismatch at " + at in lines[k + 2]


def test_a_settlement_of_a_bet_never_placed_is_named_at_its_record(log):
    model = first(log, BetSettled)
    forged, at = append(log, model, bet_id="never-placed")
    got = found(audit(forged), at)
    assert set(got) == {"unknown_bet_settled"}
    assert got["unknown_bet_settled"].startswith(f"bet never-placed of round {model.payload.round_id} settled")
    assert timeline_marks(forged, model.payload.round_id)[at] == ["unknown_bet_settled"]


def test_a_second_result_the_cards_contradict_is_named_at_its_record(log):
    res = first(log, RoundResolved, round_id="S-3")
    flipped = {"player": "banker", "banker": "player", "tie": "banker"}[res.payload.winner]
    forged, at = append(log, res, winner=flipped)
    got = found(audit(forged), at)
    assert set(got) == {"duplicate_result", "outcome_mismatch"}
    assert got["outcome_mismatch"] == (f"round S-3: the cards drawn contradict the result: winner: recorded "
                                       f"{flipped!r}, rules give {res.payload.winner!r}")
    assert timeline_marks(forged, "S-3")[at] == ["duplicate_result", "outcome_mismatch"]


def test_a_late_bet_appended_after_the_book_closed_is_named_and_marked(log):
    from contracts.events import BetPlaced

    model = first(log, BetPlaced, round_id="S-2")
    forged, at = append(log, model, bet_id="late-bet", amount_cents=500_000)
    got = found(audit(forged), at)
    assert set(got) == {"bet_after_book_closed"}
    assert got["bet_after_book_closed"].startswith('bet late-bet placed on round S-2 after its book closed with '
                                                   '"No more bets" (wagering.events#')
    assert timeline_marks(forged, "S-2")[at] == ["bet_after_book_closed"]


def test_the_summary_lists_every_anomaly_on_its_own_line(log):
    lost = first(log, BetSettled, result="lose")
    forged, at = append(log, lost, payout=lost.payload.stake * 101)
    v = replay(forged, TABLE)
    assert [(m["kind"], m["where"]) for m in v["marks"]] == [("bet_settled_twice", at), ("settlement_mismatch", at)]
    lines = rendered(v)
    assert "audit: 2 anomalies in the log (each on its own line below; --round shows it in its round)" in lines
    assert sum(ln.startswith(f"! ANOMALY settlement_mismatch at {at}: bet {lost.payload.bet_id}") for ln in lines) == 1
    row = next(r for r in v["rounds"] if r["round_id"] == lost.payload.round_id)
    assert row["anomalies"] == 2


def _cli_audit(monkeypatch, log: list[Envelope]):  # type: ignore[no-untyped-def]
    """``croupier audit`` on ``log`` as if read from Kafka by a principal that may not read the commands."""
    import croupier.log as log_mod

    async def read_for_audit(settings, table=None):  # type: ignore[no-untyped-def]
        return list(log), [], []

    async def read_commands(settings, table=None):  # type: ignore[no-untyped-def]
        raise log_mod.CommandsUnreadable("no command topic is visible to principal 'analytics'")

    monkeypatch.setattr(log_mod, "read_for_audit", read_for_audit)
    monkeypatch.setattr(log_mod, "read_commands", read_commands)
    return CliRunner().invoke(app, ["audit", "--bootstrap", "127.0.0.1:1"])


def test_a_persons_refused_command_is_the_floor_working_exit_0(log, monkeypatch):
    from contracts.events import CommandRejected

    assert [e.payload.reason for e in log if isinstance(e.payload, CommandRejected)] == ["no_open_shoe"]
    r = _cli_audit(monkeypatch, log)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert ("commands refused with a reason (a person's command the log shows could not be done: the floor "
            "worked, not discrepancies): no_open_shoe 1") in lines
    assert "0 discrepancies: clean" in lines and not any("floor is broken" in ln for ln in lines)
    assert any(ln.startswith("provenance: attribution only") for ln in lines)


def test_a_tampered_log_exits_1_naming_each_record(log, monkeypatch):
    lost = first(log, BetSettled, result="lose")
    forged, at = append(log, lost, payout=lost.payload.stake * 101)
    r = _cli_audit(monkeypatch, forged)
    assert r.exit_code == 1, r.output
    assert [ln.split()[1:3] for ln in r.stdout.splitlines() if ln.startswith(f"{TABLE} ")] == [
        ["bet_settled_twice", at + ":"], ["settlement_mismatch", at + ":"]]


async def test_the_web_replay_marks_each_anomaly_on_its_own_line(log):
    from croupier.pit import create_pit_app
    from croupier.pit_replay import story
    from services.projection.core import ProjectionCore
    from tests.services.test_pit_pages import CREDS, client, login

    genuine = first(log, CardDrawn, round_id="S-2", card_number=1)
    other = next(c for c in ("Kh", "Qs", "Jd") if c != genuine.payload.card)
    forged, at = append(log, genuine, card=other)
    bus, _ = floor_bus(seed=1)
    pit = create_pit_app(bus.add(ProjectionCore()), CREDS, ready=lambda: True)

    async def read(table_id: str, round_id: str | None) -> dict:  # type: ignore[type-arg]
        return story(forged, table_id, round_id)

    pit.pages.replay = read
    async with client(pit) as c:
        await login(c, "pit")
        page = (await c.get(f"/replay/{TABLE}/rounds/S-2")).text
        rows = re.findall(r"<tr class=\"([^\"]*)\">(.*?)</tr>", page, re.DOTALL)
        k = next(i for i, (_, cells) in enumerate(rows) if f"{other} to ?" in cells)
        assert "marked" in rows[k][0]  # the substituted card is shown, its row marked, each anomaly a row below
        assert [re.search(r"<b>(\w+)</b> at <code>([^<]+)</code>", cells).groups()  # type: ignore[union-attr]
                for cls, cells in rows[k + 1:k + 4]] == [
            ("duplicate_card", at), ("card_after_shoe_closed", at), ("card_not_in_order", at)]
        assert all(cls == "anomaly" for cls, _ in rows[k + 1:k + 4])
        listing = (await c.get(f"/replay/{TABLE}")).text
        summary = story(forged, TABLE, None)
        # the card's three, and the shoe's own: cards did not leave it one after another, its count is off
        assert sorted({m["kind"] for m in summary["marks"]}) == [
            "card_after_shoe_closed", "card_not_in_order", "draw_positions", "duplicate_card", "shoe_bookkeeping"]
        assert 'id="anomalies"' in listing and f"The audit found {len(summary['marks'])} anomalies" in listing
        assert all(f"<b>! {m['kind']}</b> at <code>{m['where']}</code>" in listing for m in summary["marks"])
        row = next(r for r in summary["rounds"] if r["round_id"] == "S-2")
        assert f"! {row['anomalies']} anomalies" in listing and row["anomalies"] >= 3  # on the round's line
        clean = story(log, TABLE, None)
        pit.pages.replay = lambda t, r: _async(story(log, t, r))
        assert clean["marks"] == [] and "The audit found no anomaly" in (await c.get(f"/replay/{TABLE}")).text


async def _async(value):  # type: ignore[no-untyped-def]
    return value
