"""SOAP and REST over one catalogue: what one interface writes, the other reads as the same
Beans (the issue's interop check), in UTC and in a server zone with an offset."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue

ROOT = {"username": "root", "password": "root"}
READS = (
    "SELECT f FROM Facility f INCLUDE f.investigations.datasets.datafiles.parameters",
    "SELECT ds FROM Dataset ds INCLUDE ds.parameters.type, ds.investigation.facility",
    "SELECT df FROM Datafile df ORDER BY df.name INCLUDE df.dataset.investigation",
    "SELECT p FROM DatafileParameter p INCLUDE p.type, p.datafile",
    "SELECT df.name, df.fileSize, df.datafileCreateTime FROM Datafile df ORDER BY df.name",
    "SELECT COUNT(p) FROM DatasetParameter p",
)


def ref(entity: str, bean_id: int) -> Bean:
    return Bean(entity, {"id": bean_id})


def write_hierarchy(client: Catalogue) -> None:
    """Facility → Investigation → Dataset → Datafiles, each with parameters; children nested."""
    facility = ref("Facility", client.create(Bean("Facility", {"name": "ESRF"})))
    inv_type, ds_type, _, _ = client.create_many(
        [
            Bean("InvestigationType", {"name": "experiment", "facility": facility}),
            Bean("DatasetType", {"name": "raw", "facility": facility}),
            Bean(
                "ParameterType",
                {
                    "name": "temperature",
                    "units": "K",
                    "valueType": "NUMERIC",
                    "applicableToDataset": True,
                    "applicableToDatafile": True,
                    "facility": facility,
                },
            ),
            Bean(
                "ParameterType",
                {
                    "name": "sample",
                    "units": "N/A",
                    "valueType": "STRING",
                    "applicableToDataset": True,
                    "facility": facility,
                },
            ),
        ]
    )
    # the ParameterTypes as stored: SOAP's create checks the flags on the bean as sent
    temperature, sample = client.search("SELECT pt FROM ParameterType pt ORDER BY pt.name DESC")
    start = dt.datetime(2024, 3, 3, 10, 0, 0, 250000, tzinfo=dt.UTC)
    investigation = client.create(
        Bean(
            "Investigation",
            {
                "name": "MX-1234",
                "visitId": "1",
                "title": "Protein crystals",
                "startDate": start,
                "facility": facility,
                "type": ref("InvestigationType", inv_type),
            },
        )
    )
    datafiles = [
        Bean(
            "Datafile",
            {
                "name": f"frame-{i}.nxs",
                "fileSize": 1000 * (i + 1),
                "datafileCreateTime": start + dt.timedelta(seconds=i),
                "parameters": [
                    Bean("DatafileParameter", {"type": temperature, "numericValue": 80.5 + i})
                ],
            },
        )
        for i in range(3)
    ]
    client.create(
        Bean(
            "Dataset",
            {
                "name": "run-1",
                "complete": True,
                "startDate": start,
                "investigation": ref("Investigation", investigation),
                "type": ref("DatasetType", ds_type),
                "datafiles": datafiles,
                "parameters": [
                    Bean("DatasetParameter", {"type": temperature, "numericValue": 80.0}),
                    Bean("DatasetParameter", {"type": sample, "stringValue": "lysozyme"}),
                ],
            },
        )
    )


def _sorted(value: Any) -> Any:
    """Beans with their INCLUDEd lists in id order (ICAT gives them in no fixed order)."""
    if isinstance(value, Bean):
        return Bean(value.entity, {k: _sorted(v) for k, v in value.values.items()})
    if isinstance(value, list):
        items = [_sorted(v) for v in value]
        if all(isinstance(v, Bean) for v in items):
            items.sort(key=lambda b: b.id or 0)
        return items
    return value


def read_all(client: Catalogue) -> list[Any]:
    return [_sorted(client.search(q)) for q in READS]


@pytest.fixture(params=["UTC", "Europe/Paris"])
def catalogue(request: pytest.FixtureRequest) -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(timezone=request.param)) as cat:
        yield cat


@pytest.mark.parametrize(
    ("writer", "reader"), [("rest", "lean"), ("lean", "rest"), ("rest", "zeep")]
)
def test_what_one_interface_writes_the_other_reads_as_the_same_beans(
    catalogue: LocalCatalogue, writer: str, reader: str, tmp_path: Any
) -> None:
    with contextlib.ExitStack() as stack:
        made = {}
        for flavour in {writer, reader}:
            config = ClientConfig(catalogue.url, cache_dir=tmp_path)
            made[flavour] = stack.enter_context(contextlib.closing(connect(config, flavour)))
            made[flavour].login("simple", ROOT)
        write_hierarchy(made[writer])
        seen_by_writer, seen_by_reader = read_all(made[writer]), read_all(made[reader])
        assert seen_by_reader == seen_by_writer
        (facility,) = seen_by_reader[0]
        (investigation,) = facility["investigations"]
        (dataset,) = investigation["datasets"]
        assert [len(df["parameters"]) for df in dataset["datafiles"]] == [1, 1, 1]
        assert investigation["startDate"] == dt.datetime(
            2024, 3, 3, 10, 0, 0, 250000, tzinfo=dt.UTC
        )
        assert seen_by_reader[-1] == [2]
        one = made[reader].get("Dataset INCLUDE 1", dataset.id)
        assert _sorted(one) == _sorted(made[writer].get("Dataset INCLUDE 1", dataset.id))
