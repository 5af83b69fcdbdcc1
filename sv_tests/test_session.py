"""Sessions: each configured account logs in, the session works, is refreshed, and ends.

A session that has ended and one that never existed must both be refused with a SESSION fault.
"""

from __future__ import annotations

import time
import uuid

import pytest

from igestbench.client import ClientConfig, connect
from igestbench.icat.faults import IcatSession
from igestbench.results import scoring
from igestbench.verify.options import Account, VerifyOptions
from igestbench.verify.plugin import OPTIONS_KEY
from sv_tests.conftest import (
    Fact,
    elapsed_ms,
    log_out,
    logged_in,
    login,
    need_account,
    raw_session,
)

pytestmark = pytest.mark.part("session")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "account" in metafunc.fixturenames:
        options = metafunc.config.stash[OPTIONS_KEY]
        accounts: list[Account | None] = [*options.accounts] or [None]
        ids = [a.role if a else "no-account" for a in accounts]
        metafunc.parametrize("account", accounts, ids=ids)


def test_login(
    account: Account | None, config: ClientConfig, options: VerifyOptions, fact: Fact
) -> None:
    if account is None:
        need_account(options)
        return
    catalogue = connect(config, options.flavour)
    try:
        start = time.perf_counter_ns()
        login(catalogue, account)
        fact("login_ms", elapsed_ms(start))
        fact(f"{scoring.LOGINS}.{account.role}", account.authenticator)
        try:
            name = catalogue.user_name()
        finally:
            log_out(config, catalogue)  # also when the deadline cut getUserName off
        # ICAT names users mechanism/name, or just name when the plugin is set up without prefix
        assert name.split("/")[-1] == account.username, (
            f"logged in as {account.user_name}, but getUserName says {name!r}"
        )
    finally:
        catalogue.close()


def test_refresh(config: ClientConfig, options: VerifyOptions) -> None:
    with logged_in(config, options.flavour, need_account(options)) as catalogue:
        catalogue.refresh()
        catalogue.user_name()


def test_ended_session_refused(config: ClientConfig, options: VerifyOptions) -> None:
    with raw_session(config, need_account(options)) as (soap, sid):
        soap.logout(sid)
        try:
            soap.user_name(sid)
        except IcatSession:
            return
    raise AssertionError("a session still works after logout")


def test_invalid_session_refused(config: ClientConfig, options: VerifyOptions) -> None:
    with raw_session(config, need_account(options)) as (soap, _):
        try:
            soap.user_name(str(uuid.uuid4()))
        except IcatSession:
            return
    raise AssertionError("a made-up session id is accepted")
