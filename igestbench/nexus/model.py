"""What a Virtual Lab NeXus file holds: where (HDF5 paths), as what (dataclasses), and as which
ICAT objects (:func:`to_beans`).

The layout follows NeXus conventions, and NXarchive (the application definition written for
files headed to ICAT) where it names a field; what NeXus has no field for sits in an
``NXcollection`` (NeXus's place for unvalidated terms) called ``icat``:

=====================================================  =============================================
HDF5 path                                              catalogue field
=====================================================  =============================================
``/@file_time``  (NXroot attribute)                    Datafile.datafileCreateTime (optional)
``/entry/title``                                       Investigation.title
``/entry/experiment_identifier``                       Investigation.visitId
``/entry/collection_identifier``  (NXarchive)          Dataset.name
``/entry/start_time``, ``/entry/end_time``             Investigation and Dataset startDate, endDate
``/entry/instrument/name``                             Instrument.fullName
``/entry/instrument/name/@short_name``                 Instrument.name (the full name when absent)
``/entry/instrument/source/name``  (NXsource)          Facility.name
``/entry/icat/investigation_name``                     Investigation.name
``/entry/icat/investigation_type``                     InvestigationType.name
``/entry/icat/dataset_type``                           DatasetType.name
``/entry/icat/datafile_format``, ``…_format_version``  DatafileFormat.name, version
``/entry/icat/datafile_description``                   Datafile.description (optional)
``/entry/icat/datafile_checksum``                      Datafile.checksum (optional)
=====================================================  =============================================

The checksum is that of the measured data (the NXdata payload), because a file cannot carry the
checksum of its own bytes. Datafile name, location, size and modification time come from the file
system when the file is read. ``/entry/sample``, ``/entry/user`` and ``/entry/definition`` are
written for NeXus's sake and not read: the catalogue hierarchy does not need them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final

from igestbench.icat.beans import Bean


class Layout:
    """The HDF5 paths of a Virtual Lab file, shared by writer and reader so they cannot disagree."""

    ENTRY: Final = "/entry"
    TITLE: Final = "/entry/title"
    EXPERIMENT_IDENTIFIER: Final = "/entry/experiment_identifier"
    COLLECTION_IDENTIFIER: Final = "/entry/collection_identifier"
    START_TIME: Final = "/entry/start_time"
    END_TIME: Final = "/entry/end_time"
    DEFINITION: Final = "/entry/definition"
    INSTRUMENT: Final = "/entry/instrument"
    INSTRUMENT_NAME: Final = "/entry/instrument/name"
    SOURCE: Final = "/entry/instrument/source"
    SOURCE_NAME: Final = "/entry/instrument/source/name"
    SAMPLE: Final = "/entry/sample"
    SAMPLE_NAME: Final = "/entry/sample/name"
    USER: Final = "/entry/user"
    USER_NAME: Final = "/entry/user/name"
    USER_AFFILIATION: Final = "/entry/user/affiliation"
    ICAT: Final = "/entry/icat"
    INVESTIGATION_NAME: Final = "/entry/icat/investigation_name"
    INVESTIGATION_TYPE: Final = "/entry/icat/investigation_type"
    DATASET_TYPE: Final = "/entry/icat/dataset_type"
    DATAFILE_FORMAT: Final = "/entry/icat/datafile_format"
    DATAFILE_FORMAT_VERSION: Final = "/entry/icat/datafile_format_version"
    DATAFILE_DESCRIPTION: Final = "/entry/icat/datafile_description"
    DATAFILE_CHECKSUM: Final = "/entry/icat/datafile_checksum"
    DATA: Final = "/entry/data"
    DATA_SIGNAL: Final = "/entry/data/data"

    #: Attributes: of the root group, and of ``INSTRUMENT_NAME``.
    FILE_TIME: Final = "file_time"
    SHORT_NAME: Final = "short_name"


@dataclass(frozen=True, slots=True)
class Acquisition:
    """What one Virtual Lab file says about itself: the writer's input."""

    facility: str
    instrument_name: str
    instrument_full_name: str
    investigation_name: str
    visit_id: str
    investigation_type: str
    title: str
    dataset_name: str
    dataset_type: str
    sample_name: str
    user_name: str
    user_affiliation: str
    start_time: dt.datetime
    end_time: dt.datetime
    description: str
    format_name: str
    format_version: str


