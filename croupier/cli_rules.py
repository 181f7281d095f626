"""``croupier odds``, ``croupier resolve`` and ``croupier roads``: the rules core on the command line (exact odds of
the next round, one round dealt and settled from a shoe order, the scoreboards of a sequence of results).

Registered on the app by :mod:`croupier.cli`. The rules core loads when a command runs, not at import: ``croupier
--help`` needs none of it (issue 26).
"""

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from croupier.cli_common import clean_errors, out
from croupier.cli_common import print_json as _json

if TYPE_CHECKING:  # the odds engine (numpy) and the rules core load only for the commands that use them
    from baccarat.odds import Composition
    from baccarat.table import TableConfig
    from baccarat.wagers import Wager


def _composition(decks: int, seen: str | None, composition: str | None) -> "Composition":
    from baccarat.cards import VALUE_COUNTS_PER_DECK, parse_cards
    from baccarat.errors import InvalidComposition
    from baccarat.odds import Composition

    if not 1 <= decks <= 8:
        raise InvalidComposition(f"--decks must be 1..8, got {decks}")
    if seen and composition:
        raise InvalidComposition("give --seen or --composition, not both")
    if composition is not None:
        try:
            counts = [int(x) for x in composition.split(",")]
        except ValueError:
            raise InvalidComposition(f"--composition takes ten whole counts c0,...,c9, got {composition!r}") from None
        comp = Composition.of(counts)
        full = [n * decks for n in VALUE_COUNTS_PER_DECK]
        over = [v for v in range(10) if counts[v] > full[v]]
        if over:
            v = over[0]
            raise InvalidComposition(f"value {v}: {counts[v]} cards is more than {decks} deck(s) hold ({full[v]})")
        return comp
    comp = Composition.full(decks)
    if seen:
        if any(not part.strip() for part in seen.split(",")):
            raise InvalidComposition(f"--seen has an empty entry: {seen!r}")
        cards = parse_cards(seen)
        by_rank: dict[object, int] = {}
        for c in cards:
            by_rank[c.rank] = by_rank.get(c.rank, 0) + 1
            if by_rank[c.rank] > 4 * decks:
                raise InvalidComposition(f"--seen: {by_rank[c.rank]} cards of rank {c.rank.symbol}, "
                                         f"but {decks} deck(s) hold {4 * decks}")
        comp = comp.without([c.value for c in cards])
    return comp


def _reference_tables(variant: str) -> "list[TableConfig]":
    """Pay tables the odds command reports: every wager a table may offer, on its usual table."""
    from baccarat.errors import IllegalTableConfig
    from baccarat.table import casino_night, chemin_de_fer, no_vig_dragon, punto_banco_full

    if variant == "punto_banco":
        return [punto_banco_full(), no_vig_dragon(panda=True)]
    if variant == "casino_night":
        return [casino_night()]
    if variant == "casino_night_literal":
        return [casino_night(literal_banker_rule=True)]
    if variant == "chemin_de_fer":
        return [chemin_de_fer()]
    raise IllegalTableConfig(f"unknown variant {variant!r}: punto_banco, casino_night, casino_night_literal or "
                             "chemin_de_fer")


