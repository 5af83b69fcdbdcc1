"""A summary row — one figure of one run, as the result file's ``summary`` holds it — and the
ways to look rows up and to write them as CSV. The figures themselves are defined in
:mod:`igestbench.results.figures`, which re-exports everything here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from igestbench.results.formatting import BOUNDS
from igestbench.results.pieces import row_piece

if TYPE_CHECKING:
    from igestbench.results.campaign import CampaignRun
    from igestbench.results.figures import Figure

__all__ = ["SUMMARY_CSV_FIELDS", "SUMMARY_FIELDS", "RowIndex", "SummaryRow", "summary_csv_cells"]

#: How the registry begins the notes the client's CPU adds after a figure's own.
_CLIENT_NOTES = ("client-bound", "machine busy")

#: The keys of a ``summary`` row in the result file, and the columns of summary.csv, in order.
SUMMARY_FIELDS = ("workload", "interface", "flavour", "clients", "metric", "value", "unit",
                  "text", "samples", "bound", "marks", "note")


@dataclass(frozen=True)
class SummaryRow:
    """One figure of one run, as the result file's ``summary`` list holds it.

    ``text`` is how the figure is written everywhere (terminal, page, CSV). ``bound`` says the
    value is a limit, not a measurement: ``"lower"`` (written ``≥``: a sweep that reached its
    cap with the objective met) or ``"upper"`` (``<``: no step met it). ``marks`` are flags the
    page shows on the figure: ``client-bound`` (the suite's own clients were saturated: the
    figure understates the server), ``failed`` (the workload's clients stopped: no measurement),
    ``capped``, ``machine-busy`` (the clients waited for a core: the figure includes that
    wait); ``note`` says why, in one line.
    """

    workload: str
    interface: str
    flavour: str
    #: the concurrency level; None for a sweep (its load is a rate, not a number of clients)
    clients: int | None
    metric: str
    value: float | None
    unit: str
    text: str
    samples: int = 0
    bound: str | None = None
    marks: tuple[str, ...] = ()
    note: str | None = None

    @property
    def reason(self) -> str | None:
        """The figure's own note — why it failed, has no value or is bounded — without the
        client's notes the registry adds after it (``client-bound: …``, ``machine busy: …``)."""
        note = self.note or ""
        cut = min((note.find(n) for n in _CLIENT_NOTES if n in note), default=len(note))
        return note[:cut].removesuffix("; ") or None

    @property
    def key(self) -> tuple[str, str, str, int | None, str]:
        """What identifies the figure within a run: (workload, interface, flavour, clients,
        metric)."""
        return (self.workload, self.interface, self.flavour, self.clients, self.metric)

    @property
    def definition(self) -> Figure | None:
        """What the figure is (what is counted, over which calls, its unit, its samples)."""
        from igestbench.results.figures import figure  # the registry imports this module

        try:
            return figure(self.workload, self.metric)
        except KeyError:
            return None

    def to_dict(self) -> dict[str, Any]:
        """The row as the result file's ``summary`` holds it (keys :data:`SUMMARY_FIELDS`)."""
        return {"workload": self.workload, "interface": self.interface, "flavour": self.flavour,
                "clients": self.clients, "metric": self.metric, "value": self.value,
                "unit": self.unit, "text": self.text, "samples": self.samples,
                "bound": self.bound, "marks": list(self.marks), "note": self.note}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SummaryRow | None:
        """The row a file's ``summary`` item describes; None for one that is not a row."""
        try:
            value = data.get("value")
            clients = data.get("clients")
            return cls(
                workload=str(data["workload"]), interface=str(data["interface"]),
                flavour=str(data["flavour"]),
                clients=clients if isinstance(clients, int) and not isinstance(clients, bool)
                else None,
                metric=str(data["metric"]),
                value=float(value) if isinstance(value, int | float)
                and not isinstance(value, bool) else None,
                unit=str(data["unit"]), text=str(data["text"]),
                samples=int(data.get("samples") or 0),
                bound=data.get("bound") if data.get("bound") in BOUNDS else None,
                marks=tuple(str(m) for m in data.get("marks") or ()),
                note=str(data["note"]) if data.get("note") is not None else None,
            )
        except (KeyError, TypeError, ValueError):
            return None



#: The columns of summary.csv (``sv7 report --csv``): the run's site, target and id, then a row.
SUMMARY_CSV_FIELDS = ("site", "target", "run_id", *SUMMARY_FIELDS)


def summary_csv_cells(run: CampaignRun, row: SummaryRow) -> list[Any]:
    """One line of summary.csv: value and unit apart, the text as shown, marks space-separated,
    an absent value empty."""
    data = row.to_dict()
    data["marks"] = " ".join(row.marks)
    # a combined cell's figure names the run that measured it (results/pieces.py)
    origin = run.origin(str(row_piece(data)))
    return [run.site, run.target, origin.result.run_id, *(data[f] for f in SUMMARY_FIELDS)]


@dataclass
class RowIndex:
    """Rows by their key, for the printers that look figures up one by one (tables, charts)."""

    rows: Sequence[SummaryRow]
    _by_key: dict[tuple[str, str, str, int | None, str], SummaryRow] = field(
        init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key = {row.key: row for row in self.rows}

    def get(self, workload: str, interface: str, flavour: str, clients: int | None,
            metric: str) -> SummaryRow | None:
        return self._by_key.get((workload, interface, flavour, clients, metric))
