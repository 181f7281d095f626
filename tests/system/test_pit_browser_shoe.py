"""A whole punto banco shoe run from the keyboard alone, in a real browser (headless Chromium, Selenium) against
a real broker (issue 24: "a dealer runs the console at speed").

Nothing is clicked and no field is filled by the test: every key goes to whatever the page focused, as a
dealer's keyboard does (:func:`_type`). The dealer logs in (the token, Enter), says who acts (the field the
console focuses while it is empty, Enter), opens the table (Enter), loads a shuffled shoe with its cutting card
17 cards in (``l``... the console focuses the load form: Tab to "Cutting card: cards behind it", 399 of 416,
Enter), seats p-1 (``s``, seat, Tab, player, Enter); then round after round ``o`` opens the round, the betting
terminal (a second origin, so a second session; its bet form focused as betting opens) bets $25 on the Banker
by its keys, and ``n`` calls "No more bets"; the dealing service deals. When the cutting card has come out and
the one more round the end-of-shoe policy allows is dealt (rules digest §1.12, ``ShoeFinished``), the
console's next step is "Close the shoe: end of shoe" and ``e`` closes it.

Checked against the log (the topics themselves, read after): as many rounds resolved and settled as the
console played, each result the console showed (winner and points) the log's, one $25.00 bet settled per round,
the dealing service's ``ShoeFinished`` counting those rounds, the shoe closed with reason ``end_of_shoe``.
A physical shoe (table ``PW2``) the same way, its reader's reports typed: ``b`` the burn, ``c``... each card
of each round, the card field focused again after each, to the end of the shoe.
Screenshots: ``var/screenshots/shoe-*.png``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from contracts import topics as T
from contracts.events import CardDrawn, RoundResolved, RoundSettled, ShoeClosed, ShoeFinished
from tests.system.test_pit_browser import (
    TERMINAL,
    TOKENS,
    PitServer,
    _answer,
    _focused,
    _round_attr,
    _shot,
    _start,
    _wait,
    browser,  # noqa: F401 - the module's browser fixture
    log_events,
)

TABLE = "PW1"  # the helpers read this table's panels (_round_attr); a server of this module's own
#: the cutting card's place: 399 cards behind it in 8 decks (416), so 17 cards in (ShoeRules allows 0..399)
CUTTING_CARD_BEHIND = "399"
MAX_ROUNDS = 6  # burn ≥ 2 cards, rounds ≥ 4: the cutting card is out by round 4, and one more round


@pytest.fixture(scope="module")
def server(kafka_bootstrap: str) -> Iterator[PitServer]:
    srv = _start(PitServer(kafka_bootstrap))
    try:
        yield srv
    finally:
        srv.shutdown()


def _type(d: Any, *keys: str) -> None:
    """Keys to the element the page focused (nothing located, nothing clicked)."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(d).send_keys(*keys).perform()


def _active_id(d: Any) -> str:
    return str(d.execute_script("return document.activeElement ? document.activeElement.id : ''"))


def _active_name(d: Any) -> str:
    return str(d.execute_script("return document.activeElement ? (document.activeElement.name || '') : ''"))


def _fresh(d: Any, action: str) -> None:
    """Empty ``action``'s answer so the next one read is this press's (the form is not touched)."""
    d.execute_script("var o = document.querySelector('#form-' + arguments[0] + ' output.answer');"
                     "if (o) o.textContent = ''", action)


def _answers_shown(d: Any) -> dict[str, str]:
    """The answers the forms shown now carry ({action: words}, the empty ones left out)."""
    return dict(d.execute_script(
        "return Array.from(document.querySelectorAll('form.act:not([hidden])'))"
        ".map(f => [f.dataset.action, f.querySelector('output.answer').textContent])"
        ".filter(p => p[1])"))


