"""Housekeeping of a topic prefix: the topics and consumer groups a floor, a test or a bench made under it,
listed and deleted with aiokafka's admin client (``croupier topics list|delete``, the benches' cleanup).

A prefix is the text every topic of one floor starts with (``demo-20261130-110143-72a3.``); its consumer groups
are named ``<group prefix>.<topic prefix><service>`` (:meth:`Settings.group`) or, for the benches' raw loop,
``<topic prefix>…``. The broker's internal topics (``__consumer_offsets``, ``__transaction_state``) are never
listed nor deleted, and an empty prefix is refused (:class:`BadPrefix`): it would name every topic.

Every function raises :class:`croupier.replay.Unreachable` when the broker cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from contracts import topics as T
from croupier.replay import Unreachable, unreachable
from services.runtime.kafka import replication_from_env  # the services create their topics with it too
from services.runtime.settings import Settings

#: topics whose names start with this are the broker's own
INTERNAL = "__"


class BadPrefix(ValueError):
    """A prefix that would name too much (empty, or the broker's internal topics)."""


class NoSuchPrefix(LookupError):
    """No Croupier topics under the given prefix (no service has run on it)."""


class PrefixInUse(RuntimeError):
    """Consumer groups under the prefix have members: services still run on it."""


def check_prefix(prefix: str) -> str:
    """``prefix`` if it may name a floor's topics; raises :class:`BadPrefix` for an empty (or all-blank) one or
    one of the broker's internal topics (``__…``)."""
    if not prefix.strip():
        raise BadPrefix("the prefix is empty: it would name every topic on the broker; give the floor's "
                        "--prefix (`croupier topics list --prefix P` shows what it names)")
    if prefix.startswith(INTERNAL):
        raise BadPrefix(f"prefix {prefix!r} names the broker's internal topics ({INTERNAL}…)")
    named = sorted(b for b in _base_names() if b.startswith(prefix))
    if named:
        raise BadPrefix(f"prefix {prefix!r} names the topics of a floor that runs without a prefix "
                        f"({', '.join(named[:3])}{', …' if len(named) > 3 else ''}): a floor's prefix comes before "
                        f"those names (e.g. floor1.)")
    return prefix


def _base_names() -> set[str]:
    """Every topic name a floor without a prefix has: the contracts' topics and each service's snapshots."""
    from contracts import topics as T

    names = set(T.ALL_TOPICS)
    return names | {f"{n.split('.')[0]}.snapshots" for n in names}


@contextlib.contextmanager
def _quiet_aiokafka() -> Iterator[None]:
    """aiokafka logs every failed connection itself: the caller's one line says it."""
    log = logging.getLogger("aiokafka")
    was = log.disabled
    log.disabled = True
    try:
        yield
    finally:
        log.disabled = was


@contextlib.asynccontextmanager
async def admin_client(settings: Settings, request_timeout_ms: int = 15_000) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of ``settings``' broker, closed on exit; raises :class:`Unreachable` (one line:
    the bootstrap address and why) when the broker cannot be reached or stops answering."""
    admin = AIOKafkaAdminClient(**settings.client_options(), request_timeout_ms=request_timeout_ms)
    try:
        with _quiet_aiokafka():
            try:
                await admin.start()
            except (KafkaError, OSError) as e:
                raise await unreachable(settings, str(e)) from None
        try:
            yield admin
        except (KafkaError, OSError, TimeoutError) as e:
            detail = "timed out" if isinstance(e, TimeoutError) else (str(e) or type(e).__name__)
            raise Unreachable(f"Kafka at {settings.bootstrap_servers} stopped answering ({detail})") from None
    finally:
        with _quiet_aiokafka():
            await admin.close()


def _mine(names: list[str], prefix: str) -> list[str]:
    return sorted(n for n in names if n.startswith(prefix) and not n.startswith(INTERNAL))




async def create_floor_topics(settings: Settings, replication: int | None = None) -> int:
    """Create every topic of a floor under ``settings.topic_prefix`` (the contracts' topics and each
    service's ``<service>.snapshots``) that does not exist yet, with ``settings.partitions`` partitions, the
    configuration the services give them (:func:`services.runtime.kafka.topic_config`) and ``replication``
    copies (default :func:`replication_from_env` of the cluster's broker count), then wait until every
    partition has a leader (:func:`services.runtime.kafka.ensure_topics`). Returns the replication factor used.

    The services create missing topics with one copy; a floor on a cluster creates them first with this.
    Raises :class:`croupier.replay.Unreachable` when the broker cannot be reached, ``ValueError`` for a bad
    ``CROUPIER_REPLICATION_FACTOR``, :class:`services.runtime.kafka.PartitionMismatch` as ``ensure_topics``."""
    from aiokafka.admin import NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    from services.runtime.kafka import ensure_topics, metadata_of, topic_config

    names = sorted(_base_names())
    async with admin_client(settings) as admin:
        md = await metadata_of(admin._client, [settings.topic(n) for n in names])  # the floor's topics alone
        if replication is None:
            replication = replication_from_env(len(md.brokers()))
        new = [NewTopic(settings.topic(n), settings.partitions, replication, topic_configs=topic_config(n))
               for n in names if md.partitions_for_topic(settings.topic(n)) is None]
        if new:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(new)
    await ensure_topics(settings, names)
    return replication


async def list_topics(settings: Settings, prefix: str) -> list[str]:
    """The names of the topics under ``prefix`` (sorted; :func:`check_prefix` first)."""
    check_prefix(prefix)
    async with admin_client(settings) as admin:
        return _mine(await admin.list_topics(), prefix)


def group_prefixes(settings: Settings, prefix: str) -> tuple[str, str]:
    """What the consumer groups of a floor under ``prefix`` start with: ``<group prefix>.<prefix>`` (the
    services, :meth:`Settings.group`) and ``<prefix>`` itself (the benches' raw loop)."""
    return f"{settings.group_prefix}.{prefix}", prefix


async def _groups(admin: AIOKafkaAdminClient, settings: Settings, prefix: str) -> list[str]:
    starts = group_prefixes(settings, prefix)
    return sorted(g[0] for g in await admin.list_consumer_groups() if g[0].startswith(starts))


async def list_groups(settings: Settings, prefix: str) -> list[str]:
    """The consumer groups under ``prefix`` (:func:`group_prefixes`), sorted."""
    check_prefix(prefix)
    async with admin_client(settings) as admin:
        return await _groups(admin, settings, prefix)


async def _active(admin: AIOKafkaAdminClient, groups: list[str]) -> list[str]:
    """Which of ``groups`` have members now, or may have: a group the broker cannot describe (coordinator
    loading or away, not authorised) counts as in use, so nothing is deleted on a guess."""
    if not groups:
        return []
    active = []
    # one group a request: aiokafka misreads the broker's answer for three or more groups at once ("Buffer
    # underrun decoding string", then the connection drops), and a served prefix has a group per service
    for name in groups:
        for response in await admin.describe_consumer_groups([name]):
            for g in response.groups:  # (error_code, group, state, protocol_type, protocol, members, ...)
                if g[0] != 0 or g[5]:
                    active.append(g[1])
    return sorted(active)


#: DeleteGroups error codes asked again (:func:`delete_prefix`): COORDINATOR_LOAD_IN_PROGRESS,
#: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR (Kafka protocol error codes 14, 15, 16)
_GROUP_RETRIABLE = (14, 15, 16)
#: NON_EMPTY_GROUP (68): a member has not left yet
_NON_EMPTY_GROUP = 68
#: how long :func:`delete_prefix` asks again for the groups (s, all groups together)
_GROUP_RETRY_S = 10.0


@dataclass
class Deleted:
    """What :func:`delete_prefix` removed: topic names, consumer group ids, and notes on what it could not."""

    topics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


async def delete_prefix(settings: Settings, prefix: str, *, refuse_if_running: bool = True,
                        wait_s: float = 30.0) -> Deleted:
    """Delete every topic under ``prefix`` and its consumer groups; wait up to ``wait_s`` seconds until the
    broker no longer lists the topics.

    Raises :class:`BadPrefix` (:func:`check_prefix`), :class:`PrefixInUse` when ``refuse_if_running`` and a
    group under the prefix has members (services still run on it: their topics would vanish under them;
    nothing is deleted), :class:`Unreachable`, and ``KafkaError`` subclasses when the broker refuses to delete
    a topic (e.g. no permission). A group that cannot be deleted is a note, not an error: an empty group only
    holds committed offsets, and expires on its own.
    """
    from aiokafka.errors import for_code
    from aiokafka.protocol.admin import DeleteGroupsRequest

    check_prefix(prefix)
    out = Deleted()
    async with admin_client(settings) as admin:
        topics = _mine(await admin.list_topics(), prefix)
        groups = await _groups(admin, settings, prefix)
        if refuse_if_running:
            active = await _active(admin, groups)
            if active:
                raise PrefixInUse(f"services still run on prefix {prefix!r} (consumer groups with members: "
                                  f"{', '.join(active)}): stop them first; nothing deleted")
        if topics:
            response = await admin.delete_topics(topics)
            for name, code, *_ in response.topic_error_codes:
                if code:
                    raise for_code(code)(f"deleting topic {name!r}")
            out.topics = topics
        loop = asyncio.get_running_loop()
        # a group whose last member has just left, or whose coordinator is loading or moving, is asked again
        # for a few seconds (a loaded CI broker deleted none of four groups right after their members left);
        # NON_EMPTY_GROUP only when the groups were seen without members just before
        again = set(_GROUP_RETRIABLE) | ({_NON_EMPTY_GROUP} if refuse_if_running else set())
        group_deadline = loop.time() + _GROUP_RETRY_S
        for g in groups:  # one request per group: groups may live on different coordinators
            while True:
                try:
                    node = await admin.find_coordinator(g)
                    results = (await admin._send_request_to_node(node, DeleteGroupsRequest([g]))).results
                    code = results[0][1] if results else 0
                    error = for_code(code).__name__ if code else ""
                except KafkaError as e:
                    code, error = -1, type(e).__name__
                if (code in again or code == -1) and loop.time() < group_deadline:
                    await asyncio.sleep(0.25)
                    continue
                if code:
                    out.notes.append(f"group {g}: {error}")
                else:
                    out.groups.append(g)
                break
        deadline = loop.time() + wait_s
        left = set(topics)
        while left:
            left &= set(await admin.list_topics())
            if not left or loop.time() >= deadline:
                break
            await asyncio.sleep(0.2)
        if left:
            out.notes.append(f"{len(left)} topic(s) still listed after {wait_s:g} s (deletion is asynchronous on "
                             "the broker)")
    return out


async def prefixes_in_use(settings: Settings) -> list[str]:
    """The topic prefixes that have a Croupier floor's topics (a ``dealing.events`` topic), sorted."""
    async with admin_client(settings) as admin:
        names = await admin.list_topics()
    return sorted({n[: -len(T.DEALING_EVENTS)] for n in names if n.endswith(T.DEALING_EVENTS)})


async def require_prefix(settings: Settings, hint: str = "") -> None:
    """Raise :class:`NoSuchPrefix` unless ``settings.topic_prefix`` has a floor's topics (its ``dealing.events``):
    no service has run on a prefix without them. The message names the prefix, then ``hint`` (what to do),
    then some of the prefixes in use."""
    in_use = await prefixes_in_use(settings)
    if settings.topic_prefix in in_use:
        return
    raise NoSuchPrefix(f"no Croupier topics under prefix {settings.topic_prefix!r} at {settings.bootstrap_servers}"
                       + hint
                       + (f"; prefixes in use: {', '.join(p or '(none)' for p in in_use[-5:])}" if in_use else ""))


async def cleanup(settings: Settings, prefix: str, *, keep: bool = False,
                  out: Callable[[str], None] = print) -> Deleted | None:
    """A benchmark's last step: delete the topics and consumer groups of its run's ``prefix``
    (:func:`delete_prefix`, not refused for groups whose killed members have not timed out yet) and print one
    line saying what went; with ``keep`` delete nothing and say how to later. Never raises (the figures were
    already printed): a failure is a ``warning:`` line and None."""
    if keep:
        out(f"kept topics {prefix}* (delete them with `croupier topics delete --prefix {prefix}`)")
        return None
    try:
        d = await delete_prefix(settings, prefix, refuse_if_running=False)
    except Exception as e:  # noqa: BLE001 - the bench's figures stand; say what is left behind
        out(f"warning: cleanup failed ({type(e).__name__}: {e}); delete them with "
            f"`croupier topics delete --prefix {prefix}`")
        return None
    out(f"deleted {len(d.topics)} topics {prefix}* and {len(d.groups)} consumer groups"
        + "".join(f"; {n}" for n in d.notes))
    return d
