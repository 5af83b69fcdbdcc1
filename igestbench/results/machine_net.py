"""The machine's network traffic per phase: the one figure the sampler records the parts of
(measure/sampler.py) and the report's network chart draws, so that both say the same thing.

It is the machine's, not the suite's clients': the operating system counts bytes per interface,
not per process, so every other job on the machine is in it. A byte over loopback (a catalogue
on the same host: the built-in one, a real one on 127.0.0.1) is counted by the machine as sent
and as received; here it counts once, as the exchange's one byte. With a client talking to a
catalogue on the same host, or to a remote one, and nothing else on the machine, the figure is
then what the client sent and received.

Measuring the clients' own bytes would need each client's connections to count them (every
flavour's HTTP stack, the IDS clients and the sweep's load threads, each in its own process)
and the counts to reach the sampler per interval; until then this says what it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from igestbench.results.client_use import sample_numbers

__all__ = ["MACHINE_NET_LABEL", "MACHINE_NET_MISSING", "MACHINE_NET_TITLE", "machine_mbit_s",
           "phase_machine_net"]

#: The chart's title and axis: what is counted, where, and how a loopback byte is counted.
MACHINE_NET_TITLE = "the machine's network per phase (not the clients' own)"
MACHINE_NET_LABEL = "Mbit/s in + out, all interfaces, a loopback byte once (mean)"
#: A panel none of whose runs can say (their files hold each loopback byte twice).
MACHINE_NET_MISSING = "no data: written before loopback was counted apart"


def machine_mbit_s(in_mbit_s: float, out_mbit_s: float, loopback_mbit_s: float) -> float:
    """One sample's traffic: in and out of every interface, where those include loopback's
    bytes twice (sent and received), less loopback's once."""
    return max(0.0, in_mbit_s + out_mbit_s - loopback_mbit_s)


def phase_machine_net(sample: Mapping[str, Any]) -> float | None:
    """:func:`machine_mbit_s` of one phase as a result file holds it (a ``samples[]`` item),
    meaned over the phase's time (each sample weighted by the time it covers, ``dt_s``).

    None when the file cannot say: written before ``net_loopback_mbit_s`` was recorded, its
    ``net_in_mbit_s`` and ``net_out_mbit_s`` hold every loopback byte twice, indistinguishable
    from the other interfaces' (a local run's figure doubled); such a phase has no bar."""
    in_ = sample_numbers(sample, "net_in_mbit_s")
    if not in_:
        return None
    out = sample_numbers(sample, "net_out_mbit_s", len(in_))
    loopback = sample_numbers(sample, "net_loopback_mbit_s", len(in_))
    if out is None or loopback is None:
        return None
    weights = sample_numbers(sample, "dt_s", len(in_)) or [1.0] * len(in_)
    total = sum(weights)
    if total <= 0:
        return None
    return sum(machine_mbit_s(i, o, lo) * w
               for i, o, lo, w in zip(in_, out, loopback, weights, strict=True)) / total
