"""Encrypted on the wire (issue 29): the secured broker (``kafka.sh start --secure``) speaks SASL_SSL only, and a
client with the wrong trust is refused at start with the cause named, within seconds.

* the right CA (``<data dir>/tls/ca.pem``) works, by IP address and by ``localhost``;
* another CA is refused (aiokafka, a service that would otherwise retry for ever, the CLI);
* host-name verification against another name (the broker reached at 127.0.0.2 through a TCP relay: a
  certificate for 127.0.0.1 and localhost does not name it) is refused;
* a plain-text client (SASL_PLAINTEXT, PLAINTEXT) cannot connect to the TLS listener;
* a capture of the loopback traffic while a table deals two rounds finds neither a player id nor a card in
  the broker's traffic, where the same capture finds both in the same records sent in clear.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError
from typer.testing import CliRunner

from contracts import topics as T
from services.rawlog import read_topic as read_log
from services.runtime.settings import Settings
from services.runtime.tls import BrokerTlsError
from tests.system.capture import LoopbackCapture
from tests.system.secured import SecuredBroker
from tests.tlscerts import make_ca

#: every refusal must come within this (a hang would be the failure)
REFUSED_WITHIN_S = 30.0


async def _connects(settings: Settings) -> list[str]:
    """The topics the broker lists to ``settings``' client (raises what aiokafka raises)."""
    admin = AIOKafkaAdminClient(**settings.client_options(), request_timeout_ms=10_000)
    await admin.start()
    try:
        return list(await admin.list_topics())
    finally:
        await admin.close()


