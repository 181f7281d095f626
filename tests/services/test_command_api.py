"""The command API on the in-memory bus: each action's command, the answers, idempotency by request id, roles,
bad input (nothing sent), and the HTTP layer's statuses and OpenAPI security scheme."""

from __future__ import annotations

from datetime import datetime, timezone

import httpx
import pytest

from contracts import topics as T
from contracts.commands import CloseBetting, LoadShoe, OpenRound, OpenTable
from contracts.events import BetSettled, RoundSettled
from services.command_api import actions as A
from services.command_api.gateway import (
    AnswerTimeout,
    BadRequest,
    CommandGateway,
    EventIndex,
    Forbidden,
    MemoryCommandBus,
    MissingWriterCredential,
    OrderNotAllowed,
    ReaderFailed,
    RequestIdReused,
    UnknownTable,
    command_id_for,
    writer_settings,
)
from services.command_api.http import create_command_api
from services.floor.dealer import Clock
from services.runtime.credentials import NoCredentials
from services.runtime.memory import MemoryBus
from services.runtime.settings import Settings
from tests.services.helpers import events, floor_bus, payloads

TOKENS = {"dealer": "dealer-token-0123456789", "cage": "cage-token-01234567890", "pit": "pit-token-012345678901"}
#: each betting terminal's bettor credential, bound to its player(s)
BETTORS = {"bettor-p1-token-012345": {"p-1"}, "bettor-p2-token-012345": {"p-2"}}
BETTOR_OF = {"p-1": "bettor-p1-token-012345", "p-2": "bettor-p2-token-012345"}
DEALER = "dealer-ana"


def gateway(seed: int = 5) -> tuple[CommandGateway, MemoryCommandBus, MemoryBus]:
    bus, _ = floor_bus(seed)
    mb = MemoryCommandBus(bus)
    return CommandGateway(mb, Clock(datetime(2026, 12, 1, 17, tzinfo=timezone.utc)), timeout_s=0.2), mb, bus


async def open_table_with_shoe(gw: CommandGateway, table: str = "T1") -> str:
    assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco"), table, "open-1")).accepted
    shoe = await gw.submit(A.LoadShoeAction(actor=DEALER, cut_at=120), table, "shoe-1")
    assert shoe.accepted, shoe
    return shoe.shoe_id


def types(answer) -> list[str]:  # type: ignore[no-untyped-def]
    return [e["payload"]["type"] for e in answer.events]


# ---- the mapping ---------------------------------------------------------------------------------------------
def test_every_action_maps_to_the_command_its_topic_carries_under_its_one_writer():
    samples = {
        "open_table": A.OpenTableAction(actor=DEALER, profile="no_vig_dragon_7"),
        "load_shoe": A.LoadShoeAction(actor=DEALER, physical=True),
        "read_burn": A.ReadBurnAction(actor=DEALER, shoe_id="S1", exposed="Kd", burned=["2c"] * 10),
        "read_card": A.ReadCardAction(actor=DEALER, shoe_id="S1", round_id="R1", card_number=1, card="9h"),
        "close_shoe": A.CloseShoeAction(actor=DEALER, shoe_id="S1"),
        "open_round": A.OpenRoundAction(actor=DEALER, shoe_id="S1", round_id="R1"),
        "void_round": A.VoidRoundAction(actor=DEALER, round_id="R1", reason="card exposed"),
        "offer_shoe": A.OfferShoeAction(actor=DEALER, seat=3, player_id="p-9"),
        "keep_shoe": A.KeepShoeAction(actor="p-9", round_id="R1"),
        "pass_shoe": A.PassShoeAction(actor="floorman-1", ordered_by="floorman"),
        "seat_player": A.SeatPlayerAction(actor=DEALER, seat=3, player_id="p-9"),
        "leave_seat": A.LeaveSeatAction(actor=DEALER, seat=3, player_id="p-9"),
        "no_more_bets": A.NoMoreBetsAction(actor=DEALER, round_id="R1"),
        "collect_commission": A.CollectCommissionAction(actor=DEALER, seat=3, player_id="p-9"),
        "place_bet": A.PlaceBetAction(round_id="R1", seat=3, player_id="p-9", wager="banker", amount_cents=2500),
        "withdraw_bet": A.WithdrawBetAction(round_id="R1", bet_id="b1", player_id="p-9"),
        "expire_option": A.ExpireOptionAction(actor=DEALER, round_id="R1", hand="banker"),
        "decide_option": A.DecideOptionAction(round_id="R1", hand="player", draw=False, seat=3, player_id="p-9"),
    }
    assert set(samples) == set(A.ACTIONS)
    writers = {}
    for name, action in samples.items():
        p = A.to_command(action, "d0")
        tag = type(p.command).__struct_config__.tag
        assert p.action == name and T.TOPIC_OF[tag] == p.topic and A.COMMAND_OF[name] == tag
        writers[name] = p.writer
        assert A.writer_of(name) == p.writer
    assert {n for n, w in writers.items() if w == "bettor"} == {"place_bet", "withdraw_bet", "decide_option"} \
        == A.BETTOR_ACTIONS
    assert {w for w in writers.values()} == {"console", "bettor"}
    # the bettor's command acts as the player; the console's as the dealer
    assert A.to_command(samples["place_bet"], "d0").actor == "p-9"
    assert A.to_command(samples["close_shoe"], "d0").actor == DEALER
    # ids the request leaves to the API come from the derived id, never drawn
    p = A.to_command(A.OpenRoundAction(actor=DEALER, shoe_id="S1"), "abc")
    assert isinstance(p.command, OpenRound) and p.command.round_id == "round-abc" and p.then_betting_opened
    p = A.to_command(A.LoadShoeAction(actor=DEALER, cut_at=33), "abc")
    assert isinstance(p.command, LoadShoe) and (p.command.shoe_id, p.command.cut_at, p.command.order) == \
        ("shoe-abc", 33, [])
    close = A.to_command(samples["no_more_bets"], "d0")
    assert isinstance(close.command, CloseBetting) and close.answer_stream == T.WAGERING_EVENTS


def test_open_table_takes_a_profile_and_its_limits_or_refuses_with_a_reason():
    p = A.to_command(A.OpenTableAction(actor=DEALER, profile="casino_night",
                                       limits={"banker": A.LimitsModel(min_cents=1000, max_cents=50000)}), "x")
    assert isinstance(p.command, OpenTable)
    cfg = p.command.config
    assert cfg.variant == "casino_night" and cfg.limits["banker"].min_cents == 1000
    with pytest.raises(A.InvalidAction) as e:
        A.to_command(A.OpenTableAction(actor=DEALER, profile="chemin"), "x")
    assert (e.value.reason, e.value.field) == ("unknown_profile", "profile") and "punto_banco" in e.value.detail
    with pytest.raises(A.InvalidAction) as e:
        A.to_command(A.OpenTableAction(actor=DEALER, profile="punto_banco_basic",
                                       limits={"dragon_7": A.LimitsModel(min_cents=500, max_cents=5000)}), "x")
    assert e.value.reason == "invalid_config" and "dragon_7" in e.value.detail


