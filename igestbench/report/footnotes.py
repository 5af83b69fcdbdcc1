"""Why cells of the success matrix are not ok: diagnoses grouped into lettered footnotes.

Each failed check carries the cause the verification diagnosed (one of
:mod:`igestbench.results.causes`). A run that could not reach its target has no checks; its
cause is read from the probe the runner recorded before giving up (the certificate's verify
error, the connection error), and its explanation and hint come from the same table of causes,
so both kinds read alike. Problems are grouped per target and cause — one footnote says "B: HZB
ICAT presents a self-signed certificate on port 8443; sites ELETTRA, ESRF could not connect"
instead of one remark per cell.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from igestbench.results.causes import explain, tls_cause
from igestbench.results.loader import ResultFile

#: A run that should have verified but recorded nothing, and nothing says why.
NO_CHECKS = "no-checks"


@dataclass(frozen=True)
class Problem:
    cause: str
    explanation: str
    hint: str | None


@dataclass(frozen=True)
class Footnote:
    letter: str
    target: str
    cause: str
    text: str
    hint: str | None
    #: the client sites whose cells carry this footnote, in matrix order
    sites: tuple[str, ...]


def _explained(cause: str, detail: str) -> Problem:
    """The diagnosis table's explanation and hint for ``cause``, with ``detail`` appended."""
    explanation, hint = explain(cause, detail)
    return Problem(cause, explanation, hint)


def _unreachable_cause(probe: Mapping[str, Any], note: str) -> tuple[str, str] | None:
    """(cause, detail) of a target the probe could not talk to, or None if it could.

    ``note`` is the runner's "target unreachable: …" line, if it wrote one.
    """
    tls = probe.get("tls") or {}
    http = probe.get("http") or {}
    verify_error = tls.get("verify_error")
    if http.get("error") == "SSLError" and isinstance(verify_error, str):
        return tls_cause(verify_error), note or verify_error
    error = str(tls.get("error") or http.get("error") or "")
    if not error and not note:
        if http.get("status") not in (None, 200):
            return "http-status", f"HTTP {http.get('status')}"
        return ("not-icat", "no ICAT WSDL at the address") if http.get("wsdl_ok") is False \
            else None
    text = f"{error} {note}".lower()
    for needle, cause in (("refused", "refused"), ("connect-timeout", "connect-timeout"),
                          ("connecttimeout", "connect-timeout"),
                          ("could not connect in time", "connect-timeout"),
                          ("timed out", "timeout"),
                          ("timeout", "timeout"), ("name or service", "dns"),
                          ("host name not found", "dns"), ("getaddrinfo", "dns")):
        if needle in text:
            return cause, note or error
    return "connection", note or error


def run_problems(result: ResultFile,
                 counted: Callable[[Mapping[str, Any]], bool] = lambda check: True
                 ) -> tuple[Problem, ...]:
    """The problems of a run: its failed checks (those ``counted``), or why it recorded none."""
    found = [Problem(str(c.get("cause") or "unexpected"),
                     str(c.get("explanation") or c["id"]), c.get("hint"))
             for c in result.checks if c["outcome"] in ("failed", "error") and counted(c)]
    if result.checks:
        return tuple(found)
    run = result.raw["run"]
    notes = [n for n in result.raw.get("notes", ()) if isinstance(n, str)]
    # the runner's note says it in full ("target unreachable: <url>: TLS failed: …")
    note = next((n for n in notes if n.startswith("target unreachable")), "")
    unreachable = _unreachable_cause(result.raw.get("probe") or {}, note)
    if unreachable is not None and (run["status"] == "failed" or "verify" in run.get("parts", ())):
        return (_explained(*unreachable),)
    if "verify" in run.get("parts", ()) or run["status"] == "failed":
        said = "; ".join(notes) or f"the run ended {run['status']} without checks"
        return (Problem(NO_CHECKS, f"no check results recorded: {said}", None),)
    return ()


def _sites(names: Sequence[str]) -> str:
    return ", ".join(names)


