"""python-icat's own test suite against ``sv7 serve`` (``tox -e python-icat``, issue 11).

What a python-icat user would do to test their client against the local catalogue:

1. fetch the sdist of the *installed* python-icat from PyPI (``pip download``), or reuse the copy
   cached by an earlier run;
2. unpack it into a temporary directory and run its ``setup.py build_test``, which copies the
   example scripts and reference data into its ``tests/``;
3. make sure the ``en_US.UTF-8`` locale exists (its conftest sets it): if the system lacks it,
   compile it with ``localedef`` into the temporary directory and point ``LOCPATH`` there;
4. start ``sv7 serve`` on a free loopback port in the time zone its reference data was made in,
   with the accounts its ``tests/data/icat.cfg`` names (only ``simple/root`` is a root user, as
   on python-icat's test server; the others get their rights from the rules the suite's own
   setup creates after wiping the catalogue, so the catalogue's default rules do not matter);
5. run pytest on the whole suite; the exit code is pytest's.

The suite's IDS tests run against the IDS ``sv7 serve`` serves at ``/ids/`` (the ``idsurl`` of
every section of its config). Skips that remain are python-icat's own: tests for an older IDS or
server version, and tests marked slow.

Run:  python -m tests.python_icat_suite [--cache DIR] [--sdist FILE] [--keep] [-- PYTEST-ARGS…]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "secret"


@dataclass(frozen=True)
class SuiteAccount:
    section: str
    mechanism: str
    name: str
    root: bool = False


#: The config sections python-icat's tests read, and the ICAT user each stands for.
#: ``ingest`` logs in as ``simple/dataingest``: that is the user its init-icat.py gives rights.
ACCOUNTS = (
    SuiteAccount("root", "simple", "root", root=True),
    SuiteAccount("useroffice", "simple", "useroffice"),
    SuiteAccount("idsreader", "simple", "idsreader"),
    SuiteAccount("ingest", "simple", "dataingest"),
    *(SuiteAccount(n, "db", n) for n in ("acord", "ahau", "jbotu", "jdoe", "nbour", "rbeck")),
)

LOCALE = "en_US.UTF-8"
#: python-icat's reference data was made on a server in Berlin: example_data.yaml's dates have no
#: zone (``startDate: 2007-01-01``) and icatdump-6.2 holds them as ``2006-12-31T23:00:00+00:00``.
SERVER_ZONE = "Europe/Berlin"
SERVE_START_S = 60.0


class SuiteError(Exception):
    """A step before the test run failed; the message says why and what to do."""


def installed_version() -> str:
    try:
        return importlib.metadata.version("python-icat")
    except importlib.metadata.PackageNotFoundError:
        raise SuiteError("python-icat is not installed in this Python") from None


def fetch_sdist(version: str, cache: Path) -> Path:
    """The sdist of python-icat ``version``: from ``cache`` if there, else from PyPI into it."""
    cached = _find_sdist(version, cache)
    if cached is not None:
        return cached
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", f"python-icat=={version}", "-d", str(cache)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = _find_sdist(version, cache)
    if proc.returncode != 0 or found is None:
        said = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SuiteError(
            f"cannot download the sdist of python-icat {version} from PyPI (pip: {said}); "
            f"put python_icat-{version}.tar.gz into {cache} or pass --sdist FILE"
        )
    return found


def _find_sdist(version: str, directory: Path) -> Path | None:
    for name in (f"python_icat-{version}.tar.gz", f"python-icat-{version}.tar.gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def prepare(sdist: Path, workdir: Path) -> Path:
    """Unpack ``sdist`` below ``workdir`` and run its ``build_test``; its source tree."""
    with tarfile.open(sdist) as tar:
        tops = {Path(m.name).parts[0] for m in tar.getmembers()}
        if len(tops) != 1:
            raise SuiteError(f"{sdist}: not an sdist (expected one top directory, got {tops})")
        tar.extractall(workdir, filter="data")
    src = workdir / tops.pop()
    proc = subprocess.run(
        [sys.executable, "setup.py", "--quiet", "build_test"],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0 or not (src / "tests" / "scripts").is_dir():
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise SuiteError(f"python-icat's setup.py build_test failed in {src}:\n{tail}")
    return src


def locale_env(workdir: Path) -> dict[str, str]:
    """Environment additions that make ``en_US.UTF-8`` available to the suite's conftest."""
    probe = [sys.executable, "-c", f"import locale; locale.setlocale(locale.LC_CTYPE, {LOCALE!r})"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return {}
    localedef = shutil.which("localedef")
    hint = "install it (Debian: apt-get install locales; locale-gen en_US.UTF-8)"
    if localedef is None:
        raise SuiteError(f"python-icat's tests need the {LOCALE} locale and there is no "
                         f"localedef to make one: {hint}")
    locpath = workdir / "locale"
    locpath.mkdir()
    proc = subprocess.run(
        [localedef, "-i", "en_US", "-f", "UTF-8", str(locpath / LOCALE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    env = {"LOCPATH": str(locpath)}
    if subprocess.run(probe, capture_output=True, env=_merged(env)).returncode != 0:
        said = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise SuiteError(f"python-icat's tests need the {LOCALE} locale; localedef could not "
                         f"make one ({said[0]}): {hint}")
    return env


def _merged(extra: Mapping[str, str], drop: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment (what the child needs besides), changed by ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def users_toml(accounts: tuple[SuiteAccount, ...] = ACCOUNTS) -> str:
    """The ``sv7 serve --users`` file for the suite's accounts."""
    return "".join(
        f'[[user]]\nmechanism = "{a.mechanism}"\nname = "{a.name}"\n'
        f'password = "{PASSWORD}"\nroot = {str(a.root).lower()}\n\n'
        for a in accounts
    )


def ids_url(wsdl_url: str) -> str:
    """The IDS beside the catalogue whose WSDL URL ``sv7 serve`` printed (``…/ids``)."""
    base = wsdl_url.split("/ICATService/", 1)[0]
    return f"{base}/ids"


def icat_cfg(url: str, accounts: tuple[SuiteAccount, ...] = ACCOUNTS) -> str:
    """python-icat's ``tests/data/icat.cfg``: one section per account, each with the IDS."""
    return "".join(
        f"[{a.section}]\nurl = {url}\nidsurl = {ids_url(url)}\nauth = {a.mechanism}\n"
        f"username = {a.name}\npassword = {PASSWORD}\n\n"
        for a in accounts
    )


@contextlib.contextmanager
def served(users_file: Path, log: Path, serve_args: list[str]) -> Iterator[str]:
    """The WSDL URL of ``sv7 serve`` (its own process, free port); stopped afterwards."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "igestbench", "serve", "--port", "0",
             "--users", str(users_file), "--timezone", SERVER_ZONE, *serve_args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + SERVE_START_S
        while True:
            text = log.read_text()
            wsdl = [ln[6:].strip() for ln in text.splitlines() if ln.startswith("WSDL: ")]
            if wsdl:
                yield wsdl[0]
                return
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SuiteError(f"sv7 serve did not start:\n{text[-2000:]}")
            time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_suite(src: Path, env: Mapping[str, str], pytest_args: list[str]) -> int:
    """pytest on the sdist's tests (its own rootdir and pytest.ini); pytest's exit code."""
    # the whole suite unless the arguments name some of its files
    where = [] if any(a.startswith("tests/") for a in pytest_args) else ["tests"]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEs", *where, *pytest_args]
    # PYTHONPATH of a checkout would put this project's own ``tests`` package first.
    return subprocess.run(cmd, cwd=src, env=_merged(env, drop=("PYTHONPATH",))).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.python_icat_suite",
        description="Run python-icat's own test suite (its sdist) against sv7 serve.",
    )
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sv7-python-icat",
                        help="where the downloaded sdist is kept (default %(default)s)")
    parser.add_argument("--sdist", type=Path, help="use this sdist instead of downloading one")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                        help="extra argument for sv7 serve (repeatable)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="sv7-python-icat-"))
    try:
        version = installed_version()
        sdist = args.sdist or fetch_sdist(version, args.cache)
        print(f"== python-icat {version}: {sdist}", flush=True)
        src = prepare(sdist, workdir)
        env = locale_env(workdir)
        users = workdir / "users.toml"
        users.write_text(users_toml())
        with served(users, workdir / "serve.log", args.serve_arg) as wsdl:
            (src / "tests" / "data" / "icat.cfg").write_text(icat_cfg(wsdl))
            print(f"== sv7 serve: {wsdl}", flush=True)
            started = time.monotonic()
            rc = run_suite(src, env, args.pytest_args)
            print(f"== python-icat's suite: exit {rc} after {time.monotonic() - started:.0f} s")
            return rc
    except SuiteError as exc:
        print(f"python-icat suite: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"== kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