def test_roles_send_only_their_actions():
    assert A.allowed("dealer", "open_round") and A.allowed("dealer", "no_more_bets")
    assert not A.allowed("dealer", "place_bet")
    assert A.allowed("bettor", "place_bet") and not A.allowed("bettor", "no_more_bets")
    assert A.allowed("pit", "void_round") and not A.allowed("pit", "open_round")
    for role in ("cage", "surveillance", "analyst", "nobody"):
        assert not any(A.allowed(role, n) for n in A.ACTIONS)


# ---- the gateway ---------------------------------------------------------------------------------------------
async def test_a_full_round_through_the_gateway_is_dealt_and_settled():
    gw, mb, bus = gateway()
    opened = await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco"), "T1", "open-1", role="dealer")
    assert (opened.status, types(opened)) == ("accepted", ["table_opened"])
    assert opened.events[0]["actor"] == DEALER and opened.events[0]["principal"] == "console"
    shoe = await gw.submit(A.LoadShoeAction(actor=DEALER, cut_at=120), "T1", "shoe-1", role="dealer")
    assert types(shoe) == ["shoe_loaded", "shoe_cut", "shoe_burned"]
    burned = shoe.events[-1]["payload"]
    assert "burned" not in burned and burned["burned_count"] >= 1  # face-down cards are surveillance's
    seat = await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=2, player_id="p-2"), "T1", "seat-2", role="dealer")
    assert types(seat) == ["player_seated"]
    rnd = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe.shoe_id), "T1", "round-1", role="dealer")
    assert types(rnd) == ["round_opened", "betting_opened"] and rnd.round_id.startswith("round-")
    bet = await gw.submit(A.PlaceBetAction(round_id=rnd.round_id, seat=2, player_id="p-2", wager="player",
                                           amount_cents=5000), "T1", "bet-1", role="bettor", players={"p-2"})
    assert types(bet) == ["bet_placed"] and bet.bet_id == bet.command_id == bet.events[0]["payload"]["bet_id"]
    assert bet.events[0]["actor"] == "p-2"
    tie = await gw.submit(A.PlaceBetAction(round_id=rnd.round_id, seat=2, player_id="p-2", wager="tie",
                                           amount_cents=100), "T1", "bet-2", role="bettor", players={"p-2"})
    assert (tie.status, tie.reason) == ("rejected", "under_table_min") and types(tie) == ["bet_rejected"]
    close = await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id=rnd.round_id), "T1", "nmb-1", role="dealer")
    assert types(close) == ["betting_closed"] and close.events[0]["payload"]["bets"][0]["amount_cents"] == 5000
    view = await gw.round_view("T1", rnd.round_id)
    assert view["status"] == "settled" and view["shoe_id"] == shoe.shoe_id
    assert len(view["cards"]) in (4, 5, 6) and view["result"]["winner"] in ("player", "banker", "tie")
    settled = [e.payload for e in events(bus, T.SETTLEMENT_EVENTS) if isinstance(e.payload, BetSettled)]
    assert [s["payout"] for s in view["settlements"]] == [s.payout for s in settled]
    total = next(e.payload for e in events(bus, T.SETTLEMENT_EVENTS) if isinstance(e.payload, RoundSettled))
    assert view["settled"]["stakes"] == total.stakes == 5000
    late = await gw.submit(A.PlaceBetAction(round_id=rnd.round_id, seat=2, player_id="p-2", wager="banker",
                                            amount_cents=5000), "T1", "bet-late", role="bettor", players={"p-2"})
    assert (late.status, late.reason) == ("rejected", "betting_closed")


async def test_a_retried_request_gets_the_same_answer_and_sends_no_second_command():
    gw, mb, _ = gateway()
    shoe_id = await open_table_with_shoe(gw)
    sent = len(mb.sent)
    first = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "round-a", role="dealer")
    again = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "round-a", role="dealer")
    assert again == first and len(mb.sent) == sent + 1
    # the command id derives from the request id (and the writer), never from the clock
    assert first.command_id == command_id_for("console", "T1", "round-a") == mb.sent[-1][2].command_id
    # the same request id for another request: refused, nothing sent
    with pytest.raises(RequestIdReused):
        await gw.submit(A.VoidRoundAction(actor=DEALER, round_id=first.round_id, reason="x"), "T1", "round-a")
    assert len(mb.sent) == sent + 1
    # a new gateway (a restarted API) sends it again under the same command id: the service drops the retry
    # (and, having read nothing of the first attempt, cannot answer it: a 504 that says so)
    mb.index = EventIndex()
    mb.index.tables.add("T1")  # the Kafka reader's scan of the dealing events still knows the table opened
    gw2 = CommandGateway(mb, Clock(), timeout_s=0.05)
    with pytest.raises(AnswerTimeout, match="may still be decided"):
        await gw2.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "round-a", role="dealer")
    assert len(mb.sent) == sent + 2 and mb.sent[-1][2].command_id == first.command_id
    assert mb.index.round_events("T1", first.round_id) == []  # nothing new was decided


async def test_a_timeout_is_not_kept_as_the_answer_a_retry_waits_again():
    bus = MemoryBus()  # no service listens
    mb = MemoryCommandBus(bus)
    mb.index.tables.add("T1")  # taken as opened: the command is sent, and never answered
    gw = CommandGateway(mb, Clock(), timeout_s=0.05)
    action = A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1")
    for _ in range(2):
        with pytest.raises(AnswerTimeout):
            await gw.submit(action, "T1", "seat-1", role="dealer")
    assert [c.command_id for _, _, c in mb.sent] == [command_id_for("console", "T1", "seat-1")] * 2


async def test_wrong_role_and_bad_input_send_nothing():
    gw, mb, _ = gateway()
    with pytest.raises(Forbidden, match="cage role may not send open_round"):
        await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id="S1"), "T1", "r1", role="cage")
    with pytest.raises(Forbidden):
        await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id="R1"), "T1", "r2", role="bettor")
    with pytest.raises(BadRequest) as e:
        await gw.submit(A.OpenTableAction(actor=DEALER, profile="baccarat_en_banque"), "T1", "r3", role="dealer")
    assert e.value.reason == "unknown_profile" and e.value.status == 422
    with pytest.raises(BadRequest) as e:
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p"), "T 1", "r4", role="dealer")
    assert e.value.reason == "out_of_bounds" and e.value.field == "$.table_id"
    with pytest.raises(BadRequest) as e:
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p"), "T1", "bad id!", role="dealer")
    assert e.value.reason == "invalid_request_id"
    assert mb.sent == []


