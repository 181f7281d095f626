"""The projection on the in-memory bus: odds after every card equal the rules core's, the ledger balances,
alerts fire exactly for positive-EV bets, the query API, and a replay from zero equals the live state."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from fastapi.testclient import TestClient

from baccarat.cards import VALUE_COUNTS_PER_DECK, parse_card
from baccarat.expectation import wager_expectations
from baccarat.odds import Composition, exact_counts
from baccarat.table import no_vig_dragon, punto_banco_full
from contracts import topics as T
from contracts.events import (
    AdvantageBetFlagged,
    BettingClosed,
    CardDrawn,
    LedgerPosted,
    OddsUpdated,
    RoundSettled,
    ShoeBurned,
    ShoeLoaded,
)
from services.floor.bettors import Seat
from services.floor.dealer import Clock, TableDealer
from services.floor.io import MemoryFloorIO
from services.projection.api import create_api
from services.projection.core import ProjectionCore
from services.projection.digest import state_digest
from tests.services.helpers import events, floor_bus, payloads

TABLES = {"T1": punto_banco_full(), "T2": no_vig_dragon(panda=True)}
SEATS = [Seat(i, f"player-{i}") for i in range(1, 6)]


@pytest.fixture(scope="module")
def played():
    """Two tables through a full shoe each, with the projection running live."""
    import asyncio

    async def run():
        bus, hosts = floor_bus(seed=23)
        proj = bus.add(ProjectionCore())
        io = MemoryFloorIO(bus)
        for tid, cfg in TABLES.items():
            await TableDealer(io, tid, cfg, SEATS, random.Random(tid), Clock()).run(shoes=1)
        return bus, proj

    return asyncio.run(run())


def _true_compositions(bus):
    """Independently: per table, the surveillance and public composition after each shoe event, in order."""
    out = {}
    for e in events(bus, T.SHOE_EVENTS):
        p = e.payload
        t = out.setdefault(e.table_id, [])
        if isinstance(p, ShoeLoaded):
            full = [n * p.rules.decks for n in VALUE_COUNTS_PER_DECK]
            state = {"surv": list(full), "pub": list(full)}
        elif isinstance(p, ShoeBurned):
            for c in [p.exposed]:
                state["surv"][parse_card(c).value] -= 1
                state["pub"][parse_card(c).value] -= 1
            for c in p.burned:
                state["surv"][parse_card(c).value] -= 1
        elif isinstance(p, CardDrawn):
            state["surv"][parse_card(p.card).value] -= 1
            state["pub"][parse_card(p.card).value] -= 1
        else:
            continue
        t.append((tuple(state["surv"]), tuple(state["pub"])))
    return out


def test_odds_after_every_card_match_the_rules_core(played):
    bus, _ = played
    odds = payloads(bus, T.PROJECTION_ODDS, OddsUpdated)
    truth = _true_compositions(bus)
    # both views after every card, but no surveillance odds once fewer than 6 cards are truly left (the last
    # round of a shoe can leave as few as 2: no round could be dealt from them)
    expected = sum(1 + (sum(surv) >= 6) for tid in truth for surv, _ in truth[tid][2:])
    assert sum(1 for o in odds if o.trigger == "card") == expected
    by_table = {}
    for e in events(bus, T.PROJECTION_ODDS):
        by_table.setdefault(e.table_id, []).append(e.payload)
    checked = 0
    for tid, updates in by_table.items():
        cfg = TABLES[tid]
        for o in updates:
            surv, pub = truth[tid][o.step]
            assert tuple(o.composition) == (surv if o.view == "surveillance" else pub)
            counts = exact_counts(Composition.of(o.composition), cfg.ruleset)
            assert (o.total, o.counts["banker"], o.counts["player"], o.counts["tie"]) == (
                counts.total, counts.banker, counts.player, counts.tie)
            exp = wager_expectations(counts, cfg)
            assert {w.wager: Fraction(w.ev_num, w.ev_den) for w in o.wagers} == {w.value: x.ev for w, x in exp.items()}
            checked += 1
    assert checked == len(odds)


def test_odds_at_shoe_start_are_the_published_full_shoe_counts(played):
    bus, _ = played
    start = [o for o in payloads(bus, T.PROJECTION_ODDS, OddsUpdated) if o.trigger == "shoe_loaded"]
    assert len(start) == 4  # two tables, two views
    for o in start:
        assert (o.counts["banker"], o.counts["player"], o.counts["tie"], o.total) == (
            2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216, 4_998_398_275_503_360)


def test_ledger_balances_and_matches_the_settlements(played):
    bus, proj = played
    posted = payloads(bus, T.PROJECTION_LEDGER, LedgerPosted)
    assert posted and all(sum(line.amount_cents for line in p.lines) == 0 for p in posted)
    assert len({p.entry_id for p in posted}) == len(posted)
    for tid in TABLES:
        settled = [e.payload.table_result for e in events(bus, T.SETTLEMENT_EVENTS)
                   if e.table_id == tid and isinstance(e.payload, RoundSettled)]
        ledger = proj.runner.tables[tid].state.ledger
        assert ledger.table_result(tid) == sum(settled)
        bal = ledger.balances(table_id=tid)
        assert bal[f"table:{tid}:wagers"] == 0  # every stake taken was settled
        assert sum(bal.values()) == 0


async def test_duplicate_delivery_posts_nothing_new():
    bus, _ = floor_bus(seed=2)
    proj = bus.add(ProjectionCore())
    io = MemoryFloorIO(bus)
    dealer = TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(2), Clock())
    await dealer.open_table()
    from contracts.commands import LoadShoe
    from services.runtime.core import command

    await io.send(T.SHOE_COMMANDS, command("T1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=40)))
    for n in range(1, 6):
        await dealer.play_round("S", f"S-{n}")
    before = {t: len(bus.topics[t]) for t in (T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS)}
    digest = state_digest(proj.runner.tables)
    for stream in proj.core.input_streams:  # every input delivered a second time
        for rec in list(bus.topics[stream]):
            await proj.handle(rec.topic, rec.partition, rec.offset, rec.key, rec.value)
    assert {t: len(bus.topics[t]) for t in before} == before
    assert state_digest(proj.runner.tables) == digest


def _independent_ev(bus, tid, round_id, cfg):
    """EV per wager from the true composition before the round's first card, recomputed from the log."""
    comp = [n * 8 for n in VALUE_COUNTS_PER_DECK]
    for e in events(bus, T.SHOE_EVENTS):
        if e.table_id != tid:
            continue
        p = e.payload
        if isinstance(p, ShoeBurned):
            for c in [p.exposed, *p.burned]:
                comp[parse_card(c).value] -= 1
        elif isinstance(p, CardDrawn):
            if p.round_id == round_id:
                break
            comp[parse_card(p.card).value] -= 1
    counts = exact_counts(Composition.of(comp), cfg.ruleset)
    return {w.value: x.ev for w, x in wager_expectations(counts, cfg).items()}


