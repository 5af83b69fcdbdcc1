"""The Virtual Lab: deterministic sets of acquisitions, and the NeXus files of a run.

A run tag becomes the Facility name, so everything ingested from the files lives under the run
tag and cleanup can find it (design.md §5). The rest is derived from ``seed`` and the file's index
alone — never from the clock or global random state — so the same arguments always give the same
metadata and the same payload bytes, on any machine.

Files are grouped the way an acquisition system produces them: ``files_per_dataset`` consecutive
files form a Dataset, ``datasets_per_investigation`` consecutive Datasets belong to one
Investigation (one visit). The full-cycle workload therefore mostly finds what it looks up and
occasionally creates it, as an ingestor at a facility does.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from dataclasses import dataclass, replace
from pathlib import Path

import h5py

from igestbench.nexus.model import Acquisition, Layout
from igestbench.nexus.writer import write_acquisition

#: DatafileFormat of every Virtual Lab file: NeXus, versioned by the NeXus definitions release
#: whose NXarchive the layout follows.
FORMAT_NAME = "NeXus"
FORMAT_VERSION = "v2024.02"

#: (Instrument.name, Instrument.fullName)
INSTRUMENTS = (
    ("VL-XRD", "Virtual Lab X-ray Diffraction Beamline"),
    ("VL-SAXS", "Virtual Lab Small-Angle X-ray Scattering Beamline"),
    ("VL-XAS", "Virtual Lab X-ray Absorption Spectroscopy Beamline"),
    ("VL-TOMO", "Virtual Lab Tomography Station"),
)
#: Weighted so most visits are experiments, as at a real facility.
INVESTIGATION_TYPES = ("experiment", "commissioning", "calibration")
INVESTIGATION_TYPE_WEIGHTS = (8, 1, 1)
DATASET_TYPES = ("raw", "calibration", "background")
DATASET_TYPE_WEIGHTS = (8, 1, 1)
SAMPLES = ("LaFeO3-film", "SrTiO3-substrate", "Au-nanorods", "MOF-5", "lysozyme", "Si-wafer")
SUBJECTS = (
    "strain relaxation",
    "phase transitions",
    "oxygen vacancies",
    "grain growth",
    "ligand binding",
    "surface reconstruction",
)
CONDITIONS = (
    "under heating",
    "at cryogenic temperature",
    "in operando",
    "under pressure",
    "in high magnetic field",
    "after annealing",
)
#: Names with accents keep the UTF-8 path of writer and reader honest.
USERS = (
    ("Ana Müller", "Elettra Sincrotrone Trieste"),
    ("Søren Kjær", "MAX IV Laboratory"),
    ("Chiara Bianchi", "Università di Trieste"),
    ("Jean-Luc Périer", "ESRF"),
    ("Zoë Adams", "Diamond Light Source"),
    ("Tomasz Wójcik", "SOLARIS"),
)

#: Day 0 of the Virtual Lab's calendar; a visit starts every week after it.
EPOCH = dt.datetime(2024, 1, 1, 8, 0, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file of a run: its name and what it will say."""

    index: int
    file_name: str
    acquisition: Acquisition


def _rng(seed: int, *parts: object) -> random.Random:
    # String seeds are hashed with SHA-512 by random.Random: stable across runs and versions,
    # independent of PYTHONHASHSEED.
    return random.Random("/".join(str(part) for part in (seed, *parts)))