def test_a_decision_read_from_kafka_is_whole_only_once_the_reader_caught_up():
    from contracts.envelope import Envelope
    from contracts.events import CommissionCollected

    idx = EventIndex()
    at = datetime(2026, 12, 1, tzinfo=timezone.utc)

    def ev(seq: int, player: str) -> Envelope:
        return Envelope(event_id=f"e{seq}", stream=T.SETTLEMENT_EVENTS, table_id="T1", seq=seq, causation_id="c1",
                        correlation_id="T1", occurred_at=at,
                        payload=CommissionCollected(seat=1, player_id=player, amount_cents=25))

    idx.add(ev(1, "a"), tp="p3", fetch=7)
    assert idx.caused("T1", T.SETTLEMENT_EVENTS, "c1") == ([ev(1, "a")], False)
    idx.caught_up("p3", 6)  # an earlier fetch: says nothing of this one
    assert idx.caused("T1", T.SETTLEMENT_EVENTS, "c1")[1] is False
    idx.add(ev(2, "b"), tp="p3", fetch=8)
    idx.add(ev(2, "b"), tp="p3", fetch=8)  # re-delivered: the same event
    idx.caught_up("p3", 8)
    evs, whole = idx.caused("T1", T.SETTLEMENT_EVENTS, "c1")
    assert whole and [e.payload.player_id for e in evs] == ["a", "b"]


def test_writers_connect_as_the_topic_principals_on_a_secured_broker(tmp_path):
    plain = Settings()
    assert writer_settings(plain, {}) == {}
    admin = plain.as_principal("admin", "pw-admin")
    creds = tmp_path / "credentials.env"
    creds.write_text("CROUPIER_KAFKA_PASSWORD_CONSOLE=pw-console\nCROUPIER_KAFKA_PASSWORD_BETTOR=pw-bettor\n")
    w = writer_settings(admin, {"KAFKA_CREDENTIALS_FILE": str(creds)})
    assert {k: (s.sasl_username, s.sasl_password) for k, s in w.items()} == \
        {"console": ("console", "pw-console"), "bettor": ("bettor", "pw-bettor")}
    console = plain.as_principal("console", "pw-c")
    with pytest.raises(MissingWriterCredential, match="CROUPIER_KAFKA_PASSWORD_BETTOR"):
        writer_settings(console, {})
    w = writer_settings(console, {"CROUPIER_KAFKA_PASSWORD_BETTOR": "pw-b"})
    assert w["console"] is console and w["bettor"].sasl_username == "bettor"
    # a console action alone needs only the console's credential
    assert writer_settings(console, {}, kinds=("console",)) == {"console": console}
    # an API serving only betting terminals reads as bettor: only the topics that principal may read
    from services.command_api.server import reader_streams

    assert reader_streams({"bettor": w["bettor"]}) == (T.DEALING_EVENTS, T.WAGERING_EVENTS)
    assert reader_streams(w) == reader_streams({}) == (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS,
                                                       T.SETTLEMENT_EVENTS)


# ---- HTTP ----------------------------------------------------------------------------------------------------
def client(gw: CommandGateway, ids: list[str] | None = None) -> httpx.AsyncClient:
    fresh = iter(ids or [f"auto-{i}" for i in range(100)])
    app = create_command_api(gw, TOKENS, new_request_id=lambda: next(fresh), bettors=BETTORS)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api")


def auth(role: str, key: str | None = None, player: str = "p-1") -> dict[str, str]:
    """Headers of ``role``'s token (``bettor``: ``player``'s terminal) and the request id ``key``."""
    h = {"Authorization": f"Bearer {BETTOR_OF[player] if role == 'bettor' else TOKENS[role]}"}
    if key:
        h["Idempotency-Key"] = key
    return h


async def test_http_answers_statuses_and_retries_identically():
    gw, mb, _ = gateway()
    async with client(gw) as c:
        r = await c.post("/tables/T1/open", json={"actor": DEALER, "profile": "punto_banco"}, headers=auth("dealer", "o1"))
        assert r.status_code == 200 and r.json()["events"][0]["payload"]["type"] == "table_opened"
        r = await c.post("/tables/T1/shoe", json={"actor": DEALER, "cut_at": 100}, headers=auth("dealer", "s1"))
        shoe_id = r.json()["shoe_id"]
        r = await c.post("/tables/T1/seats", json={"actor": DEALER, "seat": 1, "player_id": "p-1"},
                         headers=auth("pit", "seat1"))
        assert r.status_code == 200
        r1 = await c.post("/tables/T1/rounds", json={"actor": DEALER, "shoe_id": shoe_id}, headers=auth("dealer", "r1"))
        sent = len(mb.sent)
        r2 = await c.post("/tables/T1/rounds", json={"actor": DEALER, "shoe_id": shoe_id}, headers=auth("dealer", "r1"))
        assert (r1.status_code, r1.content) == (r2.status_code, r2.content) and len(mb.sent) == sent
        round_id = r1.json()["round_id"]
        # a cage token cannot open a round; a dealer cannot bet; no token is a 401
        r = await c.post("/tables/T1/rounds", json={"actor": DEALER, "shoe_id": shoe_id}, headers=auth("cage", "r9"))
        assert r.status_code == 403 and r.json()["detail"]["reason"] == "role_not_allowed"
        bet = {"round_id": round_id, "seat": 1, "player_id": "p-1", "wager": "banker", "amount_cents": 2500}
        assert (await c.post("/tables/T1/bets", json=bet, headers=auth("dealer", "b0"))).status_code == 403
        r = await c.post("/tables/T1/bets", json=bet)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert len(mb.sent) == sent
        # 422 naming the field; a rejection is a 409 with the reason code
        r = await c.post("/tables/T1/bets", json={**bet, "amount_cents": -5}, headers=auth("bettor", "b1"))
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "amount_cents"]
        r = await c.post("/tables/T1/bets", json={**bet, "seat": 4}, headers=auth("bettor", "b2"))
        assert r.status_code == 409 and r.json()["reason"] == "unknown_player"
        ok = await c.post("/tables/T1/bets", json=bet, headers=auth("bettor", "b3"))
        assert ok.status_code == 200 and ok.json()["bet_id"]
        r = await c.post("/tables/T1/bets", json={**bet, "amount_cents": 5000}, headers=auth("bettor", "b3"))
        assert r.status_code == 409 and r.json()["detail"]["reason"] == "request_id_reused"
        r = await c.post("/tables/T1/rounds/no-more-bets", json={"actor": DEALER, "round_id": round_id},
                         headers=auth("dealer", "n1"))
        assert r.status_code == 200 and [b["amount_cents"] for b in r.json()["events"][0]["payload"]["bets"]] == [2500]
        view = await c.get(f"/tables/T1/rounds/{round_id}", headers=auth("cage"))
        assert view.status_code == 200 and view.json()["status"] == "settled"
        assert (await c.get(f"/tables/T1/rounds/{round_id}", headers=auth("bettor"))).status_code == 403
        late = await c.post("/tables/T1/bets", json=bet, headers=auth("bettor", "b4"))
        assert late.status_code == 409 and late.json()["reason"] == "betting_closed"
        # without a key the API makes one (so the request cannot be retried safely) and says which
        r = await c.post("/tables/T1/seats", json={"actor": DEALER, "seat": 2, "player_id": "p-2"}, headers=auth("dealer"))
        assert r.json()["request_id"] == "auto-0"
    idle = CommandGateway(MemoryCommandBus(MemoryBus()), Clock(), timeout_s=5)  # no service listens
    async with client(idle) as c:
        r = await c.post("/tables/T1/open", json={"actor": DEALER, "profile": "punto_banco"},
                         headers=auth("dealer", "x1"), params={"wait_ms": 30})
        assert r.status_code == 504 and r.json()["detail"]["reason"] == "timeout"
        assert "may still be decided" in r.json()["detail"]["detail"]


