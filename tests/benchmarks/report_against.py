"""The 30 x 30 merge + render of test_bench_report.py, this checkout beside another, alternating.

    python -m tests.benchmarks.report_against --against DIR [--rounds 3]

DIR is another checkout (for example ``git archive main | tar -x -C /tmp/main``). The 900
result files are written once, by this checkout; each round runs merge + render in a fresh
interpreter of each checkout in turn (the busy shared machine makes figures of separate runs
incomparable) and prints the medians, the page sizes and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_ONE_ROUND = """
import json, re, sys, time
from pathlib import Path
from igestbench.report import build_report, render_html
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge

def main():
    files, out = sorted(Path(sys.argv[1]).glob("*.json")), Path(sys.argv[2])
    config = CampaignConfig("bench", tuple(CampaignSite(f"SITE{s}") for s in range(30)),
        tuple(CampaignTarget(f"ICAT {t}", f"https://icat{t}.example:8181/ICATService/ICAT",
                             f"SITE{t}") for t in range(30)))
    start = time.perf_counter()
    dump_campaign(merge(files, config).document, out / "campaign.json")
    merged = time.perf_counter()
    page = render_html(build_report(load_campaign(out / "campaign.json")))
    end = time.perf_counter()
    svg = sum(len(m) for m in re.findall(r"<svg.*?</svg>", page, re.DOTALL))
    print(json.dumps({"total": end - start, "merge": merged - start, "report": end - merged,
                      "page_mb": len(page.encode()) / 1e6, "svg_mb": svg / 1e6}))

if __name__ == "__main__":
    main()
"""


def _write_files(directory: Path) -> None:
    from tests.benchmarks.test_bench_report import SITES, TARGETS, UNIT_OPS, _entries
    from tests.campaign_helpers import REFUSED_PROBE, check, sample, sweep, write_result

    entries = _entries()
    checks = [check(f"c{i}", "failed" if i == 3 else "passed", "timeout") for i in range(25)]
    samples = [sample(f"{w}/zeep/{n}", [20.0, 35.0, 50.0]) for w in UNIT_OPS for n in (1, 2)]
    for s in range(SITES):
        for t in range(TARGETS):
            url = f"https://icat{t}.example:8181/ICATService/ICAT"
            if (s + t) % 11 == 0:
                write_result(directory, f"SITE{s}", url, run_id=f"r{s}-{t}", status="failed",
                             probe=REFUSED_PROBE, notes=[f"target unreachable: {url}: refused"])
                continue
            write_result(directory, f"SITE{s}", url, run_id=f"r{s}-{t}", minutes=s + t,
                         parts=("verify", *UNIT_OPS, "sweep"), checks=checks[: 20 + (s + t) % 6],
                         benchmarks=entries, sweeps=[sweep([10, 20, 40, 80, 160], 1.0 + t / 10)],
                         samples=samples)


def _round(tree: Path, script: Path, files: Path, out: Path) -> dict[str, float]:
    out.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(script), str(files), str(out)], env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "files").mkdir()
        _write_files(base / "files")
        script = base / "one_round.py"
        script.write_text(_ONE_ROUND, encoding="utf-8")
        results: dict[str, list[dict[str, float]]] = {"other": [], "this": []}
        print(f"load average at the start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        for _ in range(args.rounds):
            for name, tree in (("other", args.against.resolve()), ("this", ROOT)):
                results[name].append(_round(tree, script, base / "files", base / name))
                print(name, json.dumps({k: round(v, 2) for k, v in results[name][-1].items()}))
        for name in ("other", "this"):
            totals = [r["total"] for r in results[name]]
            last = results[name][-1]
            print(f"{name}: median {statistics.median(totals):.1f} s (merge "
                  f"{statistics.median(r['merge'] for r in results[name]):.1f} s), page "
                  f"{last['page_mb']:.2f} MB ({last['svg_mb']:.2f} MB SVG)")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
