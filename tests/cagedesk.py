"""A cage service core driven alone (no bus): commands in, its events out, inputs fed by hand. The commands
the core sends itself (a marker buy-in's ``DrawMarker`` to ``CAGE`` and ``SettleMarker`` back, on
``cage.markers``) are decided at once, in order, as the bus would deliver them."""

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
    """One cage core (every key: the table ``table_id``, other tables, ``CAGE``); ``send`` decides a command
    (ids c1, c2 …) and folds its events, then the commands it sent, until none is left."""

    def __init__(self, table_id: str = "T1"):
        self.table_id = table_id
        self.runner = Runner(CageCore())
        self.n = 0
        self.inputs: dict[str, int] = {}
        self.log: list[Envelope] = []

    def send(self, payload, actor: str = "dealer-1", cid: str | None = None,  # type: ignore[no-untyped-def]
             table: str | None = None) -> list[Event]:
        """The events the command caused at its key (``table``, default :attr:`table_id`), the marker
        steps' included (a ``CommandRejected`` when refused); every key's events go to :attr:`log`."""
        self.n += 1
        key = table or self.table_id
        todo = [(command(key, cid or f"c{self.n}", AT, payload, actor=actor), T.CAGE_COMMANDS)]
        out: list[Event] = []
        while todo:
            cmd, topic = todo.pop(0)
            d = self.runner.decide(cmd, route=T.ROUTES[topic])
            self.runner.commit(d)
            self.log.extend(d.events)
            out += [e.payload for e in d.events if e.table_id == key]
            todo += [(s.command, s.topic) for s in d.sends]
        return out

    def refused(self, payload, actor: str = "dealer-1", table: str | None = None) -> str:  # type: ignore[no-untyped-def]
        """The reason code of a refused command (fails if it was not refused or booked anything at any key;
        a marker buy-in's ``MarkerRequested``, its reservation released by the refusal, aside)."""
        before = {t: s.state for t, s in self.runner.tables.items()}
        out = [e for e in self.send(payload, actor, table=table) if type(e).__name__ != "MarkerRequested"]
        assert len(out) == 1 and isinstance(out[0], CommandRejected), out
        assert {t: s.state for t, s in self.runner.tables.items() if t in before} == before, \
            "a refused command booked something"
        return out[0].reason

    def at(self, table: str) -> CageState:
        """The cage state at key ``table`` (``CAGE``: the credit lines and markers outstanding)."""
        return self.runner.slot(table).state

    def feed(self, payload: Event, stream: str, table: str | None = None) -> None:
        """An input event of another service (``wagering.events``, ``settlement.events``) at ``table``."""
        key = table or self.table_id
        self.inputs[f"{key}/{stream}"] = n = self.inputs.get(f"{key}/{stream}", 0) + 1
        self.runner.absorb_input(Envelope(event_id=event_id(stream, key, n), stream=stream,
                                          table_id=key, seq=n, causation_id="x", correlation_id="x",
                                          occurred_at=AT, payload=payload))

    @property
    def state(self) -> CageState:
        return self.runner.slot(self.table_id).state