def test_alerts_fire_exactly_for_positive_ev_bets(played):
    bus, proj = played
    flagged = {a.bet_id: a for a in payloads(bus, T.PROJECTION_ALERTS, AdvantageBetFlagged)}
    assert flagged, "a full shoe of random side bets gives some positive-EV moments"
    positive = negative = 0
    for e in events(bus, T.WAGERING_EVENTS):
        if not isinstance(e.payload, BettingClosed) or not e.payload.bets:
            continue
        tid, rid = e.table_id, e.payload.round_id
        ev = _independent_ev(bus, tid, rid, TABLES[tid])
        for bet in e.payload.bets:
            if ev[bet.wager] > 0:
                positive += 1
                a = flagged[bet.bet_id]
                assert Fraction(a.ev_num, a.ev_den) == ev[bet.wager] and a.stake_cents == bet.amount_cents
            else:
                negative += 1
                assert bet.bet_id not in flagged
    assert positive == len(flagged) and negative > positive
    watch = {}
    for a in flagged.values():
        w = watch.setdefault(a.player_id, [0, 0, 0])
        w[0] += 1
        w[1] += a.stake_cents
        w[2] += a.expected_gain_cents
    summed = {}
    for slot in proj.runner.tables.values():
        for pid, w in slot.state.watch.items():
            s = summed.setdefault(pid, [0, 0, 0])
            s[0], s[1], s[2] = s[0] + w.bets, s[1] + w.stake_cents, s[2] + w.expected_gain_cents
    assert summed == watch


