"""The human output of :mod:`croupier.replay`: a replay view (plain dicts) printed with Rich as plain text.

:func:`describe` puts one timeline entry in words (label, detail), for the command line and the pit's replay
page alike; :func:`render` prints a view. Every anomaly the audit found (``marks`` on an entry, a round or the
table) is printed on its own line right after what it is about, marked ``!``, never folded into the detail.
"""

from __future__ import annotations

from typing import Any

from croupier.replay_common import money, parse_time
from croupier.replay_marks import mark_line


def _t(at: str) -> str:
    """``2026-01-01T00:00:00.120000Z`` → ``2026-01-01 00:00:00.120``."""
    d = parse_time(at)
    return d.strftime("%Y-%m-%d %H:%M:%S.") + f"{d.microsecond // 1000:03d}"


def _cards(cs: list[str] | None) -> str:
    return " ".join(cs) if cs else "-"


def describe(entry: dict[str, Any]) -> tuple[str, str]:
    """A timeline entry as (label, detail), plain text."""
    ev = entry["event"]
    if ev == "round_opened":
        return "round opened", f"round {entry['number']} of shoe {entry['shoe_id']}"
    if ev == "betting_opened":
        return "betting opened", "place your bets"
    if ev == "bet_placed":
        return "bet", (f"seat {entry['seat']} {entry['player_id']}: {entry['wager']} {money(entry['amount_cents'])} "
                       f"({entry['amount_cents']} cents) [{entry['bet_id']}]")
    if ev == "bet_rejected":
        what = (f"seat {entry['seat']} {entry['player_id']}: {entry['wager'] or '-'} {money(entry['amount_cents'])} "
                f"({entry['amount_cents']} cents)")
        return "bet rejected", f"{what} - {entry['reason']}: {entry['detail']} [{entry['command_id']}]"
    if ev == "bet_withdrawn":
        if entry.get("reason") == "betting_closed":
            return "bet returned", f"{entry['bet_id']}: placed after \"No more bets\" by the log's time"
        return "bet withdrawn", entry["bet_id"]
    if ev == "betting_closed":
        return "no more bets", f"{entry['count']} bet(s) in the book, {money(entry['total_cents'])} staked"
    if ev == "card":
        where = (f"shoe position {entry['shoe_position']}, {entry['cards_left']} left"
                 + (", cutting card out" if entry["cutting_card_out"] else "")
                 if entry["shoe_position"] is not None else "no CardDrawn")
        hand = f"{entry['hand']} {entry['hand_position']}" if entry["hand"] else "?"
        by = (f"; dealt by {entry['dealt_by']}" if entry.get("dealt_by") else "") + (
            f", keyed by {entry['keyed_by']}" if entry.get("keyed_by") else "")
        return f"card {entry['n']}", f"{entry['card']} to {hand} ({where}{by}) - {entry['why']}"
    if ev == "points_announced":
        return "points", (f"Player {entry['player_points']}, Banker {entry['banker_points']}"
                          + (" - natural" if entry["natural"] else ""))
    if ev == "round_resolved":
        flags = [f for f in ("dragon_7", "panda_8") if entry[f]]
        nat = [h for h in ("player", "banker") if entry[f"{h}_natural"]]
        return "result", (f"{entry['winner']} wins" if entry["winner"] != "tie" else "tie") + (
            f": Player {_cards(entry['player_cards'])} = {entry['player_points']}, "
            f"Banker {_cards(entry['banker_cards'])} = {entry['banker_points']}; "
            f"{entry['cards_required']} cards"
            + (f"; natural: {', '.join(nat)}" if nat else "")
            + (f"; {', '.join(flags)}" if flags else ""))
    if ev == "round_voided":
        return "round void", entry["reason"]
    if ev == "dominant_player_chosen":
        return "dominant player", (f"seat {entry['seat']} {entry['player_id']} controls the Player's Hand "
                                   f"({entry['rule']}, {money(entry['wager_cents'])} against the bank; 13:69F-4.8(c))")
    if ev == "option_offered":
        return "option", (f"{entry['cell']}: seat {entry['seat']} {entry['player_id']} decides, draw or stand, within "
                          f"{entry['option_seconds']} s (default: {'draw' if entry['default_draw'] else 'stand'})")
    if ev == "option_decided":
        return "decided", (f"{entry['cell']}: {'draw' if entry['draw'] else 'stand'}, by "
                           + (f"seat {entry['seat']} {entry['player_id']}" if entry["by"] == "participant"
                              else "the table's default"))
    if ev == "bank_settled":
        com = entry["commission_cents"]
        return "bank", (f"seat {entry['seat']} {entry['player_id']}: bank {money(entry['bank_cents'])} against "
                        f"{money(entry['wagers_cents'])}, {'won' if entry['won_cents'] >= 0 else 'lost'} "
                        f"{money(abs(entry['won_cents']))}"
                        + (f", house commission {money(com)}{' accrued' if entry['commission_accrued'] else ''}"
                           if com else "") + f"; bank after {money(entry['bank_after_cents'])}")
    if ev == "bet_settled":
        c = entry["commission"]
        com = f", commission {money(c)}{' accrued' if entry['commission_accrued'] else ''}" if c else ""
        return "settled", (f"seat {entry['seat']} {entry['player_id']}: {entry['wager']} {money(entry['stake'])} "
                           f"{entry['result']} ({entry['category']}{', ' + entry['odds'] if entry['odds'] else ''})"
                           f", payout {money(entry['payout'])}{com}")
    if ev == "commission_accrued":
        return "commission owed", (f"seat {entry['seat']} {entry['player_id']}: +{money(entry['amount_cents'])}, "
                                   f"owes {money(entry['owed_cents'])}")
    if ev == "round_settled":
        return "round total", (f"{entry['bets']} bet(s): stakes {money(entry['stakes'])}, payouts "
                               f"{money(entry['payouts'])}, commission {money(entry['commission'])}, "
                               f"house {money(entry['table_result'])}")
    if ev == "irregularity":
        return "irregularity", f"{entry['kind']}: {entry['detail']}"
    if ev == "card_read_refused":
        return "card refused", f"{entry['card']} as card {entry['card_number']}: {entry['reason']}"
    if ev == "command_rejected":
        return "rejected", f"{entry['command']}: {entry['reason']} {entry['detail']} [{entry['command_id']}]"
    rest = {k: v for k, v in entry.items() if k not in ("at", "event", "stream", "seq")}
    return ev, str(rest)


