"""The one owner of a run's result file, which is valid on disk at every moment of the run.

The runner opens a :class:`ResultWriter` when the run starts and hands it each section as the run
proceeds. Every flush writes the whole document to a temporary file beside the result and renames
it over the result (``os.replace``, atomic on POSIX and Windows), so a reader — or a crash, a
kill, a Ctrl-C — only ever meets the previous complete version or the next one, never half a file.
Until :meth:`ResultWriter.finish` the file says ``"status": "partial"``; a file left by a crash
therefore says of itself that it is incomplete.

The writer also keeps the file's ``summary`` (one row per headline figure, :mod:`.figures`):
each ``benchmarks`` or ``sweeps`` item appended adds its rows, computed from the item as written,
so the summary always agrees with the entries beside it, whoever writes them (``sv7 run``,
``sv7 swarm``, the example files).

Result files travel between institutes, so the writer refuses, before anything reaches the disk,
a key that names a credential and any string it was told is secret (session ids, passwords).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from secrets import token_hex
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from igestbench import __version__
from igestbench.errors import Sv7Error
from igestbench.redaction import distinctive
from igestbench.results.figures import SECTION_FIGURES, SummaryRow, section_rows
from igestbench.results.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    INTERFACES,
    OUTCOMES,
    SCALE_ROLES,
    SECTIONS,
    STATUSES,
    JSONObject,
    ResultFileError,
    is_kind,
    item_problems,
    json_type_name,
    problems,
    summary_problem,
    utc_timestamp,
)

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
#: Key names that hold credentials, compared lower-case without ``_`` and ``-``.
_CREDENTIAL_KEYS = frozenset({"password", "passwd", "sessionid"})
# A secret is searched inside longer strings (a URL, an error message) only when it is long and
# mixed (redaction.distinctive: a session id, a real password); a short or word-like one
# ("root", "password") occurs innocently in paths and in the suite's own words ("check the user
# name and password") and is refused only as a whole string. Texts are scrubbed where they are
# made (the causes' explanations, the workers' errors), as the logs are.
#: Words every result file writes whatever the run's credentials: its sections, statuses,
#: interfaces, check outcomes and scale roles. A password that is one of them (root/root is
#: common on test catalogues) cannot be kept out of any file and reveals nothing there, so
#: these words are not taken for it (the scale section's key "root" stopped such a run);
#: every other string equal to a secret still is.
_FORMAT_WORDS = frozenset({*SECTIONS, *STATUSES, *INTERFACES, *OUTCOMES, *SCALE_ROLES})
#: Sections the writer fills itself: set when the writer opens, the run status by finish().
_OWN_SECTIONS = frozenset({"format", "version", "tool", "run", "summary"})


class SecretInResultError(Sv7Error):
    """A credential was about to be written into a result file; nothing was written."""


def result_file_name(site: str, host: str, run_id: str, *, compress: bool = False) -> str:
    """``<site>_<host>_<run id>.json[.gz]`` in letters, digits, ``.`` and ``-`` only.

    ``_`` separates the parts, so it is replaced inside them; leading dots are dropped so that
    no result file is hidden, and no part can climb out of the output directory.
    """
    parts = [_UNSAFE.sub("-", part).strip(".-") or "unknown" for part in (site, host, run_id)]
    return "_".join(parts) + (".json.gz" if compress else ".json")


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ResultWriter:
    """Writes one run's result file incrementally and atomically; see the module docstring.

    ``run``, ``target`` and ``environment`` are the sections known at the start (``run`` needs
    ``id`` and ``site``; ``started`` defaults to now). Sections set later are flushed at once;
    items appended to list sections are flushed at most every ``autoflush_s`` seconds (0: every
    time), so a sampler appending every second does not rewrite a large file every second.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        run: Mapping[str, Any],
        target: Mapping[str, Any],
        environment: Mapping[str, Any],
        secrets: Iterable[str] = (),
        compress: bool = False,
        autoflush_s: float = 1.0,
        now: Callable[[], dt.datetime] = _utc_now,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._secrets = tuple(s for s in secrets if s)  # "" would match every string
        self._compress = compress
        self._autoflush_s = autoflush_s
        self._now = now
        self._clock = clock
        self._finished = False
        self._flushed_at = clock()
        #: the summary's rows by the section they come from (figures.SECTION_FIGURES)
        self._rows: dict[str, list[SummaryRow]] = {}
        run_section: JSONObject = self._copy("run", run)
        run_section.setdefault("started", utc_timestamp(now()))
        run_section.update(status="partial", finished=None)
        target_section = self._copy("target", target)
        self._doc: JSONObject = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "tool": {"name": "igestbench", "version": __version__},
            "run": run_section,
            "target": target_section,
            "environment": self._copy("environment", environment),
            "checks": [], "scores": None, "benchmarks": [], "sweeps": [], "samples": [],
            "outages": [], "cleanup": None, "notes": [],
        }
        self._validate(self._doc)
        if not isinstance(run_section.get("id"), str):
            raise ValueError("the run section needs its run id (run.id) to name the file")
        url = target_section["url"]
        host = target_section.get("host") or urlsplit(url).hostname or url
        name = result_file_name(run_section["site"], host, run_section["id"], compress=compress)
        self._dir = Path(directory)
        self._path = self._dir / name
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultFileError(self._dir, f"cannot create the directory ({exc})") from exc
        if self.path.exists():
            raise ResultFileError(self.path, "already exists; a result file is never overwritten")
        self.flush()

    @property
    def path(self) -> Path:
        """Where the file is: named when the writer opens, kept when sections change later."""
        return self._path

    @property
    def status(self) -> str:
        status: str = self._doc["run"]["status"]
        return status

    def set_section(self, name: str, value: Any) -> None:
        """Set (or replace) a top-level section, e.g. ``probe`` or ``target``; flushed at once."""
        self._check_open()
        if name in _OWN_SECTIONS or name not in SECTIONS:
            settable = ", ".join(s for s in SECTIONS if s not in _OWN_SECTIONS)
            raise ValueError(f"cannot set section {name!r}; the settable ones are {settable}")
        candidate = dict(self._doc)
        candidate[name] = self._copy(name, value)
        self._validate(candidate)
        self._doc = candidate
        if name in SECTION_FIGURES:
            self._figure(name, candidate[name])
        self.flush()

    def set_run(self, key: str, value: Any) -> None:
        """Add a fact to the ``run`` section once it is known (``journal``); flushed at once."""
        self._check_open()
        if key in ("id", "site", "started", "finished", "status"):
            raise ValueError(f"run.{key} is the writer's own")
        candidate = dict(self._doc)
        candidate["run"] = {**self._doc["run"], key: self._copy(f"run.{key}", value)}
        self._validate(candidate)
        self._doc = candidate
        self.flush()

    def append(self, name: str, item: Any) -> None:
        """Add one item to a list section (``checks``, ``benchmarks``, ``samples``, ``notes`` …)."""
        self._check_open()
        field = SECTIONS.get(name)
        if field is None or field.items is None:
            lists = ", ".join(s for s, f in SECTIONS.items() if f.items is not None)
            raise ValueError(f"{name!r} is not a list section; those are {lists}")
        section: list[Any] = self._doc[name]
        copy = self._copy(f"{name}[{len(section)}]", item)
        if not is_kind(copy, field.items):
            raise ValueError(f"an item of {name} must be {field.items.__name__}, "
                             f"not {json_type_name(copy)}")
        found = list(item_problems(name, len(section), copy))
        if found:
            raise ValueError(f"not a valid result document: {'; '.join(found)}")
        section.append(copy)
        if name in SECTION_FIGURES:
            self._figure(name, [copy], append=True)
        if self._clock() - self._flushed_at >= self._autoflush_s:
            self.flush()

    def _figure(self, name: str, content: Any, append: bool = False) -> None:
        """Keep the summary's rows of section ``name``: those of appended items added, those of
        a section set replaced; the summary in SECTION_FIGURES' order."""
        rows = section_rows(name, content, self._doc["run"])
        self._rows[name] = [*self._rows.get(name, []), *rows] if append else rows
        self._doc["summary"] = [row.to_dict() for section in SECTION_FIGURES
                                for row in self._rows.get(section, ())]

    def finish(self, status: str = "complete") -> Path:
        """Set the final status and finish time, write the file a last time, return its path."""
        self._check_open()
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        self._doc["run"].update(status=status, finished=utc_timestamp(self._now()))
        self._finished = True
        self.flush()
        return self.path

    def flush(self) -> None:
        """Replace the file on disk by the current document, atomically."""
        # in layout.md's order whatever order the sections came in, for readers of the file
        doc = {name: self._doc[name] for name in SECTIONS if name in self._doc}
        data = json.dumps(doc, ensure_ascii=False, indent=1, allow_nan=False).encode()
        # a random name: two writers never share a temporary file, even across processes
        tmp = self._dir / f".{self.path.name}.{token_hex(4)}.tmp"
        try:
            # os.open with 0o666 lets the umask decide, as for any file the user writes;
            # tempfile.mkstemp would make result files readable by their owner only
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            with os.fdopen(fd, "wb") as raw:
                if self._compress:
                    # mtime 0 and no name: the same document gives the same bytes
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
                        packed.write(data)
                else:
                    raw.write(data)
                raw.flush()
                # on disk before the rename, so a power cut cannot leave a renamed empty file
                os.fsync(raw.fileno())
            os.replace(tmp, self.path)
        except BaseException as exc:  # Ctrl-C included: never leave a stray temporary file
            tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise ResultFileError(self.path, f"cannot write ({exc})") from exc
            raise
        self._flushed_at = self._clock()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Finish a run left unfinished: Ctrl-C is "interrupted", any other error "failed"."""
        if self._finished:
            return
        if exc_type is None:
            self.finish("complete")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish("interrupted")
        else:
            self.finish("failed")

    def _check_open(self) -> None:
        if self._finished:
            raise ValueError(f"{self.path}: the run is finished; the file is final")

    def _copy(self, where: str, value: Any) -> Any:
        """A JSON-only deep copy of ``value``, checked for secrets before it joins the document.

        The copy keeps later changes of the caller's objects out of the file, and turns tuples
        into lists as a reader will see them. NaN and infinities become null: they are not JSON
        (``sv7 merge`` and other readers — browsers, jq — reject them), and where a statistic
        has none (the mean of no calls) null says so; a run must not fail on one sample.
        """
        try:
            copy = json.loads(json.dumps(value), parse_constant=lambda _constant: None)
        except (TypeError, ValueError) as exc:
            exc.add_note(f"while adding {where} to a result file")
            raise
        self._refuse_secrets(where, copy)
        return copy

    def _refuse_secrets(self, where: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}"
                if key.lower().replace("_", "").replace("-", "") in _CREDENTIAL_KEYS:
                    raise SecretInResultError(
                        f"refusing to write a result file: {path} is a credential's key")
                self._refuse_secrets(path, key)
                self._refuse_secrets(path, item)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self._refuse_secrets(f"{where}[{i}]", item)
        elif isinstance(value, str) and value not in _FORMAT_WORDS:
            for secret in self._secrets:
                if value == secret or (distinctive(secret) and secret in value):
                    # the message names where, never what: it may be printed or logged
                    raise SecretInResultError(
                        f"refusing to write a result file: {where} holds a secret "
                        "(a password or session id)")

    @staticmethod
    def _validate(doc: JSONObject) -> None:
        # the loader's own table: the writer cannot produce a file the loader rejects
        found = list(problems(doc, FORMAT_VERSION))
        rows = doc.get("summary")
        if isinstance(rows, list) and (bad := summary_problem(rows)) is not None:
            found.append(f"summary{bad}")  # the loader would leave the row out
        if found:
            raise ValueError(f"not a valid result document: {'; '.join(found)}")