def test_a_positive_dragon_7_fires_and_a_negative_one_does_not():
    """The rule itself, on a hand-made shoe: rich in 7s, 8s and 9s the dragon 7 turns positive."""
    from datetime import datetime, timezone

    from contracts.events import BetLine
    from services.projection.core import BeforeRound, ProjectionState, ShoeView
    from services.projection.pmap import PMap
    from services.runtime.translate import table_spec

    cfg = no_vig_dragon()
    core = ProjectionCore()
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rich = (1, 3, 0, 5, 0, 0, 0, 5, 0, 2)  # 16 cards left, heavy in aces, 3s and 7s: dragon 7 EV ≈ +2.0
    plain = tuple(n * 8 for n in VALUE_COUNTS_PER_DECK)
    ev_rich = wager_expectations(exact_counts(Composition.of(rich)), cfg)
    ev_plain = wager_expectations(exact_counts(Composition.of(plain)), cfg)
    from baccarat.wagers import Wager

    assert ev_rich[Wager.DRAGON_7].ev > 0 > ev_plain[Wager.DRAGON_7].ev
    bets = (BetLine(bet_id="d7", seat=1, player_id="ap", wager="dragon_7", amount_cents=10_000),
            BetLine(bet_id="b", seat=2, player_id="x", wager="banker", amount_cents=10_000))
    for comp, fires in ((rich, True), (plain, False)):
        st = ProjectionState("T", spec=table_spec(cfg), shoe=ShoeView("S", plain), books=PMap().set("R", bets),
                             before_round=PMap().set("R", BeforeRound(comp, "evt", at, 5, "S")))
        st = core._judge(st, "R")
        got = [a.bet_id for a, _, _ in st.alerts_pending]
        assert got == (["d7"] if fires else [])
        assert "R" not in st.books and "R" not in st.before_round  # a judged round is forgotten
        if fires:
            a = st.alerts_pending[0][0]
            assert Fraction(a.ev_num, a.ev_den) == ev_rich[Wager.DRAGON_7].ev
            assert a.expected_gain_cents == int(10_000 * ev_rich[Wager.DRAGON_7].ev)


async def test_replay_from_zero_equals_live(played):
    bus, proj = played
    fresh = bus.add(ProjectionCore())
    bus.remove(fresh)
    before = {t: len(bus.topics[t]) for t in (T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS)}

    async def read(topic):
        return list(bus.topics.get(topic, []))

    await fresh.rebuild(read)
    assert state_digest(fresh.runner.tables) == state_digest(proj.runner.tables)
    assert {t: len(bus.topics[t]) for t in before} == before  # and it published nothing again


TOKENS = {"dealer": "dealer-token-0123456789", "analyst": "analyst-token-0123456789",
          "cage": "cage-token-0123456789", "pit": "pit-token-0123456789",
          "surveillance": "surveillance-token-0123456789"}
PUBLIC = ["/health", "/tables", "/tables/T1", "/tables/T1/odds", "/tables/T1/roads"]
LEDGER = ["/tables/T1/ledger", "/tables/T1/ledger/entries?limit=50"]
SURVEILLANCE = ["/tables/T1/odds/surveillance", "/alerts"]
DIGEST = ["/digest"]


def _auth(role):
    return {"Authorization": f"Bearer {TOKENS[role]}"}