async def test_openapi_declares_the_bearer_scheme_and_there_is_no_default_credential():
    gw, _, _ = gateway()
    async with client(gw) as c:
        doc = (await c.get("/openapi.json")).json()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer",
        "description": "A role's API token (CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE), or a betting "
                       "terminal's bettor credential (bettor:<player_id>=<token>)"}
    post = doc["paths"]["/tables/{table_id}/bets"]["post"]
    assert post["security"] == [{"bearer": []}] and "Roles: bettor." in post["description"]
    with pytest.raises(NoCredentials):
        create_command_api(gw, {})
    with pytest.raises(ValueError, match="unknown role"):
        create_command_api(gw, {"croupier": "x" * 20})


async def test_the_same_request_twice_at_once_sends_one_command_and_both_get_its_answer():
    import asyncio

    gw, mb, _ = gateway()
    await open_table_with_shoe(gw)
    send = mb.send

    async def slow_send(topic, cmd, writer, timeout_s=None):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.02)  # the broker's round trip: the second request comes meanwhile
        await send(topic, cmd, writer, timeout_s)

    mb.send = slow_send  # type: ignore[method-assign]
    sent = len(mb.sent)
    action = A.SeatPlayerAction(actor=DEALER, seat=4, player_id="p-4")
    a, b = await asyncio.gather(gw.submit(action, "T1", "seat-4", role="dealer"),
                                gw.submit(action, "T1", "seat-4", role="pit"))
    assert a == b and a.accepted and len(mb.sent) == sent + 1


async def test_a_stake_in_dollars_is_placed_in_cents_and_a_bad_one_is_a_422_in_words():
    gw, mb, _ = gateway()
    shoe_id = await open_table_with_shoe(gw)
    assert (await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "seat-1")).accepted
    round_id = (await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "r1")).round_id
    bet = {"round_id": round_id, "seat": 1, "player_id": "p-1", "wager": "banker"}
    async with client(gw) as c:
        sent = len(mb.sent)
        for key, typed in (("b1", "25.555"), ("b2", "abc"), ("b3", "1,00")):
            r = await c.post("/tables/T1/bets", json={**bet, "amount": typed}, headers=auth("bettor", key))
            assert r.status_code == 422, r.text
            assert ("fraction of a cent" if key == "b1" else "not an amount in dollars") in r.json()["detail"][0]["msg"]
        assert len(mb.sent) == sent  # nothing sent
        placed = []
        for key, typed in (("b4", "25.50"), ("b5", "$1,000"), ("b6", "2500.00")):
            r = await c.post("/tables/T1/bets", json={**bet, "amount": typed}, headers=auth("bettor", key))
            assert r.status_code == 200, r.text
            placed.append(r.json()["events"][0]["payload"]["amount_cents"])
    assert placed == [2550, 100000, 250000]


async def test_a_round_read_from_its_settlement_first_is_shown_whole():
    """issue 24 (6): the reader fetched settlement.events before the round's dealing and wagering events (the
    partitions are fetched in no set order); the round's view waits for the reader to catch up with every
    partition before answering, so a settled round is never shown without its shoe, cards and result."""
    gw, mb, _ = gateway()
    shoe_id = await open_table_with_shoe(gw)
    rnd = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "r1")
    await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id=rnd.round_id), "T1", "n1")
    whole = mb.index.round_events("T1", rnd.round_id)
    late = [e for e in whole if e.stream != T.SETTLEMENT_EVENTS]
    assert late and len(late) < len(whole)

    class SettlementFirst:
        """A Kafka-like reader that has fetched the settlement partition, not yet the others."""

        def __init__(self) -> None:
            self.index = EventIndex()
            for e in whole:
                if e.stream == T.SETTLEMENT_EVENTS:
                    self.index.add(e, tp="settlement", fetch=1)

        async def settle(self) -> None:
            return None

        async def catch_up(self, timeout_s: float) -> None:
            for e in late:  # the other partitions, up to where they ended when asked
                self.index.add(e, tp="dealing", fetch=2)

    reader = CommandGateway(SettlementFirst(), Clock(), timeout_s=1)  # type: ignore[arg-type]
    view = await reader.round_view("T1", rnd.round_id, wait_s=1)
    assert view["status"] == "settled" and view["shoe_id"] == shoe_id
    assert len(view["cards"]) >= 4 and view["result"] is not None and view["bets"] == []


def test_the_index_forgets_the_oldest_causes_and_rounds_first():
    from contracts.envelope import Envelope
    from contracts.events import BettingOpened

    idx = EventIndex(causes_kept=2, rounds_kept=1)
    at = datetime(2026, 12, 1, tzinfo=timezone.utc)
    for n in (1, 2, 3):
        idx.add(Envelope(event_id=f"e{n}", stream=T.WAGERING_EVENTS, table_id="T1", seq=n, causation_id=f"c{n}",
                         correlation_id="T1", occurred_at=at, round_id=f"R{n}", payload=BettingOpened(round_id=f"R{n}")))
    assert [bool(idx.caused("T1", T.WAGERING_EVENTS, f"c{n}")[0]) for n in (1, 2, 3)] == [False, True, True]
    assert [len(idx.round_events("T1", f"R{n}")) for n in (1, 2, 3)] == [0, 0, 1]


