"""The IDS success matrix: the checks of the ICAT Data Service, client site x target.

The same shape as the success matrix (:mod:`.matrices`), which counts the catalogue's checks
only, so that a coordinator sees per cell whether a site could store and read files through a
partner's IDS, apart from whether it could use the catalogue. A cell is the newest run of the
site against the target, over its checks of the ``ids`` part (sv_tests/test_ids.py):

* ``ok`` / ``partial`` / ``failed``: as in the success matrix; the failed checks' causes
  (``ids-fault``, ``insufficient-privileges`` …) become footnotes, lettered on from the success
  matrix's;
* ``no-ids``: the target serves no IDS (``/ids/ping`` did not answer ``IdsOK``; the run's
  checks skipped with that reason, or its ids part found none) — a fact about the deployment,
  not a failure: neither counted as run nor as failed, and counted apart (``no IDS``);
* ``failed`` without a count (✗): the site got no answer from the catalogue's host at all, so
  nothing could be asked of its IDS; the success matrix's footnote says why;
* ``not-run``: no run, or a run without the IDS checks (a file written before them, or
  ``--verify-parts`` without ``ids``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from igestbench.report.matrices import (
    DATA_SERVICE_PARTS,
    Success,
    SuccessCell,
    measured_cell,
    success,
)
from igestbench.results.campaign import Campaign
from igestbench.results.causes import NO_IDS

#: What a cell without a count says, for its title on the page and the CSV.
NO_CONNECTION = "no connection to the target's host (see the success matrix)"
NOT_CHECKED = "the run did not check the IDS (a file from before the IDS checks, or a run " \
              "without the ids part of the verification)"


def data_service_check(check: Mapping[str, Any]) -> bool:
    """A check of the ICAT Data Service."""
    return check.get("part") in DATA_SERVICE_PARTS


def _no_ids_reason(raw: Mapping[str, Any], skipped: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the run found no IDS at the target, or None when nothing says there is none."""
    for check in skipped:
        explanation = str(check.get("explanation") or "")
        if explanation.startswith(NO_IDS):
            return explanation
    target = raw.get("target")
    probe = target.get("data_service") if isinstance(target, dict) else None
    if isinstance(probe, dict) and probe.get("served") is False:
        return f"{NO_IDS} {probe.get('url')}: {probe.get('problem')}"
    return None


def ids_cell(campaign: Campaign, site: str, target: str, local: bool = False) -> SuccessCell:
    """The IDS matrix's cell of ``site`` against ``target`` (see the module docstring)."""
    catalogue = measured_cell(campaign, site, target, lambda check: True)
    cell = measured_cell(campaign, site, target, data_service_check)
    run = campaign.run(site, target)
    if run is None:  # never run: no connection to frame (matrices._cell)
        return cell
    if catalogue.state == "failed" and not catalogue.connected:
        # the IDS lives on the catalogue's host: a site that never reached it learnt nothing
        # of its IDS, and the success matrix's footnote already says why
        return SuccessCell(site, target, "failed", 0, 0, (), catalogue.status, connected=False,
                           local=local, reason=NO_CONNECTION)
    checks = [c for c in run.result.checks if data_service_check(c)]
    skipped = [c for c in checks if c["outcome"] == "skipped"]
    if cell.total == 0:
        absent = _no_ids_reason(run.result.raw, skipped)
        if absent is not None:
            return SuccessCell(site, target, "no-ids", 0, 0, (), cell.status, local=local,
                               reason=absent)
        why = str(skipped[0].get("explanation") or "skipped") if skipped else NOT_CHECKED
        return SuccessCell(site, target, "not-run", 0, 0, (), cell.status, reason=why)
    state = "ok" if cell.passed == cell.total else "partial" if cell.passed else "failed"
    # connected: the catalogue's host answered (above); the IDS's own failures are footnoted
    return replace(cell, state=state, connected=True, local=local)


def ids_success(campaign: Campaign) -> Success:
    """The IDS success matrix of ``campaign``: its rows, columns and sums, as the success
    matrix's (``absent`` counts the cells whose target serves no IDS)."""
    return success(campaign, ids_cell)


def any_checked(matrix: Success) -> bool:
    """Whether any run of the campaign checked an IDS, or found there was none: a campaign
    whose files predate the IDS checks has no IDS matrix (its cells without a connection
    would otherwise make one of ✗ and dashes)."""
    return any(c.total or c.state == "no-ids" for row in matrix.rows for c in row.cells)
