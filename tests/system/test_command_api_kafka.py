"""The command API against a real broker: a table opened from a profile, a shuffled shoe, a full round
through the HTTP API (seat, bet, "No more bets", the dealing service deals) and its settlement; a retried
request answered identically with no second command on the topic, a wrong role refused 403, a late bet
answered with its rejection reason ``betting_closed``; the log audited clean. A chemin de fer table opened from
its profile deals two rounds through it (the bank, wagers and a banco, an option decided by its controller's
terminal and one expired by the table clock), audited clean."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timezone

import httpx
import pytest

from contracts import topics as T
from contracts.codecs import Undecodable, UnknownMessageType, decode_command, decode_event
from contracts.envelope import Envelope
from contracts.events import BetPlaced, BetSettled, RoundSettled
from croupier.audit import audit
from services.command_api.gateway import CommandGateway, KafkaCommandBus
from services.command_api.http import create_command_api
from services.runtime.app import Service, build_service
from services.rawlog import read_topic as read_log
from services.runtime.kafka import ensure_topics
from tests.services.helpers import make_cores
from tests.system.conftest import broker_settings

TOKENS = {"dealer": "dealer-token-0123456789", "cage": "cage-token-01234567890"}
#: the betting terminal of player p-1: a bettor credential bound to p-1
P1_TERMINAL = "terminal-p-1-0123456789"
TABLE = "CA1"
DEALER = "dealer-ana"


def _now() -> datetime:
    return datetime.now(timezone.utc)


class ApiFloor:
    """The four services in this process on the broker, under a topic prefix of their own, and the command
    API's gateway over them."""

    def __init__(self, bootstrap: str, prefix: str | None = None):
        self.settings = broker_settings(bootstrap, topic_prefix=prefix or f"capi{uuid.uuid4().hex[:8]}.")
        self.services: list[Service] = []
        self.bus = KafkaCommandBus(self.settings)
        self.gateway = CommandGateway(self.bus, _now, timeout_s=30.0)

    async def start(self) -> None:
        await ensure_topics(self.settings, T.ALL_TOPICS)
        for name, core in make_cores(seed=23).items():
            extra = (T.SHOE_DRAWS,) if name == "dealing" else ()
            svc = build_service(core, self.settings, extra_topics=extra)  # type: ignore[arg-type]
            await svc.start()
            await svc.wait_ready()
            self.services.append(svc)
        await self.bus.start()

    async def stop(self) -> None:
        await self.bus.stop()
        for svc in reversed(self.services):
            await svc.stop()

    async def log(self) -> list[Envelope]:
        out = []
        for stream in (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS):
            for rec in await read_log(self.settings, self.settings.topic(stream)):
                try:  # a secured broker's prefix is shared with test_acl, which writes raw probes there
                    out.append(decode_event(rec.value))
                except (Undecodable, UnknownMessageType):
                    continue
        return out


@pytest.fixture
async def floor(kafka_bootstrap: str) -> AsyncIterator[ApiFloor]:
    f = ApiFloor(kafka_bootstrap)
    await f.start()
    try:
        yield f
    finally:
        await f.stop()


def auth(role: str, key: str) -> dict[str, str]:
    """``role``'s token (``bettor``: p-1's terminal) and the request id ``key``."""
    return {"Authorization": f"Bearer {P1_TERMINAL if role == 'bettor' else TOKENS[role]}", "Idempotency-Key": key}


