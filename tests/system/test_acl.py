"""Identity and authorisation on the secured broker (``kafka.sh start --secure``, ACLs of infra/kafka/acls.py).

Each test connects under one principal with its generated password and checks the broker's own answer:
error 29 (``TOPIC_AUTHORIZATION_FAILED``) for a topic it may not touch, error 0 and the records for one it may.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAuthorizationFailedError, for_code

from contracts import topics as T
from services.runtime.settings import Settings
from tests.system.secured import SecuredBroker

#: the base topics these tests use, created once by the admin with the contracts' partition count
USED = (T.SHOE_VAULT, T.SHOE_EVENTS, T.DEALING_EVENTS, T.DEALING_COMMANDS, T.WAGERING_COMMANDS,
        T.WAGERING_EVENTS, T.SHOE_COMMANDS, T.SHOE_DRAWS, T.WAGERING_BETS)


@pytest.fixture
async def secured(secured_kafka: SecuredBroker) -> AsyncIterator[SecuredBroker]:
    admin = AIOKafkaAdminClient(**secured_kafka.settings("admin").client_options())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        parts = secured_kafka.settings("admin").partitions  # CROUPIER_PARTITIONS, as the services expect
        new = [NewTopic(secured_kafka.prefix + n, parts, 1) for n in USED
               if secured_kafka.prefix + n not in existing]
        if new:
            await admin.create_topics(new)
    finally:
        await admin.close()
    yield secured_kafka


async def _describe_errors(settings: Settings, bases: tuple[str, ...]) -> dict[str, type]:
    """The broker's error class per topic for a metadata request under ``settings``'s principal."""
    admin = AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        described = await admin.describe_topics([settings.topic(b) for b in bases])
    finally:
        await admin.close()
    return {settings.base(d["topic"]): for_code(d["error_code"]) for d in described}


async def _send(settings: Settings, base: str, value: bytes, **producer: object) -> None:
    p = AIOKafkaProducer(**settings.client_options(), **producer)  # type: ignore[arg-type]
    await p.start()
    try:
        await p.send_and_wait(settings.topic(base), value, key=b"T1")
    finally:
        await p.stop()


async def _read_all(settings: Settings, base: str) -> list[bytes]:
    """Every committed record of ``base`` (all partitions), read as ``settings``'s principal, no group."""
    c = AIOKafkaConsumer(**settings.client_options(), enable_auto_commit=False, auto_offset_reset="earliest",
                         isolation_level="read_committed")
    await c.start()
    try:
        tps = [TopicPartition(settings.topic(base), p) for p in range(settings.partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        end = await c.end_offsets(tps)
        out: list[bytes] = []
        pending = [tp for tp in tps if end[tp] > 0]
        while pending:
            for records in (await c.getmany(*pending, timeout_ms=1000)).values():
                out.extend(r.value for r in records)
            pending = [tp for tp in pending if await c.position(tp) < end[tp]]
        return out
    finally:
        await c.stop()


async def test_the_shoe_service_writes_and_reads_its_vault_in_a_transaction(secured: SecuredBroker):
    shoe = secured.settings("shoe")
    secret = b"sealed shoe order T1-shoe-1"
    p = AIOKafkaProducer(**shoe.client_options(), transactional_id=shoe.transactional_id("shoe"),
                         enable_idempotence=True)
    await p.start()
    try:
        async with p.transaction():
            await p.send(shoe.topic(T.SHOE_VAULT), secret, key=b"T1")
    finally:
        await p.stop()
    assert (await _describe_errors(shoe, (T.SHOE_VAULT,)))[T.SHOE_VAULT] is for_code(0)
    assert secret in await _read_all(shoe, T.SHOE_VAULT)


async def test_analytics_reads_event_topics_but_not_the_vault_nor_commands(secured: SecuredBroker):
    analytics = secured.settings("analytics")
    await _send(secured.settings("shoe"), T.SHOE_EVENTS, b"an event")
    errors = await _describe_errors(analytics, (T.SHOE_EVENTS, T.DEALING_EVENTS, T.SHOE_VAULT, T.DEALING_COMMANDS))
    assert errors == {T.SHOE_EVENTS: for_code(0), T.DEALING_EVENTS: for_code(0),
                      T.SHOE_VAULT: TopicAuthorizationFailedError,
                      T.DEALING_COMMANDS: TopicAuthorizationFailedError}
    assert b"an event" in await _read_all(analytics, T.SHOE_EVENTS)


async def test_analytics_cannot_write_a_command_topic(secured: SecuredBroker):
    with pytest.raises(TopicAuthorizationFailedError) as err:
        await _send(secured.settings("analytics"), T.DEALING_COMMANDS, b'{"type":"close_betting"}')
    assert secured.prefix + T.DEALING_COMMANDS in str(err.value)
    assert b'{"type":"close_betting"}' not in await _read_all(secured.settings("surveillance"), T.DEALING_COMMANDS)


async def test_each_command_topic_takes_writes_from_its_one_writer_alone(secured: SecuredBroker):
    """The console writes the dealer's topics, a bettor wagering.bets, dealing shoe.draws; nobody else
    (a bettor's "No more bets" on wagering.commands never reaches the log)."""
    await _send(secured.settings("console"), T.WAGERING_COMMANDS, b"console no more bets")
    await _send(secured.settings("bettor"), T.WAGERING_BETS, b"bettor bet")
    await _send(secured.settings("dealing"), T.SHOE_DRAWS, b"draw card")
    for principal, base in (("bettor", T.WAGERING_COMMANDS), ("console", T.WAGERING_BETS),
                            ("dealing", T.SHOE_COMMANDS), ("console", T.SHOE_DRAWS), ("bettor", T.SHOE_COMMANDS),
                            ("wagering", T.WAGERING_COMMANDS), ("dealing", T.DEALING_COMMANDS),
                            ("pit", T.WAGERING_COMMANDS), ("shoe", T.SHOE_COMMANDS), ("shoe", T.SHOE_DRAWS)):
        with pytest.raises(TopicAuthorizationFailedError):
            await _send(secured.settings(principal), base, b"forged")
    surveillance = secured.settings("surveillance")
    # (the prefix is shared with test_floor_secured: its floor's real commands may be there too)
    for base, allowed in ((T.WAGERING_COMMANDS, b"console no more bets"), (T.WAGERING_BETS, b"bettor bet"),
                          (T.SHOE_DRAWS, b"draw card"), (T.SHOE_COMMANDS, None)):
        got = await _read_all(surveillance, base)
        assert b"forged" not in got, base
        assert allowed is None or got.count(allowed) == 1, base


async def test_a_bettor_sees_rounds_and_bets_but_not_the_shoe_nor_other_commands(secured: SecuredBroker):
    errors = await _describe_errors(secured.settings("bettor"), (T.DEALING_EVENTS, T.WAGERING_EVENTS,
                                                                 T.SHOE_VAULT, T.SHOE_EVENTS, T.WAGERING_COMMANDS))
    assert errors == {T.DEALING_EVENTS: for_code(0), T.WAGERING_EVENTS: for_code(0),
                      T.SHOE_VAULT: TopicAuthorizationFailedError, T.SHOE_EVENTS: TopicAuthorizationFailedError,
                      T.WAGERING_COMMANDS: TopicAuthorizationFailedError}


async def test_a_service_cannot_write_another_services_events(secured: SecuredBroker):
    with pytest.raises(TopicAuthorizationFailedError):
        await _send(secured.settings("wagering"), T.DEALING_EVENTS, b'{"type":"round_resolved"}',
                    enable_idempotence=True)
    await _send(secured.settings("wagering"), T.WAGERING_EVENTS, b"own event", enable_idempotence=True)
    assert b'{"type":"round_resolved"}' not in await _read_all(secured.settings("analytics"), T.DEALING_EVENTS)
    assert b"own event" in await _read_all(secured.settings("analytics"), T.WAGERING_EVENTS)


async def test_surveillance_reads_commands_but_not_the_vault(secured: SecuredBroker):
    errors = await _describe_errors(secured.settings("surveillance"), (T.DEALING_COMMANDS, T.SHOE_VAULT))
    assert errors == {T.DEALING_COMMANDS: for_code(0), T.SHOE_VAULT: TopicAuthorizationFailedError}


async def test_a_wrong_password_is_refused(secured: SecuredBroker):
    impostor = replace(secured.settings("shoe"), sasl_password="not-the-password")
    p = AIOKafkaProducer(**impostor.client_options())
    with pytest.raises(KafkaConnectionError):
        await p.start()
    await p.stop()


def test_credentials_are_private_files(secured: SecuredBroker):
    for f in (secured.data_dir / "credentials.env", secured.password_file("shoe"),
              secured.data_dir / "server.properties", secured.data_dir / "admin-client.properties"):
        assert f.stat().st_mode & 0o777 == 0o600, f
    env = (secured.data_dir / "credentials.env").read_text()
    assert f"CROUPIER_KAFKA_PASSWORD_SHOE={secured.password('shoe')}\n" in env
    assert len({secured.password(p) for p in ("admin", "shoe", "dealing", "analytics")}) == 4
