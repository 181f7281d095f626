"""Issue 24, the pages at a shoe's end and item 9's answers, on the in-memory bus: after the cutting card's last
round (``ShoeFinished``, rules digest §1.12) and before the shoe is closed, the table-side scoreboard and the
floor say the shoe is finished (as the console's next step does), and no page shows "Odds of the next round"
from it; once closed, "Shoe closed". A refused withdrawal reads "a withdrawal" (it has no seat), and a bonus
bet's result is said once ("lose", not "lose (lose)")."""

from __future__ import annotations

import re

import httpx

from tests.services.test_pit_pages import SAME, TERMINAL, T, client, login, pit_app

#: the cutting card 17 cards into 8 decks (399 of 416 behind it): the shoe finishes within a few rounds
RULES = {"end_card_offset": 399}
MAX_ROUNDS = 8


async def _play_to_the_end_of_the_shoe(c: httpx.AsyncClient) -> tuple[str, int]:
    """Open the table, load a short shoe, play rounds without bets until the console's next step is
    "Close the shoe" (the dealing service's ``ShoeFinished``); the shoe id and the rounds played."""
    assert (await c.post(f"/command/tables/{T}/open", json={"actor": "d-1", "profile": "punto_banco"},
                         headers=SAME)).status_code == 200
    r = await c.post(f"/command/tables/{T}/shoe", json={"actor": "d-1", "cut_at": 150, "rules": RULES},
                     headers=SAME)
    assert r.status_code == 200, r.text
    shoe = r.json()["shoe_id"]
    for played in range(MAX_ROUNDS):
        page = (await c.get(f"/console/{T}")).text
        if 'data-next="end_shoe"' in page:
            return shoe, played
        assert 'data-next="open_round"' in page, re.findall(r'data-next="[^"]*"', page)
        # mid-shoe: the scoreboard and the floor say nothing of an end
        assert "Shoe finished" not in (await c.get(f"/scoreboard/{T}/board")).text
        assert "Shoe finished" not in (await c.get("/")).text
        rnd = (await c.post(f"/command/tables/{T}/rounds", json={"actor": "d-1", "shoe_id": shoe},
                            headers=SAME)).json()
        r = await c.post(f"/command/tables/{T}/rounds/no-more-bets",
                         json={"actor": "d-1", "round_id": rnd["round_id"]}, headers=SAME)
        assert r.status_code == 200, r.text
    raise AssertionError(f"the shoe was not finished after {MAX_ROUNDS} rounds")


async def test_the_scoreboard_and_the_floor_say_the_shoe_is_finished_until_it_is_closed():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        shoe, played = await _play_to_the_end_of_the_shoe(c)
        assert played >= 2  # the round the cutting card came out in, and one more
        board = (await c.get(f"/scoreboard/{T}/board")).text
        assert f'id="sb-finished-{T}">Shoe finished: the cutting card is out, no further round</p>' in board
        assert f"{played} round(s) · " in board  # the shoe's progress still shown
        assert "Odds of the next round" not in board  # there is none from this shoe
        floor = (await c.get("/")).text
        card = floor.split(f'id="table-{T}"')[1].split("</article>")[0]
        assert re.search(r'<dd class="status">Shoe finished: the cutting card is out, no further round '
                         r'\(to be closed\)</dd>', card), card
        console = (await c.get(f"/console/{T}")).text
        assert "No odds: the shoe is finished" in console and "Odds of the next round" not in console

        r = await c.post(f"/command/tables/{T}/shoe/close",
                         json={"actor": "d-1", "shoe_id": shoe, "reason": "end_of_shoe"}, headers=SAME)
        assert r.status_code == 200, r.text
        board = (await c.get(f"/scoreboard/{T}/board")).text
        assert "<p>Shoe closed</p>" in board and "Shoe finished" not in board
        assert "Odds of the next round" not in board
        card = (await c.get("/")).text.split(f'id="table-{T}"')[1].split("</article>")[0]
        assert '<dd class="status">Shoe closed</dd>' in card
        console = (await c.get(f"/console/{T}")).text
        assert "No odds: the shoe is closed" in console and "Odds of the next round" not in console


async def test_a_refused_withdrawal_reads_a_withdrawal_and_a_bonus_result_is_said_once():
    pit, _ = pit_app()
    bearer = {"Authorization": f"Bearer {TERMINAL}"}
    async with client(pit) as c:
        await login(c, "dealer")
        assert (await c.post(f"/command/tables/{T}/open", json={"actor": "d-1", "profile": "punto_banco"},
                             headers=SAME)).status_code == 200
        shoe = (await c.post(f"/command/tables/{T}/shoe", json={"actor": "d-1", "cut_at": 150},
                             headers=SAME)).json()["shoe_id"]
        assert (await c.post(f"/command/tables/{T}/seats", json={"actor": "d-1", "seat": 1, "player_id": "p-1"},
                             headers=SAME)).status_code == 200
        rnd = (await c.post(f"/command/tables/{T}/rounds", json={"actor": "d-1", "shoe_id": shoe},
                            headers=SAME)).json()
        rid = rnd["round_id"]
        # a bonus bet on each side: one of them loses whatever the cards (a natural win of one side at most)
        for wager in ("bonus_player", "bonus_banker"):
            bet = {"round_id": rid, "seat": 1, "player_id": "p-1", "wager": wager, "amount": "5"}
            r = await c.post(f"/command/tables/{T}/bets", json=bet, headers=bearer)
            assert r.status_code == 200, r.text
        r = await c.post(f"/command/tables/{T}/bets/withdraw",
                         json={"round_id": rid, "bet_id": "no-such-bet", "player_id": "p-1"}, headers=bearer)
        assert r.status_code == 409, r.text
        refusal = r.json()["reason"]
        page = (await c.get(f"/console/{T}")).text
        refused = page.split('<ul class="refusals">')[1].split("</ul>")[0]
        assert re.fullmatch(rf"<li>a withdrawal: <code>{refusal}</code> [^<]*</li>", refused), refused
        assert "seat 0" not in page
        r = await c.post(f"/command/tables/{T}/rounds/no-more-bets", json={"actor": "d-1", "round_id": rid},
                         headers=SAME)
        assert r.status_code == 200, r.text
        page = (await c.get(f"/console/{T}")).text
        results = re.findall(r'<td class="settled-(\w+)">([^<]*)</td>', page)
        assert len(results) == 2 and ("lose", "lose") in results, results
        for result, words in results:  # the category only when it says more than the result
            assert words == result or (words.startswith(f"{result} (") and f"({result})" not in words), words
