"""A cage service core driven alone (no bus): commands in, its events out, inputs fed by hand."""

from __future__ import annotations

from datetime import datetime, timezone

from contracts import topics as T
from contracts.cage import ChipCount
from contracts.envelope import Envelope, event_id
from contracts.events import CommandRejected, Event
from services.cage.core import CageCore, CageState
from services.runtime.core import Runner, command

AT = datetime(2026, 1, 1, 20, 0, tzinfo=timezone.utc)


def chips(*pairs: tuple[int, int]) -> list[ChipCount]:
    """``chips((2_500, 4), (500, 10))``: 4 x $25 and 10 x $5."""
    return [ChipCount(d, n) for d, n in pairs]


class Desk:
    """One cage core; ``send`` decides a command (ids c1, c2 …) and folds its events."""

    def __init__(self, table_id: str = "T1"):
        self.table_id = table_id
        self.runner = Runner(CageCore())
        self.n = 0
        self.inputs: dict[str, int] = {}
        self.log: list[Envelope] = []

    def send(self, payload, actor: str = "dealer-1", cid: str | None = None) -> list[Event]:  # type: ignore[no-untyped-def]
        """The events the command caused (a ``CommandRejected`` when refused)."""
        self.n += 1
        d = self.runner.decide(command(self.table_id, cid or f"c{self.n}", AT, payload, actor=actor),
                               route=T.ROUTES[T.CAGE_COMMANDS])
        self.runner.commit(d)
        self.log.extend(d.events)
        return [e.payload for e in d.events]

    def refused(self, payload, actor: str = "dealer-1") -> str:  # type: ignore[no-untyped-def]
        """The reason code of a refused command (fails if it was not refused or booked anything)."""
        before = self.state
        out = self.send(payload, actor)
        assert len(out) == 1 and isinstance(out[0], CommandRejected), out
        assert self.state == before, "a refused command booked something"
        return out[0].reason

    def feed(self, payload: Event, stream: str) -> None:
        """An input event of another service (``wagering.events``, ``settlement.events``)."""
        self.inputs[stream] = n = self.inputs.get(stream, 0) + 1
        self.runner.absorb_input(Envelope(event_id=event_id(stream, self.table_id, n), stream=stream,
                                          table_id=self.table_id, seq=n, causation_id="x", correlation_id="x",
                                          occurred_at=AT, payload=payload))

    @property
    def state(self) -> CageState:
        return self.runner.slot(self.table_id).state
