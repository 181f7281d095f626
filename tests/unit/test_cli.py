"""The command line: `croupier odds` and `croupier resolve`, outputs and errors (exit 2, one line)."""

import json

import pytest
from typer.testing import CliRunner

from croupier.cli import app

runner = CliRunner()


def run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


def test_odds_full_shoe_json_has_the_published_counts():
    r = run("odds", "--decks", "8", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["cards"] == 416 and d["total"] == 4_998_398_275_503_360
    c = d["counts"]
    assert (c["banker"], c["player"], c["tie"]) == (2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216)
    assert c["cards_4"] + c["cards_5"] + c["cards_6"] == d["total"]
    assert set(c["bonus"]["player"]) >= {"natural_win", "natural_tie"} | {f"win_by_{k}" for k in range(4, 10)}
    assert sum(c["bonus"]["banker"].values()) == d["total"]
    assert abs(d["wagers"]["banker"]["ev"] - -0.010579) < 5e-7
    assert abs(d["wagers"]["player"]["ev"] - -0.012351) < 5e-7
    assert abs(d["wagers"]["tie"]["ev"] - -0.143596) < 5e-7
    assert abs(d["wagers"]["dragon_7"]["ev"] - -0.076113) < 5e-7


def test_odds_seen_and_composition_agree():
    seen = json.loads(run("odds", "--decks", "8", "--seen", "A,T,5,K", "--json").stdout)
    comp = json.loads(run("odds", "--decks", "8", "--composition", "126,31,32,32,32,31,32,32,32,32", "--json").stdout)
    assert seen["counts"] == comp["counts"] and seen["cards"] == 412


@pytest.mark.parametrize(
    "args,message",
    [
        (("odds", "--seen", "A,X"), "unknown rank 'X'"),
        (("odds", "--composition", "1,2,3"), ""),
        (("odds", "--composition", "-1,0,0,0,0,0,0,0,0,10"), "negative"),
        (("odds", "--decks", "1", "--composition", "0,0,0,0,0,0,0,0,0,5"), "more than 1 deck"),
        (("odds", "--decks", "1", "--composition", "1,1,1,0,0,0,0,0,0,0"), "6"),
        (("resolve", "A,2,3"), "needs card 4"),
        (("resolve", "A,2,3,4,5,6", "--bet", "pairs=100"), "unknown wager 'pairs'"),
        (("resolve", "A,2,3,4,5,6", "--bet", "banker=0"), "not a positive amount"),
        (("resolve", "A,2,3,4,5,6", "--bet", "banker=1.5"), "whole number of cents"),
        (("resolve", "A,2,3,4,5,6", "--bet", "dragon_7=100", "--bet", "cards_4=100"), "3.2(a)6.iii"),
        (("resolve", "A,2,3,4,5,6", "--variant", "casino_night", "--bet", "bonus_player=100"), "not offered"),
    ],
)
def test_errors_are_one_line_and_exit_2(args, message):
    r = run(*args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert err.startswith("error:") and "\n" not in err and message in err and "Traceback" not in r.output


def test_resolve_prints_the_round_and_settles_bets():
    r = run("resolve", "10,3,5,K,10,4,9", "--bet", "banker=2500", "--bet", "dragon_7=500", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["player"]["points"], d["banker"]["points"], d["winner"], d["cards_required"]) == (5, 7, "banker", 6)
    assert d["dragon_7"] is True and d["unused"] == ["9"]
    bets = {b["wager"]: b for b in d["bets"]}
    assert (bets["banker"]["result"], bets["banker"]["payout"]) == ("void", 2500)  # no-vig table, dragon 7
    assert (bets["dragon_7"]["result"], bets["dragon_7"]["payout"]) == ("win", 500 + 40 * 500)
    assert len(d["draws"]) == 6 and "Table 2 row 3 column 0" in d["draws"][5]


def test_resolve_standard_table_takes_commission_and_casino_night_on_all_winners():
    d = json.loads(run("resolve", "3,2,3,3,9", "--bet", "player=2000", "--json").stdout)
    assert (d["winner"], d["bets"][0]["payout"], d["bets"][0]["commission"]) == ("player", 4000, 0)
    d = json.loads(run("resolve", "3,2,3,3,9", "--variant", "casino_night", "--bet", "player=2000", "--json").stdout)
    assert (d["bets"][0]["payout"], d["bets"][0]["commission"]) == (3900, 100)


def test_resolve_human_output():
    r = run("resolve", "4,K,3,6")
    assert r.exit_code == 0
    assert "Player's Hand: 4 3 -> 7" in r.stdout and "Banker's Hand: K 6 -> 6" in r.stdout
    assert "Winner: player; cards required: 4" in r.stdout


def test_demo_with_an_unreachable_broker_is_one_line():
    r = run("demo", "--tables", "1", "--bootstrap", "127.0.0.1:1")
    assert r.exit_code == 1, r.output
    assert r.stderr.strip().startswith("error: cannot reach Kafka at 127.0.0.1:1")
    assert "Traceback" not in r.output


@pytest.mark.parametrize("args", [("demo", "--tables", "0"), ("demo", "--shoes", "11"), ("demo", "--speed", "-1"),
                                  ("serve", "--services", "shoe,nope")])
def test_demo_and_serve_bad_options(args):
    r = run(*args)
    assert r.exit_code == 2 and r.stderr.startswith("error:")


@pytest.mark.parametrize("args", [("api", "--token", "s3cret-s3cret-s3cret"),
                                  ("serve", "--api-port", "18099", "--token", "s3cret-s3cret-s3cret")])
def test_token_on_the_command_line_is_refused(args, monkeypatch):
    monkeypatch.setenv("CROUPIER_API_TOKEN_CAGE", "cage-token-0123456789")
    r = run(*args)
    assert r.exit_code != 0 and "--token is no longer accepted" in r.output and "process list" in r.output


@pytest.mark.parametrize("args", [("api", "--port", "18098"), ("serve", "--api-port", "18097")])
def test_api_without_credentials_does_not_start(args, monkeypatch):
    import os

    for k in [k for k in os.environ if k.startswith("CROUPIER_API_TOKEN")]:
        monkeypatch.delenv(k)
    r = run(*args)
    assert r.exit_code != 0 and "no credential configured" in r.output


@pytest.mark.parametrize("args", [("api", "--port", "18096"), ("serve", "--api-port", "18095")])
@pytest.mark.parametrize("name,value", [("CROUPIER_SURVEILLANCE_RAISE_CENTS", "fifty dollars"),
                                        ("CROUPIER_SHIFT_STARTS", "8,16")])
def test_a_bad_pit_setting_stops_the_api_at_start(args, name, value, monkeypatch):
    monkeypatch.setenv("CROUPIER_API_TOKEN_CAGE", "cage-token-0123456789")
    monkeypatch.setenv(name, value)
    r = run(*args)
    assert r.exit_code == 2 and r.stderr.startswith("error:") and name in r.stderr


def test_resolve_chemin_de_fer_with_given_decisions():
    stand = json.loads(run("resolve", "3,2,2,K,9,5", "--variant", "chemin_de_fer", "--option", "player=stand",
                           "--bet", "player=2500", "--bank", "5000", "--json").stdout)
    assert (stand["player"]["points"], stand["banker"]["points"], stand["winner"]) == (5, 1, "player")
    assert stand["options"] == [{"cell": "player_5", "hand": "player", "draw": False, "by": "participant"}]
    assert stand["bank"] == {"bank": 5000, "wagers": 2500, "won": -2500, "commission": 0, "bank_after": 2500}
    assert [(b["result"], b["payout"]) for b in stand["bets"]] == [("win", 5000)]
    draw = json.loads(run("resolve", "3,2,2,K,9,5", "--variant", "chemin_de_fer", "--option", "player=draw",
                          "--bet", "player=2500", "--bank", "5000", "--json").stdout)
    assert (draw["player"]["cards"], draw["banker"]["cards"], draw["winner"]) == (["3", "2", "9"], ["2", "K", "5"],
                                                                                 "banker")
    assert draw["bank"] == {"bank": 5000, "wagers": 2500, "won": 2500, "commission": 125, "bank_after": 7375}
    # nobody decides the Banker's 5 giving 4: the cell's default policy, here stated
    d = json.loads(run("resolve", "K,2,4,3,4,5", "--variant", "chemin_de_fer", "--option", "banker_5_4=stand",
                       "--json").stdout)
    assert d["options"] == [{"cell": "banker_5_4", "hand": "banker", "draw": False, "by": "default"}]
    r = run("resolve", "3,2,2,K,9,5", "--variant", "chemin_de_fer", "--option", "player=sit")
    assert r.exit_code == 2 and "say draw or stand" in r.output
    r = run("resolve", "3,2,2,K,9,5", "--option", "player=draw")
    assert r.exit_code == 2 and "--option is for --variant chemin_de_fer" in r.output


def test_odds_chemin_de_fer_under_a_stated_policy():
    d = json.loads(run("odds", "--variant", "chemin_de_fer", "--json").stdout)
    assert (d["counts"]["banker"], d["counts"]["player"]) == (2_292_252_566_437_888, 2_230_518_282_592_256)
    assert d["policy"] == {"player_5": "draw", "banker_3_9": "draw", "banker_4_1": "stand", "banker_5_4": "draw"}
    s = json.loads(run("odds", "--variant", "chemin_de_fer", "--option", "player_5=stand", "--json").stdout)
    assert s["policy"]["player_5"] == "stand" and s["counts"]["player"] != d["counts"]["player"]
    assert set(s["wagers"]) == {"player", "banco", "banco_suivi", "bank"}
