"""The connection settings of the principals the command API writes as (``console``, ``bettor``) on a secured
broker, from the environment or the credentials file ``kafka.sh start --secure`` writes."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from services.runtime.settings import Settings


class MissingWriterCredential(ValueError):
    """On a secured broker, no password for a principal the command API writes as."""


def writer_settings(base: Settings, environ: Mapping[str, str] | None = None,
                    kinds: Iterable[str] = ("console", "bettor")) -> dict[str, Settings]:
    """Connection settings per writer principal kind the command API writes as (``kinds``: ``console``,
    ``bettor``; only those it will write, e.g. the one of a single command-line action).

    On a plain broker: ``{}`` (everything is written with ``base``). On a secured one each kind connects as
    its own principal with the password from ``CROUPIER_KAFKA_PASSWORD_<KIND>`` or from the
    ``KAFKA_CREDENTIALS_FILE`` that ``infra/kafka/kafka.sh start --secure`` writes (``NAME=value`` lines);
    ``base`` itself serves a kind it already connects as. Raises :class:`MissingWriterCredential` naming the
    variable for a kind with no password (a clear error at start, not a refused write later)."""
    env = os.environ if environ is None else environ
    if not base.secured:
        return {}
    known: dict[str, str] = {}
    path = env.get("KAFKA_CREDENTIALS_FILE", "")
    if path:
        try:
            for line in Path(path).read_text().splitlines():
                k, sep, v = line.strip().partition("=")
                if sep and k.startswith("CROUPIER_KAFKA_PASSWORD_"):
                    known[k] = v
        except OSError as e:
            raise MissingWriterCredential(f"KAFKA_CREDENTIALS_FILE={path}: {e.strerror or e}") from None
    known.update({k: v for k, v in env.items() if k.startswith("CROUPIER_KAFKA_PASSWORD_") and v})
    out: dict[str, Settings] = {}
    for kind in kinds:
        var = f"CROUPIER_KAFKA_PASSWORD_{kind.upper()}"
        if known.get(var):
            out[kind] = base.as_principal(kind, known[var], base.sasl_mechanism or "SCRAM-SHA-512")
        elif base.sasl_username == kind:
            out[kind] = base
        else:
            raise MissingWriterCredential(
                f"the command API writes {'wagering.bets' if kind == 'bettor' else 'the console topics'} as "
                f"the {kind} principal: set {var} or KAFKA_CREDENTIALS_FILE (kafka.sh start --secure prints it)")
    return out

