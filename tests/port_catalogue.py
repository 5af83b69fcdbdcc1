"""A catalogue holding every entity type of ICAT 6.2 (for the /icat/port round trips).

Objects of all 53 types with their relations, parameters of each kind, NULL attributes and
relations, strings with quotes, commas, escapes, line breaks and non-ASCII text, dates with
milliseconds in winter and in summer (so that a server in Europe/Berlin writes both offsets),
doubles Java writes in either notation, both enumerations and booleans. One thing ICAT cannot
carry is left out on purpose: a Job without inputDataCollection (its export has an empty
column that ICAT's import refuses, tests/test_port_round_trip.py shows it apart).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.mock.store import Store

USER = "simple/root"
TRICKY = "He said \"no, never\"\nthen\ttabbed \\ back, Müller — 日本語 'q' \x7f"
WINTER = dt.datetime(2024, 1, 15, 10, 20, 30, 123000, tzinfo=dt.UTC)
SUMMER = dt.datetime(2024, 7, 1, 22, 30, 0, 5000, tzinfo=dt.UTC)  # 00:30 the next day in Berlin


class _Maker:
    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, entity: str, **values: Any) -> Bean:
        bean = Bean(entity, dict(values))
        new_id = self.store.create(USER, bean)
        return Bean(entity, {**values, "id": new_id})


def fill(store: Store) -> None:
    """Create the catalogue (as root, in one transaction)."""
    with store.transaction():
        _fill(_Maker(store))


def _fill(make: _Maker) -> None:
    user = make("User", name="simple/alice", fullName=TRICKY, email="a@example.org")
    other = make("User", name="simple/bob", orcidId="0000-0002-1825-0097")
    group = make("Grouping", name='team, "A"')
    make("UserGroup", user=user, grouping=group)
    make("Rule", crudFlags="CRUD", what="Dataset", grouping=group)
    make("Rule", crudFlags="R", what="SELECT f FROM Facility f WHERE f.name = 'F1'")
    make("PublicStep", origin="Dataset", field="investigation")
    fac = make("Facility", name="F1", fullName=TRICKY, daysUntilRelease=-3, url=None)
    make("Facility", name="F2 — ünïcødé", description="x" * 1023)
    fmt = make("DatafileFormat", facility=fac, name="NeXus", version="4.3", type="HDF5")
    app = make("Application", facility=fac, name="reduce", version="1.0")
    instr = make("Instrument", facility=fac, name="I1", startDate=WINTER, pid="pid:1")
    itype = make("InvestigationType", facility=fac, name="experiment")
    dtype = make("DatasetType", facility=fac, name="raw")
    flags = dict(
        applicableToDataset=True,
        applicableToDatafile=True,
        applicableToInvestigation=True,
        applicableToSample=True,
        applicableToDataCollection=True,
    )
    temp = make(
        "ParameterType", facility=fac, name="temp", units="K", valueType="NUMERIC",
        minimumNumericValue=-273.15, maximumNumericValue=1e7, enforced=True, verified=False,
        **flags,
    )  # fmt: skip
    note = make("ParameterType", facility=fac, name="note", units="", valueType="STRING", **flags)
    when = make(
        "ParameterType", facility=fac, name="when", units="-", valueType="DATE_AND_TIME", **flags
    )
    stype = make("SampleType", facility=fac, name="water", molecularFormula="H2O")
    inv = make(
        "Investigation", facility=fac, type=itype, name="inv, 1", visitId='v"1',
        title="Title\r\nCRLF", summary=TRICKY, startDate=WINTER, endDate=SUMMER, fileSize=12345,
        fileCount=7,
    )  # fmt: skip
    inv2 = make("Investigation", facility=fac, type=itype, name="inv2", visitId="1", title="t")
    sample = make("Sample", investigation=inv, name="s1", type=stype, pid=None)
    make("Sample", investigation=inv, name="s2")  # no type: NULL,NA,NA
    ds1 = make(
        "Dataset", investigation=inv, type=dtype, name="ds1", complete=True, sample=sample,
        startDate=WINTER, endDate=SUMMER, location="/data/ds1",
    )  # fmt: skip
    ds2 = make("Dataset", investigation=inv2, type=dtype, name="ds 2", complete=False)
    df1 = make(
        "Datafile", dataset=ds1, name="a.nxs", fileSize=2**40, datafileFormat=fmt,
        datafileCreateTime=WINTER, datafileModTime=SUMMER, checksum="adler32:0x1f",
    )  # fmt: skip
    df2 = make("Datafile", dataset=ds1, name='b, "c".nxs', location=TRICKY)
    df3 = make("Datafile", dataset=ds2, name="d.nxs", fileSize=0)
    cycle = make("FacilityCycle", facility=fac, name="2024/1", startDate=WINTER, endDate=SUMMER)
    dc1 = make("DataCollection", doi="10.1/dc1")
    dc2 = make("DataCollection")
    make("DataCollectionDatafile", dataCollection=dc1, datafile=df1)
    make("DataCollectionDataset", dataCollection=dc1, dataset=ds2)
    make("DataCollectionInvestigation", dataCollection=dc2, investigation=inv)
    make("DataCollectionParameter", dataCollection=dc1, type=temp, numericValue=1e-5)
    for datafile, value in ((df1, 1.5e-5), (df2, 123456789.0), (df3, 0.001)):
        make("DatafileParameter", datafile=datafile, type=temp, numericValue=value, error=0.25)
    make("DatafileParameter", datafile=df1, type=when, dateTimeValue=SUMMER)
    make("DatasetParameter", dataset=ds1, type=temp, numericValue=-273.15, rangeTop=1e7,
         rangeBottom=-1e-7)  # fmt: skip
    make("DatasetParameter", dataset=ds1, type=note, stringValue=TRICKY)
    make("InvestigationParameter", investigation=inv, type=when, dateTimeValue=WINTER)
    make("Job", application=app, inputDataCollection=dc1, outputDataCollection=dc2,
         arguments="--in=a,b")  # fmt: skip
    make("Job", application=app, inputDataCollection=dc2, outputDataCollection=dc2)
    make("Keyword", investigation=inv, name="kw")
    tech = make("Technique", name="SAXS", pid="tech:1", description=None)
    make("DatasetTechnique", dataset=ds1, technique=tech)
    make("PermissibleStringValue", type=note, value="ok")
    make("Publication", investigation=inv, fullReference='Ref "1", p. 2', doi="10.1/p")
    make("Publication", investigation=inv, fullReference="Ref 2")
    make("RelatedDatafile", sourceDatafile=df1, destDatafile=df2, relation="derived")
    make("SampleParameter", sample=sample, type=temp, numericValue=42.0)
    make("Shift", investigation=inv, startDate=WINTER, endDate=SUMMER, instrument=instr,
         comment="night")  # fmt: skip
    make("Shift", investigation=inv, startDate=SUMMER, endDate=SUMMER)  # no instrument: NULL,NA
    study = make("Study", name="study 1", status="IN_PROGRESS", user=user, startDate=WINTER)
    make("Study", name="study 2", status="COMPLETE")  # no user
    ptype = make("DataPublicationType", facility=fac, name="dataset")
    pub = make("DataPublication", facility=fac, pid="pid/1", title=TRICKY, content=dc1,
               type=ptype, publicationDate=SUMMER)  # fmt: skip
    make("DataPublication", facility=fac, pid="pid/2", title="untyped", content=dc2)
    make("Subject", dataPublication=pub, name="physics", schemeURI="https://example.org/s")
    make("DataPublicationDate", publication=pub, dateType="Issued", date="2024-07-01")
    pub_user = make("DataPublicationUser", publication=pub, user=user, contributorType="Creator",
                    orderKey="1")  # fmt: skip
    make("Affiliation", user=pub_user, name='Institute, Dept. "X"', pid="ror:1")
    make("RelatedItem", publication=pub, identifier="doi:10.1/y", relationType="Cites")
    funding = make("FundingReference", funderName="Funder", awardNumber="A-1")
    make("DataPublicationFunding", dataPublication=pub, funding=funding)
    make("InvestigationFunding", investigation=inv, funding=funding)
    make("InvestigationUser", investigation=inv, user=user, role="PI")
    make("InvestigationUser", investigation=inv, user=other, role="member")
    make("InvestigationGroup", grouping=group, investigation=inv, role="reader")
    make("StudyInvestigation", study=study, investigation=inv)
    make("InvestigationInstrument", investigation=inv, instrument=instr)
    make("InstrumentScientist", instrument=instr, user=other)
    make("DatasetInstrument", dataset=ds1, instrument=instr)
    make("InvestigationFacilityCycle", investigation=inv, facilityCycle=cycle)
