"""Who may read what from the query API: one bearer credential per role, never from the command line.

Roles (issue 9, finding 10):

============== ==========================================================================================
role           may read
============== ==========================================================================================
``dealer``     the public views (like anyone with a credential)
``bettor``     the public views (like anyone with a credential)
``analyst``    the public views (tables, public odds, roads); no player ids, balances or ledgers
``cage``       + ledgers and balances (player ids)
``pit``        + ledgers and balances (player ids)
``surveillance`` + ledgers and balances, the surveillance odds (true remaining composition), alerts and
               player surveillance
============== ==========================================================================================

The state digest (``/digest``, a SHA-256 of the whole projection state, to compare a replica with the live
service) is read by the ``analyst`` and ``surveillance`` roles; the operations endpoints (``/health``,
``/health/live``, ``/health/ready``, ``/metrics``) need no credential and hold no player data.

Credentials (shared with the command API, :mod:`services.runtime.credentials`) come from the environment (``CROUPIER_API_TOKEN_<ROLE>``, e.g. ``CROUPIER_API_TOKEN_CAGE``) or
from a file named by ``CROUPIER_API_TOKENS_FILE`` with one ``role=token`` a line (``#`` comments; keep it
mode 600); the environment wins over the file for a role set in both. Tokens are compared with
:func:`hmac.compare_digest`. There is no default credential: :func:`load_tokens` raises
:class:`NoCredentials` when none is configured, so the API refuses to start.
"""

from __future__ import annotations

from services.runtime.credentials import (
    ENV_FILE,
    ENV_PREFIX,
    MIN_TOKEN_LENGTH,
    ROLES,
    BadCredentials,
    NoCredentials,
    load_tokens,
    read_tokens_file,
    role_of,
    write_ephemeral_tokens,
)

#: roles that may see player ids, balances and ledgers
LEDGER_ROLES = frozenset({"cage", "pit", "surveillance"})
#: roles that may see the surveillance view, alerts and player surveillance
SURVEILLANCE_ROLES = frozenset({"surveillance"})
#: roles that may read the state digest (``/digest``)
DIGEST_ROLES = frozenset({"analyst", "surveillance"})

__all__ = ["DIGEST_ROLES", "ENV_FILE", "ENV_PREFIX", "LEDGER_ROLES", "MIN_TOKEN_LENGTH", "ROLES",
           "SURVEILLANCE_ROLES", "BadCredentials", "NoCredentials", "load_tokens", "read_tokens_file",
           "role_of", "write_ephemeral_tokens"]
