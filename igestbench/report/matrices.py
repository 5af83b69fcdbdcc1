"""The participation and success matrices of a campaign, and their row, column and total sums.

Definitions (shown on the page as well, so that a reader can redo the arithmetic):

* **Participation** — a site took part in a part when one of its runs (the newest of each
  target) requested it; a cell counts the targets it did so against. A row's count is the
  number of parts the site took part in, its % that count over the campaign's parts; a
  column's count is the number of sites, its % over the campaign's sites.
* **Success** — a cell is the newest run of a client site against a target server: the checks
  of the catalogue passed out of those run (skipped checks are left out; the checks of the
  ICAT Data Service are counted apart, in the IDS success matrix of :mod:`.ids_matrix`).
  ``ok``: all passed; ``partial``: some; ``failed``: none, or the run could not reach the
  target; ``not-run``: no run, or a run without the verify part. Per row and column:
  ``count`` = cells run, ``ok`` = cells ok,
  ``fail`` = count - ok (partial and failed: a cell succeeds only when every check passed),
  success % = ok / count, coverage % = count / cells expected.
* **Local** cells — a site testing its own catalogue (the target's operator) — are marked:
  inside the operator's firewall they say little about what partners see, so the success of
  remote and local cells is also given apart.
* **Trend** against a previous campaign: sites and targets matched by name; a site that joined
  or left shows with one side empty, and cells are listed only where their state changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from igestbench.report.footnotes import Problem, run_problems
from igestbench.results.campaign import Campaign

STATES = ("ok", "partial", "failed", "not-run")


def percent(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in %, None when there is no whole to speak of."""
    return 100.0 * part / whole if whole else None


@dataclass(frozen=True)
class Tally:
    """Count of cells done out of those expected (participation)."""

    count: int
    expected: int

    @property
    def percent(self) -> float | None:
        return percent(self.count, self.expected)


@dataclass(frozen=True)
class ParticipationRow:
    site: str
    country: str
    #: per campaign part, the number of targets the site ran it against
    cells: tuple[int, ...]
    tally: Tally


@dataclass(frozen=True)
class Participation:
    parts: tuple[str, ...]
    rows: tuple[ParticipationRow, ...]
    columns: tuple[Tally, ...]
    total: Tally


@dataclass(frozen=True)
class SuccessCell:
    site: str
    target: str
    state: str
    passed: int
    total: int
    problems: tuple[Problem, ...]
    #: "complete", "partial", … of the run; None when there is no run
    status: str | None
    #: Whether the site got through to the service at all (a SOAP-level check passed).
    connected: bool = True
    #: a local connection: the site tested its own catalogue (it is the target's operator),
    #: inside its own firewall — the SV-0 campaigns' third state beside success and failure
    local: bool = False
    #: why a cell holds no counted check, where a file says (the IDS matrix: "no IDS at …")
    reason: str | None = None

    @property
    def text(self) -> str:
        if self.state == "not-run":
            return "\u2013"  # an en dash: nothing to count
        if self.state == "no-ids":
            return "no IDS"
        return f"{self.passed}/{self.total}" if self.connected and self.total else "✗"


@dataclass(frozen=True)
class Summary:
    """The sums of a row, a column or the whole success matrix."""

    count: int
    ok: int
    expected: int
    #: cells whose target serves no IDS (the IDS matrix): neither run nor failed
    absent: int = 0

    @property
    def fail(self) -> int:
        return self.count - self.ok

    @property
    def success(self) -> float | None:
        return percent(self.ok, self.count)

    @property
    def coverage(self) -> float | None:
        return percent(self.count, self.expected)


@dataclass(frozen=True)
class SuccessRow:
    site: str
    cells: tuple[SuccessCell, ...]
    summary: Summary


@dataclass(frozen=True)
class Success:
    targets: tuple[str, ...]
    rows: tuple[SuccessRow, ...]
    columns: tuple[Summary, ...]
    total: Summary
    #: the total over remote cells (a site against another's catalogue) and local ones apart
    remote: Summary = Summary(0, 0, 0)
    local: Summary = Summary(0, 0, 0)


def participation(campaign: Campaign) -> Participation:
    parts = campaign.parts
    rows = []
    for site in campaign.sites:
        runs = [r for r in campaign.runs if r.site == site.name]
        # targets, not runs: a swarm run beside a run of the same target counts it once
        cells = tuple(len({r.target for r in runs if part in r.result.raw["run"].get("parts", ())})
                      for part in parts)
        rows.append(ParticipationRow(site.name, site.country, cells,
                                     Tally(sum(n > 0 for n in cells), len(parts))))
    columns = tuple(Tally(sum(row.cells[i] > 0 for row in rows), len(rows))
                    for i in range(len(parts)))
    total = Tally(sum(t.count for t in columns), len(rows) * len(parts))
    return Participation(parts, tuple(rows), columns, total)


#: Parts whose checks need answers from the ICAT service itself.
SERVICE_PARTS = frozenset({"soap", "session", "read", "write"})

#: Parts whose checks are the ICAT Data Service's: the IDS success matrix counts them, this one
#: does not (a coordinator must see the catalogue's and the IDS's results apart).
DATA_SERVICE_PARTS = frozenset({"ids"})

#: Which checks of a run a matrix counts.
CheckFilter = Callable[[Mapping[str, Any]], bool]


def catalogue_check(check: Mapping[str, Any]) -> bool:
    """A check of the catalogue (every part but the IDS's)."""
    return check.get("part") not in DATA_SERVICE_PARTS


