"""What the commands share: exit codes, the password prompt, output-file checks."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable
from pathlib import Path

from igestbench.errors import UsageError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def interactive_prompt() -> Callable[[str], str] | None:
    """getpass at a terminal; elsewhere (cron, CI, a pipe) nothing is asked."""
    return getpass.getpass if sys.stdin.isatty() else None


def output_file(path: Path) -> None:
    """A file to write must not be a directory (found before reading anything)."""
    if path.is_dir():
        raise UsageError(f"-o {path}: is a directory; name the file to write")
