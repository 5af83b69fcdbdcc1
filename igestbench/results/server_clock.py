"""Where a run's reading of the catalogue's clock came from: ``run.server_clock`` of a result file.

A run's cleanup proves an object is the run's only if its ``createTime`` lies within the run's
window on the server's clock (:mod:`igestbench.workloads.run_window`). The run reads that clock
when it begins, from one of:

* ``date-header`` — the HTTP ``Date`` of one answer (the local catalogue, most web servers);
* ``create-time`` — the server sent no ``Date`` (Payara, as a real ICAT 6.2.0 runs it): the
  ``createTime`` of a ``<tag>-clock`` Facility the run created for the purpose;
* ``local`` — neither (no ``Date``, and the clock Facility could not be made or read): the
  window goes by this machine's clock, with the wide allowance of clocks not in step.

The record says which, the server's clock less this machine's (``offset_s``; null when only
this machine's is known), the allowance the window takes at its start (``allowance_s``: 60 s
with the server's clock, 900 s without) and, for ``local``, what went wrong (``problem``). A
file without it (written before it was recorded) does not say; its cleanup happened all the
same. The runner writes the record (:mod:`igestbench.run.cleanup`), the report reads it from the
file alone (the runs' details, and a notice for a run that had no server clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CREATE_TIME", "DATE_HEADER", "LOCAL", "SOURCES", "clock_record", "clock_text",
           "source_problem"]

DATE_HEADER = "date-header"
CREATE_TIME = "create-time"
LOCAL = "local"
SOURCES = (DATE_HEADER, CREATE_TIME, LOCAL)

#: How each source reads on a page (the runs' details).
_SAID = {DATE_HEADER: "Date header", CREATE_TIME: "createTime of the run's clock Facility",
         LOCAL: "none: this machine's clock"}


def clock_record(source: str, offset_s: float | None, allowance_s: float,
                 problem: str | None = None) -> dict[str, Any]:
    """``run.server_clock`` as the runner writes it."""
    if source not in SOURCES:
        raise ValueError(f"clock source {source!r}: one of {', '.join(SOURCES)}")
    return {"source": source, "offset_s": None if offset_s is None else round(offset_s, 3),
            "allowance_s": allowance_s, "problem": problem}


def source_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a source (the loader's check), or None."""
    return None if value in SOURCES else f"is not one of {', '.join(SOURCES)}"


def _seconds(value: float) -> str:
    return f"{value:+.1f} s" if abs(value) < 120 else f"{value / 60:+.1f} min"


def clock_text(record: Any) -> str:
    """One line for the report: where the server's clock came from, the offset and window."""
    if not isinstance(record, Mapping) or record.get("source") not in SOURCES:
        return "not recorded (a file from before igestbench recorded it)"
    source, offset = record["source"], record.get("offset_s")
    allowance = record.get("allowance_s")
    window = f"; cleanup's window ±{allowance / 60:g} min" if isinstance(
        allowance, int | float) and allowance else ""  # fmt: skip
    said = _SAID[source]
    if source == LOCAL:
        why = f" ({record['problem']})" if record.get("problem") else ""
        return f"{said}{why}{window}"
    off = f", server {_seconds(offset)} from this machine" if isinstance(
        offset, int | float) else ""  # fmt: skip
    return f"{said}{off}{window}"