def _cell(campaign: Campaign, site: str, target: str, local: bool = False) -> SuccessCell:
    cell = measured_cell(campaign, site, target, catalogue_check)
    # the local frame is a connection the matrix shows: a cell not run has none, whoever runs
    # the catalogue (the built-in one is every site's own: CampaignTarget.is_local_to)
    return replace(cell, local=True) if local and cell.state != "not-run" else cell


def measured_cell(campaign: Campaign, site: str, target: str, counted: CheckFilter
                  ) -> SuccessCell:
    """The cell of the newest run of ``site`` against ``target``, over its ``counted`` checks."""
    run = campaign.run(site, target)
    if run is None:
        return SuccessCell(site, target, "not-run", 0, 0, (), None)
    result = run.result
    outcomes = [c["outcome"] for c in result.checks if counted(c)]
    passed = outcomes.count("passed")
    total = sum(o != "skipped" for o in outcomes)
    problems = run_problems(result, counted)
    if total == 0 and not problems:
        return SuccessCell(site, target, "not-run", 0, 0, (), result.status)
    # DNS resolving is no success: a site that never got an answer from the service could not
    # connect, however many of the network checks before that passed (the SV reports' ✗)
    connected = any(
        c["outcome"] == "passed" and c.get("part") in SERVICE_PARTS for c in result.checks
    )
    if total and passed == total:
        state = "ok"
    elif passed and connected:
        state = "partial"
    else:
        state = "failed"
    return SuccessCell(site, target, state, passed, total, problems, result.status, connected)


def summarise(cells: Sequence[SuccessCell], expected: int) -> Summary:
    run = [c for c in cells if c.state in ("ok", "partial", "failed")]
    return Summary(len(run), sum(c.state == "ok" for c in run), expected,
                   sum(c.state == "no-ids" for c in cells))


#: How a matrix makes a cell: (campaign, site, target, local) -> its cell.
CellMaker = Callable[[Campaign, str, str, bool], SuccessCell]


def success(campaign: Campaign, cell: CellMaker = _cell) -> Success:
    """The success matrix; ``cell`` makes its cells (the IDS matrix makes its own)."""
    targets = tuple(t.name for t in campaign.targets)
    rows = []
    for site in campaign.sites:
        cells = tuple(cell(campaign, site.name, target.name, target.is_local_to(site.name))
                      for target in campaign.targets)
        rows.append(SuccessRow(site.name, cells, summarise(cells, len(targets))))
    columns = tuple(summarise([row.cells[i] for row in rows], len(rows))
                    for i in range(len(targets)))
    every = [cell for row in rows for cell in row.cells]
    remote = [cell for cell in every if not cell.local]
    local = [cell for cell in every if cell.local]
    return Success(targets, tuple(rows), columns, summarise(every, len(every)),
                   summarise(remote, len(remote)), summarise(local, len(local)))


# --- the trend against a previous campaign ------------------------------------------------

#: Which way a change of state goes, for the arrow and the colour on the page.
_RANK = {"not-run": 0, "failed": 1, "partial": 2, "ok": 3}


@dataclass(frozen=True)
class TrendRow:
    site: str
    participation_before: Tally | None
    participation_now: Tally | None
    success_before: Summary | None
    success_now: Summary | None


@dataclass(frozen=True)
class CellChange:
    site: str
    target: str
    before: SuccessCell | None
    now: SuccessCell | None

    @property
    def direction(self) -> str:
        """"better", "worse" or "same"; "new" or "gone" for a cell one campaign did not have
        (a site or target that joined or left: neither better nor worse)."""
        if self.before is None or self.now is None:
            return "new" if self.before is None else "gone"
        old = _RANK[self.before.state] if self.before else 0
        new = _RANK[self.now.state] if self.now else 0
        return "better" if new > old else "worse" if new < old else "same"


@dataclass(frozen=True)
class Trend:
    previous: str
    rows: tuple[TrendRow, ...]
    participation: tuple[Tally, Tally]
    success: tuple[Summary, Summary]
    changes: tuple[CellChange, ...]


def trend(previous_name: str, before: tuple[Participation, Success],
          now: tuple[Participation, Success]) -> Trend:
    (part_old, succ_old), (part_new, succ_new) = before, now
    sites = list(dict.fromkeys([r.site for r in succ_new.rows] + [r.site for r in succ_old.rows]))
    p_old = {r.site: r.tally for r in part_old.rows}
    p_new = {r.site: r.tally for r in part_new.rows}
    s_old = {r.site: r.summary for r in succ_old.rows}
    s_new = {r.site: r.summary for r in succ_new.rows}
    rows = tuple(TrendRow(site, p_old.get(site), p_new.get(site), s_old.get(site),
                          s_new.get(site)) for site in sites)
    cells_old = {(c.site, c.target): c for r in succ_old.rows for c in r.cells}
    cells_new = {(c.site, c.target): c for r in succ_new.rows for c in r.cells}
    changes = []
    for key in dict.fromkeys([*cells_new, *cells_old]):
        old, new = cells_old.get(key), cells_new.get(key)
        if (old.state if old else "not-run") != (new.state if new else "not-run") or (
                old and new and (old.passed, old.total) != (new.passed, new.total)):
            changes.append(CellChange(key[0], key[1], old, new))
    return Trend(previous_name, rows, (part_old.total, part_new.total),
                 (succ_old.total, succ_new.total), tuple(changes))
