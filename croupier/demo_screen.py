"""What ``croupier demo`` shows: the live dashboard (every table's shoe, round, last result, Big Road run
lengths, the projection's next-round odds and table result, the advantage player's bets; the floor's totals)
and the summary at the end (per table, the floor's totals in dollars, the surveillance alerts, the audit's
verdict, the vault check, where the log lives), and the demo's JSON log file (:class:`LogFile`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO

from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import Progress
from rich.table import Table

from baccarat.money import format_cents
from baccarat.roads import big_road, parse_results
from croupier.audit import AuditReport
from croupier.demo_floor import FloorRun
from services.runtime.app import Service
from services.runtime.logging import drain
from services.runtime.settings import Settings


def _big_road_text(results: str, width: int = 18) -> str:
    if not results:
        return ""
    road = big_road(parse_results(results))
    cols = road.columns[-width:]
    return " ".join(f"{len(c)}{c[0].side}" for c in cols)


def _dashboard(run: FloorRun, projection: Service | None, progress: Progress, started: float) -> Group:
    t = Table(title="Croupier floor", expand=True, title_justify="left")
    for col in ("table", "game", "shoe", "round", "last", "Big Road (run lengths)", "next: B / P / T",
                "table win", "AP bets"):
        t.add_column(col, overflow="fold")
    for tid, b in sorted(run.tables.items()):
        odds = win = ""
        if projection is not None:
            slot = projection.host.runner.tables.get(tid)
            if slot is not None:
                o = slot.state.last_odds.get("public")
                if o is not None:
                    c = o.counts
                    odds = " / ".join(f"{c[k] / o.total:.2%}" for k in ("banker", "player", "tie"))
                win = format_cents(slot.state.ledger.table_result(tid))
        game = b.game or ("no-vig D7" if b.config.no_vig else "standard")
        if projection is not None:  # who holds the shoe at a table with a curator (the projection's view)
            slot = projection.host.runner.tables.get(tid)
            if slot is not None and slot.state.curator is not None:
                game += f", shoe at seat {slot.state.curator[0]}"
        t.add_row(tid, game, str(b.shoe), str(b.round), b.last, _big_road_text(b.results), odds, win,
                  str(b.ap_bets))
    alerts = 0
    if projection is not None:
        alerts = sum(len(s.state.alerts) for s in projection.host.runner.tables.values())
    totals = (f"rounds {run.rounds}   bets {run.total('bets')}   stakes {format_cents(run.total('stakes'))}   "
              f"house result {format_cents(run.total('table_result'))}   "
              f"commission {format_cents(run.total('commission'))}   "
              f"surveillance alerts {alerts}   {time.monotonic() - started:.0f} s")
    return Group(t, Panel(totals, title="floor"), progress)


class LogFile:
    """The demo's JSON log file (``var/<prefix>log.jsonl``): the services' lines, or with ``--no-services``
    only what the floor's Kafka clients logged, which may be nothing."""

    def __init__(self, path: Path, file: IO[str], label: str):
        self.path, self.file, self.label = path, file, label
        self.start = file.tell()

    def written(self) -> bool:
        """True when this run wrote a line to the file (the client lines held for a count written first)."""
        drain()
        self.file.flush()
        return self.file.tell() > self.start


def _summary(console: Console, run: FloorRun, alerts: list, report: AuditReport, elapsed: float,  # type: ignore[type-arg]
             settings: Settings, kafka_data: Path | None, logs: LogFile, run_id: str) -> None:
    """The summary; ``kafka_data``: the broker's data directory when this run started the broker."""
    t = Table(title="Summary", title_justify="left")
    t.add_column("table")
    t.add_column("game")
    t.add_column("rounds", justify="right")
    t.add_column("house result", justify="right")
    t.add_column("advantage bets", justify="right")
    for tid, b in sorted(run.tables.items()):
        t.add_row(tid, b.game, str(b.round), format_cents(b.table_result), str(b.ap_bets))
    console.print(t)
    players = sorted({a.player_id for a in alerts})
    console.print(f"Rounds {run.rounds} in {elapsed:.0f} s ({run.rounds / max(elapsed, 1e-9):.1f}/s), "
                  f"bets {run.total('bets')}, stakes {format_cents(run.total('stakes'))}, "
                  f"payouts {format_cents(run.total('payouts'))}, "
                  f"house result {format_cents(run.total('table_result'))}, "
                  f"commission {format_cents(run.total('commission'))}")
    console.print(f"Surveillance alerts: {len(alerts)} bet(s) on positive-EV wagers by {len(players)} player(s)"
                  + (f": {', '.join(players[:6])}{' ...' if len(players) > 6 else ''}" if players else ""))
    verdict = "clean" if report.clean else f"{len(report.discrepancies or [])} discrepancies"
    shoes = f"{report.shoes_verified} shoe{'' if report.shoes_verified == 1 else 's'}"
    console.print(f"Audit: {verdict} — {report.events} events, {shoes} verified, "
                  f"{report.rounds_checked} rounds and {report.bets_checked} bets re-derived with the rules core")
    v = report.vault
    console.print(f"Vault: {v.opened} of {v.records} sealed shoe orders opened with the shoe service's key and "
                  f"matched their reveal or commitment" if v.status == "checked"
                  else f"Vault: not checked ({v.reason})", markup=False)
    if report.rounds_pending:
        console.print(f"Rounds still in play at the end (not checked): {report.rounds_pending}")
    if report.broken_rejections:
        console.print("The floor is broken: commands rejected "
                      + ", ".join(f"{k} {v}" for k, v in sorted(report.broken_rejections.items())), markup=False)
    for d in (report.discrepancies or [])[:20]:
        console.print(f"  {d}", markup=False)
    where = f"Kafka at {settings.bootstrap_servers}, topics {settings.topic_prefix}*, run {run_id}"
    if kafka_data is not None:
        where += f" (broker data in {kafka_data}; start it again with `bash infra/kafka/kafka.sh start`)"
    console.print(f"The log: {where}", markup=False)
    if logs.written():  # never name a file that stays empty (--no-services: the services log elsewhere)
        console.print(f"{logs.label} (JSON lines): {logs.path}", markup=False)
    key_file = settings.extra.get("CROUPIER_VAULT_KEY_FILE")
    console.print(f"  .venv/bin/croupier audit --prefix {settings.topic_prefix}"
                  + (f" --vault-key-file {key_file}" if key_file else ""), markup=False)
    console.print(f"  .venv/bin/croupier replay --prefix {settings.topic_prefix} --table BAC-01", markup=False)
    console.print(f"Space: `.venv/bin/croupier topics delete --prefix {settings.topic_prefix}` deletes this log",
                  markup=False)
