"""Writing one Virtual Lab NeXus file with h5py.

Writing is set-up work, never timed, so it uses h5py's high-level API and favours clarity. Files
are byte-for-byte reproducible for the same inputs and library versions (no object timestamps,
no wall-clock dates), so regenerated fixtures only change when their content does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from typing import Any

import h5py
import numpy as np

import igestbench
from igestbench.nexus.model import Acquisition, Layout

#: NeXus strings are variable-length UTF-8, the encoding every NeXus reader accepts.
_TEXT = h5py.string_dtype("utf-8")

#: The NeXus application definition whose field placement the layout follows.
DEFINITION = "NXarchive"


def payload_checksum(payload: bytes) -> str:
    """The checksum recorded for a payload: ``sha256:`` and its hex digest."""
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def _iso(moment: dt.datetime) -> str:
    """ISO 8601 with an explicit offset, which NeXus requires of its date fields."""
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; NeXus dates need one")
    return moment.isoformat()


def _group(parent: h5py.Group, name: str, nx_class: str) -> h5py.Group:
    group = parent.create_group(name)
    group.attrs["NX_class"] = nx_class
    return group


def _text(group: h5py.Group, name: str, value: str) -> h5py.Dataset:
    # track_times=False keeps creation timestamps out of the file, so it is reproducible.
    return group.create_dataset(name, data=value, dtype=_TEXT, track_times=False)


def _leaf(path: str) -> str:
    return path.rsplit("/", 1)[1]


def write_acquisition(
    path: str | os.PathLike[str], acquisition: Acquisition, payload: bytes = b""
) -> None:
    """Write ``acquisition`` as a NeXus file at ``path``, with ``payload`` as its NXdata signal.

    An empty payload writes no NXdata group. The file is replaced if it exists.
    """
    a = acquisition
    file_name = os.path.basename(os.fspath(path))
    with h5py.File(path, "w") as nxroot:
        root_attrs: dict[str, Any] = {
            "NX_class": "NXroot",
            "default": _leaf(Layout.ENTRY),
            "file_name": file_name,
            # The acquisition system closes the file when the measurement ends.
            Layout.FILE_TIME: _iso(a.end_time),
            "creator": f"igestbench {igestbench.__version__}",
            "HDF5_Version": h5py.version.hdf5_version,
            "h5py_version": h5py.version.version,
        }
        nxroot.attrs.update(root_attrs)

        entry = _group(nxroot, _leaf(Layout.ENTRY), "NXentry")
        _text(entry, _leaf(Layout.TITLE), a.title)
        _text(entry, _leaf(Layout.EXPERIMENT_IDENTIFIER), a.visit_id)
        _text(entry, _leaf(Layout.COLLECTION_IDENTIFIER), a.dataset_name)
        _text(entry, _leaf(Layout.START_TIME), _iso(a.start_time))
        _text(entry, _leaf(Layout.END_TIME), _iso(a.end_time))
        _text(entry, _leaf(Layout.DEFINITION), DEFINITION)

        instrument = _group(entry, _leaf(Layout.INSTRUMENT), "NXinstrument")
        instrument_name = _text(instrument, _leaf(Layout.INSTRUMENT_NAME), a.instrument_full_name)
        instrument_name.attrs[Layout.SHORT_NAME] = a.instrument_name
        source = _group(instrument, _leaf(Layout.SOURCE), "NXsource")
        _text(source, _leaf(Layout.SOURCE_NAME), a.facility)

        sample = _group(entry, _leaf(Layout.SAMPLE), "NXsample")
        _text(sample, _leaf(Layout.SAMPLE_NAME), a.sample_name)

        user = _group(entry, _leaf(Layout.USER), "NXuser")
        _text(user, _leaf(Layout.USER_NAME), a.user_name)
        _text(user, _leaf(Layout.USER_AFFILIATION), a.user_affiliation)

        icat = _group(entry, _leaf(Layout.ICAT), "NXcollection")
        _text(icat, _leaf(Layout.INVESTIGATION_NAME), a.investigation_name)
        _text(icat, _leaf(Layout.INVESTIGATION_TYPE), a.investigation_type)
        _text(icat, _leaf(Layout.DATASET_TYPE), a.dataset_type)
        _text(icat, _leaf(Layout.DATAFILE_FORMAT), a.format_name)
        _text(icat, _leaf(Layout.DATAFILE_FORMAT_VERSION), a.format_version)
        _text(icat, _leaf(Layout.DATAFILE_DESCRIPTION), a.description)
        _text(icat, _leaf(Layout.DATAFILE_CHECKSUM), payload_checksum(payload))

        if payload:
            entry.attrs["default"] = _leaf(Layout.DATA)
            data = _group(entry, _leaf(Layout.DATA), "NXdata")
            data.attrs["signal"] = _leaf(Layout.DATA_SIGNAL)
            data.create_dataset(
                _leaf(Layout.DATA_SIGNAL),
                data=np.frombuffer(payload, dtype=np.uint8),
                track_times=False,
            )
