"""RunConfig: precedence of sources, credentials that never leak, clear errors."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from igestbench.config import RunConfig, load_run_config, parse_mix
from igestbench.errors import UsageError


def test_defaults_are_modest_and_valid() -> None:
    config = load_run_config({}, environ={})
    assert config.target is None and config.credentials is None
    assert config.parts[0] == "verify" and "sweep" in config.parts


def test_the_default_profile_is_the_quick_tour_and_options_given_win_over_a_profile(
    tmp_path: Path,
) -> None:
    quick = load_run_config({}, environ={})
    assert quick.profile == "quick" and quick.parts == RunConfig().parts  # every part
    assert (quick.flavours, quick.concurrency, quick.cycles, quick.files, quick.queries,
            quick.max_rate, quick.duration) == (("zeep",), (1, 2), 3, 50, 50, 40.0, 1.0)
    full = load_run_config({"profile": "full"}, environ={})
    assert dataclasses.replace(full, verify=None) == RunConfig()  # the campaign's defaults
    # a real target is toured the same way unless asked: one command, one amount of work
    env = {"SV7_AUTH": "db", "SV7_USER": "alice", "SV7_PASSWORD": "s3cret"}
    assert load_run_config({"target": "icat.example.org"}, environ=env).profile == "quick"
    toml = tmp_path / "sv7.toml"
    toml.write_text('[run]\nprofile = "full"\nqueries = 7\n')
    mixed = load_run_config({"cycles": "4"}, config_file=toml, environ={"SV7_FILES": "9"})
    assert (mixed.profile, mixed.queries, mixed.cycles, mixed.files, mixed.flavours) == (
        "full", 7, 4, 9, ("zeep", "python-icat"))
    given = load_run_config({"concurrency": "1,4", "flavours": "lean"}, environ={})
    assert (given.profile, given.concurrency, given.flavours, given.cycles) == (
        "quick", (1, 4), ("lean",), 3)
    with pytest.raises(UsageError, match=re.escape(
            "SV7_PROFILE: unknown profile 'ful' (did you mean 'full'?); choose from quick, full")):
        load_run_config({}, environ={"SV7_PROFILE": "ful"})


def test_command_line_beats_environment_beats_file(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text('[run]\nsite = "FILE"\ncycles = 3\nconcurrency = [1, 4]\nmax_rate = 50\n')
    env = {"SV7_SITE": "ENV", "SV7_CYCLES": "5"}
    config = load_run_config({"site": "CLI"}, config_file=toml, environ=env)
    assert (config.site, config.cycles, config.concurrency, config.max_rate) == (
        "CLI",
        5,
        (1, 4),
        50.0,
    )


def test_a_named_target_without_site_is_not_the_local_site(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "beamline-pc7.example.org")
    env = {"SV7_AUTH": "db", "SV7_USER": "alice", "SV7_PASSWORD": "s3cret"}
    assert load_run_config({}, environ={}).site == "local"  # the built-in catalogue
    assert load_run_config({"target": "icat.example.org"}, environ=env).site == "beamline-pc7"
    named = load_run_config({"target": "icat.example.org", "site": "ESRF"}, environ=env)
    assert named.site == "ESRF"


def test_credentials_from_environment_and_prompt() -> None:
    env = {"SV7_AUTH": "db", "SV7_USER": "alice"}
    asked: list[str] = []

    def prompt(text: str) -> str:
        asked.append(text)
        return "s3cret"

    config = load_run_config({"target": "icat.example.org"}, environ=env, prompt=prompt)
    assert config.credentials is not None and config.credentials.password == "s3cret"
    assert asked == ["password for db/alice at icat.example.org: "]
    assert "s3cret" not in repr(config) and "s3cret" not in repr(config.credentials)
    public = config.public()
    assert "s3cret" not in str(public) and public["user"] == "db/alice"


def test_credentials_from_file(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text('[credentials]\nauth = "simple"\nusername = "ingest"\npassword = "pw"\n')
    config = load_run_config({"target": "h"}, config_file=toml, environ={})
    assert config.credentials is not None and config.credentials.user_name == "simple/ingest"


def test_a_target_without_credentials_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="credentials needed for --target"):
        load_run_config({"target": "icat.example.org"}, environ={})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"parts": ("verify", "lunch")}, "unknown part 'lunch'"),
        ({"flavours": ("soap-ui",)}, "unknown flavour 'soap-ui'"),
        ({"concurrency": (0,)}, "levels from 1 to 256"),
        ({"cycles": 0}, "--cycles: expected a whole number of at least 1, not 0"),
        ({"max_rate": float("inf")}, "--max-rate: expected a rate in requests per second"),
        ({"mix": {"lunch": 1}}, "--mix: unknown operation 'lunch'"),
        ({"fail_on": ("burst.p99<5ms",), "parts": ("verify",)}, "does not measure burst"),
        ({"insecure": True, "ca_file": Path("ca.pem")}, "contradict"),
    ],
)
def test_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RunConfig(**options)  # type: ignore[arg-type]


def test_bad_file_and_environment_values_name_their_source(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text("[run]\ncycles = 'many'\n")
    with pytest.raises(
        UsageError, match=r"sv7.toml \[run\] cycles: expected a whole number of at least 1, not 'm"
    ):
        load_run_config({}, config_file=toml, environ={})
    toml.write_text("[run]\ncolour = 'blue'\n")
    with pytest.raises(UsageError, match=r"unknown option\(s\) in \[run\]: colour"):
        load_run_config({}, config_file=toml, environ={})
    with pytest.raises(UsageError, match=r"^SV7_MAX_RATE: expected a rate in requests per second"):
        load_run_config({}, environ={"SV7_MAX_RATE": "fast"})
    toml.write_text("[run\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_run_config({}, config_file=toml, environ={})


def test_mix() -> None:
    assert parse_mix("search=21,get=8,create=1") == {"search": 21, "get": 8, "create": 1}
    with pytest.raises(UsageError):
        parse_mix("search=often")
    with pytest.raises(UsageError):
        parse_mix("search=0")


def _problem(cli: dict[str, object], environ: dict[str, str] | None = None,
             toml: Path | None = None) -> str:
    with pytest.raises(UsageError) as caught:
        load_run_config(cli, config_file=toml, environ=environ or {})
    message = str(caught.value)
    assert "\n" not in message and "invalid literal" not in message and "Error" not in message
    return message


@pytest.mark.parametrize(
    ("flag", "value", "wanted"),
    [
        ("mix", "foo=1", "--mix: unknown operation 'foo'"),
        ("mix", "search=often", "--mix: search=often: a weight is a whole number"),
        ("mix", "search=0", "--mix: needs at least one operation with a positive weight"),
        ("concurrency", "abc", "--concurrency: expected levels from 1 to 256"),
        ("concurrency", "0", "--concurrency: expected levels from 1 to 256"),
        ("concurrency", "1,300", "--concurrency: expected levels from 1 to 256"),
        ("cycles", "-3", "--cycles: expected a whole number of at least 1, not -3"),
        ("files", "1.5", "--files: expected a whole number of at least 1, not '1.5'"),
        ("payload_bytes", "-1", "--payload-bytes: expected a whole number of at least 0"),
        ("calls_per_connection", "x", "--calls-per-connection: expected a whole number"),
        ("fail_on", "single-query.p99", "--fail-on: 'single-query.p99': expected WORKLOAD"),
        ("fail_on", "lunch.p99<5ms", "--fail-on: 'lunch.p99<5ms': unknown workload 'lunch'"),
        ("fail_on", "sweep.p99<5ms", "the sweep has one figure"),
        ("fail_on", "burst.p99<1.2.3ms", "'1.2.3' is not a number"),
        ("parts", "verify,lunch", "--parts: unknown part 'lunch'; choose from verify"),
        ("parts", "scal", "--parts: unknown part 'scal' (did you mean 'scale'?); choose from "
         "verify, full-cycle, single-query, burst, multi-query, sweep, scale, ids"),
        ("parts", "brust,lunch", "--parts: unknown parts 'brust' (did you mean 'burst'?), "
         "'lunch'; choose from verify"),
        ("parts", ",", "--parts: no part given; choose from verify"),
        ("flavours", "soap-ui", "--flavour: unknown flavour 'soap-ui'; choose from zeep"),
        ("interfaces", "sopa", "--interface: unknown interface 'sopa' (did you mean 'soap'?); "
         "choose from soap, rest"),
        ("mix", "serch=1", "--mix: unknown operation 'serch' (did you mean 'search'?)"),
        ("max_rate", "0", "--max-rate: expected a rate in requests per second (requests/s), "
                          "a number greater than 0, not 0"),
        ("max_rate", "-5", "--max-rate: expected a rate in requests per second (requests/s), "
                           "a number greater than 0, not -5"),
        ("duration", "nan", "--duration: expected a number greater than 0, not nan"),
        ("warmup", "-1", "--warmup: expected a number of at least 0, not -1"),
        ("timeout", "soon", "--timeout: expected a number greater than 0, not 'soon'"),
        ("ca_file", "/no/such/ca.pem", "--ca-file: /no/such/ca.pem: no such file"),
        ("out", "/etc/hostname", "--out: /etc/hostname exists and is not a directory"),
        ("target", "ftp://icat.example.org", "--target: 'ftp://icat.example.org': an ICAT URL"),
        ("target", "icat.example.org:port", "the port is not a number"),
        ("site", " ", "--site: expected a non-empty text"),
    ],
)
def test_every_command_line_value_is_checked_with_one_line(
    flag: str, value: str, wanted: str
) -> None:
    assert wanted in _problem({flag: value})


def test_environment_and_file_values_are_checked_the_same_way_naming_their_source(
    tmp_path: Path,
) -> None:
    problem = _problem({}, {"SV7_CONCURRENCY": "abc"})
    assert problem.startswith("SV7_CONCURRENCY: expected levels")
    assert _problem({}, {"SV7_MIX": "foo=1"}).startswith("SV7_MIX: unknown operation 'foo'")
    assert _problem({}, {"SV7_FLAVOUR": "soap"}).startswith("SV7_FLAVOUR: unknown flavour 'soap'")
    assert _problem({}, {"SV7_GZIP": "perhaps"}).startswith("SV7_GZIP: expected true or false")
    toml = tmp_path / "sv7.toml"
    toml.write_text("[run]\nconcurrency = [1, 0]\n")
    assert _problem({}, toml=toml) == (
        f"{toml} [run] concurrency: expected levels from 1 to 256 separated by commas "
        "(e.g. 1,2,4), not '[1, 0]'"
    )
    toml.write_text('[run]\nmax-rate = -1\nmix = { search = 1, lunch = 2 }\n')
    assert _problem({}, toml=toml).startswith(f"{toml} [run] max-rate: expected a rate")
    toml.write_text('[run]\nmix = { search = 1, lunch = 2 }\n')
    assert _problem({}, toml=toml).startswith(f"{toml} [run] mix: unknown operation 'lunch'")
    # the command line wins, so a bad value below it is still reported: nothing bad goes unseen
    toml.write_text("[run]\ncycles = 2\nmix = 'search=3,get=1'\ngzip = true\n")
    config = load_run_config({"cycles": "4"}, config_file=toml, environ={"SV7_FLAVOUR": "lean"})
    assert (config.cycles, dict(config.mix), config.gzip, config.flavours) == (
        4, {"search": 3, "get": 1}, True, ("lean",)
    )
