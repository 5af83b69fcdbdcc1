"""Deployment scores per target, as the SV reports gave them, each with its evidence.

Four aspects, each a level with a score (higher is better) and the facts that decided it:

=============== ========================================================= =====
aspect          levels (score)                                             from
=============== ========================================================= =====
deployment      https-443 (3) > http-80 (2) > other-port (1)               URL
certificate     global-ca (3) > local-ca (2) > self-signed (1) > none (0)  TLS checks
authentication  institutional (2) > local (1)                              authenticators
content         representative (2) > partial (1) > empty (0)               counts
=============== ========================================================= =====

A level the checks could not establish (no read account, TLS unreachable …) is ``unknown`` with
score None, so that a report can tell "bad" from "not measured". The facts come from the checks
(see ``fact`` in sv_tests/conftest.py) under the keys named below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from igestbench.icat.endpoint import endpoint_of

#: Authenticators that keep their own list of users: a catalogue offering only these has not
#: joined an institutional or federated identity (every other mnemonic — ldap, uows, oidc,
#: shibboleth, a site's own — is one).
LOCAL_AUTHENTICATORS = frozenset({"simple", "db", "anon", "anonymous"})
CONTENT_ENTITIES = ("Investigation", "Dataset", "Datafile")

# fact keys the checks record
SYSTEM_TRUSTED = "tls.system_trusted"
SELF_SIGNED = "tls.self_signed"
ISSUER = "tls.issuer"
AUTHENTICATORS = "authenticators"
#: prefix: ``logins.<role>`` = the authenticator a login succeeded with
LOGINS = "logins"


def content_key(entity: str) -> str:
    return f"content.{entity}"


@dataclass(frozen=True)
class Score:
    level: str
    score: int | None
    max: int
    evidence: str


@dataclass(frozen=True)
class Scores:
    deployment: Score
    certificate: Score
    authentication: Score
    content: Score

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: asdict(score) for name, score in vars(self).items()}


def score_deployment(target: str) -> Score:
    endpoint = endpoint_of(target)
    where = f"{endpoint.scheme} on port {endpoint.port}"
    if endpoint.scheme == "https" and endpoint.port == 443:
        return Score("https-443", 3, 3, where)
    if endpoint.scheme == "http" and endpoint.port == 80:
        return Score("http-80", 2, 3, where + " (no TLS)")
    return Score("other-port", 1, 3, where + ": a port firewalls often block")


def score_certificate(target: str, facts: Mapping[str, Any]) -> Score:
    if endpoint_of(target).scheme != "https":
        return Score("none", 0, 3, "plain HTTP: no certificate")
    issuer = facts.get(ISSUER)
    if SYSTEM_TRUSTED not in facts and SELF_SIGNED not in facts:
        return Score("unknown", None, 3, "the TLS checks did not reach the certificate")
    if facts.get(SYSTEM_TRUSTED):
        return Score("global-ca", 3, 3, f"verified by the system trust store; issuer {issuer}")
    if facts.get(SELF_SIGNED):
        return Score("self-signed", 1, 3, f"the certificate is its own issuer ({issuer})")
    return Score("local-ca", 2, 3, f"issuer {issuer} is not in the system trust store")


def score_authentication(facts: Mapping[str, Any]) -> Score:
    offered: Sequence[str] = facts.get(AUTHENTICATORS) or ()
    source = "getAuthenticatorInfo lists"
    if not offered:
        # before 4.9 a server cannot list its plugins: the ones that accepted a login tell
        offered = [v for k, v in facts.items() if k.startswith(LOGINS + ".")]
        source = "logins succeeded with"
    if not offered:
        return Score("unknown", None, 2, "no authenticator list and no successful login")
    names = ", ".join(sorted(set(offered)))
    if set(offered) - LOCAL_AUTHENTICATORS:
        return Score("institutional", 2, 2, f"{source} {names}")
    return Score("local", 1, 2, f"{source} only local ones: {names}")


def score_content(facts: Mapping[str, Any]) -> Score:
    counts = {e: facts.get(content_key(e)) for e in CONTENT_ENTITIES}
    if any(n is None for n in counts.values()):
        return Score("unknown", None, 2, "no read account, or the counts failed")
    evidence = ", ".join(f"{n} {e}" for e, n in counts.items()) + " readable"
    if counts["Investigation"] and counts["Datafile"]:
        return Score("representative", 2, 2, evidence)
    if any(counts.values()):
        return Score("partial", 1, 2, evidence)
    return Score("empty", 0, 2, evidence)


def score_target(target: str, facts: Mapping[str, Any]) -> Scores:
    """All four scores of one target from the facts its checks recorded."""
    return Scores(
        deployment=score_deployment(target),
        certificate=score_certificate(target, facts),
        authentication=score_authentication(facts),
        content=score_content(facts),
    )


# --- what partners met: scored over the whole campaign, from every site's run --------------
#
# The four aspects above describe how a catalogue is deployed; a well-run and a failing one can
# be deployed alike (both 4/10 in the example campaign). These three say whether it worked for
# the campaign's sites: reached at all, its checks passed, its calls answered without errors.

def _share_level(share: float, steps: Sequence[tuple[float, int]]) -> int:
    return next((points for least, points in steps if share >= least), 0)


def score_reachability(connected: int, tried: int, blocked: Sequence[str] = ()) -> Score:
    """4 when every site that tried got an answer from the service, down to 0 when none did."""
    if not tried:
        return Score("unknown", None, 4, "no site ran the checks against it")
    share = connected / tried
    points = 4 if connected == tried else _share_level(share, ((0.75, 3), (0.5, 2), (1e-9, 1)))
    level = "all" if points == 4 else "most" if points == 3 else "some" if points else "none"
    who = f"; not: {', '.join(blocked)}" if blocked else ""
    return Score(level, points, 4, f"{connected} of {tried} sites got an answer{who}")


def score_checks(passed: int, run: int) -> Score:
    """4 when every check of the sites that got through passed, down to 0 when none did."""
    if not run:
        return Score("unknown", None, 4, "no site got through to run the checks")
    share = passed / run
    points = 4 if passed == run else _share_level(share, ((0.95, 3), (0.8, 2), (1e-9, 1)))
    level = {4: "all", 3: "nearly all", 2: "most", 1: "some", 0: "none"}[points]
    return Score(level, points, 4, f"{passed:,} of {run:,} checks passed")


#: What failed, named in the reliability score's evidence: at most this many (a query that
#: fails for every role and interface at every site would fill the page's column).
_NAMED = 5


def score_reliability(errors: int, calls: int, counted: str = "",
                      failing: Sequence[str] = ()) -> Score:
    """2 when the benchmarks' calls all succeeded, 1 under 1 % errors, 0 above; ``counted``
    says what a call is (the registry's words: results/figures.py ``BENCHMARK_CALLS``, and
    results/scale_rows.py ``SCALE_CALLS``), ``failing`` names what failed where the evidence
    has no other place to say it (the scale part's queries)."""
    if not calls:
        return Score("unknown", None, 2, "no benchmark calls were made")
    share = errors / calls
    points = 2 if errors == 0 else 1 if share < 0.01 else 0
    level = {2: "no errors", 1: "under 1 % errors", 0: "errors"}[points]
    more = len(failing) - _NAMED
    named = (f"; failed: {', '.join(failing[:_NAMED])}" + (f" (+{more} more)" if more > 0 else "")
             if failing else "")
    return Score(level, points, 2, f"{errors:,} failed of {calls:,} benchmark calls "
                                   f"({100 * share:.2g} %){named}"
                                   + (f" — {counted}" if counted else ""))
