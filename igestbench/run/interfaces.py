"""Which of ICAT's two interfaces a run measures: SOAP, REST or both, and why.

Every ICAT from 5.0 on serves REST (``/icat/...``, at the root of the server whatever the SOAP
path) beside SOAP over the same entity manager. ICAT 4.3 — the SV7 era — had no REST, and the
4.4-4.x prototype differs from what the ``rest`` client speaks, so a 4.x target is measured
over SOAP only. Without ``--interface`` the run asks the target itself: a target whose
``GET /icat/version`` answers ICAT's JSON with a version of 5 or later has REST; one that
answers otherwise (404 behind a proxy that forwards only ``/ICATService``, HTML, nothing) or
whose SOAP side says 4.x is measured over SOAP only. The result file keeps the answer and the
reason (``target.interfaces``), so a report can tell "not measured" from "not served".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import requests

from igestbench.client import ClientConfig
from igestbench.client.repeats import RepeatPolicy
from igestbench.client.rest_flavour import rest_base_url
from igestbench.client.transport import (
    TransportFailure,
    call_budget,
    http_session,
    timeouts,
    transport_errors,
)
from igestbench.icat.endpoint import endpoint_of

SOAP, REST = "soap", "rest"
#: The client flavour that measures each interface when the run has no say (REST has one).
REST_FLAVOUR = "rest"
#: The first API version whose REST interface the rest client speaks.
REST_SINCE = 5


def rest_version_url(url: str) -> str:
    """``GET`` this for the REST API's version: ``/icat/version`` at the server's root."""
    return rest_base_url(url) + "/version"


@dataclass(frozen=True)
class RestProbe:
    """What ``GET /icat/version`` answered: the version, or why there is none."""

    url: str
    version: str | None
    #: One line: what answered (``HTTP 404``, ``not JSON``, ``refused: …``); None with a version.
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "version": self.version, "problem": self.problem}


def probe_rest(config: ClientConfig) -> RestProbe:
    """Ask the target for its REST API's version, with the trust and timeouts of the run."""
    url = rest_version_url(config.url)
    endpoint = endpoint_of(config.url)

    def ask() -> requests.Response:
        with (
            transport_errors(url, timeout=call_budget(config)),
            http_session(config, endpoint, pool_size=1) as session,
        ):
            return session.get(url, timeout=timeouts(config), allow_redirects=False)

    try:
        response = RepeatPolicy().call(ask)  # one lost connection must not cost the REST part
    except TransportFailure as failure:
        return RestProbe(url, None, f"{failure.cause.value}: {failure.detail}")
    if response.status_code != 200:
        return RestProbe(url, None, f"HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        return RestProbe(url, None, "HTTP 200 but not JSON (not ICAT's REST API)")
    version = body.get("version") if isinstance(body, dict) else None
    if not isinstance(version, str) or not version.strip():
        return RestProbe(url, None, "HTTP 200 but no version in the JSON (not ICAT's REST API)")
    return RestProbe(url, version.strip())


def major(version: str | None) -> int | None:
    found = re.match(r"\s*(\d+)", version or "")
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class InterfaceChoice:
    """The interfaces a run measures, what the target serves, and the reason in one line."""

    measured: tuple[str, ...]
    served: tuple[str, ...]
    why: str
    rest: RestProbe | None = None

    def to_dict(self) -> dict[str, Any]:
        """``target.interfaces`` of the result file."""
        return {
            "served": list(self.served),
            "measured": list(self.measured),
            "why": self.why,
            "rest": self.rest.to_dict() if self.rest is not None else None,
        }


def served(soap_version: str | None, rest: RestProbe) -> tuple[tuple[str, ...], str]:
    """(interfaces the target serves, why) from the SOAP side's version and the REST probe."""
    soap_major, rest_major = major(soap_version), major(rest.version)
    if soap_major is not None and soap_major < REST_SINCE:
        return (SOAP,), (
            f"ICAT {soap_version} over SOAP: a 4.x catalogue is measured over SOAP only "
            "(REST as the rest client speaks it came with ICAT 5)"
        )
    if rest.version is None:
        return (SOAP,), f"no REST API: GET {rest.url} gave {rest.problem}"
    if rest_major is not None and rest_major < REST_SINCE:
        return (SOAP,), f"GET {rest.url} says {rest.version}: 4.x REST is not measured"
    return (SOAP, REST), f"GET {rest.url} answered version {rest.version}"


def choose(
    requested: tuple[str, ...] | None, soap_version: str | None, rest: RestProbe
) -> InterfaceChoice:
    """The interfaces to measure: ``requested`` (``--interface``) when given, else those the
    target serves. A requested interface the target does not seem to serve is measured all
    the same — the user asked, and the failures it gives say why — with the finding noted."""
    offered, why = served(soap_version, rest)
    if requested is None:
        return InterfaceChoice(offered, offered, why, rest)
    wanted = tuple(dict.fromkeys(requested))
    said = f"--interface {','.join(wanted)}"
    missing = [i for i in wanted if i not in offered]
    if missing:
        said += f" (although the probe found none for {', '.join(missing)}: {why})"
    return InterfaceChoice(wanted, offered, said, rest)
