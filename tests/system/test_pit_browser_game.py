"""Chemin de fer and the curator in a real browser (headless Chromium, Selenium) against a real broker: the
console offers only what the table's state allows (:mod:`services.projection.console_steps`).

* Chemin de fer, physical shoe (13:69F-4.8): the dealer opens the round with the Banker and the bank; the
  betting terminal of p-1 goes banco; "No more bets"; the Dominant Player and "Cards" are shown; the dealer
  keys each card read, which the shoe service records **under the Banker** who deals (the ``CardDrawn`` actor
  is the Banker, the dealer who keyed it its ``keyed_by``: issue 28's leftover); the Player's Hand at 5 is an option, decided at the terminal (stand). A second round: the
  option is not decided, and the table clock's "option expired" on the console applies the table's default.
* A curator table (13:69F-3.6(b), 3.11(a)): the dealer offers the shoe to seat 1; after the round the shoe
  passes: by rule when the Banker's Hand lost, else by the curator's own option on the console.

Screenshots go to ``var/screenshots/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from contracts import topics as T
from contracts.events import CardDrawn
from tests.system.test_pit_browser import (
    TERMINAL,
    PitServer,
    _act,
    _answer,
    _key,
    _login,
    _shot,
    _shown,
    _start,
    _text_of,
    _wait,
    browser,  # noqa: F401 - the module's browser fixture
    log_events,
)

CF, CU = "CF1", "CU1"


@pytest.fixture(scope="module")
def server(kafka_bootstrap: str) -> Iterator[PitServer]:
    srv = _start(PitServer(kafka_bootstrap))
    try:
        yield srv
    finally:
        srv.shutdown()


def _round(d: Any, table: str, attr: str) -> str:
    from selenium.webdriver.common.by import By

    return str(d.find_element(By.ID, f"round-{table}").get_attribute(attr) or "")


def _text(d: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    got = d.find_elements(By.ID, element_id)
    return str(got[0].text) if got else ""


def _card_actors(srv: PitServer, table: str) -> list[tuple[str, str, str]]:
    """``(card, actor, keyed_by)`` of every ``CardDrawn`` of ``table`` on the shoe's events topic."""
    return [(env.payload.card, env.actor or "", env.payload.keyed_by)
            for env in log_events(srv, table, T.SHOE_EVENTS) if isinstance(env.payload, CardDrawn)]


def _send(d: Any, action: str, **fields: str) -> str:
    """:func:`_act`, pressed again while the answer is "No answer in time" (the console's retry: the same
    request id, so never a second command), at most three times: a loaded machine may take longer than
    the console's wait."""
    from selenium.webdriver.common.by import By

    answer = _act(d, action, **fields)
    for _ in range(2):
        if not answer.startswith("No answer"):
            break
        form = d.find_element(By.ID, f"form-{action}")
        out = form.find_element(By.CSS_SELECTOR, "output.answer")
        d.execute_script("arguments[0].textContent = ''", out)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        answer = _text_of(d, out, action)
    return answer


def _read_cards(d: Any, table: str, cards: list[str]) -> None:
    for card in cards:
        _wait(d, lambda _: "read_card" in _shown(d), f"the console asks for card {card}")
        answer = _send(d, "read_card", card=card)
        assert answer.startswith("accepted: card_drawn"), answer


