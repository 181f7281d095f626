"""The Croupier services: shoe, dealing, wagering, settlement, cage (and projection), plus shared runtime."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from services.runtime.app import Service
    from services.runtime.settings import Settings

#: the services ``croupier serve`` can run, in start order
NAMES = ("shoe", "dealing", "wagering", "settlement", "projection", "cage")


def create(name: str, settings: "Settings | None" = None) -> "Service":
    """Build the named service (``services.<name>.app.create``). Raises ``KeyError`` for an unknown name."""
    if name not in NAMES:
        raise KeyError(f"unknown service {name!r}; known: {', '.join(NAMES)}")
    module = importlib.import_module(f"services.{name}.app")
    return module.create(settings)  # type: ignore[no-any-return]
