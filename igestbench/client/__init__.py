"""Clients of ICAT catalogues: one protocol, four flavours, one exception tree.

::

    from igestbench.client import ClientConfig, connect

    catalogue = connect(ClientConfig("icat.example.org", ca_file=Path("ca.pem")), "zeep")
    catalogue.login("simple", {"username": "root", "password": secret})
    facilities = catalogue.search("SELECT f FROM Facility f")

Flavours: ``"zeep"`` (ours, zeep with our decoding of answers), ``"python-icat"`` (an unmodified
``icat.Client``), ``"lean"`` (the load path: pre-rendered envelopes, http.client, lxml) and
``"rest"`` (ICAT's REST API, ``/icat/...``, on requests). All
speak :class:`~igestbench.icat.beans.Bean` objects, raise
:class:`~igestbench.icat.faults.IcatError` subclasses for ICAT faults and
:class:`TransportFailure` (a :class:`~igestbench.errors.TransportError` with a ``cause``) for
everything else.
"""

from __future__ import annotations

from collections.abc import Callable

from igestbench.client.base import Catalogue, ClientConfig
from igestbench.client.lean import LeanCatalogue
from igestbench.client.python_icat_flavour import PythonIcatCatalogue
from igestbench.client.rest_flavour import RestCatalogue
from igestbench.client.transport import TransportCause, TransportFailure
from igestbench.client.zeep_flavour import ZeepCatalogue
from igestbench.errors import UsageError
from igestbench.icat.endpoint import Endpoint, endpoint_of

__all__ = [
    "FLAVOURS",
    "Catalogue",
    "ClientConfig",
    "Endpoint",
    "LeanCatalogue",
    "PythonIcatCatalogue",
    "RestCatalogue",
    "TransportCause",
    "TransportFailure",
    "ZeepCatalogue",
    "connect",
    "endpoint_of",
]

#: Flavour name → class; every class satisfies the Catalogue protocol.
FLAVOURS: dict[str, Callable[[ClientConfig], Catalogue]] = {
    "zeep": ZeepCatalogue,
    "python-icat": PythonIcatCatalogue,
    "lean": LeanCatalogue,
    "rest": RestCatalogue,
}


def connect(config: ClientConfig, flavour: str = "zeep") -> Catalogue:
    """A client of the catalogue ``config`` names, not yet logged in.

    Reads the server's API version (and, for zeep and python-icat, its WSDL) before returning,
    so an unreachable or non-ICAT address fails here with a :class:`TransportFailure`.
    """
    try:
        factory = FLAVOURS[flavour]
    except KeyError:
        raise UsageError(
            f"unknown client flavour {flavour!r}: choose one of {', '.join(FLAVOURS)}"
        ) from None
    return factory(config)
