"""How near the suite's own clients came to saturation: the one figure the client-bound flag
(measure/sampler.py) is decided from and the report's "client CPU per phase" chart draws, so
that the chart and the ⚠ client-bound marks agree. Not the machine's CPU: a busy box or a
catalogue on the same host slows the clients down, but does not make them the bottleneck.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CLIENT_BOUND_PERCENT", "CLIENT_USE_LABEL", "START_PHASE", "client_use_percent",
           "phase_client_use", "sample_numbers"]

#: Above this (the busiest client's % of one core, or the clients' % of what they could use) a
#: phase counts as client-bound.
CLIENT_BOUND_PERCENT = 90.0
#: What :func:`phase_client_use` is, in words short enough for a chart's axis: the suite's
#: clients' CPU (never the machine's), in % of one core per client process — the busiest
#: client's when that is higher — meaned while they ran. Not "% of what they could use": a
#: client process whose threads work outside the GIL (TLS, XML parsing) goes past 100 % of
#: one core (seen 2026-11-26: 115 % in a quick tour's burst phase), and a share cannot.
CLIENT_USE_LABEL = "suite's clients' CPU, % of one core per client (mean)"
#: The samples' phase of the worker processes' start-ups (measure/sampler.py), apart from the
#: phases they precede: it measures nothing, and is never client-bound.
START_PHASE = "start"


def client_use_percent(client: float, capacity: float, busiest: float | None = None) -> float:
    """How near the suite's clients came to saturation, in %: the higher of the busiest
    client's % of one core and the clients' CPU as % of what they could use (100 per client
    process). ``client_bound`` is this above :data:`CLIENT_BOUND_PERCENT`."""
    shares = [100.0 * client / capacity] if capacity > 0 else []
    if busiest is not None:
        shares.append(busiest)
    return max(shares, default=0.0)


def sample_numbers(sample: Mapping[str, Any], key: str, length: int | None = None
             ) -> list[float] | None:
    """The list ``key`` of a ``samples[]`` item as floats (of ``length`` items, when given);
    None when it is missing or not all numbers."""
    values = sample.get(key)
    if not isinstance(values, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    if length is not None and len(values) != length:
        return None
    return [float(v) for v in values]


def phase_client_use(sample: Mapping[str, Any]) -> float | None:
    """:func:`client_use_percent` of one phase as a result file holds it (a ``samples[]``
    item): time-weighted over the samples in which clients ran, as the flag is; None when no
    client of the suite ran (idle; the scale part, whose calls are made in the runner).
    Files written before ``dt_s`` and ``busiest_process_percent`` were kept: an unweighted
    mean, of the clients together (with one client process, the same figure)."""
    client = sample_numbers(sample, "client_cpu_percent")
    if client is None:
        return None
    capacity = sample_numbers(sample, "client_capacity_percent", len(client))
    if capacity is None:
        return None
    dt = sample_numbers(sample, "dt_s", len(client)) or [1.0] * len(client)
    weights = [w if cap > 0 else 0.0 for w, cap in zip(dt, capacity, strict=True)]
    total = sum(weights)
    if total <= 0:
        return None

    def mean(values: list[float]) -> float:
        return sum(v * w for v, w in zip(values, weights, strict=True)) / total

    busiest = sample_numbers(sample, "busiest_process_percent", len(client))
    return client_use_percent(mean(client), mean(capacity),
                              mean(busiest) if busiest is not None else None)
