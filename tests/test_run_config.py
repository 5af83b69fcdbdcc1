"""RunConfig: precedence of sources, credentials that never leak, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.config import RunConfig, load_run_config, parse_mix
from igestbench.errors import UsageError


def test_defaults_are_modest_and_valid() -> None:
    config = load_run_config({}, environ={})
    assert config.target is None and config.credentials is None
    assert config.parts[0] == "verify" and "sweep" in config.parts


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
        ({"parts": ("verify", "lunch")}, "unknown lunch"),
        ({"flavours": ("soap-ui",)}, "unknown soap-ui"),
        ({"concurrency": (0,)}, "whole numbers from 1 to 256"),
        ({"cycles": 0}, "--cycles must be at least 1"),
        ({"insecure": True, "ca_file": Path("ca.pem")}, "contradict"),
    ],
)
def test_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RunConfig(**options)  # type: ignore[arg-type]


def test_bad_file_and_environment_values_name_their_source(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text("[run]\ncycles = 'many'\n")
    with pytest.raises(UsageError, match=r"sv7.toml: cycles = 'many' is not a valid value"):
        load_run_config({}, config_file=toml, environ={})
    toml.write_text("[run]\ncolour = 'blue'\n")
    with pytest.raises(UsageError, match=r"unknown option\(s\) in \[run\]: colour"):
        load_run_config({}, config_file=toml, environ={})
    with pytest.raises(UsageError, match="environment SV7_MAX_RATE"):
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
