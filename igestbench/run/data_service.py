"""Whether the target serves an ICAT Data Service: ``GET /ids/ping``, as interfaces.py asks
``/icat/version``.

An IDS answers ``IdsOK`` to ping (ids.server, every version) at ``/ids/`` on the catalogue's
host and port. The result file keeps the answer and, when there is none, what came instead
(``target.data_service``), so the report tells "no IDS" from "IDS not measured".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from igestbench.client import ClientConfig
from igestbench.client.data_service import ids_url_for
from igestbench.client.transport import classify, http_session, timeouts
from igestbench.icat.endpoint import endpoint_of

PING_ANSWER = "IdsOK"


@dataclass(frozen=True)
class IdsProbe:
    """What ``GET /ids/ping`` and ``/ids/version`` answered."""

    url: str
    served: bool
    version: str | None = None
    #: One line: what answered instead (``HTTP 404``, ``refused: …``); None when served.
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "served": self.served, "version": self.version,
                "problem": self.problem}  # fmt: skip


def probe_ids(config: ClientConfig) -> IdsProbe:
    """Ask the target's host for an IDS, with the trust and timeouts of the run."""
    url = ids_url_for(config.url)
    try:
        with http_session(config, endpoint_of(config.url), pool_size=1) as session:
            ping = session.get(url + "/ping", timeout=timeouts(config), allow_redirects=False)
            if ping.status_code != 200 or ping.text.strip() != PING_ANSWER:
                what = f"HTTP {ping.status_code}" if ping.status_code != 200 else "not IdsOK"
                return IdsProbe(url, False, problem=f"GET {url}/ping gave {what}")
            answer = session.get(url + "/version", timeout=timeouts(config))
    except requests.RequestException as exc:
        failure = classify(exc, url)
        return IdsProbe(url, False, problem=f"{failure.cause.value}: {failure.detail}")
    version = None
    if answer.status_code == 200:
        try:
            version = str(answer.json()["version"])
        except (ValueError, KeyError, TypeError):
            version = None
    return IdsProbe(url, True, version)
