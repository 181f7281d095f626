"""Project-wide pytest hooks.

``CROUPIER_REQUIRE_KAFKA=1`` (set by ``.ci/run``) turns "the Kafka tests did not really run" into a failed
session: the run fails if any test marked ``kafka`` was skipped, or if not a single ``kafka`` test passed
(nothing collected, everything deselected, or the marker lost). Without the variable, Kafka tests skip with
a reason when no broker is available, as usual for a developer's machine.

Every test session seals shoe orders under the fixed test vault key (``tests/vaultkeys.py``): it is put in
``CROUPIER_VAULT_KEYS`` here, before any test builds a shoe service.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.budget import profile as hypothesis_profile
from tests.vaultkeys import TEST_VAULT_KEYS

# Hypothesis profiles (tests/budget.py): `ci` (.ci/run) runs fewer examples of the properties that do not ask
# for a count (and tests.budget.examples cuts those that do), with no deadline (a shared 2-core machine) and
# no example database (a fresh clone); `full` runs every property at 4x Hypothesis' default.
hypothesis_settings.register_profile("ci", max_examples=25, deadline=None, database=None, print_blob=True,
                                     suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.register_profile("full", max_examples=400, deadline=None)
hypothesis_settings.load_profile(hypothesis_profile())

os.environ.pop("CROUPIER_VAULT_KEY_FILE", None)
os.environ["CROUPIER_VAULT_KEYS"] = TEST_VAULT_KEYS
#: Test floors get 3 partitions a topic, not the production 12 (CROUPIER_PARTITIONS; a test of several instances
#: sets its own count): a floor of a few tables spreads over 3 as well as over 12, and the broker and every
#: consumer's fetch handle a quarter of the partitions. Measured on `test_demo`'s two-table test, own broker:
#: Python CPU 15.5-16.5 s and broker CPU 13-18 s at 12, 11.8-12.2 s and 9-11 s at 3 (issue 27). Services started
#: as subprocesses, and ``tests.system.conftest.broker_settings``, read the same variable.
os.environ.setdefault("CROUPIER_PARTITIONS", "3")

KAFKA_MARKER = "kafka"

_TESTS = Path(__file__).resolve().parent
#: the slowest modules, longest first (from the JUnit XML of a CI run and the helpers' runs: 100-380 s each); run
#: first, so that on several workers no long one starts last
_SLOWEST_FIRST = ("test_three_brokers.py", "test_floor_kafka.py", "test_pit_browser_broker.py",
                  "test_cluster.py", "test_floor_reruns.py", "test_replay_export_kafka.py", "test_pit_browser.py",
                  "test_cage_browser.py", "test_vault_kafka.py", "test_logs_json.py", "test_pit_browser_game.py",
                  "test_pit_browser_shoe.py", "test_casino_night_kafka.py", "test_demo.py")


#: run after the other system tests, when the other workers go on to the unit, contract and service tests (no
#: broker): the chaos floor needs the broker's throughput (started beside three other system tests and three
#: brokers' JVMs it dealt 1 round in 548 s and timed out), and it lasts at least its 15 faults' gaps (4-10 s each,
#: about 2 minutes), so run last it was the only test running for most of its 175 s (CI run of 2026-12-04:
#: started 900 s into the tests, ended the stage at 1,080 s)
_AFTER_SYSTEM = ("test_chaos.py",)


def _run_order(item: pytest.Item) -> tuple[int, int]:
    """Where ``item`` runs: the slowest modules (:data:`_SLOWEST_FIRST`) first, then the other system tests,
    :data:`_AFTER_SYSTEM`, then the rest, each in collection order (a stable sort)."""
    path = Path(str(item.path)).resolve()
    if path.name in _AFTER_SYSTEM and path.parent == _TESTS / "system":
        return (1, 1)
    if path.name in _SLOWEST_FIRST and path.parent == _TESTS / "system":
        return (0, _SLOWEST_FIRST.index(path.name))
    return (1 if path.parent == _TESTS / "system" else 2, 0)


#: modules that share the session's secured broker prefix (its topics and consumer groups, ``secured_kafka``):
#: one worker runs them all, one after another, as a run without workers does
_ONE_WORKER = frozenset({"test_acl.py", "test_floor_secured.py", "test_tls.py", "test_command_api_kafka.py"})


#: long modules without module fixtures: each of their tests is a unit of its own, so that one worker does not
#: deal all of a module's floors one after another (test_floor_kafka's five took 627 s on one worker in CI)
_PER_TEST = frozenset({"test_floor_kafka.py", "test_cluster.py", "test_demo.py", "test_floor_reruns.py",
                       "test_log_time.py"})


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """Under ``--dist loadscope``: a work unit is a whole module (the classes of a module too), the modules
    of :data:`_ONE_WORKER` are one unit, and each test of :data:`_PER_TEST` is one. Other ``--dist`` modes are
    pytest-xdist's own."""
    if config.getoption("dist", "no") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            name = module.rsplit("/", 1)[-1]
            if name in _ONE_WORKER:
                return "secured-broker-prefix"
            return nodeid if name in _PER_TEST else module

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Orders the session's tests by :func:`_run_order`. ``.ci/run`` runs them on pytest-xdist workers, a module
    to a worker (``--dist loadscope --no-loadscope-reorder``: a module's fixtures built once), handed out in this
    order; the system tests mostly wait on the broker, so four workers share two cores well."""
    items.sort(key=_run_order)


@pytest.fixture(autouse=True)
def _client_logs_written_within_their_test() -> Iterator[None]:
    """The client log lines a test made (held up to 10 s for their repeat count, services/runtime/client_logs.py)
    are written before it ends: into its own captured stderr, never into a later test's (a CliRunner's)."""
    yield
    from services.runtime.logging import drain

    drain()
_REQUIRE_ENV = "CROUPIER_REQUIRE_KAFKA"


def _require_kafka() -> bool:
    return os.environ.get(_REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class _KafkaRunGuard:
    """Tracks the outcome of every kafka-marked test and fails the session if they did not run."""

    def __init__(self) -> None:
        self.kafka_nodeids: set[str] = set()
        self.passed: set[str] = set()
        self.not_passed: set[str] = set()
        self.skipped: dict[str, str] = {}
        self.problem: str | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # After every pytest_collection_modifyitems (markers added there) and after deselection.
        self.kafka_nodeids = {
            item.nodeid for item in session.items if item.get_closest_marker(KAFKA_MARKER) is not None
        }

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under pytest-xdist the controller collects nothing: a worker's report carries its markers as keywords.
        if report.nodeid not in self.kafka_nodeids and KAFKA_MARKER not in getattr(report, "keywords", {}):
            return
        self.kafka_nodeids.add(report.nodeid)
        if report.skipped:
            if hasattr(report, "wasxfail"):
                # An expected failure is not a skip, but it does not prove the broker works either.
                self.not_passed.add(report.nodeid)
                return
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped[report.nodeid] = reason
        elif report.failed:
            self.not_passed.add(report.nodeid)
        elif report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            self.passed.add(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
            pytest.ExitCode.USAGE_ERROR,
        ):
            return
        passed = self.passed - self.not_passed - set(self.skipped)
        if self.skipped:
            self.problem = (
                f"{len(self.skipped)} test(s) marked '{KAFKA_MARKER}' were skipped, but {_REQUIRE_ENV}=1 "
                "requires a real broker for all of them:\n"
                + "\n".join(f"  {nodeid}: {reason}" for nodeid, reason in sorted(self.skipped.items()))
            )
        elif not passed:
            self.problem = (
                f"no test marked '{KAFKA_MARKER}' passed ({len(self.kafka_nodeids)} selected), but "
                f"{_REQUIRE_ENV}=1 requires at least one"
            )
        if self.problem and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:  # type: ignore[no-untyped-def]
        if self.problem:
            terminalreporter.section(f"{_REQUIRE_ENV}=1", sep="=", red=True, bold=True)
            terminalreporter.line(f"FAILED: {self.problem}", red=True)


def pytest_configure(config: pytest.Config) -> None:
    if _require_kafka() and not config.pluginmanager.has_plugin("croupier-kafka-guard"):
        config.pluginmanager.register(_KafkaRunGuard(), "croupier-kafka-guard")
