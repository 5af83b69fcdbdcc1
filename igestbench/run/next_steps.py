"""What ``sv7 run`` prints at its end: where the result file is, and what to try next.

Every line is a command that works as printed (paths quoted for the shell): a newcomer's first
run should end with the way to its report, not with a file name to look up in the README.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from igestbench.config import RunConfig

#: The campaign file and page the suggested merge writes: beside the working directory, not in
#: the results directory, where the next merge would take the campaign file for a result file.
CAMPAIGN_FILE = "campaign.json"
REPORT_PAGE = "report.html"


def end_of_run(config: RunConfig, path: Path, completed: bool) -> list[str]:
    """The lines to print: the result file, then (after a run that completed) what to try next,
    each command under a ``#`` line saying what it does (so the block pastes into a shell)."""
    lines = [f"result file: {path}"]
    if not completed:
        return lines
    results = shlex.quote(str(path.parent))
    steps = [(f"the report of the result files in {path.parent}/ (then open {REPORT_PAGE})",
              f"sv7 merge {results} -o {CAMPAIGN_FILE} && "
              f"sv7 report {CAMPAIGN_FILE} -o {REPORT_PAGE}")]
    if config.profile == "quick":
        same = ("" if config.target is None else
                f" --target {shlex.quote(config.target)} --site {shlex.quote(config.site)}")
        if config.out != RunConfig.out:
            same += f" --out {results}"
        steps.append(("the campaign's measurement: both client flavours, full counts (minutes)",
                      f"sv7 run{same} --profile full"))
    if config.target is None:
        steps.append(("an example campaign: five partners' catalogues failing as real ones did, "
                      "merged and reported (minutes)",
                      "python -m igestbench.example_campaign example-campaign"))
        steps.append(("a real catalogue: the password is asked for (or SV7_PASSWORD)",
                      "SV7_AUTH=simple SV7_USER=NAME sv7 run --target HOST --site SITE"))
    lines.append("next:")
    for why, command in steps:
        lines += [f"  # {why}", f"  {command}"]
    return lines