async def test_a_round_through_the_command_api_on_kafka(floor: ApiFloor):
    app = create_command_api(floor.gateway, TOKENS, bettors={P1_TERMINAL: {"p-1"}})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api", timeout=60) as c:
        r = await c.post(f"/tables/{TABLE}/open", json={"actor": DEALER, "profile": "punto_banco"},
                         headers=auth("dealer", "open"))
        assert r.status_code == 200, r.text
        config = r.json()["events"][0]["payload"]["config"]
        assert (config["variant"], config["wagers"]) == ("punto_banco", [
            "banker", "bonus_banker", "bonus_player", "cards_4", "cards_5", "cards_6", "player", "tie"])
        r = await c.post(f"/tables/{TABLE}/shoe", json={"actor": DEALER, "cut_at": 200}, headers=auth("dealer", "shoe"))
        assert r.status_code == 200, r.text
        shoe = r.json()
        # the whole decision, read over Kafka: loaded (with its commitment), cut, burned
        assert [e["payload"]["type"] for e in shoe["events"]] == ["shoe_loaded", "shoe_cut", "shoe_burned"]
        assert len(shoe["events"][0]["payload"]["commitment"]) == 64 and shoe["events"][1]["payload"]["cut_at"] == 200
        assert {e["principal"] for e in shoe["events"]} == {"console"} and "burned" not in shoe["events"][2]["payload"]
        r = await c.post(f"/tables/{TABLE}/seats", json={"actor": DEALER, "seat": 1, "player_id": "p-1"},
                         headers=auth("dealer", "seat-1"))
        assert r.status_code == 200 and r.json()["events"][0]["payload"]["type"] == "player_seated"
        r = await c.post(f"/tables/{TABLE}/rounds", json={"actor": DEALER, "shoe_id": shoe["shoe_id"]},
                         headers=auth("dealer", "round-1"))
        assert [e["payload"]["type"] for e in r.json()["events"]] == ["round_opened", "betting_opened"], r.text
        round_id = r.json()["round_id"]
        # a cage token cannot open a round
        r = await c.post(f"/tables/{TABLE}/rounds", json={"actor": DEALER, "shoe_id": shoe["shoe_id"]},
                         headers=auth("cage", "round-2"))
        assert r.status_code == 403 and r.json()["detail"]["reason"] == "role_not_allowed"
        bet = {"round_id": round_id, "seat": 1, "player_id": "p-1", "wager": "banker", "amount_cents": 10_000}
        first = await c.post(f"/tables/{TABLE}/bets", json=bet, headers=auth("bettor", "bet-1"))
        again = await c.post(f"/tables/{TABLE}/bets", json=bet, headers=auth("bettor", "bet-1"))
        assert first.status_code == 200 and (again.status_code, again.content) == (200, first.content)
        bet_id = first.json()["bet_id"]
        assert first.json()["events"][0]["payload"] == {"type": "bet_placed", "round_id": round_id, "bet_id": bet_id,
                                                        "seat": 1, "player_id": "p-1", "wager": "banker",
                                                        "amount_cents": 10_000}
        r = await c.post(f"/tables/{TABLE}/rounds/no-more-bets", json={"actor": DEALER, "round_id": round_id},
                         headers=auth("dealer", "nmb-1"))
        assert r.status_code == 200 and [b["bet_id"] for b in r.json()["events"][0]["payload"]["bets"]] == [bet_id]
        view = (await c.get(f"/tables/{TABLE}/rounds/{round_id}", params={"wait_ms": 30_000},
                            headers=auth("dealer", "view"))).json()
        assert view["status"] == "settled", view
        late = await c.post(f"/tables/{TABLE}/bets", json={**bet, "amount_cents": 5_000},
                            headers=auth("bettor", "bet-late"))
        assert late.status_code == 409 and late.json()["reason"] == "betting_closed", late.text
        r = await c.post(f"/tables/{TABLE}/shoe/close", json={"actor": DEALER, "shoe_id": shoe["shoe_id"]},
                         headers=auth("dealer", "close"))
        assert r.status_code == 200 and len(r.json()["events"][0]["payload"]["order"]) == 416
    log = [e for e in await floor.log() if e.table_id == TABLE]
    settled = [e.payload for e in log if isinstance(e.payload, BetSettled)]
    assert [(s.bet_id, s.stake, s.payout) for s in settled] == \
        [(s["bet_id"], s["stake"], s["payout"]) for s in view["settlements"]] and settled[0].stake == 10_000
    total = next(e.payload for e in log if isinstance(e.payload, RoundSettled))
    assert (view["settled"]["stakes"], view["settled"]["payouts"]) == (total.stakes, total.payouts)
    assert len(view["cards"]) == len(view["result"]["player_cards"]) + len(view["result"]["banker_cards"])
    # the retry sent no second command: one record of the bet's command id on wagering.bets, one bet placed
    bets_topic = [decode_command(r.value) for r in await read_log(floor.settings, floor.settings.topic(T.WAGERING_BETS))]
    assert [c.command_id for c in bets_topic].count(bet_id) == 1 and len(bets_topic) == 2
    assert [e.payload.bet_id for e in log if isinstance(e.payload, BetPlaced)] == [bet_id]
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert (rep.rounds_checked, rep.bets_checked, rep.shoes_verified) == (1, 1, 1)


