"""Speed of ``/icat/port`` beside createMany, side by side in one run (issue 20.2).

Per round, in-process local catalogues (the server's threads and this driver share the machine):

* createMany of N Datafiles into 100 Datasets, straight into the store (the cheapest way in);
* ``GET /icat/port`` of that catalogue (the whole of it: N Datafiles and their hierarchy);
* ``POST /icat/port`` of the Datafile table of that export into a fresh catalogue holding the
  same hierarchy (every line looked up by its Dataset's key, created as root would, one
  transaction).

It prints Datafiles per second of each and their ratio to createMany, medians and range over
``--rounds``. Only loopback traffic.

Run:  python -m tests.benchmarks.port_throughput [--datafiles 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.store import Store
from tests.port_helpers import Port, body

USER = "simple/root"


def _hierarchy(store: Store) -> list[int]:
    """A Facility, an Investigation and 100 Datasets; their ids."""
    with store.transaction():
        fac = Bean("Facility", {"id": store.create(USER, Bean("Facility", {"name": "F"}))})
        it = store.create(USER, Bean("InvestigationType", {"name": "t", "facility": fac}))
        ds_type = store.create(USER, Bean("DatasetType", {"name": "t", "facility": fac}))
        inv = store.create(
            USER,
            Bean(
                "Investigation",
                {"name": "i", "visitId": "1", "title": "t", "facility": fac,
                 "type": Bean("InvestigationType", {"id": it})},
            ),
        )  # fmt: skip
        return [
            store.create(
                USER,
                Bean(
                    "Dataset",
                    {
                        "name": f"ds{k}",
                        "complete": False,
                        "investigation": Bean("Investigation", {"id": inv}),
                        "type": Bean("DatasetType", {"id": ds_type}),
                    },
                ),
            )
            for k in range(100)
        ]


def one_round(n: int) -> tuple[float, float, float]:
    """Seconds of createMany, export and import of ``n`` Datafiles."""
    with LocalCatalogue(ServeConfig()) as cat:
        datasets = _hierarchy(cat.store)
        created = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
        beans = [
            Bean(
                "Datafile",
                {
                    "name": f"df{k}",
                    "fileSize": k,
                    "location": f"/data/{k}",
                    "datafileCreateTime": created,
                    "dataset": Bean("Dataset", {"id": datasets[k % 100]}),
                },
            )
            for k in range(n)
        ]
        began = time.perf_counter()
        cat.store.create_many(USER, beans)
        create_many = time.perf_counter() - began
        port = Port(cat)
        sid = port.login()
        began = time.perf_counter()
        answer = port.export(sid)
        export = time.perf_counter() - began
        assert answer.status_code == 200, answer.text
        text = body(answer)
    table = "Datafile(" + text.split("\nDatafile(", 1)[1].split("\n\n", 1)[0]
    with LocalCatalogue(ServeConfig()) as cat:
        _hierarchy(cat.store)
        port = Port(cat)
        sid = port.login()
        began = time.perf_counter()
        answer = port.import_text(sid, f"1.0\n\n{table}\n")
        imported = time.perf_counter() - began
        assert answer.status_code == 204, answer.text
    return create_many, export, imported


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datafiles", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rates: dict[str, list[float]] = {"createMany": [], "export": [], "import": []}
    for _ in range(args.rounds):
        seconds = one_round(args.datafiles)
        for name, s in zip(rates, seconds, strict=True):
            rates[name].append(args.datafiles / s)
    base = statistics.median(rates["createMany"])
    print(f"{args.datafiles:,} Datafiles, {args.rounds} rounds (median, range):")
    for name, values in rates.items():
        median = statistics.median(values)
        print(
            f"  {name:<10} {median:>9,.0f} Datafiles/s  ({min(values):,.0f} to {max(values):,.0f})"
            f"  {median / base:.2f} x createMany"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
