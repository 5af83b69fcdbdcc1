"""REST: ICAT's second interface (``/icat/...``) answers beside SOAP, over the same catalogue.

The version (the same as SOAP's), a session per account (login, user name, refresh, logout; an
ended session is refused), a query answering what SOAP answers, and — with a writer account —
a tagged hierarchy written over REST, read back over SOAP, refused to the reader, and removed
over REST by the ownership-checked cleanup. What is written hangs below a Facility named by the
run tag and is journaled as it is created, as in the SOAP write checks.

ICAT 4.x had no REST API as the rest client speaks it: those catalogues skip the part. A
catalogue of ICAT 5 or later that answers SOAP but not REST has a proxy or firewall in the way
(cause ``rest-missing``): REST clients (TopCAT, ICAT+) cannot use it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from igestbench.client import Catalogue, ClientConfig, TransportCause, TransportFailure, connect
from igestbench.client.rest_flavour import rest_base_url
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInsufficientPrivileges, IcatSession
from igestbench.verify.diagnosis import CheckFailed
from igestbench.verify.options import READ_ROLE, Account, VerifyOptions
from igestbench.verify.plugin import OPTIONS_KEY, VERSION_KEY
from igestbench.workloads import RunTag, cleanup
from sv_tests.conftest import Fact, elapsed_ms, log_out, login, need_account
from sv_tests.test_write import Hierarchy, build_hierarchy, count_under_tag

pytestmark = [pytest.mark.part("rest"), pytest.mark.icat_version(">=5")]

#: Where a REST client that cannot connect says the answer was not ICAT's REST API.
_NOT_REST = (TransportCause.HTTP_STATUS, TransportCause.NOT_ICAT)


def connect_rest(config: ClientConfig) -> Catalogue:
    """A rest client; a target that answers SOAP but not REST fails as ``rest-missing``."""
    try:
        return connect(config, "rest")
    except TransportFailure as exc:
        if exc.cause not in _NOT_REST:
            raise  # refused, timeout, TLS …: the diagnosis names it as for SOAP
        raise CheckFailed(
            "rest-missing", f"{rest_base_url(config.url)}/version: {exc.detail or exc}"
        ) from exc


@contextlib.contextmanager
def rest_session(config: ClientConfig, account: Account) -> Iterator[Catalogue]:
    catalogue = connect_rest(config)
    try:
        login(catalogue, account)
        try:
            yield catalogue
        finally:
            log_out(config, catalogue)
    finally:
        catalogue.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "account" in metafunc.fixturenames:
        options = metafunc.config.stash[OPTIONS_KEY]
        accounts: list[Account | None] = [*options.accounts] or [None]
        metafunc.parametrize("account", accounts, ids=[a.role if a else "no-account"
                                                       for a in accounts])


def test_rest_version(config: ClientConfig, request: pytest.FixtureRequest, fact: Fact) -> None:
    start = time.perf_counter_ns()
    catalogue = connect_rest(config)
    try:
        fact("rest_version_ms", elapsed_ms(start))
        version = catalogue.version()
    finally:
        catalogue.close()
    fact("rest_version", version)
    soap = request.config.stash[VERSION_KEY]
    assert soap is None or version == soap, f"REST says ICAT {version}, SOAP says {soap}"


def test_rest_login(
    account: Account | None, config: ClientConfig, options: VerifyOptions, fact: Fact
) -> None:
    if account is None:
        need_account(options)
        return
    catalogue = connect_rest(config)
    try:
        start = time.perf_counter_ns()
        login(catalogue, account)
        fact("rest_login_ms", elapsed_ms(start))
        try:
            name = catalogue.user_name()
        finally:
            log_out(config, catalogue)  # also when the deadline cut the call off
        assert name.split("/")[-1] == account.username, (
            f"logged in over REST as {account.user_name}, but the session says {name!r}"
        )
    finally:
        catalogue.close()


def test_rest_session_refresh_and_logout(config: ClientConfig, options: VerifyOptions) -> None:
    catalogue = connect_rest(config)
    try:
        login(catalogue, need_account(options))
        try:
            catalogue.refresh()
            catalogue.user_name()
        except BaseException:
            log_out(config, catalogue)  # the logout below is what this check tests
            raise
        catalogue.logout()
        try:
            catalogue.user_name()
        except IcatSession:
            return
        raise AssertionError("a REST session still works after logout (DELETE /icat/session)")
    finally:
        catalogue.close()


def test_rest_query_answers_as_soap(
    config: ClientConfig, options: VerifyOptions, reader: Catalogue
) -> None:
    queries = ("SELECT COUNT(f) FROM Facility f", "SELECT f.id FROM Facility f ORDER BY f.id")
    with rest_session(config, need_account(options)) as rest:
        for query in queries:
            over_rest, over_soap = rest.search(query), reader.search(query)
            assert over_rest == over_soap, (
                f"{query}: REST answers {over_rest[:5]}, SOAP {over_soap[:5]}"
            )
        facilities = rest.search("SELECT f FROM Facility f ORDER BY f.id LIMIT 0, 5")
        assert all(isinstance(f, Bean) and f.entity == "Facility" for f in facilities)


@pytest.fixture(scope="module")
def rest_hierarchy(
    config: ClientConfig, options: VerifyOptions, writer: Catalogue
) -> Iterator[tuple[Catalogue, Hierarchy]]:
    """A tagged hierarchy written over REST (journaled as created); removed afterwards over
    REST by the ownership-checked cleanup, also when a check failed half-way."""
    h = Hierarchy(RunTag.new(f"{options.site or 'sv7'}-rest"))
    with rest_session(config, need_account(options, "writer")) as rest:
        try:
            build_hierarchy(rest, h)
            yield rest, h
        finally:
            if not h.cleaned:
                cleanup(rest, h.journal)


@pytest.mark.part("rest", writes=True)
def test_rest_write_read_back_over_soap(
    rest_hierarchy: tuple[Catalogue, Hierarchy], writer: Catalogue
) -> None:
    rest, h = rest_hierarchy
    assert count_under_tag(writer, h.tag) == 2, "SOAP does not see the Datafiles REST wrote"
    dataset = writer.get("Dataset ds INCLUDE ds.investigation", h.ids["Dataset"])
    assert dataset["investigation"].id == h.ids["Investigation"]
    again = rest.get("Dataset", h.ids["Dataset"])
    assert again["name"] == dataset["name"], "REST and SOAP read the Dataset differently"


@pytest.mark.part("rest", writes=True)
def test_rest_reader_cannot_write(
    rest_hierarchy: tuple[Catalogue, Hierarchy], config: ClientConfig, options: VerifyOptions
) -> None:
    _, h = rest_hierarchy
    bean = Bean("Datafile", {"name": "sv7-rest-by-reader.nxs", "dataset": h.ref("Dataset")})
    with rest_session(config, need_account(options, READ_ROLE)) as reader:
        try:
            new_id = reader.create(bean)
        except IcatInsufficientPrivileges:
            return
        # removed by the reader itself: the run's cleanup deletes only what the run's own
        # account created (createId), never another account's object
        with contextlib.suppress(Sv7Error):
            reader.delete(Bean("Datafile", {"id": new_id}))
    raise AssertionError("the reader account could create a Datafile over REST")


@pytest.mark.part("rest", writes=True)
def test_rest_cleanup_leaves_nothing(
    rest_hierarchy: tuple[Catalogue, Hierarchy], writer: Catalogue, fact: Fact
) -> None:
    rest, h = rest_hierarchy
    report = cleanup(rest, h.journal)  # the same ownership rules as over SOAP
    h.cleaned = True
    fact("rest_cleanup", {"deleted": report.deleted, "foreign": len(report.foreign)})
    assert not report.foreign, f"journaled objects not the run's: {report.foreign}"
    (left,) = writer.search(
        f"SELECT COUNT(f) FROM Facility f WHERE f.name = '{h.tag.name}'"
    )
    assert int(left) == 0 and count_under_tag(writer, h.tag) == 0, "REST left the hierarchy"