async def test_croupier_table_sends_through_the_same_gateway_and_a_retry_prints_the_same_answer(
        kafka_bootstrap: str, request: pytest.FixtureRequest):
    import asyncio
    import os
    import sys

    from services.runtime.settings import Settings

    # .ci/run's second run (a secured session broker): the command line writes as console and bettor, which may
    # write only under prefixes with their ACLs: the secured broker's own prefix (a unique table id there)
    prefix = request.getfixturevalue("secured_kafka").prefix if Settings.from_env().secured else None
    table = f"CL{uuid.uuid4().hex[:6]}"
    floor = ApiFloor(kafka_bootstrap, prefix)
    await floor.start()

    async def croupier(*args: str) -> tuple[int, str, str]:
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": floor.settings.bootstrap_servers}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "croupier.cli", "table", *args, "--table", table,
            "--prefix", floor.settings.topic_prefix, "--timeout", "60", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return proc.returncode or 0, out.decode(), err.decode()

    try:
        opened = await croupier("open", "--actor", DEALER, "--profile", "no_vig_dragon_7", "--request-id", "cli-open")
        assert opened[0] == 0 and opened[1] == f"accepted open_table at {table}: table_opened\n", opened
        first = await croupier("seat", "--actor", DEALER, "--seat", "3", "--player", "p-3", "--request-id",
                               "cli-seat", "--json")
        again = await croupier("seat", "--actor", DEALER, "--seat", "3", "--player", "p-3", "--request-id",
                               "cli-seat", "--json")
        assert first[0] == again[0] == 0 and first[1] == again[1], (first, again)
        # a bet on a round that is not open: rejected with its reason, exit 2
        bet = await croupier("bet", "--round", "no-such-round", "--seat", "3", "--player", "p-3", "--wager",
                             "banker", "--amount-cents", "5000", "--request-id", "cli-bet")
        assert bet[0] == 2 and bet[1].startswith(f"rejected place_bet at {table}: bet_rejected"), bet
        assert "error: rejected unknown_round" in bet[2], bet
        log = [e for e in await floor.log() if e.table_id == table]
    finally:
        await floor.stop()
    assert [type(e.payload).__name__ for e in log if e.payload.__class__.__name__ in
            ("TableOpened", "PlayerSeated")] == ["TableOpened", "PlayerSeated"]
    seated = [e for e in log if type(e.payload).__name__ == "PlayerSeated"]
    assert (seated[0].principal, seated[0].actor) == ("console", DEALER)
    bets = [e for e in log if type(e.payload).__name__ == "BetRejected"]
    assert [(e.principal, e.actor, e.payload.reason) for e in bets] == [("bettor", "p-3", "unknown_round")]


async def test_on_a_secured_broker_each_topic_is_written_as_its_one_writer_principal(secured_kafka):
    """The services under their own principals, the command API writing the console's topics as ``console``
    and the bets as ``bettor`` (passwords from the credentials file ``kafka.sh start --secure`` writes) and
    reading as ``console``."""
    from services.command_api.gateway import writer_settings

    broker = secured_kafka
    table = f"CS{uuid.uuid4().hex[:6]}"  # the prefix is shared with test_acl and test_floor_secured
    writers = writer_settings(broker.settings("surveillance"),
                              {"KAFKA_CREDENTIALS_FILE": str(broker.data_dir / "credentials.env")})
    assert {k: s.sasl_username for k, s in writers.items()} == {"console": "console", "bettor": "bettor"}
    await ensure_topics(broker.settings("admin"), T.ALL_TOPICS)
    services: list[Service] = []
    bus = KafkaCommandBus(broker.settings("surveillance"), writers)
    try:
        for name, core in make_cores(seed=29).items():
            extra = (T.SHOE_DRAWS,) if name == "dealing" else ()
            svc = build_service(core, broker.settings(name), extra_topics=extra)  # type: ignore[arg-type]
            await svc.start()
            services.append(svc)
        await bus.start()
        gw = CommandGateway(bus, _now, timeout_s=60.0)
        from services.command_api import actions as A

        assert (await gw.submit(A.OpenTableAction(actor=DEALER, profile="casino_night"), table, "o", role="dealer")).accepted
        shoe = await gw.submit(A.LoadShoeAction(actor=DEALER, cut_at=50), table, "s", role="dealer")
        assert [e["payload"]["type"] for e in shoe.events] == ["shoe_loaded", "shoe_cut", "shoe_burned"]
        assert (await gw.submit(A.SeatPlayerAction(actor=DEALER, seat=1, player_id="p-1"), table, "p", role="pit")).accepted
        rnd = await gw.submit(A.OpenRoundAction(actor=DEALER, shoe_id=shoe.shoe_id), table, "r", role="dealer")
        bet = await gw.submit(A.PlaceBetAction(round_id=rnd.round_id, seat=1, player_id="p-1", wager="player",
                                               amount_cents=2_500), table, "b", role="bettor",
                              players={"p-1"})
        close = await gw.submit(A.NoMoreBetsAction(actor=DEALER, round_id=rnd.round_id), table, "n", role="dealer")
        assert bet.accepted and close.accepted, (bet, close)
        assert (bet.events[0]["principal"], bet.events[0]["actor"]) == ("bettor", "p-1")
        assert (close.events[0]["principal"], close.events[0]["actor"]) == ("console", DEALER)
        view = await gw.round_view(table, rnd.round_id, wait_s=60)
        assert view["status"] == "settled" and [s["bet_id"] for s in view["settlements"]] == [bet.bet_id]
    finally:
        await bus.stop()
        for svc in reversed(services):
            await svc.stop()


