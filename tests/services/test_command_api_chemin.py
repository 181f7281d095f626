"""The command API's chemin de fer actions and its bettor credentials, on the in-memory bus: a table opened from
the ``chemin_de_fer`` profile with its own option time; the Banker and the bank named when a round opens; an
option decided by its controller (a stranger refused by the service, a terminal naming another player refused
403 before anything is sent) and one left to the table clock's ``expire_option`` (refused before its deadline);
the round view's chemin de fer parts; the audit clean. Over HTTP, player A's terminal cannot bet, withdraw or
decide for player B."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from contracts import topics as T
from contracts.events import BankSettled, OptionDecided
from croupier.audit import audit
from services.command_api import actions as A
from services.command_api.gateway import CommandGateway, Forbidden, MemoryCommandBus, NotYourPlayer
from services.command_api.http import create_command_api
from services.floor.dealer import Clock
from tests.services.helpers import events, floor_bus, payloads

DEALER = "dealer-ana"
SEATS = ((1, "bank-1"), (2, "ann"), (3, "ben"))
START = datetime(2026, 12, 1, 17, tzinfo=UTC)


def types(answer) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["payload"]["type"] for e in answer.events]


async def chemin_table(option_seconds: int | None = 5) -> tuple[CommandGateway, MemoryCommandBus, object, str]:
    """A chemin de fer table T1 opened from its profile through the gateway (``option_seconds`` its own),
    a physical shoe whose cards the test reads, three participants seated."""
    bus, _ = floor_bus(3)
    mb = MemoryCommandBus(bus)
    gw = CommandGateway(mb, Clock(START), timeout_s=0.2)
    chemin = A.ChemPracticesModel(option_seconds=option_seconds) if option_seconds else None
    opened = await gw.submit(A.OpenTableAction(actor=DEALER, profile="chemin_de_fer", chemin=chemin), "T1", "open",
                             role="pit")
    assert types(opened) == ["table_opened"], opened
    shoe = await gw.submit(A.LoadShoeAction(actor=DEALER, physical=True, shoe_id="PS"), "T1", "shoe", role="dealer")
    assert types(shoe) == ["shoe_loaded"], shoe
    for seat, player in SEATS:
        assert (await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=seat, player_id=player), "T1",
                                f"seat-{seat}", role="dealer")).accepted
    return gw, mb, bus, opened.events[0]["payload"]["config"]


async def read(gw: CommandGateway, rid: str, cards: tuple[str, ...], first: int = 1) -> None:
    for n, card in enumerate(cards, first):
        answer = await gw.submit(A.ReadCardAction(actor=DEALER, shoe_id="PS", round_id=rid, card_number=n, card=card),
                                 "T1", f"{rid}-card-{n}", role="dealer")
        assert types(answer) == ["card_drawn"], answer


def test_open_table_takes_chemin_de_fer_practices_only_at_chemin_de_fer():
    p = A.to_command(A.OpenTableAction(actor=DEALER, profile="chemin_de_fer", chemin=A.ChemPracticesModel(
        option_seconds=12, bank_min_cents=5_000)), "x")
    chem = p.command.config.chemin  # type: ignore[attr-defined]
    assert (chem.option_seconds, chem.bank_min_cents, chem.bank_max_cents) == (12, 5_000, 10_000_000)
    with pytest.raises(A.InvalidAction) as e:
        A.to_command(A.OpenTableAction(actor=DEALER, profile="punto_banco",
                                       chemin=A.ChemPracticesModel(option_seconds=12)), "x")
    assert (e.value.reason, e.value.field) == ("invalid_config", "chemin")
    with pytest.raises(A.InvalidAction) as e:
        A.to_command(A.OpenTableAction(actor=DEALER, profile="chemin_de_fer", chemin=A.ChemPracticesModel(
            bank_min_cents=50_000, bank_max_cents=10_000)), "x")
    assert (e.value.reason, e.value.field) == ("invalid_config", "chemin") and "below the minimum" in e.value.detail


def test_a_round_names_its_bank_whole_or_not_at_all():
    p = A.to_command(A.OpenRoundAction(actor=DEALER, shoe_id="S", round_id="R", banker_seat=2,
                                       banker_player_id="ann", bank_cents=100_000), "x")
    c = p.command
    assert (c.banker_seat, c.banker_player_id, c.bank_cents) == (2, "ann", 100_000)  # type: ignore[attr-defined]
    plain = A.to_command(A.OpenRoundAction(actor=DEALER, shoe_id="S", round_id="R"), "x").command
    assert (plain.banker_seat, plain.banker_player_id, plain.bank_cents) == (0, "", 0)  # type: ignore[attr-defined]
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="banker_player_id, banker_seat missing"):
        A.OpenRoundAction(actor=DEALER, shoe_id="S", bank_cents=100_000)
    # the options: the dealer's clock expires, the controller's terminal decides (dealing.options, bettor)
    exp = A.to_command(A.ExpireOptionAction(actor=DEALER, round_id="R", hand="banker"), "x")
    dec = A.to_command(A.DecideOptionAction(round_id="R", hand="player", draw=True, seat=3, player_id="ben"), "x")
    assert (exp.topic, exp.writer, exp.actor, exp.ends_with) == (T.DEALING_COMMANDS, "console", DEALER,
                                                                 {"option_decided"})
    assert (dec.topic, dec.writer, dec.actor, dec.answer_stream) == (T.DEALING_OPTIONS, "bettor", "ben",
                                                                     T.DEALING_EVENTS)
    assert A.allowed("dealer", "expire_option") and not A.allowed("pit", "expire_option")
    assert A.allowed("bettor", "decide_option") and not A.allowed("dealer", "decide_option")
    with pytest.raises(ValidationError):
        A.ExpireOptionAction(actor=DEALER, round_id="R", hand="tie")  # type: ignore[arg-type]


async def test_a_chemin_de_fer_round_with_a_decided_and_an_expired_option_through_the_gateway():
    gw, mb, bus, config = await chemin_table(option_seconds=5)
    assert (config["variant"], config["chemin"]["option_seconds"]) == ("chemin_de_fer", 5)
    # round 1: bank-1 holds a $1,000 bank; ann $300 and ben $500 against it: ben is the Dominant Player
    r1 = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id="PS", round_id="R1", banker_seat=1,
                                           banker_player_id="bank-1", bank_cents=100_000), "T1", "r1", role="dealer")
    assert types(r1) == ["round_opened", "betting_opened"]
    assert {k: r1.events[0]["payload"][k] for k in ("banker_seat", "banker_player_id", "bank_cents")} == \
        {"banker_seat": 1, "banker_player_id": "bank-1", "bank_cents": 100_000}
    for seat, player, cents in ((2, "ann", 30_000), (3, "ben", 50_000)):
        bet = await gw.submit(A.PlaceBetAction(round_id="R1", seat=seat, player_id=player, wager="player",
                                               amount_cents=cents), "T1", f"bet-{player}", role="bettor",
                              players={player})
        assert types(bet) == ["bet_placed"], bet
    assert types(await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id="R1"), "T1", "nmb-1")) == ["betting_closed"]
    await read(gw, "R1", ("3s", "2s", "2h", "Ks"))  # the Player's 3 2: a 5, the player_5 option
    view = await gw.round_view("T1", "R1")
    pending = view["option_pending"]
    assert view["bank"] == {"seat": 1, "player_id": "bank-1", "bank_cents": 100_000}
    assert (view["dominant_player"]["player_id"], view["dominant_player"]["rule"]) == ("ben", "highest_wager")
    assert (pending["hand"], pending["cell"], pending["seat"], pending["player_id"]) == ("player", "player_5", 3, "ben")
    assert datetime.fromisoformat(pending["deadline"]) - datetime.fromisoformat(pending["offered_at"]) == \
        timedelta(seconds=5)
    sent = len(mb.sent)
    with pytest.raises(NotYourPlayer) as e:  # ann's terminal naming ben: refused before anything is sent
        await gw.submit(A.DecideOptionAction(round_id="R1", hand="player", draw=True, seat=3, player_id="ben"),
                        "T1", "dec-x", role="bettor", players={"ann"})
    assert (e.value.status, e.value.reason, e.value.field) == (403, "not_your_player", "player_id")
    assert len(mb.sent) == sent
    stranger = await gw.submit(A.DecideOptionAction(round_id="R1", hand="player", draw=True, seat=2,
                                                    player_id="ann"), "T1", "dec-ann", role="bettor", players={"ann"})
    assert (stranger.status, stranger.reason) == ("rejected", "not_controller")  # the service: ann controls nothing
    early = await gw.submit(A.ExpireOptionAction(actor=DEALER, round_id="R1", hand="player"), "T1", "exp-1",
                            role="dealer")
    assert (early.status, early.reason) == ("rejected", "option_not_expired")
    stand = await gw.submit(A.DecideOptionAction(round_id="R1", hand="player", draw=False, seat=3, player_id="ben"),
                            "T1", "dec-ben", role="bettor", players={"ben"})
    assert types(stand) == ["option_decided"] and stand.round_id == "R1"
    assert {k: stand.events[0]["payload"][k] for k in ("hand", "cell", "draw", "by", "player_id")} == \
        {"hand": "player", "cell": "player_5", "draw": False, "by": "participant", "player_id": "ben"}
    assert (stand.events[0]["principal"], stand.events[0]["actor"]) == ("bettor", "ben")
    again = await gw.submit(A.DecideOptionAction(round_id="R1", hand="player", draw=False, seat=3, player_id="ben"),
                            "T1", "dec-ben", role="bettor", players={"ben"})
    assert again == stand and len(mb.sent) == sent + 3  # the retry: the same answer, nothing sent
    await read(gw, "R1", ("9s",), first=5)  # the Banker's 2 K draws the 9: 1 against the Player's 5
    view = await gw.round_view("T1", "R1")
    assert (view["status"], view["result"]["winner"], view["option_pending"]) == ("settled", "player", None)
    assert [o["decided"] for o in view["options"]] == [{"draw": False, "by": "participant"}]
    assert (view["bank_settled"]["won_cents"], view["bank_settled"]["bank_after_cents"]) == (-80_000, 20_000)
    # round 2: the Banker's Hand lost, the bank passes to ann; the banker_3_9 option left to the table clock
    must = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id="PS", round_id="R2", banker_seat=1,
                                             banker_player_id="bank-1", bank_cents=20_000), "T1", "r2-x")
    assert (must.status, must.reason) == ("rejected", "bank_must_pass")
    r2 = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id="PS", round_id="R2", banker_seat=2,
                                           banker_player_id="ann", bank_cents=100_000), "T1", "r2", role="dealer")
    assert r2.accepted, r2
    assert (await gw.submit(A.PlaceBetAction(round_id="R2", seat=3, player_id="ben", wager="banco",
                                             amount_cents=100_000), "T1", "bet-r2", role="bettor",
                            players={"ben"})).accepted
    await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id="R2"), "T1", "nmb-2")
    await read(gw, "R2", ("Kh", "2d", "2c", "Ad", "9d"))  # Player K 2 + 9 = 1; Banker 2 A = 3 against a 9
    pending = (await gw.round_view("T1", "R2"))["option_pending"]
    assert (pending["cell"], pending["player_id"], pending["default_draw"]) == ("banker_3_9", "ann", True)
    with pytest.raises(Forbidden):  # the table clock is the dealer console's, not the pit's
        await gw.submit(A.ExpireOptionAction(actor="fm-1", round_id="R2", hand="banker"), "T1", "exp-pit", role="pit")
    gw.clock.now = datetime.fromisoformat(pending["deadline"]) + timedelta(seconds=1)  # type: ignore[attr-defined]
    late = await gw.submit(A.DecideOptionAction(round_id="R2", hand="banker", draw=False, seat=2, player_id="ann"),
                           "T1", "dec-late", role="bettor", players={"ann"})
    assert (late.status, late.reason) == ("rejected", "option_expired")
    expired = await gw.submit(A.ExpireOptionAction(actor=DEALER, round_id="R2", hand="banker"), "T1", "exp-2",
                              role="dealer")
    assert types(expired) == ["option_decided"]
    assert (expired.events[0]["payload"]["by"], expired.events[0]["payload"]["draw"]) == ("default", True)
    assert (expired.events[0]["principal"], expired.events[0]["actor"]) == ("console", DEALER)
    await read(gw, "R2", ("5d",), first=6)  # the default draws: the Banker's 8 beats the Player's 1
    view = await gw.round_view("T1", "R2")
    assert (view["status"], view["result"]["winner"], view["result"]["banker_points"]) == ("settled", "banker", 8)
    assert [o["decided"] for o in view["options"]] == [{"draw": True, "by": "default"}]
    assert [(s["player_id"], s["result"], s["payout"]) for s in view["settlements"]] == [("ben", "lose", 0)]
    assert [(b.player_id, b.won_cents, b.commission_cents) for b in payloads(bus, T.SETTLEMENT_EVENTS, BankSettled)] \
        == [("bank-1", -80_000, 0), ("ann", 100_000, 5_000)]
    assert [d.by for d in payloads(bus, T.DEALING_EVENTS, OptionDecided)] == ["participant", "default"]
    rep = audit(events(bus))
    assert rep.clean, [str(d) for d in rep.discrepancies]
    assert rep.rounds_checked == 2


# ---- HTTP: each terminal acts for its own players only --------------------------------------------------------
TOKENS = {"dealer": "dealer-token-0123456789", "pit": "pit-token-012345678901",
          "bettor": "shared-bettor-token-0123"}
ANN, BEN, SEAT3 = "terminal-ann-0123456789", "terminal-ben-0123456789", "terminal-seat-3-0123456"
BETTORS = {ANN: {"ann"}, BEN: {"ben"}, SEAT3: {"ben", "cat"}}


def bearer(token: str, key: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"Idempotency-Key": key} if key else {})}


async def test_player_as_terminal_cannot_bet_withdraw_or_decide_for_player_b():
    gw, mb, bus, _ = await chemin_table()
    assert (await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=3, player_id="cat"), "T1", "seat-cat")).accepted
    app = create_command_api(gw, TOKENS, bettors=BETTORS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api") as c:
        r = await c.post("/tables/T1/rounds", json={"actor": DEALER, "shoe_id": "PS", "round_id": "R1",
                                                    "banker_seat": 1, "banker_player_id": "bank-1",
                                                    "bank_cents": 100_000}, headers=bearer(TOKENS["dealer"], "r1"))
        assert r.status_code == 200, r.text
        r = await c.post("/tables/T1/rounds", json={"actor": DEALER, "shoe_id": "PS", "bank_cents": 100_000},
                         headers=bearer(TOKENS["dealer"], "r-x"))
        assert r.status_code == 422 and "banker_seat" in r.text
        bet = {"round_id": "R1", "seat": 2, "player_id": "ann", "wager": "player", "amount_cents": 30_000}
        sent = len(mb.sent)
        for token in (BEN, TOKENS["bettor"]):  # ben's terminal, and the shared token bound to no player
            r = await c.post("/tables/T1/bets", json=bet, headers=bearer(token, "b-ann-x"))
            assert (r.status_code, r.json()["detail"]["reason"], r.json()["detail"]["field"]) == \
                (403, "not_your_player", "player_id"), r.text
        assert "bound to no player" in r.json()["detail"]["detail"] and len(mb.sent) == sent
        mine = await c.post("/tables/T1/bets", json=bet, headers=bearer(ANN, "b-ann"))
        assert mine.status_code == 200 and mine.json()["events"][0]["actor"] == "ann"
        ben = await c.post("/tables/T1/bets", json={**bet, "seat": 3, "player_id": "ben", "amount_cents": 50_000},
                           headers=bearer(BEN, "b-ben"))
        assert ben.status_code == 200, ben.text
        # the seat-3 terminal acts for both players bound to it
        cat = await c.post("/tables/T1/bets", json={**bet, "seat": 3, "player_id": "cat", "amount_cents": 10_000},
                           headers=bearer(SEAT3, "b-cat"))
        assert cat.status_code == 200 and cat.json()["events"][0]["actor"] == "cat"
        ben_bet = ben.json()["bet_id"]
        # ann's terminal withdrawing ben's bet: naming ben is 403 (nothing sent); naming ann, the service says
        # the bet is not hers
        sent = len(mb.sent)
        w = {"round_id": "R1", "bet_id": ben_bet, "player_id": "ben"}
        r = await c.post("/tables/T1/bets/withdraw", json=w, headers=bearer(ANN, "w-1"))
        assert (r.status_code, r.json()["detail"]["reason"]) == (403, "not_your_player") and len(mb.sent) == sent
        r = await c.post("/tables/T1/bets/withdraw", json={**w, "player_id": "ann"}, headers=bearer(ANN, "w-2"))
        assert (r.status_code, r.json()["reason"]) == (409, "not_your_bet")
        r = await c.post("/tables/T1/bets/withdraw", json={**w, "bet_id": cat.json()["bet_id"], "player_id": "cat"},
                         headers=bearer(SEAT3, "w-3"))
        assert r.status_code == 200 and r.json()["events"][0]["payload"]["type"] == "bet_withdrawn"
        r = await c.post("/tables/T1/rounds/no-more-bets", json={"actor": DEALER, "round_id": "R1"},
                         headers=bearer(TOKENS["dealer"], "n1"))
        assert r.status_code == 200
        r = await c.get("/tables/T1/rounds/R1/option", headers=bearer(BEN))
        assert (r.status_code, r.json()["option_pending"]) == (200, None)  # no option yet: none offered
        await read(gw, "R1", ("3s", "2s", "2h", "Ks"))
        # ben's terminal sees the option he controls, with its deadline; ann's does not; the pit sees any
        mine = (await c.get("/tables/T1/rounds/R1/option", params={"wait_ms": 100}, headers=bearer(BEN))).json()
        assert (mine["option_pending"]["cell"], mine["option_pending"]["player_id"]) == ("player_5", "ben")
        assert mine["option_pending"]["deadline"] > mine["option_pending"]["offered_at"]
        theirs = (await c.get("/tables/T1/rounds/R1/option", headers=bearer(ANN))).json()
        assert (theirs["status"], theirs["option_pending"]) == ("dealing", None)
        pit = (await c.get("/tables/T1/rounds/R1/option", headers=bearer(TOKENS["pit"]))).json()
        assert pit["option_pending"] == mine["option_pending"]
        assert (await c.get("/tables/T1/rounds/R1", headers=bearer(BEN))).status_code == 403  # not the round
        decide = {"round_id": "R1", "hand": "player", "draw": True, "seat": 3, "player_id": "ben"}
        r = await c.post("/tables/T1/options/decide", json=decide, headers=bearer(ANN, "d-1"))
        assert (r.status_code, r.json()["detail"]["reason"]) == (403, "not_your_player")
        r = await c.post("/tables/T1/options/decide", json=decide, headers=bearer(TOKENS["dealer"], "d-2"))
        assert (r.status_code, r.json()["detail"]["reason"]) == (403, "role_not_allowed")
        r = await c.post("/tables/T1/options/expire", json={"actor": DEALER, "round_id": "R1", "hand": "player"},
                         headers=bearer(TOKENS["dealer"], "e-1"))
        assert (r.status_code, r.json()["reason"]) == (409, "option_not_expired")
        r = await c.post("/tables/T1/options/decide", json=decide, headers=bearer(BEN, "d-3"))
        assert r.status_code == 200 and r.json()["events"][0]["payload"]["by"] == "participant"
        after = (await c.get("/tables/T1/rounds/R1/option", headers=bearer(BEN))).json()
        assert after["option_pending"] is None
        who = (await c.get("/actions", headers=bearer(SEAT3))).json()
        assert (who["role"], who["players"]) == ("bettor", ["ben", "cat"])
        assert "decide_option" in who["may_send"] and who["actions"]["expire_option"] == ["dealer"]
        doc = (await c.get("/openapi.json")).json()
        for path in ("/tables/{table_id}/options/decide", "/tables/{table_id}/options/expire"):
            assert doc["paths"][path]["post"]["security"] == [{"bearer": []}]
    placed = [e for e in events(bus, T.WAGERING_EVENTS) if e.payload.__class__.__name__ == "BetPlaced"]
    assert [(e.principal, e.actor, e.payload.player_id) for e in placed] == \
        [("bettor", "ann", "ann"), ("bettor", "ben", "ben"), ("bettor", "cat", "cat")]


async def test_the_command_api_refuses_a_bettor_token_shared_with_a_role_or_too_short():
    from services.runtime.credentials import BadCredentials

    gw, _, _, _ = await chemin_table()
    with pytest.raises(BadCredentials, match="share a token"):
        create_command_api(gw, TOKENS, bettors={TOKENS["pit"]: {"ann"}})
    with pytest.raises(BadCredentials, match="at least 16"):
        create_command_api(gw, TOKENS, bettors={"short": {"ann"}})
    assert create_command_api(gw, {}, bettors={ANN: {"ann"}}) is not None  # bettor credentials alone will do
