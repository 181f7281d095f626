"""The ``croupier`` command line: how auditors, tests and operators poke the rules and run the floor.

Exit statuses: 0 done (also when the reader of stdout closed the pipe: ``croupier replay … | head -1``,
:mod:`croupier.group`); 2 bad input or usage (a missing or unknown option, a rules-core error, an unknown
table or prefix), one line ``error: …`` on stderr and never a traceback; 1 infrastructure (a broker that
cannot be reached, services that do not answer) or a dirty audit.
"""

from __future__ import annotations

import functools
from fractions import Fraction
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from baccarat.cards import VALUE_COUNTS_PER_DECK, parse_cards
from baccarat.errors import BaccaratError, IllegalDecision, IllegalTableConfig, InvalidAmount, InvalidComposition
from baccarat.expectation import wager_expectations
from baccarat.round import resolve as resolve_round
from baccarat.table import TableConfig, casino_night, chemin_de_fer, no_vig_dragon, punto_banco_full
from baccarat.wagers import PANDA_AND_DRAGON, Wager, settle
from croupier.cli_common import _check_port, _settings, fail, kafka_detail
from croupier.group import CroupierGroup, is_closed_pipe
from croupier.https_options import TlsCertOpt, TlsKeyOpt, server_tls_or_fail

if TYPE_CHECKING:  # the odds engine (numpy) loads only for the commands that compute odds
    from baccarat.odds import Composition

