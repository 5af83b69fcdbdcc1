"""Virtual Lab NeXus files: generate them with h5py and read their catalogue metadata back.

Generating is set-up work (:func:`generate_run`, :func:`write_acquisition`); reading is timed
work (:func:`read_metadata`). :func:`to_beans` turns what was read into the linked ICAT objects
an ingestor looks up or creates. Where each item lives in the file, and which ICAT field it fills,
is tabled in :mod:`igestbench.nexus.model`.

    paths = generate_run(tmp_dir, "sv7-ELETTRA-42", 100, seed=1, payload_bytes=1024)
    beans = to_beans(read_metadata(paths[0]))
"""

from igestbench.nexus.generator import (
    FORMAT_NAME,
    FORMAT_VERSION,
    PlannedFile,
    generate_run,
    payload_for,
    plan_run,
    write_fixture_files,
)
from igestbench.nexus.model import (
    Acquisition,
    DatafileMetadata,
    DatasetMetadata,
    FacilityMetadata,
    IngestBeans,
    InstrumentMetadata,
    InvestigationMetadata,
    Layout,
    NexusMetadata,
    to_beans,
)
from igestbench.nexus.reader import read_metadata
from igestbench.nexus.writer import payload_checksum, write_acquisition

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Acquisition",
    "DatafileMetadata",
    "DatasetMetadata",
    "FacilityMetadata",
    "IngestBeans",
    "InstrumentMetadata",
    "InvestigationMetadata",
    "Layout",
    "NexusMetadata",
    "PlannedFile",
    "generate_run",
    "payload_checksum",
    "payload_for",
    "plan_run",
    "read_metadata",
    "to_beans",
    "write_acquisition",
    "write_fixture_files",
]
