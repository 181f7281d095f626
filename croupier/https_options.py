"""The ``--tls-cert`` / ``--tls-key`` options of the commands that serve HTTP (``pit``, ``api``, ``serve
--api-port``, ``table api``), and their check (:func:`services.runtime.https.server_tls`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:  # services.runtime.https (and ssl) load only when a command serves HTTPS
    from services.runtime.https import ServerTls

#: the environment variables of the options: services.runtime.https.ENV_CERT / ENV_KEY (a test checks they agree;
#: not imported from there, so that ``croupier --help`` loads no ssl)
ENV_CERT = "CROUPIER_TLS_CERT"
ENV_KEY = "CROUPIER_TLS_KEY"

TLS_CERT_HELP = ("Serve HTTPS with this certificate chain (PEM; with --tls-key). Without: plain HTTP, for 127.0.0.1 "
                 "or behind a TLS-terminating reverse proxy (docs/tls.md).")
TLS_KEY_HELP = "The private key (PEM) of --tls-cert."
TlsCertOpt = Annotated[Optional[Path], typer.Option("--tls-cert", envvar=ENV_CERT, help=TLS_CERT_HELP)]
TlsKeyOpt = Annotated[Optional[Path], typer.Option("--tls-key", envvar=ENV_KEY, help=TLS_KEY_HELP)]


def server_tls_or_fail(cert: Optional[Path], key: Optional[Path]) -> ServerTls | None:
    """The checked HTTPS pair, None for neither; ``error: <cause>`` and exit 2 for one without the other, a missing
    file, a key that is not the certificate's, an expired or not yet valid certificate."""
    from croupier.cli_common import fail
    from services.runtime.https import HttpsSettingsError, server_tls

    try:
        return server_tls(cert, key)
    except HttpsSettingsError as e:
        raise fail(str(e)) from None