def test_query_api(played):
    _, proj = played
    client = TestClient(create_api(proj, TOKENS))
    assert client.get("/health").json()["status"] == "ok"
    assert [t["table_id"] for t in client.get("/tables").json()] == ["T1", "T2"]
    r = client.get("/tables/NOPE")
    assert r.status_code == 404 and "unknown table 'NOPE'" in r.json()["detail"]
    pub = client.get("/tables/T1/odds")
    assert pub.status_code == 200 and pub.json()["view"] == "public"
    ok = client.get("/tables/T1/odds/surveillance", headers=_auth("surveillance"))
    assert ok.status_code == 200 and ok.json()["view"] == "surveillance"
    roads = client.get("/tables/T1/roads").json()
    state = proj.runner.tables["T1"].state
    assert len(roads["sequence"]) == len(state.results(roads["shoe_id"])) > 0
    assert "big_eye_boy" in roads["roads"]
    led = client.get("/tables/T1/ledger", headers=_auth("cage")).json()
    assert led["table_result_cents"] == state.ledger.table_result("T1")
    alerts = client.get("/alerts", headers=_auth("surveillance")).json()
    assert alerts and {a["table_id"] for a in alerts} <= {"T1", "T2"}
    pid = alerts[0]["player_id"]
    summary = client.get(f"/players/{pid}/surveillance", headers=_auth("surveillance")).json()
    assert summary["flagged_bets"] == sum(1 for a in alerts if a["player_id"] == pid)
    assert client.get("/tables/T1/ledger?gaming_day=yesterday", headers=_auth("pit")).status_code == 422
    assert client.get("/tables/T1/ledger?shoe_id=nope", headers=_auth("pit")).status_code == 404
    entries = client.get("/tables/T2/ledger/entries?limit=5", headers=_auth("cage")).json()
    assert len(entries) == 5


@pytest.mark.parametrize("path", PUBLIC + LEDGER + SURVEILLANCE + DIGEST + ["/players/player-1/surveillance"])
def test_each_endpoint_by_role(played, path):
    """401 without or with an unknown token, 403 with a role not allowed, 200 with an allowed one."""
    _, proj = played
    client = TestClient(create_api(proj, TOKENS))
    allowed = ({"cage", "pit", "surveillance"} if path in LEDGER else
               {"analyst", "surveillance"} if path in DIGEST else
               {"surveillance"} if path not in PUBLIC else set(TOKENS))
    if path not in PUBLIC:
        assert client.get(path).status_code == 401
        r = client.get(path, headers={"Authorization": "Bearer " + TOKENS["cage"][:-1] + "x"})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert client.get(path, headers={"Authorization": "Basic " + TOKENS["surveillance"]}).status_code == 401
    else:
        assert client.get(path).status_code == 200
    for role in TOKENS:
        assert client.get(path, headers=_auth(role)).status_code == (200 if role in allowed else 403), role


def test_public_views_hold_no_player_data(played):
    bus, proj = played
    client = TestClient(create_api(proj, TOKENS))
    players = {b.player_id for e in events(bus, T.WAGERING_EVENTS) if isinstance(e.payload, BettingClosed)
               for b in e.payload.bets}
    assert players == {s.player_id for s in SEATS}
    for tid in TABLES:
        for path in ["/health", "/tables", f"/tables/{tid}", f"/tables/{tid}/odds", f"/tables/{tid}/roads"]:
            body = client.get(path).text
            assert not [p for p in players if p in body] and "patron:" not in body, path
    ledger = client.get("/tables/T1/ledger", headers=_auth("cage")).text
    assert "patron:player-1" in ledger  # and the cage does see them


def test_openapi_declares_the_bearer_scheme(played):
    _, proj = played
    doc = TestClient(create_api(proj, TOKENS)).get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": doc["components"]["securitySchemes"]["bearer"]["description"]}
    for path in ("/tables/{table_id}/ledger", "/tables/{table_id}/ledger/entries", "/alerts",
                 "/tables/{table_id}/odds/surveillance", "/players/{player_id}/surveillance"):
        assert doc["paths"][path]["get"]["security"] == [{"bearer": []}], path
    assert "security" not in doc["paths"]["/tables"]["get"]


def test_the_api_has_no_default_credential(played):
    from services.projection.auth import NoCredentials

    _, proj = played
    with pytest.raises(NoCredentials):
        create_api(proj, {})
    with pytest.raises(ValueError, match="unknown role"):
        create_api(proj, {"croupier": "x" * 20})