def plan_run(
    run_tag: str,
    count: int,
    *,
    seed: int = 0,
    files_per_dataset: int = 10,
    datasets_per_investigation: int = 3,
) -> list[PlannedFile]:
    """The ``count`` acquisitions of a run, without writing anything."""
    if count < 0 or files_per_dataset < 1 or datasets_per_investigation < 1:
        raise ValueError("count must be >= 0, files and datasets per group >= 1")
    planned = []
    for index in range(count):
        dataset_number, file_in_dataset = divmod(index, files_per_dataset)
        inv_number, dataset_in_inv = divmod(dataset_number, datasets_per_investigation)

        inv_rng = _rng(seed, "investigation", inv_number)
        instrument_name, instrument_full_name = inv_rng.choice(INSTRUMENTS)
        (investigation_type,) = inv_rng.choices(INVESTIGATION_TYPES, INVESTIGATION_TYPE_WEIGHTS)
        user_name, affiliation = inv_rng.choice(USERS)
        title = f"{inv_rng.choice(SUBJECTS).capitalize()} {inv_rng.choice(CONDITIONS)}"
        investigation_name = f"VL{seed % 1000:03d}{inv_number:05d}"
        visit_id = f"{investigation_name}-{1 + inv_rng.randrange(3)}"

        ds_rng = _rng(seed, "dataset", dataset_number)
        sample_name = ds_rng.choice(SAMPLES)
        (dataset_type,) = ds_rng.choices(DATASET_TYPES, DATASET_TYPE_WEIGHTS)

        start_time = EPOCH + dt.timedelta(
            weeks=inv_number, hours=4 * dataset_in_inv, minutes=10 * file_in_dataset
        )
        duration = dt.timedelta(seconds=_rng(seed, "file", index).randrange(60, 540))
        acquisition = Acquisition(
            facility=run_tag,
            instrument_name=instrument_name,
            instrument_full_name=instrument_full_name,
            investigation_name=investigation_name,
            visit_id=visit_id,
            investigation_type=investigation_type,
            title=title,
            dataset_name=f"{sample_name}_{dataset_in_inv + 1:03d}",
            dataset_type=dataset_type,
            sample_name=sample_name,
            user_name=user_name,
            user_affiliation=affiliation,
            start_time=start_time,
            end_time=start_time + duration,
            description=f"{instrument_name} scan {file_in_dataset + 1} of {sample_name}",
            format_name=FORMAT_NAME,
            format_version=FORMAT_VERSION,
        )
        planned.append(PlannedFile(index, f"scan-{index:05d}.nxs", acquisition))
    return planned


def payload_for(seed: int, index: int, payload_bytes: int) -> bytes:
    """The payload of file ``index``: ``payload_bytes`` pseudo-random, reproducible bytes."""
    return _rng(seed, "payload", index).randbytes(payload_bytes)


def generate_run(
    directory: str | os.PathLike[str],
    run_tag: str,
    count: int,
    *,
    seed: int = 0,
    payload_bytes: int = 0,
    files_per_dataset: int = 10,
    datasets_per_investigation: int = 3,
) -> list[Path]:
    """Write the ``count`` files of :func:`plan_run` into ``directory``; return their paths.

    ``payload_bytes`` > 0 adds an NXdata payload of that many bytes to each file.
    """
    if payload_bytes < 0:
        raise ValueError("payload_bytes must be >= 0")
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    plan = plan_run(
        run_tag,
        count,
        seed=seed,
        files_per_dataset=files_per_dataset,
        datasets_per_investigation=datasets_per_investigation,
    )
    for planned in plan:
        path = target / planned.file_name
        payload = payload_for(seed, planned.index, payload_bytes)
        write_acquisition(path, planned.acquisition, payload)
        paths.append(path)
    return paths


#: The arguments of the committed example files in fixtures/nexus/.
FIXTURE_RUN_TAG = "sv7-FIXTURE-0"
FIXTURE_SEED = 7
FIXTURE_PAYLOAD_BYTES = 32
NOT_HDF5_FIXTURE = "bad-not-hdf5.nxs"
NO_EXPERIMENT_IDENTIFIER_FIXTURE = "bad-no-experiment-identifier.nxs"


def write_fixture_files(directory: str | os.PathLike[str]) -> list[Path]:
    """(Re)write the example files: three good ones and two bad ones; return all five paths.

    Run ``python -m igestbench.nexus fixtures/nexus`` to regenerate the committed copies.
    """
    good = generate_run(
        directory,
        FIXTURE_RUN_TAG,
        3,
        seed=FIXTURE_SEED,
        payload_bytes=FIXTURE_PAYLOAD_BYTES,
        files_per_dataset=2,
    )
    target = Path(directory)
    not_hdf5 = target / NOT_HDF5_FIXTURE
    not_hdf5.write_text("This is a text file with a NeXus name, not an HDF5 file.\n")

    # A whole file minus one field, so the reader's error is about that field and nothing else.
    no_identifier = target / NO_EXPERIMENT_IDENTIFIER_FIXTURE
    acquisition = plan_run(FIXTURE_RUN_TAG, 1, seed=FIXTURE_SEED)[0].acquisition
    write_acquisition(no_identifier, replace(acquisition, description="lacks a visit id"))
    with h5py.File(no_identifier, "r+") as nxroot:
        del nxroot[Layout.EXPERIMENT_IDENTIFIER]
    return [*good, not_hdf5, no_identifier]
