"""The ``sv7`` command: the parser, the dispatch to one ``cmd_<name>()`` per subcommand (each in
its own module of ``igestbench.commands``), and the exit codes of errors."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from igestbench import __version__, redaction
from igestbench.commands import check, cleanup, merge, report, run, serve
from igestbench.commands.common import EXIT_ERROR, EXIT_USAGE
from igestbench.errors import Sv7Error, UsageError
from igestbench.swarm.command import add_swarm, cmd_swarm, patch_for_swarm


def _usage_error(prog: str, message: str) -> NoReturn:
    """One line naming the problem and exit 2 (no usage dump); ``sv7 check`` answers as a
    monitoring probe: UNKNOWN (3) on standard output, since 2 would read as CRITICAL."""
    if prog == "sv7 check":
        from igestbench.verify.check import UNKNOWN

        print(f"ICAT UNKNOWN - {message}", flush=True)
        sys.exit(UNKNOWN)
    print(f"{prog}: {message} (see {prog} --help)", file=sys.stderr)
    sys.exit(EXIT_USAGE)


class _Parser(argparse.ArgumentParser):
    """argparse with sv7's usage errors (:func:`_usage_error`)."""

    def error(self, message: str) -> NoReturn:
        _usage_error(self.prog, message)


COMMANDS: dict[
    str,
    tuple[
        Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
        Callable[[argparse.Namespace], int],
    ],
] = {
    "serve": (serve.add_parser, serve.cmd_serve),
    "run": (run.add_parser, run.cmd_run),
    "cleanup": (cleanup.add_parser, cleanup.cmd_cleanup),
    "check": (check.add_parser, check.cmd_check),
    "merge": (merge.add_parser, merge.cmd_merge),
    "report": (report.add_parser, report.cmd_report),
    "swarm": (add_swarm, cmd_swarm),  # its parser and body live in igestbench/swarm/command.py
}


def create_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="sv7",
        description="igestbench: service verification and ingestion benchmarks for ICAT "
        "metadata catalogues",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser
    )
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    patch_for_swarm(sys.argv[1:] if argv is None else argv)  # before the parsers import ssl
    parser = create_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the subcommand, which the user was talking to
        prog = f"sv7 {args.command}" if args.command else "sv7"
        _usage_error(prog, f"unrecognized arguments: {' '.join(extra)}")
    # every logger (ours, zeep, suds, urllib3 …) through one redaction: --debug shows envelopes
    redaction.install(logging.DEBUG if args.debug else logging.WARNING)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command][1](args)
    except UsageError as exc:
        print(f"sv7 {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Sv7Error as exc:
        if args.debug:  # the traceback through logging, so that it is scrubbed like the rest
            logging.getLogger("igestbench").error("sv7 %s failed", args.command, exc_info=exc)
        print(f"sv7 {args.command}: {redaction.scrub(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        # 128 + the signal: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (run/stopping.py)
        return 128 + getattr(exc, "signum", 2)
