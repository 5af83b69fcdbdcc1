"""``sv7 report``: a campaign file rendered as one HTML page (+ Markdown, CSV)."""

from __future__ import annotations

import argparse
from pathlib import Path

from igestbench.commands.common import EXIT_OK, output_file
from igestbench.errors import UsageError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="render a campaign file as one self-contained HTML page (+ Markdown, CSV)",
        description="Reads the campaign file only; the page needs no network and no JavaScript.",
    )
    p.add_argument("campaign", type=Path, help="campaign file written by sv7 merge")
    p.add_argument("-o", "--output", type=Path, required=True, help="HTML page to write")
    p.add_argument("--markdown", action="store_true", help="also write the page as .md beside it")
    p.add_argument("--csv", type=Path, metavar="DIR", help="also write the tables as CSV into DIR")
    p.add_argument(
        "--previous",
        type=Path,
        metavar="CAMPAIGN",
        help="an earlier campaign file: add the trend against it",
    )


def cmd_report(args: argparse.Namespace) -> int:
    from igestbench.report import build_report, render_html, render_markdown, write_csv
    from igestbench.results.campaign import load_campaign

    output_file(args.output)
    if args.csv is not None and args.csv.exists() and not args.csv.is_dir():
        raise UsageError(f"--csv {args.csv}: exists and is not a directory")
    previous = load_campaign(args.previous) if args.previous else None
    report = build_report(load_campaign(args.campaign), previous)
    written = [args.output]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render_html(report), encoding="utf-8")
    if args.markdown:
        written.append(args.output.with_suffix(".md"))
        written[-1].write_text(render_markdown(report), encoding="utf-8")
    if args.csv:
        written += write_csv(report, args.csv)
    for path in written:
        print(path)
    return EXIT_OK
