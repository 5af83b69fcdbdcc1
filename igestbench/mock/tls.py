"""Certificates for the local catalogue: real TLS, made on the spot, for loopback names.

``self-signed``: a certificate that is its own issuer (what many partner sites ran);
``ca``: a leaf signed by a throwaway CA (trustme) whose PEM a client can be given (``--ca-file``);
``expired`` and ``wrong-host``: CA-signed leaves that a verifying client must refuse — the suite's
failure diagnosis is tested against them. Files go to a temporary directory the caller owns.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from igestbench.errors import UsageError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
TLS_MODES = ("self-signed", "ca", "expired", "wrong-host")


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path
    #: PEM of the issuing CA a client should trust (the certificate itself when self-signed).
    ca: Path
    mode: str

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(self.cert), str(self.key))
        return ctx


def _self_signed(directory: Path, names: tuple[str, ...]) -> TlsFiles:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = dt.datetime.now(dt.UTC)
    alt: list[x509.GeneralName] = []
    for n in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            alt.append(x509.DNSName(n))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "self-signed.pem", directory / "self-signed.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return TlsFiles(cert_path, key_path, cert_path, "self-signed")


def make_tls(mode: str, directory: Path, names: tuple[str, ...] = LOOPBACK_NAMES) -> TlsFiles:
    """Certificate files for ``mode`` (one of TLS_MODES) written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    if mode == "self-signed":
        return _self_signed(directory, names)
    if mode not in TLS_MODES:
        raise UsageError(f"unknown TLS mode {mode!r}: choose {', '.join(TLS_MODES)} or CERT,KEY")
    ca = trustme.CA()
    if mode == "expired":
        past = dt.datetime.now(dt.UTC) - dt.timedelta(days=10)
        leaf = ca.issue_cert(*names, not_before=past - dt.timedelta(days=30), not_after=past)
    elif mode == "wrong-host":
        leaf = ca.issue_cert("catalogue.invalid")
    else:
        leaf = ca.issue_cert(*names)
    ca_path = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    cert_path, key_path = directory / f"server-{mode}.pem", directory / f"server-{mode}.key"
    with cert_path.open("wb") as out:
        for blob in leaf.cert_chain_pems:
            out.write(blob.bytes())
    leaf.private_key_pem.write_to_path(str(key_path))
    return TlsFiles(cert_path, key_path, ca_path, mode)


def tls_from_option(option: str, directory: Path) -> TlsFiles:
    """``--tls`` value: a mode name, or ``CERT,KEY`` paths of the user's own certificate."""
    if "," in option:
        cert, key = (Path(p) for p in option.split(",", 1))
        for p in (cert, key):
            if not p.is_file():
                raise UsageError(f"--tls: {p} does not exist")
        return TlsFiles(cert, key, cert, "own")
    return make_tls(option, directory)
