"""The example result files of ``fixtures/results``, written by the real writer.

``python -m igestbench.results.example fixtures/results`` writes

* ``v<FORMAT_VERSION>/ELETTRA_icat.example.org_20261121T223000-ab12.json``: a small but complete
  run as ``sv7 run`` writes it (every section of layout.md, a failed check, a real HdrHistogram,
  figures over SOAP and REST);
* ``bad/``: files the loader must refuse, each for its own reason (see fixtures/results/README.md).

The good file of each past version stays committed unchanged when the version goes up: it is
that version's compatibility fixture, loaded by the tests for as long as the version is read.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from igestbench.results.format import FORMAT_VERSION, JSONObject
from igestbench.results.writer import ResultWriter

_STARTED = dt.datetime(2026, 11, 21, 22, 30, 0, 123000, tzinfo=dt.UTC)
_FINISHED = _STARTED + dt.timedelta(minutes=4, seconds=12.5)
_URL = "https://icat.example.org/ICATService/ICAT"

_RUN: JSONObject = {
    "id": "20261121T223000-ab12",
    "tag": "sv7-elettra-20261121T223000-ab12",
    "site": "ELETTRA",
    "started": "2026-11-21T22:30:00.123Z",
    "parts": ["verify", "full-cycle", "single-query", "sweep"],
    "flavours": ["zeep", "python-icat"],
    "concurrency": [1, 4],
    "interfaces": ["soap", "rest"],
    "options": {"cycles": 3, "files": 10, "max_rate": 200.0, "slo_ms": 50.0, "auth": "simple",
                "user": "ingest"},
}
_TARGET: JSONObject = {"url": _URL, "host": "icat.example.org", "port": 443, "scheme": "https",
                       "local": False, "api_version": "6.2.0",
                       "interfaces": {
                           "served": ["soap", "rest"], "measured": ["soap", "rest"],
                           "why": "GET https://icat.example.org/icat/version answered version "
                                  "6.2.0",
                           "rest": {"url": "https://icat.example.org/icat/version",
                                    "version": "6.2.0", "problem": None}}}
_ENVIRONMENT: JSONObject = {"os": "Linux-6.1.0-27-amd64-x86_64-with-glibc2.36",
                            "python": "3.11.7", "cpu_model": "Intel(R) Xeon(R) Gold 6230",
                            "cores": 8, "memory_bytes": 34359738368, "hostname": "sv7-client-1"}
_PROBE: JSONObject = {
    "rtt": {"method": "tcp", "samples_ms": [11.8, 12.1, 11.9, 12.4, 12.0], "median_ms": 12.0},
    "http": {"status": 200, "wsdl_ok": True},
    "tls": {"version": "TLSv1.3", "issuer": "CN=GEANT OV RSA CA 4,O=GEANT Vereniging,C=NL",
            "subject": "CN=icat.example.org", "not_after": "2027-03-01T23:59:59.000Z",
            "verified": True, "self_signed": False},
}


def _check(name: str, part: str, outcome: str, duration_s: float, cause: str | None = None,
           explanation: str | None = None, hint: str | None = None) -> JSONObject:
    return {"id": f"sv_tests/test_{part}.py::{name}", "part": part, "outcome": outcome,
            "duration_s": duration_s, "cause": cause, "explanation": explanation, "hint": hint}


_CHECKS = [
    _check("test_login[reader]", "session", "passed", 0.12),
    _check("test_login[ingest]", "session", "passed", 0.11),
    _check("test_get_api_version", "info", "passed", 0.03),
    _check("test_create_investigation", "ingest", "failed", 0.21, "insufficient-privileges",
           "ingest may not create Investigation (INSUFFICIENT_PRIVILEGES)",
           "grant the ingest user CRUD on Investigation via a Rule"),
    _check("test_search_concise", "query", "skipped", 0.0,
           explanation="the 4.3 concise syntax is not tested against 6.2 servers"),
]


def _histogram_b64(latencies_us: list[int]) -> str:
    histogram = HdrHistogram(1, 60_000_000, 3)
    for value in latencies_us:
        histogram.record_value(value)
    encoded: bytes = histogram.encode()  # compressed and base64-encoded already
    return encoded.decode("ascii")


def _benchmark(workload: str, flavour: str, concurrency: int, op: str,
               latencies_ms: list[float], interface: str = "soap") -> JSONObject:
    ordered = sorted(latencies_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    wall_s = round(sum(latencies_ms) / 1000 / concurrency, 3)
    return {
        "workload": workload, "flavour": flavour, "concurrency": concurrency,
        "interface": interface, "wall_s": wall_s,
        "throughput_per_s": round(len(latencies_ms) / wall_s, 1),
        "client_bound": False,
        "ops": {op: {"count": len(latencies_ms), "ok": len(latencies_ms),
                     "errors": {"IcatSession": 0, "timeout": 0},
                     "mean_ms": round(sum(latencies_ms) / len(latencies_ms), 3),
                     "p50_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99),
                     "max_ms": ordered[-1],
                     "histogram": _histogram_b64([round(v * 1000) for v in latencies_ms]),
                     "cold_ms": latencies_ms[:concurrency]}},
        "checks": {"expected": 20, "found": 20}, "problems": [],
    }


def _latencies(base: float, n: int) -> list[float]:
    # a fixed, slightly skewed pattern: the file must be the same bytes on every machine
    return [round(base * (1 + (i * 7 % 11) / 20 + (0.8 if i % 17 == 0 else 0)), 3)
            for i in range(n)]


def _sweep_step(rate: int, mean: float, errors: int) -> JSONObject:
    stats: dict[str, Any] = {"mean": mean, "ci95": [round(mean * 0.97, 2), round(mean * 1.03, 2)],
             "p50": round(mean * 0.9, 2), "p90": round(mean * 1.4, 2),
             "p99": round(mean * 2.1, 2), "p999": round(mean * 3.0, 2)}
    return {"demanded_rate": rate, "duration_s": 10.0, "sent": rate * 10,
            "request_rate": rate * 0.998, "response_rate": rate * 0.997 - errors / 10,
            "missed_slots": 0,
            "latency_ms": {"corrected": stats,
                           "uncorrected": {**stats, "p99": round(mean * 1.5, 2),
                                           "p999": round(mean * 1.9, 2)}},
            "errors": {"timeout": errors, "refused": 0}}


_SAMPLE: JSONObject = {
    "phase": "full-cycle/zeep/1", "interval_s": 1.0, "t_s": [0.0, 1.0, 2.0],
    "cpu_percent": [14.0, 22.5, 19.0], "per_core_percent": [[30.0, 45.0, 38.0], [2.0, 0.0, 1.0]],
    "process_cpu_percent": [11.0, 18.0, 15.5], "net_in_mbit_s": [0.4, 1.2, 1.1],
    "net_out_mbit_s": [0.2, 0.9, 0.8], "memory_percent": [31.0, 31.2, 31.2],
    "client_bound": False,
}


def write_example(directory: Path) -> Path:
    """The complete example run, as the runner would write it; returns the file's path."""
    writer = ResultWriter(directory, run=_RUN, target=_TARGET, environment=_ENVIRONMENT,
                          autoflush_s=0, now=lambda: _FINISHED)
    with writer:
        writer.set_section("probe", _PROBE)
        for check in _CHECKS:
            writer.append("checks", check)
        writer.set_section("scores", {"total": 85, "evidence": [
            "TLS certificate from a public CA", "ingest lacks create rights on Investigation"]})
        writer.append("benchmarks", _benchmark("full-cycle", "zeep", 1,
                                               "full-cycle", _latencies(4.2, 30)))
        writer.append("benchmarks", _benchmark("single-query", "python-icat", 4,
                                               "single-query/jpql", _latencies(12.5, 40)))
        writer.append("benchmarks", _benchmark("single-query", "rest", 4, "single-query/jpql",
                                               _latencies(9.5, 40), interface="rest"))
        writer.append("sweeps", {"flavour": "lean", "interface": "soap", "slo_ms": 50.0,
                                 "connection_mode": "persistent",
                                 "steps": [_sweep_step(100, 13.1, 0), _sweep_step(200, 41.7, 3)],
                                 "sustained_rate": 100})
        writer.append("sweeps", {"flavour": "rest", "interface": "rest", "slo_ms": 50.0,
                                 "connection_mode": "persistent",
                                 "steps": [_sweep_step(100, 10.2, 0), _sweep_step(200, 33.9, 1)],
                                 "sustained_rate": 200})
        writer.append("samples", _SAMPLE)
        writer.append("outages", {"start": "2026-11-21T22:32:10.500Z",
                                  "end": "2026-11-21T22:32:14.250Z", "errors": {"refused": 12}})
        writer.set_section("cleanup", {"deleted": 120, "already_gone": 3, "left": 0})
        writer.append("notes", "the target refused connections for 3.8 s during full-cycle")
    return writer.path


