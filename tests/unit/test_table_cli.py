"""``croupier table ...``: the command API's actions on the command line, through the same gateway (here on the
in-memory bus); answers, retries by request id, exit statuses and usage errors."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from typer.testing import CliRunner

from contracts import topics as T
from contracts.events import PlayerSeated
from croupier import topics
from croupier.cli import app
from services.command_api import server
from services.command_api.gateway import CommandGateway, MemoryCommandBus
from services.floor.dealer import Clock
from tests.services.helpers import floor_bus, payloads

runner = CliRunner()


@pytest.fixture
def memory_floor(monkeypatch):  # type: ignore[no-untyped-def]
    """Every ``croupier table`` run gets a fresh gateway (a new process) over one in-memory floor; it reads
    the floor's events from the start, as the command line's ``--lookback`` does."""
    bus, _ = floor_bus(9)
    seen = []

    @contextlib.asynccontextmanager
    async def fake(settings, writers=None, *, tables=None, lookback_s=0.0, timeout_s=10.0, streams=()
                   ) -> AsyncIterator[CommandGateway]:
        seen.append((tables, lookback_s, streams))
        mb = MemoryCommandBus(bus)
        await mb.settle()
        yield CommandGateway(mb, Clock(), timeout_s=0.1)

    monkeypatch.setattr(server, "open_gateway", fake)
    monkeypatch.setattr(topics, "require_prefix", _prefix_exists)
    return bus, seen


async def _prefix_exists(settings, hint=""):  # type: ignore[no-untyped-def]
    return None


def croupier(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["table", *args])


def test_actions_answer_and_a_retry_prints_the_same_answer_without_a_second_decision(memory_floor):
    bus, seen = memory_floor
    r = croupier("open", "--table", "T1", "--actor", "d-1", "--profile", "punto_banco", "--request-id", "o-1")
    assert (r.exit_code, r.stdout) == (0, "accepted open_table at T1: table_opened\n")
    # the table's partitions of the stream its answer comes on, from ten minutes back
    assert seen == [(["T1"], 600.0, (T.DEALING_EVENTS,))]
    args = ("seat", "--table", "T1", "--actor", "d-1", "--seat", "2", "--player", "p-2", "--request-id", "s-1", "--json")
    first, again = croupier(*args), croupier(*args)
    assert first.exit_code == again.exit_code == 0 and first.stdout == again.stdout
    assert '"status": "accepted"' in first.stdout and '"type": "player_seated"' in first.stdout
    assert [p.player_id for p in payloads(bus, T.WAGERING_EVENTS, PlayerSeated)] == ["p-2"]
    assert seen[-1][2] == (T.WAGERING_EVENTS,)
    r = croupier("load-shoe", "--table", "T1", "--actor", "d-1", "--cut-at", "60", "--request-id", "l-1")
    assert seen[-1][2] == (T.SHOE_EVENTS,)
    r2 = croupier("open-round", "--table", "T1", "--actor", "d-1", "--shoe-id", "S0")
    assert seen[-1][2] == (T.DEALING_EVENTS, T.WAGERING_EVENTS) and r2.exit_code == 2
    assert r.exit_code == 0 and r.stdout.startswith("accepted load_shoe at T1: shoe_loaded, shoe_cut, shoe_burned (shoe=")


def test_a_rejection_exits_2_with_its_reason(memory_floor):
    r = croupier("open", "--table", "T1", "--actor", "d-1", "--profile", "punto_banco", "--request-id", "o-1")
    assert r.exit_code == 0
    r = croupier("open-round", "--table", "T1", "--actor", "d-1", "--shoe-id", "S1", "--request-id", "r-1")
    assert r.exit_code == 2 and r.stdout.startswith("rejected open_round at T1: command_rejected")
    assert "error: rejected no_open_shoe" in r.stderr


def test_a_table_never_opened_exits_2_unknown_table_and_sends_nothing(memory_floor):
    bus, _ = memory_floor
    before = {t: len(recs) for t, recs in bus.topics.items()}
    r = croupier("open-round", "--table", "T9", "--actor", "d-1", "--shoe-id", "S1", "--request-id", "r-1")
    assert r.exit_code == 2 and r.stdout == ""
    assert "error: unknown_table: table 'T9' was never opened" in r.stderr
    assert {t: len(recs) for t, recs in bus.topics.items()} == before


def test_no_answer_exits_1_saying_the_command_may_still_be_decided(monkeypatch):
    from services.runtime.memory import MemoryBus

    @contextlib.asynccontextmanager
    async def idle(settings, writers=None, **kw):  # type: ignore[no-untyped-def]
        mb = MemoryCommandBus(MemoryBus())
        mb.index.tables.add("T1")  # taken as opened: the command is sent, and never answered
        yield CommandGateway(mb, Clock(), timeout_s=0.05)

    monkeypatch.setattr(server, "open_gateway", idle)
    monkeypatch.setattr(topics, "require_prefix", _prefix_exists)
    r = croupier("seat", "--table", "T1", "--actor", "d-1", "--seat", "2", "--player", "p-2")
    assert r.exit_code == 1 and "may still be decided" in r.stderr and r.stderr.startswith("request id: ")


@pytest.mark.parametrize("args, message", [
    (("seat", "--table", "T1", "--actor", "d", "--seat", "0", "--player", "p"), "seat: Input should be greater"),
    (("open", "--table", "T1", "--actor", "d", "--profile", "punto_banco", "--limit", "banker=5"),
     "--limit takes WAGER=MIN_CENTS:MAX_CENTS"),
    (("open", "--table", "T1", "--actor", "d", "--profile", "baccara"), "unknown_profile: unknown table profile"),
    (("bet", "--table", "T1", "--round", "R", "--seat", "1", "--player", "p", "--wager", "banker",
      "--amount-cents", "100", "--request-id", "no spaces"), "invalid_request_id"),
    (("seat", "--table", "T 1", "--actor", "d", "--seat", "1", "--player", "p"), "out_of_bounds"),
    (("seat", "--table", "T1", "--actor", "d", "--seat", "1", "--player", "p", "--timeout", "0"),
     "--timeout must be more than 0"),
])
def test_bad_input_exits_2_and_sends_nothing(memory_floor, args, message):
    bus, _ = memory_floor
    r = croupier(*args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr
    assert not any(bus.topics.get(t) for t in T.COMMAND_TOPICS)


def test_the_api_needs_a_credential_and_a_secured_broker_needs_each_writers_password(monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith(("CROUPIER_API_TOKEN", "KAFKA_"))]:
        monkeypatch.delenv(key)
    r = croupier("api", "--port", "18199")
    assert r.exit_code == 2 and "the command API has no credential configured" in r.stderr
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "console")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "console-password")
    r = croupier("bet", "--table", "T1", "--round", "R", "--seat", "1", "--player", "p", "--wager", "banker",
                 "--amount-cents", "2500")
    assert r.exit_code == 2 and "set CROUPIER_KAFKA_PASSWORD_BETTOR" in r.stderr


def test_a_whole_round_on_the_command_line_and_its_settlement(memory_floor):
    import json

    def ok(*args: str) -> dict:  # type: ignore[type-arg]
        r = croupier(*args, "--table", "T1", "--json")
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    ok("open", "--actor", "d-1", "--profile", "punto_banco_basic", "--limit", "banker=1000:20000")
    shoe = ok("load-shoe", "--actor", "d-1", "--cut-at", "80")["shoe_id"]
    ok("seat", "--actor", "d-1", "--seat", "1", "--player", "p-1")
    rnd = ok("open-round", "--actor", "d-1", "--shoe-id", shoe)["round_id"]
    bet = ok("bet", "--round", rnd, "--seat", "1", "--player", "p-1", "--wager", "banker", "--amount-cents", "1000")
    assert bet["events"][0]["payload"]["amount_cents"] == 1000  # under the default $25 minimum: the table's own
    ok("no-more-bets", "--actor", "d-1", "--round", rnd)
    r = croupier("round", "--table", "T1", "--round", rnd, "--wait", "0")
    view = json.loads(r.stdout)
    assert r.exit_code == 0 and view["status"] == "settled" and view["settled"]["stakes"] == 1000
    assert [s["bet_id"] for s in view["settlements"]] == [bet["bet_id"]]
    r = croupier("round", "--table", "T1", "--round", "never-opened", "--wait", "0")
    assert r.exit_code == 1 and json.loads(r.stdout)["status"] == "unknown" and "is unknown" in r.stderr


def test_a_prefix_without_a_floor_exits_2_and_connects_nothing(monkeypatch):
    opened = []

    async def no_such(settings, hint=""):  # type: ignore[no-untyped-def]
        raise topics.NoSuchPrefix(f"no Croupier topics under prefix {settings.topic_prefix!r}" + hint)

    monkeypatch.setattr(topics, "require_prefix", no_such)
    monkeypatch.setattr(server, "open_gateway", lambda *a, **k: opened.append(a))
    r = croupier("seat", "--table", "T1", "--actor", "d", "--seat", "1", "--player", "p", "--prefix", "typo")
    assert r.exit_code == 2 and "no Croupier topics under prefix 'typo.'" in r.stderr
    assert "start the services on it first" in r.stderr and opened == []


def test_the_curator_commands_on_the_command_line(memory_floor):
    def run(*args: str):  # type: ignore[no-untyped-def]
        return croupier(*args, "--table", "T1")

    assert run("open", "--actor", "d-1", "--profile", "punto_banco_curator").exit_code == 0
    assert run("seat", "--actor", "d-1", "--seat", "1", "--player", "p-1").exit_code == 0
    assert run("seat", "--actor", "d-1", "--seat", "2", "--player", "p-2").exit_code == 0
    r = run("offer-shoe", "--actor", "d-1", "--seat", "1", "--player", "p-1")
    assert (r.exit_code, r.stdout) == (0, "accepted offer_shoe at T1: shoe_offered\n")
    r = run("pass-shoe", "--actor", "fm-1", "--ordered-by", "floorman")
    assert (r.exit_code, r.stdout) == (0, "accepted pass_shoe at T1: shoe_passed\n")
    r = run("keep-shoe", "--curator", "p-2", "--round", "R0")
    assert r.exit_code == 2 and "error: rejected out_of_turn" in r.stderr
    r = run("pass-shoe", "--actor", "fm-1", "--ordered-by", "pit")
    assert r.exit_code == 2 and "ordered_by: Input should be" in r.stderr


def test_a_chemin_de_fer_round_on_the_command_line(memory_floor):
    import json

    _, seen = memory_floor

    def ok(*args: str) -> dict:  # type: ignore[type-arg]
        r = croupier(*args, "--table", "T1", "--json")
        assert r.exit_code == 0, (r.stdout, r.stderr)
        return json.loads(r.stdout)  # type: ignore[no-any-return]

    opened = ok("open", "--actor", "d-1", "--profile", "chemin_de_fer", "--option-seconds", "9",
                "--bank-min-cents", "20000")
    chem = opened["events"][0]["payload"]["config"]["chemin"]
    assert (chem["option_seconds"], chem["bank_min_cents"]) == (9, 20_000)
    ok("load-shoe", "--actor", "d-1", "--physical", "--shoe-id", "PS")
    for seat, player in ((1, "bank-1"), (2, "ann")):
        ok("seat", "--actor", "d-1", "--seat", str(seat), "--player", player)
    rnd = ok("open-round", "--actor", "d-1", "--shoe-id", "PS", "--round", "R1", "--banker-seat", "1",
             "--banker", "bank-1", "--bank-cents", "100000")
    assert rnd["events"][0]["payload"]["bank_cents"] == 100_000
    r = croupier("open-round", "--table", "T1", "--actor", "d-1", "--shoe-id", "PS", "--bank-cents", "100000")
    assert r.exit_code == 2 and "banker_player_id, banker_seat missing" in r.stderr
    ok("bet", "--round", "R1", "--seat", "2", "--player", "ann", "--wager", "player", "--amount-cents", "30000")
    ok("no-more-bets", "--actor", "d-1", "--round", "R1")
    for n, card in enumerate(("3s", "2s", "2h", "Ks"), 1):  # the Player's 5: ann's option (player_5)
        ok("card", "--actor", "d-1", "--shoe-id", "PS", "--round", "R1", "--number", str(n), "--card", card)
    r = croupier("expire-option", "--table", "T1", "--actor", "d-1", "--round", "R1", "--hand", "player")
    assert r.exit_code == 2 and "error: rejected option_not_expired" in r.stderr
    assert seen[-1][2] == (T.DEALING_EVENTS,)
    r = croupier("decide-option", "--table", "T1", "--round", "R1", "--hand", "player", "--stand", "--seat", "2",
                 "--player", "ann")
    assert (r.exit_code, r.stdout) == (0, "accepted decide_option at T1: option_decided (round=R1)\n"), r.stderr
    assert seen[-1][2] == (T.DEALING_EVENTS,)  # the bettor principal reads its answer on dealing.events
    ok("card", "--actor", "d-1", "--shoe-id", "PS", "--round", "R1", "--number", "5", "--card", "9s")
    r = croupier("round", "--table", "T1", "--round", "R1", "--wait", "0")
    view = json.loads(r.stdout)
    assert r.exit_code == 0 and (view["status"], view["result"]["winner"]) == ("settled", "player")
    assert [(o["cell"], o["decided"]) for o in view["options"]] == [("player_5", {"draw": False, "by": "participant"})]
    assert view["bank_settled"]["won_cents"] == -30_000
    r = croupier("decide-option", "--table", "T1", "--round", "R1", "--hand", "tie", "--draw", "--seat", "2",
                 "--player", "ann")
    assert r.exit_code == 2 and "hand: Input should be 'player' or 'banker'" in r.stderr


def test_the_api_loads_bettor_credentials_and_writes_only_as_the_principals_its_callers_need(monkeypatch, tmp_path):
    import os

    for key in [k for k in os.environ if k.startswith(("CROUPIER_API_TOKEN", "KAFKA_", "CROUPIER_KAFKA"))]:
        monkeypatch.delenv(key)
    served: list = []  # type: ignore[type-arg]

    async def serve(settings, host, port, tokens, writers, timeout_s=10.0, tls=None):  # type: ignore[no-untyped-def]
        served.append((tokens, writers))

    monkeypatch.setattr(server, "serve_command_api", serve)
    monkeypatch.setattr(topics, "require_prefix", _prefix_exists)
    f = tmp_path / "tokens"
    f.write_text("bettor:p-1=terminal-one-0123456\nbettor:p-2=terminal-one-0123456\n")
    monkeypatch.setenv("CROUPIER_API_TOKENS_FILE", str(f))
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "console")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "console-password")
    # only betting terminals: the API writes as bettor alone, and needs its password
    r = croupier("api", "--port", "18297")
    assert r.exit_code == 2 and "set CROUPIER_KAFKA_PASSWORD_BETTOR" in r.stderr and served == []
    monkeypatch.setenv("CROUPIER_KAFKA_PASSWORD_BETTOR", "bettor-password")
    r = croupier("api", "--port", "18297")
    assert r.exit_code == 0, r.stderr
    tokens, writers = served[-1]
    assert tokens.bettors == {"terminal-one-0123456": frozenset({"p-1", "p-2"})} and tokens.roles == {}
    assert {k: s.sasl_username for k, s in writers.items()} == {"bettor": "bettor"}
    # a shared bettor token: said to act for no player in the command API
    f.write_text("dealer=dealer-token-0123456789\nbettor=shared-bettor-token-0123\n")
    r = croupier("api", "--port", "18297")
    assert r.exit_code == 0 and "acts for no player in the command API" in r.stderr
    assert {k: s.sasl_username for k, s in served[-1][1].items()} == {"console": "console"}
