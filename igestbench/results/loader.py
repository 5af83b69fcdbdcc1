"""Reading result files of every supported version, with one clear line for every bad file.

:func:`load_result` reads ``.json`` and ``.json.gz`` (recognised by content, not by name),
dispatches on ``version``, validates the keys of that version (:data:`format.FIELDS`), upgrades
the document step by step to the current version and returns a typed :class:`ResultFile`.
Every failure is a :class:`ResultFileError` whose message names the file and says what is wrong
with it, because ``sv7 merge`` reports and skips bad files from many partners in one go.

A new version adds ``FIELDS[n]`` in format.py and one ``_UPGRADES[n-1]`` function here that
turns a version-(n-1) document into a version-n one; nothing else in the loader changes.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple
from urllib.parse import urlsplit

import orjson

from igestbench.results.contents import Damage, checked, vouch
from igestbench.results.format import (
    CHECKED_METADATA,
    DEFAULT_INTERFACE,
    FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    JSONObject,
    ResultFileError,
    json_type_name,
    parse_timestamp,
    problems,
)

_GZIP_MAGIC = b"\x1f\x8b"
#: The largest result document read, in bytes (decompressed for .gz). A real one is a few MB
#: (a long sweep with samples perhaps tens); a small .gz that inflates to gigabytes is a
#: "gzip bomb", and a huge file would only exhaust memory. ``sv7 merge --max-size`` changes it.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
_CHUNK = 1024 * 1024
#: What a file cut short says (a partner's interrupted copy, a full disk at the far end), in
#: the same words for every file sv7 reads, each kind of file with its own remedy
#: (:func:`truncated`).
TRUNCATED = "looks truncated: it is cut off before its end (an interrupted copy?)"
#: what to do about a result file cut short: only its site has the whole one
RESULT_REMEDY = "copy it again from its site"
# What the JSON decoder stops at when a file was cut inside a token: the start of a number
# or of true/false/null.
_PARTIAL_TOKEN = re.compile(r"[-+.eE0-9]+|t|tr|tru|f|fa|fal|fals|n|nu|nul")



def _upgrade_1(doc: JSONObject) -> JSONObject:
    """Version 1 → 2: give ``run.id`` and ``run.status`` where a file lacks them.

    The version-1 writer always wrote both, but version 1 did not require them. The id made up
    here is stable (from the start time), so merging the same file twice gives the same
    campaign; a file without a status but with a finish time finished, one without did not.
    """
    run = dict(doc["run"])
    if "id" not in run:
        run["id"] = parse_timestamp(run["started"]).strftime("%Y%m%dT%H%M%S") + "-v1"
    if "status" not in run:
        run["status"] = "complete" if run.get("finished") else "partial"
    return {**doc, "version": 2, "run": run}


#: ``_UPGRADES[n]`` turns a valid version-n document into a version-(n+1) one.
_UPGRADES: dict[int, Callable[[JSONObject], JSONObject]] = {1: _upgrade_1}


def with_interfaces(doc: JSONObject) -> JSONObject:
    """``doc`` with the interface of every benchmark and sweep said: a file written before
    REST was measured has none, and measured SOAP (an added key, no new version)."""
    lists = {}
    for section in ("benchmarks", "sweeps"):
        items = doc.get(section)
        if isinstance(items, list) and any(
                isinstance(i, dict) and "interface" not in i for i in items):
            lists[section] = [{**i, "interface": DEFAULT_INTERFACE}
                              if isinstance(i, dict) and "interface" not in i else i
                              for i in items]
    return {**doc, **lists} if lists else doc


class Identity(NamedTuple):
    """The cell of the success matrix a run belongs to: client site x target catalogue."""

    site: str
    target: str


@dataclass(frozen=True)
class ResultFile:
    """A validated result file, upgraded to the current format version.

    ``raw`` is the whole document (current version), for the sections not exposed here; the
    sections are tuples of the file's own objects, to be read, not changed.
    """

    path: Path
    #: The version the file was written in (``raw`` has been upgraded from it).
    version: int
    tool_version: str | None
    site: str
    run_id: str
    started: dt.datetime
    finished: dt.datetime | None
    status: str
    target_url: str
    target_host: str
    api_version: str | None
    checks: tuple[JSONObject, ...]
    benchmarks: tuple[JSONObject, ...]
    sweeps: tuple[JSONObject, ...]
    samples: tuple[JSONObject, ...]
    raw: JSONObject = field(repr=False, compare=False)
    #: the damaged parts of the file, left out of ``raw`` and the sections (contents.py)
    damages: tuple[Damage, ...] = field(default=(), compare=False)

    @property
    def identity(self) -> Identity:
        return Identity(self.site, self.target_url)

    @property
    def kind(self) -> str:
        """What kind of run wrote the file: ``swarm`` (``sv7 swarm``: a load sweep from many
        hosts) or ``run`` (``sv7 run``). A campaign keeps the newest of each kind per site and
        target: a swarm run stands beside the run whose checks and benchmarks it lacks."""
        return "swarm" if self.raw["run"].get("mode") == "swarm" else "run"

    def metadata(self, path: str) -> Any:
        """The value at a dotted path of the document (``environment.cores``), or None."""
        node: Any = self.raw
        for name in path.split("."):
            node = node.get(name) if isinstance(node, dict) else None
        return node

    def metadata_differences(self, other: ResultFile) -> dict[str, tuple[Any, Any]]:
        """The :data:`CHECKED_METADATA` on which two runs differ: path → (this, other)."""
        pairs = {path: (self.metadata(path), other.metadata(path)) for path in CHECKED_METADATA}
        return {path: pair for path, pair in pairs.items() if pair[0] != pair[1]}


def load_result(
    path: str | os.PathLike[str], max_bytes: int = MAX_DOCUMENT_BYTES
) -> ResultFile:
    """The result file at ``path``; :class:`ResultFileError` naming it if it is not a good one.

    A document larger than ``max_bytes`` (decompressed) is refused before it is held in memory.
    """
    path = Path(path)
    return result_from_document(_parse(path, _read(path, max_bytes)), path)


def result_from_document(doc: JSONObject, path: str | os.PathLike[str]) -> ResultFile:
    """A decoded result document (e.g. one held in a campaign file), checked and upgraded as
    :func:`load_result` checks a file; ``path`` names where it came from in messages."""
    path = Path(path)
    if doc.get("format") != FORMAT_NAME:
        raise ResultFileError(path, f'foreign JSON object: no "format": "{FORMAT_NAME}"')
    version = _version(path, doc)
    found = list(problems(doc, version))
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ResultFileError(path, found[0] + more)
    for step in range(version, FORMAT_VERSION):
        doc = _UPGRADES[step](doc)
    if version != FORMAT_VERSION:
        # keys an old version left untyped (inside list items) must still fit the current one
        found = list(problems(doc, FORMAT_VERSION))
        if found:
            raise ResultFileError(path, f"{found[0]} (in a version-{version} file, upgraded)")
    doc, damages = checked(with_interfaces(doc))
    return _view(path, version, doc, damages)


def checked_result(doc: JSONObject, path: str | os.PathLike[str]) -> ResultFile:
    """A document that :func:`result_from_document` made (merge's, in a sealed campaign file:
    results/seal.py): already checked, upgraded and without damaged parts, so only viewed; its
    summary rows, checked against its measurements, may be read as they are."""
    vouch(doc)
    return _view(Path(path), doc["version"], doc)


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        with path.open("rb") as raw:
            compressed = raw.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
            raw.seek(0)
            if not compressed:
                data = raw.read(max_bytes + 1)
                if len(data) > max_bytes:
                    raise ResultFileError(path, f"larger than {_size(max_bytes)}: {_LIMIT_HINT}")
                return data
            # Inflated twice: once only counting (a chunk at a time, so a gzip bomb costs no
            # memory), then for real when the size is known to be within the limit.
            _inflated_size(path, raw, max_bytes)
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw) as unpacked:
                return unpacked.read()
    except FileNotFoundError:
        raise ResultFileError(path, "not found") from None
    except IsADirectoryError:
        raise ResultFileError(path, "cannot read (a directory, not a result file)") from None
    except EOFError:
        raise ResultFileError(path, f"gzip data {truncated(RESULT_REMEDY)}") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise ResultFileError(path, f"damaged gzip data ({exc})") from None
    except OSError as exc:
        raise ResultFileError(path, f"cannot read ({exc.strerror or exc})") from None


_LIMIT_HINT = "not a result file (a gzip bomb?), or raise the limit with --max-size"


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def _inflated_size(path: Path, raw: BinaryIO, max_bytes: int) -> int:
    """The decompressed size of the gzip stream ``raw``; ResultFileError beyond ``max_bytes``."""
    total = 0
    with gzip.GzipFile(fileobj=raw) as unpacked:
        while chunk := unpacked.read(_CHUNK):
            total += len(chunk)
            if total > max_bytes:
                raise ResultFileError(
                    path, f"inflates to more than {_size(max_bytes)}: {_LIMIT_HINT}"
                )
    return total


def _parse(path: Path, data: bytes) -> JSONObject:
    if not data.strip():
        raise ResultFileError(path, "empty file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if ends_mid_character(exc):
            raise ResultFileError(path, truncated(RESULT_REMEDY)) from None
        raise ResultFileError(path, "not JSON: not even UTF-8 text (a binary file?)") from None
    start = text.lstrip()[:200].lower()
    if start.startswith("<"):
        if start.startswith(("<!doctype html", "<html")) or "<html" in start:
            raise ResultFileError(
                path, "not JSON but an HTML page (an error or login page saved as the file?)")
        raise ResultFileError(path, "not JSON but XML or other markup")
    if start[0] not in '{["-0123456789tfn':
        raise ResultFileError(path, f"not JSON (it starts with {text.lstrip()[:20]!r})")
    try:
        doc = _decode(text, data)
    except _NotJson as exc:
        raise ResultFileError(
            path, f"not valid JSON: {exc} is not a JSON number (written by a non-strict writer?)"
        ) from None
    except json.JSONDecodeError as exc:
        raise ResultFileError(path, not_json(text, exc, RESULT_REMEDY)) from None
    except RecursionError:
        raise ResultFileError(path, "not valid JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise ResultFileError(
            path, f"foreign JSON file: {json_type_name(doc)} at the top, not a result object")
    if "format" not in doc:
        raise ResultFileError(path, f'foreign JSON file: no "format": "{FORMAT_NAME}" key')
    if doc["format"] != FORMAT_NAME:
        shown = repr(doc["format"])[:60]
        raise ResultFileError(path, f'foreign JSON file: format is {shown}, not "{FORMAT_NAME}"')
    return doc


#: a number orjson would not read as json does (an integer beyond 64 bits becomes a float
#: there) has a run of 19 digits: found as a run of zeros once every digit is one (bytes'
#: translate and find run in C; a regular expression took as long as the parsing)
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _decode(text: str, data: bytes) -> Any:
    """The JSON value of ``text`` as :func:`json.loads` reads it (NaN and Infinity refused).

    orjson reads a result file three times faster and gives the same values; it refuses
    what it cannot read exactly (NaN, 1e400, lone surrogates, nesting beyond 1024, malformed
    text), and text with a long run of digits (an integer beyond 64 bits, which it would read
    as a float) does not go to it: json reads those, and says what is wrong as it always did.
    ``data`` is the text's UTF-8 bytes.
    """
    if _LONG_RUN not in data.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def _finite(literal: str) -> float:
    """A JSON number as a float; one beyond a double's range (``1e400``, which json reads as
    infinity) is refused: no JSON writer can write it back, and the campaign file must be."""
    value = float(literal)
    if not math.isfinite(value):
        raise _NotJson(f"{literal[:40]} (beyond a double's range)")
    return value


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON (RFC 8259) has no such thing,
    and a browser, jq or the campaign writer would refuse the file later."""


