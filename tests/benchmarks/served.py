"""``sv7 serve`` in its own process, for measurements that must not share the client's CPU."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator


@contextlib.contextmanager
def served_catalogue(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """(process, service URL) of a local catalogue on a free loopback port; stopped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "igestbench", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    url = None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        if line.startswith("WSDL: "):
            url = line.split(" ", 1)[1].strip().removesuffix("?wsdl")
            break
        if time.monotonic() > deadline:
            break
    try:
        if url is None:
            raise RuntimeError("sv7 serve did not print its WSDL URL")
        yield proc, url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
