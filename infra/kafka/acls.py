"""Who may do what on the secured broker: the principals and their ACLs, in one table.

Run by ``infra/kafka/kafka.sh`` (plain ``python3``, standard library and :mod:`contracts.topics` only):

    python3 infra/kafka/acls.py principals            one principal name a line (admin first)
    python3 infra/kafka/acls.py calls PREFIX GROUPS   AclCommand arguments, one call a line (space separated)
    python3 infra/kafka/acls.py table                 the policy as a Markdown table (README "Running secured")

``PREFIX`` is the topic prefix (``CROUPIER_TOPIC_PREFIX``, e.g. ``t-1234.``, may be empty) and ``GROUPS`` the
group prefix (``CROUPIER_GROUP_PREFIX``, default ``croupier``). Topic ACLs are on the full names (prefix +
base name, pattern type PREFIXED, see :func:`calls`), so one broker holds many prefixes, each with its own
ACLs; consumer-group and transactional-id ACLs are PREFIXED on ``<GROUPS>.<PREFIX><principal>``, which is what
``Settings.group()`` and ``Settings.transactional_id()`` produce (``croupier.t-1234.shoe``, ``…shoe.0``).

Kafka semantics relied on (Kafka 4.x ``StandardAuthorizer``): Read and Write on a topic imply Describe;
Read on a group implies Describe; Write on a transactional id implies Describe; an idempotent producer
needs only Write on a topic (KIP-679); nothing is allowed without an ACL
(``allow.everyone.if.no.acl.found=false``) except for the super user ``admin``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from contracts import topics as T

#: the super user (``super.users``): the broker itself (inter-broker and controller) and ``kafka.sh acl``
ADMIN = "admin"

EVENTS = (T.SHOE_EVENTS, T.DEALING_EVENTS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS, T.CAGE_EVENTS)
"""The public event topics (``shoe.vault`` is not one of them: it holds the sealed shoe orders)."""


@dataclass(frozen=True)
class Grant:
    """What one principal may do (base topic names, before the prefix).

    ``read``: topics it may consume; ``write``: topics it may produce to; ``create``: topics it may create
    (the services create the topics they touch on start-up, see ``services.runtime.kafka.ensure_topics``);
    ``groups``: may use consumer groups and, with ``transactional``, transactional ids named
    ``<group prefix>.<topic prefix><principal>…``.
    """

    principal: str
    kind: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    create: tuple[str, ...] = ()
    groups: bool = False
    transactional: bool = False
    note: str = ""


def _service(name: str, own: tuple[str, ...], inputs: tuple[str, ...], sends: tuple[str, ...] = (),
             transactional: bool = True, note: str = "") -> Grant:
    """A service: reads its inputs and (to rebuild) its own topics, writes its own topics, its dead letters
    and the command topics it sends to, creates every topic it touches."""
    own = (*own, T.dlq(name), f"{name}.snapshots")  # the service's compacted snapshots (its state: its alone)
    touched = tuple(dict.fromkeys((*own, *inputs, *sends)))
    return Grant(name, "service", read=tuple(dict.fromkeys((*inputs, *own))), write=(*own, *sends),
                 create=touched, groups=True, transactional=transactional, note=note)


def _written_by(kind: str) -> tuple[str, ...]:
    """The command topics whose one writer is ``kind`` (:data:`contracts.topics.COMMAND_ROUTES`)."""
    return tuple(r.name for r in T.COMMAND_ROUTES if r.writer == kind)


GRANTS: tuple[Grant, ...] = (
    _service("shoe", (T.SHOE_EVENTS, T.SHOE_VAULT), (T.SHOE_COMMANDS, T.SHOE_DRAWS, T.DEALING_EVENTS,
                                                     T.WAGERING_EVENTS),
             note="the only principal that can read or write shoe.vault and shoe.snapshots (the live shoe, sealed)"),
    _service("dealing", (T.DEALING_EVENTS,), (T.DEALING_COMMANDS, T.DEALING_OPTIONS, T.SHOE_EVENTS,
                                              T.WAGERING_EVENTS),
             sends=_written_by("dealing"), note="the only writer of shoe.draws (its DrawCard commands)"),
    _service("wagering", (T.WAGERING_EVENTS,), (T.WAGERING_COMMANDS, T.WAGERING_BETS, T.DEALING_EVENTS)),
    _service("settlement", (T.SETTLEMENT_EVENTS,), (T.SETTLEMENT_COMMANDS, T.DEALING_EVENTS, T.WAGERING_EVENTS)),
    _service("cage", (T.CAGE_EVENTS,), (T.CAGE_COMMANDS, T.CAGE_MARKERS, T.WAGERING_EVENTS, T.SETTLEMENT_EVENTS,
                                        T.PROJECTION_LEDGER), sends=_written_by("cage"),
             note="the cage service (table inventory, fills, credits, drop, soft count), which also pays from "
                  "settlements and the ledger; the only writer of cage.markers (a marker buy-in's steps between "
                  "a table and the casino-wide credit at CAGE)"),
    _service("projection", (T.PROJECTION_ODDS, T.PROJECTION_LEDGER, T.PROJECTION_ALERTS), EVENTS,
             note="also the query API's replica groups (which restore from projection.snapshots)"),
    Grant("console", "role", read=EVENTS, write=_written_by("console"), groups=True,
          note="dealer console and its card reader (and the simulated floor's dealer): the one writer of "
               + ", ".join(_written_by("console"))),
    Grant("bettor", "role", read=(T.DEALING_EVENTS, T.WAGERING_EVENTS), write=_written_by("bettor"), groups=True,
          note="betting terminals: the one writer of " + ", ".join(_written_by("bettor"))
               + " (PlaceBet, WithdrawBet; DecideOption, a chemin de fer participant's option); sees rounds open, "
               "its bets taken and the options offered"),
    Grant("pit", "role", read=(*EVENTS, *T.PROJECTION_TOPICS), groups=True, note="watches play and ledgers"),
    Grant("surveillance", "role", read=(*EVENTS, *T.COMMAND_TOPICS, *T.PROJECTION_TOPICS, *T.DLQ_TOPICS),
          groups=True, note="the investigator: every record except the vault"),
    Grant("analytics", "role", read=EVENTS, groups=True, note="event topics only"),
)


def writers_of(topic: str) -> list[str]:
    """The principals granted Write on base topic ``topic`` (the super user aside)."""
    return [g.principal for g in GRANTS if topic in g.write]


def _check_one_writer_per_command_topic() -> None:
    """Each command topic is written by its route's writer kind alone (a service kind: that service)."""
    for r in T.COMMAND_ROUTES:
        want = [g.principal for g in GRANTS if g.principal == r.writer]
        if writers_of(r.name) != want or not want:
            raise SystemExit(f"acls.py: {r.name} must be written by {r.writer} alone, not {writers_of(r.name)}")


