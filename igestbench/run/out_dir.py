"""The result directory (``--out``) must take files before a run makes its first request.

The result file and the run's journal are written there (the journal beside the result file);
a directory that cannot be created or written — read-only, not a directory, no permission, no
space left — is a usage error, found by writing and removing a small file, before the probe.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from secrets import token_hex

from igestbench.errors import UsageError

#: What the probe writes: a journal's first line is about this long.
PROBE_BYTES = 512


def check_out_dir(directory: Path, option: str = "--out") -> None:
    """Raise :class:`UsageError` (one line) unless files can be written in ``directory``."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{option} {directory}: not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{option} {directory}: cannot create the directory ({exc.strerror or exc})"
        ) from None
    probe = directory / f".sv7-write-check-{token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise _unwritable(directory, option, exc) from None
    try:
        os.write(fd, b"\n" * PROBE_BYTES)
        os.fsync(fd)
    except OSError as exc:
        raise _unwritable(directory, option, exc) from None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            probe.unlink()


def _unwritable(directory: Path, option: str, exc: OSError) -> UsageError:
    return UsageError(
        f"{option} {directory}: cannot write the result file or the journal there "
        f"({exc.strerror or exc}); choose another directory with {option}"
    )
