"""A workload phase shorter than one sampling interval still has a reading of its clients' CPU
(TRYOUT4 #7: ``burst/rest/1`` and ``ids/lean/1`` had none — the workers had exited before the
phase's closing sample — and the page's chart left them without a bar, which its help read as
"no client of the suite ran").

The runner samples when the phase's workers have answered, before they are reaped. The test
does not depend on speed: the sampler here never ticks on its own (an interval of an hour), so
every reading a phase has comes from a phase switch or from that sample."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path

import pytest

from igestbench.config import RunConfig
from igestbench.measure.sampler import START_PHASE, Sampler
from igestbench.results.client_use import phase_client_use
from igestbench.run import runner
from igestbench.run.progress import Progress


class _NeverTicks(Sampler):
    """The runner's sampler with an interval no phase of the test reaches."""

    def __init__(self, interval_s: float = 1.0, children: Iterable[int] = (),
                 phase: str = "idle") -> None:
        super().__init__(interval_s=3600.0, children=children, phase=phase)


def test_every_workload_phase_has_a_reading_of_its_clients(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "Sampler", _NeverTicks)
    config = RunConfig(parts=("burst",), interfaces=("soap",), flavours=("zeep",),
                       concurrency=(1,), files=20, batch_size=10, out=tmp_path / "out")
    outcome = runner.Runner(config, Progress(io.StringIO(), live=False)).run()
    assert outcome.path is not None, outcome.summary
    doc = json.loads(outcome.path.read_text())
    (phase,) = [s for s in doc["samples"] if s["phase"] == "burst/zeep/1"]
    assert max(phase["client_capacity_percent"]) == 100.0  # one client process, read
    # its start-up (spawn, imports, WSDL, login, preparation) apart, before the barrier: the
    # phase's reading is its workload's alone (tests/test_sampler_start.py)
    (start,) = [s for s in doc["samples"] if s["phase"] == START_PHASE]
    assert max(start["client_capacity_percent"]) == 100.0
    assert min(phase["t_s"]) > max(start["t_s"])
    assert phase_client_use(phase) is not None  # the chart has its bar
    (entry,) = [b for b in doc["benchmarks"] if b["workload"] == "burst"]
    assert entry["client_cpu"]["cpu_percent"] is not None


def test_a_phase_read_before_this_says_too_short_to_sample_not_no_client(
        tmp_path: Path) -> None:
    """A file written before the runner read the clients at a phase's end: its short phase has
    no bar, and the page says why instead of the help's "no client of the suite ran"."""
    from igestbench.report import build_report, render_html
    from igestbench.report.series import history_panels
    from igestbench.results.campaign import dump_campaign, load_campaign
    from igestbench.results.merge import merge
    from tests.campaign_helpers import sample, write_result

    short = {**sample("burst/rest/1", [50.0], client=[0.0]), "client_capacity_percent": [0.0]}
    path = write_result(tmp_path, "B", "http://127.0.0.1:1/ICATService/ICAT",
                        parts=("full-cycle", "burst"), built_in=True,
                        samples=[sample("idle", [5.0]),
                                 sample("full-cycle/rest/1", [60.0], client=[40.0]), short])
    dump_campaign(merge([path]).document, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    cpu, net = history_panels(campaign.runs, campaign.targets)
    assert cpu.categories == ("idle", "full-cycle/rest/1", "burst/rest/1 (too short to sample)")
    assert net.categories == ("idle", "full-cycle/rest/1", "burst/rest/1")
    page = render_html(build_report(campaign))
    assert "burst/rest/1 (too short to sample)" in page
    assert "marked “too short to sample”, ended before the sampler read its clients (a phase " \
           "shorter than the sampling interval of 1 s" in page


def test_a_sweep_step_shorter_than_a_sampling_interval_has_a_reading_of_its_client() -> None:
    """A load sweep's step (the quick tour's are 0.5 s) is read before its load threads exit:
    an ended thread's CPU cannot be read, so without that reading the step had no bar."""
    from igestbench.measure.schedule import OpenLoop
    from igestbench.measure.sweep import SweepConfig, run_sweep

    def work(client: object) -> None:  # no server: the client's own CPU is what is read
        sum(range(2000))

    config = SweepConfig(slo_ms=60_000, max_rate=20, rates=[20], step_s=0.2, warmup_s=0)
    with _NeverTicks() as sampler, OpenLoop(object, {"work": work}, workers=2) as load:
        result = run_sweep(load, config, sampler, phase="sweep/lean")
    assert [s.demanded_rate for s in result.steps] == [20]
    (step,) = [s for s in sampler.series() if s.phase == "sweep/lean/20"]
    assert max(step.client_capacity_percent) == 100.0  # the load threads: one client's worth
    assert phase_client_use(step.to_dict()) is not None


def test_the_workers_start_ups_are_named_so_on_the_chart(tmp_path: Path) -> None:
    """A start-up at a full core draws a bar above the client-bound line: the chart says what
    it is, so that it is not taken for a flagged phase."""
    from igestbench.report.series import START_NOTE, history_panels
    from igestbench.results.campaign import dump_campaign, load_campaign
    from igestbench.results.merge import merge
    from tests.campaign_helpers import sample, write_result

    path = write_result(tmp_path, "B", "http://127.0.0.1:1/ICATService/ICAT",
                        parts=("full-cycle",), built_in=True,
                        samples=[sample("idle", [5.0]), sample(START_PHASE, [90.0], client=[98.0]),
                                 sample("full-cycle/rest/1", [60.0], client=[40.0])])
    dump_campaign(merge([path]).document, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    cpu, _ = history_panels(campaign.runs, campaign.targets)
    assert cpu.categories == ("idle", f"start ({START_NOTE})", "full-cycle/rest/1")
