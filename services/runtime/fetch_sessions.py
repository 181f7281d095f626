"""Incremental fetch sessions (KIP-227) on aiokafka's consumer: each fetch names only the partitions that changed.

aiokafka 0.14 sends every Fetch as a full request (``session_id`` 0, ``session_epoch`` -1): each one lists every
assigned partition a broker leads, and each response carries every one of them, records or not. A service's
group consumer holds its command topic's and its input topics' partitions (47 on the pipeline bench), and a
fetch returns as soon as one of them has a record: per card, the instance encoded and decoded 47 partitions
twice over. ``bench/pipeline.py --cprofile`` (issue 25) put a third of the services' CPU in that path.

KIP-227 (Kafka 1.1, Fetch v7) lets the broker remember a fetch's partitions in a *fetch session*
(``FetchRequest.json`` / ``FetchResponse.json`` in ``kafka-clients``; the broker's ``FetchSession.scala``):

* A **full** request (``session_epoch`` 0) lists every partition; the broker answers with a ``session_id``
  (0: it keeps no session, so the next request is full again). A non-zero ``session_id`` with epoch 0 also
  closes that older session.
* An **incremental** request (that ``session_id``, epoch 1, 2, ...; after 2**31-1 comes 1) lists only the
  partitions that are new to the session or whose fetch offset changed, and in ``forgotten_topics_data`` those
  to drop; the broker keeps the others at their last fetch offset. Its response carries only partitions with
  records, a changed high watermark or log start offset, or an error (``CachedPartition.maybeUpdateResponseData``;
  a new partition's cached high watermark is -1, so its first response carries it). A partition's last stable
  offset is therefore as of the last response that carried it: it moves only when a transaction marker is
  appended and the high watermark passes it, which brings the partition back (the runtime reads it only for
  its lag gauge; a command's catch-up asks the broker with ListOffsets).
* A top-level error ends the session: ``FETCH_SESSION_ID_NOT_FOUND`` (70; evicted or never made) and
  ``INVALID_FETCH_SESSION_EPOCH`` (71; a request lost or repeated). So does anything that leaves the client
  unsure what the broker holds: a failed send, a cancelled fetch. The next request is then full.

What aiokafka keeps: everything but the request and the response's reading. Its fetch routine still decides per
node and partition what to fetch (position, pause, buffered records, in-flight nodes, resets); a partition it
leaves out of a node's fetch (records still buffered, paused, no position, led elsewhere now) is forgotten by
that node's session, as the Java consumer does, so the broker never answers for a partition the consumer has
not asked at its current position. A node the routine skips (a request in flight, backing off) keeps its
session untouched.

Use: :class:`SessionConsumer` in place of ``AIOKafkaConsumer``, or :func:`enable_fetch_sessions` on a started
consumer (a service's subscriber does so at its first poll: :func:`services.runtime.app.poll_without_sleep`;
FastStream builds its consumers itself, from a builder it sets again at each connect). A broker
without Fetch v7 gets a clear :class:`~aiokafka.errors.IncompatibleBrokerVersion` from the request (the
KIP-447 check at a service's start already requires Kafka 2.5); the fetcher then logs it as a warning and fetches
in full from then on, as aiokafka does. The consumer's ``client_rack`` (KIP-392) is honoured as aiokafka
honours it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiokafka.errors as Errors
from aiokafka import AIOKafkaConsumer
from aiokafka.consumer.fetcher import Fetcher, FetchResult, OffsetResetStrategy, PartitionRecords
from aiokafka.errors import IncompatibleBrokerVersion, RecordTooLargeError
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

log = logging.getLogger(__name__)

#: ``session_epoch`` of a full request that opens a session (``FetchMetadata.INITIAL_EPOCH``)
INITIAL_EPOCH = 0
#: ``session_id`` meaning "no session" (``FetchMetadata.INVALID_SESSION_ID``)
NO_SESSION = 0
#: the largest epoch; the one after it is 1 (``FetchMetadata.nextEpoch``)
MAX_EPOCH = 2**31 - 1
#: the first Fetch version with sessions (KIP-227)
MIN_SESSION_VERSION = 7
#: top-level errors that end a session (Kafka's error codes)
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: 1 after :data:`MAX_EPOCH`, else ``epoch + 1`` (Kafka's ``nextEpoch``)."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class SessionFetch:
    """What one fetch to a node sends: the session's id and epoch, the partitions to add or update
    (``{tp: fetch offset}``), those to forget, and every partition the session holds once the broker has the
    request (``offsets``: the fetch offset each response partition answers). ``full``: epoch 0."""

    session_id: int
    epoch: int
    send: dict[TopicPartition, int]
    forget: list[TopicPartition]
    offsets: dict[TopicPartition, int]

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


@dataclass(slots=True)
class FetchSession:
    """The client's half of one node's fetch session (KIP-227), Kafka's ``FetchSessionHandler`` in small.

    ``session_id`` (0: none yet) and ``epoch`` (0: the next request is full) are the next request's;
    ``partitions`` is what the broker holds, ``{tp: fetch offset}``, as of the last request it accepted.
    :meth:`next` builds a request from the partitions wanted now and takes them as the session's; the
    response's outcome then goes to :meth:`answered` or :meth:`failed`. Counts what it sent
    (``full_requests``, ``incremental_requests``, ``partitions_sent``, ``resets``) for benches and tests."""

    session_id: int = NO_SESSION
    epoch: int = INITIAL_EPOCH
    partitions: dict[TopicPartition, int] = field(default_factory=dict)
    full_requests: int = 0
    incremental_requests: int = 0
    partitions_sent: int = 0
    resets: int = 0

    def next(self, wanted: dict[TopicPartition, int]) -> SessionFetch:
        """The request for ``wanted`` (``{tp: fetch offset}``, every partition this fetch is for; kept, not
        copied: the caller hands it over). Full when the session is new or was reset (every wanted partition
        sent); else the wanted partitions the session does not hold at that offset are sent and the held ones
        not wanted are forgotten."""
        if self.session_id == NO_SESSION or self.epoch == INITIAL_EPOCH:
            send, forget = dict(wanted), []
            self.full_requests += 1
        else:
            held = self.partitions
            send = {tp: offset for tp, offset in wanted.items() if held.get(tp) != offset}
            forget = [tp for tp in held if tp not in wanted]
            self.incremental_requests += 1
        self.partitions_sent += len(send)
        self.partitions = wanted
        return SessionFetch(self.session_id, self.epoch, send, forget, self.partitions)

    def answered(self, sent: SessionFetch, error_code: int, session_id: int) -> bool:
        """Take a response to ``sent`` (its top-level ``error_code`` and ``session_id``); ``True`` when its
        partitions may be read. A top-level error ends the session (70: the broker has none: the next request
        opens one; any other: the next closes this one and opens another). A full request answered with
        ``session_id`` 0 leaves none (the next is full again); otherwise the next epoch follows."""
        if error_code:
            self.resets += 1
            if error_code == FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = NO_SESSION
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == NO_SESSION:
            self.session_id, self.epoch = NO_SESSION, INITIAL_EPOCH
        elif sent.full:
            self.session_id, self.epoch = session_id, 1
        else:
            self.epoch = next_epoch(sent.epoch)
        return True

    def failed(self) -> None:
        """A request whose answer was not read (send failed, fetch cancelled): the broker's epoch is unknown,
        so the next request closes this session and opens another (full)."""
        self.resets += 1
        self.epoch = INITIAL_EPOCH


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    topics: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in partitions:
        topics[tp.topic].append(tp)
    return topics


class SessionFetchRequest(FetchRequest):
    """A Fetch request in a session: aiokafka's :class:`~aiokafka.protocol.fetch.FetchRequest` with the
    session's id and epoch, only the partitions :class:`SessionFetch` sends and its forgotten ones.

    ``topics`` (what aiokafka reads back from a request) lists every partition the session holds, so a
    response partition is matched to the offset it answers. Building it for a broker without Fetch v7 raises
    :class:`~aiokafka.errors.IncompatibleBrokerVersion`."""

    def __init__(self, fetch: SessionFetch, *, max_wait_ms: int, min_bytes: int, max_bytes: int,
                 isolation_level: int, partition_max_bytes: int, rack_id: str = "") -> None:
        self.fetch = fetch
        self._partition_max_bytes = partition_max_bytes
        super().__init__(max_wait_ms, min_bytes, max_bytes, isolation_level, [], rack_id=rack_id)

    @property
    def topics(self) -> list[tuple[str, list[tuple[int, int, int]]]]:
        return [(topic, [(tp.partition, self.fetch.offsets[tp], self._partition_max_bytes) for tp in tps])
                for topic, tps in _by_topic(self.fetch.offsets).items()]

    def build(self, request_struct_class: Any) -> Any:
        version = request_struct_class.API_VERSION
        if version < MIN_SESSION_VERSION:
            raise IncompatibleBrokerVersion(
                f"fetch sessions need Fetch v{MIN_SESSION_VERSION} (Kafka 1.1, KIP-227); the broker offers v{version}")
        epoch_aware = version >= 9  # current_leader_epoch (KIP-320): -1, unknown, as aiokafka sends it
        topics = []
        for topic, tps in _by_topic(self.fetch.send).items():
            if epoch_aware:
                parts = [(tp.partition, -1, self.fetch.send[tp], -1, self._partition_max_bytes) for tp in tps]
            else:
                parts = [(tp.partition, self.fetch.send[tp], -1, self._partition_max_bytes) for tp in tps]
            topics.append((topic, parts))
        forgotten = [(topic, [tp.partition for tp in tps]) for topic, tps in _by_topic(self.fetch.forget).items()]
        args: list[Any] = [-1, self._max_wait_ms, self._min_bytes, self._max_bytes, self._isolation_level,
                           self.fetch.session_id, self.fetch.epoch, topics, forgotten]
        if version >= 11:
            args.append(self._rack_id)
        return request_struct_class(*args)


class SessionFetcher(Fetcher):
    """aiokafka's :class:`~aiokafka.consumer.fetcher.Fetcher` with one :class:`FetchSession` per node.

    Its routine decides what to fetch as aiokafka's does; each node's request then goes out as a
    :class:`SessionFetchRequest`, and a response is read for the partitions it carries (an incremental one
    omits those with nothing new). A response's partition is read as aiokafka reads it: records buffered only
    for a partition still at the offset fetched; ``NOT_LEADER_OR_FOLLOWER`` and ``UNKNOWN_TOPIC_OR_PARTITION``
    refresh the metadata; ``OFFSET_OUT_OF_RANGE`` resets by the consumer's ``auto_offset_reset`` or raises;
    ``TOPIC_AUTHORIZATION_FAILED`` raises to the consumer's caller."""

    #: node id -> its session; set by :func:`enable_fetch_sessions` (aiokafka builds the fetcher, this class
    #: adopts it)
    sessions: dict[int, FetchSession]

    def session(self, node_id: int) -> FetchSession:
        """The fetch session with ``node_id`` (made on first use)."""
        found = self.sessions.get(node_id)
        if found is None:
            found = self.sessions[node_id] = FetchSession()
        return found

    def _get_actions_per_node(self, assignment: Any) -> Any:
        """What the fetch routine does next, as aiokafka's method decides it, per node: a
        :class:`SessionFetchRequest` for the partitions at a valid position, not paused and with no records
        buffered; offset resets for those without a position (the node fetches after them); nothing for a node
        with a fetch or reset in flight (its end wakes the routine) or with records still within their
        prefetch backoff (the routine wakes when the shortest of those ends). With a ``client_rack`` (KIP-392)
        aiokafka's method picks each partition's replica and its requests are made session requests.

        aiokafka's looks up every assigned partition's leader and logs a debug line for it on each turn of the
        routine (``bench/pipeline.py --cprofile``: 2.0 s of 18.1, more than the fetches' own encoding); this
        one groups the partitions by leader once per assignment and metadata update."""
        if self._client_rack:
            fetches, resets, backoff, invalid_metadata, resume = super()._get_actions_per_node(assignment)
            return ([(node_id, self._request(node_id, {TopicPartition(topic, p): offset
                                                        for topic, parts in request.topics for p, offset, _ in parts}))
                     for node_id, request in fetches], resets, backoff, invalid_metadata, resume)
        fetches: list[tuple[int, SessionFetchRequest]] = []
        resets: dict[int, list[TopicPartition]] = {}
        backoffs: list[float] = []
        resume: list[Any] = []
        invalid_metadata = False
        records, in_flight = self._records, self._in_flight
        for node_id, held in self._by_leader(assignment).items():
            if node_id is None or node_id == -1:
                invalid_metadata = True  # no leader known: the routine refreshes the metadata
                continue
            if node_id in in_flight:
                continue
            wanted: dict[TopicPartition, int] = {}
            node_backoff = 0.0
            for tp, tp_state in held:
                if records:
                    buffered = records.get(tp)
                    if buffered is not None:
                        node_backoff = max(node_backoff, buffered.calculate_backoff())
                        continue
                # aiokafka's TopicPartitionState fields behind its properties (has_valid_position, paused,
                # position, resume_fut): read directly, this loop runs per partition on every turn
                position = tp_state._position
                if position is None:
                    resets.setdefault(node_id, []).append(tp)
                elif tp_state._paused:
                    resume.append(tp_state._resume_fut)
                else:
                    wanted[tp] = position
            if node_backoff:
                backoffs.append(node_backoff)
            elif wanted and node_id not in resets:
                fetches.append((node_id, self._request(node_id, wanted)))
        return fetches, resets, min(backoffs) if backoffs else self._fetcher_timeout, invalid_metadata, resume

    def _by_leader(self, assignment: Any) -> dict[int | None, list[tuple[TopicPartition, Any]]]:
        """The assignment's partitions and their states grouped by leader (``None`` or -1: none known), kept
        until the assignment or the cluster metadata (a new ``_partitions`` map at each update) changes."""
        cluster = self._client.cluster
        cached = getattr(self, "_leaders", None)
        if cached is not None and cached[0] is assignment and cached[1] is cluster._partitions:
            return cached[2]
        by_leader: dict[int | None, list[tuple[TopicPartition, Any]]] = defaultdict(list)
        for tp in assignment.tps:
            by_leader[cluster.leader_for_partition(tp)].append((tp, assignment.state_value(tp)))
        self._leaders = (assignment, cluster._partitions, dict(by_leader))
        return self._leaders[2]

    def _request(self, node_id: int, wanted: dict[TopicPartition, int]) -> SessionFetchRequest:
        return SessionFetchRequest(
            self.session(node_id).next(wanted), max_wait_ms=self._fetch_max_wait_ms, min_bytes=self._fetch_min_bytes,
            max_bytes=self._fetch_max_bytes, isolation_level=self._isolation_level,
            partition_max_bytes=self._max_partition_fetch_bytes, rack_id=self._client_rack or "")

    async def _proc_fetch_request(self, assignment: Any, node_id: int, request: Any) -> bool:
        if not isinstance(request, SessionFetchRequest):  # sent before this fetcher was adopted
            return await super()._proc_fetch_request(assignment, node_id, request)
        session = self.session(node_id)
        try:
            response = await self._client.send(node_id, request)
        except IncompatibleBrokerVersion as err:  # raised building the request: nothing was sent
            self.without_sessions(err)
            return False
        except Errors.KafkaError as err:
            session.failed()
            log.error("Failed fetch messages from %s: %s", node_id, err)
            self._invalidate_preferred_read_replica_for_node(node_id, request)
            await asyncio.sleep(self._retry_backoff)
            return False
        except asyncio.CancelledError:  # close() or a new assignment: the broker may have taken the epoch
            session.failed()
            return False
        if not session.answered(request.fetch, response.error_code, response.session_id):
            log.info("fetch session with node %s ended (error %s): the next fetch is full", node_id,
                     Errors.for_code(response.error_code).__name__)
            return False
        if not assignment.active:
            return False
        return self._read_response(assignment, request.fetch.offsets, response)

    def without_sessions(self, reason: BaseException) -> None:
        """Fetch as aiokafka does from now on (this fetcher's class becomes aiokafka's ``Fetcher`` again),
        logging ``reason`` once as a warning: a broker without Fetch v7. A full fetch reads the same records;
        looping on the error would leave the consumer reading nothing, with no error reaching its caller."""
        log.warning("fetch sessions off for this consumer: %s; it fetches in full", reason)
        self.__class__ = Fetcher
        self.sessions_refused = True  # enable_fetch_sessions (called at every poll) leaves it so

    def _read_response(self, assignment: Any, offsets: dict[TopicPartition, int], response: Any) -> bool:
        """Buffer a response's records and note its errors, per partition; ``True`` when a caller should
        wake (records or an error to hand over). Fetch v7-v11 partition layout: partition, error code, high
        watermark, last stable offset, log start offset, aborted transactions, [preferred read replica,]
        records."""
        woke = False
        now_ms = int(1000 * time.time())
        rack_aware = bool(self._client_rack) and response.API_VERSION >= 11
        for topic, partitions in response.topics:
            for partition, error_code, highwater, lso, _log_start, aborted, *rest in partitions:
                tp = TopicPartition(topic, partition)
                fetch_offset = offsets.get(tp)
                tp_state = assignment.state_value(tp) if fetch_offset is not None else None
                if tp_state is None or not tp_state.has_valid_position or tp_state.position != fetch_offset:
                    continue  # moved (seek, reset) or unassigned since: the next fetch asks again
                if error_code:
                    woke |= self._partition_error(tp, tp_state, Errors.for_code(error_code), fetch_offset)
                    continue
                if rack_aware:
                    self._update_preferred_read_replica(tp, rest[0])
                tp_state.highwater, tp_state.lso, tp_state.timestamp = highwater, lso, now_ms
                records = MemoryRecords(rest[-1])
                if records.has_next():
                    self._records[tp] = FetchResult(
                        tp, assignment=assignment, backoff=self._prefetch_backoff,
                        partition_records=PartitionRecords(
                            tp, records, aborted, fetch_offset, self._key_deserializer, self._value_deserializer,
                            self._check_crcs, self._isolation_level))
                    woke = True
                elif records.size_in_bytes() > 0:  # one record larger than the partition's fetch size
                    self._set_error(tp, RecordTooLargeError(
                        f"a record at {tp}={fetch_offset} is larger than the fetch size "
                        f"{self._max_partition_fetch_bytes} and can never be returned"))
                    tp_state.consumed_to(tp_state.position + 1)
                    woke = True
        return woke

    def _partition_error(self, tp: TopicPartition, tp_state: Any, error: type, fetch_offset: int) -> bool:
        self._preferred_read_replica.pop(tp, None)
        if error in (Errors.NotLeaderForPartitionError, Errors.UnknownTopicOrPartitionError):
            self._client.force_metadata_update()
        elif error is Errors.OffsetOutOfRangeError:
            log.info("fetch offset %s is out of range for partition %s", fetch_offset, tp)
            if self._default_reset_strategy != OffsetResetStrategy.NONE:
                tp_state.await_reset(self._default_reset_strategy)
                return False
            self._set_error(tp, Errors.OffsetOutOfRangeError({tp: fetch_offset}))
            return True
        elif error is Errors.TopicAuthorizationFailedError:
            log.warning("not authorized to read from topic %s", tp.topic)
            self._set_error(tp, Errors.TopicAuthorizationFailedError(tp.topic))
            return True
        else:
            log.warning("unexpected error while fetching %s: %s", tp, error.__name__)
        return False


def enable_fetch_sessions(consumer: AIOKafkaConsumer) -> Fetcher:
    """Make a started ``consumer``'s fetcher fetch in sessions (its class becomes :class:`SessionFetcher`; a
    fetch already in flight finishes as aiokafka's). Returns the fetcher, left as it is when it already fetches
    in sessions or its broker turned them off (:meth:`SessionFetcher.without_sessions`); raises ``TypeError``
    for a consumer not started or whose fetcher is not aiokafka's own (another aiokafka)."""
    fetcher = getattr(consumer, "_fetcher", None)
    if isinstance(fetcher, SessionFetcher) or getattr(fetcher, "sessions_refused", False):
        return fetcher
    if type(fetcher) is not Fetcher:
        raise TypeError(f"cannot fetch in sessions with {type(fetcher).__name__}: start the consumer first")
    fetcher.__class__ = SessionFetcher
    fetcher.sessions = {}
    return fetcher


class SessionConsumer(AIOKafkaConsumer):
    """An ``AIOKafkaConsumer`` whose fetches run in incremental fetch sessions from its start on."""

    async def start(self) -> None:
        await super().start()
        enable_fetch_sessions(self)

