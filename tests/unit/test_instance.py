"""``CROUPIER_INSTANCE`` defaults to the host name (issue 11): each container replica of a service has its
own, so ``docker compose up --scale dealing=3`` gives three instances three labels in the logs."""

from __future__ import annotations

import socket

from services.runtime.settings import Settings


def test_the_instance_is_the_host_name_unless_set(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "3f2c9a1b7d4e")  # a container's id as its host name
    assert Settings.from_env({}).instance == "3f2c9a1b7d4e"
    assert Settings.from_env({"CROUPIER_INSTANCE": ""}).instance == "3f2c9a1b7d4e"  # empty: as unset
    assert Settings.from_env({"CROUPIER_INSTANCE": "dealing-2"}).instance == "dealing-2"
    assert Settings().instance == "3f2c9a1b7d4e"
    monkeypatch.setattr(socket, "gethostname", lambda: "a81e00c2f9b3")  # another replica
    assert Settings.from_env({}).instance == "a81e00c2f9b3"
