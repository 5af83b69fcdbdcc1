"""--fail-on thresholds: parsing, units, and evaluation against benchmark figures."""

from __future__ import annotations

import pytest

from igestbench.errors import UsageError
from igestbench.run.thresholds import evaluate, parse_threshold

BENCH = [
    {
        "workload": "single-query",
        "flavour": "zeep",
        "concurrency": 1,
        "throughput_per_s": 400.0,
        "ops": {
            "single-query/jpql": {"count": 100, "ok": 100, "p99_ms": 12.0, "mean_ms": 3.0},
            "single-query/get": {"count": 100, "ok": 98, "p99_ms": 60.0, "mean_ms": 4.0},
        },
    },
    {
        "workload": "full-cycle",
        "flavour": "zeep",
        "concurrency": 2,
        "throughput_per_s": 10.0,
        "ops": {
            "full-cycle": {"count": 10, "ok": 10, "mean_ms": 1500.0, "p99_ms": 2500.0},
            "full-cycle/lookup Dataset": {"count": 10, "ok": 10, "mean_ms": 2.0},
        },
    },
]


def test_units_are_normalised() -> None:
    assert parse_threshold("full-cycle.mean<2s").value == 2000.0
    assert parse_threshold("single-query.p99 < 50ms").value == 50.0
    assert parse_threshold("burst/createMany.p50<=400ms").op == "createMany"


@pytest.mark.parametrize(
    ("text", "failures"),
    [
        ("full-cycle.mean<2s", 0),  # the cycle's own op, not its steps
        ("full-cycle.mean<1s", 1),
        ("single-query.p99<50ms", 1),  # get violates, jpql holds
        ("single-query/jpql.p99<50ms", 0),
        ("single-query.errors<1%", 1),  # get lost 2 %
        ("single-query.throughput>=250/s", 0),
        # the rate the terminal and the report show: 198 lookups in 692 ms of calls
        ("single-query.throughput>=300/s", 1),
        ("burst.p99<1s", 1),  # nothing measured: fails, loudly
        ("sweep.sustained>=100/s", 1),  # no sweep in the run
    ],
)
def test_evaluation(text: str, failures: int) -> None:
    assert len(evaluate([parse_threshold(text)], BENCH)) == failures


@pytest.mark.parametrize(
    "text",
    [
        "p99<50",
        "single-query.p99<fast",
        "single-query.speed<1s",
        "single-query.errors<1ms",
        "single-query.p99<50%",
    ],
)
def test_bad_thresholds(text: str) -> None:
    with pytest.raises(UsageError, match="--fail-on"):
        parse_threshold(text)


def test_one_line_per_threshold_worst_first_in_its_own_unit() -> None:
    """TRYOUT3 finding 13: one line per threshold, not one per series; the figure with the
    threshold's unit; the interface named as the summary names it; "1 client"."""
    def p99(ms: float) -> dict[str, object]:
        return {"single-query/get": {"count": 10, "ok": 10, "p99_ms": ms}}

    series = [{**BENCH[0], "concurrency": c, "interface": i, "ops": p99(2.0 * c + (i == "rest"))}
              for c in (1, 2) for i in ("soap", "rest")]  # fmt: skip
    (line,) = evaluate([parse_threshold("single-query.p99<0.0025s")], series)
    assert line == (
        "single-query.p99<0.0025s: 3 of 4 series broke it, worst first: "
        "single-query/get 0.005 s (REST · zeep · 2 clients); "
        "single-query/get 0.004 s (SOAP · zeep · 2 clients); 1 more"
    )
    (line,) = evaluate([parse_threshold("single-query.p99<1ms")], series[:1])
    assert line == ("single-query.p99<1ms: the only series broke it: "
                    "single-query/get 2 ms (SOAP · zeep · 1 client)")