async def test_a_broker_that_does_not_take_the_command_is_a_503_and_a_retry_may_follow():
    from aiokafka.errors import KafkaConnectionError

    gw, mb, _ = gateway()
    assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco"), "T1", "open-1")).accepted

    async def down(topic, cmd, writer, timeout_s=None):  # type: ignore[no-untyped-def]
        raise KafkaConnectionError("no broker")

    mb.send = down  # type: ignore[method-assign]
    async with client(gw) as c:
        r = await c.post("/tables/T1/seats", json={"actor": DEALER, "seat": 1, "player_id": "p-1"},
                         headers=auth("dealer", "seat-1"))
    assert r.status_code == 503 and r.json()["detail"]["reason"] == "broker_unavailable"
    assert "retry with the same request id" in r.json()["detail"]["detail"]
    del mb.send  # the broker is back: the retry is sent and answered
    answer = await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "seat-1", role="dealer")
    assert answer.accepted and types(answer) == ["player_seated"]


async def test_a_physical_shoe_withdrawals_a_void_and_commission_through_the_gateway():
    gw, mb, _ = gateway()
    assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco_basic"), "T1", "o")).accepted
    shoe = await gw.submit(A.LoadShoeAction(actor=DEALER, physical=True, cut_at=40), "T1", "s")
    assert types(shoe) == ["shoe_loaded", "shoe_cut"] and shoe.events[0]["payload"]["source"] == "physical"
    burn = await gw.submit(A.ReadBurnAction(actor=DEALER, shoe_id=shoe.shoe_id, exposed="5s",
                                            burned=["2c", "3c", "4c", "6c"]), "T1", "b")
    assert (burn.status, burn.reason) == ("rejected", "burn_count_mismatch")
    burn = await gw.submit(A.ReadBurnAction(actor=DEALER, shoe_id=shoe.shoe_id, exposed="5s",
                                            burned=["2c", "3c", "4c", "6c", "7c"]), "T1", "b2")
    assert types(burn) == ["shoe_burned"] and burn.events[0]["payload"]["burned_count"] == 5
    for seat, player in ((1, "p-1"), (2, "p-2")):
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=seat, player_id=player), "T1", f"seat-{seat}")
    rnd = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe.shoe_id, round_id="R1"), "T1", "r1")
    bet = await gw.submit(A.PlaceBetAction(round_id="R1", seat=1, player_id="p-1", wager="player",
                                           amount_cents=5_000), "T1", "bet-1")
    theirs = await gw.submit(A.WithdrawBetAction(round_id="R1", bet_id=bet.bet_id, player_id="p-2"), "T1", "w-0")
    assert (theirs.status, theirs.reason) == ("rejected", "not_your_bet")
    mine = await gw.submit(A.WithdrawBetAction(round_id="R1", bet_id=bet.bet_id, player_id="p-1"), "T1", "w-1")
    assert types(mine) == ["bet_withdrawn"] and mine.bet_id == bet.bet_id
    await gw.submit(A.PlaceBetAction(round_id="R1", seat=2, player_id="p-2", wager="banker", amount_cents=10_000),
                    "T1", "bet-2")
    assert types(await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id=rnd.round_id), "T1", "n1")) == \
        ["betting_closed"]
    # the reader reports each card as it comes out: Player 9 + K, Banker 2 + 3: a natural 9, the Player wins
    for n, card in enumerate(["9h", "2c", "Kd", "3d"], 1):
        read = await gw.submit(A.ReadCardAction(actor=DEALER, shoe_id=shoe.shoe_id, round_id="R1", card_number=n,
                                                card=card), "T1", f"card-{n}")
        assert types(read) == ["card_drawn"] and read.events[0]["payload"]["card"] == card
    view = await gw.round_view("T1", "R1")
    assert (view["status"], view["result"]["winner"], view["result"]["player_points"]) == ("settled", "player", 9)
    assert [(c["hand"], c["card"], c["rule"]) for c in view["cards"]] == [
        ("player", "9h", "initial"), ("banker", "2c", "initial"), ("player", "Kd", "initial"),
        ("banker", "3d", "initial")]
    assert [(w["bet_id"], w["reason"]) for w in view["withdrawn"]] == [(bet.bet_id, "")]
    assert [(s["player_id"], s["result"], s["payout"]) for s in view["settlements"]] == [("p-2", "lose", 0)]
    refused = await gw.submit(A.ReadCardAction(actor=DEALER, shoe_id=shoe.shoe_id, round_id="R2", card_number=1,
                                               card="Zz"), "T1", "card-x")
    assert (refused.status, refused.reason, types(refused)) == ("rejected", "card_read_refused", ["card_read_refused"])
    assert "unknown rank 'Zz'" in refused.detail
    nothing = await gw.submit(A.CollectCommissionAction(actor=DEALER, seat=2, player_id="p-2"), "T1", "c1")
    assert (nothing.status, nothing.reason) == ("rejected", "nothing_owed")
    r2 = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe.shoe_id, round_id="R2"), "T1", "r2")
    void = await gw.submit(A.VoidRoundAction(actor=DEALER, round_id=r2.round_id, reason="card exposed"), "T1", "v")
    assert types(void) == ["round_voided"] and void.events[0]["payload"]["reason"] == "card exposed"


class _SplitBus:
    """A broker whose answer comes in two fetches: ``first`` events, then after a moment ``then``."""

    def __init__(self, make):  # type: ignore[no-untyped-def]
        self.index = EventIndex()
        self.index.tables.add("T1")
        self.make = make
        self.sent: list = []  # type: ignore[type-arg]

    async def send(self, topic, cmd, writer, timeout_s=None):  # type: ignore[no-untyped-def]
        import asyncio

        self.sent.append(cmd)
        first, then = self.make(cmd)

        async def deliver() -> None:
            for e in first:
                self.index.add(e, tp="p0", fetch=1)
            await self.index.notify()
            await asyncio.sleep(0.05)
            for e in then:
                self.index.add(e, tp="p0", fetch=2)
            await self.index.notify()

        asyncio.get_running_loop().create_task(deliver())

    async def settle(self) -> None:
        return None


def _env(cmd, seq: int, payload, stream: str = T.SHOE_EVENTS):  # type: ignore[no-untyped-def]
    from contracts.envelope import Envelope

    return Envelope(event_id=f"{cmd.command_id}-{seq}", stream=stream, table_id=cmd.table_id, seq=seq,
                    causation_id=cmd.command_id, correlation_id=cmd.table_id,
                    occurred_at=datetime(2026, 12, 1, tzinfo=timezone.utc), payload=payload)


