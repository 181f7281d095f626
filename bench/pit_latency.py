"""Benchmark: card read → screen at many tables (issue 10). How long after a card leaves the shoe does the
dealer's console in a browser show it?

Run: ``.venv/bin/python bench/pit_latency.py [--tables 50] [--board-tables 20] [--seconds 60] [--pace 10]
[--bootstrap HOST:PORT]``
(bootstrap default: ``KAFKA_BOOTSTRAP_SERVERS``, else ``127.0.0.1:19092``; exit status 2 with one line on
stderr when the broker cannot be reached).

The floor as it runs on a casino's machines, on a fresh topic prefix (``pitbench<hex>.``, deleted at the end):

* two ``croupier serve`` processes: the four deciders (shoe, dealing, wagering, settlement) in one, the
  projection with its query API and the pit's pages (``--api-port``) in the other;
* this process: the floor (a :class:`~services.floor.dealer.TableDealer` per table (``bench.pipeline.TimedDealer``), shuffled 8-deck shoes,
  three seated players betting; one round started every ``--pace`` s per table, the tables spread over the
  period), a ``read_committed`` consumer of ``shoe.events`` and of ``dealing.events``, and one Server-Sent
  Events stream per table, ``/live/console/{table}`` as the dealer role (a dealer's screen per table), plus
  one ``/live/floor`` stream as the pit role (the pit boss's floor view; read, not timed).

A card's moment of reading is its ``CardDrawn`` record's timestamp (the shoe service's write, in the broker's
log; a physical shoe's reader report becomes that record in the shoe service's next transaction). The card
is on the screen when the table's console stream delivers a round fragment whose ``data-next-card`` says the
card is shown (the SSE ``data`` line arrived in this process: what the page's script then does is a DOM swap
and is not timed). ``screen`` = arrival − ``CardDrawn`` timestamp. Baseline, measured in the same run: the
``CardDealt`` record of the same card (dealing's event the projection folds) arriving at this process's own
consumer (``kafka``); ``screen − kafka`` is the projection's fold, the render and the stream. All times are this
machine's wall clock (one clock: the broker, the services and this process run here).

The table-side scoreboard (``/scoreboard/{table}``, public, its page asks ``/scoreboard/{table}/board`` every
second), one screen beside each of the first ``--board-tables`` tables (default 20, at most ``--tables``; the
issue's figure is the p99 at 20 tables): a card changes it (the shoe's progress and the public odds of the next round), so ``scoreboard`` =
the first poll whose board shows the card (its ``data-cards-out`` at least the card's shoe position + 1) −
``CardDrawn`` timestamp. This process polls each table's board every ``--board-poll`` s (default 0.1; the
page itself polls every 1 s, which adds up to 1 s more on a real screen), so the figure is the server's
part plus at most one poll interval.

Last lines, exactly: ``pit_latency: tables=<n> cards=<k> p50_ms=<a> p99_ms=<b> max_ms=<c> kafka_p99_ms=<d>
ratio_p99=<b/d> drops=<slow clients dropped>`` (p50/p99 of ``screen``), then ``pit_scoreboard: tables=<boards>
floor_tables=<n> cards=<k> p50_ms=<a> p99_ms=<b> max_ms=<c> poll_ms=<p> load1=<x> load5=<y>`` (the machine's
load averages, ``os.getloadavg``, at the end of the run: the figures mean little without them on a shared
machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from aiokafka import AIOKafkaConsumer

from baccarat.table import punto_banco_full
from bench.pipeline import TimedDealer, partitions_ready, pct, probe, quiet_client_logs
from bench.serveprocs import free_port, start_serve, stop_all, wait_ready
from contracts import topics as T
from contracts.codecs import decode_event
from contracts.events import CardDealt, CardDrawn
from croupier.topics import cleanup
from services.floor.bettors import Seat
from services.floor.io import KafkaFloorIO
from services.runtime.kafka import ensure_topics
from services.runtime.settings import Settings

REPO = Path(__file__).resolve().parents[1]
ROUND_FRAG = re.compile(r'data-round-id="([^"]*)" data-next-card="(\d+)"')


def wall_clock() -> datetime:
    """Now, UTC: the floor's commands claim the real time (the services check it against the log's)."""
    return datetime.now(UTC)


def now_ms() -> float:
    return time.time() * 1000.0


class Cards:
    """Where each card ``(table, round, card number)`` was seen: read (``CardDrawn`` timestamp), dealt
    (``CardDealt`` arrival here) and on screen (the console stream's arrival here). Milliseconds."""

    def __init__(self) -> None:
        self.read: dict[tuple[str, str, int], float] = {}
        self.dealt: dict[tuple[str, str, int], float] = {}
        self.screen: dict[tuple[str, str, int], float] = {}
        self.dealt_count: dict[tuple[str, str], int] = defaultdict(int)
        self.shown: dict[str, tuple[str, int]] = {}
        #: the scoreboard: (table, shoe, cards out after the card) -> read (ms), and when a board showed it
        self.board_read: dict[tuple[str, str, int], float] = {}
        self.board_seen: dict[tuple[str, str, int], float] = {}
        self.board_out: dict[tuple[str, str], int] = {}

    def on_board(self, table: str, shoe_id: str, cards_out: int, at: float) -> None:
        """A scoreboard of ``table`` showing ``cards_out`` cards out of ``shoe_id``."""
        seen = self.board_out.get((table, shoe_id), 0)
        for k in range(seen + 1, cards_out + 1):
            self.board_seen.setdefault((table, shoe_id, k), at)
        self.board_out[(table, shoe_id)] = max(seen, cards_out)

    def board_latencies(self) -> list[float]:
        """board − read of every card read and shown on its table's scoreboard, ms."""
        return [self.board_seen[k] - t for k, t in self.board_read.items() if k in self.board_seen]

    def on_screen(self, table: str, round_id: str, next_card: int, at: float) -> None:
        """A console fragment of ``table`` showing ``next_card - 1`` cards of ``round_id``."""
        seen_round, seen = self.shown.get(table, ("", 0))
        start = seen if seen_round == round_id else 0
        for k in range(start + 1, next_card):
            self.screen.setdefault((table, round_id, k), at)
        if next_card - 1 > start:
            self.shown[table] = (round_id, next_card - 1)

    def latencies(self) -> tuple[list[float], list[float]]:
        """(screen − read, dealt − read) of every card read and shown, ms."""
        screen = [self.screen[k] - t for k, t in self.read.items() if k in self.screen]
        kafka = [self.dealt[k] - t for k, t in self.read.items() if k in self.dealt]
        return screen, kafka


async def follow_topics(settings: Settings, cards: Cards, stop: asyncio.Event) -> None:
    """Record every ``CardDrawn`` (its record timestamp) and ``CardDealt`` (its arrival) of the run."""
    consumer = AIOKafkaConsumer(settings.topic(T.SHOE_EVENTS), settings.topic(T.DEALING_EVENTS),
                                **settings.client_options(), isolation_level="read_committed",
                                auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=20)
    await consumer.start()
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200)
            at = now_ms()
            for recs in batch.values():
                for r in recs:
                    try:
                        env = decode_event(r.value)
                    except Exception:  # noqa: BLE001 - another kind of record: not a card
                        continue
                    p = env.payload
                    if isinstance(p, CardDrawn):
                        cards.read.setdefault((env.table_id, p.round_id, p.card_number), float(r.timestamp))
                        # the shoe's cards out once this card is drawn (position: 0-based, the burn included)
                        cards.board_read.setdefault((env.table_id, p.shoe_id, p.position + 1), float(r.timestamp))
                    elif isinstance(p, CardDealt):
                        rid = p.round_id
                        cards.dealt_count[(env.table_id, rid)] += 1
                        cards.dealt.setdefault((env.table_id, rid, cards.dealt_count[(env.table_id, rid)]), at)
    finally:
        await consumer.stop()