def render(view: dict[str, Any], console: Any) -> None:
    """Print a :func:`replay` view with Rich; every piece of data goes in as plain text (no markup)."""
    kind = view["view"]
    if kind == "round":
        _render_round(view, console)
    elif kind == "shoe":
        _render_shoe(view, console)
    elif kind == "at":
        _render_at(view, console)
    else:
        _render_summary(view, console)


def _p(console: Any, text: str, style: str | None = None) -> None:
    console.print(text, markup=False, highlight=False, style=style)


def _clock(at: str, day: str) -> str:
    """The time of day (ms) when ``at`` falls on ``day`` (``YYYY-MM-DD``), else the full date and time."""
    full = _t(at)
    return full[11:] if full.startswith(day) else full


def _render_round(v: dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    day = _t(v["opened_at"])[:10]
    _p(console, f"Round {v['round_id']} at table {v.get('table_id', '?')}: round {v['number']} of shoe "
                f"{v['shoe_id']}, opened {_t(v['opened_at'])}, {v['status']}", "bold")
    t = Table("time", "event", "detail")
    for e in v["timeline"]:
        label, detail = describe(e)
        t.add_row(Text(_clock(e["at"], day)), Text(label), Text(detail))
        for m in e.get("marks") or ():  # each anomaly on its own line, under the record it is about
            t.add_row(Text(""), Text("! ANOMALY", style="bold red"),
                      Text(f"{m['kind']} at {m['where']}: {m['detail']}", style="red"))
    console.print(t)
    for m in v.get("marks") or ():
        _p(console, mark_line(m), "bold red")
    if v.get("ledger") is None:
        _p(console, "Ledger: no projection.ledger events in the log (the projection has not run)")
    elif v["ledger"]:
        lt = Table("kind", "seat", "lines (debit +, credit -)", title="Ledger (projection.ledger)",
                   title_justify="left")
        for x in v["ledger"]:
            lines = ", ".join(f"{ln['account']} {money(ln['amount_cents'])}" for ln in x["lines"])
            seat = f"{x['seat']} {x['player_id']}" if x.get("seat") else ""
            lt.add_row(Text(x["kind"]), Text(seat), Text(lines))
        console.print(lt)
    else:
        _p(console, "Ledger: no entries for this round")
    for a in v.get("alerts") or []:
        _p(console, f"Surveillance alert: seat {a['seat']} {a['player_id']} bet {money(a['stake_cents'])} on "
                    f"{a['wager']} at EV {a['ev']:+.6f} per unit (expected gain {money(a['expected_gain_cents'])}, "
                    f"{a['cards_left']} cards left)")


def _shoe_lines(s: dict[str, Any]) -> list[str]:
    out = []
    if s["loaded"]:
        ld = s["loaded"]
        out.append(f"loaded {_t(ld['at'])}: {ld['cards']} cards ({ld['rules']['decks']} decks), source "
                   f"{ld['source']}, commitment {ld['commitment'] or '-'}")
    if s["cut"]:
        out.append(f"cut {_t(s['cut']['at'])}: {s['cut']['cut_at']} cards moved to the back")
    if s["burn"]:
        b = s["burn"]
        out.append(f"burn {_t(b['at'])}: exposed {b['exposed']}, {b['burned_count']} burned"
                   + (f" ({' '.join(b['burned'])})" if b["burned"] else ""))
    out.append(f"cards: {s['dealt']} dealt, {s['burned']} burned, {s['cards_left']} left"
               + ("; cutting card out" if s["cutting_card_out"] else ""))
    if s["finished"]:
        out.append(f"finished {_t(s['finished']['at'])}: no further round after {s['finished']['rounds']}")
    if s["closed"]:
        c = s["closed"]
        check = {True: "matches the commitment", False: "DOES NOT match the commitment",
                 None: "nothing to check"}[c["commitment_verified"]]
        out.append(f"closed {_t(c['at'])}: {c['reason']}, {c['cards_dealt']} cards out (burn included); reveal of "
                   f"{len(c['order'])} cards {check}")
    return out


def _render_shoe(v: dict[str, Any], console: Any) -> None:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text(f"Shoe {v['shoe_id']} at table {v['table_id']}: {v['status']}, {len(v['rounds'])} round(s)",
                     style="bold"))
    for line in _shoe_lines(v):
        tree.add(Text(line))
    for m in v.get("marks") or ():
        tree.add(Text(mark_line(m), style="bold red"))
    console.print(tree)
    for r in v["rounds"]:
        console.print()
        _render_round({**r, "table_id": v["table_id"]}, console)


