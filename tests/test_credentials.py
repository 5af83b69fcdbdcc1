"""One credentials scheme for sv7 run, sv7 check and the service checks (config.load_logins).

The default account comes from SV7_AUTH/SV7_USER/SV7_PASSWORD, sv7.toml's [credentials] table or
a prompt; role accounts (--account ROLE=MECH/NAME with SV7_PASSWORD_<ROLE>, or [credentials.ROLE])
come on top. Each remembers where its password came from, so hints name the variable used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.accounts import load_logins
from igestbench.config import load_run_config
from igestbench.errors import UsageError
from igestbench.icat.credentials import Credentials, Logins, RoleAccount

ENV = {"SV7_AUTH": "simple", "SV7_USER": "ingest", "SV7_PASSWORD": "s3cret"}


def test_the_default_account_from_the_environment_for_every_command() -> None:
    logins = load_logins(environ=ENV)
    assert logins.default == Credentials("simple", "ingest", "s3cret")
    assert logins.default is not None and logins.default.source == "SV7_PASSWORD"
    # the checks log in with it, as the writer (sv7 run writes with the same account)
    (writer,) = logins.for_checks()
    assert (writer.role, writer.user_name, writer.source) == ("writer", "simple/ingest",
                                                               "SV7_PASSWORD")
    run = load_run_config({"target": "icat.example.org"}, environ=ENV)
    assert run.credentials == logins.default
    assert "s3cret" not in repr(logins) + repr(run) + repr(writer)


def test_roles_on_top_and_a_named_writer_replaces_the_default() -> None:
    env = {**ENV, "SV7_PASSWORD_READER": "r", "SV7_PASSWORD_WRITER": "w"}
    logins = load_logins(["reader=simple/reader", "writer=db/alice"], environ=env)
    assert {a.role: (a.user_name, a.password, a.source) for a in logins.for_checks()} == {
        "reader": ("simple/reader", "r", "SV7_PASSWORD_READER"),
        "writer": ("db/alice", "w", "SV7_PASSWORD_WRITER"),
    }
    assert logins.default is not None and logins.default.user_name == "simple/ingest"


def test_sv7_toml_gives_both_kinds_and_the_environment_wins(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text(
        '[credentials]\nauth = "db"\nusername = "bob"\npassword = "from-file"\n'
        '[credentials.reader]\naccount = "simple/reader"\npassword = "reader-file"\n'
    )
    logins = load_logins(config_file=toml, environ={})
    assert logins.default is not None
    assert (logins.default.user_name, logins.default.source) == ("db/bob", f"{toml} [credentials]")
    assert logins.roles == (
        RoleAccount("simple", "reader", "reader-file", role="reader"),
    )
    assert logins.roles[0].source == f"{toml} [credentials.reader]"
    env = {"SV7_PASSWORD": "env", "SV7_PASSWORD_READER": "e"}
    logins = load_logins(config_file=toml, environ=env)
    assert logins.default is not None and logins.default.source == "SV7_PASSWORD"
    assert logins.roles[0].password == "e"
    # a file's password is never paired with another user's name from the environment
    with pytest.raises(UsageError, match="no password for db/carol: set SV7_PASSWORD"):
        load_logins(config_file=toml, environ={"SV7_USER": "carol"})


def test_a_credentials_file_has_the_shape_of_the_credentials_table(tmp_path: Path) -> None:
    creds = tmp_path / "creds.toml"
    creds.write_text('auth = "simple"\nusername = "ingest"\npassword = "pw"\n'
                     '[writer]\naccount = "db/alice"\npassword = "apw"\n')
    logins = load_logins(credentials_file=creds, environ={})
    assert logins.default is not None and logins.default.source == str(creds)
    assert [(a.role, a.user_name, a.source) for a in logins.for_checks()] == [
        ("writer", "db/alice", f"{creds} [writer]")
    ]
    creds.write_text('user = "typo"\n')
    with pytest.raises(UsageError, match="unknown key"):
        load_logins(credentials_file=creds, environ={})


def test_prompt_only_where_asked_and_the_message_names_what_to_set() -> None:
    env = {"SV7_AUTH": "simple", "SV7_USER": "ingest"}
    with pytest.raises(UsageError, match="no password for simple/ingest: set SV7_PASSWORD"):
        load_logins(environ=env)
    logins = load_logins(environ=env, prompt=lambda text: "typed")
    assert logins.default is not None and logins.default.source == "the prompt"
    with pytest.raises(UsageError, match="set SV7_AUTH"):
        load_logins(environ={"SV7_USER": "ingest", "SV7_PASSWORD": "x"})
    assert load_logins(environ={}) == Logins()
    # the built-in catalogue: an incomplete account leaves its own, nothing is asked
    config = load_run_config({}, environ=env, prompt=lambda text: pytest.fail("asked"))
    assert config.credentials is None


def test_a_refused_login_hints_at_the_variable_that_was_used() -> None:
    (account,) = load_logins(environ=ENV).for_checks()
    assert account.refused_hint() == (
        "check the authenticator, user name and password of simple/ingest "
        "(the password came from SV7_PASSWORD)"
    )
