"""What a user means by an ICAT address: the service URL, its WSDL URL, scheme, host and port.

Shared by the clients, the probe, the merge (which names a target by its canonical URL) and the
report (which shows its port), so that all of them read ``host``, ``host:port``,
``https://host`` and the service or ``?wsdl`` URL the same way: the scheme defaults to https and
the path to ICAT's ``/ICATService/ICAT``.

Being the one place every command (run, check, cleanup, swarm, merge, the clients) reads a target
URL, it is also where a URL carrying credentials (``user:password@host``) is refused, without
echoing them: the URL would otherwise reach the terminal, the result file and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from igestbench.errors import UsageError

DEFAULT_PATH = "/ICATService/ICAT"
#: Where the account and its password go instead of the URL (README, "Credentials").
CREDENTIALS_HINT = (
    "give the account with SV7_AUTH/SV7_USER and its password with SV7_PASSWORD, "
    "sv7.toml [credentials] or the prompt"
)


@dataclass(frozen=True)
class Endpoint:
    """Where a catalogue answers: its SOAP service URL and the URL of its WSDL."""

    service_url: str
    wsdl_url: str
    scheme: str
    host: str
    port: int
    path: str


def endpoint_of(url: str) -> Endpoint:
    """The endpoint a user means by ``url``; UsageError when it cannot be an ICAT address."""
    text = url.strip()
    if "://" not in text:
        text = "https://" + text
    parts = urlsplit(text)
    if "@" in text:  # before any message that would quote the URL (an ICAT URL has no @ else)
        shown = f"{parts.scheme}://…@{text.rpartition('@')[2]}"
        raise UsageError(
            f"{shown!r}: the URL holds credentials (user:…@), which sv7 never takes in a URL; "
            + CREDENTIALS_HINT
        )
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"{url!r}: an ICAT URL starts with https:// or http://")
    if parts.query and parts.query.lower() != "wsdl":
        raise UsageError(f"{url!r}: an ICAT URL has no query but ?wsdl")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise UsageError(f"{url!r}: the port is not a number from 0 to 65535") from None
    host = parts.hostname
    if not host:
        raise UsageError(f"{url!r}: no host name")
    path = parts.path.rstrip("/") or DEFAULT_PATH
    service_url = f"{scheme}://{parts.netloc}{path}"
    return Endpoint(service_url, service_url + "?wsdl", scheme, host, port, path)