async def test_a_chemin_de_fer_table_through_the_command_api_on_kafka(floor: ApiFloor):
    """A chemin de fer table opened from its profile (its own option time: 1 s) deals two rounds over HTTP on the
    real broker: the Banker and the bank named at the round's opening, wagers then a banco against it, the
    player_5 option decided by the Dominant Player's own terminal (another terminal refused 403), the banker_3_9
    option left to the table clock's ``expire_option``, the result, each bet's and the bank's settlement; the
    cards are a physical shoe's reads (so the options are known); the log audited clean."""
    import asyncio

    table = f"CF{uuid.uuid4().hex[:6]}"
    bettors = {"terminal-ann-0123456789": {"ann"}, "terminal-ben-0123456789": {"ben"}}
    ann, ben = "terminal-ann-0123456789", "terminal-ben-0123456789"
    app = create_command_api(floor.gateway, TOKENS, bettors=bettors)

    def h(token: str, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Idempotency-Key": key}

    dealer = TOKENS["dealer"]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api", timeout=60) as c:
        async def post(path: str, body: dict, token: str, key: str, status: int = 200) -> dict:  # type: ignore[type-arg]
            r = await c.post(f"/tables/{table}/{path}", json=body, headers=h(token, key))
            assert r.status_code == status, (path, r.text)
            return r.json()  # type: ignore[no-any-return]

        async def pending(round_id: str) -> dict:  # type: ignore[type-arg]
            for _ in range(300):  # the dealing service offers the option once it has read the card
                view = (await c.get(f"/tables/{table}/rounds/{round_id}", headers=h(dealer, "v"))).json()
                if view["option_pending"]:
                    return view["option_pending"]  # type: ignore[no-any-return]
                await asyncio.sleep(0.1)
            raise AssertionError(f"no option offered in {round_id}: {view}")

        async def cards(round_id: str, read: tuple[str, ...], first: int = 1) -> None:
            for n, card in enumerate(read, first):
                got = await post("shoe/cards", {"actor": DEALER, "shoe_id": "PS", "round_id": round_id,
                                                "card_number": n, "card": card}, dealer, f"{round_id}-c{n}")
                assert [e["payload"]["type"] for e in got["events"]] == ["card_drawn"]

        opened = await post("open", {"actor": DEALER, "profile": "chemin_de_fer", "chemin": {"option_seconds": 1}},
                            dealer, "open")
        assert opened["events"][0]["payload"]["config"]["chemin"]["option_seconds"] == 1
        loaded = await post("shoe", {"actor": DEALER, "shoe_id": "PS", "physical": True}, dealer, "shoe")
        assert [e["payload"]["type"] for e in loaded["events"]] == ["shoe_loaded"]
        for seat, player in ((1, "bank-1"), (2, "ann"), (3, "ben")):
            await post("seats", {"actor": DEALER, "seat": seat, "player_id": player}, dealer, f"seat-{seat}")
        # round 1: bank-1's $1,000 bank, ann $300 and ben $500 against it: ben is the Dominant Player
        r1 = await post("rounds", {"actor": DEALER, "shoe_id": "PS", "round_id": "R1", "banker_seat": 1,
                                   "banker_player_id": "bank-1", "bank_cents": 100_000}, dealer, "r1")
        assert [e["payload"]["type"] for e in r1["events"]] == ["round_opened", "betting_opened"]
        for seat, player, token, cents in ((2, "ann", ann, 30_000), (3, "ben", ben, 50_000)):
            await post("bets", {"round_id": "R1", "seat": seat, "player_id": player, "wager": "player",
                                "amount_cents": cents}, token, f"bet-{player}")
        await post("rounds/no-more-bets", {"actor": DEALER, "round_id": "R1"}, dealer, "nmb-1")
        await cards("R1", ("3s", "2s", "2h", "Ks"))
        offer = await pending("R1")
        assert (offer["cell"], offer["player_id"]) == ("player_5", "ben")
        decide = {"round_id": "R1", "hand": "player", "draw": False, "seat": 3, "player_id": "ben"}
        refused = await post("options/decide", decide, ann, "d-ann", status=403)
        assert refused["detail"]["reason"] == "not_your_player"
        stood = await post("options/decide", decide, ben, "d-ben")
        assert [(e["payload"]["type"], e["payload"]["by"], e["principal"], e["actor"]) for e in stood["events"]] == \
            [("option_decided", "participant", "bettor", "ben")]
        await cards("R1", ("9s",), first=5)
        view = (await c.get(f"/tables/{table}/rounds/R1", params={"wait_ms": 30_000}, headers=h(dealer, "v1"))).json()
        assert (view["status"], view["result"]["winner"], view["bank_settled"]["won_cents"]) == \
            ("settled", "player", -80_000), view
        # round 2: the bank passed to ann; ben bancos; the Banker's option is left to the table clock
        await post("rounds", {"actor": DEALER, "shoe_id": "PS", "round_id": "R2", "banker_seat": 2,
                              "banker_player_id": "ann", "bank_cents": 100_000}, dealer, "r2")
        await post("bets", {"round_id": "R2", "seat": 3, "player_id": "ben", "wager": "banco",
                            "amount_cents": 100_000}, ben, "banco-ben")
        await post("rounds/no-more-bets", {"actor": DEALER, "round_id": "R2"}, dealer, "nmb-2")
        await cards("R2", ("Kh", "2d", "2c", "Ad", "9d"))
        offer = await pending("R2")
        assert (offer["cell"], offer["player_id"], offer["default_draw"]) == ("banker_3_9", "ann", True)
        expired = None
        for attempt in range(40):  # the deadline is the broker's log time of the card plus 1 s
            await asyncio.sleep(0.25)
            answer = await c.post(f"/tables/{table}/options/expire",
                                  json={"actor": DEALER, "round_id": "R2", "hand": "banker"},
                                  headers=h(dealer, f"expire-{attempt}"))
            if answer.status_code == 200:
                expired = answer.json()
                break
            assert answer.json()["reason"] == "option_not_expired", answer.text
        assert expired is not None and expired["events"][0]["payload"]["by"] == "default"
        await cards("R2", ("5d",), first=6)
        view2 = (await c.get(f"/tables/{table}/rounds/R2", params={"wait_ms": 30_000}, headers=h(dealer, "v2"))).json()
        assert (view2["status"], view2["result"]["winner"], view2["dominant_player"]["rule"]) == \
            ("settled", "banker", "banco"), view2
        assert (view2["bank_settled"]["won_cents"], view2["bank_settled"]["commission_cents"]) == (100_000, 5_000)
        assert [(s["player_id"], s["result"]) for s in view2["settlements"]] == [("ben", "lose")]
    log = [e for e in await floor.log() if e.table_id == table]
    decided = [e.payload for e in log if type(e.payload).__name__ == "OptionDecided"]
    assert [(d.cell, d.by, d.draw) for d in decided] == [("player_5", "participant", False),
                                                         ("banker_3_9", "default", True)]
    rep = audit(log)
    assert rep.clean, [str(d) for d in rep.discrepancies[:10]]
    assert (rep.rounds_checked, rep.bets_checked) == (2, 3)
