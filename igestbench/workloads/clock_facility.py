"""The server's clock from the ``createTime`` of the run's first object, when no ``Date`` came.

A real ICAT 6.2.0 on Payara answers without an HTTP ``Date`` header, so
:mod:`igestbench.client.server_clock` learns nothing there. The server's clock shows all the
same in what it stamps: ICAT sets ``createTime`` by its own clock while it handles the create.
So the run creates its first object, a Facility of its own named ``<tag>-clock`` (journaled
before it exists, removed with the rest of the run), reads its ``createTime`` back, and pairs it
with the middle of the create request by this machine's clock — as precise as a ``Date``
header: both are to the second on MariaDB, and the request lasts milliseconds. The pair goes
into the journal (:meth:`Journal.record_clock`), and the run's window on the server's clock is
as narrow as with a ``Date`` header (:mod:`.run_window`).
"""

from __future__ import annotations

import datetime as dt

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.workloads.journal import Journal
from igestbench.workloads.run_tag import RunTag
from igestbench.workloads.run_window import RunClock

#: The suffix of the Facility whose createTime gives the server's clock.
CLOCK_SUFFIX = "clock"


class NoCreateTime(Exception):
    """The server's answer carried no usable createTime for the object just created."""


def clock_from_create(catalogue: Catalogue, journal: Journal, tag: RunTag) -> RunClock:
    """(our clock, the server's) at the moment the run's clock Facility was created.

    ``catalogue`` is logged in as the run's account; the Facility is named in ``journal``
    before it is created and journaled once its id is known. Raises what the client raises
    (:class:`~igestbench.icat.faults.IcatError`, ``TransportFailure``), or
    :class:`NoCreateTime`.
    """
    name = f"{tag.name}-{CLOCK_SUFFIX}"
    journal.name_facility(name)
    bean = Bean("Facility", {
        "name": name, "fullName": "sv7 run clock",
        "description": "created by sv7 run to read the server's clock; removed after"})  # fmt: skip
    sent = dt.datetime.now(dt.UTC)
    new_id = catalogue.create(bean)
    received = dt.datetime.now(dt.UTC)
    journal.add("Facility", new_id)
    created = catalogue.get("Facility", new_id).values.get("createTime")
    if not isinstance(created, dt.datetime):
        raise NoCreateTime(f"Facility {new_id} came back without a createTime")
    if created.tzinfo is None:  # a client that drops the zone: ICAT's dates are UTC then
        created = created.replace(tzinfo=dt.UTC)
    return RunClock(sent + (received - sent) / 2, created.astimezone(dt.UTC))
