"""Build a FastStream app for a service core: one broker, one batch subscriber, one task per partition.

FastStream runs the app (``faststream run services.<name>.app:app``, start-up and shutdown hooks, its
broker and subscriber); the subscriber consumes the service's command topic and its input topics in one
consumer group with the co-partitioning :class:`~services.runtime.assignor.TableTaskAssignor`, never
auto-commits, and hands each batch to :class:`~services.runtime.task_manager.TaskManager`, which writes what each
partition's records caused in that partition's own transaction, with the input offsets. FastStream has no
transactions of its own (upstream issue #2512), so that part is aiokafka's transactional producer.

Under ``TestKafkaBroker`` (handler tests: no offsets, no rebalances) pass a ``publisher``: the handler then
publishes through it directly, record by record, with the same :class:`ServiceHost` logic.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import structlog
from aiokafka.errors import KafkaError
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker

from contracts import topics as T
from services.runtime.assignor import TableTaskAssignor
from services.runtime.core import ServiceCore
from services.runtime.fetch_sessions import enable_fetch_sessions
from services.runtime.host import Publisher, ServiceHost
from services.runtime.kafka import ensure_topics
from services.runtime.logging import bind_process, bind_service, configure
from services.runtime.producers import quiet_fenced_futures
from services.runtime.settings import FETCH_MAX_WAIT_MS, Settings
from services.runtime.snapshot import snapshot_topic
from services.runtime.task_manager import TaskManager
from services.runtime.tls import BrokerTlsError

#: the longest one batch may be (records), and how long the consumer waits to fill one (ms)
MAX_RECORDS = 500
BATCH_TIMEOUT_MS = 5
#: how long one poll of the consumer waits for records (ms) when there are none; records that arrive wake it
#: at once (:func:`poll_without_sleep`), so this bounds only how often an idle loop turns
POLL_MS = 100
#: how long a member may be silent before the group hands its tasks on: the broker's minimum
#: (``group.min.session.timeout.ms``), so a killed or paused instance's tables stall at most this long plus the
#: rebalance and restore (issue 25: at most 2 s more). A stopped instance leaves at once (LeaveGroup, no static
#: membership: :meth:`Service.stop`) and does not wait for it. A false expiry needs the member's event loop
#: blocked for the session less one heartbeat interval (5.75 s): the folds yield every 500 records. The default
#: of ``Settings.session_timeout_ms`` (``CROUPIER_SESSION_TIMEOUT_MS``).
SESSION_TIMEOUT_MS = 6_000
#: how often a member heartbeats (ms): how soon it learns that a rebalance began (another member left or
#: expired) and rejoins; 1 s made every hand-over wait 0.5 s on average and up to 1 s for it. Four small
#: requests a second per member to its group coordinator.
HEARTBEAT_INTERVAL_MS = 250
#: the longest wait between two tries of a broker that cannot be reached (s): the tables of an instance
#: that is waiting stall up to this long after the broker is back
RETRY_MAX_S = 3.0


class TasksOnly:
    """The host's publisher when tasks publish: nothing may be published around a task's transaction."""

    async def publish(self, decision: Any) -> None:
        raise RuntimeError("publishing outside a task's transaction")

    async def dead_letter(self, letter: Any) -> None:
        raise RuntimeError("dead-lettering outside a task's transaction")


def topics_of(core: ServiceCore[Any]) -> list[str]:
    """Base names of every topic a service touches (its snapshot topic included)."""
    return [core.own_stream, *core.private_streams, *core.input_streams, T.dlq(core.name),
            snapshot_topic(core.name), *core.command_streams]


class Service:
    """One service wired for Kafka: its FastStream ``app`` and ``broker``, its ``host`` and ``tasks``;
    :meth:`start` and :meth:`stop` run it inside another program (tests, ``croupier serve``, the demo)."""

    def __init__(self, app: FastStream, broker: KafkaBroker, host: ServiceHost, topics: list[str],
                 tasks: TaskManager | None = None, log_name: str | None = None):
        self.app, self.broker, self.host, self.topics, self.tasks = app, broker, host, topics, tasks
        #: the context the service runs in: its ``service`` and ``instance`` bound for every line it (and the
        #: clients under it) logs, apart from other services of the same process
        self.context: contextvars.Context = bind_service(log_name or host.core.name, host.settings.instance)

    @property
    def ready(self) -> bool:
        """True when every assigned task is restored (a member with no task is not ready)."""
        return self.tasks.ready if self.tasks is not None else True

    async def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until :attr:`ready` (raises ``TimeoutError`` after ``timeout`` seconds)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.ready:
            if loop.time() > deadline:
                raise TimeoutError(f"{self.host.core.name} not ready after {timeout} s")
            await asyncio.sleep(0.05)

    async def start(self, retry_s: float = 0.0) -> None:
        """Create the topics if needed and start consuming (restores run in the background: see
        :attr:`ready`). ``retry_s``: how long to keep retrying a broker that cannot be reached, with
        exponential backoff from 0.5 s to :data:`RETRY_MAX_S` (``float("inf")``: until it answers); 0 raises
        at once. A broker whose TLS does not match the settings (another CA, an expired certificate or another
        host name, a listener that does not speak TLS, or one that does to a plain-text client) is never
        retried: :class:`~services.runtime.tls.BrokerTlsError` naming the cause, at once.
        Runs in :attr:`context`, so everything the service starts logs under its name."""
        await asyncio.get_running_loop().create_task(self._start(retry_s), context=self.context)

    async def _start(self, retry_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + retry_s
        delay = 0.5
        if self.tasks is not None:
            self.tasks.observe()
            quiet_fenced_futures(loop, self.tasks.log)  # ``croupier serve``, the demo, tests: not the FastStream hook
        while True:
            try:
                await ensure_topics(self.host.settings, self.topics)
                await self.broker.start()
                return
            except (KafkaError, OSError) as e:
                await _refuse_tls_mismatch(self.host.settings, e)
                if loop.time() + delay > deadline:
                    raise
                self.host.log.warning("broker_unreachable", error=f"{type(e).__name__}: {e}", retry_s=delay,
                                      bootstrap=self.host.settings.bootstrap_servers)
                try:
                    await self.broker.stop()
                except Exception:  # noqa: BLE001 - a half-started broker
                    pass
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    async def stop(self) -> None:
        """Stop consuming and the tasks' producers (in :attr:`context`, like :meth:`start`)."""
        await asyncio.get_running_loop().create_task(self._stop(), context=self.context)

    async def _stop(self) -> None:
        if self.tasks is not None:  # commit and close the producers first: then the consumer leaves its group
            await self.tasks.hand_over()
        await self.broker.stop()
        if self.tasks is not None:
            await self.tasks.stop()