def _text(cause: str, target: str, port: int | None, operator: str | None,
          blocked: Sequence[str], flagged: Sequence[str], operator_reached: bool,
          example: Problem) -> str:
    """One footnote sentence; the common causes get the SV reports' wording.

    ``blocked`` sites could not connect at all, ``flagged`` ones connected and a check of
    theirs found the cause (the operator's own run often does: it trusts its certificate).
    """
    on_port = f" on port {port}" if port else ""
    who = _sites([*blocked, *flagged])
    also = f"; checks of {_sites(flagged)} flag it too" if blocked and flagged else ""
    connect = f"sites {_sites(blocked)} could not connect{also}" if blocked \
        else f"checks of sites {who} flag it"
    if cause in ("refused", "connect-timeout") and operator and operator_reached and blocked:
        verb = "refused" if cause == "refused" else "dropped"
        return (f"the firewall at {operator} {verb} connections from outside its site "
                f"({_sites(blocked)})")
    if cause == "refused":
        return f"{target} refused connections{on_port}; {connect}"
    if cause == "connect-timeout":
        at = f" at {operator}" if operator else ""
        return (f"connections to {target}{on_port} timed out, a firewall{at} likely drops "
                f"them; {connect}")
    if cause == "timeout":
        return (f"{target} did not answer in time{on_port} (a slow server, or, in files of "
                f"older versions, a firewall); {connect}")
    if cause == "tls-self-signed":
        return f"{target} presents a self-signed certificate{on_port}; {connect}"
    if cause == "tls-unknown-ca":
        return f"{target}'s certificate comes from a CA not everyone trusts; {connect}"
    if cause == "tls-expired":
        return f"{target}'s certificate has expired; {connect}"
    if cause == "tls-plain-http":
        return f"{target} answers plain HTTP, not HTTPS{on_port}; {connect}"
    if cause == "tls-hostname":
        return f"{target}'s certificate names another host; {connect}"
    if cause == "auth-refused":
        return f"{target} refused logins of sites {who} (user name or password wrong)"
    if cause == "rest-missing":
        return (f"{target} answers over SOAP but not over REST (/icat/): a proxy or firewall "
                f"in the way; checks of sites {who} flag it")
    if cause == "insufficient-privileges":
        return f"on {target}, the accounts of sites {who} lacked rights a check needed"
    if cause == "ids-fault":
        return f"{target}'s Data Service (/ids/) answered checks of sites {who} with errors"
    if cause.startswith("icat-fault-"):
        kind = cause.removeprefix("icat-fault-")
        return f"{target} answered checks of sites {who} with ICAT {kind} faults"
    meaning = example.explanation.split(": ", 1)[0]
    return f"{target}: {meaning} (sites {who})"


def letters() -> Iterator[str]:
    """A, B, …, Z, AA, AB, …: enough letters for any campaign."""
    size = 1
    while True:
        for i in range(len(string.ascii_uppercase) ** size):
            word = ""
            for _ in range(size):
                i, r = divmod(i, 26)
                word = string.ascii_uppercase[r] + word
            yield word
        size += 1


class CellProblems(Protocol):
    """What footnotes need of a success-matrix cell (matrices.SuccessCell)."""

    @property
    def site(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def total(self) -> int: ...
    @property
    def connected(self) -> bool: ...
    @property
    def problems(self) -> tuple[Problem, ...]: ...


def footnotes(cells: Sequence[CellProblems], ports: Mapping[str, int | None],
              operators: Mapping[str, str | None], target_order: Sequence[str],
              first: int = 0
              ) -> tuple[list[Footnote], dict[tuple[str, str], tuple[str, ...]]]:
    """Footnotes in target (column) order, and the letters of each (site, target) cell.
    ``first``: how many letters another matrix's footnotes took (the IDS matrix goes on
    after the success matrix's, so that one letter means one thing on the page)."""
    groups: dict[tuple[str, str], list[CellProblems]] = {}
    examples: dict[tuple[str, str], Problem] = {}
    for cell in cells:
        for problem in cell.problems:
            key = (cell.target, problem.cause)
            members = groups.setdefault(key, [])
            if cell not in members:
                members.append(cell)
            examples.setdefault(key, problem)
    reached = {(c.site, c.target) for c in cells if c.state in ("ok", "partial")}
    rank = {name: i for i, name in enumerate(target_order)}
    notes: list[Footnote] = []
    marks: dict[tuple[str, str], tuple[str, ...]] = {}
    for (target, cause), letter in zip(
            sorted(groups, key=lambda k: (rank.get(k[0], len(rank)), k[1])),
            itertools.islice(letters(), first, None), strict=False):
        members = groups[(target, cause)]
        operator = operators.get(target)
        blocked = [c.site for c in members if not c.connected or c.total == 0]
        flagged = [c.site for c in members if c.connected and c.total > 0]
        own_ok = operator is not None and (operator, target) in reached
        example = examples[(target, cause)]
        text = _text(cause, target, ports.get(target), operator, blocked, flagged, own_ok,
                     example)
        notes.append(Footnote(letter, target, cause, text, example.hint,
                              tuple(c.site for c in members)))
        for cell in members:
            key = (cell.site, cell.target)
            marks[key] = (*marks.get(key, ()), letter)
    return notes, marks
