"""The example campaign of ``fixtures/campaign``, produced by the tool itself.

``python -m igestbench.example_campaign fixtures/campaign`` starts five local catalogues on
loopback, each standing in for a partner's server and failing the way real ones did:

=============  ==========================================================================
ESRF ICAT      fine: HTTPS with a CA every site trusts (the stand-in for a public CA)
HZB ICAT       a self-signed certificate on a non-standard port; only HZB trusts it
ISIS ICAT      up for ISIS's own run, then its "firewall" closes: others are refused
ELETTRA ICAT   fine, but ESRF and DESY were given a wrong password for the reader account
DESY ICAT      slow (added latency) and erroring (a share of requests fail)
=============  ==========================================================================

and runs ``sv7 run`` as each site would (a subprocess with the site's name and credentials in
the environment, short options; three runs over SOAP and REST, the rest over SOAP), leaving
some cells out (PSI never ran, DESY and HZB skipped
some targets). ELETTRA ran against ESRF twice (the older run becomes history); DESY's file
against ESRF is rewritten as result format version 1, and ISIS's file against DESY is cut
short as an interrupted upload would be. Then it merges with the generated campaign.toml and
renders the report (plus a PNG screenshot when Chromium is installed).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.mock.catalogue import LocalCatalogue

SITES = (("ELETTRA", "IT"), ("HZB", "DE"), ("ESRF", "FR"), ("ISIS", "UK"), ("DESY", "DE"),
         ("PSI", "CH"))
#: name, operator, TLS mode, preferred port, fault knobs
TARGETS = (
    ("ESRF ICAT", "ESRF", "ca", 8181, FaultKnobs()),
    ("HZB ICAT", "HZB", "self-signed", 8443, FaultKnobs()),
    ("ISIS ICAT", "ISIS", "ca", 8182, FaultKnobs()),
    ("ELETTRA ICAT", "ELETTRA", "ca", 8183, FaultKnobs()),
    ("DESY ICAT", "DESY", "ca", 8184, FaultKnobs(latency_ms=15.0, error_rate=0.04, seed=7)),
)
#: (site, target) in the order they run; ISIS's own run comes before its firewall closes
RUNS = (
    ("ISIS", "ISIS ICAT"), ("ELETTRA", "ESRF ICAT"),
    # --- ISIS's firewall closes here ---
    ("ELETTRA", "HZB ICAT"), ("ELETTRA", "ISIS ICAT"), ("ELETTRA", "ELETTRA ICAT"),
    ("ELETTRA", "DESY ICAT"), ("ELETTRA", "ESRF ICAT"),
    ("HZB", "ESRF ICAT"), ("HZB", "HZB ICAT"), ("HZB", "ISIS ICAT"), ("HZB", "DESY ICAT"),
    ("ESRF", "ESRF ICAT"), ("ESRF", "HZB ICAT"), ("ESRF", "ISIS ICAT"),
    ("ESRF", "ELETTRA ICAT"), ("ESRF", "DESY ICAT"),
    ("ISIS", "ESRF ICAT"), ("ISIS", "HZB ICAT"), ("ISIS", "ELETTRA ICAT"),
    ("ISIS", "DESY ICAT"),
    ("DESY", "ESRF ICAT"), ("DESY", "ELETTRA ICAT"), ("DESY", "DESY ICAT"),
)
WRONG_READER_PASSWORD = {"ESRF", "DESY"}
OLD_FORMAT = ("DESY", "ESRF ICAT")
TRUNCATED = ("ISIS", "DESY ICAT")
#: small options: the whole campaign runs in a few minutes; profile full: these stand for a
#: campaign's runs, which the report must not label quick tours
RUN_OPTIONS = ("--profile", "full",
               "--parts", "verify,full-cycle,single-query,burst,multi-query,sweep",
               "--concurrency", "1,2", "--cycles", "2", "--files", "20", "--queries", "20",
               "--batch-size", "10", "--max-rate", "40", "--duration", "0.5", "--warmup", "0.1",
               "--timeout", "5")
FLAVOURS = {"HZB": "python-icat"}
#: Runs that measure ICAT's REST API beside SOAP (the report's "SOAP and REST" table); the
#: others measure SOAP only, which keeps the campaign to a few minutes.
BOTH_INTERFACES = {("ESRF", "ESRF ICAT"), ("ELETTRA", "ELETTRA ICAT"), ("HZB", "DESY ICAT")}
_SOURCE = str(Path(__file__).resolve().parents[2])


def _port(preferred: int) -> int:
    """``preferred`` when it is free on loopback (the footnotes name the port), else any."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
        except OSError:
            return 0
    return preferred


