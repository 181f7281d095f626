"""``KAFKA_BOOTSTRAP_SERVERS`` names a cluster as ``host:port`` items separated by commas; every client must
get every host (FastStream wraps a string in a list of one, which aiokafka reads as one malformed host)."""

from __future__ import annotations

import pytest

from services.runtime.app import build_app
from services.runtime.settings import Settings
from services.settlement.core import SettlementCore


def test_bootstrap_hosts_split_on_commas_and_trim():
    s = Settings(bootstrap_servers=" kafka-1:9092, kafka-2:9092,,kafka-3:9094 ")
    assert s.bootstrap_hosts() == ["kafka-1:9092", "kafka-2:9092", "kafka-3:9094"]
    assert Settings(bootstrap_servers="127.0.0.1:19092").bootstrap_hosts() == ["127.0.0.1:19092"]


def test_bootstrap_naming_no_host_is_refused():
    with pytest.raises(ValueError, match="no broker"):
        Settings(bootstrap_servers=" , ").bootstrap_hosts()


def test_a_service_broker_gets_every_host_of_the_cluster(monkeypatch):
    import services.runtime.app as app_module

    seen: list[object] = []
    real = app_module.KafkaBroker

    def recording(servers: object, **kw: object) -> object:
        seen.append(servers)
        return real(servers, **kw)

    monkeypatch.setattr(app_module, "KafkaBroker", recording)
    build_app(SettlementCore(), Settings(bootstrap_servers="k1:9092,k2:9092"))
    assert seen == [["k1:9092", "k2:9092"]]


def test_the_session_timeout_is_the_brokers_minimum_unless_the_floor_sets_more():
    """``CROUPIER_SESSION_TIMEOUT_MS``: 6,000 ms by default (``services.runtime.app.SESSION_TIMEOUT_MS``), more
    when set; below the broker's minimum, or not a number, a ``ValueError`` naming it."""
    from services.runtime.app import SESSION_TIMEOUT_MS

    assert Settings.from_env({}).session_timeout_ms == SESSION_TIMEOUT_MS == 6_000
    assert Settings.from_env({"CROUPIER_SESSION_TIMEOUT_MS": "20000"}).session_timeout_ms == 20_000
    for bad in ("5999", "6 s"):
        with pytest.raises(ValueError, match="CROUPIER_SESSION_TIMEOUT_MS"):
            Settings.from_env({"CROUPIER_SESSION_TIMEOUT_MS": bad})
