"""HTTPS for the web servers (the pit app, the query API, the command API): a certificate and key, checked at start.

``croupier pit``, ``croupier api``, ``croupier serve --api-port`` and ``croupier table api`` take ``--tls-cert``
and ``--tls-key`` (or ``CROUPIER_TLS_CERT`` / ``CROUPIER_TLS_KEY``): both or neither. :func:`server_tls` checks the
pair before anything starts and raises :class:`HttpsSettingsError` naming the cause (a missing file, a key that
is not the certificate's, a certificate that has expired or is not valid yet, not PEM at all);
:func:`services.runtime.ops.serve_http` then serves over TLS (uvicorn; TLS 1.2 at least). The pit's session
cookie is ``Secure`` on every HTTPS request (also behind a TLS-terminating reverse proxy on this host that sends
``X-Forwarded-Proto: https``: uvicorn trusts it from 127.0.0.1). Without a pair the servers speak plain HTTP,
which is for 127.0.0.1 (the demo) or behind such a proxy.
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_CERT = "CROUPIER_TLS_CERT"
ENV_KEY = "CROUPIER_TLS_KEY"


class HttpsSettingsError(ValueError):
    """The web server's certificate and key cannot be served (the message names the file and the cause)."""


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The web server's certificate chain (PEM, the server's certificate first) and private key (PEM)."""

    certfile: str
    keyfile: str

    def uvicorn_options(self) -> dict[str, Any]:
        """``uvicorn.Config`` keyword arguments: the files, TLS 1.2 at least."""
        return {"ssl_certfile": self.certfile, "ssl_keyfile": self.keyfile,
                "ssl_version": ssl.PROTOCOL_TLS_SERVER}


def _not_after(certfile: str) -> tuple[dt.datetime, dt.datetime]:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(Path(certfile).read_bytes())
    return cert.not_valid_before_utc, cert.not_valid_after_utc


def server_tls(cert: str | Path | None, key: str | Path | None, environ: Mapping[str, str] | None = None,
               now: dt.datetime | None = None) -> ServerTls | None:
    """The checked pair from the options, else from ``CROUPIER_TLS_CERT`` / ``CROUPIER_TLS_KEY`` of ``environ``
    (None: not read); None when neither is given. ``now``: the time the validity is checked at (default: the
    clock). Raises :class:`HttpsSettingsError` for one without the other, a file that cannot be read, a key that
    does not match the certificate, an expired or not yet valid certificate, or files that are not PEM."""
    env = environ or {}
    cert = str(cert) if cert else (env.get(ENV_CERT, "").strip() or None)
    key = str(key) if key else (env.get(ENV_KEY, "").strip() or None)
    if not cert and not key:
        return None
    if not cert or not key:
        raise HttpsSettingsError(f"HTTPS needs both --tls-cert ({ENV_CERT}) and --tls-key ({ENV_KEY}); got only "
                                 f"{'the certificate' if cert else 'the key'}")
    for what, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise HttpsSettingsError(f"{what} {path}: no such file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as e:
        if "KEY_VALUES_MISMATCH" in str(e) or "key values mismatch" in str(e):
            raise HttpsSettingsError(f"--tls-key {key} is not the private key of --tls-cert {cert}") from None
        raise HttpsSettingsError(f"--tls-cert {cert} / --tls-key {key}: not a PEM certificate and key ({e})") from None
    except OSError as e:
        raise HttpsSettingsError(f"--tls-cert {cert} / --tls-key {key}: {e.strerror or e}") from None
    try:
        start, end = _not_after(cert)
    except ValueError as e:
        raise HttpsSettingsError(f"--tls-cert {cert}: not a PEM certificate ({e})") from None
    at = now or dt.datetime.now(dt.timezone.utc)
    if end <= at:
        raise HttpsSettingsError(f"--tls-cert {cert} expired on {end:%Y-%m-%d %H:%M} UTC: browsers refuse it; "
                                 "issue a new one")
    if start > at:
        raise HttpsSettingsError(f"--tls-cert {cert} is not valid before {start:%Y-%m-%d %H:%M} UTC: check the clock")
    return ServerTls(cert, key)


def scheme(tls: ServerTls | None) -> str:
    """``https`` or ``http``: for the URL a server logs."""
    return "https" if tls is not None else "http"


__all__ = ["ENV_CERT", "ENV_KEY", "HttpsSettingsError", "ServerTls", "scheme", "server_tls"]