def _not_json(constant: str) -> Any:
    raise _NotJson(constant)


def truncated(remedy: str) -> str:
    """The reason given for a file cut short, with what to do about it."""
    return f"{TRUNCATED}; {remedy}"


def not_json(text: str, exc: json.JSONDecodeError, remedy: str) -> str:
    """Why ``text`` did not decode as JSON: cut short (with ``remedy``), or where it is wrong."""
    if _cut_short(text, exc):
        return truncated(remedy)
    return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


def ends_mid_character(exc: UnicodeDecodeError) -> bool:
    """Whether bytes failed as UTF-8 only because they stop inside a character's bytes (a cut
    in "—" or "·"), rather than on bytes that are no UTF-8 at all."""
    return exc.reason == "unexpected end of data" and exc.end >= len(exc.object)


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the decoder failed because the text ended, rather than on a wrong character."""
    rest = text[exc.pos:].rstrip()
    if not rest or exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return len(rest) <= len("u1234")  # the file ends inside the escape
    return _PARTIAL_TOKEN.fullmatch(rest) is not None


def _version(path: Path, doc: JSONObject) -> int:
    if "version" not in doc:
        raise ResultFileError(path, "missing required key version")
    version = doc["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ResultFileError(path, f"version is {json_type_name(version)}, expected an integer")
    if version > FORMAT_VERSION:
        raise ResultFileError(path, f"written by a newer igestbench (version {version}); "
                                    f"this one reads up to {FORMAT_VERSION}")
    if version not in FIELDS:
        raise ResultFileError(path, f"unknown format version {version}; this igestbench reads "
                                    f"versions {min(FIELDS)} to {FORMAT_VERSION}")
    return version


def _view(path: Path, version: int, doc: JSONObject, damages: tuple[Damage, ...] = ()
          ) -> ResultFile:
    """The typed view of a valid current-version document (problems() has checked the types)."""
    run, target = doc["run"], doc["target"]
    finished = run.get("finished")
    url: str = target["url"]
    return ResultFile(
        path=path,
        version=version,
        tool_version=doc["tool"].get("version"),
        site=run["site"],
        run_id=run["id"],
        started=parse_timestamp(run["started"]),
        finished=parse_timestamp(finished) if finished is not None else None,
        status=run["status"],
        target_url=url,
        target_host=target.get("host") or urlsplit(url).hostname or url,
        api_version=target.get("api_version"),
        checks=tuple(doc.get("checks", ())),
        benchmarks=tuple(doc.get("benchmarks", ())),
        sweeps=tuple(doc.get("sweeps", ())),
        samples=tuple(doc.get("samples", ())),
        raw=doc,
        damages=damages,
    )
