"""The audit's bookkeeping check: every stream of a table has a gapless ``seq`` from 1, no seq twice, and each
``event_id`` derived from its (stream, table, seq) (:func:`contracts.envelope.event_id`).

Called by :func:`croupier.audit.audit` (pure). Kinds: ``duplicate_seq`` (the sentence says how the two
records differ), ``bad_event_id``, ``seq_gap``. An event of a type this version does not know
(:class:`~croupier.audit_report.UnknownEvent`) holds its seq: a newer producer's event is not a gap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from contracts.envelope import Envelope, event_id
from croupier.audit_report import UnknownEvent

#: ``flag(kind, where, detail)``
Flag = Callable[..., None]


def check_seqs(tid: str, envs: Sequence[Envelope], unknown: Sequence[UnknownEvent],
               flag: Flag) -> dict[str, list[Envelope]]:
    """Check table ``tid``'s streams; returns its events by stream, each in ``seq`` order."""
    streams: dict[str, list[Envelope]] = defaultdict(list)
    slots: dict[str, list[Envelope | UnknownEvent]] = defaultdict(list)
    for e in envs:
        streams[e.stream].append(e)
        slots[e.stream].append(e)
    for k in unknown:
        slots[k.stream].append(k)
    for stream, held in sorted(slots.items()):
        held.sort(key=lambda h: h.seq)
        first_of: dict[int, Envelope | UnknownEvent] = {}
        for slot in held:
            if slot.seq in first_of:
                flag("duplicate_seq", f"{stream}#{slot.seq}",
                     f"the same seq appears twice ({_compare(first_of[slot.seq], slot)})")
            else:
                first_of[slot.seq] = slot
            if slot.event_id != event_id(stream, tid, slot.seq):
                flag("bad_event_id", f"{stream}#{slot.seq}",
                     f"event_id {slot.event_id} is not derived from its seq")
        seen = set(first_of)
        expected = set(range(1, max(seen) + 1)) if seen else set()
        for missing in sorted(expected - seen):
            flag("seq_gap", f"{stream}#{missing}", "missing event")
    for es in streams.values():
        es.sort(key=lambda e: e.seq)
    return streams


def _tag(env: Envelope | UnknownEvent) -> str:
    if isinstance(env, UnknownEvent):
        return f"{env.type_name} (a type this version does not know)"
    return str(type(env.payload).__struct_config__.tag)


def _compare(first: Envelope | UnknownEvent, second: Envelope | UnknownEvent) -> str:
    """How two envelopes with the same seq differ, for an investigator."""
    if first == second:
        return f"an identical copy of {_tag(first)}"
    if isinstance(first, UnknownEvent) or isinstance(second, UnknownEvent) or (
            type(first.payload) is not type(second.payload)):
        return f"different events: {_tag(first)} and {_tag(second)}"

    def short(v: object) -> str:
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."

    diffs = [f"{f} {short(getattr(first, f))} then {short(getattr(second, f))}" for f in first.__struct_fields__
             if f != "payload" and getattr(first, f) != getattr(second, f)]
    diffs += [f"payload.{f} {short(getattr(first.payload, f))} then {short(getattr(second.payload, f))}"
              for f in first.payload.__struct_fields__ if getattr(first.payload, f) != getattr(second.payload, f)]
    return f"two different {_tag(first)}: {'; '.join(diffs)}"