async def test_an_answer_read_in_two_fetches_waits_for_the_decisions_last_event(monkeypatch):
    from contracts.events import CommissionCollected, ShoeBurned, ShoeCut, ShoeLoaded
    from contracts.tables import ShoeSpec
    from services.command_api import gateway as G

    def shoe(cmd):  # type: ignore[no-untyped-def]
        sid = cmd.payload.shoe_id
        return ([_env(cmd, 1, ShoeLoaded(shoe_id=sid, rules=ShoeSpec(), cards=416, source="csprng")),
                 _env(cmd, 2, ShoeCut(shoe_id=sid, cut_at=90))],
                [_env(cmd, 3, ShoeBurned(shoe_id=sid, exposed="4h", burned_count=4, burned=["2c"] * 4))])

    gw = CommandGateway(_SplitBus(shoe), Clock(), timeout_s=2)  # type: ignore[arg-type]
    answer = await gw.submit(A.LoadShoeAction(actor=DEALER, cut_at=90), "T1", "s1")
    assert types(answer) == ["shoe_loaded", "shoe_cut", "shoe_burned"]

    def boxes(cmd):  # type: ignore[no-untyped-def]
        return ([_env(cmd, 1, CommissionCollected(seat=2, player_id="a", amount_cents=125), T.SETTLEMENT_EVENTS)],
                [_env(cmd, 2, CommissionCollected(seat=2, player_id="b", amount_cents=250), T.SETTLEMENT_EVENTS)])

    # a seat's every box: not counted beforehand; whole once the reader caught up, or SETTLE_S after the first
    monkeypatch.setattr(G, "SETTLE_S", 0.2)
    gw = CommandGateway(_SplitBus(boxes), Clock(), timeout_s=2)  # type: ignore[arg-type]
    answer = await gw.submit(A.CollectCommissionAction(actor=DEALER, seat=2), "T1", "c1")
    assert [e["payload"]["player_id"] for e in answer.events] == ["a", "b"]


def test_a_decision_is_whole_once_a_later_event_of_its_stream_is_read():
    from contracts.envelope import Envelope
    from contracts.events import PlayerSeated

    idx = EventIndex()
    at = datetime(2026, 12, 1, tzinfo=timezone.utc)
    for seq, cause in ((1, "c1"), (2, "c1"), (3, "c2")):
        if seq == 3:
            assert idx.caused("T1", T.WAGERING_EVENTS, "c1")[1] is False
        idx.add(Envelope(event_id=f"e{seq}", stream=T.WAGERING_EVENTS, table_id="T1", seq=seq, causation_id=cause,
                         correlation_id="T1", occurred_at=at, payload=PlayerSeated(seat=seq, player_id="p")),
                tp="p0", fetch=seq)
    assert idx.caused("T1", T.WAGERING_EVENTS, "c1")[1] is True
    assert idx.caused("T1", T.WAGERING_EVENTS, "c2")[1] is False


def test_each_action_knows_the_event_its_decision_ends_with():
    def ends(action):  # type: ignore[no-untyped-def]
        return A.to_command(action, "d").ends_with

    assert ends(A.LoadShoeAction(actor=DEALER)) == {"shoe_burned"}
    assert ends(A.LoadShoeAction(actor=DEALER, physical=True)) == {"shoe_loaded"}
    assert ends(A.LoadShoeAction(actor=DEALER, physical=True, cut_at=20)) == {"shoe_cut"}
    assert ends(A.NoMoreBetsAction(actor=DEALER, round_id="R")) == {"betting_closed"}
    assert ends(A.CollectCommissionAction(actor=DEALER, seat=1, player_id="p")) == {"commission_collected"}
    assert ends(A.CollectCommissionAction(actor=DEALER, seat=1)) is None


async def test_openapi_names_each_action_and_types_its_answer():
    gw, _, _ = gateway()
    async with client(gw) as c:
        doc = (await c.get("/openapi.json")).json()
    ops = {op["operationId"]: (path, m) for path, item in doc["paths"].items() for m, op in item.items()}
    assert set(A.ACTIONS) <= set(ops) and ops["no_more_bets"] == ("/tables/{table_id}/rounds/no-more-bets", "post")
    post = doc["paths"]["/tables/{table_id}/bets"]["post"]
    schema = post["responses"]["409"]["content"]["application/json"]["schema"]
    assert {"status", "reason", "detail", "events", "bet_id"} <= set(schema["properties"])
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/PlaceBetAction"}
    stake = doc["components"]["schemas"]["PlaceBetAction"]["properties"]
    assert [a.get("minimum") for a in stake["amount_cents"]["anyOf"]] == [0, None]  # cents, or null...
    assert "Dollars as people write them" in stake["amount"]["anyOf"][0]["description"]  # ...and the dollars given instead


async def test_a_curator_table_offers_passes_and_keeps_the_shoe_through_the_gateway():
    gw, _, _ = gateway()
    assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco_curator"), "T1", "o")).accepted
    for seat, player in ((1, "p-1"), (2, "p-2")):
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=seat, player_id=player), "T1", f"seat-{seat}")
    offered = await gw.submit(A.OfferShoeAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "offer", role="dealer")
    assert types(offered) == ["shoe_offered"] and offered.events[0]["payload"]["player_id"] == "p-1"
    again = await gw.submit(A.OfferShoeAction(actor=DEALER, seat=2, player_id="p-2"), "T1", "offer-2", role="dealer")
    assert (again.status, again.reason) == ("rejected", "curator_holds_shoe")
    with pytest.raises(Forbidden):  # the pit orders a pass, it does not offer the shoe
        await gw.submit(A.OfferShoeAction(actor="fm", seat=2, player_id="p-2"), "T1", "offer-3", role="pit")
    passed = await gw.submit(A.PassShoeAction(actor="floorman-1", ordered_by="floorman"), "T1", "pass", role="pit")
    shoe_passed = passed.events[0]["payload"]
    assert types(passed) == ["shoe_passed"] and (shoe_passed["from_player_id"], shoe_passed["to_player_id"],
                                                 shoe_passed["reason"]) == ("p-1", "p-2", "floorman_ordered")
    kept = await gw.submit(A.KeepShoeAction(actor="p-2", round_id="R0"), "T1", "keep", role="dealer")
    assert (kept.status, kept.reason) == ("rejected", "out_of_turn")


# ---- a request id reused, unknown tables, the pass's order, robustness ---------------------------------------
async def _round_with_a_bet(gw: CommandGateway) -> tuple[str, object]:
    shoe_id = await open_table_with_shoe(gw)
    opened = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "T1", "round-1", role="dealer")
    assert (await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "seat-1")).accepted
    first = await gw.submit(A.PlaceBetAction(round_id=opened.round_id, seat=1, player_id="p-1", wager="player",
                                             amount_cents=5000), "T1", "bet-1", role="bettor", players={"p-1"})
    assert first.accepted and types(first) == ["bet_placed"]
    return opened.round_id, first


