"""Service verification: the checks of sv_tests/, their diagnoses, and deployment scores.

::

    from igestbench.verify import VerifyOptions, run_verification

    result = run_verification(VerifyOptions(target="https://icat.example.org"))
    result.to_dict()        # {"checks": [...], "scores": {...}} for the result file

``sv7 check`` (a Nagios-style probe) is :func:`cmd_check`, registered with
:func:`add_check_arguments`; the options are declared once in :mod:`igestbench.verify.options`
for argparse and pytest alike.
"""

from __future__ import annotations

from igestbench.results.causes import CAUSES
from igestbench.results.scoring import Score, Scores, score_target
from igestbench.verify.check import add_check_arguments, cmd_check, run_check
from igestbench.verify.diagnosis import CheckFailed, Diagnosis, diagnose
from igestbench.verify.options import (
    PARTS,
    Account,
    ReferenceQuery,
    VerifyOptions,
    add_arguments,
    options_from,
)
from igestbench.verify.plugin import CheckRecord
from igestbench.verify.runner import VerificationResult, run_verification

__all__ = [
    "CAUSES",
    "PARTS",
    "Account",
    "CheckFailed",
    "CheckRecord",
    "Diagnosis",
    "ReferenceQuery",
    "Score",
    "Scores",
    "VerificationResult",
    "VerifyOptions",
    "add_arguments",
    "add_check_arguments",
    "cmd_check",
    "diagnose",
    "options_from",
    "run_check",
    "run_verification",
    "score_target",
]
