"""``croupier topics list|delete`` and :mod:`croupier.topics` on the real broker, under prefixes of their own:
exactly the prefix's topics are listed and deleted (a neighbouring prefix survives), deleting asks first, and
it is refused while a consumer group under the prefix has members."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace

import pytest
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from contracts import topics as T
from croupier.cli import app
from croupier.topics import PrefixInUse, delete_prefix, list_groups, list_topics
from services.runtime.kafka import ensure_topics
from services.runtime.settings import Settings

runner = CliRunner()


def _settings(bootstrap: str, prefix: str) -> Settings:
    return replace(Settings.from_env(), bootstrap_servers=bootstrap, topic_prefix=prefix)


@pytest.fixture
def prefixes(kafka_bootstrap: str):  # type: ignore[no-untyped-def]
    """A floor's topics under a fresh prefix P, and under P's neighbour ``P2.`` (the same text and more)."""
    base = f"opstop{uuid.uuid4().hex[:8]}"
    mine, neighbour = _settings(kafka_bootstrap, f"{base}."), _settings(kafka_bootstrap, f"{base}2.")
    for s in (mine, neighbour):
        asyncio.run(ensure_topics(s, T.ALL_TOPICS))
    yield mine, neighbour
    for s in (mine, neighbour):
        asyncio.run(delete_prefix(s, s.topic_prefix, refuse_if_running=False))


def test_list_then_delete_exactly_the_prefix_topics(prefixes):  # type: ignore[no-untyped-def]
    mine, neighbour = prefixes
    boot, base = mine.bootstrap_servers, mine.topic_prefix.rstrip(".")
    expected = sorted(mine.topic(t) for t in T.ALL_TOPICS)

    r = runner.invoke(app, ["topics", "list", "--prefix", base, "--bootstrap", boot])  # the dot is added
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == expected
    assert f"{len(expected)} topic(s) and 0 consumer group(s) under prefix {mine.topic_prefix!r}" in r.stderr

    r = runner.invoke(app, ["topics", "delete", "--prefix", base, "--bootstrap", boot], input="n\n")
    assert r.exit_code == 1 and "nothing deleted" in r.stderr, r.output
    assert f"Delete {len(expected)} topic(s) under prefix {mine.topic_prefix!r}" in r.stderr
    assert asyncio.run(list_topics(mine, mine.topic_prefix)) == expected

    r = runner.invoke(app, ["topics", "delete", "--prefix", base, "--bootstrap", boot], input="y\n")
    assert r.exit_code == 0, r.output
    assert f"deleted {len(expected)} topic(s) and 0 consumer group(s) under prefix {mine.topic_prefix!r}" in r.stderr
    assert asyncio.run(list_topics(mine, mine.topic_prefix)) == []
    assert asyncio.run(list_topics(neighbour, neighbour.topic_prefix)) == sorted(
        neighbour.topic(t) for t in T.ALL_TOPICS)

    r = runner.invoke(app, ["topics", "delete", "--prefix", base, "--bootstrap", boot, "--yes"])
    assert r.exit_code == 0 and "nothing to delete" in r.stderr, r.output


async def test_delete_is_refused_while_a_service_group_has_members_then_deletes_the_group(kafka_bootstrap: str):
    settings = _settings(kafka_bootstrap, f"opsgrp{uuid.uuid4().hex[:8]}.")
    prefix = settings.topic_prefix
    await ensure_topics(settings, [T.SHOE_COMMANDS, T.SHOE_EVENTS])
    group = settings.group("shoe")  # what a running shoe service's group is named
    consumer = AIOKafkaConsumer(settings.topic(T.SHOE_COMMANDS), **settings.client_options(), group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        for _ in range(150):  # joined once it has its partitions
            await consumer.getmany(timeout_ms=100)
            if consumer.assignment():
                break
        assert consumer.assignment()
        assert await list_groups(settings, prefix) == [group]
        with pytest.raises(PrefixInUse, match=f"consumer groups with members: {group}"):
            await delete_prefix(settings, prefix)
        assert len(await list_topics(settings, prefix)) == 2  # nothing deleted
    finally:
        await consumer.stop()  # leaves the group
    # a served prefix has a group per service: three more, joined and left (the broker describes several
    # groups in one request in a form aiokafka misreads, so each is described alone)
    others = [settings.group(s) for s in ("dealing", "wagering", "settlement")]
    for g in others:
        c = AIOKafkaConsumer(settings.topic(T.SHOE_EVENTS), **settings.client_options(), group_id=g,
                             enable_auto_commit=False)
        await c.start()
        try:
            for _ in range(150):
                await c.getmany(timeout_ms=100)
                if c.assignment():
                    break
        finally:
            await c.stop()
    assert await list_groups(settings, prefix) == sorted([group, *others])
    deleted = await delete_prefix(settings, prefix)
    assert deleted.topics == sorted(settings.topic(t) for t in (T.SHOE_COMMANDS, T.SHOE_EVENTS))
    assert (deleted.groups, deleted.notes) == (sorted([group, *others]), [])
    assert await list_topics(settings, prefix) == [] and await list_groups(settings, prefix) == []