def _html_page() -> str:
    return ("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
            "<body><h1>Bad Gateway</h1><p>The proxy server received an invalid response.</p>"
            "</body></html>\n")


def write_bad_examples(directory: Path, good: Path) -> list[Path]:
    """Broken variants of ``good``, one per way a file reaches ``sv7 merge`` broken."""
    directory.mkdir(parents=True, exist_ok=True)
    data = good.read_bytes()
    doc = json.loads(data)
    future: dict[str, Any] = {**doc, "version": 99, "hologram": {"frames": 3}}
    missing = {**doc, "run": {k: v for k, v in doc["run"].items() if k != "site"}}
    foreign = {"version": "1.0", "metadata": {"hostname": "sv7-client-1"},
               "benchmarks": [{"runs": [{"values": [0.0012, 0.0011]}]}]}
    contents = {
        "bad-truncated.json": data[: len(data) * 3 // 5],
        "bad-foreign.json": json.dumps(foreign, indent=1).encode(),
        "bad-html-page.json": _html_page().encode(),
        "bad-future-version.json": json.dumps(future, indent=1, ensure_ascii=False).encode(),
        "bad-missing-site.json": json.dumps(missing, indent=1, ensure_ascii=False).encode(),
    }
    paths = []
    for name, content in contents.items():
        path = directory / name
        path.write_bytes(content)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m igestbench.results.example DIRECTORY", file=sys.stderr)
        return 2
    root = Path(args[0])
    version_dir = root / f"v{FORMAT_VERSION}"
    for old in version_dir.glob("*.json"):
        old.unlink()  # the writer never overwrites; regenerating replaces on purpose
    good = write_example(version_dir)
    for path in [good, *write_bad_examples(root / "bad", good)]:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