def build_service(core: ServiceCore[Any], settings: Settings | None = None, *,
                  extra_topics: tuple[str, ...] = (), publisher: Publisher | None = None,
                  group: str | None = None, replica_of: str | None = None) -> Service:
    """Everything :func:`build_app` makes, as a :class:`Service`."""
    app, broker, host, tasks = _build(core, settings, extra_topics=extra_topics, publisher=publisher,
                                      group=group, replica_of=replica_of)
    return Service(app, broker, host, topics_of(core) + list(extra_topics), tasks,
                   log_name=f"{core.name}-replica" if replica_of is not None else None)


def build_app(core: ServiceCore[Any], settings: Settings | None = None, *,
              extra_topics: tuple[str, ...] = (), publisher: Publisher | None = None,
              group: str | None = None, replica_of: str | None = None,
              ) -> tuple[FastStream, KafkaBroker, ServiceHost]:
    """A FastStream app running ``core`` against the broker of ``settings`` (environment by default).

    ``publisher``: for handler tests under ``TestKafkaBroker`` only (decisions go there, no tasks).
    ``replica_of``: a read-only replica of that service (e.g. the query API's copy of the projection):
    it restores from that service's snapshots, follows the inputs, commits and writes nothing.
    ``group``: the consumer group (default: the service's).
    """
    app, broker, host, _ = _build(core, settings, extra_topics=extra_topics, publisher=publisher, group=group,
                                  replica_of=replica_of)
    return app, broker, host


