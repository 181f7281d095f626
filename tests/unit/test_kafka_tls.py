"""TLS client settings (services/runtime/settings.py) and the named causes of a refused handshake
(services/runtime/tls.py), against small TLS servers on loopback with throw-away certificates (tests/tlscerts.py).
The same claims against the real secured broker: tests/system/test_tls.py."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from faststream.security import SASLScram512

from services.runtime.settings import SecuritySettingsError, Settings
from services.runtime.tls import BrokerTlsError, check_broker_tls, client_context, tls_problem
from tests.tlscerts import TestCA, make_ca


@pytest.fixture
def floor_ca(tmp_path: Path) -> TestCA:
    return make_ca(tmp_path, "floor-ca")


def _env(cafile: Path | str, **more: str) -> dict[str, str]:
    return {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
            "KAFKA_SASL_USERNAME": "shoe", "KAFKA_SASL_PASSWORD": "pw", "KAFKA_SSL_CAFILE": str(cafile), **more}


def test_sasl_ssl_gives_a_verifying_context_to_aiokafka_and_faststream(floor_ca: TestCA):
    s = Settings.from_env(_env(floor_ca.pem))
    opts = s.client_options()
    ctx = opts.pop("ssl_context")
    assert opts == {"bootstrap_servers": "127.0.0.1:1", "security_protocol": "SASL_SSL",
                    "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "shoe", "sasl_plain_password": "pw"}
    assert isinstance(ctx, ssl.SSLContext)
    assert (ctx.verify_mode, ctx.check_hostname, ctx.minimum_version) == (ssl.CERT_REQUIRED, True,
                                                                           ssl.TLSVersion.TLSv1_2)
    # the floor's CA is the context's one trust anchor here
    assert [c["subject"] for c in ctx.get_ca_certs()] == [
        ((("organizationName", "Croupier tests"),), (("commonName", "test CA floor-ca"),))]
    sec = s.faststream_security()
    assert isinstance(sec, SASLScram512) and sec.use_ssl and sec.ssl_context is ctx
    assert s.tls and s.secured


def test_a_principal_of_tls_settings_stays_on_tls(floor_ca: TestCA):
    s = Settings.from_env(_env(floor_ca.pem)).as_principal("dealing", "x")
    assert (s.security_protocol, s.ssl_cafile, s.sasl_username) == ("SASL_SSL", str(floor_ca.pem), "dealing")
    plain = Settings(bootstrap_servers="h:1").as_principal("dealing", "x")
    assert plain.security_protocol == "SASL_PLAINTEXT" and "ssl_context" not in plain.client_options()


def test_ssl_alone_is_tls_without_sasl(floor_ca: TestCA):
    s = Settings.from_env({"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CAFILE": str(floor_ca.pem)})
    opts = s.client_options()
    assert opts["security_protocol"] == "SSL" and "sasl_mechanism" not in opts and opts["ssl_context"]
    assert s.faststream_security().use_ssl and not s.secured


@pytest.mark.parametrize("env, names", [
    ({"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT"}, "sends everything in clear"),
    ({"KAFKA_SECURITY_PROTOCOL": "PLAINTEXT"}, "KAFKA_SSL_CAFILE is set"),
    ({"KAFKA_SASL_USERNAME": ""}, "SASL_SSL needs KAFKA_SASL_USERNAME"),
    ({"KAFKA_SECURITY_PROTOCOL": "TLS"}, "KAFKA_SECURITY_PROTOCOL='TLS'"),
])
def test_contradictory_tls_settings_are_refused(floor_ca: TestCA, env: dict[str, str], names: str):
    with pytest.raises(SecuritySettingsError, match=names):
        Settings.from_env(_env(floor_ca.pem, **env))


def test_a_ca_file_that_is_missing_or_no_certificate_is_named(tmp_path: Path):
    with pytest.raises(SecuritySettingsError, match=r"KAFKA_SSL_CAFILE=/nonexistent/ca.pem: no such file"):
        Settings.from_env(_env("/nonexistent/ca.pem"))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(SecuritySettingsError, match=r"junk.pem: not a PEM file of CA certificates"):
        Settings.from_env(_env(junk))


# ---- the named causes, against loopback servers -------------------------------------------------------------

@contextlib.asynccontextmanager
async def tls_server(cert: Path, key: Path) -> AsyncIterator[str]:
    """A TLS server on a free loopback port that answers nothing: ``127.0.0.1:<port>``."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.read(1)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@contextlib.asynccontextmanager
