"""Part ``scale`` of ``sv7 run``: how each query's cost grows with the catalogue, root and member.

One run-owned tree (:mod:`igestbench.workloads.scale_tree`) is grown to each of
``--scale-sizes`` in turn, and at each size the fixed query set
(:mod:`igestbench.workloads.scale_queries`) is asked over every interface measured, as root
(the run's own account) and as an ordinary member (the ``member`` role account: on the built-in
catalogue its ``simple/reader``). On the built-in catalogue the part adds ICAT's usual
membership rules, restricted to the tree's Facility; against a target it adds none and creates
only what the member needs (an InvestigationUser on each of the tree's own Investigations),
and the file says so. The ``scale`` section is rewritten after every size, so a stop keeps the
sizes measured; what the part created is journaled per batch and removed by the run's cleanup.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from igestbench.client import Catalogue, connect
from igestbench.config import RunConfig
from igestbench.errors import Sv7Error
from igestbench.icat.credentials import Credentials
from igestbench.icat.faults import IcatError, IcatSession
from igestbench.measure.sampler import Sampler
from igestbench.measure.stats import LatencyStats
from igestbench.results import ResultWriter
from igestbench.results.figures import MS, POPULATION_RATE, SCALE, figure, format_value
from igestbench.results.growth import fit
from igestbench.run.progress import Progress
from igestbench.workloads import Journal, RunTag, WrongResult
from igestbench.workloads.scale_queries import QUERIES, ScaleQuery, ask
from igestbench.workloads.scale_rules import MEMBERSHIP_ENTITIES, add_membership_rules
from igestbench.workloads.scale_tree import ScaleTree, TreeShape

if TYPE_CHECKING:
    from pathlib import Path

    from igestbench.run.runner import Target

#: The version of the result file's ``scale`` section.
SECTION_VERSION = 1
#: The role whose account plays the ordinary member (``--account member=MECH/NAME``).
MEMBER_ROLE = "member"
#: The member on the built-in catalogue: its ordinary account.
BUILT_IN_MEMBER = Credentials(
    "simple", "reader", "reader", source="the built-in catalogue's reader account"
)
#: Timed calls of each query at each size, interface and role, after WARMUP untimed ones.
CALLS = 20
WARMUP = 2
#: The client of each interface: the lean load path over SOAP, the rest client over REST.
FLAVOURS = {"soap": "lean", "rest": "rest"}


@dataclass(frozen=True)
class Role:
    name: str  # "root" or "member"
    credentials: Credentials


def member_account(config: RunConfig, local: bool) -> Credentials | None:
    """The member's account: ``--account member=…``, else the built-in catalogue's reader."""
    for account in config.accounts:
        if account.role == MEMBER_ROLE:
            return account
    return BUILT_IN_MEMBER if local else None


@contextmanager
def logged_in(target: Target, credentials: Credentials, flavour: str) -> Iterator[Catalogue]:
    client = connect(target.client, flavour)
    try:
        client.login(credentials.authenticator, credentials.as_login())
        yield client
    finally:
        with suppress(Sv7Error):  # a session that ended already expires on its own
            client.logout()
        client.close()


def _refused(target: Target, member: Credentials) -> str | None:
    """Why the member cannot log in (None: it can): a refused member costs its figures, not
    the run."""
    try:
        with logged_in(target, member, "lean"):
            return None
    except IcatSession as exc:
        return f"the member's login was refused: {exc} ({member.refused_hint()})"


def _user_id(catalogue: Catalogue, user_name: str) -> int | None:
    quoted = user_name.replace("'", "''")
    found = catalogue.search(f"SELECT u.id FROM User u WHERE u.name = '{quoted}'")
    return int(found[0]) if found else None


class _Tally:
    """The calls of one query by one role: latency of the good timed ones, errors, rows; and
    the warm-up's failed calls, which are failed calls too (the reliability score counts
    them, as it counts a benchmark's failed cold calls)."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.durations: list[int] = []
        self.errors: dict[str, int] = {}
        self.warmup_errors: dict[str, int] = {}
        self.rows: list[int] = []
        self.last_error = ""

    def failed(self, exc: Exception, timed: bool) -> None:
        counts = self.errors if timed else self.warmup_errors
        name = type(exc).__name__
        counts[name] = counts.get(name, 0) + 1
        if timed:
            self.last_error = str(exc)

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"n": len(self.durations), "calls": self.calls}
        if self.durations:
            stats = LatencyStats.of(self.durations)
            entry.update(p50_ms=round(stats.percentile_ms(50), 3),
                         p99_ms=round(stats.percentile_ms(99), 3),
                         mean_ms=round(stats.mean_ms, 3))  # fmt: skip
            # the same every call, but on a tree's ragged edge (a part-filled Dataset)
            entry["rows"] = sorted(self.rows)[len(self.rows) // 2]
        else:
            entry.update(p50_ms=None, p99_ms=None, mean_ms=None, rows=None)
        if self.errors:
            entry["errors"] = self.errors
            entry["error"] = self.last_error
        if self.warmup_errors:
            entry["warmup_errors"] = self.warmup_errors
        return entry


def measure_query(
    clients: Sequence[Catalogue], tree: ScaleTree, query: ScaleQuery, calls: int = CALLS,
    warmup: int = WARMUP,
) -> list[dict[str, Any]]:  # fmt: skip
    """``calls`` timed calls of ``query`` by each of ``clients`` (one per role) after ``warmup``
    untimed ones, each turn on another part of the tree. The roles take turns — call *i* of
    each asks for the same object, and who goes first alternates — so that a busy machine's
    drift and the database's caches weigh on every role alike and their ratio holds."""
    tallies = [_Tally(calls) for _ in clients]
    for turn in range(warmup + calls):
        call = query.call(tree, turn)
        order = list(zip(clients, tallies, strict=True))
        for client, tally in order if turn % 2 == 0 else reversed(order):
            started = time.perf_counter_ns()
            try:
                found = ask(client, call)
            except (IcatError, WrongResult) as exc:
                tally.failed(exc, timed=turn >= warmup)
                continue
            elapsed = time.perf_counter_ns() - started
            if turn >= warmup:
                tally.durations.append(elapsed)
                tally.rows.append(found)
    return [t.entry() for t in tallies]


class ScalePart:
    """One run's scale part: its tree, its roles, the section it writes."""

    def __init__(
        self, config: RunConfig, target: Target, writer: ResultWriter, progress: Progress,
        tag: RunTag, journal_path: Path, interfaces: tuple[str, ...],
        shape: TreeShape | None = None, calls: int = CALLS,
    ) -> None:  # fmt: skip
        self.config, self.target, self.writer, self.progress = config, target, writer, progress
        self.tag, self.interfaces, self.calls = tag, interfaces, calls
        self.shape = shape or TreeShape()
        self.journal = Journal(journal_path)
        self.facility = tag.scale_facility
        self.notes: list[str] = []
        self.roles: list[Role] = [Role("root", target.credentials)]
        self.sizes: list[dict[str, Any]] = []
        self.member_section: dict[str, Any] = {}
        self.rules: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        with logged_in(self.target, self.target.credentials, "lean") as root:
            tree = self._prepare(root)
            for size in self.config.scale_sizes:
                self.progress.start(f"scale/{size:,}")
                growth = tree.grow_to(size)
                entry: dict[str, Any] = {
                    "size": size, "datafiles_added": growth.datafiles,
                    "parameters_added": growth.parameters, "datasets": len(tree.datasets),
                    "investigations": len(tree.investigations),
                    "populate_s": round(growth.seconds, 3),
                    "rate_per_s": round(growth.rate_per_s, 1) if growth.rate_per_s else None,
                    "createmany_calls": growth.calls, "queries": [],
                }  # fmt: skip
                self.sizes.append(entry)
                for interface in self.interfaces:
                    entry["queries"] += self._measure(tree, interface)
                    self.writer.set_section("scale", self.section())
                self.progress.finish(self._line(entry))
        return self.section()

    @staticmethod
    def _line(entry: dict[str, Any]) -> str:
        """``+90,000 Datafiles at 13,100 Datafiles/s; slowest p50: name (member, rest) 12.1 ms``:
        every figure written as the registry of figures writes it."""
        rate = figure(SCALE, POPULATION_RATE)
        slowest = max((q for q in entry["queries"] if q["p50_ms"] is not None),
                      key=lambda q: q["p50_ms"], default=None)  # fmt: skip
        failed = sum(1 for q in entry["queries"] if q.get("errors"))
        text = (f"+{entry['datafiles_added']:,} Datafiles at "
                f"{format_value(entry['rate_per_s'], rate.unit)}")  # fmt: skip
        if slowest is not None:
            text += (f"; slowest p50: {slowest['query']} ({slowest['role']}, "
                     f"{slowest['interface']}) {format_value(slowest['p50_ms'], MS)}")
        return text + (f"; {failed} quer{'y' if failed == 1 else 'ies'} with errors"
                       if failed else "")  # fmt: skip

    def _prepare(self, root: Catalogue) -> ScaleTree:
        """The member's User row, the tree's root, and (built-in catalogue) the rules."""
        member = member_account(self.config, self.target.local)
        user_id = None
        if member is None:
            self.member_section = {"account": None, "why": (
                f"no member account: pass --account {MEMBER_ROLE}=MECH/NAME and set "
                f"SV7_PASSWORD_{MEMBER_ROLE.upper()} to measure an ordinary user")}  # fmt: skip
        else:
            user_id = _user_id(root, member.user_name)
            if user_id is None:
                self.member_section = {"account": member.user_name, "why": (
                    f"{member.user_name} has no User row on the catalogue: an InvestigationUser "
                    "needs one, and the part creates none outside its tree")}  # fmt: skip
            elif (refused := _refused(self.target, member)) is not None:
                self.member_section = {"account": member.user_name, "why": refused}
            else:
                self.member_section = {"account": member.user_name, "why": None}
                self.roles.append(Role(MEMBER_ROLE, member))
        if self.member_section["why"]:
            self.notes.append(f"scale: measured as root only: {self.member_section['why']}")
            self.progress.note(self.notes[-1])
        tree = ScaleTree(root, self.journal, self.facility, self.shape, member_user_id=user_id)
        tree.found()
        if self.target.local:
            ids = add_membership_rules(root, self.journal, self.facility)
            self.rules = {"added": len(ids), "entities": list(MEMBERSHIP_ENTITIES),
                          "restricted_to": self.facility, "why": (
                "the built-in catalogue: ICAT's usual membership rules, each restricted to "
                "the tree's Facility, added by the part and removed by the run's cleanup")}
        else:
            self.rules = {"added": 0, "entities": [], "restricted_to": None, "why": (
                "the facility's own rules decide what the member reads; the part added only "
                "an InvestigationUser for the member on each of its own Investigations")}
        self.progress.note(f"scale: rules: {self.rules['why']}")
        return tree

    def _measure(self, tree: ScaleTree, interface: str) -> list[dict[str, Any]]:
        """The query set over ``interface``, every role logged in on a client of its own."""
        with ExitStack() as stack:
            clients = [stack.enter_context(logged_in(self.target, r.credentials,
                                                     FLAVOURS[interface])) for r in self.roles]
            entries = []
            for query in QUERIES:
                figures = measure_query(clients, tree, query, self.calls)
                entries += [{"query": query.name, "interface": interface, "role": role.name,
                             **f} for role, f in zip(self.roles, figures, strict=True)]
        return entries

    def section(self) -> dict[str, Any]:
        """The result file's ``scale`` section as it stands."""
        return {
            "version": SECTION_VERSION,
            "facility": self.facility,
            "shape": self.shape.to_dict(),
            "calls": self.calls,
            "warmup": WARMUP,
            "flavours": {i: FLAVOURS[i] for i in self.interfaces},
            "roles": {r.name: r.credentials.user_name for r in self.roles},
            "member": self.member_section,
            "rules": self.rules,
            "queries": {q.name: q.label for q in QUERIES},
            "sizes": self.sizes,
            "growth": self.growth(),
            "notes": self.notes,
        }

    def growth(self) -> list[dict[str, Any]]:
        """Per query, interface and role: the slope of log p50 against log size, and its word."""
        series: dict[tuple[str, str, str], list[tuple[int, float, int | None]]] = {}
        for size in self.sizes:
            for q in size["queries"]:
                if q["p50_ms"] is not None:
                    key = (q["query"], q["interface"], q["role"])
                    series.setdefault(key, []).append((size["size"], q["p50_ms"], q.get("rows")))
        fits = {key: fit([s for s, _, _ in points], [t for _, t, _ in points],
                         [r for _, _, r in points]) for key, points in series.items()}  # fmt: skip
        out = []
        for (query, interface, role), points in series.items():
            found = fits[query, interface, role]
            if found is not None and role != "root":
                found = found.beside_root(fits.get((query, interface, "root")))
            out.append({"query": query, "interface": interface, "role": role,
                        "sizes": len(points), "slope": found.slope if found else None,
                        "growth": found.word if found else None,
                        "meaning": found.meaning if found else None})  # fmt: skip
        return out


def scale(
    config: RunConfig, target: Target, writer: ResultWriter, progress: Progress, tag: RunTag,
    journal_path: Path, interfaces: tuple[str, ...], sampler: Sampler | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Run the part; its section is in the file after every size (also after a stop). The
    sampler, if given, files the machine's load under the phase ``scale``."""
    part = ScalePart(config, target, writer, progress, tag, journal_path, interfaces)
    try:
        with sampler.phase("scale") if sampler is not None else nullcontext():
            return part.run()
    finally:
        if part.sizes or part.rules:
            writer.set_section("scale", part.section())
        for note in part.notes:
            writer.append("notes", note)
