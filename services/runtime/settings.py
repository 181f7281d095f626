"""Service settings from the environment (the edge: nothing below reads os.environ)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the broker is and how topics and groups are named.

    ``topic_prefix`` is prepended to every topic name (tests use a unique prefix per run, production none);
    ``group_prefix`` likewise for consumer groups and transactional ids.
    """

    bootstrap_servers: str = DEFAULT_BOOTSTRAP
    topic_prefix: str = ""
    group_prefix: str = "croupier"
    instance: str = "0"
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "Settings":
        """``KAFKA_BOOTSTRAP_SERVERS``, ``CROUPIER_TOPIC_PREFIX``, ``CROUPIER_GROUP_PREFIX``,
        ``CROUPIER_INSTANCE``."""
        return cls(
            bootstrap_servers=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
            topic_prefix=os.environ.get("CROUPIER_TOPIC_PREFIX", ""),
            group_prefix=os.environ.get("CROUPIER_GROUP_PREFIX", "croupier"),
            instance=os.environ.get("CROUPIER_INSTANCE", "0"),
        )

    def topic(self, name: str) -> str:
        """The full topic name for a base name from :mod:`contracts.topics`."""
        return f"{self.topic_prefix}{name}"

    def base(self, topic: str) -> str:
        """The base name of a full topic name."""
        return topic[len(self.topic_prefix):] if topic.startswith(self.topic_prefix) else topic

    def group(self, service: str) -> str:
        """Consumer group of a service."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}"

    def transactional_id(self, service: str) -> str:
        """Transactional id of a service instance (a restarted instance fences its zombie)."""
        return f"{self.group_prefix}.{self.topic_prefix}{service}.{self.instance}"
