"""The catalogue's clock, read from the ``Date`` header of one small answer.

ICAT stamps every object with ``createTime`` by the server's clock. Cleanup proves an object is
the run's only if that stamp lies within the run's time, so the run records the server's clock
when it begins (beside its own): machines of a campaign are not always in step, and a window
measured by the client's clock alone would have to allow for any difference. An HTTP server
with a clock should send ``Date`` (RFC 9110 §6.6.1; the local catalogue does), to the second;
the WSDL's URL answers on every ICAT, and only its headers are read. Payara, as a real ICAT
6.2.0 runs it, sends none: the run then reads the server's clock from the createTime of its
first object (:mod:`igestbench.workloads.clock_facility`).
"""

from __future__ import annotations

import datetime as dt
import email.utils

from igestbench.client.base import ClientConfig
from igestbench.client.transport import http_session, timeouts, transport_errors
from igestbench.icat.endpoint import endpoint_of


def parse_http_date(value: str | None) -> dt.datetime | None:
    """An HTTP ``Date`` as an aware UTC datetime; None when absent or not a date."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates always are
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC)


def server_clock(config: ClientConfig) -> tuple[dt.datetime, dt.datetime | None]:
    """(our clock, the server's clock) at the same moment — the middle of one request.

    The server's is None when its answer carries no usable ``Date``. Raises
    :class:`~igestbench.client.transport.TransportFailure` when the server cannot be reached.
    """
    endpoint = endpoint_of(config.url)
    session = http_session(config, endpoint, pool_size=1)
    try:
        with transport_errors(endpoint.wsdl_url):
            sent = dt.datetime.now(dt.UTC)
            with session.get(endpoint.wsdl_url, timeout=timeouts(config), stream=True) as answer:
                received = dt.datetime.now(dt.UTC)
                date = answer.headers.get("Date")
    finally:
        session.close()
    return sent + (received - sent) / 2, parse_http_date(date)
