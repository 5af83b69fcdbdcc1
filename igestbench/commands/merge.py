"""``sv7 merge``: result files of every site into one campaign file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from igestbench.commands.common import EXIT_ERROR, EXIT_OK, output_file
from igestbench.errors import Sv7Error, UsageError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "merge",
        help="merge result files into one campaign file (the newest run per site x target x "
        "kind: sv7 run, sv7 swarm)",
        description="Unreadable files are reported with their reason and skipped, damaged "
        "parts of readable ones (an HdrHistogram that does not decode …) left out (exit 1); "
        "files of sites or targets not in --campaign are reported and not counted.",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="RESULT",
        help="result files (.json, .json.gz), directories of them, or patterns such as "
        "'results/*.json' (expanded here when the shell did not)",
    )
    p.add_argument(
        "--campaign",
        type=Path,
        metavar="TOML",
        help="campaign.toml: the sites, targets and parts expected (default: those the files show)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="campaign file to write")
    p.add_argument("--strict", action="store_true",
                   help="an unreadable file or a damaged part of one is fatal")
    p.add_argument(
        "--max-size",
        type=_mebibytes,
        metavar="MIB",
        # the default is results.loader.MAX_DOCUMENT_BYTES (not imported here: sv7 starts faster)
        help="skip a result file larger than this, decompressed (default 256; a small .gz "
        "can inflate to gigabytes)",
    )


def _mebibytes(value: str) -> int:
    try:
        size = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of MiB") from None
    if not 0 < size <= 1024 * 1024:
        raise argparse.ArgumentTypeError(f"{value!r}: give a size above 0 MiB")
    return int(size * 2**20)


def cmd_merge(args: argparse.Namespace) -> int:
    from igestbench.results.campaign import dump_campaign
    from igestbench.results.campaign_file import load_campaign_config
    from igestbench.results.loader import MAX_DOCUMENT_BYTES
    from igestbench.results.merge import merge, result_paths

    output_file(args.output)
    campaign = load_campaign_config(args.campaign) if args.campaign else None
    paths, unmatched = result_paths(args.files)
    for line in unmatched:
        print(f"sv7 merge: note: {line}", file=sys.stderr)
    if not paths:
        raise UsageError("no result files to merge")
    limit = args.max_size or MAX_DOCUMENT_BYTES
    outcome = merge(paths, campaign, name=args.output.name.split(".")[0], max_bytes=limit)
    for skipped in outcome.skipped:
        print(f"sv7 merge: skipped {skipped.file}: {skipped.reason}", file=sys.stderr)
    for line in outcome.unexpected:
        print(f"sv7 merge: {line}", file=sys.stderr)
    for line in outcome.damaged:
        print(f"sv7 merge: damaged {line}", file=sys.stderr)
    for line in outcome.replaced:
        print(f"sv7 merge: {line}", file=sys.stderr)
    for line in outcome.combined:  # a cell made of several runs' pieces: which gave which
        print(f"sv7 merge: {line}", file=sys.stderr)
    for line in (*outcome.copies, *outcome.future):  # a run in two files; a wrong clock
        print(f"sv7 merge: {line}", file=sys.stderr)
    if (outcome.skipped or outcome.damaged) and args.strict:
        raise Sv7Error(f"{len(outcome.skipped)} file(s) unreadable, {len(outcome.damaged)} "
                       "damaged part(s); nothing written (--strict)")
    # merge checked every run it embeds: sealed, the report need not check them again
    dump_campaign(outcome.document, args.output, sealed=True)
    runs = len(outcome.document["runs"])
    damaged = f", {len(outcome.damaged)} damaged part(s) left out" if outcome.damaged else ""
    if outcome.replaced:  # the older runs' figures are not in the campaign: said above
        damaged += f", {len(outcome.replaced)} older not shown: see above"
    if outcome.combined:  # cells made of several runs' pieces: each said above
        damaged += f", {len(outcome.combined)} combined from several runs: see above"
    if outcome.copies:
        copies = len(outcome.copies)
        damaged += f", {copies} cop{'y' if copies == 1 else 'ies'} counted once"
    if outcome.future:
        damaged += f", {len(outcome.future)} started in the future"
    outside = f", {len(outcome.unexpected)} not in the campaign" if outcome.unexpected else ""
    print(
        f"campaign file: {args.output} ({runs} run{'' if runs == 1 else 's'}, "
        f"{len(outcome.document['history'])} older, {len(outcome.skipped)} skipped{outside}"
        f"{damaged})"
    )
    # a campaign of no run (every file outside it: a mistyped URL in campaign.toml) is no success
    return EXIT_ERROR if outcome.skipped or outcome.damaged or not runs else EXIT_OK
