"""The simulated floor's ids: commands, shoes and rounds, namespaced by a run id that enters at the edge.

The services drop a command whose id its principal already used (a retry) and refuse a round id already
played (``duplicate_round``), so a floor that deals the same tables again on the same topic prefix needs ids
of its own. They derive from a *run id*, chosen by whoever starts the run (``croupier demo --run-id``, or a
uuid made there), never drawn here: the same run id and table give the same ids.

With a run id ``r`` at table ``T``: command *n* is ``T:r:cmd:n``, shoe *k* ``T-r-shoe-k``, round *m* of a
shoe ``<shoe id>-round-m``. Without one (``""``: tests and benches on a prefix of their own) the ids are the
historical ``T:cmd:n`` and ``T-shoe-k``.
"""

from __future__ import annotations

import re

#: a run id: 1-32 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit (so every id built
#: from it stays within the command ids' pattern and 128 characters, ``contracts.bounds``)
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
MAX_RUN_ID = 32


class BadRunId(ValueError):
    """A run id outside :data:`RUN_ID_PATTERN`."""


def check_run_id(run_id: str) -> str:
    """``run_id`` itself if it matches :data:`RUN_ID_PATTERN`; raises :class:`BadRunId` naming the rule."""
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise BadRunId(f"run id {run_id!r} must be 1-{MAX_RUN_ID} letters, digits, '.', '_' or '-', starting with a "
                       "letter or digit")
    return run_id


def command_id(table_id: str, run_id: str, n: int) -> str:
    """The id of the ``n``-th command (1-based) the floor sends at ``table_id`` in run ``run_id``."""
    return f"{table_id}:{run_id}:cmd:{n}" if run_id else f"{table_id}:cmd:{n}"


def shoe_id(table_id: str, run_id: str, number: int) -> str:
    """The id of the ``number``-th shoe (1-based) of run ``run_id`` at ``table_id``."""
    return f"{table_id}-{run_id}-shoe-{number}" if run_id else f"{table_id}-shoe-{number}"


def round_id(shoe: str, n: int) -> str:
    """The id of the ``n``-th round (1-based) dealt from shoe ``shoe``."""
    return f"{shoe}-round-{n}"


def shift_id(table_id: str, run_id: str, number: int) -> str:
    """The id of the ``number``-th cage shift (1-based) of run ``run_id`` at ``table_id``."""
    return f"{table_id}-{run_id}-shift-{number}" if run_id else f"{table_id}-shift-{number}"