def test_a_chemin_de_fer_round_with_a_banco_an_option_decided_at_the_terminal_and_one_expired(
        server: PitServer, browser: Any):  # noqa: F811
    from selenium.webdriver.common.by import By

    d = browser
    a, b = f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"
    _login(d, a, "dealer", f"/console/{CF}")
    console = d.current_window_handle
    d.find_element(By.ID, "actor").send_keys("dealer-ana")
    assert _send(d, "open_table", profile="chemin_de_fer", **{"chemin.option_seconds": "12"}).startswith(
        "accepted: table_opened")
    _wait(d, lambda _: "load_shoe" in _shown(d), "the shoe's form once the table is open")
    d.find_element(By.CSS_SELECTOR, "#form-load_shoe input[name=physical]").click()
    assert _send(d, "load_shoe", cut_at="").startswith("accepted: shoe_loaded")
    _wait(d, lambda _: "read_burn" in _shown(d), "the burn's form for a physical shoe")
    assert _send(d, "read_burn", exposed="2h", burned="9c 9d").startswith("accepted: shoe_burned")
    for seat, player in (("1", "p-1"), ("2", "p-2")):
        assert _send(d, "seat_player", seat=seat, player_id=player).startswith("accepted: player_seated")
    # the open form of a chemin de fer table has the Banker and the bank
    _wait(d, lambda _: "open_round" in _shown(d), "Open round")
    assert d.find_element(By.CSS_SELECTOR, "#form-open_round input[name=banker_seat]").is_displayed()
    answer = _send(d, "open_round", banker_seat="2", banker_player_id="p-2", bank="1,000")
    assert answer.startswith("accepted: round_opened"), answer
    _wait(d, lambda _: "Banker: seat 2 (p-2), bank $1,000.00" in _text(d, f"chem-{CF}"), "the Banker and the bank")

    # the terminal of p-1: banco, the whole bank
    d.switch_to.new_window("tab")
    terminal = d.current_window_handle
    _login(d, b, "bettor", f"/console/{CF}", token=TERMINAL)
    _wait(d, lambda _: _shown(d) == ["place_bet"], "the terminal's bet form")
    assert _send(d, "place_bet", seat="1", wager="banco", amount="1,000").startswith("accepted: bet placed")

    d.switch_to.window(console)
    _wait(d, lambda _: "no_more_bets" in _shown(d), '"No more bets"')
    _key(d, "n")
    assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
    _wait(d, lambda _: "Dominant Player: seat 1 (p-1), $1,000.00 by banco" in _text(d, f"dominant-{CF}"),
          "the Dominant Player, by banco")
    _wait(d, lambda _: '"Cards"' in _text(d, f"chem-{CF}"), '"Cards" called')
    # Player 2c 3d = 5 (an option: 13:69F-4.8(c)), Banker Kh 7s = 7 (stands)
    _read_cards(d, CF, ["2c", "Kh", "3d", "7s"])
    _wait(d, lambda _: "seat 1 (p-1) draws or stands" in _text(d, f"option-{CF}"), "the option pending")
    assert sorted(_shown(d)) == ["expire_option", "void_round"]  # no card while the option waits
    _shot(d, "chemin-option-console.png")

    d.switch_to.window(terminal)
    _wait(d, lambda _: _shown(d) == ["decide_option"], "the terminal offers its player's option")
    _shot(d, "chemin-option-terminal.png")
    answer = _send(d, "decide_option", draw="Stand")
    assert answer.startswith("accepted: option_decided"), answer

    d.switch_to.window(console)
    _wait(d, lambda _: _text(d, f"bank-{CF}"), "the bank's settlement")
    assert "Banker wins" in _text(d, f"outcome-{CF}")
    assert "draw or stand" not in _text(d, f"chem-{CF}") and "stand, by seat 1 (p-1)" in _text(d, f"chem-{CF}")
    bank = _text(d, f"bank-{CF}")
    assert bank.startswith("Bank settled: won $1,000.00"), bank
    _shot(d, "chemin-settled.png")
    # issue 28: every physical card read is recorded under the Banker who deals (4.8(d)), keyed by the dealer
    actors = _card_actors(server, CF)
    assert actors == [(c, "p-2", "dealer-ana") for c in ("2c", "Kh", "3d", "7s")], actors

    # round 2: the Banker keeps the bank (all of it up again); no decision in time: the table's default
    kept = re.search(r"the bank is now \$([\d,]+\.\d\d)", bank)
    assert kept is not None, bank
    _wait(d, lambda _: "open_round" in _shown(d), "Open round again")
    assert _send(d, "open_round", banker_seat="2", banker_player_id="p-2",
                bank=kept.group(1)).startswith("accepted: round_opened")
    d.switch_to.window(terminal)
    _wait(d, lambda _: _shown(d) == ["place_bet"], "the terminal's bet form, round 2")
    assert _send(d, "place_bet", seat="1", wager="player", amount="100").startswith("accepted: bet placed")
    d.switch_to.window(console)
    _wait(d, lambda _: "no_more_bets" in _shown(d), '"No more bets", round 2')
    _key(d, "n")
    assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
    _read_cards(d, CF, ["4c", "Ah", "Ad", "6s"])  # Player 5 (an option), Banker 7
    _wait(d, lambda _: "expire_option" in _shown(d), "the table clock's form")
    _wait(d, lambda _: "deadline passed" in _text(d, f"option-{CF}"), "the countdown past the deadline")
    answer = _send(d, "expire_option")
    assert answer.startswith("accepted: option_decided"), answer
    _wait(d, lambda _: "draw, by the table's default" in _text(d, f"chem-{CF}"), "the default applied, in words")
    _read_cards(d, CF, ["Ks"])  # the default (player_5 draws) asks a third card for the Player's Hand
    _wait(d, lambda _: _text(d, f"bank-{CF}"), "round 2's bank settlement")
    _shot(d, "chemin-expired.png")


