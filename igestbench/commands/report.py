"""``sv7 report``: a campaign file rendered as one HTML page (+ Markdown, CSV)."""

from __future__ import annotations

import argparse
from pathlib import Path

from igestbench.commands.common import EXIT_OK, output_file
from igestbench.errors import Sv7Error, UsageError


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
    from igestbench.report.render import write_whole
    from igestbench.results.campaign import load_campaign

    output_file(args.output)
    if args.csv is not None and args.csv.exists() and not args.csv.is_dir():
        raise UsageError(f"--csv {args.csv}: exists and is not a directory")
    previous = load_campaign(args.previous) if args.previous else None
    report = build_report(load_campaign(args.campaign), previous)
    written: list[Path] = []
    target = args.output
    try:  # each file whole or not at all; a full disk or a folder refused is one line
        target.parent.mkdir(parents=True, exist_ok=True)
        written.append(write_whole(target, render_html(report)))
        if args.markdown:
            target = args.output.with_suffix(".md")
            written.append(write_whole(target, render_markdown(report)))
        if args.csv:
            target = args.csv
            written += write_csv(report, args.csv)
    except OSError as exc:
        before = f"; complete: {', '.join(map(str, written))}" if written else ""
        raise Sv7Error(f"{target}: cannot write ({exc.strerror or exc}); nothing was left "
                       f"half-written{before}") from None
    for path in written:
        print(path)
    return EXIT_OK