async def test_malformed_input_event_goes_to_the_projections_dead_letter_topic():
    from contracts.codecs import decode_dead_letter

    bus, _ = floor_bus(seed=4)
    proj = bus.add(ProjectionCore())
    bus.append(T.SHOE_EVENTS, b"T1", b'{"event_id": 42, "garbage": true}')
    await bus.pump()
    letters = [decode_dead_letter(r.value) for r in bus.topics[T.dlq("projection")]]
    assert [x.original for x in letters] == [b'{"event_id": 42, "garbage": true}']
    assert letters[0].topic == T.SHOE_EVENTS and "undecodable" in letters[0].error
    # and it keeps serving: a table opens and its odds come out
    io = MemoryFloorIO(bus)
    await TableDealer(io, "T1", punto_banco_full(), SEATS, random.Random(4), Clock()).open_table()
    from contracts.commands import LoadShoe
    from services.runtime.core import command

    await io.send(T.SHOE_COMMANDS, command("T1", "load", Clock()(), LoadShoe(shoe_id="S", cut_at=40)))
    assert "public" in proj.runner.tables["T1"].state.last_odds


class _CheckedCore(ProjectionCore):
    """The projection core, checking after every event it folds that its state survives msgpack."""

    checked = 0
    on = True

    def _roundtrip(self, state):
        import msgspec

        if not self.on:
            return state
        assert msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=self.state_type) == state
        _CheckedCore.checked += 1
        return state

    def absorb(self, state, env):
        return self._roundtrip(super().absorb(state, env))

    def evolve(self, state, env):
        return self._roundtrip(super().evolve(state, env))


async def test_state_encodes_after_every_event_and_stays_bounded():
    """A full shoe at each of two tables (two seats betting): after every event the table state decodes to
    an equal value (``state_type``, for snapshots). Then a second shoe at T1 (unchecked, for time): only the
    current shoe's road is held, every working set of a judged round or folded source is empty, and a
    replay reaches the same digest."""
    bus, _ = floor_bus(seed=31)
    core = _CheckedCore()
    proj = bus.add(core)
    io = MemoryFloorIO(bus)
    t1 = TableDealer(io, "T1", punto_banco_full(), SEATS[:2], random.Random(1), Clock())
    await t1.open_table()
    await t1.play_shoe(1)
    await TableDealer(io, "T2", no_vig_dragon(panda=True), SEATS[:2], random.Random(2), Clock()).run(shoes=1)
    n_inputs = sum(len(bus.topics[t]) for t in core.input_streams)
    n_own = sum(len(bus.topics[t]) for t in (T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS))
    assert _CheckedCore.checked == n_inputs + n_own > 5_000
    _CheckedCore.on = False
    await t1.play_shoe(2)
    s = proj.runner.tables["T1"].state
    assert s.past_shoes == {"T1-shoe-1"} and set(s.roads) == {"T1-shoe-2"}
    resolved = [e for e in events(bus, T.DEALING_EVENTS) if e.table_id == "T1"
                and type(e.payload).__name__ == "RoundResolved" and e.payload.shoe_id == "T1-shoe-2"]
    assert len(s.results("T1-shoe-2")) == len(resolved) > 0
    for st in (slot.state for slot in proj.runner.tables.values()):
        assert (len(st.books), len(st.before_round), len(st.ledger_published), len(st.alerts_published)) == (0,) * 4
        assert st.ledger_pending == () and st.alerts_pending == ()
    client = TestClient(create_api(proj, TOKENS))
    assert client.get("/tables/T1/roads?shoe_id=T1-shoe-1").status_code == 410
    assert client.get("/tables/T1/roads?shoe_id=T1-shoe-2").status_code == 200
    fresh = bus.add(ProjectionCore())
    bus.remove(fresh)

    async def read(topic):
        return list(bus.topics.get(topic, []))

    await fresh.rebuild(read)
    assert state_digest(fresh.runner.tables) == state_digest(proj.runner.tables)
    assert fresh.runner.tables["T1"].state.ledger.balances() == s.ledger.balances()


