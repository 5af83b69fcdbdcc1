"""What a catalogue's certificate is, and whether a client can trust it.

The TLS checks look at one property each (chain, expiry, host name, self-signed), so that a
certificate with two problems gets two failed checks rather than whichever OpenSSL reports
first. The chain is judged by a real verifying handshake; the other properties are read from the
certificate itself, fetched without verification, and a failure is raised with the text OpenSSL
uses for it, so that :mod:`igestbench.verify.diagnosis` reads both the same way.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from igestbench.client.deadline import bound_tls, create_connection
from igestbench.client.transport import TransportCause, TransportFailure, transport_errors
from igestbench.icat.endpoint import Endpoint


def handshake(endpoint: Endpoint, context: ssl.SSLContext, timeout: float) -> bytes:
    """The DER certificate the server presents, after a handshake under ``context``."""
    with (
        transport_errors(endpoint.service_url, timeout=timeout),  # the whole handshake
        create_connection((endpoint.host, endpoint.port), timeout=timeout) as raw,
        bound_tls(context).wrap_socket(raw, server_hostname=endpoint.host) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    if der is None:  # only without a handshake, which wrap_socket has done
        raise TransportFailure(TransportCause.TLS, endpoint.service_url, "no certificate")
    return der


def verifying_context(ca_file: Path | None, check_hostname: bool) -> ssl.SSLContext:
    """Verification against ``ca_file`` (None: the system store), with or without the name."""
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    context.check_hostname = check_hostname
    return context


def peer_certificate(endpoint: Endpoint, timeout: float) -> x509.Certificate:
    """The server's certificate, fetched without judging it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return x509.load_der_x509_certificate(handshake(endpoint, context, timeout))


def is_self_signed(cert: x509.Certificate) -> bool:
    """Issued by itself: same name and its own key verifies its signature."""
    if cert.issuer != cert.subject:
        return False
    try:
        cert.verify_directly_issued_by(cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def names_of(cert: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses the certificate is valid for (SAN; else the CN)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        common = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        return [str(a.value) for a in common]
    return [*san.get_values_for_type(x509.DNSName)] + [
        str(ip) for ip in san.get_values_for_type(x509.IPAddress)
    ]


def _name_matches(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if pattern.startswith("*."):
        # a wildcard stands for exactly one leftmost label (RFC 6125)
        head, _, rest = host.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == host


def matches_host(cert: x509.Certificate, host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return any(_name_matches(n, host) for n in names_of(cert))
    return any(n == str(address) for n in names_of(cert))


def tls_failure(endpoint: Endpoint, message: str) -> TransportFailure:
    """A TLS failure worded as OpenSSL words a failed verification."""
    return TransportFailure(
        TransportCause.TLS, endpoint.service_url, f"certificate verify failed: {message}"
    )


def _days(delta: dt.timedelta) -> str:
    days = delta.days  # whole days: "0 days" on the day it happened
    return f"{days} day{'' if days == 1 else 's'}"


def check_validity(endpoint: Endpoint, cert: x509.Certificate, now: dt.datetime) -> None:
    """The certificate's dates, with the days, which say how long it has been (or will be)
    wrong: an operator weighs a certificate expired an hour ago and one expired in spring
    differently (``sv7 check --insecure`` makes this a WARNING, not CRITICAL)."""
    after, before = cert.not_valid_after_utc, cert.not_valid_before_utc
    if now > after:
        raise tls_failure(
            endpoint, f"certificate has expired on {after:%F} ({_days(now - after)} ago)"
        )
    if now < before:
        raise tls_failure(
            endpoint, f"certificate is not yet valid ({before:%F}, in {_days(before - now)})"
        )


def check_host(endpoint: Endpoint, cert: x509.Certificate) -> None:
    if not matches_host(cert, endpoint.host):
        names = ", ".join(names_of(cert)) or "no names"
        raise tls_failure(
            endpoint, f"Hostname mismatch, certificate is not valid for {endpoint.host!r} ({names})"
        )