async def test_a_reused_request_id_with_another_body_is_409_from_a_fresh_gateway_that_read_the_first():
    from contracts.events import BetPlaced

    gw, _, bus = gateway()
    round_id, first = await _round_with_a_bet(gw)
    # a new process (``croupier table``, a restarted API): its answer cache is empty, its reader reads back
    fresh = MemoryCommandBus(bus)
    gw2 = CommandGateway(fresh, Clock(), timeout_s=0.2)
    other = A.PlaceBetAction(round_id=round_id, seat=1, player_id="p-1", wager="banker", amount_cents=90000)
    with pytest.raises(RequestIdReused, match="'bet-1' was used at table T1 for another request"):
        await gw2.submit(other, "T1", "bet-1", role="bettor", players={"p-1"})
    assert fresh.sent == []  # the first use was read: nothing sent
    # the first request's retry is still answered with its own events, by the same fresh gateway
    again = await gw2.submit(A.PlaceBetAction(round_id=round_id, seat=1, player_id="p-1", wager="player",
                                              amount_cents=5000), "T1", "bet-1", role="bettor", players={"p-1"})
    assert again.accepted and again.events == first.events  # type: ignore[attr-defined]
    assert [(p.wager, p.amount_cents) for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == [("player", 5000)]
    # a wager named as the service does not record it (" Banker ": "banker") is still the same command
    spelt = A.PlaceBetAction(round_id=round_id, seat=1, player_id="p-1", wager=" Banker ", amount_cents=2500)
    assert (await gw.submit(spelt, "T1", "bet-2", role="bettor", players={"p-1"})).accepted
    assert (await CommandGateway(MemoryCommandBus(bus), Clock(), timeout_s=0.2).submit(
        spelt, "T1", "bet-2", role="bettor", players={"p-1"})).events[0]["payload"]["wager"] == "banker"
    # a refused bet records the words sent: its retry from a fresh gateway is the same command too
    odd = A.PlaceBetAction(round_id=round_id, seat=1, player_id="p-1", wager=" Banker ", amount_cents=1)
    refused = await gw.submit(odd, "T1", "bet-3", role="bettor", players={"p-1"})
    assert refused.status == "rejected" and refused.events[0]["payload"]["wager"] == " Banker "
    assert (await CommandGateway(MemoryCommandBus(bus), Clock(), timeout_s=0.2).submit(
        odd, "T1", "bet-3", role="bettor", players={"p-1"})).events == refused.events
    # over HTTP: 409 request_id_reused
    async with client(CommandGateway(MemoryCommandBus(bus), Clock(), timeout_s=0.2)) as c:
        r = await c.post("/tables/T1/bets", json={"round_id": round_id, "seat": 1, "player_id": "p-1",
                                                  "wager": "banker", "amount_cents": 90000},
                         headers=auth("bettor", "bet-1"))
    assert r.status_code == 409 and r.json()["detail"]["reason"] == "request_id_reused"


async def test_a_reused_request_id_learnt_only_from_the_services_refusal_is_409_too():
    from contracts.events import BetPlaced

    gw, _, bus = gateway()
    round_id, _ = await _round_with_a_bet(gw)
    # a reader that starts after the first bet (its events outside the lookback): only the refusal tells
    late = MemoryCommandBus(bus)
    late._seen = {t: len(bus.topics.get(t, [])) for t in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS,
                                                          T.SETTLEMENT_EVENTS)}
    late.index.tables.add("T1")
    gw3 = CommandGateway(late, Clock(), timeout_s=0.5)
    with pytest.raises(RequestIdReused):
        await gw3.submit(A.PlaceBetAction(round_id=round_id, seat=1, player_id="p-1", wager="banker",
                                          amount_cents=90000), "T1", "bet-1", role="bettor", players={"p-1"})
    assert len(late.sent) == 1  # sent (the first use was not read), refused command_id_reused by the service
    assert [(p.wager, p.amount_cents) for p in payloads(bus, T.WAGERING_EVENTS, BetPlaced)] == [("player", 5000)]


async def test_every_request_of_a_round_retried_from_a_fresh_gateway_gets_its_first_answer():
    gw, _, bus = gateway()
    shoe_id = await open_table_with_shoe(gw)
    reqs = [(A.OpenRoundAction(actor=DEALER, shoe_id=shoe_id), "round-1"),
            (A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "seat-1")]
    answers = [await gw.submit(a, "T1", rid) for a, rid in reqs]
    rid = answers[0].round_id
    more = [(A.PlaceBetAction(round_id=rid, seat=1, player_id="p-1", wager="banker", amount_cents=2500), "bet-1"),
            (A.NoMoreBetsAction(actor=DEALER, round_id=rid), "nmb-1"),
            (A.VoidRoundAction(actor=DEALER, round_id="R-none", reason="x"), "void-1")]
    reqs += more
    answers += [await gw.submit(a, "T1", r) for a, r in more]
    reqs = [(A.OpenTableAction(actor=DEALER, profile="punto_banco"), "open-1"),
            (A.LoadShoeAction(actor=DEALER, cut_at=120), "shoe-1")] + reqs
    gw2 = CommandGateway(MemoryCommandBus(bus), Clock(), timeout_s=0.5)
    again = [await gw2.submit(a, "T1", r) for a, r in reqs]
    assert [a.status for a in again[2:]] == [a.status for a in answers] == \
        ["accepted", "accepted", "accepted", "accepted", "rejected"]
    assert [a.events for a in again[2:]] == [a.events for a in answers]
    assert [a.accepted for a in again[:2]] == [True, True]


async def test_a_table_never_opened_is_404_unknown_table_and_nothing_is_sent():
    gw, mb, _ = gateway()
    with pytest.raises(UnknownTable) as e:
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T9", "seat-1", role="dealer")
    assert (e.value.status, e.value.reason, e.value.field) == (404, "unknown_table", "table_id")
    async with client(gw) as c:
        r = await c.post("/tables/T9/rounds", json={"actor": DEALER, "shoe_id": "S1"}, headers=auth("dealer", "r"))
        assert (r.status_code, r.json()["detail"]["reason"]) == (404, "unknown_table")
        assert mb.sent == []
        r = await c.post("/tables/T9/open", json={"actor": DEALER, "profile": "punto_banco"},
                         headers=auth("pit", "o"))
        assert r.status_code == 200 and [e["payload"]["type"] for e in r.json()["events"]] == ["table_opened"]
        r = await c.post("/tables/T9/seats", json={"actor": DEALER, "seat": 1, "player_id": "p-1"},
                         headers=auth("dealer", "s"))
        assert r.status_code == 200 and r.json()["events"][0]["payload"]["type"] == "player_seated"
    assert [cmd.table_id for _, _, cmd in mb.sent] == ["T9", "T9"]