def _render_at(v: dict[str, Any], console: Any) -> None:
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text(f"Table {v['table_id']} at {_t(v['at'])} (log from {_t(v['span']['first'])} "
                     f"to {_t(v['span']['last'])})", style="bold"))
    c = v["config"]
    if c:
        sp = c["spec"]
        node = tree.add(Text(f"configuration in force since {_t(c['since'])}: {sp['variant']}, "
                             f"{sp['shoe']['decks']} decks"))
        node.add(Text(f"wagers: {', '.join(sp['wagers'])}"))
        node.add(Text(f"commission {sp['commission_rate'][0]}/{sp['commission_rate'][1]} "
                      f"{sp['commission_mode']} ({sp['commission_scope']}); no-vig: {sp['no_vig']}"))
        if sp["limits"]:
            node.add(Text("limits: " + ", ".join(f"{w} {money(x['min_cents'])}-{money(x['max_cents'])}"
                                                 for w, x in sp["limits"].items())))
    else:
        tree.add(Text("no configuration yet"))
    s = v["shoe"]
    if s:
        node = tree.add(Text(f"shoe {s['shoe_id']}: {s['status']}, {s['rounds_played']} round(s) opened"))
        for line in _shoe_lines(s):
            node.add(Text(line))
    else:
        tree.add(Text("no shoe loaded yet"))
    ip, done = v["round_in_progress"], v["last_finished_round"]
    tree.add(Text(f"round in progress: {ip['round_id']} ({ip['status']})" if ip else "no round in progress"))
    tree.add(Text(f"last finished round: {done['round_id']}" if done else "no round finished yet"))
    console.print(tree)
    for r in (ip, done):
        if r:
            console.print()
            _render_round({**r, "table_id": v["table_id"]}, console)


