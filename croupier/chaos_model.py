"""A chaos run's configuration, its faults and its result (:mod:`croupier.chaos` runs it): the fault kinds and
their weights, what a targeted fault waits for."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from contracts.envelope import Envelope
from contracts.events import BettingOpened, CardDealt, CardDrawn, RoundResolved
from croupier.rawcheck import RawReport

REPO = Path(__file__).resolve().parents[1]
SERVICES = ("shoe", "dealing", "wagering", "settlement", "projection")
#: fault kinds and their weights in the draw
FAULT_WEIGHTS = {
    "kill9": 4, "sigterm": 2, "sigstop": 3,
    "settlement_after_result": 2, "dealing_mid_round": 2, "shoe_mid_draw": 1, "wagering_while_betting": 1,
    "projection_kill9": 1, "add_instance": 1, "remove_instance": 1,
}
#: what a targeted fault waits for, and which service it hits
TARGETS: dict[str, tuple[str, Callable[[Envelope], bool]]] = {
    "settlement_after_result": ("settlement", lambda e: isinstance(e.payload, RoundResolved)),
    "dealing_mid_round": ("dealing", lambda e: isinstance(e.payload, CardDealt) and e.payload.position == 1),
    "shoe_mid_draw": ("shoe", lambda e: isinstance(e.payload, CardDrawn)),
    "wagering_while_betting": ("wagering", lambda e: isinstance(e.payload, BettingOpened)),
}


@dataclass
class ChaosConfig:
    """One chaos run's size and pace. Times in seconds."""

    bootstrap: str
    prefix: str
    rounds: int = 300
    min_faults: int = 15
    max_seconds: float = 600.0
    tables: int = 6
    instances: int = 2
    seed: int = 1
    fault_gap_s: tuple[float, float] = (2.0, 6.0)
    round_timeout_s: float = 90.0
    quiet_s: float = 20.0  # longer than a session timeout plus a rebuild: a restarted projection catches up
    own_broker: int | None = None  # a port: start our own broker there (and kill it once)
    #: nodes of the own broker (``own_broker``'s port is node 1's): >1 kills and restarts them one at a time
    brokers: int = 1
    #: the own broker's data dir (default ``/tmp/croupier-chaos-kafka-<own_broker>``)
    broker_dir: Path | None = None
    #: only these fault kinds (e.g. ``("broker",)``: broker kills alone, no forced instance faults); None: all
    fault_kinds: tuple[str, ...] | None = None
    workdir: Path | None = None
    replica_port: int = 18931
    croupier: str = str(REPO / ".venv" / "bin" / "croupier")


@dataclass
class Fault:
    """A fault injected: wall-clock moment (ms since the epoch), kind, the instance hit, detail."""

    at_ms: int
    kind: str
    target: str
    detail: str = ""


@dataclass
class ChaosResult:
    """What a run did and what the checks found."""

    rounds_asked: int
    faults: list[Fault]
    raw: RawReport
    audit_clean: bool
    audit_output: str
    replica_diff_cents: int | None
    stall_p99_s: float
    floor_rounds: int
    floor_errors: list[str]
    elapsed_s: float
    #: :func:`stall_lines` of the run
    stall_detail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.raw.clean and self.audit_clean and self.raw.rounds_settled >= self.rounds_asked
                and self.replica_diff_cents == 0 and not self.floor_errors)

    def line(self) -> str:
        """The last line the bench prints (issue 8)."""
        r = self.raw
        return (f"chaos: rounds={r.rounds_settled} faults={len(self.faults)} lost={r.lost} doubled={r.doubled} "
                f"seq_conflicts={r.seq_conflicts} ledger_diff_cents={r.ledger_diff_cents} "
                f"audit={'clean' if self.audit_clean else 'dirty'} stall_p99_s={self.stall_p99_s:.1f}")


def _now_ms() -> int:
    return int(time.time() * 1000)