def principals() -> list[str]:
    """Every principal kafka.sh creates a SCRAM credential for, ``admin`` first."""
    return [ADMIN, *(g.principal for g in GRANTS)]


def calls(prefix: str, group_prefix: str) -> list[list[str]]:
    """AclCommand ``--add`` argument lists (without the connection options) that grant :data:`GRANTS`
    for ``prefix``: per principal at most three calls (AclCommand grants every listed operation on every
    listed resource, so each call holds the resources of one operation): Read on the topics it reads and
    its consumer groups, Write on the topics it writes and its transactional ids, Create on the topics it
    creates. Every pattern is PREFIXED (one pattern type per call): a topic pattern is the full name, and no
    base name in :mod:`contracts.topics` is the beginning of another, so it matches that topic alone among
    the project's topics."""
    out: list[list[str]] = []
    for g in GRANTS:
        head = ["--add", "--allow-principal", f"User:{g.principal}", "--resource-pattern-type", "PREFIXED"]
        named = f"{group_prefix}.{prefix}{g.principal}"
        read = [a for n in g.read for a in ("--topic", f"{prefix}{n}")]
        if g.groups:
            read += ["--group", named]
        write = [a for n in g.write for a in ("--topic", f"{prefix}{n}")]
        if g.transactional:
            write += ["--transactional-id", named]
        create = [a for n in g.create for a in ("--topic", f"{prefix}{n}")]
        for op, resources in (("Read", read), ("Write", write), ("Create", create)):
            if resources:
                out.append([*head, "--operation", op, *resources])
    return out


#: Kafka's codes for what :func:`calls` names (``ResourceType``, ``PatternType``, ``AclOperation``,
#: ``AclPermissionType`` of org.apache.kafka.common)
_RESOURCE = {"--topic": 2, "--group": 3, "--transactional-id": 5}
_PATTERN = {"LITERAL": 3, "PREFIXED": 4}
_OPERATION = {"Read": 3, "Write": 4, "Create": 5}
_ALLOW = 3


def bindings(prefix: str, group_prefix: str) -> list[tuple[int, str, int, str, str, int, int]]:
    """The ACL bindings :func:`calls` adds, one per resource, as Kafka's CreateAcls request carries them:
    (resource type, resource name, pattern type, principal, host ``*``, operation, ALLOW). Read from the calls
    themselves, so the two ways ``kafka.sh acl`` applies the policy (``AclCommand`` per call, or
    ``acl_apply.py`` in one request) grant the same."""
    out = []
    for call in calls(prefix, group_prefix):
        principal = call[call.index("--allow-principal") + 1]
        pattern = _PATTERN[call[call.index("--resource-pattern-type") + 1]]
        operation = _OPERATION[call[call.index("--operation") + 1]]
        out += [(_RESOURCE[flag], name, pattern, principal, "*", operation, _ALLOW)
                for flag, name in zip(call, call[1:]) if flag in _RESOURCE]
    return out


def _check_no_base_name_prefixes_another() -> None:
    names = sorted(T.ALL_TOPICS)
    clash = [(a, b) for a in names for b in names if a != b and b.startswith(a)]
    if clash:
        raise SystemExit(f"acls.py: PREFIXED topic ACLs need distinct beginnings, but {clash} clash")


def table() -> str:
    """The policy as a Markdown table (``<p>`` = topic prefix, ``<g>`` = group prefix)."""
    rows = ["| principal | kind | reads | writes | groups / transactional ids | note |",
            "|---|---|---|---|---|---|"]
    for g in GRANTS:
        ids = f"`<g>.<p>{g.principal}*`" if g.groups else "-"
        if g.transactional:
            ids += " (groups and transactional ids)"
        elif g.groups:
            ids += " (groups)"
        rows.append(f"| `{g.principal}` | {g.kind} | {', '.join(g.read) or '-'} | {', '.join(g.write) or '-'} "
                    f"| {ids} | {g.note} |")
    rows.append(f"| `{ADMIN}` | super user | everything | everything | everything | the broker itself and "
                "`kafka.sh acl` |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    _check_no_base_name_prefixes_another()
    _check_one_writer_per_command_topic()
    if argv[:1] == ["principals"]:
        print("\n".join(principals()))
    elif argv[:1] == ["calls"] and len(argv) == 3:
        for c in calls(argv[1], argv[2]):
            print(" ".join(c))
    elif argv[:1] == ["table"]:
        print(table())
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
