"""TLS to the broker: the client's SSL context, and why a connection was refused (named, never a hang).

:func:`client_context` builds the one ``ssl.SSLContext`` every Kafka client of a process uses for a CA file
(``KAFKA_SSL_CAFILE``; the system's trusted CAs without one): the broker's certificate must chain to that CA
and name the host the client dialled (``check_hostname``), TLS 1.2 at least (1.3 where both ends have it).

aiokafka reports a refused handshake only as "Unable to bootstrap from [...]" (the cause goes to its log), so
:func:`tls_problem` dials each bootstrap server itself, within ``timeout_s``, and says what is wrong: the
certificate is not signed by the CA in the CA file, has expired, names another host; the server does not speak
TLS; or, for a client configured for plain text, the server speaks TLS. :func:`check_broker_tls` raises
:class:`BrokerTlsError` with that sentence. A server that cannot be reached at all is not a TLS problem
(``None``): the callers' own retry or "cannot reach" error covers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import Sequence

#: the protocols that run inside TLS
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class BrokerTlsError(RuntimeError):
    """The broker's TLS does not match this client's settings (the message names the cause and the setting to
    change): refused at start, never retried (not an ``OSError``, so no "broker unreachable" retry loop takes it
    for one)."""


class CaFileError(ValueError):
    """``KAFKA_SSL_CAFILE`` cannot be read or holds no certificate."""


@functools.lru_cache(maxsize=8)
def client_context(cafile: str | None) -> ssl.SSLContext:
    """The client SSL context for ``cafile`` (PEM, one or more CA certificates; None: the system's CAs),
    shared by every client of the process: ``CERT_REQUIRED``, ``check_hostname``, TLS 1.2 minimum. Raises
    :class:`CaFileError` naming the file when it cannot be read or holds no certificate."""
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except FileNotFoundError:
        raise CaFileError(f"KAFKA_SSL_CAFILE={cafile}: no such file") from None
    except PermissionError:
        raise CaFileError(f"KAFKA_SSL_CAFILE={cafile}: permission denied") from None
    except (ssl.SSLError, OSError) as e:
        raise CaFileError(f"KAFKA_SSL_CAFILE={cafile}: not a PEM file of CA certificates ({e})") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def _split(server: str) -> tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port or 9092)


def _verify_cause(err: ssl.SSLCertVerificationError, host: str, cafile: str | None) -> str:
    """A sentence for a failed certificate check (OpenSSL's verify codes, ``X509_V_ERR_*``)."""
    code, msg = err.verify_code, err.verify_message or str(err)
    trust = f"the CA in KAFKA_SSL_CAFILE={cafile}" if cafile else "the system's trusted CAs (KAFKA_SSL_CAFILE unset)"
    if code in (2, 19, 20, 21):  # unable to get issuer / self-signed in chain / local issuer / leaf
        return (f"its certificate is not signed by {trust} ({msg}): point KAFKA_SSL_CAFILE at the CA that "
                "signed the broker's certificate (kafka.sh: <data dir>/tls/ca.pem)")
    if code == 10:
        return f"its certificate has expired ({msg}): issue a new one (kafka.sh start re-issues it)"
    if code == 9:
        return f"its certificate is not valid yet ({msg}): check both clocks"
    if code == 62 or "hostname" in msg.lower() or "ip address mismatch" in msg.lower():
        return (f"its certificate does not name {host!r} ({msg}): connect by a name the certificate carries "
                "(kafka.sh's: 127.0.0.1 or localhost) or issue one for this name")
    return f"its certificate was refused ({msg})"


async def _handshake(host: str, port: int, ctx: ssl.SSLContext, server_hostname: str | None,
                     timeout_s: float) -> None:
    _, writer = await asyncio.wait_for(
        asyncio.open_connection(host, port, ssl=ctx, server_hostname=server_hostname,
                                ssl_handshake_timeout=timeout_s), timeout_s)
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def _reachable(host: str, port: int, timeout_s: float) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return True


async def tls_problem(servers: Sequence[str], protocol: str, cafile: str | None, *,
                      context: ssl.SSLContext | None = None, timeout_s: float = 5.0) -> str | None:
    """Why a client with ``protocol`` (and, for TLS, ``context`` or the context of ``cafile``) cannot talk to
    the first of ``servers`` (``host:port``) that accepts a TCP connection; None when the TLS handshake
    succeeds, when it is not a TLS matter, or when none can be reached. At most about ``timeout_s`` seconds
    per server (a server that accepts and says nothing is named, never waited on for ever)."""
    for server in servers:
        host, port = _split(server)
        if not await _reachable(host, port, timeout_s):
            continue
        where = f"the broker at {host}:{port}"
        if protocol in TLS_PROTOCOLS:
            ctx = context or client_context(cafile)
            try:
                await _handshake(host, port, ctx, host, timeout_s)
            except ssl.SSLCertVerificationError as e:
                return f"{where} was refused: {_verify_cause(e, host, cafile)}"
            except ssl.SSLError as e:
                return (f"{where} does not speak TLS ({e.reason or e}): a plain-text listener? Check "
                        f"KAFKA_BOOTSTRAP_SERVERS and KAFKA_SECURITY_PROTOCOL={protocol}")
            except (asyncio.TimeoutError, TimeoutError):
                return (f"{where} did not complete a TLS handshake within {timeout_s:g} s: not a TLS listener? "
                        f"Check KAFKA_BOOTSTRAP_SERVERS and KAFKA_SECURITY_PROTOCOL={protocol}")
            except (ConnectionError, OSError) as e:
                return (f"{where} closed the connection during the TLS handshake ({type(e).__name__}): not a "
                        f"TLS listener? Check KAFKA_SECURITY_PROTOCOL={protocol}")
            return None
        # a plain-text client: does the listener want TLS? (asked only after a failure: a plain broker would
        # log a ClientHello as an oversized request)
        probe = ssl.create_default_context()
        probe.check_hostname = False
        probe.verify_mode = ssl.CERT_NONE
        try:
            await _handshake(host, port, probe, None, timeout_s)
        except (ssl.SSLError, OSError, asyncio.TimeoutError, TimeoutError):
            return None
        tls = "SASL_SSL" if protocol.startswith("SASL") else "SSL"
        return (f"{where} speaks TLS and this client is configured for {protocol} (plain text): set "
                f"KAFKA_SECURITY_PROTOCOL={tls} and KAFKA_SSL_CAFILE (the CA that signed the broker's certificate)")
    return None


async def check_broker_tls(servers: Sequence[str], protocol: str, cafile: str | None, *,
                           context: ssl.SSLContext | None = None, timeout_s: float = 5.0) -> None:
    """Raise :class:`BrokerTlsError` when :func:`tls_problem` finds one."""
    problem = await tls_problem(servers, protocol, cafile, context=context, timeout_s=timeout_s)
    if problem is not None:
        raise BrokerTlsError(problem)


__all__ = ["TLS_PROTOCOLS", "BrokerTlsError", "CaFileError", "check_broker_tls", "client_context", "tls_problem"]