def test_the_api_answers_503_until_the_projection_has_restored():
    from services.runtime.host import NullPublisher, ServiceHost
    from services.runtime.settings import Settings

    host = ServiceHost(ProjectionCore(), Settings(), NullPublisher())
    restored = False
    client = TestClient(create_api(host, TOKENS, ready=lambda: restored))
    assert client.get("/tables").status_code == 503  # never an empty list from a half-restored state
    assert client.get("/tables/T1").status_code == 503  # nor a 404
    assert client.get("/health/ready").status_code == 503
    assert client.get("/health").json()["ready"] is False
    assert client.get("/digest", headers=_auth("analyst")).status_code == 503  # no digest of half a state
    assert client.get("/health/live").json() == {"live": True}
    assert client.get("/metrics").status_code == 200
    restored = True
    assert client.get("/tables").status_code == 200
    assert client.get("/tables/T1").status_code == 404
    assert client.get("/health/ready").json() == {"ready": True, "restored": True}


def test_health_is_cheap_and_the_digest_needs_a_role(played):
    """``/health`` holds no digest; ``/digest`` (analyst, surveillance) is the state digest of
    :func:`state_digest`, the same on every call while nothing changes."""
    _, proj = played
    client = TestClient(create_api(proj, TOKENS))
    health = client.get("/health").json()
    assert health == {"status": "ok", "ready": True, "tables": 2}
    want = state_digest(proj.runner.tables)
    for role in ("analyst", "surveillance", "analyst"):
        assert client.get("/digest", headers=_auth(role)).json() == {"digest": want, "tables": 2}


def test_readiness_is_what_the_runtime_says(played):
    """``/health/ready`` answers the given readiness (the broker, the assignment, the restore), 503 when
    not ready, whatever ``ready`` (the data endpoints' gate) says."""
    _, proj = played
    body = {"ready": False, "broker_reachable": False, "services": {}}
    client = TestClient(create_api(proj, TOKENS, ready=lambda: True, readiness=lambda: (False, body)))
    r = client.get("/health/ready")
    assert r.status_code == 503 and r.json() == body
    assert client.get("/tables").status_code == 200  # the state is whole: the data endpoints still answer


def test_every_endpoint_that_reads_the_state_runs_on_the_event_loop(played):
    """A sync endpoint runs in a worker thread while the event loop replaces the tables' states: it could see
    the table dict change size or a table vanish mid-read (``/health`` once answered 500 with a
    ``KeyError``). Every endpoint of the API is a coroutine, so none does."""
    import inspect

    from fastapi.routing import APIRoute

    _, proj = played
    api = create_api(proj, TOKENS)
    routes = [r for r in api.routes if isinstance(r, APIRoute)]
    assert {r.path for r in routes} >= {"/health", "/digest", "/tables", "/tables/{table_id}", "/alerts",
                                        "/tables/{table_id}/ledger", "/players/{player_id}/surveillance"}
    assert [r.path for r in routes if not inspect.iscoroutinefunction(r.endpoint)] == []


def test_the_api_counts_its_requests_by_route_template(played):
    """``croupier_api_requests_total`` is labelled by the route's template, never by a table or player id."""
    from prometheus_client.parser import text_string_to_metric_families

    _, proj = played
    client = TestClient(create_api(proj, TOKENS))

    def count(route: str, status: str) -> float:
        text = client.get("/metrics").text
        for fam in text_string_to_metric_families(text):
            if fam.name == "croupier_api_requests":
                return sum(s.value for s in fam.samples if s.name.endswith("_total")
                           and s.labels == {"route": route, "status": status})
        return 0.0

    before_ok, before_404 = count("/tables/{table_id}", "200"), count("/tables/{table_id}", "404")
    for _ in range(3):
        assert client.get("/tables/T1").status_code == 200
    assert client.get("/tables/NOPE").status_code == 404
    assert count("/tables/{table_id}", "200") == before_ok + 3
    assert count("/tables/{table_id}", "404") == before_404 + 1
    text = client.get("/metrics").text
    assert "NOPE" not in text and "player-1" not in text  # an id asked for never becomes a label