async def watch_console(client: httpx.AsyncClient, base: str, table: str, token: str, cards: Cards,
                        stop: asyncio.Event, frames: list[int]) -> None:
    """One dealer's screen: the table's console stream; every round fragment's cards marked on screen."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    while not stop.is_set():
        try:
            async with client.stream("GET", f"{base}/live/console/{table}", headers=headers,
                                     timeout=httpx.Timeout(10.0, read=None)) as resp:
                resp.raise_for_status()
                async for line in resp.aiter_lines():
                    if stop.is_set():
                        return
                    if not line.startswith("data: "):
                        continue
                    at = now_ms()
                    frames[0] += 1
                    data = json.loads(line[6:])
                    if data.get("id") != f"round-{table}":
                        continue
                    m = ROUND_FRAG.search(data.get("html", ""))
                    if m and m.group(1):
                        cards.on_screen(table, m.group(1), int(m.group(2)), at)
        except (httpx.HTTPError, json.JSONDecodeError) as e:
            if not stop.is_set():
                print(f"console stream of {table} ended ({type(e).__name__}: {e}); reconnecting", file=sys.stderr)
                await asyncio.sleep(0.5)


BOARD = re.compile(r'data-shoe-id="([^"]*)" data-cards-out="(\d+)"')


async def watch_board(client: httpx.AsyncClient, base: str, table: str, cards: Cards, stop: asyncio.Event,
                      poll_s: float) -> None:
    """The table-side scoreboard of ``table`` (public: no token), asked every ``poll_s`` s as its page asks
    every second; each answer's cards out marked on the board."""
    while not stop.is_set():
        t = time.monotonic()
        with contextlib.suppress(httpx.HTTPError):
            r = await client.get(f"{base}/scoreboard/{table}/board", timeout=10.0)
            at = now_ms()
            m = BOARD.search(r.text)
            if m and m.group(1):
                cards.on_board(table, m.group(1), int(m.group(2)), at)
        await asyncio.sleep(max(0.0, poll_s - (time.monotonic() - t)))