app = typer.Typer(
    cls=CroupierGroup,
    name="croupier",
    help="Croupier: New Jersey baccarat tables, exact rules, money and odds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
def _console() -> Console:
    """stdout; when it is not a terminal (a file, a pipe) wide enough that nothing an investigator needs is cut."""
    c = Console(highlight=False, soft_wrap=True)
    if not c.is_terminal:
        c = Console(highlight=False, soft_wrap=True, width=max(200, c.width))
    return c


out = _console()

F = TypeVar("F", bound=Callable[..., None])


def clean_errors(fn: F) -> F:
    """Turn rules-core errors into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> None:
        try:
            fn(*args, **kwargs)
        except BaccaratError as e:
            raise fail(str(e)) from None

    return wrapper  # type: ignore[return-value]


def _json(obj: object) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(obj), indent=2).decode() + "\n")


def _composition(decks: int, seen: str | None, composition: str | None) -> Composition:
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


def _reference_tables(variant: str) -> list[TableConfig]:
    """Pay tables the odds command reports: every wager a table may offer, on its usual table."""
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


@app.command()
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


def _parse_bet(text: str) -> tuple[Wager, int]:
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


def _table_for(variant: str, wagers: set[Wager]) -> TableConfig:
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


@app.command()
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
    from baccarat.cards import Hand
    from baccarat.chemin import DecisionPolicy, resolve_chemin

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


@app.command()
@clean_errors
def roads(
    sequence: Annotated[str, typer.Argument(help="Round results in order, B (Banker), P (Player), T (Tie): BPPTB...")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every scoreboard of a sequence of results: bead plate, Big Road, Big Eye Boy, Small Road, Cockroach Pig
    (derived roads from the Big Road's logical columns, never its bent display), with logical columns and marks."""
    from croupier.roads import roads_command

    typer.echo(roads_command(sequence, as_json))


def _run_async(coro, settings):  # type: ignore[no-untyped-def]
    """``asyncio.run(coro)``'s result; each failure one ``error:`` line: exit 2 for a prefix that is empty or
    has no topics, 1 for the broker (unreachable, refusing) or a prefix still in use; Ctrl-C returns None."""
    import asyncio

    from croupier.replay import Unreachable
    from croupier.serve import PortTaken
    from croupier.topics import BadPrefix, NoSuchPrefix, PrefixInUse

    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        return None
    except (PortTaken, Unreachable, PrefixInUse) as e:
        raise fail(str(e), code=1) from None
    except (NoSuchPrefix, BadPrefix) as e:
        raise fail(str(e)) from None
    except Exception as e:  # a broker that cannot be reached: one line, no traceback
        if is_closed_pipe(e):
            raise
        raise fail(f"cannot run against Kafka at {settings.bootstrap_servers}: {kafka_detail(settings, e)}",
                   code=1) from None


BOOTSTRAP_HELP = "Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS or 127.0.0.1:19092)."
PREFIX_HELP = "Topic prefix (default: $CROUPIER_TOPIC_PREFIX or none)."
TOKEN_HELP = "Removed: API tokens are read from CROUPIER_API_TOKEN_<ROLE> or CROUPIER_API_TOKENS_FILE."
#: where the query API listens unless told otherwise (loopback: a container passes --host 0.0.0.0)
DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8080
HOST_HELP = "Address the query API listens on (0.0.0.0: every interface, e.g. in a container)."


def _api_tokens(token: Optional[str]) -> dict[str, str]:
    """The query API's per-role tokens from the environment or the tokens file (never the command line);
    a clear error for ``--token``, when none is configured, or for a bad pit setting
    (``CROUPIER_SURVEILLANCE_RAISE_CENTS``, ``CROUPIER_SHIFT_STARTS``)."""
    from services.projection.auth import ENV_FILE, ENV_PREFIX, BadCredentials, NoCredentials, load_tokens

    if token is not None:
        raise fail(f"--token is no longer accepted (a token on the command line shows in the process list); "
                   f"set {ENV_PREFIX}<ROLE> (e.g. {ENV_PREFIX}CAGE) or {ENV_FILE}=<file of role=token lines, mode 600>")
    from services.projection.pit_views import PitSettings

    try:
        PitSettings.from_env()  # the pit endpoints' settings: a bad one is an error before anything starts
    except ValueError as e:
        raise fail(str(e)) from None
    try:
        return load_tokens()
    except (NoCredentials, BadCredentials) as e:
        raise fail(str(e)) from None


@app.command()
def serve(
    services_: Annotated[str, typer.Option("--services", help="Comma-separated: shoe,dealing,wagering,"
                                                              "settlement,projection,cage.")
                         ] = "shoe,dealing,wagering,settlement,projection,cage",
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    api_port: Annotated[Optional[int], typer.Option(help="Serve the query API beside the projection.")] = None,
    api_host: Annotated[str, typer.Option(help=HOST_HELP)] = DEFAULT_API_HOST,
    ready_file: Annotated[Path | None, typer.Option(
        help="A file that exists exactly while every service here is ready (a container's health check: "
             "test -f FILE).")] = None,
    metrics_port: Annotated[int | None, typer.Option(
        envvar="CROUPIER_METRICS_PORT",
        help="Serve /metrics (Prometheus), /health/live and /health/ready on this port.")] = None,
    metrics_host: Annotated[str, typer.Option(
        envvar="CROUPIER_METRICS_HOST", help="Address the metrics port listens on.")] = "127.0.0.1",
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    dev_vault_key: Annotated[bool, typer.Option(
        "--dev-vault-key", help="Without a configured vault key, make (or reuse) a development key file "
        "var/vault/<prefix>.keys (mode 600) for the shoe service. Not for a real floor.")] = False,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """Run several services together in one process until Ctrl-C (each can also run alone with
    ``faststream run services.<name>.app:app``). The shoe service needs its vault key
    (``CROUPIER_VAULT_KEY_FILE`` or ``CROUPIER_VAULT_KEYS``) and refuses to start without one."""
    import os

    from croupier.devkey import VaultKeyError, configured, with_dev_key

    import services as svc_pkg
    from croupier.serve import serve as run_serve

    names = [n.strip() for n in services_.split(",") if n.strip()]
    unknown = [n for n in names if n not in svc_pkg.NAMES]
    if unknown or not names:
        raise fail(f"unknown service(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(svc_pkg.NAMES)}")
    if api_port is not None and "projection" not in names:
        raise fail("--api-port needs the projection service (add it to --services, or use `croupier api`)")
    _check_port(api_port)
    _check_port(metrics_port)
    if metrics_port is not None and metrics_port == api_port:
        raise fail(f"--metrics-port {metrics_port} is also the --api-port: give each its own port")
    tokens = _api_tokens(token) if api_port is not None or token is not None else None
    tls = server_tls_or_fail(tls_cert, tls_key)
    if tls is not None and api_port is None:
        raise fail("--tls-cert/--tls-key serve the query API over HTTPS: they need --api-port")
    settings = _settings(bootstrap, prefix)
    from services.runtime.logging import bind_process

    # every line of this process names its instance, the first ones too; a client's line logged outside any
    # service (at start, at exit) names `serve`
    bind_process(instance=settings.instance, service="serve")
    if "shoe" in names:
        try:
            if dev_vault_key:
                settings, path, created = with_dev_key(settings)
                if path is not None:  # a JSON line like every other line `serve` writes
                    from services.runtime.logging import get_logger

                    get_logger("serve").warning(
                        "dev_vault_key", path=str(path), created=created,
                        detail="no vault key configured: the shoe service uses this development key file "
                               "(mode 600); not for a real floor")
            elif not configured(settings):
                raise VaultKeyError("the shoe service needs a vault key: set CROUPIER_VAULT_KEY_FILE (a file of "
                                    "KEY_ID:BASE64 lines, mode 600; `croupier vault-key new --file PATH` makes "
                                    "one) or CROUPIER_VAULT_KEYS, or pass --dev-vault-key for a development key")
        except VaultKeyError as e:
            raise fail(str(e)) from None
    _run_async(run_serve(names, settings, api_port=api_port, api_host=api_host, tokens=tokens,
                         metrics_port=metrics_port, metrics_host=metrics_host, ready_file=ready_file, tls=tls),
               settings)


vault_key = typer.Typer(help="The shoe service's vault keys (AES-256-GCM, contracts/vault.py).",
                        no_args_is_help=True)
app.add_typer(vault_key, name="vault-key")


@vault_key.command("new")
def vault_key_new(
    file: Annotated[Path, typer.Option("--file", help="The key file (created with mode 600 if missing).")],
    key_id: Annotated[Optional[str], typer.Option("--id", help="The new key's id (default: k<UTC time>).")] = None,
) -> None:
    """Add a new key at the end of a vault key file: the shoe service seals new shoes with it from its next
    start, and still opens every shoe sealed under the older keys in the file. Prints the ids, never a key."""
    from datetime import datetime, timezone

    from contracts.vault import VaultKeyError, add_key

    kid = key_id or f"k{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    try:
        keys = add_key(file, kid)
    except VaultKeyError as e:
        raise fail(str(e)) from None
    typer.echo(f"{file}: keys {', '.join(keys.ids)}; {kid} seals new shoes from the shoe service's next start")


topics_app = typer.Typer(help="Housekeeping of a floor's Kafka topics: list them, delete them to reclaim space.",
                         no_args_is_help=True)
app.add_typer(topics_app, name="topics")

TOPICS_PREFIX_HELP = "The floor's topic prefix (required, never empty: e.g. demo-20261130-110143-72a3.)."


def _topics_settings(prefix: str, bootstrap: str | None):  # type: ignore[no-untyped-def]
    """Settings of ``prefix`` (a trailing dot added, as every command does); exit 2 for an empty one."""
    from croupier.topics import BadPrefix, check_prefix

    try:
        check_prefix(prefix)
    except BadPrefix as e:
        raise fail(str(e)) from None
    return _settings(bootstrap, prefix)


@topics_app.command("list")
def topics_list(
    prefix: Annotated[str, typer.Option(help=TOPICS_PREFIX_HELP)],
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
) -> None:
    """Print the topics under a prefix, one name a line (their count and consumer groups' on stderr)."""
    from croupier.topics import list_groups, list_topics

    settings = _topics_settings(prefix, bootstrap)
    pre = settings.topic_prefix
    names = _run_async(list_topics(settings, pre), settings)
    groups = _run_async(list_groups(settings, pre), settings)
    for name in names:
        typer.echo(name)
    typer.echo(f"{len(names)} topic(s) and {len(groups)} consumer group(s) under prefix {pre!r} at "
               f"{settings.bootstrap_servers}", err=True)


@topics_app.command("delete")
def topics_delete(
    prefix: Annotated[str, typer.Option(help=TOPICS_PREFIX_HELP)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
) -> None:
    """Delete every topic under a prefix and its consumer groups: the floor's whole log, for good. Asks first
    (unless --yes; declining exits 1); refuses while services still run on the prefix (exit 1) and an empty
    prefix (exit 2)."""
    from croupier.topics import delete_prefix, list_topics

    settings = _topics_settings(prefix, bootstrap)
    pre = settings.topic_prefix
    names = _run_async(list_topics(settings, pre), settings)
    if not names:
        typer.echo(f"no topics under prefix {pre!r} at {settings.bootstrap_servers}: nothing to delete", err=True)
        return
    shown = ", ".join(names[:3]) + (f", ... ({len(names) - 3} more)" if len(names) > 3 else "")
    if not yes and not typer.confirm(f"Delete {len(names)} topic(s) under prefix {pre!r} at "
                                     f"{settings.bootstrap_servers} ({shown}) for good?", default=False, err=True):
        typer.echo("nothing deleted", err=True)
        raise typer.Exit(1)
    d = _run_async(delete_prefix(settings, pre), settings)
    typer.echo(f"deleted {len(d.topics)} topic(s) and {len(d.groups)} consumer group(s) under prefix {pre!r}",
               err=True)
    for note in d.notes:
        typer.echo(f"note: {note}", err=True)


@app.command()
def api(
    port: Annotated[int, typer.Option(help="Port of the query API.")] = DEFAULT_API_PORT,
    host: Annotated[str, typer.Option(help=HOST_HELP)] = DEFAULT_API_HOST,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """The projection's query API alone: a read-only replica folds the streams and answers queries
    (OpenAPI at /docs; /metrics, /health/live and /health/ready for operations)."""
    from croupier.serve import api_alone

    tokens = _api_tokens(token)
    _check_port(port)
    tls = server_tls_or_fail(tls_cert, tls_key)
    settings = _settings(bootstrap, prefix)
    from services.runtime.logging import bind_process

    bind_process(instance=settings.instance, service="api")
    _run_async(api_alone(settings, port, host=host, tokens=tokens, tls=tls), settings)


@app.command()
def pit(
    port: Annotated[int, typer.Option(help="Port of the pit web app.")] = DEFAULT_API_PORT,
    host: Annotated[str, typer.Option(help="Address it listens on (0.0.0.0: every interface).")] = DEFAULT_API_HOST,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    timeout: Annotated[float, typer.Option(help="Seconds a console action waits for its answer.")] = 10.0,
    token: Annotated[Optional[str], typer.Option(help=TOKEN_HELP, hidden=True)] = None,
    tls_cert: TlsCertOpt = None,
    tls_key: TlsKeyOpt = None,
) -> None:
    """The pit in a browser, one web app on one origin: the pages (floor, table console, surveillance, cage;
    log in at /login with a role's token), the query API and the command API (under /command), over a
    read-only projection replica and the command gateway. Tokens per role as for the APIs; a betting
    terminal logs in with its bettor credential (bettor:<player_id>=<token> lines of CROUPIER_API_TOKENS_FILE)
    and bets for its own players only. With --tls-cert/--tls-key over HTTPS, the session cookie Secure."""
    from croupier.pit import pit_alone
    from services.command_api.actions import BETTOR_ACTIONS, ROLE_ACTIONS, writer_of
    from services.command_api.gateway import MissingWriterCredential, writer_settings

    _check_port(port)
    if timeout <= 0:
        raise fail(f"--timeout must be more than 0 seconds, got {timeout:g}")
    _api_tokens(token)  # the same checks as the APIs' (no --token, the pit settings, role tokens)
    tls = server_tls_or_fail(tls_cert, tls_key)
    from services.runtime.credentials import BadCredentials, NoCredentials, load_credentials

    try:
        creds = load_credentials(what="croupier pit")  # the roles', and the betting terminals' bettor credentials
    except (NoCredentials, BadCredentials) as e:
        raise fail(str(e)) from None
    settings = _settings(bootstrap, prefix)
    sends = {a for role in creds.roles for a in ROLE_ACTIONS.get(role, ()) if role != "bettor"}
    sends |= BETTOR_ACTIONS if creds.bettors else set()
    kinds = sorted({writer_of(a) for a in sends}, key=("console", "bettor").index)
    try:
        writers = writer_settings(settings, kinds=kinds)
    except MissingWriterCredential as e:
        raise fail(str(e)) from None
    from services.runtime.logging import bind_process

    bind_process(instance=settings.instance, service="pit")
    _run_async(pit_alone(settings, port, host=host, tokens=creds, writers=writers, timeout_s=timeout, tls=tls),
               settings)


@app.command()
def demo(
    tables: Annotated[int, typer.Option(help="Tables on the floor (1-50).")] = 8,
    shoes: Annotated[int, typer.Option(help="8-deck shoes each table deals (1-10).")] = 1,
    rounds: Annotated[int, typer.Option(help="Close each shoe after this many rounds (0: deal it to the "
                                             "cutting card).")] = 0,
    speed: Annotated[float, typer.Option(help="At most this many rounds per second per table (0: as fast as "
                                              "the services go).")] = 0.0,
    bootstrap: Annotated[Optional[str], typer.Option(help="Kafka bootstrap servers (default: "
                                                          "$KAFKA_BOOTSTRAP_SERVERS; none: start the "
                                                          "project's local broker and stop it at the end; with "
                                                          "--no-services 127.0.0.1:19092).")
                         ] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of the simulated players (the shoes are always "
                                                     "shuffled by the shoe service's CSPRNG).")] = None,
    prefix: Annotated[Optional[str], typer.Option(help="Topic prefix (default: a new demo-<time>-<id>.).")] = None,
    run_id: Annotated[Optional[str], typer.Option(
        "--run-id", help="This run's namespace of command, shoe and round ids (1-32 letters, digits, . _ -; "
        "default: a new random one), so the same tables can be dealt again on the same prefix.")] = None,
    services_: Annotated[bool, typer.Option("--services/--no-services",
                                            help="Run the five services here (default), or only the floor, "
                                                 "against services already running (croupier serve --prefix).")
                         ] = True,
    timeout: Annotated[float, typer.Option(help="With --no-services: seconds to wait for the services to "
                                                "answer each table's first command.")] = 30.0,
    floor: Annotated[str, typer.Option(help="The games the tables deal: standard (punto banco, every third "
                                            "table no-vig dragon 7) or mixed (punto banco with a curator, "
                                            "no-vig dragon 7, casino night and chemin de fer side by "
                                            "side).")] = "standard",
    pit_port: Annotated[int, typer.Option(help="Serve the floor's pages (read-only) on 127.0.0.1 at this port "
                                               "while the demo runs, the next free one if taken (0: not at "
                                               "all); tokens in var/<prefix>pit-tokens.")] = 8080,
) -> None:
    """A whole floor: the five services, dealers dealing real shoes to the cutting card, players with
    bankrolls betting every wager, an advantage player for surveillance to find; a live dashboard, then a
    summary and a full audit of the log."""
    import asyncio
    import os

    from croupier.demo import FLOORS, DemoError, run_demo
    from croupier.replay import Unreachable
    from croupier.topics import NoSuchPrefix
    from services.floor.ids import BadRunId, check_run_id

    if not 1 <= tables <= 50:
        raise fail(f"--tables must be 1..50, got {tables}")
    if not 1 <= shoes <= 10:
        raise fail(f"--shoes must be 1..10, got {shoes}")
    if rounds < 0:
        raise fail(f"--rounds must be 0 or more, got {rounds}")
    if speed < 0:
        raise fail(f"--speed must be 0 or more, got {speed}")
    if timeout <= 0:
        raise fail(f"--timeout must be more than 0 seconds, got {timeout:g}")
    if floor not in FLOORS:
        raise fail(f"--floor must be one of {', '.join(FLOORS)}, got {floor!r}")
    if pit_port:
        _check_port(pit_port)
    pre = _settings(None, prefix).topic_prefix if prefix is not None else None
    if not services_ and not pre:
        raise fail("--no-services needs the --prefix the running services use")
    try:
        run = check_run_id(run_id) if run_id is not None else None
    except BadRunId as e:
        raise fail(f"--run-id: {e}") from None
    boot = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None
    if boot is None and not services_:  # services running elsewhere have a broker already: never start one
        boot = _settings(None, None).bootstrap_servers
    try:
        code = asyncio.run(run_demo(tables, shoes, speed, boot, out, seed, prefix=pre, with_services=services_,
                                    run_id=run, rounds=rounds or None, answer_timeout=timeout, floor=floor,
                                    pit_port=pit_port or None))
    except KeyboardInterrupt:
        raise fail("interrupted", code=130) from None
    except NoSuchPrefix as e:
        raise fail(str(e)) from None
    except (DemoError, Unreachable) as e:
        raise fail(str(e), code=1) from None
    except Exception as e:  # a broker that stopped answering, and the like: one line
        if is_closed_pipe(e):
            raise
        import dataclasses

        detail = (kafka_detail(dataclasses.replace(_settings(None, None), bootstrap_servers=boot), e) if boot
                  else f"{type(e).__name__}: {e}")
        raise fail(f"cannot run the demo against Kafka at {boot or 'the local broker'}: {detail}", code=1) from None
    raise typer.Exit(code)


# ---- replay and export: a table's event log read back from Kafka (croupier/replay.py, croupier/export.py) ----
def _log_records_or_fail(table: str, settings):  # type: ignore[no-untyped-def]
    """The table's log records; one line and exit 1 if Kafka cannot be reached, exit 2 if the table is unknown."""
    import asyncio

    from croupier.replay import Unreachable, known_tables, read_table, unknown_table_message

    try:
        records = asyncio.run(read_table(settings, table))
        if not records:
            tables = asyncio.run(known_tables(settings))
            raise fail(unknown_table_message(table, tables, settings.topic_prefix))
    except Unreachable as e:
        raise fail(str(e), code=1) from None
    return records


@app.command()
def replay(
    table: Annotated[str, typer.Option("--table", help="The table id.")],
    round_id: Annotated[Optional[str], typer.Option("--round", help="One round's timeline (a round id).")] = None,
    shoe_id: Annotated[Optional[str], typer.Option("--shoe", help="Every round of a shoe, with its load, cut, "
                                                                  "burn and close (a shoe id).")] = None,
    at: Annotated[Optional[str], typer.Option("--at", help="The table's state at this time (ISO 8601; UTC "
                                                           "when it has no offset).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
) -> None:
    """Rebuild a table's story from the event log.

    One round's timeline (--round), a whole shoe (--shoe), the table at a moment (--at), or one line per
    round of the whole table."""
    from croupier.replay import ReplayError, parse_time, render
    from croupier.replay import replay as build_replay

    given = [n for n, v in (("--round", round_id), ("--shoe", shoe_id), ("--at", at)) if v is not None]
    if len(given) > 1:
        raise fail(f"give one of --round, --shoe or --at, not {' and '.join(given)}")
    try:
        when = parse_time(at) if at is not None else None
    except ReplayError as e:
        raise fail(str(e)) from None
    settings = _settings(bootstrap, prefix)
    records = _log_records_or_fail(table, settings)
    try:
        view = build_replay([r.env for r in records], table, round_id=round_id, shoe_id=shoe_id, at=when)
    except ReplayError as e:
        raise fail(str(e)) from None
    if as_json:
        _json(view)
    else:
        render(view, out)


def _export_records(tables: list[str], settings):  # type: ignore[no-untyped-def]
    """The log records of ``tables`` (every table when empty), tables in the order given (sorted when all),
    each table's in per-stream order; exit 2 naming an unknown table or for an empty log, exit 1 if Kafka
    cannot be reached."""
    import asyncio

    from croupier.replay import Unreachable, read_floor

    if len(tables) == 1:
        return _log_records_or_fail(tables[0], settings)
    if tables:
        records = [r for t in dict.fromkeys(tables) for r in _log_records_or_fail(t, settings)]
        rank = {t: i for i, t in enumerate(dict.fromkeys(tables))}
    else:
        try:
            records = asyncio.run(read_floor(settings))
        except Unreachable as e:
            raise fail(str(e), code=1) from None
        if not records:
            where = f" under topic prefix {settings.topic_prefix!r}" if settings.topic_prefix else ""
            raise fail(f"no events{where}: the log holds no table")
        rank = {t: i for i, t in enumerate(sorted({r.env.table_id for r in records}))}
    return sorted(records, key=lambda r: rank[r.env.table_id])


@app.command()
def export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl, parquet (a directory of one typed file per "
                                                      "event type) or parquet-json (the former single file, "
                                                      "payload as JSON text).")],
    table: Annotated[list[str] | None, typer.Option(
        "--table", help="A table id; repeat for several (default: every table of the log).")] = None,
    out_path: Annotated[str | None, typer.Option("--out", help="Output file (jsonl, parquet-json; - for "
                                                                  "stdout) or directory (parquet). Default "
                                                                  "<table>.jsonl, <table>-parquet/, "
                                                                  "<table>.parquet; floor.jsonl, floor-parquet/, "
                                                                  "floor.parquet for several tables.")] = None,
    shoe: Annotated[str | None, typer.Option("--shoe", help="Only the events of this shoe (those naming it "
                                                               "and those of its rounds).")] = None,
    gaming_day: Annotated[str | None, typer.Option("--gaming-day", help="Only the events of this gaming day "
                                                                           "(YYYY-MM-DD; the ledger's: UTC, "
                                                                           "day starting 06:00).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only events with occurred_at at or after "
                                                                 "this time (ISO 8601; UTC without an "
                                                                 "offset). occurred_at: the envelope's time, "
                                                                 "the broker's append time of the causing "
                                                                 "command.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only events with occurred_at before this "
                                                                 "time (ISO 8601; UTC without an offset).")
                     ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="parquet: replace an earlier export's "
                                                                "<EventType>.parquet files in --out.")] = False,
    bootstrap: Annotated[str | None, typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[str | None, typer.Option(help=PREFIX_HELP)] = None,
) -> None:
    """Write tables' events for analytics, as JSON lines or typed Parquet.

    The shoe, dealing, wagering and settlement streams, and the projection's ledger and alerts when present,
    of one table, several (--table repeated) or every table, narrowed by --shoe, --gaming-day and
    --since/--until (all must hold; times are the envelope's occurred_at). JSON lines: the wire envelope plus
    topic, partition, offset and Kafka timestamp. Parquet: a directory with one flat, typed table per event
    type (BetSettled.parquet, ...), envelope and payload fields as columns (croupier/parquet.py)."""
    from collections import Counter
    from pathlib import Path

    from croupier.export import (
        FORMATS,
        PyarrowMissing,
        default_path,
        write_jsonl,
        write_parquet,
    )
    from croupier.replay import ReplayError, parse_time
    from croupier.selection import Selection, SelectionError, select, shoes_in

    if fmt not in FORMATS:
        raise fail(f"unknown format {fmt!r}: jsonl, parquet or parquet-json")
    if fmt != "jsonl":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise fail(f"--format {fmt} needs pyarrow, which is not installed (pip install 'pyarrow>=14')") from None
    if fmt == "parquet" and out_path == "-":
        raise fail("--format parquet writes a directory (one file per event type): give --out DIR, not -")
    tables = list(table or [])
    try:
        sel = Selection(tables=tuple(tables), shoe_id=shoe, gaming_day=gaming_day,
                        since=parse_time(since) if since is not None else None,
                        until=parse_time(until) if until is not None else None)
    except (ReplayError, SelectionError) as e:
        raise fail(str(e)) from None
    name = tables[0] if len(tables) == 1 else "floor"
    path = out_path or default_path(name, fmt)
    if fmt == "parquet":
        from croupier.parquet import owned_files

        target = Path(path)
        if target.exists() and not target.is_dir():
            raise fail(f"--out {path} is a file: --format parquet writes a directory (one file per event type)")
        earlier = owned_files(target)
        if earlier and not overwrite:
            raise fail(f"{path} already holds an export ({len(earlier)} event-type file(s), e.g. "
                       f"{earlier[0].name}): give --overwrite to replace them, or another --out")
    settings = _settings(bootstrap, prefix)
    records = _export_records(tables, settings)
    if shoe is not None and shoe not in shoes_in(records):
        known = shoes_in(records)
        raise fail(f"unknown shoe {shoe!r} at " + (f"table {tables[0]}" if len(tables) == 1 else "the tables read")
                   + (f": {len(known)} shoe(s): {', '.join(known[:6])}{', ...' if len(known) > 6 else ''}"
                      if known else ": no shoe"))
    records = select(records, sel)
    counts: dict[str, int]
    try:
        if fmt == "parquet":
            from croupier.parquet import ParquetError, owned_files, write_directory

            try:
                for old in owned_files(path):
                    old.unlink()
                counts = write_directory(records, path)
            except ParquetError as e:
                raise fail(str(e), code=1) from None
            n = sum(counts.values())
        else:
            writer = write_jsonl if fmt == "jsonl" else write_parquet
            if path == "-":
                try:
                    n = writer(records, sys.stdout.buffer)
                    sys.stdout.buffer.flush()
                except BrokenPipeError:  # `| head`: the reader has what it wanted
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    raise typer.Exit(0) from None
            else:
                with open(path, "wb") as f:
                    n = writer(records, f)
            counts = dict(Counter(r.env.stream for r in records))
    except PyarrowMissing as e:
        raise fail(str(e)) from None
    except OSError as e:
        raise fail(f"cannot write {path}: {e.strerror or e}") from None
    which = (f"table {tables[0]}" if len(tables) == 1 else
             f"tables {', '.join(dict.fromkeys(tables))}" if tables else
             f"{len({r.env.table_id for r in records})} table(s)")
    scope = f" ({sel.describe()})" if sel.filtered else ""
    summary = (f"exported {n} events of {which}{scope} to {'stdout' if path == '-' else path} ({fmt}): "
               + ", ".join(f"{s} {c}" for s, c in counts.items()))
    Console(stderr=path == "-", highlight=False, soft_wrap=True).print(summary, markup=False)


# ---- audit: re-derive every round and settlement of the log with the rules core (croupier/audit.py) ----------
@app.command()
def audit(
    table: Annotated[Optional[str], typer.Option("--table", help="Audit one table (default: every table).")] = None,
    shoe: Annotated[Optional[str], typer.Option("--shoe", help="Audit the rounds of one shoe (a shoe id).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    bootstrap: Annotated[Optional[str], typer.Option(help=BOOTSTRAP_HELP)] = None,
    prefix: Annotated[Optional[str], typer.Option(help=PREFIX_HELP)] = None,
    vault_key_file: Annotated[Optional[Path], typer.Option(
        "--vault-key-file", help="The shoe service's vault key file (KEY_ID:BASE64 lines, mode 600): open each "
        "sealed shoe order on shoe.vault and check it against the reveal. Reading the vault needs a principal "
        "allowed to (the shoe one, on a secured broker).")] = None,
) -> None:
    """Audit the event log: re-deal every round from the cards drawn, re-settle every bet with the rules core,
    check each shoe's reveal against its commitment and every stream's gapless seq, every event's principal,
    and each event a command caused against that command's record (its topic's writer, its actor, the
    broker's append time; needs a principal that may read the command topics: surveillance); with
    ``--vault-key-file``, check that every sealed order on ``shoe.vault`` opens to the order revealed at close.
    List every discrepancy. Exit 0 when clean, 1 when a discrepancy is found."""
    import asyncio
    import gc
    import logging

    from aiokafka.errors import KafkaError

    from contracts.vault import VaultKeyError, VaultKeys
    from croupier.audit import audit as run_audit
    from croupier.log import CommandsUnreadable, VaultUnreadable, read_commands, read_for_audit, read_vault

    settings = _settings(bootstrap, prefix)
    keys = None
    if vault_key_file is not None:
        try:
            keys = VaultKeys.from_file(vault_key_file)
        except VaultKeyError as e:
            raise fail(str(e)) from None
    # aiokafka and asyncio log connection failures on their own: the one line below says it
    quiet = {name: logging.getLogger(name).level for name in ("aiokafka", "asyncio")}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    try:
        envs, undecodable, unknown = asyncio.run(read_for_audit(settings, table))
        vault, vault_reason = None, "no --vault-key-file given: the sealed shoe orders were not opened"
        if keys is not None:
            try:
                vault, bad_vault = asyncio.run(read_vault(settings, table))
                undecodable += bad_vault
            except (VaultUnreadable, KafkaError) as e:
                vault_reason = f"cannot read shoe.vault: {type(e).__name__}: {e}"
        commands, commands_reason = None, ""
        try:
            commands = asyncio.run(read_commands(settings, table))
        except (CommandsUnreadable, KafkaError) as e:
            commands_reason = f"cannot read the command topics: {type(e).__name__}: {e}"
    except Exception as e:  # a broker that cannot be reached, and the like: one line
        raise fail(f"cannot reach Kafka at {settings.bootstrap_servers}: {kafka_detail(settings, e)}",
                   code=1) from None
    finally:
        gc.collect()  # an unclosed client's complaint is made now, while the loggers are quiet
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
    where = f" under topic prefix {settings.topic_prefix!r}" if settings.topic_prefix else ""
    if table is not None and not envs:
        raise fail(f"no events for table {table!r} in the log at {settings.bootstrap_servers}{where}")
    if not envs and not undecodable:
        raise fail(f"no events in the log at {settings.bootstrap_servers}{where}")
    if shoe is not None and not any(e.shoe_id == shoe or getattr(e.payload, "shoe_id", None) == shoe for e in envs):
        raise fail(f"no events for shoe {shoe!r}" + (f" at table {table!r}" if table else ""))
    report = run_audit(envs, table_id=table, shoe_id=shoe, undecodable=undecodable, unknown=unknown,
                       vault=vault, vault_keys=keys, vault_reason=vault_reason, commands=commands,
                       commands_reason=commands_reason)
    if as_json:
        _json({"table": table, "shoe": shoe, **report.to_dict()})
    else:
        scope = (f"table {table}" if table else f"{report.tables} table(s)") + (f", shoe {shoe}" if shoe else "")
        typer.echo(f"audited {report.events} events of {scope}: {report.shoes_verified} shoe(s) verified, "
                   f"{report.rounds_checked} round(s) and {report.bets_checked} bet(s) checked, "
                   f"{report.rounds_pending} round(s) in play")
        skipped = sum(report.unknown_types.values())
        typer.echo(f"undecodable records: {report.undecodable_records}; events of unknown types skipped: {skipped}"
                   + (f" ({', '.join(f'{k} {v}' for k, v in sorted(report.unknown_types.items()))})"
                      if skipped else ""))
        if report.refused:
            typer.echo("commands refused with a reason (a person's command the log shows could not be done: the "
                       "floor worked, not discrepancies): "
                       + ", ".join(f"{k} {v}" for k, v in sorted(report.refused.items())))
        if report.broken_rejections:
            typer.echo("the floor is broken: commands rejected "
                       + ", ".join(f"{k} {v}" for k, v in sorted(report.broken_rejections.items())))
        found = report.discrepancies or []
        typer.echo(f"{len(found)} discrepanc{'y' if len(found) == 1 else 'ies'}" + (":" if found else ": clean"))
        for d in found:
            typer.echo(f"{d.table_id} {d.kind} {d.where}: {d.detail}")
        v = report.vault
        if v.status == "checked":
            typer.echo(f"vault: {v.opened} of {v.records} sealed order(s) opened and matched their reveal or "
                       f"commitment (keys {', '.join(f'{k} {n}' for k, n in sorted(v.key_ids.items())) or 'none'})")
        else:
            typer.echo(f"vault: not checked, the sealed shoe orders could not be opened ({v.reason})")
        pv = report.provenance
        if pv.status == "checked":
            typer.echo(f"provenance: {pv.events_checked} event(s) matched to their command among {pv.commands} "
                       "command record(s) (principal, actor, the log's time)")
        else:
            typer.echo(f"provenance: attribution only, events not matched to commands ({pv.reason})")
    if not report.clean:
        raise typer.Exit(1)


from croupier.table_cli import table_app  # noqa: E402 - the sub-app registers after the app's own commands

app.add_typer(table_app, name="table")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
