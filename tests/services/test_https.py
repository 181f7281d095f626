"""HTTPS for the pit and the APIs (services/runtime/https.py): the certificate and key checked at start with the
cause named, the pit served over TLS on a real socket, and its session cookie ``Secure`` under HTTPS only."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
from pathlib import Path

import httpx
import pytest

from croupier.pit import serve_pit
from services.runtime.https import HttpsSettingsError, ServerTls, server_tls
from services.runtime.sessions import COOKIE
from tests.services.test_pit_pages import TOKENS, pit_app
from tests.tlscerts import TestCA, make_ca


@pytest.fixture
def ca(tmp_path: Path) -> TestCA:
    return make_ca(tmp_path, "pit-ca")


def test_neither_option_is_plain_http_and_the_environment_is_read(ca: TestCA, tmp_path: Path):
    assert server_tls(None, None) is None
    cert, key = ca.issue(tmp_path, "pit")
    assert server_tls(None, None, {"CROUPIER_TLS_CERT": str(cert), "CROUPIER_TLS_KEY": str(key)}) == ServerTls(
        str(cert), str(key))


def test_bad_pairs_are_refused_with_the_cause(ca: TestCA, tmp_path: Path):
    cert, key = ca.issue(tmp_path, "pit")
    _, other_key = ca.issue(tmp_path, "other")
    stale, stale_key = ca.issue(tmp_path, "stale", not_before_days=30, days=-2)
    cases = [
        ((cert, None), "HTTPS needs both --tls-cert (CROUPIER_TLS_CERT) and --tls-key (CROUPIER_TLS_KEY); got only "
                       "the certificate"),
        ((tmp_path / "nope.pem", key), f"--tls-cert {tmp_path / 'nope.pem'}: no such file"),
        ((cert, other_key), f"--tls-key {other_key} is not the private key of --tls-cert {cert}"),
        ((key, key), f"--tls-cert {key} / --tls-key {key}: not a PEM certificate and key"),
    ]
    for (c, k), message in cases:
        with pytest.raises(HttpsSettingsError) as err:
            server_tls(c, k)
        assert str(err.value).startswith(message), str(err.value)
    with pytest.raises(HttpsSettingsError, match=rf"--tls-cert {stale} expired on \d{{4}}-\d\d-\d\d \d\d:\d\d UTC"):
        server_tls(stale, stale_key)
    early = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3)
    with pytest.raises(HttpsSettingsError, match="is not valid before"):
        server_tls(cert, key, now=early)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_pit_serves_https_and_its_cookie_is_secure_there_only(ca: TestCA, tmp_path: Path):
    tls = server_tls(*ca.issue(tmp_path, "pit"))
    pit, _ = pit_app()
    port, stop = _free_port(), asyncio.Event()
    server = asyncio.create_task(serve_pit(pit, "127.0.0.1", port, stop, tls=tls))
    base = f"https://127.0.0.1:{port}"
    trust = ssl.create_default_context(cafile=str(ca.pem))
    try:
        async with httpx.AsyncClient(base_url=base, verify=trust, follow_redirects=False) as c:
            for _ in range(100):
                try:
                    r = await c.get("/login")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.05)
            assert r.status_code == 200 and r.url.scheme == "https"
            r = await c.post("/login", content=f"token={TOKENS['pit']}&next=/",
                             headers={"Origin": base, "Content-Type": "application/x-www-form-urlencoded"})
            assert r.status_code == 303, r.text
            cookie = r.headers["set-cookie"]
            assert cookie.startswith(f"{COOKIE}=") and "; Secure" in cookie and "HttpOnly" in cookie
            r = await c.post("/logout", headers={"Origin": base})
            assert "; Secure" in r.headers["set-cookie"]
        # plain HTTP to the HTTPS port gets no page; a client trusting another CA refuses the server
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as plain:
            with pytest.raises(httpx.HTTPError):
                (await plain.get("/login")).raise_for_status()
        other = ssl.create_default_context(cafile=str(make_ca(tmp_path, "stranger").pem))
        async with httpx.AsyncClient(base_url=base, verify=other) as wary:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await wary.get("/login")
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)
    # the same app over plain HTTP (the demo on 127.0.0.1): the cookie cannot be Secure there
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=pit.app), base_url="http://pit.test") as c:
        r = await c.post("/login", content=f"token={TOKENS['pit']}&next=/",
                         headers={"Origin": "http://pit.test", "Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 303 and "Secure" not in r.headers["set-cookie"]


def test_the_commands_refuse_a_bad_pair_before_anything_connects(ca: TestCA, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from croupier.cli import app

    cert, _ = ca.issue(tmp_path, "pit")
    _, other_key = ca.issue(tmp_path, "other")
    for role, token in TOKENS.items():
        monkeypatch.setenv(f"CROUPIER_API_TOKEN_{role.upper()}", token)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # never dialled: the check comes first
    for args in (["api", "--tls-cert", str(cert)], ["pit", "--tls-cert", str(cert), "--tls-key", str(other_key)],
                 ["table", "api", "--tls-key", str(other_key)], ["serve", "--tls-cert", str(cert), "--tls-key",
                                                                 str(other_key), "--api-port", "18299"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert ("HTTPS needs both" in r.output or "is not the private key of --tls-cert" in r.output), (args, r.output)
