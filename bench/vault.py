"""Benchmark: what sealing the shoe costs the shoe service (issue 9, finding 4).

Median CPU time (``time.process_time``, the machine is shared) over ``--repeats`` runs of:

* ``seal``: AES-256-GCM of one 8-deck order and its salt (``contracts.vault.seal``);
* ``open``: the same record opened (``open_sealed``, no cache);
* ``draw``: the shoe core deciding one ``DrawCard`` on a sealed shoe (open via the cache, the cut, the draw);
* ``evolve``: folding one ``CardDrawn`` into the blind shoe (no key needed).

Last line: ``vault: seal_us=<a> open_us=<b> draw_us=<c> evolve_us=<d>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from baccarat.cards import standard_deck
from contracts.commands import DrawCard, LoadShoe
from contracts.envelope import Envelope, event_id
from contracts.vault import Vault, VaultKeys, open_sealed, seal
from services.runtime.core import command
from services.shoe.core import Entropy, ShoeCore

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _median_us(fn, n: int, repeats: int) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("-n", type=int, default=300, help="operations per run")
    a = ap.parse_args()
    rng = random.Random(1)
    keys = VaultKeys((("bench", rng.randbytes(32)),))
    order = [str(c) for c in rng.sample(standard_deck() * 8, 416)]
    salt = rng.randbytes(16).hex()
    nonce = rng.randbytes(12)
    kid, nh, ct = seal(keys, nonce, "T1", "S1", order, salt)

    def shuffle(cards: list) -> list:  # type: ignore[type-arg]
        rng.shuffle(cards)
        return cards

    core = ShoeCore(Entropy(shuffle, lambda: rng.randbytes(16)), Vault(keys, nonce=lambda: rng.randbytes(12)))
    state = core.initial("T1")
    for i, out in enumerate(core.decide(state, command("T1", "load", AT, LoadShoe(shoe_id="S1", cut_at=70)))):
        stream = out.stream or core.own_stream
        state = core.evolve(state, Envelope(event_id=event_id(stream, "T1", i + 1), stream=stream, table_id="T1",
                                            seq=i + 1, causation_id="load", correlation_id="T1", occurred_at=AT,
                                            payload=out.payload, shoe_id="S1"))
    state = replace(state, round_in_play="R1", no_more_bets="R1")  # R1 is dealing ("No more bets" called)
    draw = command("T1", "d", AT, DrawCard(shoe_id="S1", round_id="R1", card_number=1))
    (drawn,) = core.decide(state, draw)
    env = Envelope(event_id=event_id(core.own_stream, "T1", 9), stream=core.own_stream, table_id="T1", seq=9,
                   causation_id="d", correlation_id="R1", occurred_at=AT, payload=drawn.payload, shoe_id="S1")
    r = {
        "seal": _median_us(lambda: seal(keys, nonce, "T1", "S1", order, salt), a.n, a.repeats),
        "open": _median_us(lambda: open_sealed(keys, "T1", "S1", kid, nh, ct), a.n, a.repeats),
        "draw": _median_us(lambda: core.decide(state, draw), a.n, a.repeats),
        "evolve": _median_us(lambda: core.evolve(state, env), a.n, a.repeats),
    }
    print(f"vault: seal_us={r['seal']:.1f} open_us={r['open']:.1f} draw_us={r['draw']:.1f} "
          f"evolve_us={r['evolve']:.1f}")


if __name__ == "__main__":
    main()
