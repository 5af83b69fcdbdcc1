"""``sv7 cleanup``: finish the cleanup of runs stopped hard, from their journals."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from igestbench.commands.common import EXIT_ERROR, EXIT_OK, interactive_prompt
from igestbench.errors import UsageError
from igestbench.options import argparse_type, target


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cleanup",
        help="finish the cleanup of runs that were stopped hard, from their journals",
        description="Finds the journals (*.journal.jsonl) in a directory such as reports/, or "
        "takes journal files, and deletes at the catalogue each names what the server shows is "
        "the run's: below a Facility named after the run's tag (which must be in sv7's form), "
        "created by the run's account within the run's time. Anything else is reported and "
        "left alone, with what a delete would take it along with. A journal is removed once "
        "its cleanup is complete; one stopped hard resumes where it stopped. Credentials as "
        "for sv7 run (log in as the run's account). Exit 0: all clean; 1: something refused, "
        "foreign or left.",
    )
    p.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="a journal file or a directory of them"
    )
    p.add_argument("--journal", type=Path, help="a journal file (same as giving it as PATH)")
    p.add_argument(
        "--target",
        type=argparse_type(target),  # checked as sv7 run's: no credentials in the URL
        help="catalogue URL or HOST[:PORT]; default: the journal's own (another is refused)",
    )
    p.add_argument("--config", type=Path, help="sv7.toml to read")
    p.add_argument("--ca-file", type=Path)
    p.add_argument("--insecure", action="store_const", const=True)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from igestbench.client import ClientConfig
    from igestbench.client.transport import INSECURE_NOTICE
    from igestbench.config import load_run_config
    from igestbench.icat.credentials import Credentials
    from igestbench.run.leftovers import clean_all
    from igestbench.run.stopping import stop_signals

    paths = [*args.paths, *([args.journal] if args.journal else [])]
    if not paths:
        raise UsageError("name a journal file or a directory of journals (e.g. reports/)")
    logins: dict[str, tuple[ClientConfig, Credentials]] = {}
    if args.insecure:
        print(f"sv7 cleanup: {INSECURE_NOTICE}", file=sys.stderr)

    def client(url: str) -> tuple[ClientConfig, Credentials]:
        if url not in logins:  # one password prompt per catalogue, not per journal
            config = load_run_config(
                {"target": url, "ca_file": args.ca_file, "insecure": args.insecure},
                config_file=args.config,
                prompt=interactive_prompt(),
            )
            assert config.credentials is not None and config.target is not None
            logins[url] = (
                ClientConfig(config.target, ca_file=config.ca_file, insecure=config.insecure),
                config.credentials,
            )
        return logins[url]

    outcomes = []
    # a stop (Ctrl-C, SIGTERM, SIGHUP) ends it at once: a journal not finished stays, and the
    # next sv7 cleanup takes it up (what is gone already is counted as such)
    with stop_signals() as stop:
        try:
            for outcome in clean_all(paths, args.target, client):
                outcomes.append(outcome)
                for line in outcome.lines:
                    print(f"sv7 cleanup: {line}",
                          file=sys.stdout if outcome.complete else sys.stderr)  # fmt: skip
        except KeyboardInterrupt:
            print(f"sv7 cleanup: interrupted ({stop.name}); the journals not finished are kept: "
                  "run sv7 cleanup again", file=sys.stderr)  # fmt: skip
            return stop.exit_code
    if not outcomes:
        print(f"sv7 cleanup: no journal in {', '.join(map(str, paths))}: nothing to clean up")
    return EXIT_OK if all(o.complete for o in outcomes) else EXIT_ERROR
