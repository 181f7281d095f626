"""Typer's help renderer without the two Rich renderers ``croupier`` never uses, so that ``croupier --help`` starts
at once (issue 26: ≤ 0.5 s).

``typer.rich_utils`` (what draws every help panel and usage error) imports, at its top, ``rich.markdown`` (with
markdown-it-py) for ``rich_markup_mode="markdown"`` and ``rich.traceback`` (with Pygments) for pretty
exceptions. The app uses neither: its markup mode is ``"rich"`` and ``pretty_exceptions_enable=False``
(:mod:`croupier.cli`). Together they were about a third of the CPU time of ``croupier --help``.

:func:`import_help_renderer` imports ``typer.rich_utils`` with two stand-ins in their place, classes that load the
real Rich class on first use (a call, or an attribute such as ``Traceback.from_exception``), so behaviour is
unchanged if Typer ever does use them; the stand-ins are taken out of ``sys.modules`` at once, so any other
``import rich.markdown`` gets the real module. Checked by ``tests/unit/test_cli_imports.py`` (the help output
itself is checked unchanged by the CLI tests and the generated command reference).
"""

import importlib
import sys
from typing import Any

#: the Rich modules typer.rich_utils imports but croupier's help never renders with, and the class taken of each
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


def _real(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


class _Deferred(type):
    """The metaclass of a stand-in: an attribute the stand-in does not have is the real class's."""

    _module: str
    _name: str

    def __getattr__(cls, attr: str) -> Any:
        return getattr(_real(cls._module, cls._name), attr)


def _stand_in(module: str, name: str) -> type:
    """A class named ``name`` whose instances are the real ``module.name``'s (a type, so that annotations such as
    ``Markdown | Text`` evaluate)."""

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807 - the stand-in's constructor
        return _real(module, name)(*args, **kwargs)

    return _Deferred(name, (), {"_module": module, "_name": name, "__new__": __new__,
                                "__doc__": f"Stand-in for {module}.{name}, loaded on first use."})


def import_help_renderer() -> None:
    """Import ``typer.rich_utils`` without loading :data:`DEFERRED` (those already loaded are used as they are).
    Idempotent; never leaves a stand-in in ``sys.modules``."""
    if "typer.rich_utils" in sys.modules:
        return
    import types

    placed: dict[str, types.ModuleType] = {}
    for module, name in DEFERRED.items():
        if module not in sys.modules:
            stub = types.ModuleType(module, f"Stand-in for {module} while typer.rich_utils imports.")
            setattr(stub, name, _stand_in(module, name))
            placed[module] = sys.modules[module] = stub
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for module, stub in placed.items():
            if sys.modules.get(module) is stub:
                del sys.modules[module]