def _build(core: ServiceCore[Any], settings: Settings | None, *, extra_topics: tuple[str, ...],
           publisher: Publisher | None, group: str | None, replica_of: str | None,
           ) -> tuple[FastStream, KafkaBroker, ServiceHost, TaskManager | None]:
    configure()
    settings = settings or Settings.from_env()
    bind_process(instance=settings.instance)
    # apply_types=False: the handler takes the records our decoder hands it, with no dependency injection. With it,
    # FastStream resolved the handler's ``msg: KafkaMessage`` parameter for every batch through fast_depends: an
    # anyio task group and a worker thread (``run_in_threadpool``) per batch: 1.3 s of a 22 s profile against 0.9 s
    # for the handler's own work (``bench/pipeline.py --cprofile``, issue 25), and a thread hop before every batch
    broker = KafkaBroker(settings.bootstrap_hosts(), logger=None, apply_types=False, **_broker_security(settings))
    group_id = group or settings.group(core.name)
    host = ServiceHost(core, settings, publisher or TasksOnly())
    tasks: TaskManager | None = None
    if publisher is None:
        tasks = TaskManager(host, settings, group_id, transactional=replica_of is None, snapshots_of=replica_of)

    async def handle_batch(records: Any) -> None:
        if tasks is not None:
            await tasks.on_records(records)
        else:  # handler tests: publish directly through the given publisher
            await host.handle_batch([(r.topic, r.partition, r.offset, r.key, r.value) for r in records])

    subscriber = broker.subscriber(
        *host.subscribed_topics,
        group_id=group_id,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        ack_policy=AckPolicy.MANUAL,  # offsets are committed inside each task's transaction
        partition_assignment_strategy=(TableTaskAssignor.for_member(),),
        session_timeout_ms=settings.session_timeout_ms,  # SESSION_TIMEOUT_MS unless the floor sets more
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        listener=tasks,
        include_in_schema=False,
        batch=True,
        max_records=MAX_RECORDS,
        batch_timeout_ms=BATCH_TIMEOUT_MS,
        fetch_max_wait_ms=FETCH_MAX_WAIT_MS,  # a hop waits no 500 ms behind aiokafka's fetch in flight
    )
    subscriber(handle_batch, decoder=records_of)
    poll_without_sleep(subscriber, fetch_sessions=settings.fetch_sessions)
    if tasks is not None:
        tasks.bind(lambda: getattr(subscriber, "consumer", None))
    app = FastStream(broker)
    topics = topics_of(core) + list(extra_topics)

    @app.on_startup
    async def _start() -> None:
        # ``faststream run``: one service per process; what starts after this hook logs under its name
        structlog.contextvars.bind_contextvars(service=core.name, instance=settings.instance)
        if tasks is not None:
            tasks.observe()
            quiet_fenced_futures(asyncio.get_running_loop(), tasks.log)
        try:
            await ensure_topics(settings, topics)
        except (KafkaError, OSError) as e:
            await _refuse_tls_mismatch(settings, e)
            raise

    @app.on_shutdown
    async def _hand_over() -> None:
        # before FastStream stops the consumer (its LeaveGroup): commit every task, close the producers
        if tasks is not None:
            await tasks.hand_over()

    @app.after_shutdown
    async def _stop() -> None:
        if tasks is not None:
            await tasks.stop()

    return app, broker, host, tasks


async def records_of(msg: Any) -> tuple[Any, ...]:
    """The subscriber's body decoder: the batch's aiokafka records themselves, undecoded (issue 25); the handler
    gets them (the broker applies no types) and the runtime decodes each with msgspec (:mod:`contracts.codecs`).
    FastStream's default decoder parsed every record's body with the standard library's ``json`` first (a
    record without a content-type header), a parse per record, on every hop, whose result nothing read."""
    raw = msg.raw_message
    return tuple(raw) if isinstance(raw, (list, tuple)) else (raw,)


def poll_without_sleep(subscriber: Any, poll_ms: int = POLL_MS, max_records: int = MAX_RECORDS,
                       fetch_sessions: bool = False) -> None:
    """Make FastStream's batch ``subscriber`` wait for records on the consumer, never in a sleep (issue 25).

    FastStream 0.7's batch loop calls ``getmany(timeout_ms=batch_timeout_ms)`` and, when that returns nothing,
    sleeps ``batch_timeout_ms`` more: a record fetched during that sleep waits for it (up to
    :data:`BATCH_TIMEOUT_MS`, 5 ms, on every hop of a round), and an idle service turns its loop 100 times a
    second. aiokafka's ``getmany`` returns as soon as a fetch brings records, so waiting there up to
    ``poll_ms`` and never sleeping hands a batch over the moment it is fetched, as the raw loop of
    ``bench/rawloop.py`` does. The loop still sees FastStream's stop (its task is cancelled) at once.
    Replaces the subscriber's ``get_msg`` (FastStream's ``BatchSubscriber`` hook, a tuple of records; empty
    when none came); raises ``TypeError`` for a subscriber without that hook (another FastStream).

    ``fetch_sessions``: the consumer fetches in incremental fetch sessions (KIP-227,
    :mod:`services.runtime.fetch_sessions`) from its first poll on; FastStream builds the consumer itself when
    the subscriber starts, so this is the first place the runtime holds it."""
    if not callable(getattr(subscriber, "get_msg", None)):
        raise TypeError(f"{type(subscriber).__name__} has no get_msg: FastStream's batch loop changed")

    async def get_msg(consumer: Any) -> tuple[Any, ...]:
        if fetch_sessions:
            enable_fetch_sessions(consumer)  # at once when it already does
        batch = await consumer.getmany(timeout_ms=poll_ms, max_records=max_records)
        return tuple(r for records in batch.values() for r in records)

    subscriber.get_msg = get_msg


async def _refuse_tls_mismatch(settings: Settings, error: BaseException) -> None:
    """After ``error`` connecting: raise :class:`~services.runtime.tls.BrokerTlsError` (from ``error``) when a TLS
    handshake explains it (:meth:`Settings.connection_problem`); return otherwise."""
    problem = await settings.connection_problem()
    if problem is not None:
        raise BrokerTlsError(problem) from error


def _broker_security(settings: Settings) -> dict[str, Any]:
    """FastStream's ``security=`` for the SASL options in ``settings`` (none in plain mode)."""
    security = settings.faststream_security()
    return {"security": security} if security is not None else {}