async def _create(settings: Settings, topic: str) -> None:
    admin = AIOKafkaAdminClient(**settings.client_options(), request_timeout_ms=10_000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()


async def _refused(settings: Settings) -> float:
    """Seconds until a producer of ``settings`` fails to start; fails the test if it starts."""
    p = AIOKafkaProducer(**settings.client_options(), request_timeout_ms=5_000)
    t0 = time.monotonic()
    with pytest.raises(KafkaConnectionError):
        await asyncio.wait_for(p.start(), REFUSED_WITHIN_S)
    took = time.monotonic() - t0
    await p.stop()
    return took


async def test_the_right_ca_works_by_address_and_by_name(secured_kafka: SecuredBroker):
    admin = secured_kafka.settings("admin")
    assert admin.security_protocol == "SASL_SSL" and admin.client_options()["ssl_context"].check_hostname
    await admin.check_tls()
    by_name = replace(admin, bootstrap_servers=f"localhost:{secured_kafka.port}")
    await by_name.check_tls()
    assert isinstance(await _connects(by_name), list)
    topic = secured_kafka.prefix + f"tls.{uuid.uuid4().hex[:8]}"
    await _create(admin, topic)
    p = AIOKafkaProducer(**admin.client_options(), enable_idempotence=True)
    await p.start()
    try:
        await p.send_and_wait(topic, b"over TLS", key=b"T1")
    finally:
        await p.stop()
    assert [r.value for r in await read_log(admin, topic)] == [b"over TLS"]


def test_the_ca_and_the_broker_key_are_private_files(secured_kafka: SecuredBroker):
    tls = secured_kafka.data_dir / "tls"
    for f in ("ca.key", "broker.key", "broker.p12", "keystore.password"):
        assert (tls / f).stat().st_mode & 0o777 == 0o600, f
    assert (tls / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert f"KAFKA_SSL_CAFILE={secured_kafka.cafile}\n" in (secured_kafka.data_dir / "credentials.env").read_text()


async def test_another_ca_is_refused_with_the_cause_named(secured_kafka: SecuredBroker, tmp_path: Path):
    other = make_ca(tmp_path, "another-floor")
    wrong = replace(secured_kafka.settings("admin"), ssl_cafile=str(other.pem))
    assert await _refused(wrong) < REFUSED_WITHIN_S
    problem = await wrong.connection_problem()
    assert problem is not None and problem.startswith(f"the broker at 127.0.0.1:{secured_kafka.port} was refused: "
                                                      f"its certificate is not signed by the CA in "
                                                      f"KAFKA_SSL_CAFILE={other.pem}")
    # a service waits for an unreachable broker for ever; a refused certificate stops it at once
    import services

    svc = services.create("settlement", replace(secured_kafka.settings("settlement"), ssl_cafile=str(other.pem)))
    with pytest.raises(BrokerTlsError, match="its certificate is not signed by the CA"):
        await asyncio.wait_for(svc.start(retry_s=float("inf")), REFUSED_WITHIN_S)
    with contextlib.suppress(Exception):
        await svc.stop()


@contextlib.asynccontextmanager
async def relay(to_port: int, host: str = "127.0.0.2") -> AsyncIterator[int]:
    """A TCP relay on ``host`` (another loopback address) to the broker's port: the broker reached by a name its
    certificate does not carry. Yields the relay's port."""
    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        w.close()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        br, bw = await asyncio.open_connection("127.0.0.1", to_port)
        await asyncio.gather(pipe(r, bw), pipe(br, w))

    server = await asyncio.start_server(handle, host, 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_a_broker_reached_by_another_name_is_refused(secured_kafka: SecuredBroker):
    async with relay(secured_kafka.port) as port:
        elsewhere = replace(secured_kafka.settings("admin"), bootstrap_servers=f"127.0.0.2:{port}")
        assert await _refused(elsewhere) < REFUSED_WITHIN_S
        with pytest.raises(BrokerTlsError, match=r"its certificate does not name '127\.0\.0\.2' "
                                                  r"\(IP address mismatch"):
            await elsewhere.check_tls()


async def test_a_plain_text_client_cannot_connect_and_is_told_why(secured_kafka: SecuredBroker):
    sasl_plain = replace(secured_kafka.settings("shoe"), security_protocol="SASL_PLAINTEXT", ssl_cafile=None)
    plain = Settings(bootstrap_servers=secured_kafka.bootstrap)
    for settings in (sasl_plain, plain):
        assert await _refused(settings) < REFUSED_WITHIN_S
    assert await sasl_plain.connection_problem() == (
        f"the broker at 127.0.0.1:{secured_kafka.port} speaks TLS and this client is configured for SASL_PLAINTEXT "
        "(plain text): set KAFKA_SECURITY_PROTOCOL=SASL_SSL and KAFKA_SSL_CAFILE (the CA that signed the broker's "
        "certificate)")


def test_the_cli_names_the_cause(secured_kafka: SecuredBroker, monkeypatch: pytest.MonkeyPatch):
    from croupier.cli import app

    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "surveillance")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD_FILE", str(secured_kafka.password_file("surveillance")))
    monkeypatch.delenv("KAFKA_SASL_PASSWORD", raising=False)
    monkeypatch.delenv("KAFKA_SSL_CAFILE", raising=False)
    t0 = time.monotonic()
    res = CliRunner().invoke(app, ["topics", "list", "--prefix", secured_kafka.prefix,
                                   "--bootstrap", secured_kafka.bootstrap])
    assert res.exit_code == 1, res.output
    assert "speaks TLS and this client is configured for SASL_PLAINTEXT" in res.output
    assert time.monotonic() - t0 < 2 * REFUSED_WITHIN_S


async def _until_found(capture: LoopbackCapture, needle: bytes, seconds: float = 15.0) -> None:
    """Give the capture thread up to ``seconds`` to see ``needle`` (the contrast's bytes were written already)."""
    for _ in range(int(seconds / 0.1)):
        if capture.found(needle):
            return
        await asyncio.sleep(0.1)


async def test_a_capture_of_a_dealt_round_shows_no_player_id_and_no_card(secured_kafka: SecuredBroker):
    import random

    from baccarat.table import punto_banco_full
    from services.floor.bettors import Seat
    from services.floor.dealer import Clock, TableDealer
    from tests.system.test_floor_secured import SecuredFloor

    tag = uuid.uuid4().hex[:10]
    seats = [Seat(i, f"patron-{tag}-{i}") for i in range(1, 4)]
    table = f"TLS{tag[:6]}"
    floor = SecuredFloor(secured_kafka)
    await asyncio.wait_for(floor.start(), 120)
    try:
        with LoopbackCapture({secured_kafka.port, secured_kafka.controller_port}) as cap:
            dealer = TableDealer(floor.io, table, punto_banco_full(), seats, random.Random(11), Clock(), timeout=60,
                                 rounds_per_shoe=2)
            run = await dealer.run(shoes=1)
            assert run.rounds == 2 and run.bets > 0, run
            await asyncio.sleep(0.3)  # the last segments reach the capture thread
    finally:
        await floor.stop()
    # what was written, read back (decrypted) by a client: it holds the player ids and the cards
    surveillance = secured_kafka.settings("surveillance")
    bets = [r.value for r in await read_log(surveillance, surveillance.topic(T.WAGERING_EVENTS), table_id=table)]
    dealt = [r.value for r in await read_log(surveillance, surveillance.topic(T.DEALING_EVENTS), table_id=table)]
    player = seats[0].player_id.encode()
    mine = [v for v in bets if player in v]  # the seats bet in a random order: the first bet may be another's
    assert mine, "the player's bets are in the log"
    cards = sorted({m.group(0) for v in dealt for m in re.finditer(rb'"card":"[^"]+"', v)})
    assert len(cards) >= 3, cards  # at least four cards a round, several distinct
    assert cap.payload_bytes > 10_000, cap.payload_bytes  # the round's traffic was captured
    assert not cap.found(player), "a player id crossed the wire in clear"
    assert [c for c in cards if cap.found(c)] == [], "cards crossed the wire in clear"
    assert not cap.found(table.encode()), "the table id crossed the wire in clear"

    # the contrast: the same capture finds them when the same bytes travel in clear
    sink = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    sink_port = sink.sockets[0].getsockname()[1]
    with LoopbackCapture({sink_port}) as clear:
        _, w = await asyncio.open_connection("127.0.0.1", sink_port)
        for _ in range(5):  # a frame the capture dropped (a busy lo) is written again: the contrast is the bytes
            w.write(b"".join(mine[:1] + dealt[:12]))
            await w.drain()
            await _until_found(clear, player, 3.0)  # a loaded machine's capture thread may lag the write
            if clear.found(player):
                break
        w.close()
    sink.close()
    assert clear.found(player) and clear.found(dealt_card := next(c for c in cards if any(c in v for v in dealt[:12])))
    if secured_kafka.clear_port is not None:  # and on Kafka's wire without TLS (the broker's SASL_PLAINTEXT port)
        admin = secured_kafka.clear_settings("admin")
        topic = secured_kafka.prefix + f"tls.clear.{tag}"
        await _create(admin, topic)
        with LoopbackCapture({secured_kafka.clear_port}) as kafka_clear:
            p = AIOKafkaProducer(**admin.client_options())
            await p.start()
            try:
                for _ in range(3):  # sent again if the capture dropped the frame (as the contrast above)
                    await p.send_and_wait(topic, mine[0] + b"".join(dealt), key=table.encode())
                    await _until_found(kafka_clear, player, 5.0)
                    if kafka_clear.found(player):
                        break
            finally:
                await p.stop()
        assert kafka_clear.found(player) and kafka_clear.found(dealt_card)