@dataclass(frozen=True, slots=True)
class FacilityMetadata:
    name: str


@dataclass(frozen=True, slots=True)
class InstrumentMetadata:
    name: str
    full_name: str


@dataclass(frozen=True, slots=True)
class InvestigationMetadata:
    name: str
    visit_id: str
    title: str
    type: str
    start_date: dt.datetime
    end_date: dt.datetime


@dataclass(frozen=True, slots=True)
class DatasetMetadata:
    name: str
    type: str
    start_date: dt.datetime
    end_date: dt.datetime


@dataclass(frozen=True, slots=True)
class DatafileMetadata:
    name: str
    #: Absolute path of the file, as it was opened (symbolic links are not resolved).
    location: str
    #: Size of the file on disk, in bytes.
    size: int
    checksum: str | None
    format_name: str
    format_version: str
    description: str | None
    create_time: dt.datetime | None
    mod_time: dt.datetime


@dataclass(frozen=True, slots=True)
class NexusMetadata:
    """The catalogue hierarchy one NeXus file belongs to, from Facility down to its Datafile."""

    facility: FacilityMetadata
    instrument: InstrumentMetadata
    investigation: InvestigationMetadata
    dataset: DatasetMetadata
    datafile: DatafileMetadata


@dataclass(frozen=True, slots=True)
class IngestBeans:
    """The ICAT objects one file needs, linked to each other (Datafile → Dataset → … → Facility).

    The container is frozen but the Beans are not: an ingestor sets ``id`` on each as it finds or
    creates it, and every Bean that refers to it sees the id, which is what the next create needs.
    """

    facility: Bean
    instrument: Bean
    investigation_type: Bean
    investigation: Bean
    dataset_type: Bean
    dataset: Bean
    datafile_format: Bean
    datafile: Bean

    def in_creation_order(self) -> tuple[Bean, ...]:
        """The Beans in the order the iGest cycle looks them up, each after what it refers to."""
        return (
            self.facility,
            self.instrument,
            self.investigation_type,
            self.investigation,
            self.dataset_type,
            self.dataset,
            self.datafile_format,
            self.datafile,
        )


def to_beans(metadata: NexusMetadata) -> IngestBeans:
    """Fresh, linked ICAT Beans for one file's metadata, with ICAT's field names."""
    facility = Bean("Facility", {"name": metadata.facility.name})
    instrument = Bean(
        "Instrument",
        {
            "name": metadata.instrument.name,
            "fullName": metadata.instrument.full_name,
            "facility": facility,
        },
    )
    inv = metadata.investigation
    investigation_type = Bean("InvestigationType", {"name": inv.type, "facility": facility})
    investigation = Bean(
        "Investigation",
        {
            "name": inv.name,
            "visitId": inv.visit_id,
            "title": inv.title,
            "startDate": inv.start_date,
            "endDate": inv.end_date,
            "facility": facility,
            "type": investigation_type,
        },
    )
    ds = metadata.dataset
    dataset_type = Bean("DatasetType", {"name": ds.type, "facility": facility})
    dataset = Bean(
        "Dataset",
        {
            "name": ds.name,
            # An acquisition system adds files to a dataset while it runs; nobody has closed it.
            "complete": False,
            "startDate": ds.start_date,
            "endDate": ds.end_date,
            "investigation": investigation,
            "type": dataset_type,
        },
    )
    df = metadata.datafile
    datafile_format = Bean(
        "DatafileFormat",
        {"name": df.format_name, "version": df.format_version, "facility": facility},
    )
    datafile_values = {
        "name": df.name,
        "location": df.location,
        "fileSize": df.size,
        "datafileModTime": df.mod_time,
        "dataset": dataset,
        "datafileFormat": datafile_format,
    }
    # Optional fields are left out rather than sent as empty: absent is how ICAT spells "unknown".
    optional = {
        "checksum": df.checksum,
        "description": df.description,
        "datafileCreateTime": df.create_time,
    }
    datafile_values.update({key: value for key, value in optional.items() if value is not None})
    datafile = Bean("Datafile", datafile_values)
    return IngestBeans(
        facility=facility,
        instrument=instrument,
        investigation_type=investigation_type,
        investigation=investigation,
        dataset_type=dataset_type,
        dataset=dataset,
        datafile_format=datafile_format,
        datafile=datafile,
    )
