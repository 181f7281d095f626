"""The pit's pages for chemin de fer and a curator table, and the scoreboard's public odds, on the in-memory
floor (the command API under ``/command``, the projection's live state)."""

from __future__ import annotations

import re

from tests.services.test_pit_pages import SAME, TERMINAL, T, client, login, pit_app, play_round

D = {"actor": "d-1"}


async def test_a_curator_table_console_offers_the_shoe_then_keep_or_pass_sent_as_the_curator():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        assert (await c.post(f"/command/tables/{T}/open", json={**D, "profile": "punto_banco_curator"},
                             headers=SAME)).status_code == 200
        shoe = (await c.post(f"/command/tables/{T}/shoe", json={**D, "cut_at": 150}, headers=SAME)).json()
        for seat, player in ((1, "p-1"), (3, "p-3")):
            r = await c.post(f"/command/tables/{T}/seats", json={**D, "seat": seat, "player_id": player}, headers=SAME)
            assert r.status_code == 200
        page = (await c.get(f"/console/{T}")).text
        assert 'data-next="offer_shoe"' in page and "held by the dealer: offer it to a player" in page
        assert 'id="form-offer_shoe"' in page and 'data-path="/command/tables/T1/curator/offer"' in page
        # keep and pass are sent as the curator: a hidden actor the round panel fills (data-curator)
        assert re.search(r'id="form-keep_shoe".*?<input type="hidden" name="actor" data-auto="curator">', page, re.DOTALL)
        r = await c.post(f"/command/tables/{T}/curator/offer", json={**D, "seat": 1, "player_id": "p-1"},
                         headers=SAME)
        assert r.status_code == 200, r.text
        for _ in range(40):  # rounds until the Banker's Hand does not lose: the curator's option is due
            rnd = (await c.post(f"/command/tables/{T}/rounds", json={**D, "shoe_id": shoe["shoe_id"]},
                                headers=SAME)).json()
            r = await c.post(f"/command/tables/{T}/rounds/no-more-bets", json={**D, "round_id": rnd["round_id"]},
                             headers=SAME)
            assert r.status_code == 200, r.text
            page = (await c.get(f"/console/{T}")).text
            if 'data-next="keep_shoe"' in page:
                break
            assert "the Banker&#39;s Hand lost (it must pass)" in page, re.findall(r'id="curator-T1">[^<]*', page)
            return  # passed by rule from seat 1: seat 3 holds it, and the option is proven on the other branch
        assert f'data-curator="p-1" data-due="{rnd["round_id"]}"' in page
        r = await c.post(f"/command/tables/{T}/curator/keep", json={"actor": "p-1", "round_id": rnd["round_id"]},
                         headers=SAME)
        assert r.status_code == 200, r.text
        page = (await c.get(f"/console/{T}")).text
        assert "kept by seat 1 (p-1)" in page and 'data-next="open_round"' in page


async def test_a_chemin_de_fer_console_has_the_bank_fields_and_the_terminal_its_option_form():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        assert (await c.post(f"/command/tables/{T}/open", json={**D, "profile": "chemin_de_fer"},
                             headers=SAME)).status_code == 200
        page = (await c.get(f"/console/{T}")).text
        assert 'data-game="chemin_de_fer"' in page
        assert '<span class="chem-only"><label>Banker\'s seat <input name="banker_seat"' in page
        assert 'name="bank"' in page and 'id="form-expire_option"' in page
        assert 'name="chemin.option_seconds"' in page  # the option time, chosen when the table opens
    async with client(pit) as c:
        r = await c.post("/login", content=f"token={TERMINAL}", headers={**SAME, "Content-Type":
                                                                        "application/x-www-form-urlencoded"})
        assert r.status_code == 303
        html = (await c.get(f"/console/{T}")).text
        assert 'id="form-decide_option"' in html and 'data-auto="option_player"' in html
        assert 'id="form-expire_option"' not in html  # the table clock is the dealer's


async def test_the_scoreboard_shows_the_public_odds_never_the_surveillance_view():
    pit, _ = pit_app()
    async with client(pit) as c:
        await login(c, "dealer")
        await play_round(c)
    s = pit.pages.tables()[T]
    pub, surv = s.last_odds["public"], s.last_odds["surveillance"]
    assert sum(pub.composition) > sum(surv.composition)  # the burn: unseen at the table, known to surveillance
    async with client(pit) as c:  # the screen beside the table: no session
        html = (await c.get(f"/scoreboard/{T}/board")).text
        assert f"from the {sum(pub.composition)} cards not yet seen at the table" in html
        # the shoe's progress to the card (a few cards of 416 are under 5 %: the bar is not empty)
        out = s.shoe.cards_out
        assert 0 < out < 21 and f'<progress class="sb-progress" max="416" value="{out}"' in html
        shown = re.findall(r"<p class=\"(?:positive)?\"><b>([\w ]+)</b> ([\d.]+) %", html)
        assert shown == [(w.wager.replace("_", " ").capitalize(), f"{w.p_win * 100:.3f}") for w in pub.wagers]
        assert str(sum(surv.composition)) + " cards" not in html
        assert not any(f"{w.p_win * 100:.3f} %" in html for w in surv.wagers if
                       all(abs(w.p_win - p.p_win) > 1e-9 for p in pub.wagers))
        assert 'id="sb-odds-T1"' not in (await c.get(f"/scoreboard/{T}/board?odds=0")).text
        page = (await c.get(f"/scoreboard/{T}?odds=0")).text
        assert 'data-src="/scoreboard/T1/board?odds=0"' in page
