"""IDS: the ICAT Data Service beside the catalogue (``/ids/`` on its host and port).

Ping and version; with a writer account, a small file put into a tagged hierarchy and read
back byte for byte, its Datafile carrying the size and CRC-32 the IDS computed; the same put
refused to the reader; and everything removed — the file through the IDS, then the hierarchy by
the ownership-checked cleanup. A deployment without an IDS (``/ids/ping`` does not answer
``IdsOK``) skips the part: "no IDS" is a fact about it, not a failure. An IDS that answers ping
but fails a call is a failure with its cause (``ids-fault``, or ``insufficient-privileges``).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import Catalogue, ClientConfig
from igestbench.client.data_service import (
    DataService,
    IdsFault,
    LeanDataService,
    connect_data_service,
)
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.results.causes import NO_IDS
from igestbench.run.data_service import IdsProbe, probe_ids
from igestbench.verify.options import READ_ROLE, VerifyOptions
from igestbench.workloads import RunTag, cleanup
from igestbench.workloads.stored_files import remove_stored_files
from sv_tests.conftest import Fact, elapsed_ms, logged_in, need_account
from sv_tests.test_write import Hierarchy, build_hierarchy, count_under_tag

pytestmark = [pytest.mark.part("ids")]

#: The file the round trip puts: small, random (a server that answers cached bytes fails).
FILE_BYTES = 4096


@pytest.fixture(scope="module")
def ids(config: ClientConfig) -> IdsProbe:
    """The target's IDS; the part is skipped where there is none."""
    found = probe_ids(config)
    if not found.served:
        pytest.skip(f"{NO_IDS} {found.url}: {found.problem}")
    return found


def test_ids_ping_and_version(ids: IdsProbe, config: ClientConfig, fact: Fact) -> None:
    service = LeanDataService(config, ids.url, session=lambda: "")  # these take no session
    try:
        start = time.perf_counter_ns()
        assert service.ping() == "IdsOK", "the IDS stopped answering its ping"
        fact("ids_ping_ms", elapsed_ms(start))
        version = service.version()  # an IDS's error answer is an IdsFault: ids-fault
    finally:
        service.close()
    fact("ids_version", version)
    assert version, f"{ids.url}/version answered no version"


@contextlib.contextmanager
def data_service(config: ClientConfig, url: str, catalogue: Catalogue) -> Iterator[DataService]:
    service = connect_data_service(config, url, catalogue)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture(scope="module")
def stored(
    ids: IdsProbe, config: ClientConfig, options: VerifyOptions, writer: Catalogue,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Hierarchy, Path, int]]:  # fmt: skip
    """A tagged hierarchy with a DatafileFormat, and a file put into its Dataset by the writer
    (hierarchy, local file, Datafile id); removed afterwards, also when a check failed."""
    h = Hierarchy(RunTag.new(f"{options.site or 'sv7'}-ids"))
    h.journal.name_data_service(ids.url)
    path = tmp_path_factory.mktemp("ids") / "sv7-ids-check.dat"
    path.write_bytes(os.urandom(FILE_BYTES))
    try:
        build_hierarchy(writer, h)
        h.create(writer, Bean("DatafileFormat", {
            "name": "sv7-check", "version": "1", "facility": h.ref("Facility"),
        }))  # fmt: skip
        with data_service(config, ids.url, writer) as service:
            answer = service.put(path, f"{h.tag.name}.dat", h.ids["Dataset"],
                                 h.ids["DatafileFormat"])  # fmt: skip
        h.journal.add("Datafile", answer.id)
        yield h, path, answer.id
    finally:
        if not h.cleaned:
            with contextlib.suppress(Sv7Error), data_service(config, ids.url, writer) as service:
                remove_stored_files(writer, service, h.journal.facilities)
            cleanup(writer, h.journal)


@pytest.mark.part("ids", writes=True)
def test_ids_put_and_get_round_trip(
    stored: tuple[Hierarchy, Path, int], ids: IdsProbe, config: ClientConfig,
    writer: Catalogue, fact: Fact,
) -> None:  # fmt: skip
    _, path, df_id = stored
    sent = path.read_bytes()
    datafile = writer.get("Datafile", df_id)
    assert datafile.get("fileSize") == len(sent), (
        f"the IDS registered fileSize {datafile.get('fileSize')} for {len(sent)} bytes"
    )
    assert datafile.get("checksum") == f"{zlib.crc32(sent):x}", (
        f"the IDS registered checksum {datafile.get('checksum')}, the CRC-32 is "
        f"{zlib.crc32(sent):x}"
    )
    assert datafile.get("location"), "the IDS registered no location"
    back = io.BytesIO()
    with data_service(config, ids.url, writer) as service:
        start = time.perf_counter_ns()
        service.get_data([df_id], back, len(sent))
        fact("ids_get_ms", elapsed_ms(start))
    assert back.getvalue() == sent, "the IDS gave back other bytes than were put"


@pytest.mark.part("ids", writes=True)
def test_ids_reader_cannot_put(
    stored: tuple[Hierarchy, Path, int], ids: IdsProbe, config: ClientConfig,
    options: VerifyOptions,
) -> None:  # fmt: skip
    h, path, _ = stored
    account = need_account(options, READ_ROLE)
    with (
        logged_in(config, options.flavour, account) as reader,
        data_service(config, ids.url, reader) as service,
    ):
        try:
            answer = service.put(path, f"{h.tag.name}-by-reader.dat", h.ids["Dataset"],
                                 h.ids["DatafileFormat"])  # fmt: skip
        except IdsFault as exc:
            assert exc.code == "InsufficientPrivilegesException", (
                f"the reader's put was refused, but as {exc.code}: {exc.message}"
            )
            return
        # the file is the reader's (its createId): removed with the reader's own session,
        # since the writer's cleanup takes only the writer's files out of the IDS
        try:
            service.delete([answer.id])
            left = ""
        except Sv7Error as exc:
            h.journal.add("Datafile", answer.id)  # the object at least goes with the tree
            left = f"; its file could not be removed ({exc}): Datafile {answer.id}"
    raise AssertionError(f"the reader account could put a file through the IDS{left}")


@pytest.mark.part("ids", writes=True)
def test_ids_cleanup_leaves_nothing(
    stored: tuple[Hierarchy, Path, int], ids: IdsProbe, config: ClientConfig,
    writer: Catalogue, fact: Fact,
) -> None:  # fmt: skip
    h, _, df_id = stored
    with data_service(config, ids.url, writer) as service:
        files = remove_stored_files(writer, service, h.journal.facilities)
        assert not files.left, f"files left in the IDS: {files.left}"
        with pytest.raises(IdsFault):  # the IDS no longer knows the file
            service.get_data([df_id], io.BytesIO(), FILE_BYTES)
    report = cleanup(writer, h.journal)
    h.cleaned = True
    fact("ids_cleanup", {"files": files.deleted, "deleted": report.deleted})
    assert count_under_tag(writer, h.tag) == 0, "the tagged hierarchy is still there"