async def plain_server(answer: bytes | None) -> AsyncIterator[str]:
    """A plain TCP server: answers ``answer`` to the first bytes and closes, or (None) stays silent."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            await reader.read(100)
            if answer is None:
                await asyncio.sleep(30)
            writer.write(answer or b"")
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_the_right_ca_and_host_pass(floor_ca: TestCA, tmp_path: Path):
    async with tls_server(*floor_ca.issue(tmp_path, "broker")) as addr:
        assert await tls_problem([addr], "SASL_SSL", str(floor_ca.pem)) is None
        await check_broker_tls([addr.replace("127.0.0.1", "localhost")], "SASL_SSL", str(floor_ca.pem))


async def test_another_ca_is_named(floor_ca: TestCA, tmp_path: Path):
    other = make_ca(tmp_path, "other-ca")
    async with tls_server(*other.issue(tmp_path, "impostor")) as addr:
        with pytest.raises(BrokerTlsError, match=r"its certificate is not signed by the CA in "
                                                 rf"KAFKA_SSL_CAFILE={floor_ca.pem} \(unable to get local issuer"):
            await check_broker_tls([addr], "SASL_SSL", str(floor_ca.pem))


async def test_an_expired_certificate_is_named(floor_ca: TestCA, tmp_path: Path):
    async with tls_server(*floor_ca.issue(tmp_path, "stale", not_before_days=40, days=-1)) as addr:
        problem = await tls_problem([addr], "SASL_SSL", str(floor_ca.pem))
    assert problem == (f"the broker at {addr} was refused: its certificate has expired (certificate has expired): "
                       "issue a new one (kafka.sh start re-issues it)")


async def test_a_certificate_for_another_host_is_named(floor_ca: TestCA, tmp_path: Path):
    async with tls_server(*floor_ca.issue(tmp_path, "elsewhere", hosts=("kafka-7.floor.example",))) as addr:
        problem = await tls_problem([addr], "SASL_SSL", str(floor_ca.pem))
    assert problem is not None and "its certificate does not name '127.0.0.1'" in problem
    assert "IP address mismatch" in problem


async def test_a_plain_text_listener_is_named_for_a_tls_client(floor_ca: TestCA):
    async with plain_server(b"\x00\x00\x00\x02\x00\x00") as addr:
        problem = await tls_problem([addr], "SASL_SSL", str(floor_ca.pem))
    assert problem is not None and problem.startswith(f"the broker at {addr} ")
    assert "TLS" in problem and "KAFKA_SECURITY_PROTOCOL=SASL_SSL" in problem


async def test_a_silent_listener_is_named_within_the_timeout(floor_ca: TestCA):
    async with plain_server(None) as addr:
        t0 = time.monotonic()
        problem = await tls_problem([addr], "SASL_SSL", str(floor_ca.pem), timeout_s=0.5)
        took = time.monotonic() - t0
    assert problem == (f"the broker at {addr} did not complete a TLS handshake within 0.5 s: not a TLS listener? "
                       "Check KAFKA_BOOTSTRAP_SERVERS and KAFKA_SECURITY_PROTOCOL=SASL_SSL")
    assert took < 5  # bounded, not a hang (the server would hold the connection 30 s)


async def test_a_plain_text_client_is_told_the_listener_speaks_tls(floor_ca: TestCA, tmp_path: Path):
    async with tls_server(*floor_ca.issue(tmp_path, "broker")) as addr:
        problem = await tls_problem([addr], "SASL_PLAINTEXT", None)
    assert problem == (f"the broker at {addr} speaks TLS and this client is configured for SASL_PLAINTEXT (plain "
                       "text): set KAFKA_SECURITY_PROTOCOL=SASL_SSL and KAFKA_SSL_CAFILE (the CA that signed the "
                       "broker's certificate)")


async def test_nothing_listening_is_not_a_tls_matter(floor_ca: TestCA):
    async with plain_server(b"") as addr:
        pass  # closed: nothing listens on that port any more
    assert await tls_problem([addr], "SASL_SSL", str(floor_ca.pem), timeout_s=1) is None


def test_one_context_per_ca_file(floor_ca: TestCA):
    assert client_context(str(floor_ca.pem)) is client_context(str(floor_ca.pem))
