"""sv7.toml, the one configuration file every command reads: found, parsed and checked once.

Its tables: ``[run]`` (sv7 run's options), ``[credentials]`` (accounts: :mod:`igestbench.accounts`),
``[check]`` (sv7 check's own options) and ``[swarm]`` (the swarm's secret). A file that cannot
be read or is not TOML is a usage error naming it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError


@dataclass(frozen=True)
class ConfigFile:
    """sv7.toml, read once: its [run] table and its [credentials] table."""

    path: Path | None = None
    run: Mapping[str, Any] = field(default_factory=dict)
    credentials: Mapping[str, Any] = field(default_factory=dict)
    #: sv7 check's own options
    check: Mapping[str, Any] = field(default_factory=dict)


def read_toml(path: Path, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what} ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None


def read_config_file(path: Path | None) -> ConfigFile:
    """sv7.toml: ``path``, else ./sv7.toml if there is one."""
    if path is None:
        if not Path("sv7.toml").is_file():
            return ConfigFile()
        path = Path("sv7.toml")
    data = read_toml(path, "configuration")
    run, credentials = data.get("run", {}), data.get("credentials", {})
    check = data.get("check", {})
    for name, table in (("run", run), ("credentials", credentials), ("check", check)):
        if not isinstance(table, dict):
            raise UsageError(f"{path}: [{name}] must be a table")
    return ConfigFile(path, run, credentials, check)


__all__ = ["ConfigFile", "read_config_file", "read_toml"]
