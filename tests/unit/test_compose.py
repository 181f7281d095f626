"""docker-compose.yml against the code (issue 11; no Docker engine here, so the file is parsed, not run):
the broker and every service of ``services.NAMES`` plus the query API on its default port, the settings each
container needs, an instance id per replica, listeners for the containers and for the host, health checks."""

from __future__ import annotations

import inspect
import re
import socket
from pathlib import Path

import pytest
import yaml

import services
from croupier import cli
from services.runtime.settings import DEFAULT_BOOTSTRAP, Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES = COMPOSE["services"]
KAFKA_ENV = {k: str(v) for k, v in SERVICES["kafka"]["environment"].items()}
CROUPIER = [*services.NAMES, "api", "pit"]
#: the containers beside Croupier's own: the metrics and their dashboard
MONITORING = {"prometheus", "grafana"}


def _env(name: str) -> dict[str, str]:
    """A container's environment as compose passes it (``${VAR:-default}`` with VAR unset)."""
    env = SERVICES[name]["environment"]
    return {k: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(v)) for k, v in env.items()}


def _listeners(value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` as ``{NAME: (host, port)}``."""
    out = {}
    for item in value.split(","):
        name, _, address = item.partition("://")
        host, _, port = address.rpartition(":")
        out[name] = (host, int(port))
    return out


def _option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_the_broker_and_every_service_the_code_has_and_the_api():
    assert set(SERVICES) == {"kafka", *services.NAMES, "api", "pit", *MONITORING}
    for name in services.NAMES:
        command = SERVICES[name]["command"]
        assert command[:2] == ["croupier", "serve"] and _option(command, "--services") == name, name
        assert SERVICES[name]["build"] == "." and SERVICES[name]["restart"] == "unless-stopped"
    assert SERVICES["api"]["command"][:2] == ["croupier", "api"]


def test_the_api_listens_on_every_interface_on_the_port_the_code_defaults_to():
    port = inspect.signature(cli.api).parameters["port"].default
    assert port == cli.DEFAULT_API_PORT == 8080
    command = SERVICES["api"]["command"]
    assert _option(command, "--host") == "0.0.0.0" and int(_option(command, "--port")) == port
    assert SERVICES["api"]["ports"] == [f"{port}:{port}"]
    assert _env("api")["CROUPIER_API_TOKENS_FILE"] == "/run/secrets/api_tokens"
    assert SERVICES["api"]["secrets"] == ["api_tokens"] and COMPOSE["secrets"]["api_tokens"]["file"]
    assert SERVICES["api"]["depends_on"]["projection"] == {"condition": "service_healthy"}
    assert f"http://127.0.0.1:{port}/health/ready" in " ".join(SERVICES["api"]["healthcheck"]["test"])


def test_every_container_has_the_settings_it_needs_and_one_set_of_topics():
    internal = _listeners(KAFKA_ENV["KAFKA_ADVERTISED_LISTENERS"])["INTERNAL"]
    prefixes = set()
    for name in CROUPIER:
        env = _env(name)
        assert env["KAFKA_BOOTSTRAP_SERVERS"] == f"{internal[0]}:{internal[1]}" == "kafka:9092", name
        settings = Settings.from_env(env)
        assert settings.bootstrap_servers == "kafka:9092" and not settings.secured
        prefixes.add(settings.topic_prefix)
        assert SERVICES[name]["depends_on"]["kafka"] == {"condition": "service_healthy"}, name
    assert prefixes == {"floor1."}  # every container reads and writes the same topics
    # the vault key goes to the shoe container alone
    assert _env("shoe")["CROUPIER_VAULT_KEY_FILE"] == "/run/secrets/vault_keys"
    assert SERVICES["shoe"]["secrets"] == ["vault_keys"] and COMPOSE["secrets"]["vault_keys"]["file"]
    assert [n for n in CROUPIER if "CROUPIER_VAULT_KEY_FILE" in _env(n)
            or "vault_keys" in SERVICES[n].get("secrets", [])] == ["shoe"]


def test_each_replica_has_its_own_instance_id(monkeypatch: pytest.MonkeyPatch):
    for name in CROUPIER:
        env = _env(name)
        assert env["CROUPIER_INSTANCE"] == "", f"{name}: a fixed CROUPIER_INSTANCE labels every replica alike"
        replicas = set()
        for container_id in ("3f2c9a1b7d4e", "a81e00c2f9b3", "0c55d2e61f08"):  # --scale 3: three host names
            monkeypatch.setattr(socket, "gethostname", lambda c=container_id: c)
            replicas.add(Settings.from_env(env).instance)
        assert replicas == {"3f2c9a1b7d4e", "a81e00c2f9b3", "0c55d2e61f08"}, name


def test_listeners_inside_the_compose_network_and_from_the_host():
    listeners = _listeners(KAFKA_ENV["KAFKA_LISTENERS"])
    advertised = _listeners(KAFKA_ENV["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(p.split(":") for p in KAFKA_ENV["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    assert set(listeners) == set(protocols) == {"INTERNAL", "EXTERNAL", "CONTROLLER"}
    assert advertised == {"INTERNAL": ("kafka", 9092), "EXTERNAL": ("localhost", 19092)}
    for name, (_, port) in advertised.items():
        assert listeners[name] == ("", port), name  # bound on every interface of the container
    # the host reaches the EXTERNAL listener through the published port: the CLI's default bootstrap
    assert SERVICES["kafka"]["ports"] == ["19092:19092"] and DEFAULT_BOOTSTRAP.endswith(":19092")
    assert SERVICES["kafka"]["hostname"] == "kafka"
    assert KAFKA_ENV["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"
    assert KAFKA_ENV["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"
    assert KAFKA_ENV["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"1@kafka:{listeners['CONTROLLER'][1]}"
    assert set(protocols.values()) == {"PLAINTEXT"}
    for key in ("OFFSETS_TOPIC", "TRANSACTION_STATE_LOG", "SHARE_COORDINATOR_STATE_TOPIC"):
        assert KAFKA_ENV[f"KAFKA_{key}_REPLICATION_FACTOR"] == "1", key  # one node
    assert KAFKA_ENV["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"  # the services write in transactions


def test_every_container_has_a_health_check_that_the_code_keeps():
    broker = " ".join(SERVICES["kafka"]["healthcheck"]["test"])
    assert "kafka-broker-api-versions.sh --bootstrap-server kafka:9092" in broker
    for name in services.NAMES:
        check = SERVICES[name]["healthcheck"]["test"]
        ready = _option(SERVICES[name]["command"], "--ready-file")
        assert check == ["CMD", "test", "-f", ready], name
    assert "ready_file" in inspect.signature(cli.serve).parameters
    for name in CROUPIER:
        hc = SERVICES[name]["healthcheck"]
        assert {"interval", "timeout", "retries", "start_period"} <= hc.keys(), name
        assert int(hc["interval"].removesuffix("s")) <= 10 and hc["retries"] >= 3, name


def test_every_service_container_serves_its_metrics_on_the_port_serve_reads():
    import typing

    hints = typing.get_type_hints(cli.serve, include_extras=True)
    port_opt, host_opt = hints["metrics_port"].__metadata__[0], hints["metrics_host"].__metadata__[0]
    assert port_opt.envvar == "CROUPIER_METRICS_PORT" and host_opt.envvar == "CROUPIER_METRICS_HOST"
    for name in services.NAMES:
        env = SERVICES[name]["environment"]
        assert int(env["CROUPIER_METRICS_PORT"]) == 9100 and env["CROUPIER_METRICS_HOST"] == "0.0.0.0", name


def test_the_pit_serves_the_console_and_the_command_api_on_every_interface():
    port = int(_option(SERVICES["pit"]["command"], "--port"))
    assert SERVICES["pit"]["command"][:2] == ["croupier", "pit"] and "port" in inspect.signature(cli.pit).parameters
    assert _option(SERVICES["pit"]["command"], "--host") == "0.0.0.0"
    assert SERVICES["pit"]["ports"] == [f"{port}:{port}"] and port != cli.DEFAULT_API_PORT  # beside the API
    assert _env("pit")["CROUPIER_API_TOKENS_FILE"] == "/run/secrets/api_tokens"
    assert SERVICES["pit"]["secrets"] == ["api_tokens"]
    assert SERVICES["pit"]["depends_on"]["projection"] == {"condition": "service_healthy"}
    assert f"http://127.0.0.1:{port}/health/ready" in " ".join(SERVICES["pit"]["healthcheck"]["test"])


def test_prometheus_scrapes_every_croupier_container_where_it_serves_its_metrics():
    prom = yaml.safe_load((REPO / "infra/prometheus/prometheus.yml").read_text(encoding="utf-8"))
    mount = next(v for v in SERVICES["prometheus"]["volumes"] if v.endswith(":/etc/prometheus/prometheus.yml:ro"))
    assert mount.startswith("./infra/prometheus/prometheus.yml:")
    assert "--config.file=/etc/prometheus/prometheus.yml" in SERVICES["prometheus"]["command"]
    targets: dict[str, int] = {}
    for job in prom["scrape_configs"]:
        for sd in job.get("dns_sd_configs", []):  # every replica of a scaled service
            targets.update({name: int(sd["port"]) for name in sd["names"]})
        for sc in job.get("static_configs", []):
            targets.update({t.split(":")[0]: int(t.split(":")[1]) for t in sc["targets"]})
    metrics_port = {n: int(_env(n)["CROUPIER_METRICS_PORT"]) for n in services.NAMES}
    served = {**metrics_port, "api": int(_option(SERVICES["api"]["command"], "--port")),
              "pit": int(_option(SERVICES["pit"]["command"], "--port"))}
    assert targets == served  # every Croupier container, on the port it serves /metrics on, and nothing else


def test_grafana_has_prometheus_and_the_repositorys_dashboard_provisioned():
    import json

    vols = SERVICES["grafana"]["volumes"]
    assert "./infra/grafana/provisioning:/etc/grafana/provisioning:ro" in vols
    dash = next(v for v in vols if v.startswith("./infra/grafana/croupier.json:"))
    inside = dash.split(":")[1]
    provider = yaml.safe_load((REPO / "infra/grafana/provisioning/dashboards/croupier.yml").read_text())
    assert inside.rsplit("/", 1)[0] == provider["providers"][0]["options"]["path"]
    ds = yaml.safe_load((REPO / "infra/grafana/provisioning/datasources/prometheus.yml").read_text())
    [source] = ds["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090" and source["isDefault"]
    assert SERVICES["prometheus"]["ports"] == ["9090:9090"]
    board = json.loads((REPO / "infra/grafana/croupier.json").read_text())
    assert len(board["panels"]) >= 20 and any(v["type"] == "datasource" and v["query"] == "prometheus"
                                              for v in board["templating"]["list"])


def test_one_kafka_version_everywhere():
    pom = (REPO / "infra/kafka/pom.xml").read_text(encoding="utf-8")
    [pinned] = re.findall(r"<kafka.version>([0-9.]+)</kafka.version>", pom)
    image, _, tag = SERVICES["kafka"]["image"].partition(":")
    assert image == "apache/kafka" and tag == pinned, (tag, pinned)
    script = (REPO / "infra/kafka/kafka.sh").read_text(encoding="utf-8")
    assert "pom.xml" in script and not (set(re.findall(r"\b4\.\d+\.\d+\b", script)) - {pinned})


def _template_settings() -> dict[str, str]:
    """The broker settings infra/kafka/server.properties.template fixes (no ``@PLACEHOLDER@`` in the value)."""
    out = {}
    for line in (REPO / "infra/kafka/server.properties.template").read_text(encoding="utf-8").splitlines():
        key, eq, value = line.partition("=")
        if eq and not line.startswith("#") and "@" not in value:
            out[key.strip()] = value.strip()
    return out


@pytest.mark.parametrize("key", ["offsets.topic.segment.bytes", "transaction.state.log.segment.bytes",
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                                 "offsets.topic.num.partitions", "transaction.state.log.num.partitions",
                                 "group.initial.rebalance.delay.ms"])
def test_the_compose_broker_sets_what_the_projects_broker_sets(key: str):
    """What the local broker needs for the runtime (compacted internal topics, a killed producer's transaction
    aborted within a second, no first-join delay) holds in the compose broker too: ``a.b.c`` is
    ``KAFKA_A_B_C``."""
    template = _template_settings()
    assert key in template
    assert KAFKA_ENV.get("KAFKA_" + key.upper().replace(".", "_")) == template[key]
