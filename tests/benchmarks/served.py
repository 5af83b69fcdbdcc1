"""``sv7 serve`` in its own process, for measurements that must not share the client's CPU."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator


@contextlib.contextmanager
def served_catalogue(
    *args: str, checkout: str | None = None, nice: int = 0
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """(process, service URL) of a local catalogue on a free loopback port; stopped afterwards.

    ``checkout``: run the igestbench of that directory instead of this one (to measure a change
    against the code before it, side by side). ``nice``: the server's niceness (``nice`` execs
    the server: the process is the server's).
    """
    env = None if checkout is None else {**os.environ, "PYTHONPATH": checkout}
    prefix = ["nice", "-n", str(nice)] if nice else []
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "igestbench", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=checkout,  # ``python -m`` puts the working directory first on sys.path
    )
    assert proc.stdout is not None
    url = None
    deadline = time.monotonic() + 120  # a busy machine took over 30 s to start it
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
        proc.wait(timeout=60)  # a busy machine took 10-15 s to stop it
        proc.stdout.close()