def _render_summary(v: dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    _p(console, f"Table {v['table_id']}: {v['events']} events from {_t(v['span']['first'])} to "
                f"{_t(v['span']['last'])}", "bold")
    for c in v["configs"]:
        _p(console, f"configuration since {_t(c['since'])}: {c['variant']}; wagers {', '.join(c['wagers'])}")
    for s in v["shoes"]:
        check = {True: ", reveal verified", False: ", REVEAL DOES NOT MATCH", None: ""}[s["commitment_verified"]]
        _p(console, f"shoe {s['shoe_id']}: {s['status']}, {s['rounds']} round(s), {s['dealt']} cards dealt{check}")
    t = Table("round", "result", "Player", "Banker", "bets", "stakes", "house")
    for r in v["rounds"]:
        flags = [f for f, on in (("natural", r["natural"]), ("dragon 7", r["dragon_7"]),
                                 ("panda 8", r["panda_8"])) if on]
        if r["void"] is not None:
            result = f"void: {r['void']}"
        elif r["winner"]:
            result = r["winner"] + (f" ({', '.join(flags)})" if flags else "")
        else:
            result = r["status"]
        if r["rejected"]:
            result += f"; {r['rejected']} rejected"
        if r.get("anomalies"):
            result += f"; ! {r['anomalies']} anomal{'y' if r['anomalies'] == 1 else 'ies'}"

        def m(x: int | None) -> str:
            return money(x) if x is not None else "-"

        pl = f"{_cards(r['player_cards'])} = {r['player_points']}" if r["player_cards"] else "-"
        bk = f"{_cards(r['banker_cards'])} = {r['banker_points']}" if r["banker_cards"] else "-"
        t.add_row(*(Text(x) for x in (r["round_id"], result, pl, bk, str(r["bets"]), m(r["stakes"]),
                                      m(r["table_result"]))))
    console.print(t)
    tot = v["totals"]
    voided = f", {tot['voided']} voided (bets returned: not counted)" if tot.get("voided") else ""
    _p(console, f"{tot['rounds']} round(s), {tot['settled']} settled{voided}: stakes {money(tot['stakes'])}, payouts "
                f"{money(tot['payouts'])}, commission {money(tot['commission'])}, house {money(tot['table_result'])}")
    for e in v["outside_rounds"]:
        label, detail = describe(e)
        _p(console, f"outside any round, {_t(e['at'])}: {label} {detail}")
        for mk in e.get("marks") or ():
            _p(console, mark_line(mk), "bold red")
    marks = v.get("marks") or []
    _p(console, f"audit: {len(marks)} anomal{'y' if len(marks) == 1 else 'ies'} in the log"
                + (" (each on its own line below; --round shows it in its round)" if marks else ": clean"),
       "bold red" if marks else None)
    for mk in marks:
        _p(console, mark_line(mk), "bold red")