async def watch_floor(client: httpx.AsyncClient, base: str, token: str, stop: asyncio.Event,
                      frames: list[int]) -> None:
    """The pit boss's floor view: read every frame (load on the server), not timed."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    with contextlib.suppress(httpx.HTTPError):
        async with client.stream("GET", f"{base}/live/floor", headers=headers,
                                 timeout=httpx.Timeout(10.0, read=None)) as resp:
            async for line in resp.aiter_lines():
                if stop.is_set():
                    return
                if line.startswith("data: "):
                    frames[0] += 1


async def run(args: argparse.Namespace) -> int:
    quiet_client_logs()
    why = await probe(args.bootstrap)
    if why is not None:
        print(f"pit_latency: cannot reach the Kafka broker at {args.bootstrap}: {why}", file=sys.stderr)
        return 2
    prefix = f"pitbench{uuid.uuid4().hex[:8]}."
    settings = replace(Settings.from_env(), bootstrap_servers=args.bootstrap, topic_prefix=prefix)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tokens = {"dealer": secrets.token_urlsafe(24), "pit": secrets.token_urlsafe(24)}
    from contracts.vault import new_key_entry

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROUPIER_API_TOKEN", "CROUPIER_VAULT"))}
    env |= {"KAFKA_BOOTSTRAP_SERVERS": args.bootstrap, "CROUPIER_TOPIC_PREFIX": prefix,
            "CROUPIER_VAULT_KEYS": new_key_entry("pitbench-1"),
            **{f"CROUPIER_API_TOKEN_{r.upper()}": t for r, t in tokens.items()}}
    print(f"broker {args.bootstrap}, topic prefix {prefix!r}, {os.cpu_count()} CPUs, tables={args.tables} "
          f"scoreboards={args.board_tables} pace={args.pace}s seconds={args.seconds}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    procs: list[subprocess.Popen[bytes]] = []
    cards = Cards()
    stop = asyncio.Event()
    io: KafkaFloorIO | None = None
    frames, floor_frames = [0], [0]
    logs = Path(tempfile.mkdtemp(prefix="pitbench-"))
    try:
        await ensure_topics(settings, T.ALL_TOPICS)
        await partitions_ready(settings, T.ALL_TOPICS)
        t0 = time.monotonic()
        procs.append(start_serve(["--services", "shoe,dealing,wagering,settlement", "--prefix", prefix,
                                  "--bootstrap", args.bootstrap], env, logs / "deciders.log"))
        procs.append(start_serve(["--services", "projection", "--api-port", str(port), "--prefix", prefix,
                                  "--bootstrap", args.bootstrap], env, logs / "projection.log"))
        await wait_ready(f"{base}/health/ready", procs, 120)
        print(f"services ready in {time.monotonic() - t0:.1f} s (logs in {logs})")

        io = KafkaFloorIO(settings)
        await io.start()
        seats = [Seat(i, f"player-{i}") for i in range(1, 4)]
        dealers = [TimedDealer(io, f"P{i:02d}", punto_banco_full(), seats, random.Random(i), wall_clock,
                               timeout=120.0) for i in range(1, args.tables + 1)]

        async def setup(d: TimedDealer) -> None:
            await d.open_table()
            await d.load_shoe()

        t0 = time.monotonic()
        await asyncio.gather(*(setup(d) for d in dealers))
        print(f"setup: {args.tables} tables opened and shoes loaded in {time.monotonic() - t0:.1f} s")

        follower = asyncio.create_task(follow_topics(settings, cards, stop))
        client = httpx.AsyncClient(limits=httpx.Limits(max_connections=args.tables + 10))
        watchers = [asyncio.create_task(watch_console(client, base, d.table_id, tokens["dealer"], cards, stop,
                                                      frames)) for d in dealers]
        watchers.append(asyncio.create_task(watch_floor(client, base, tokens["pit"], stop, floor_frames)))
        watchers += [asyncio.create_task(watch_board(client, base, d.table_id, cards, stop, args.board_poll))
                     for d in dealers[:args.board_tables]]
        await asyncio.sleep(1.0)  # the streams are open before the first card
        rounds = [0]
        t_end = time.monotonic() + args.seconds

        async def deal(i: int, d: TimedDealer) -> None:
            await asyncio.sleep(args.pace * i / args.tables)  # spread the tables over the period
            while time.monotonic() < t_end:
                t = time.monotonic()
                await d.next_round()
                rounds[0] += 1
                await asyncio.sleep(max(0.0, args.pace - (time.monotonic() - t)))

        t0 = time.monotonic()
        await asyncio.gather(*(deal(i, d) for i, d in enumerate(dealers)))
        wall = time.monotonic() - t0
        await asyncio.sleep(2.0)  # the last cards' frames
        stop.set()
        for w in watchers:
            w.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        await client.aclose()
        await follower

        screen, kafka = cards.latencies()
        drops = 0
        with contextlib.suppress(Exception):
            text = (logs / "projection.log").read_text(errors="replace")
            drops = text.count('"live_subscriber_dropped"')
        missing = len([k for k in cards.read if k not in cards.screen])
        print(f"floor: {rounds[0]} rounds dealt in {wall:.1f} s ({rounds[0] / wall:.2f} rounds/s), "
              f"{len(cards.read)} cards read, {missing} not seen on a screen; console frames {frames[0]}, "
              f"floor frames {floor_frames[0]}")
        if not screen or not kafka:
            print("pit_latency: no card was both read and shown", file=sys.stderr)
            return 1

        def line(xs: list[float]) -> str:
            return (f"n={len(xs)} p50={pct(xs, 50):.1f} p90={pct(xs, 90):.1f} p99={pct(xs, 99):.1f} "
                    f"max={max(xs):.1f} ms")

        print(f"card read -> CardDealt at this process (kafka, the baseline): {line(kafka)}")
        print(f"card read -> on the dealer's screen (the console stream): {line(screen)}")
        p99, k99 = pct(screen, 99), pct(kafka, 99)
        print(f"target: p99 under 100 ms at 50 tables; here {p99:.1f} ms at {args.tables} tables")
        print(f"pit_latency: tables={args.tables} cards={len(screen)} p50_ms={pct(screen, 50):.1f} "
              f"p99_ms={p99:.1f} max_ms={max(screen):.1f} kafka_p99_ms={k99:.1f} ratio_p99={p99 / k99:.2f} "
              f"drops={drops}")
        board = cards.board_latencies()
        if not board:
            print("pit_scoreboard: no card was both read and shown on a scoreboard", file=sys.stderr)
            return 1
        load1, load5, _ = os.getloadavg()
        print(f"card read -> on a table-side scoreboard ({args.board_tables} screens): {line(board)}")
        print(f"pit_scoreboard: tables={args.board_tables} floor_tables={args.tables} cards={len(board)} "
              f"p50_ms={pct(board, 50):.1f} p99_ms={pct(board, 99):.1f} max_ms={max(board):.1f} "
              f"poll_ms={args.board_poll * 1000:.0f} load1={load1:.2f} load5={load5:.2f}")
        return 0
    finally:
        stop.set()
        if io is not None:
            with contextlib.suppress(Exception):
                await io.stop()
        stop_all(procs)
        if not args.keep_topics:
            with contextlib.suppress(Exception):
                await cleanup(settings, prefix, keep=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the floor deals (s)")
    ap.add_argument("--pace", type=float, default=10.0, help="one round started every PACE s per table")
    ap.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    ap.add_argument("--keep-topics", action="store_true")
    ap.add_argument("--board-poll", type=float, default=0.1, help="how often each scoreboard is asked (s)")
    ap.add_argument("--board-tables", type=int, default=20,
                    help="tables with a table-side scoreboard watched (the first ones; at most --tables)")
    args = ap.parse_args(argv)
    if args.tables < 1 or args.seconds <= 0 or args.pace <= 0 or args.board_poll <= 0 or args.board_tables < 1:
        ap.error("--tables, --board-tables, --seconds, --pace and --board-poll must be positive")
    if args.board_tables > args.tables:
        ap.error(f"--board-tables {args.board_tables} is more than the floor's --tables {args.tables}")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
