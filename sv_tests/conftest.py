"""Fixtures of the service checks: the target, clients logged in per role, and facts.

The options (``--target``, ``--account ROLE=MECH/NAME`` …) come from
:mod:`igestbench.verify.options` through the plugin loaded below; without ``--target`` every
check skips. Nothing here touches the network at import time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from igestbench.client import Catalogue, ClientConfig, Endpoint, connect, endpoint_of
from igestbench.client.deadline import grace
from igestbench.errors import Sv7Error
from igestbench.icat.faults import IcatSession
from igestbench.verify.diagnosis import CheckFailed
from igestbench.verify.options import READ_ROLE, WRITE_ROLE, Account, VerifyOptions
from igestbench.verify.plugin import CLEANUP_GRACE_S, FACT_PREFIX, OPTIONS_KEY, client_config
from igestbench.verify.rawsoap import RawSoap

pytest_plugins = ("igestbench.verify.plugin",)

Fact = Callable[[str, Any], None]


@pytest.fixture(scope="session")
def options(pytestconfig: pytest.Config) -> VerifyOptions:
    return pytestconfig.stash[OPTIONS_KEY]


@pytest.fixture(scope="session")
def config(options: VerifyOptions) -> ClientConfig:
    return client_config(options)


@pytest.fixture(scope="session")
def endpoint(options: VerifyOptions) -> Endpoint:
    assert options.target is not None
    return endpoint_of(options.target)


@pytest.fixture
def fact(request: pytest.FixtureRequest) -> Fact:
    """Record a fact (scores, perfdata) for the plugin: ``fact("rtt_ms", 1.2)``."""

    def record(name: str, value: Any) -> None:
        request.node.user_properties.append((FACT_PREFIX + name, value))

    return record


def elapsed_ms(start_ns: int) -> float:
    return (time.perf_counter_ns() - start_ns) / 1e6


def login(catalogue: Catalogue, account: Account) -> None:
    """Log in; a refusal is the account's problem (auth-refused), not a session fault."""
    try:
        catalogue.login(account.authenticator, account.as_login())
    except IcatSession as exc:
        # the default account plays the writer, but sv7 check never writes: its role is named
        # only when one was asked for (--account reader=…)
        who = "account" if account.role == WRITE_ROLE else f"{account.role} account"
        raise CheckFailed(
            "auth-refused",
            f"{who} {account.user_name}: {exc.message}",
            account.refused_hint(),
        ) from exc


def logging_out(config: ClientConfig) -> contextlib.AbstractContextManager[None]:
    """Around a logout: one after sv7 check's --deadline ran out still gets a few seconds
    (the probe leaves no session behind); it changes nothing without a deadline."""
    return grace(min(CLEANUP_GRACE_S, config.read_timeout))


def log_out(config: ClientConfig, catalogue: Catalogue) -> None:
    """Log out, also after the deadline; a dead session must not hide the real failure."""
    with logging_out(config), contextlib.suppress(Sv7Error):
        catalogue.logout()


@contextlib.contextmanager
def logged_in(config: ClientConfig, flavour: str, account: Account) -> Iterator[Catalogue]:
    """A client of ``flavour`` logged in as ``account``; logged out and closed afterwards."""
    catalogue = connect(config, flavour)
    try:
        login(catalogue, account)
        try:
            yield catalogue
        finally:
            log_out(config, catalogue)
    finally:
        catalogue.close()


@contextlib.contextmanager
def raw_session(config: ClientConfig, account: Account) -> Iterator[tuple[RawSoap, str]]:
    """A raw SOAP caller and a session id of ``account`` (for calls with explicit ids)."""
    with RawSoap(config) as soap:
        try:
            sid = soap.login(account.authenticator, account.as_login())
        except IcatSession as exc:
            raise CheckFailed(
                "auth-refused", f"{account.user_name}: {exc.message}", account.refused_hint()
            ) from exc
        try:
            yield soap, sid
        finally:
            with logging_out(config), contextlib.suppress(Sv7Error):
                soap.logout(sid)


def need_account(options: VerifyOptions, role: str | None = None) -> Account:
    """The account of ``role`` (None: any that can read), else skip saying how to give one."""
    account = options.read_account if role is None else options.account(role)
    if account is None:
        wanted = role or READ_ROLE
        default = " (or SV7_AUTH/SV7_USER/SV7_PASSWORD: the default account writes)"
        pytest.skip(
            f"no {wanted} account: pass --account {wanted}=MECH/NAME and set "
            f"SV7_PASSWORD_{wanted.upper()}{default if wanted == WRITE_ROLE else ''}"
        )
    return account


@pytest.fixture(scope="session")
def reader(options: VerifyOptions, config: ClientConfig) -> Iterator[Catalogue]:
    """A client logged in with the account reads use (reader, else writer, else any)."""
    with logged_in(config, options.flavour, need_account(options)) as catalogue:
        yield catalogue


@pytest.fixture(scope="module")
def writer_account(options: VerifyOptions) -> Account:
    return need_account(options, WRITE_ROLE)


@pytest.fixture(scope="module")
def writer(
    options: VerifyOptions, config: ClientConfig, writer_account: Account
) -> Iterator[Catalogue]:
    with logged_in(config, options.flavour, writer_account) as catalogue:
        yield catalogue
