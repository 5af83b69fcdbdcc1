"""The options of ``sv7 run``, each defined once: flag, RunConfig field, parser and help.

The CLI builds its parser from this table and passes the values on by field name, so adding an
option is one line here and one field in :class:`igestbench.config.RunConfig`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from igestbench.errors import UsageError


def parse_mix_option(value: str) -> object:
    from igestbench.config import parse_mix

    return parse_mix(value)


#: (flag, RunConfig field, parse, help): each option of sv7 run, defined once.
RUN_OPTIONS: tuple[tuple[str, str, Callable[[str], object], str], ...] = (
    ("--target", "target", str, "catalogue URL or HOST[:PORT] (default: the built-in one)"),
    ("--site", "site", str, "name of the site running the suite (default: local)"),
    (
        "--flavour",
        "flavours",
        lambda v: tuple(v.split(",")),
        "client flavours, e.g. zeep,python-icat",
    ),
    (
        "--parts",
        "parts",
        lambda v: tuple(v.split(",")),
        "verify,full-cycle,single-query,burst,multi-query,sweep (default: all)",
    ),
    (
        "--concurrency",
        "concurrency",
        lambda v: tuple(int(x) for x in v.split(",")),
        "parallel clients per level, e.g. 1,2,4,8 (default 1,2)",
    ),
    ("--cycles", "cycles", int, "NeXus files each client ingests in the full cycle (default 10)"),
    ("--files", "files", int, "Datafiles per client in burst and multi-query (default 200)"),
    ("--queries", "queries", int, "single-result queries per client (default 200)"),
    ("--batch-size", "batch_size", int, "createMany batch size (default 100)"),
    ("--page-size", "page_size", int, "LIMIT page size of the paged query (default 100)"),
    ("--payload-bytes", "payload_bytes", int, "data payload in each NeXus file (default 0)"),
    (
        "--max-rate",
        "max_rate",
        float,
        "highest demanded rate of the load sweep, req/s (default 200)",
    ),
    ("--duration", "duration", float, "seconds per sweep step (default 3)"),
    ("--slo-ms", "slo_ms", float, "latency objective of the sustained rate (default 50)"),
    ("--repeat", "repeat", int, "repetitions of each sweep step (default 1)"),
    ("--warmup", "warmup", float, "seconds of warm-up before each sweep step (default 0.5)"),
    (
        "--calls-per-connection",
        "calls_per_connection",
        int,
        "0: one persistent connection per client; N: reconnect after every N calls",
    ),
    ("--mix", "mix", parse_mix_option, "operation mix of the sweep, e.g. search=21,get=8,create=1"),
    (
        "--fail-on",
        "fail_on",
        lambda v: tuple(t for t in v.split(";") if t.strip()),
        "thresholds, ';'-separated, e.g. 'single-query.p99<50ms;sweep.sustained>=100/s'",
    ),
    ("--outage-wait", "outage_wait", float, "seconds to wait for a silent target (default 120)"),
    ("--out", "out", Path, "directory of the result file (default reports/)"),
    ("--ca-file", "ca_file", Path, "PEM file of the CA(s) to trust for the target"),
    ("--timeout", "timeout", float, "seconds to wait for the target (default 30)"),
)


def typed(flag: str, parse: Callable[[str], object]) -> Callable[[str], object]:
    def convert(value: str) -> object:
        try:
            return parse(value)
        except (ValueError, UsageError) as exc:
            raise argparse.ArgumentTypeError(f"{value!r}: {exc}") from None

    convert.__name__ = flag.lstrip("-")
    return convert
