"""Helpers of the /icat/port tests: raw requests, and export files compared "apart from ids".

An export file shows ids only in its ``?`` columns (the local ids of types without a key, and
relations to such objects). Two exports of the same content from two catalogues differ there
and nowhere else; :func:`without_ids` replaces each such id by its rank among the ids of its
type in the order the file first shows them, so that the files compare equal. It splits lines
itself (quotes and backslash escapes), independently of the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import requests

from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue

PORT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "icat-6.2" / "port"
PROFILE = get_profile("6.2")
_HEADER = re.compile(r"^([A-Z]\w*)\((.*)\)$")
_LOCAL = re.compile(r"(?:(\w+)\()?\?:(\d+)")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$")


def recorded(name: str) -> str:
    return (PORT_FIXTURES / name).read_text(encoding="utf-8")


def answers() -> dict[str, Any]:
    """What the real ICAT 6.2.0 answered (fixtures/icat-6.2/port/answers.json)."""
    data: dict[str, Any] = json.loads(recorded("answers.json"))
    return data


class Port:
    """Raw requests to /icat of one local catalogue."""

    def __init__(self, cat: LocalCatalogue) -> None:
        self.base = cat.rest_url

    def login(self, user: str = "root", password: str | None = None) -> str:
        spec = {
            "plugin": "simple",
            "credentials": [{"username": user}, {"password": password or user}],
        }
        r = requests.post(f"{self.base}/session", data={"json": json.dumps(spec)}, timeout=30)
        assert r.status_code == 200, r.text
        return str(r.json()["sessionId"])

    def export(self, sid: str | None = None, **options: Any) -> requests.Response:
        spec = {"sessionId": sid, **options} if sid is not None else options
        return self.get({"json": json.dumps(spec)})

    def get(self, params: dict[str, str]) -> requests.Response:
        return requests.get(f"{self.base}/port", params=params, timeout=60)

    def import_text(self, sid: str | None, text: str, **options: Any) -> requests.Response:
        spec = {"sessionId": sid, **options} if sid is not None else options
        files = {"json": (None, json.dumps(spec)), "file": ("file", text.encode("utf-8"))}
        return requests.post(f"{self.base}/port", files=files, timeout=120)

    def search(self, sid: str, query: str) -> Any:
        r = requests.get(
            f"{self.base}/entityManager", params={"sessionId": sid, "query": query}, timeout=30
        )
        assert r.status_code == 200, r.text
        return r.json()


def body(r: requests.Response) -> str:
    """An export's text: UTF-8, though ``text/plain`` names no charset (requests would read
    ISO-8859-1), as the real server sends it."""
    return r.content.decode("utf-8")


def fault(r: requests.Response) -> tuple[int, str, str, int | None]:
    body = r.json()
    return r.status_code, body["code"], body["message"], body.get("offset")


def columns(line: str) -> list[str]:
    """The comma-separated values of a data line, quoted strings kept whole."""
    values: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for ch in line:
        if escaped:
            escaped = False
        elif quoted and ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            values.append("".join(current))
            current = []
            continue
        current.append(ch)
    values.append("".join(current))
    return values


def without_ids(text: str, utc_dates: bool = False) -> list[str]:
    """The lines of an export file with each ``?`` id replaced by ``#<rank>`` of its type;
    ``utc_dates``: dates written as the same instant in UTC (to compare across time zones)."""
    ranks: dict[str, dict[str, int]] = {}
    out: list[str] = []
    local: dict[int, str] = {}
    for line in text.split("\n"):
        header = _HEADER.match(line)
        if header:
            entity = PROFILE.entities[header.group(1)]
            local = {}
            for m in _LOCAL.finditer(header.group(2)):
                name = m.group(1)
                local[int(m.group(2))] = entity.field(name).type if name else entity.name
            out.append(line)
            continue
        if not line or line.startswith("#") or line == "1.0" or (not local and not utc_dates):
            out.append(line)
            continue
        values = columns(line)
        for n, value in enumerate(values):
            if n in local and value.startswith('"'):
                seen = ranks.setdefault(local[n], {})
                values[n] = f"#{seen.setdefault(value, len(seen) + 1)}"
            elif utc_dates and _TIMESTAMP.match(value):
                instant = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                values[n] = instant.astimezone(dt.UTC).isoformat()
        out.append(",".join(values))
    return out
