"""Virtual Lab NeXus files: written, read back, turned into Beans, and refused when broken."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import types
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

import igestbench.nexus as nexus
from igestbench.errors import NexusError
from igestbench.nexus import (
    Layout,
    NexusMetadata,
    generate_run,
    payload_checksum,
    payload_for,
    plan_run,
    read_metadata,
    to_beans,
    write_acquisition,
    write_fixture_files,
)
from igestbench.nexus.__main__ import main as nexus_main
from igestbench.nexus.generator import (
    FIXTURE_PAYLOAD_BYTES,
    FIXTURE_RUN_TAG,
    FIXTURE_SEED,
    NO_EXPERIMENT_IDENTIFIER_FIXTURE,
    NOT_HDF5_FIXTURE,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nexus"
GOOD_FIXTURES = ("scan-00000.nxs", "scan-00001.nxs", "scan-00002.nxs")
RUN_TAG = "sv7-TEST-1"


def _without_file_system_facts(metadata: NexusMetadata) -> NexusMetadata:
    """The metadata minus what depends on where and when the file was written."""
    datafile = dataclasses.replace(
        metadata.datafile, location="", mod_time=dt.datetime.min.replace(tzinfo=dt.UTC)
    )
    return dataclasses.replace(metadata, datafile=datafile)


# --- round trip -----------------------------------------------------------------------------


def test_round_trip_of_a_run(tmp_path: Path) -> None:
    paths = generate_run(
        tmp_path, RUN_TAG, 7, seed=3, payload_bytes=100, files_per_dataset=2,
        datasets_per_investigation=2,
    )  # fmt: skip
    plan = plan_run(RUN_TAG, 7, seed=3, files_per_dataset=2, datasets_per_investigation=2)

    assert [path.name for path in paths] == [planned.file_name for planned in plan]
    for path, planned in zip(paths, plan, strict=True):
        a = planned.acquisition
        metadata = read_metadata(path)
        assert metadata.facility.name == RUN_TAG
        assert (metadata.instrument.name, metadata.instrument.full_name) == (
            a.instrument_name,
            a.instrument_full_name,
        )
        inv = metadata.investigation
        assert (inv.name, inv.visit_id, inv.title, inv.type) == (
            a.investigation_name,
            a.visit_id,
            a.title,
            a.investigation_type,
        )
        assert (inv.start_date, inv.end_date) == (a.start_time, a.end_time)
        ds = metadata.dataset
        assert (ds.name, ds.type, ds.start_date, ds.end_date) == (
            a.dataset_name,
            a.dataset_type,
            a.start_time,
            a.end_time,
        )
        df = metadata.datafile
        assert df.name == path.name
        assert df.location == str(path.absolute())
        assert df.size == path.stat().st_size
        assert df.checksum == payload_checksum(payload_for(3, planned.index, 100))
        assert (df.format_name, df.format_version) == (a.format_name, a.format_version)
        assert df.description == a.description
        assert df.create_time == a.end_time
        assert df.mod_time == dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)


def test_files_are_grouped_into_datasets_and_investigations() -> None:
    plan = plan_run(RUN_TAG, 9, files_per_dataset=2, datasets_per_investigation=2)
    datasets = [(p.acquisition.visit_id, p.acquisition.dataset_name) for p in plan]
    visits = [p.acquisition.visit_id for p in plan]

    assert len(set(datasets)) == 5  # 2+2+2+2+1 files
    assert datasets[0] == datasets[1] != datasets[2]
    assert len(set(visits)) == 3  # 4+4+1 files
    assert visits[0] == visits[3] != visits[4]
    assert all(p.acquisition.start_time < p.acquisition.end_time for p in plan)


def test_payload_is_written_as_nxdata_and_checksummed(tmp_path: Path) -> None:
    (with_payload,) = generate_run(tmp_path / "a", RUN_TAG, 1, seed=5, payload_bytes=64)
    (without,) = generate_run(tmp_path / "b", RUN_TAG, 1, seed=5)

    with h5py.File(with_payload, "r") as nxroot:
        assert nxroot[Layout.DATA].attrs["NX_class"] == "NXdata"
        assert bytes(nxroot[Layout.DATA_SIGNAL][()]) == payload_for(5, 0, 64)
    with h5py.File(without, "r") as nxroot:
        assert Layout.DATA not in nxroot
    assert read_metadata(without).datafile.checksum == payload_checksum(b"")


def test_file_follows_nexus_conventions(tmp_path: Path) -> None:
    (path,) = generate_run(tmp_path, RUN_TAG, 1)

    with h5py.File(path, "r") as nxroot:
        assert nxroot.attrs["default"] == "entry"
        classes = {
            Layout.ENTRY: "NXentry",
            Layout.INSTRUMENT: "NXinstrument",
            Layout.SOURCE: "NXsource",
            Layout.SAMPLE: "NXsample",
            Layout.USER: "NXuser",
            Layout.ICAT: "NXcollection",
        }
        for group, nx_class in classes.items():
            assert nxroot[group].attrs["NX_class"] == nx_class
        for field in (Layout.TITLE, Layout.USER_NAME, Layout.SAMPLE_NAME):
            string_info = h5py.check_string_dtype(nxroot[field].dtype)
            assert (string_info.encoding, string_info.length) == ("utf-8", None)
        assert nxroot[Layout.USER_AFFILIATION][()]


# --- determinism ----------------------------------------------------------------------------


def test_same_arguments_give_the_same_files(tmp_path: Path) -> None:
    first = generate_run(tmp_path / "1", RUN_TAG, 4, seed=11, payload_bytes=16)
    second = generate_run(tmp_path / "2", RUN_TAG, 4, seed=11, payload_bytes=16)

    for a, b in zip(first, second, strict=True):
        assert _without_file_system_facts(read_metadata(a)) == _without_file_system_facts(
            read_metadata(b)
        )
        assert a.read_bytes() == b.read_bytes()


def test_another_seed_gives_other_metadata() -> None:
    assert plan_run(RUN_TAG, 4, seed=1) != plan_run(RUN_TAG, 4, seed=2)
    assert payload_for(1, 0, 32) != payload_for(2, 0, 32)


@pytest.mark.parametrize(
    "arguments",
    [{"count": -1}, {"files_per_dataset": 0}, {"datasets_per_investigation": 0}],
)
def test_plan_rejects_impossible_arguments(arguments: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        plan_run(RUN_TAG, **{"count": 1, **arguments})


# --- Beans ----------------------------------------------------------------------------------


def test_beans_carry_icat_field_names_and_links(tmp_path: Path) -> None:
    (path,) = generate_run(tmp_path, RUN_TAG, 1, payload_bytes=8)
    metadata = read_metadata(path)
    beans = to_beans(metadata)

    assert [bean.entity for bean in beans.in_creation_order()] == [
        "Facility", "Instrument", "InvestigationType", "Investigation", "DatasetType", "Dataset",
        "DatafileFormat", "Datafile",
    ]  # fmt: skip
    assert beans.facility.values == {"name": RUN_TAG}
    assert beans.instrument["fullName"] == metadata.instrument.full_name
    assert beans.investigation["visitId"] == metadata.investigation.visit_id
    assert beans.investigation["title"] == metadata.investigation.title
    assert beans.investigation["startDate"] == metadata.investigation.start_date
    assert beans.investigation["type"] is beans.investigation_type
    assert beans.dataset["complete"] is False
    assert beans.dataset["investigation"] is beans.investigation
    assert beans.dataset["type"] is beans.dataset_type
    assert beans.datafile_format["version"] == metadata.datafile.format_version
    df = beans.datafile
    assert (df["name"], df["location"], df["fileSize"], df["checksum"]) == (
        metadata.datafile.name,
        metadata.datafile.location,
        metadata.datafile.size,
        metadata.datafile.checksum,
    )
    assert df["datafileCreateTime"] == metadata.datafile.create_time
    assert df["dataset"] is beans.dataset
    assert df["datafileFormat"] is beans.datafile_format
    for bean in (beans.instrument, beans.investigation_type, beans.dataset_type):
        assert bean["facility"] is beans.facility


def test_ids_set_on_one_bean_are_seen_by_every_bean_that_refers_to_it(tmp_path: Path) -> None:
    (path,) = generate_run(tmp_path, RUN_TAG, 1)
    beans = to_beans(read_metadata(path))

    beans.facility["id"] = 42

    assert beans.investigation["facility"].id == 42
    assert beans.datafile_format["facility"].id == 42
    assert to_beans(read_metadata(path)).facility.id is None  # fresh Beans every call


def test_beans_leave_out_unknown_optional_fields(tmp_path: Path) -> None:
    (path,) = generate_run(tmp_path, RUN_TAG, 1)
    metadata = read_metadata(path)
    bare = dataclasses.replace(metadata.datafile, checksum=None, description=None, create_time=None)

    datafile = to_beans(dataclasses.replace(metadata, datafile=bare)).datafile

    assert "checksum" not in datafile
    assert "description" not in datafile
    assert "datafileCreateTime" not in datafile


# --- bad files ------------------------------------------------------------------------------


@pytest.fixture
def good_file(tmp_path: Path) -> Path:
    (path,) = generate_run(tmp_path, RUN_TAG, 1)
    return path


def _edit(path: Path, change: Callable[[h5py.File], object]) -> Path:
    with h5py.File(path, "r+") as nxroot:
        change(nxroot)
    return path


def _replace(path: str, value: object) -> Callable[[h5py.File], None]:
    def change(nxroot: h5py.File) -> None:
        del nxroot[path]
        nxroot[path] = value

    return change


BAD_EDITS: dict[str, tuple[Callable[[h5py.File], object], str]] = {
    "missing field": (
        lambda f: f.__delitem__(Layout.EXPERIMENT_IDENTIFIER),
        "/entry/experiment_identifier is missing",
    ),
    "missing group": (
        lambda f: f.__delitem__(Layout.INSTRUMENT),
        "/entry/instrument is missing",
    ),
    "number for a string": (
        _replace(Layout.TITLE, 42),
        "/entry/title should be a string, found int64",
    ),
    "group for a field": (
        lambda f: (f.__delitem__(Layout.SOURCE_NAME), f.create_group(Layout.SOURCE_NAME)),
        "/entry/instrument/source/name is a group, not a field",
    ),
    "several strings": (
        _replace(Layout.COLLECTION_IDENTIFIER, np.array([b"a", b"b", b"c"])),
        "/entry/collection_identifier should hold one string, found several",
    ),
    "empty string": (
        _replace(Layout.INVESTIGATION_NAME, ""),
        "/entry/icat/investigation_name is empty",
    ),
    "not a date": (
        _replace(Layout.START_TIME, "last Tuesday"),
        "/entry/start_time is not an ISO 8601 date and time: 'last Tuesday'",
    ),
    "bad file_time": (
        lambda f: f.attrs.__setitem__(Layout.FILE_TIME, "soon"),
        "/@file_time is not an ISO 8601 date and time: 'soon'",
    ),
    "not UTF-8": (
        _replace(Layout.DATASET_TYPE, np.bytes_(b"\xff\xfe")),
        "/entry/icat/dataset_type is not valid UTF-8",
    ),
    "number for a short name": (
        lambda f: f[Layout.INSTRUMENT_NAME].attrs.__setitem__(Layout.SHORT_NAME, 7),
        "/entry/instrument/name/@short_name should be a string, found int64",
    ),
}


@pytest.mark.parametrize("case", BAD_EDITS)
def test_bad_content_names_file_and_hdf5_path(good_file: Path, case: str) -> None:
    change, problem = BAD_EDITS[case]
    _edit(good_file, change)

    with pytest.raises(NexusError) as caught:
        read_metadata(good_file)

    assert str(caught.value) == f"{good_file}: {problem}"


def test_a_text_file_is_not_hdf5(tmp_path: Path) -> None:
    path = tmp_path / "run-0003.nxs"
    path.write_text("not HDF5\n")

    with pytest.raises(NexusError, match=r"run-0003\.nxs: is not an HDF5 file"):
        read_metadata(path)


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(NexusError, match=r"absent\.nxs: cannot be read \(No such file"):
        read_metadata(tmp_path / "absent.nxs")


def test_a_truncated_file_is_unreadable(good_file: Path) -> None:
    content = good_file.read_bytes()
    good_file.write_bytes(content[: len(content) // 4])

    with pytest.raises(NexusError, match=r"scan-00000\.nxs: is an HDF5 file that cannot be opened"):
        read_metadata(good_file)


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files without permission"
)
def test_a_file_without_read_permission_is_unreadable(good_file: Path) -> None:
    good_file.chmod(0)

    with pytest.raises(NexusError, match=r"scan-00000\.nxs: "):
        read_metadata(good_file)


# --- what other NeXus writers do --------------------------------------------------------------


def test_strings_as_one_element_arrays_and_fixed_length_are_accepted(good_file: Path) -> None:
    _edit(
        good_file,
        _replace(Layout.TITLE, np.array(["One-element title"], dtype=h5py.string_dtype())),
    )
    _edit(good_file, _replace(Layout.INVESTIGATION_TYPE, np.bytes_(b"experiment")))

    metadata = read_metadata(good_file)

    assert metadata.investigation.title == "One-element title"
    assert metadata.investigation.type == "experiment"


def test_optional_items_may_be_absent(good_file: Path) -> None:
    def strip(nxroot: h5py.File) -> None:
        del nxroot[Layout.DATAFILE_CHECKSUM]
        del nxroot[Layout.DATAFILE_DESCRIPTION]
        del nxroot.attrs[Layout.FILE_TIME]
        del nxroot[Layout.INSTRUMENT_NAME].attrs[Layout.SHORT_NAME]

    metadata = read_metadata(_edit(good_file, strip))

    assert metadata.datafile.checksum is None
    assert metadata.datafile.description is None
    assert metadata.datafile.create_time is None
    assert metadata.instrument.name == metadata.instrument.full_name


def test_writer_refuses_naive_times(tmp_path: Path) -> None:
    acquisition = plan_run(RUN_TAG, 1)[0].acquisition
    naive = dataclasses.replace(acquisition, start_time=dt.datetime(2024, 1, 1))

    with pytest.raises(ValueError, match="no time zone"):
        write_acquisition(tmp_path / "naive.nxs", naive)


# --- committed fixtures ---------------------------------------------------------------------


@pytest.mark.parametrize("name", GOOD_FIXTURES)
def test_fixture_files_load(name: str) -> None:
    metadata = read_metadata(FIXTURES / name)

    assert metadata.facility.name == FIXTURE_RUN_TAG
    assert metadata.datafile.name == name


def test_bad_fixture_files_are_refused() -> None:
    with pytest.raises(NexusError, match=f"{NOT_HDF5_FIXTURE}: is not an HDF5 file"):
        read_metadata(FIXTURES / NOT_HDF5_FIXTURE)
    with pytest.raises(
        NexusError,
        match=f"{NO_EXPERIMENT_IDENTIFIER_FIXTURE}: /entry/experiment_identifier is missing",
    ):
        read_metadata(FIXTURES / NO_EXPERIMENT_IDENTIFIER_FIXTURE)


def test_fixture_files_match_what_the_generator_writes_today(tmp_path: Path) -> None:
    fresh = write_fixture_files(tmp_path)

    assert sorted(path.name for path in fresh) == sorted(
        [*GOOD_FIXTURES, NOT_HDF5_FIXTURE, NO_EXPERIMENT_IDENTIFIER_FIXTURE]
    )
    for name in GOOD_FIXTURES:
        committed = _without_file_system_facts(read_metadata(FIXTURES / name))
        assert committed == _without_file_system_facts(read_metadata(tmp_path / name)), (
            "fixtures/nexus is stale: run python -m igestbench.nexus fixtures/nexus"
        )
    assert read_metadata(FIXTURES / GOOD_FIXTURES[0]).datafile.checksum == payload_checksum(
        payload_for(FIXTURE_SEED, 0, FIXTURE_PAYLOAD_BYTES)
    )


def test_module_entry_point_writes_the_fixtures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert nexus_main([str(tmp_path)]) == 0

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*GOOD_FIXTURES, NOT_HDF5_FIXTURE, NO_EXPERIMENT_IDENTIFIER_FIXTURE]
    )
    assert capsys.readouterr().out.count(".nxs") == 5


def test_public_api_is_exactly_all() -> None:
    public = {
        name
        for name, value in vars(nexus).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }

    assert public == set(nexus.__all__)