@clean_errors
def odds(
    decks: Annotated[int, typer.Option(help="Decks in the shoe (1-8).")] = 8,
    seen: Annotated[Optional[str], typer.Option(help="Cards already out, ranks like A,T,5,K.")] = None,
    composition: Annotated[
        Optional[str], typer.Option(help="Ten counts of cards left by value 0..9 (0 = tens and faces).")
    ] = None,
    variant: Annotated[str, typer.Option(
        help="punto_banco, casino_night, casino_night_literal or chemin_de_fer.")] = "punto_banco",
    option: Annotated[Optional[list[str]], typer.Option(
        help="chemin_de_fer: the decision policy, CELL=draw|stand for player_5, banker_3_9, banker_4_1, "
             "banker_5_4 (unnamed cells: the punto banco cell). Repeatable.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Exact counts of every outcome of the next round, and each wager's probability and expected value.

    Counts are ordered 6-card sequences out of Permut(N, 6), the published tables' convention: a full 8-deck shoe gives
    Banker 2,292,252,566,437,888, Player 2,230,518,282,592,256, Tie 475,627,426,473,216. Chemin de fer: under the
    stated decision policy (``--option``), with the bank's expected result per unit wagered against it.
    """
    from fractions import Fraction

    from rich.table import Table

    from baccarat.errors import IllegalDecision
    from baccarat.expectation import wager_expectations
    from baccarat.wagers import Wager

    comp = _composition(decks, seen, composition)
    tables = _reference_tables(variant)
    policy = None
    if variant == "chemin_de_fer":
        from baccarat.chemin import DecisionPolicy

        policy = DecisionPolicy.parse(option or [])
        ruleset = policy.ruleset()
    elif option:
        raise IllegalDecision("--option is for --variant chemin_de_fer (the other games have no option cells)")
    else:
        ruleset = tables[0].ruleset
    from baccarat.odds import exact_counts

    counts = exact_counts(comp, ruleset)
    wagers: dict[str, dict[str, float]] = {}
    for table in tables:
        for w, e in wager_expectations(counts, table).items():
            key = w.value if not (table.no_vig and w is Wager.BANKER) else "banker_no_vig"
            if key in wagers:
                continue
            wagers[key] = {"probability": float(e.p_win), "void": float(e.p_void), "ev": float(e.ev)}
    extra: dict[str, object] = {}
    if policy is not None:
        from baccarat.chemin import OptionCell, bank_expectation

        ev = bank_expectation(counts.banker, counts.player, counts.total, tables[0].commission_rate)
        wagers["bank"] = {"probability": float(Fraction(counts.banker, counts.total)),
                          "void": float(Fraction(counts.tie, counts.total)), "ev": float(ev)}
        extra["policy"] = {c.value: ("draw" if policy.draw(c) else "stand") for c in OptionCell}
    if as_json:
        _json({"cards": comp.total, "total": counts.total, "counts": counts.to_dict(), "wagers": wagers, **extra})
        return
    if "policy" in extra:
        out.print("Decision policy: " + ", ".join(f"{k}={v}" for k, v in extra["policy"].items()))  # type: ignore[attr-defined]
    c = counts.to_dict()
    out.print(f"Shoe: {comp.total} cards {tuple(comp.counts)}; {counts.total:,} ordered 6-card sequences")
    t = Table("outcome", "count", "probability", title="Next round", title_justify="left")
    for k in ("banker", "player", "tie", "cards_4", "cards_5", "cards_6", "dragon_7", "panda_8"):
        t.add_row(k, f"{c[k]:,}", f"{c[k] / counts.total:.6%}")
    out.print(t)
    t = Table("wager", "win", "void", "EV per unit", "house edge", title="Wagers", title_justify="left")
    for k, v in wagers.items():
        t.add_row(k, f"{v['probability']:.6%}", f"{v['void']:.4%}", f"{v['ev']:+.6f}", f"{-v['ev']:.4%}")
    out.print(t)


def _parse_bet(text: str) -> "tuple[Wager, int]":
    from baccarat.errors import InvalidAmount
    from baccarat.wagers import Wager

    if "=" not in text:
        raise InvalidAmount(f"--bet takes WAGER=CENTS, got {text!r}")
    name, amount = text.split("=", 1)
    wager = Wager.parse(name)
    try:
        cents = int(amount)
    except ValueError:
        raise InvalidAmount(f"bet {name}: {amount!r} is not a whole number of cents") from None
    if cents <= 0:
        raise InvalidAmount(f"bet {name}: {cents} cents is not a positive amount")
    return wager, cents


def _table_for(variant: str, wagers: "set[Wager]") -> "TableConfig":
    from baccarat.errors import IllegalTableConfig
    from baccarat.table import TableConfig, casino_night, chemin_de_fer, punto_banco_full
    from baccarat.wagers import PANDA_AND_DRAGON, Wager

    if variant == "chemin_de_fer":
        return chemin_de_fer()
    if variant in ("casino_night", "casino_night_literal"):
        return casino_night(literal_banker_rule=variant == "casino_night_literal")
    if variant != "punto_banco":
        raise IllegalTableConfig(f"unknown variant {variant!r}: punto_banco, casino_night or chemin_de_fer")
    if wagers & PANDA_AND_DRAGON:
        return TableConfig(
            wagers=frozenset(wagers | {Wager.BANKER, Wager.PLAYER, Wager.TIE}),
            no_vig=True,
            allow_extensions=Wager.PANDA_8 in wagers,
        )
    return punto_banco_full()


@clean_errors
def resolve(
    cards: Annotated[str, typer.Argument(help="The shoe order, first card first: A,T,5,K,...")],
    variant: Annotated[str, typer.Option(
        help="punto_banco, casino_night, casino_night_literal or chemin_de_fer.")] = "punto_banco",
    bet: Annotated[Optional[list[str]], typer.Option(help="WAGER=CENTS, repeatable (e.g. banker=2500).")] = None,
    option: Annotated[Optional[list[str]], typer.Option(
        help="chemin_de_fer: player=draw|stand or banker=draw|stand (the controller's decision at that hand's "
             "option), or CELL=draw|stand (player_5, banker_3_9, banker_4_1, banker_5_4: the default policy "
             "for a cell nobody decides). Repeatable.")] = None,
    bank: Annotated[Optional[int], typer.Option(
        help="chemin_de_fer: the bank in cents (default: the bets' total).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Deal one round from CARDS by the variant's drawing rules and settle any bets on it.

    A dragon 7 or panda 8 bet puts the round on a no-vigorish table (13:69F-3.2(a)6); otherwise a standard
    table with 5 % commission deducted at payout. Chemin de fer (13:69F-4): the option cells are decided by
    ``--option``; bets (``player``, ``banco``) are against the bank, which pays them and pays the house 5 % of
    what it wins.
    """
    from rich.table import Table

    from baccarat.cards import parse_cards
    from baccarat.errors import IllegalDecision
    from baccarat.round import resolve as resolve_round
    from baccarat.wagers import settle

    bets = [_parse_bet(b) for b in bet or []]
    table = _table_for(variant, {w for w, _ in bets})
    chem: dict[str, object] = {}
    if variant == "chemin_de_fer":
        outcome, unused, taken = _chemin_round(cards, option or [])
        chem["options"] = [{"cell": d.cell.value, "hand": d.cell.hand.value, "draw": d.draw, "by": d.by}
                           for d in taken]
    elif option:
        raise IllegalDecision("--option is for --variant chemin_de_fer (the other games have no option cells)")
    else:
        outcome, unused = resolve_round(parse_cards(cards), table.ruleset)
    settlements = [settle(w, c, outcome, table) for w, c in bets]
    if variant == "chemin_de_fer" and bets:
        from baccarat.chemin import settle_table_bank

        total = sum(c for _, c in bets)
        b = settle_table_bank(total if bank is None else bank, total, outcome.winner, table)
        chem["bank"] = {"bank": b.bank_cents, "wagers": b.wagers_cents, "won": b.won_cents,
                        "commission": b.commission_cents, "bank_after": b.bank_after_cents}
    result = {
        "variant": variant,
        "player": {"cards": [str(c) for c in outcome.player], "points": outcome.player_points,
                   "natural": outcome.player_natural},
        "banker": {"cards": [str(c) for c in outcome.banker], "points": outcome.banker_points,
                   "natural": outcome.banker_natural},
        "winner": outcome.winner.value,
        "cards_required": outcome.cards_required,
        "dragon_7": outcome.dragon_7,
        "panda_8": outcome.panda_8,
        "draws": [r.describe() for r in outcome.reasons],
        "unused": [str(c) for c in unused],
        "bets": [
            {"wager": s.wager.value, "stake": s.stake, "result": s.result.value, "category": s.category,
             "payout": s.payout, "win": s.win, "commission": s.commission,
             "commission_accrued": s.commission_accrued, "odds": str(s.odds) if s.odds else None}
            for s in settlements
        ],
        **chem,
    }
    if as_json:
        _json(result)
        return
    def hand(name: str, h: dict) -> str:
        nat = " (natural)" if h["natural"] else ""
        return f"{name}: {' '.join(h['cards'])} -> {h['points']}{nat}"
    out.print(hand("Player's Hand", result["player"]))
    out.print(hand("Banker's Hand", result["banker"]))
    flags = [f for f in ("dragon_7", "panda_8") if result[f]]
    out.print(f"Winner: {outcome.winner.value}; cards required: {outcome.cards_required}"
              + (f"; {', '.join(flags)}" if flags else ""))
    for line in result["draws"]:
        out.print(f"  {line}", markup=False)
    for d in chem.get("options", []):  # type: ignore[union-attr]
        out.print(f"  option {d['cell']}: {'draw' if d['draw'] else 'stand'} ({d['by']})", markup=False)
    out.print(f"Unused: {' '.join(result['unused']) or '-'}")
    if settlements:
        t = Table("wager", "stake", "result", "why", "payout", "commission")
        for s in settlements:
            t.add_row(s.wager.value, str(s.stake), s.result.value, s.category, str(s.payout),
                      f"{s.commission}{' (accrued)' if s.commission_accrued else ''}")
        out.print(t)
    if "bank" in chem:
        bk = chem["bank"]
        out.print(f"Bank: {bk['bank']} against {bk['wagers']}: won {bk['won']}, house commission "  # type: ignore[index]
                  f"{bk['commission']}, bank after {bk['bank_after']}")  # type: ignore[index]


def _chemin_round(cards: str, options: list[str]):  # type: ignore[no-untyped-def]
    """A chemin de fer round from ``cards`` with the ``--option`` items (hand decisions and cell defaults)."""
    from baccarat.cards import Hand, parse_cards
    from baccarat.chemin import DecisionPolicy, resolve_chemin
    from baccarat.errors import IllegalDecision

    decisions: dict[Hand, bool] = {}
    cells: list[str] = []
    for item in options:
        name, _, how = item.partition("=")
        if name.strip().lower() in ("player", "banker"):
            if how.strip().lower() not in ("draw", "stand"):
                raise IllegalDecision(f"--option {item}: say draw or stand")
            decisions[Hand(name.strip().lower())] = how.strip().lower() == "draw"
        else:
            cells.append(item)
    return resolve_chemin(parse_cards(cards), decisions, DecisionPolicy.parse(cells))


@clean_errors
def roads(
    sequence: Annotated[str, typer.Argument(help="Round results in order, B (Banker), P (Player), T (Tie): BPPTB...")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every scoreboard of a sequence of results: bead plate, Big Road, Big Eye Boy, Small Road, Cockroach Pig
    (derived roads from the Big Road's logical columns, never its bent display), with logical columns and marks."""
    from croupier.roads import roads_command

    typer.echo(roads_command(sequence, as_json))
