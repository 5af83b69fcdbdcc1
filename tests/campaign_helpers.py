"""Synthetic result files, written by the real ResultWriter, for the merge and report tests."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from igestbench.measure.stats import LatencyStats
from igestbench.results import ResultWriter

T0 = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.UTC)
REFUSED_PROBE = {"rtt": {"method": "tcp", "samples_ms": [], "median_ms": None},
                 "http": {"status": None, "wsdl_ok": False, "error": "ConnectionError"},
                 "tls": {"error": "[Errno 111] Connection refused"}}
SELF_SIGNED_PROBE = {"rtt": {"method": "tcp", "samples_ms": [0.1], "median_ms": 0.1},
                     "http": {"status": None, "wsdl_ok": False, "error": "SSLError"},
                     "tls": {"version": "TLSv1.3", "self_signed": True, "verified": False,
                             "verify_error": "self-signed certificate"}}


def check(name: str, outcome: str = "passed", cause: str | None = None) -> dict[str, Any]:
    return {"id": f"sv_tests/test_x.py::{name}", "part": "session", "outcome": outcome,
            "duration_s": 0.01, "cause": cause,
            "explanation": f"{cause}: detail" if cause else None,
            "hint": "do something" if cause else None}


def write_result(directory: Path, site: str, url: str, *, run_id: str = "r1",
                 minutes: int = 0, checks: Sequence[dict[str, Any]] = (),
                 parts: Sequence[str] = ("verify",), status: str = "complete",
                 probe: dict[str, Any] | None = None, notes: Sequence[str] = (),
                 benchmarks: Sequence[dict[str, Any]] = (),
                 sweeps: Sequence[dict[str, Any]] = (),
                 samples: Sequence[dict[str, Any]] = (), profile: str | None = None,
                 built_in: bool = False, run_extra: dict[str, Any] | None = None) -> Path:
    """One run's file; ``minutes`` after T0 decides which run of a cell is the newest.
    ``profile``: its run.profile (None: none, as before profiles); ``built_in``: a run against
    the built-in catalogue, as sv7 run writes it (target.local, target.name); ``run_extra``:
    more keys of its run section."""
    started = T0 + dt.timedelta(minutes=minutes)
    writer = ResultWriter(
        directory,
        run={"id": run_id, "site": site, "parts": list(parts),
             "started": started.isoformat().replace("+00:00", "Z"),
             **({"profile": profile} if profile else {}), **(run_extra or {})},
        target={"url": url, **({"local": True, "name": "built-in"} if built_in else {})},
        environment={"hostname": f"{site}-client"},
        autoflush_s=3600, now=lambda: started + dt.timedelta(seconds=30),
    )
    writer.set_section("probe", probe or {"rtt": {"method": "tcp", "median_ms": 1.0}})
    for section, items in (("checks", checks), ("benchmarks", benchmarks), ("sweeps", sweeps),
                           ("samples", samples), ("notes", notes)):
        for item in items:
            writer.append(section, item)
    return writer.finish(status)


def bench(workload: str, op: str, concurrency: int, latencies_ms: Sequence[float],
          flavour: str = "zeep") -> dict[str, Any]:
    """A ``benchmarks`` entry whose op holds a real HdrHistogram of ``latencies_ms``."""
    stats = LatencyStats.of(round(ms * 1e6) for ms in latencies_ms)
    mean = sum(latencies_ms) / len(latencies_ms)
    return {"workload": workload, "flavour": flavour, "concurrency": concurrency,
            "wall_s": sum(latencies_ms) / 1000 / concurrency,
            "throughput_per_s": 1000 * concurrency / mean, "client_bound": False,
            "ops": {op: {"count": len(latencies_ms), "ok": len(latencies_ms), "errors": {},
                         "mean_ms": mean, "histogram": stats.encode()}},
            "checks": {"batch_size": 10}, "problems": []}


def sweep(rates: Sequence[float], mean_ms: float) -> dict[str, Any]:
    steps = [{"demanded_rate": r, "duration_s": 1.0, "sent": r, "request_rate": r,
              "response_rate": r * 0.99, "missed_slots": 0,
              "latency_ms": {"corrected": {"mean": mean_ms * (1 + i),
                                           "ci95": [mean_ms * (0.9 + i), mean_ms * (1.1 + i)]}},
              "errors": {"timeout": i}} for i, r in enumerate(rates)]
    return {"flavour": "lean", "slo_ms": 50.0, "steps": steps, "sustained_rate": rates[0]}


def sample(phase: str, cpu: Sequence[float], client: Sequence[float] | None = None,
           net: tuple[Sequence[float], Sequence[float], Sequence[float] | None] | None = None
           ) -> dict[str, Any]:
    """A sampler series: the machine's CPU ``cpu``, the one client's own ``client``, and the
    machine's network ``net`` (in, out, loopback's; None: not recorded, as before)."""
    net_in, net_out, loopback = net or ([1.0] * len(cpu), [0.5] * len(cpu), None)
    return {"phase": phase, "interval_s": 1.0, "t_s": [float(i) for i in range(len(cpu))],
            "cpu_percent": list(cpu), "net_in_mbit_s": list(net_in),
            "net_out_mbit_s": list(net_out),
            **({"net_loopback_mbit_s": list(loopback)} if loopback is not None else {}),
            **({"client_cpu_percent": list(client),
                "client_capacity_percent": [100.0] * len(client)} if client else {})}
