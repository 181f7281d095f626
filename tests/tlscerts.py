"""Throw-away CAs and certificates for the TLS tests (``cryptography``; EC P-256, made in milliseconds).

``make_ca(dir, name)`` writes ``<name>.pem`` (the CA certificate) and keeps its key; ``ca.issue(dir, name,
hosts=..., days=...)`` writes ``<name>.pem`` and ``<name>.key`` for a server certificate whose SAN holds
``hosts`` (IP addresses as IP entries, the rest as DNS names), valid from ``not_before_days`` ago for ``days``
days (a negative end makes an expired one).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Croupier tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


@dataclass
class TestCA:
    """A CA: its certificate file and key."""

    __test__ = False  # not a pytest class
    pem: Path
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    def issue(self, directory: Path, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), *,
              not_before_days: float = 1, days: float = 30) -> tuple[Path, Path]:
        """A server certificate signed by this CA: ``(cert.pem, key.pem)`` in ``directory``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.timezone.utc)
        start = now - dt.timedelta(days=not_before_days)
        cert = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(self.cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(self.key, hashes.SHA256()))
        cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_path, key_path


def make_ca(directory: Path, name: str = "ca") -> TestCA:
    """A self-signed CA valid for a year, its certificate in ``directory/<name>.pem``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(f"test CA {name}")).issuer_name(_name(f"test CA {name}"))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=2)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    pem = directory / f"{name}.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return TestCA(pem, key, cert)
