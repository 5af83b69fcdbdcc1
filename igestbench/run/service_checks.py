"""Part ``verify`` of ``sv7 run``: the service checks (sv_tests) against the run's target."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from igestbench.config import RunConfig
from igestbench.errors import UsageError
from igestbench.results import ResultWriter
from igestbench.run.progress import Progress
from igestbench.verify import (
    Account,
    ReferenceQuery,
    VerificationResult,
    VerifyOptions,
    run_verification,
)
from igestbench.verify.options import PARTS as VERIFY_PARTS
from igestbench.verify.plugin import CheckRecord

if TYPE_CHECKING:
    from igestbench.run.runner import Target

#: The local catalogue's ordinary account: the checks prove it can read and cannot write.
LOCAL_READER = Account(
    "simple", "reader", "reader", role="reader", source="the built-in catalogue's reader account"
)
#: The example data of the built-in catalogue (igestbench.mock.seed), as the reader sees it.
LOCAL_REFERENCE_QUERIES = (
    ReferenceQuery(
        "example datafiles",
        "SELECT COUNT(df) FROM Datafile df JOIN df.dataset ds JOIN ds.investigation i "
        "JOIN i.facility f WHERE f.name = 'EXAMPLE'",
        6,
    ),
    ReferenceQuery("example facility", "SELECT f FROM Facility f WHERE f.name = 'EXAMPLE'", 1),
)


#: What to do when the checks themselves cannot run: this is the installation, not the target.
NOT_RUN_HINT = (
    "the service checks (sv_tests) did not load: install igestbench with its dependencies "
    "(pip install .) or run from a source checkout; `pytest sv_tests --target URL` shows the "
    "whole error"
)


def _not_run(explanation: str) -> VerificationResult:
    """The checks that could not run, as one check in error: a run whose checks did not load
    has verified nothing, and says so in its file and exit status (6), never as 0 checks."""
    record = CheckRecord("sv_tests", "verify", "error", 0.0, "checks-not-run", explanation,
                         NOT_RUN_HINT)
    return VerificationResult(checks=(record,), scores=None, api_version=None)


def verify(
    config: RunConfig, target: Target, writer: ResultWriter, progress: Progress
) -> VerificationResult:
    """Run sv_tests against the target; write ``checks`` and ``scores``; what they found."""
    base = config.verify if isinstance(config.verify, VerifyOptions) else VerifyOptions()
    creds = target.credentials
    accounts = list(base.accounts)
    if not any(a.role == "writer" for a in accounts):
        accounts.append(Account.of("writer", creds))
    queries = base.reference_queries
    if target.local:
        if not any(a.role == "reader" for a in accounts):
            accounts.append(LOCAL_READER)
        queries = queries or LOCAL_REFERENCE_QUERIES
    parts = base.parts
    if not parts and config.interfaces is not None and "rest" not in config.interfaces:
        # --interface soap: the run is not about REST, and a REST that does not answer
        # (rest-missing) must not fail it
        parts = tuple(p for p in VERIFY_PARTS if p != "rest")
    options = dataclasses.replace(
        base,
        parts=parts,
        target=target.url,
        site=config.site,
        ca_file=target.client.ca_file,
        insecure=target.client.insecure,
        timeout=config.timeout,
        accounts=tuple(accounts),
        reference_queries=queries,
    )
    progress.start("verify")
    why: str | None = None
    try:
        result = run_verification(options, quiet=True)
        if not result.checks:
            why = "; ".join(result.collection_errors) or (
                f"pytest collected no check (exit status {result.exit_status})")
    except UsageError as exc:  # pytest could not start on sv_tests (a broken conftest, none)
        why = str(exc)
    if why is not None:
        result = _not_run(f"no service check could run: {why}")
        progress.note(f"verify: {result.checks[0].explanation} (hint: {NOT_RUN_HINT})")
    found: dict[str, Any] = result.to_dict()
    writer.set_section("checks", found["checks"])
    writer.set_section("scores", found["scores"])
    outcomes = [c["outcome"] for c in found["checks"]]
    progress.finish(
        ", ".join(
            f"{outcomes.count(o)} {o}"
            for o in ("passed", "failed", "error", "skipped")
            if o in outcomes
        )
    )
    return result
