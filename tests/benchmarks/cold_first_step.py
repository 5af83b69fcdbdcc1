"""The first step of a sweep with and without the warm-up before it, side by side, alternating.

    python -m tests.benchmarks.cold_first_step [--rounds 4]

Against the built-in catalogue on loopback: a one-step sweep at 10 requests/s (1 s, the step's
own --warmup 0.25 s) with the lean client and eight load workers, once with the warm-up before
the first step (OpenLoop.warm_up) and once without, in turn; prints the medians of the step's
corrected mean and p99 latency and the load average. The machine is shared: compare the two
lines of one run only.
"""

from __future__ import annotations

import argparse
import os
import statistics

from igestbench.client import ClientConfig, connect
from igestbench.client.base import Catalogue
from igestbench.config import ServeConfig
from igestbench.measure.schedule import OpenLoop
from igestbench.measure.sweep import SweepConfig, run_sweep
from igestbench.mock.catalogue import LocalCatalogue


class _Cold(OpenLoop):
    def warm_up(self, rate: float, seconds: float) -> dict[str, float | int]:
        return {}  # as before the warm-up: the first step makes the clients


def first_step(cat: LocalCatalogue, warm: bool) -> tuple[float, float]:
    def factory() -> Catalogue:
        client = connect(ClientConfig(cat.service_url), "lean")
        client.login("simple", {"username": "ingest", "password": "ingest"})
        return client

    config = SweepConfig(slo_ms=1000, max_rate=10, rates=[10], step_s=1.0, warmup_s=0.25)
    kind = OpenLoop if warm else _Cold
    with kind(factory, {"search": lambda c: c.search("SELECT f FROM Facility f")}) as load:
        latency = run_sweep(load, config).steps[0].to_dict()["latency_ms"]["corrected"]
    return latency["mean"], latency["p99"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    rounds = parser.parse_args().rounds
    found: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with LocalCatalogue(ServeConfig()) as cat:
        for _ in range(rounds):
            for warm in (False, True):
                found[warm].append(first_step(cat, warm))
    for warm in (False, True):
        mean = statistics.median(m for m, _ in found[warm])
        p99 = statistics.median(p for _, p in found[warm])
        print(f"warm-up before the first step {'on ' if warm else 'off'}: corrected mean "
              f"{mean:.2f} ms, p99 {p99:.2f} ms (median of {rounds})")
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
