"""The client's security settings (services/runtime/settings.py) and the ACL policy (infra/kafka/acls.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from faststream.security import SASLScram512

from contracts import topics as T
from services.runtime.settings import SecuritySettingsError, Settings

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kafka_acls", REPO / "infra" / "kafka" / "acls.py")
assert _spec and _spec.loader
acls = importlib.util.module_from_spec(_spec)
sys.modules["kafka_acls"] = acls
_spec.loader.exec_module(acls)


def test_plain_by_default_gives_only_the_bootstrap_servers():
    s = Settings.from_env({"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert s.client_options() == {"bootstrap_servers": "127.0.0.1:1"}
    assert s.faststream_security() is None and not s.secured


def test_sasl_from_a_password_file(tmp_path: Path):
    pw = tmp_path / "shoe"
    pw.write_text("s3cret\n")
    s = Settings.from_env({"KAFKA_BOOTSTRAP_SERVERS": "h:1", "KAFKA_SECURITY_PROTOCOL": "sasl_plaintext",
                           "KAFKA_SASL_USERNAME": "shoe", "KAFKA_SASL_PASSWORD_FILE": str(pw)})
    assert s.client_options() == {"bootstrap_servers": "h:1", "security_protocol": "SASL_PLAINTEXT",
                                  "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "shoe",
                                  "sasl_plain_password": "s3cret"}
    sec = s.faststream_security()
    assert isinstance(sec, SASLScram512)
    assert (sec.username, sec.password, sec.use_ssl) == ("shoe", "s3cret", False)
    assert "s3cret" not in repr(s)


@pytest.mark.parametrize("env, names", [
    ({"KAFKA_SECURITY_PROTOCOL": "TLS"}, "KAFKA_SECURITY_PROTOCOL"),
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_PASSWORD": "x"}, "KAFKA_SASL_USERNAME"),
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "shoe"}, "KAFKA_SASL_PASSWORD_FILE"),
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "shoe", "KAFKA_SASL_MECHANISM": "MD5",
      "KAFKA_SASL_PASSWORD": "x"}, "KAFKA_SASL_MECHANISM"),
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "shoe", "KAFKA_SASL_PASSWORD": "x",
      "KAFKA_SASL_PASSWORD_FILE": "/p"}, "not both"),
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "shoe",
      "KAFKA_SASL_PASSWORD_FILE": "/nonexistent/pw"}, "/nonexistent/pw"),
])
def test_incomplete_security_settings_name_the_variable(env: dict[str, str], names: str):
    with pytest.raises(SecuritySettingsError, match=names):
        Settings.from_env(env)


def _writers(base: str) -> set[str]:
    return {g.principal for g in acls.GRANTS if base in g.write}


def _readers(base: str) -> set[str]:
    return {g.principal for g in acls.GRANTS if base in g.read}


def test_the_vault_is_the_shoe_services_alone():
    assert _readers(T.SHOE_VAULT) == _writers(T.SHOE_VAULT) == {"shoe"}
    assert {g.principal for g in acls.GRANTS if T.SHOE_VAULT in g.create} == {"shoe"}


def test_every_command_topic_has_exactly_one_writer():
    assert {c: _writers(c) for c in T.COMMAND_TOPICS} == {
        T.SHOE_COMMANDS: {"console"}, T.SHOE_DRAWS: {"dealing"}, T.DEALING_COMMANDS: {"console"},
        T.DEALING_OPTIONS: {"bettor"}, T.WAGERING_COMMANDS: {"console"}, T.WAGERING_BETS: {"bettor"}, T.SETTLEMENT_COMMANDS: {"console"},
        T.CAGE_COMMANDS: {"console"}, T.CAGE_MARKERS: {"cage"}}
    assert {r.name: r.writer for r in T.COMMAND_ROUTES} == {c: next(iter(w)) for c, w in
                                                           ((c, _writers(c)) for c in T.COMMAND_TOPICS)}


def test_each_command_type_travels_on_one_topic_which_its_writer_alone_may_write():
    from contracts.commands import AnyCommand

    tags = [tp.__struct_config__.tag for tp in AnyCommand.__args__]
    routed = [tag for r in T.COMMAND_ROUTES for tag in r.commands]
    assert sorted(routed) == sorted(tags)  # every command on exactly one topic
    assert T.TOPIC_OF["place_bet"] == T.TOPIC_OF["withdraw_bet"] == T.WAGERING_BETS
    assert T.TOPIC_OF["close_betting"] == T.WAGERING_COMMANDS and T.TOPIC_OF["draw_card"] == T.SHOE_DRAWS


def test_each_service_writes_only_its_own_topics_and_analytics_reads_events_only():
    for g in acls.GRANTS:
        if g.kind == "service":
            own = {t for t in T.ALL_TOPICS if t.startswith(f"{g.principal}.")} | {f"{g.principal}.snapshots"}
            sends = {"dealing": {T.SHOE_DRAWS}, "cage": {T.CAGE_MARKERS}}.get(g.principal, set())
            commands = {r.name for r in T.COMMAND_ROUTES}
            assert set(g.write) == (own - commands) | sends, g.principal
        else:
            assert g.write == () or g.principal in ("console", "bettor"), g.principal
    analytics = next(g for g in acls.GRANTS if g.principal == "analytics")
    assert set(analytics.read) == set(acls.EVENTS) and T.SHOE_VAULT not in acls.EVENTS


def test_acl_calls_name_every_grant_with_the_prefix():
    calls = acls.calls("t-1.", "croupier")
    granted = set()
    for c in calls:
        principal = c[c.index("--allow-principal") + 1].removeprefix("User:")
        op = c[c.index("--operation") + 1]
        assert c[c.index("--resource-pattern-type") + 1] == "PREFIXED"
        granted |= {(principal, op, c[i + 1]) for i, a in enumerate(c) if a in ("--topic", "--group",
                                                                              "--transactional-id")}
    expected = set()
    for g in acls.GRANTS:
        expected |= {(g.principal, "Read", f"t-1.{n}") for n in g.read}
        expected |= {(g.principal, "Write", f"t-1.{n}") for n in g.write}
        expected |= {(g.principal, "Create", f"t-1.{n}") for n in g.create}
        if g.groups:
            expected.add((g.principal, "Read", f"croupier.t-1.{g.principal}"))
        if g.transactional:
            expected.add((g.principal, "Write", f"croupier.t-1.{g.principal}"))
    assert granted == expected
    assert len(calls) == 25  # two for the bettor (Read, Write); three for the cage service (since issue 23)


def test_the_readme_table_is_the_policy():
    out = subprocess.run([sys.executable, str(REPO / "infra" / "kafka" / "acls.py"), "table"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == acls.table()
    assert out in (REPO / "infra" / "kafka" / "README.md").read_text()


def test_the_acl_bindings_are_the_calls_one_per_resource():
    """``kafka.sh acl``'s one-request path (infra/kafka/acl_apply.py) grants what the AclCommand calls grant."""
    calls, bindings = acls.calls("t-1.", "croupier"), acls.bindings("t-1.", "croupier")
    flags = {"--topic": 2, "--group": 3, "--transactional-id": 5}
    assert len(bindings) == sum(c.count(f) for c in calls for f in flags) == len(set(bindings))
    shoe_vault = (2, "t-1.shoe.vault", 4, "User:shoe", "*", 4, 3)  # TOPIC, PREFIXED, Write, ALLOW
    assert shoe_vault in bindings
    assert [b for b in bindings if b[1] == "t-1.shoe.vault"] == [
        (2, "t-1.shoe.vault", 4, "User:shoe", "*", op, 3) for op in (3, 4, 5)]  # Read, Write, Create: shoe's alone
    assert (5, "croupier.t-1.dealing", 4, "User:dealing", "*", 4, 3) in bindings  # its transactional ids
    assert (3, "croupier.t-1.pit", 4, "User:pit", "*", 3, 3) in bindings  # the pit's consumer groups


def test_the_create_acls_request_is_kafkas_v3_wire_format():
    """CreateAcls v3 (flexible): compact strings and arrays (length + 1), a tag buffer per binding and at the end;
    the response decodes per binding."""
    _spec2 = importlib.util.spec_from_file_location("kafka_acl_apply", REPO / "infra" / "kafka" / "acl_apply.py")
    mod = importlib.util.module_from_spec(_spec2)
    _spec2.loader.exec_module(mod)
    req = mod.CreateAcls([(2, "t.a", 4, "User:x", "*", 3, 3)]).prepare({30: (2, 3)})
    assert (req.API_KEY, req.API_VERSION, req.FLEXIBLE_VERSION) == (30, 3, True)
    assert req.encode() == (b"\x02" + b"\x02" + b"\x04t.a" + b"\x04" + b"\x07User:x" + b"\x02*" + b"\x03\x03"
                            + b"\x00" + b"\x00")
    raw = b"\x00\x00\x00\x00" + b"\x03" + b"\x00\x00\x00\x00" + b"\x00\x28\x07denied\x00" + b"\x00"
    res = mod.CreateAclsResponseV3.decode(raw)
    assert [(r[0], r[1]) for r in res.results] == [(0, None), (40, "denied")]