async def test_the_pits_pass_is_the_floormans_order_and_the_dealers_never_the_floormans():
    gw, mb, _ = gateway()
    assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="punto_banco_curator"), "T1", "o")).accepted
    sent = len(mb.sent)
    for role, ordered_by in (("pit", ""), ("pit", "dealer"), ("dealer", "floorman")):
        with pytest.raises(OrderNotAllowed) as e:
            await gw.submit(A.PassShoeAction(actor="x-1", ordered_by=ordered_by), "T1", f"p-{role}-{ordered_by}",
                            role=role)
        assert (e.value.status, e.value.reason, e.value.field) == (403, "ordered_by_not_allowed", "ordered_by")
    assert len(mb.sent) == sent
    async with client(gw) as c:
        r = await c.post("/tables/T1/curator/pass", json={"actor": "fm-1", "ordered_by": "dealer"},
                         headers=auth("pit", "pp"))
        assert (r.status_code, r.json()["detail"]["reason"]) == (403, "ordered_by_not_allowed")
        # allowed orders are sent (and decided by the service: no one holds the shoe yet)
        for role, ordered_by in (("pit", "floorman"), ("dealer", "dealer"), ("dealer", "")):
            r = await c.post("/tables/T1/curator/pass", json={"actor": "x-1", "ordered_by": ordered_by},
                             headers=auth(role, f"ok-{role}-{ordered_by}"))
            assert (r.status_code, r.json()["reason"]) == (409, "no_curator")
    assert [cmd.payload.ordered_by for _, _, cmd in mb.sent[sent:]] == ["floorman", "dealer", ""]


class _FailingConsumer:
    """A reader's consumer whose first fetch fails with a bug (not a Kafka error), then reads nothing."""

    def __init__(self) -> None:
        self.calls = 0

    async def getmany(self, *tps, timeout_ms: int = 0):  # type: ignore[no-untyped-def]
        import asyncio

        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(0.01)
        return {}

    def last_stable_offset(self, tp):  # type: ignore[no-untyped-def]
        return None


async def test_the_reader_survives_a_non_kafka_failure_logs_it_and_requests_answer_503(monkeypatch, capsys):
    import asyncio

    from services.command_api import bus as B
    from services.command_api import gateway as G

    monkeypatch.setattr(B, "READ_RETRY_S", 0.3)
    kb = G.KafkaCommandBus(Settings())
    kb._consumer = _FailingConsumer()  # type: ignore[assignment]
    kb.index.tables.add("T1")
    sent: list = []  # type: ignore[type-arg]

    async def send(topic, cmd, writer, timeout_s=None):  # type: ignore[no-untyped-def]
        sent.append(cmd)

    kb.send = send  # type: ignore[method-assign]
    task = asyncio.create_task(kb._read([]))
    await asyncio.sleep(0.05)
    assert kb.index.reader_error == "RuntimeError: boom" and not task.done()
    gw = CommandGateway(kb, Clock(), timeout_s=5)
    with pytest.raises(G.ReaderFailed) as e:
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "seat-1")
    assert (e.value.status, e.value.reason) == (503, "reader_failed") and sent == []
    assert "RuntimeError: boom" in e.value.detail
    await asyncio.sleep(0.4)  # the retry fetch reads cleanly: the failure is cleared, the reader still runs
    assert kb.index.reader_error is None and not task.done() and kb._consumer.calls > 1  # type: ignore[attr-defined]
    task.cancel()
    logged = [line for line in capsys.readouterr().err.splitlines() if "command_api_read_failed" in line]
    assert logged and "RuntimeError: boom" in logged[0]


async def test_a_request_waiting_when_the_reader_fails_answers_503_not_504():
    import asyncio

    mb = MemoryCommandBus(MemoryBus())  # no service: no answer would ever come
    mb.index.tables.add("T1")
    gw = CommandGateway(mb, Clock(), timeout_s=5)

    async def fail_soon() -> None:
        await asyncio.sleep(0.05)
        mb.index.reader_error = "RuntimeError: boom"
        await mb.index.notify()

    t = asyncio.create_task(fail_soon())
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(ReaderFailed, match="may still be decided"):
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T1", "seat-1")
    assert loop.time() - began < 1.0 and len(mb.sent) == 1
    await t


async def test_an_unexpected_failure_is_a_json_500_with_a_reason_code_and_logged(capsys):
    gw, _, _ = gateway()

    async def broken(*a, **kw):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    gw.submit = broken  # type: ignore[method-assign]
    async with client(gw) as c:
        r = await c.post("/tables/T1/seats", json={"actor": DEALER, "seat": 1, "player_id": "p-1"},
                         headers=auth("dealer", "seat-1"))
    assert r.status_code == 500 and r.json()["detail"]["reason"] == "internal_error"
    assert "retry with the same Idempotency-Key" in r.json()["detail"]["detail"]
    logged = [line for line in capsys.readouterr().err.splitlines() if "command_api_internal_error" in line]
    assert len(logged) == 1 and "KeyError" in logged[0] and '"request_id": "seat-1"' in logged[0]


async def test_the_kafka_reader_knows_every_table_opened_in_the_log_before_it_started(monkeypatch):
    from types import SimpleNamespace

    from contracts.codecs import encode
    from contracts.events import PlayerSeated, TableOpened
    from services.command_api import bus as B
    from services.command_api import gateway as G

    config = A.to_command(A.OpenTableAction(actor=DEALER, profile="punto_banco"), "x").command.config  # type: ignore[attr-defined]
    cmd = SimpleNamespace(command_id="c", table_id="T1")
    log = [encode(_env(cmd, 1, TableOpened(config=config), T.DEALING_EVENTS)),
           encode(_env(SimpleNamespace(command_id="c2", table_id="T2"), 1,
                       PlayerSeated(seat=1, player_id="p"), T.DEALING_EVENTS)),
           b"not an event"]

    class Scan:
        """dealing.events partition 0 holding ``log``, read two records a fetch."""

        def __init__(self, **kw):  # type: ignore[no-untyped-def]
            self.at, self.stopped = 0, False

        async def start(self) -> None: ...
        async def stop(self) -> None:
            self.stopped = True

        def assign(self, tps):  # type: ignore[no-untyped-def]
            self.tps = tps

        async def seek_to_beginning(self, *tps):  # type: ignore[no-untyped-def]
            self.at = 0

        async def end_offsets(self, tps):  # type: ignore[no-untyped-def]
            return {tp: len(log) for tp in tps}

        async def getmany(self, *tps, timeout_ms=0):  # type: ignore[no-untyped-def]
            recs = [SimpleNamespace(value=v, offset=i) for i, v in enumerate(log)][self.at:self.at + 2]
            self.at += len(recs)
            return {self.tps[0]: recs}

        async def position(self, tp):  # type: ignore[no-untyped-def]
            return self.at

    made: list[Scan] = []
    monkeypatch.setattr(B, "AIOKafkaConsumer", lambda **kw: made.append(Scan(**kw)) or made[-1])
    kb = G.KafkaCommandBus(Settings())
    await kb._scan_tables(Settings(), [0])
    assert kb.index.tables == {"T1"} and kb.index.tables_complete and made[0].stopped
    assert [tp.topic for tp in made[0].tps] == [Settings().topic(T.DEALING_EVENTS)]
    gw = CommandGateway(kb, Clock(), timeout_s=0.1)
    with pytest.raises(UnknownTable):
        await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), "T2", "seat-1")
