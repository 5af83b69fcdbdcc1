"""The 30 x 30 merge + render of test_bench_report.py, this checkout beside another, alternating.

    python -m tests.benchmarks.report_against --against DIR [--rounds 3]

DIR is another checkout (for example ``git archive main | tar -x -C /tmp/main``). The 900
result files and a campaign.toml are written once, by this checkout; each round runs
``sv7 merge`` then ``sv7 report`` (the commands, as a coordinator runs them) in a fresh
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
import contextlib, io, json, re, sys, time
from pathlib import Path
from igestbench.cli import main as sv7

def main():
    files, out = Path(sys.argv[1]), Path(sys.argv[2])
    campaign, page = out / "campaign.json", out / "report.html"
    quiet = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(quiet):
        assert sv7(["merge", str(files), "--campaign", str(files.parent / "campaign.toml"),
                    "-o", str(campaign)]) == 0
        merged = time.perf_counter()
        assert sv7(["report", str(campaign), "-o", str(page)]) == 0
    end = time.perf_counter()
    html = page.read_text(encoding="utf-8")
    svg = sum(len(m) for m in re.findall(r"<svg.*?</svg>", html, re.DOTALL))
    print(json.dumps({"total": end - start, "merge": merged - start, "report": end - merged,
                      "page_mb": len(html.encode()) / 1e6, "svg_mb": svg / 1e6}))

if __name__ == "__main__":
    main()
"""


def _write_campaign_toml(path: Path) -> None:
    from tests.benchmarks.test_bench_report import SITES, TARGETS

    lines = ['[campaign]', 'name = "bench"', ""]
    for s in range(SITES):
        lines += ["[[site]]", f'name = "SITE{s}"', ""]
    for t in range(TARGETS):
        lines += ["[[target]]", f'name = "ICAT {t}"',
                  f'url = "https://icat{t}.example:8181/ICATService/ICAT"',
                  f'operator = "SITE{t}"', ""]
    path.write_text("\n".join(lines), encoding="utf-8")


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
        _write_campaign_toml(base / "campaign.toml")
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