def test_a_curator_table_offers_the_shoe_and_passes_it(server: PitServer, browser: Any):  # noqa: F811
    from selenium.webdriver.common.by import By

    d = browser
    a, b = f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"
    d.switch_to.new_window("tab")
    d.get(f"{a}/console/{CU}")
    console = d.current_window_handle
    _wait(d, lambda _: _shown(d) == ["open_table"], "Open table")
    if not d.find_element(By.ID, "actor").get_attribute("value"):
        d.find_element(By.ID, "actor").send_keys("dealer-ana")
    assert _send(d, "open_table", profile="punto_banco_curator").startswith("accepted: table_opened")
    _wait(d, lambda _: "load_shoe" in _shown(d), "Load shoe")
    assert _send(d, "load_shoe", cut_at="200").startswith("accepted: shoe_loaded")
    for seat, player in (("1", "p-1"), ("3", "p-3")):
        _wait(d, lambda _: "seat_player" in _shown(d), "Seat player")
        assert _send(d, "seat_player", seat=seat, player_id=player).startswith("accepted: player_seated")
    # no one holds the shoe: the dealer offers it, the next step
    _wait(d, lambda _: _round(d, CU, "data-next") == "offer_shoe", "Offer the shoe, next")
    assert "held by the dealer" in _text(d, f"curator-{CU}")
    assert _send(d, "offer_shoe", seat="1", player_id="p-1").startswith("accepted: shoe_offered")
    _wait(d, lambda _: "held by seat 1 (p-1)" in _text(d, f"curator-{CU}"), "the curator shown")
    assert "offer_shoe" not in _shown(d) and "pass_shoe" in _shown(d)
    assert _send(d, "open_round").startswith("accepted: round_opened")
    d.switch_to.new_window("tab")
    _login(d, b, "bettor", f"/console/{CU}", token=TERMINAL)
    _wait(d, lambda _: _shown(d) == ["place_bet"], "the terminal's bet form")
    assert _send(d, "place_bet", seat="1", wager="banker", amount="25").startswith("accepted: bet placed")
    d.switch_to.window(console)
    _wait(d, lambda _: "no_more_bets" in _shown(d), '"No more bets"')
    _key(d, "n")
    assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
    outcome = _wait(d, lambda _: _text(d, f"outcome-{CU}"), "the result")
    if outcome.startswith("Player wins"):  # the Banker's Hand lost: the shoe passes by rule (3.11(a)1)
        _wait(d, lambda _: "must pass" in _text(d, f"curator-{CU}"), "the forced pass, in words")
        assert "keep_shoe" not in _shown(d)
    else:  # the curator's option: keep or pass, sent as the curator
        _wait(d, lambda _: _round(d, CU, "data-next") == "keep_shoe" and "pass_shoe" in _shown(d),
              "keep or pass, due")
        _shot(d, "curator-keep-or-pass.png")
        answer = _send(d, "pass_shoe")
        assert answer.startswith("accepted: shoe_passed"), answer
        _wait(d, lambda _: "the curator passed it" in _text(d, f"curator-{CU}"), "passed, in words")
    _wait(d, lambda _: "held by seat 3 (p-3)" in _text(d, f"curator-{CU}"), "the next participant holds it")
    _shot(d, "curator-passed.png")