def _login_by_keys(d: Any, base: str, then: str, token: str, role: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d.get(f"{base}/login?next={then}")
    _wait(d, lambda _: _active_id(d) == "token", "the token field focused")
    _type(d, token, Keys.ENTER)
    _wait(d, lambda _: d.find_elements(By.ID, "role") and role in d.find_element(By.ID, "role").text,
          f"logged in as {role}")


def test_a_whole_punto_banco_shoe_is_run_from_the_keyboard_alone(server: PitServer, browser: Any):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = browser
    a, b = f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"
    _login_by_keys(d, a, f"/console/{TABLE}", TOKENS["dealer"], "dealer")
    console = d.current_window_handle
    # who acts is asked first: the field is focused while empty, Enter goes on to the next step
    _wait(d, lambda _: _active_id(d) == "actor", "the dealer's field focused")
    _type(d, "dealer-kim", Keys.ENTER)
    _wait(d, lambda _: _focused(d) == "open_table", "Open table focused")
    _fresh(d, "open_table")
    _type(d, Keys.ENTER)  # the profile offered first: punto_banco
    assert _answer(d, "open_table").startswith("accepted: table_opened")
    _wait(d, lambda _: _focused(d) == "load_shoe" and _active_name(d) == "cut_at", "Load shoe focused, cut first")
    _type(d, Keys.TAB)
    assert _active_name(d) == "rules.end_card_offset"
    _fresh(d, "load_shoe")
    _type(d, CUTTING_CARD_BEHIND, Keys.ENTER)
    answer = _answer(d, "load_shoe")
    assert answer.startswith("accepted: shoe_loaded, shoe_burned"), answer
    shoe_id = re.search(r"shoe_id (\S+?)[,)]", answer).group(1)  # type: ignore[union-attr]
    _wait(d, lambda _: _focused(d) == "open_round", "Open round focused once the shoe is in")
    _type(d, "s")  # seat a player: the form's first field
    _wait(d, lambda _: _focused(d) == "seat_player" and _active_name(d) == "seat", "the seat field focused")
    _fresh(d, "seat_player")
    _type(d, "1", Keys.TAB, "p-1", Keys.ENTER)
    assert _answer(d, "seat_player").startswith("accepted: player_seated")
    assert d.execute_script("return sessionStorage.getItem('croupier.actor')") == "dealer-kim"

    # the betting terminal: a second origin (a second session), in a second tab
    d.switch_to.new_window("tab")
    terminal = d.current_window_handle
    _login_by_keys(d, b, f"/console/{TABLE}", TERMINAL, "bettor")

    played: list[dict[str, str]] = []
    while True:
        d.switch_to.window(console)
        _wait(d, lambda _: _focused(d) in ("open_round", "end_shoe"), "the next round, or the end of the shoe")
        # the last round's answers ("accepted: round_opened", "betting_closed", the seating) are not shown
        # as this step's: the forms offered again start empty ("Last:" keeps the last answer)
        assert not played or _answers_shown(d) == {}, _answers_shown(d)
        if _focused(d) == "end_shoe":
            break
        assert len(played) < MAX_ROUNDS, f"the shoe was not finished after {len(played)} rounds"
        before = _round_attr(d, "data-round-id")
        _fresh(d, "open_round")
        _type(d, "o")
        answer = _answer(d, "open_round")
        assert answer.startswith("accepted: round_opened, betting_opened"), answer
        _wait(d, lambda _, was=before: _round_attr(d, "data-status") == "betting"
              and _round_attr(d, "data-round-id") != was, "the console shows betting open")
        round_id = _round_attr(d, "data-round-id")

        d.switch_to.window(terminal)
        _wait(d, lambda _, rid=round_id: _round_attr(d, "data-round-id") == rid and _focused(d) == "place_bet",
              "the terminal's bet form focused as betting opens")
        _fresh(d, "place_bet")
        if not played:  # the first bet typed; the next rounds' the same, sent by Enter on the focused button
            assert _active_name(d) == "seat"
            _type(d, "1", Keys.TAB, "banker", Keys.TAB, "25", Keys.ENTER)
        else:
            assert d.execute_script("return document.activeElement.type") == "submit"
            _type(d, Keys.ENTER)
        answer = _answer(d, "place_bet")
        assert answer.startswith("accepted: bet placed: $25.00 on banker"), answer

        d.switch_to.window(console)
        _wait(d, lambda _: _focused(d) == "no_more_bets" and d.find_elements(By.CSS_SELECTOR,
                                                                              f"#round-{TABLE} tr.bet"),
              '"No more bets" focused, the bet shown')
        _fresh(d, "no_more_bets")
        _type(d, "n")
        assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
        totals = _wait(d, lambda _: d.find_elements(By.ID, f"totals-{TABLE}"), "the round settled on the console")
        assert "Settled: 1 bet(s), stakes $25.00" in totals[0].text, totals[0].text
        outcome = d.find_element(By.ID, f"outcome-{TABLE}")
        played.append({"round_id": round_id, "winner": str(outcome.get_attribute("class")).split("winner-")[1],
                       "outcome": outcome.text})
        if len(played) == 1:
            _shot(d, "shoe-console-first-round.png")

    # the end of the shoe: the only step offered (with the seating), closed by its key
    assert _round_attr(d, "data-valid").split() == ["end_shoe", "seat_player", "leave_seat", "collect_commission"]
    assert "end of shoe" in d.find_element(By.ID, "phase").text
    assert "No odds: the shoe is finished" in d.find_element(By.ID, f"odds-{TABLE}").text  # no next round
    _shot(d, "shoe-console-end-of-shoe.png")
    _fresh(d, "end_shoe")
    _type(d, "e")
    assert _answer(d, "end_shoe").startswith("accepted: shoe_closed")
    _wait(d, lambda _: _focused(d) == "load_shoe", "Load shoe focused: the next shoe")
    history = d.find_element(By.ID, f"history-{TABLE}").text
    _shot(d, "shoe-console-closed.png")

    # the log: every round the console played resolved and settled as shown; the shoe finished and closed
    events = [e.payload for e in log_events(server, TABLE, T.DEALING_EVENTS, T.SETTLEMENT_EVENTS, T.SHOE_EVENTS)]
    resolved = {p.round_id: p for p in events if isinstance(p, RoundResolved)}
    settled = {p.round_id: p for p in events if isinstance(p, RoundSettled)}
    assert list(resolved) == [r["round_id"] for r in played], (list(resolved), played)
    assert set(settled) == set(resolved)
    assert [(s.bets, s.stakes) for s in settled.values()] == [(1, 2500)] * len(played)
    for r in played:
        p = resolved[r["round_id"]]
        assert r["winner"] == p.winner, (r, p)
        assert f"Player {' '.join(p.player_cards)} = {p.player_points}" in r["outcome"], (r, p)
        assert f"Banker {' '.join(p.banker_cards)} = {p.banker_points}" in r["outcome"], (r, p)
    finished = [p for p in events if isinstance(p, ShoeFinished)]
    assert [(f.shoe_id, f.rounds) for f in finished] == [(shoe_id, len(played))]
    assert len(played) >= 2  # the round the cutting card came out in, and one more (ONE_MORE_ROUND)
    closed = [p for p in events if isinstance(p, ShoeClosed)]
    assert [(c.shoe_id, c.reason) for c in closed] == [(shoe_id, "end_of_shoe")]
    # cards dealt: the burn and every round's cards, past the cutting card (17 cards in)
    assert closed[0].cards_dealt > 17
    dealt = sum(len(p.player_cards) + len(p.banker_cards) for p in resolved.values())
    assert closed[0].cards_dealt - dealt in range(2, 12), (closed[0].cards_dealt, dealt)  # the burn: 2..11 cards
    # the console's "Recent rounds" (the rounds before the last, newest first, up to 5) says the same
    for n, r in enumerate(played[:-1], start=1):
        p = resolved[r["round_id"]]
        said = "tie" if p.winner == "tie" else f"{p.winner} wins"
        assert f"#{n}: {said} {p.player_points}-{p.banker_points}" in history, (n, history)


#: the burn of the physical shoe: a King exposed burns 10 cards (tens as ten), so the first round starts 11 in
BURN_EXPOSED, BURNED = "Kh", "2c 3c 4c 5c 6c 7c 8c 9c 2d 3d"
#: every round's cards as the reader reports them, in the order dealt (P, B, P, B): naturals, Player 9 - 8
NATURALS = ("9h", "8d", "Kc", "Kd")


def _attr(d: Any, table: str, name: str) -> str:
    """The round element's attribute ``name``; asked again when the live page swapped the element between the
    find and the read (StaleElementReferenceException, seen in a loaded CI run)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(20):
        try:
            return str(d.find_element(By.ID, f"round-{table}").get_attribute(name) or "")
        except StaleElementReferenceException:
            continue
    return str(d.find_element(By.ID, f"round-{table}").get_attribute(name) or "")


def test_a_physical_shoe_is_burned_and_read_card_by_card_from_the_keyboard_to_its_end(
        server: PitServer, browser: Any):  # noqa: F811
    """A physical shoe (cards read by its reader, entered by the dealer): ``b`` the burn (a King: ten cards),
    then round after round ``o``, ``n`` and ``c`` with each card typed and Enter, the next card's field focused
    again after each, until the cutting card (17 cards in) has come out in round 2 and round 3 is dealt:
    ``e``. The log holds the three rounds as typed, each card drawn by the dealer."""
    from selenium.webdriver.common.keys import Keys

    d, table = browser, "PW2"
    a = f"http://127.0.0.1:{server.port}"
    d.switch_to.window(d.window_handles[0])
    _login_by_keys(d, a, f"/console/{table}", TOKENS["dealer"], "dealer")
    if _active_id(d) == "actor":  # this browser session may know the dealer already (the test above)
        _type(d, "dealer-kim", Keys.ENTER)
    _wait(d, lambda _: _focused(d) == "open_table", "Open table focused")
    _fresh(d, "open_table")
    _type(d, Keys.ENTER)
    assert _answer(d, "open_table").startswith("accepted: table_opened")
    _wait(d, lambda _: _focused(d) == "load_shoe" and _active_name(d) == "cut_at", "Load shoe focused")
    from selenium.webdriver.common.action_chains import ActionChains

    _type(d, Keys.TAB, CUTTING_CARD_BEHIND, Keys.TAB, Keys.SPACE)  # the cutting card, then "physical" ticked
    ActionChains(d).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()  # back to a field
    assert d.execute_script("return document.querySelector('#form-load_shoe input[name=physical]').checked")
    _fresh(d, "load_shoe")
    _type(d, Keys.ENTER)
    answer = _answer(d, "load_shoe")
    assert answer.startswith("accepted: shoe_loaded"), answer
    _wait(d, lambda _: _focused(d) == "read_burn" and _active_name(d) == "exposed", "the burn's exposed card")
    _fresh(d, "read_burn")
    _type(d, BURN_EXPOSED, Keys.TAB, BURNED, Keys.ENTER)
    assert _answer(d, "read_burn").startswith("accepted: shoe_burned")

    rounds: list[str] = []
    while True:
        _wait(d, lambda _: _focused(d) in ("open_round", "end_shoe"), "the next round, or the end of the shoe")
        if _focused(d) == "end_shoe":
            break
        assert len(rounds) < 3, "the shoe was not finished after 3 rounds"
        _fresh(d, "open_round")
        _type(d, "o")
        assert _answer(d, "open_round").startswith("accepted: round_opened")
        _wait(d, lambda _: _focused(d) == "no_more_bets", '"No more bets" focused')
        rounds.append(_attr(d, table, "data-round-id"))
        _fresh(d, "no_more_bets")
        _type(d, "n")
        assert _answer(d, "no_more_bets").startswith("accepted: betting_closed")
        for n, card in enumerate(NATURALS, start=1):
            _wait(d, lambda _, k=n: _focused(d) == "read_card" and _active_name(d) == "card"
                  and _attr(d, table, "data-next-card") == str(k), f"card {n}'s field focused")
            _fresh(d, "read_card")
            _type(d, card, Keys.ENTER)
            assert _answer(d, "read_card").startswith("accepted: card_drawn"), card
        _wait(d, lambda _: _attr(d, table, "data-status") == "settled", "the round settled")
        if len(rounds) == 2:
            _shot(d, "shoe-physical-console.png")
    _fresh(d, "end_shoe")
    _type(d, "e")
    assert _answer(d, "end_shoe").startswith("accepted: shoe_closed")
    _wait(d, lambda _: _focused(d) == "load_shoe", "Load shoe focused: the next shoe")

    events = log_events(server, table, T.DEALING_EVENTS, T.SHOE_EVENTS)
    resolved = [e.payload for e in events if isinstance(e.payload, RoundResolved)]
    assert [(p.round_id, p.player_cards, p.banker_cards, p.player_points, p.banker_points, p.winner)
            for p in resolved] == [(r, ["9h", "Kc"], ["8d", "Kd"], 9, 8, "player") for r in rounds]
    drawn = [(e.payload.card, e.actor) for e in events if isinstance(e.payload, CardDrawn)]
    assert drawn == [(c, "dealer-kim") for c in NATURALS] * 3
    assert [(p.rounds, p.shoe_id) for p in (e.payload for e in events) if isinstance(p, ShoeFinished)] == [
        (3, _attr(d, table, "data-shoe-id"))]
    closed = [p for p in (e.payload for e in events) if isinstance(p, ShoeClosed)]
    assert [(c.reason, c.cards_dealt) for c in closed] == [("end_of_shoe", 11 + 3 * 4)]
