"""Campaign reports: a view model built from a campaign file only, rendered by Jinja.

::

    from igestbench.report import build_report, render_html
    from igestbench.results.campaign import load_campaign

    report = build_report(load_campaign("campaign.json"))
    Path("reports/sv7.html").write_text(render_html(report), encoding="utf-8")
"""

from igestbench.report.matrices import Participation, Success, SuccessCell, Summary, Tally
from igestbench.report.model import Report, build_report
from igestbench.report.render import render_html, render_markdown, write_csv

__all__ = [
    "Participation",
    "Report",
    "Success",
    "SuccessCell",
    "Summary",
    "Tally",
    "build_report",
    "render_html",
    "render_markdown",
    "write_csv",
]