def _run(site: str, target: str, url: str, ca: Path | None, reader_password: str, out: Path,
         work: Path) -> Path:
    """``sv7 run`` as ``site`` runs it; ``ca``: the certificate the site was told to trust."""
    env = {**os.environ, "SV7_AUTH": "simple", "SV7_USER": "ingest", "SV7_PASSWORD": "ingest",
           "SV7_PASSWORD_READER": reader_password,
           # the same igestbench as this one, installed or not
           "PYTHONPATH": os.pathsep.join(filter(None, [_SOURCE, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "igestbench", "run", "--target", url,
               "--site", site, "--out", str(out), "--flavour", FLAVOURS.get(site, "zeep"),
               "--account", "reader=simple/reader", *RUN_OPTIONS,
               "--interface", "soap,rest" if (site, target) in BOTH_INTERFACES else "soap"]
    if ca is not None:
        command += ["--ca-file", str(ca)]
    before = set(out.glob("*.json"))
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, check=False)
    new_files = set(out.glob("*.json")) - before
    if len(new_files) != 1:
        raise RuntimeError(f"sv7 run as {site} against {url} wrote no result file: "
                           f"{done.stderr.strip()[-500:]}")
    (new,) = new_files
    print(f"{site:8} → {url}: exit {done.returncode}, {new.name}")
    return new


@contextlib.contextmanager
def _catalogues() -> Iterator[dict[str, LocalCatalogue]]:
    with contextlib.ExitStack() as stack:
        started = {}
        for name, _, tls, port, knobs in TARGETS:
            config = ServeConfig(tls=tls, port=_port(port), knobs=knobs)
            started[name] = stack.enter_context(LocalCatalogue(config))
        yield started


def _campaign_toml(urls: dict[str, str]) -> str:
    lines = ['[campaign]', 'name = "sv7-example"',
             'title = "SV7 example campaign (local catalogues standing in for partners)"', '']
    for name, country in SITES:
        lines += ["[[site]]", f'name = "{name}"', f'country = "{country}"', ""]
    for name, operator, *_ in TARGETS:
        lines += ["[[target]]", f'name = "{name}"', f'url = "{urls[name]}"',
                  f'operator = "{operator}"', ""]
    return "\n".join(lines)


def _as_version_1(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["version"] = 1  # the layouts agree; version 1 only typed less (see format.py)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def build(directory: Path) -> int:
    directory = directory.resolve()  # the runs work in a temporary directory
    results = directory / "results"
    if results.exists():
        shutil.rmtree(results)  # the writer never overwrites; regenerating replaces on purpose
    results.mkdir(parents=True)
    files: dict[tuple[str, str], Path] = {}
    with _catalogues() as catalogues, tempfile.TemporaryDirectory() as tmp:
        urls = {name: cat.service_url for name, cat in catalogues.items()}
        cas: dict[str, Path | None] = {}
        for i, (name, cat) in enumerate(catalogues.items()):
            # a copy: a stopped catalogue deletes its certificate files, a partner keeps theirs
            cas[name] = Path(shutil.copy(cat.tls.ca, Path(tmp) / f"ca-{i}.pem")) if cat.tls \
                else None
        for i, (site, target) in enumerate(RUNS):
            if i == 2:
                catalogues["ISIS ICAT"].stop()  # the firewall closes: nothing answers there
            # HZB's self-signed certificate is trusted at HZB only
            trusted = target != "HZB ICAT" or site == "HZB"
            wrong = target == "ELETTRA ICAT" and site in WRONG_READER_PASSWORD
            files[(site, target)] = _run(site, target, urls[target],
                                         cas[target] if trusted else None,
                                         "wrong" if wrong else "reader", results, Path(tmp))
    _as_version_1(files[OLD_FORMAT])
    cut = files[TRUNCATED]
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    toml = directory / "campaign.toml"
    toml.write_text(_campaign_toml(urls), encoding="utf-8")
    campaign = directory / "campaign.json"
    html = directory / "example-report.html"
    steps = [["merge", *sorted(map(str, results.glob("*.json"))), "--campaign", str(toml),
              "-o", str(campaign)],
             ["report", str(campaign), "-o", str(html), "--markdown"]]
    for step in steps:
        subprocess.run([sys.executable, "-m", "igestbench", *step], check=False)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is not None:
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--disable-component-update",
                            "--no-first-run", "--disable-sync", f"--user-data-dir={profile}",
                            f"--screenshot={directory / 'example-report.png'}",
                            "--window-size=1400,3400", html.resolve().as_uri()],
                           check=False, capture_output=True, timeout=120)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m igestbench.example_campaign DIRECTORY", file=sys.stderr)
        return 2
    return build(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())
