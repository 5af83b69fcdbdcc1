"""The ``sv7`` command: a parser, one ``cmd_<name>()`` per subcommand, and exit codes."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from igestbench import __version__
from igestbench.errors import Sv7Error, UsageError
from igestbench.run.options import RUN_OPTIONS, typed

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from igestbench.icat.schema import PROFILE_NAMES
    from igestbench.mock.tls import TLS_MODES

    p = sub.add_parser(
        "serve",
        help="run the local ICAT catalogue (wire-compatible SOAP service) on loopback",
        description="Start the local ICAT catalogue and print its WSDL URL. Ctrl-C stops it.",
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    p.add_argument(
        "--db", default=":memory:", help="SQLite file (kept across restarts) or :memory: (default)"
    )
    p.add_argument(
        "--profile",
        default="6.2",
        choices=PROFILE_NAMES,
        help="ICAT API generation to emulate (default 6.2)",
    )
    p.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="MECH/NAME:PASSWORD[:root]",
        help="an account (repeatable); default simple/root, simple/ingest (root) and simple/reader",
    )
    p.add_argument(
        "--users",
        type=Path,
        metavar="FILE",
        help="TOML file of [[user]] tables (mechanism, name, password, root)",
    )
    p.add_argument(
        "--friendly",
        action="append",
        default=[],
        metavar="MECH=NAME",
        help="friendly name getAuthenticatorInfo gives a mechanism (repeatable; default "
        "simple=Simple, others none)",
    )
    p.add_argument(
        "--example-data",
        action="store_true",
        help="give a new database example data (Facility EXAMPLE) and rules letting every "
        "logged-in user read; without it, as on a fresh ICAT, ordinary users see nothing",
    )
    p.add_argument(
        "--tls",
        metavar="|".join(TLS_MODES) + "|CERT,KEY",
        help="serve HTTPS with a generated or given certificate",
    )
    p.add_argument(
        "--session-minutes", type=float, default=120.0, help="session lifetime (default 120)"
    )
    p.add_argument(
        "--max-entities",
        type=int,
        default=10_000,
        help="most objects one search may return (default 10000)",
    )
    p.add_argument(
        "--timezone",
        default="UTC",
        metavar="ZONE",
        help="the server's time zone (IANA name, e.g. Europe/Berlin): dates sent without a zone "
        "are read in it and answers are given in it, as ICAT does with its JVM's zone "
        "(default UTC)",
    )
    g = p.add_argument_group("fault injection (to test clients and the suite itself)")
    g.add_argument("--latency-ms", type=float, default=0.0, help="added to every SOAP answer")
    g.add_argument(
        "--stall-every",
        type=int,
        default=0,
        metavar="N",
        help="every Nth SOAP request stalls for --stall-seconds",
    )
    g.add_argument("--stall-seconds", type=float, default=0.0)
    g.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="fraction of requests answered with an INTERNAL fault",
    )
    g.add_argument(
        "--drop-rate",
        type=float,
        default=0.0,
        metavar="P",
        help="fraction of requests whose connection is closed without an answer",
    )
    g.add_argument("--seed", type=int, default=0, help="seed of the injected faults")


def cmd_serve(args: argparse.Namespace) -> int:
    from igestbench.config import FaultKnobs, ServeConfig
    from igestbench.mock.auth import (
        DEFAULT_ACCOUNTS,
        DEFAULT_FRIENDLY_NAMES,
        load_accounts,
        parse_account,
        parse_friendly,
    )
    from igestbench.mock.catalogue import LocalCatalogue

    accounts = [parse_account(spec) for spec in args.user]
    if args.users:
        accounts += load_accounts(args.users)
    friendly = dict(DEFAULT_FRIENDLY_NAMES)
    friendly.update(parse_friendly(spec) for spec in args.friendly)
    config = ServeConfig(
        host=args.host,
        port=args.port,
        db=args.db,
        profile=args.profile,
        accounts=tuple(accounts) or DEFAULT_ACCOUNTS,
        tls=args.tls,
        lifetime_minutes=args.session_minutes,
        max_entities=args.max_entities,
        timezone=args.timezone,
        example_data=args.example_data,
        friendly_names=tuple(friendly.items()),
        knobs=FaultKnobs(
            latency_ms=args.latency_ms,
            stall_every=args.stall_every,
            stall_seconds=args.stall_seconds,
            error_rate=args.error_rate,
            drop_rate=args.drop_rate,
            seed=args.seed,
        ),
    )
    catalogue = LocalCatalogue(config)

    def banner() -> None:
        out = sys.stdout
        print(
            f"sv7 local ICAT catalogue {catalogue.profile.api_version} "
            f"(profile {config.profile}, database {config.db})",
            file=out,
        )
        print(f"WSDL: {catalogue.wsdl_url}", file=out)
        if config.timezone.upper() != "UTC":
            print(f"time zone: {config.timezone}", file=out)
        if catalogue.tls is not None:
            print(
                f"TLS: {catalogue.tls.mode} certificate; clients may trust {catalogue.tls.ca}",
                file=out,
            )
        if not args.user and not args.users:
            print(
                "accounts: simple/root:root and simple/ingest:ingest (root users), "
                "simple/reader:reader",
                file=out,
            )
        else:
            names = ", ".join(a.user_name + (" (root)" if a.root else "") for a in config.accounts)
            print(f"accounts: {names}", file=out)
        if not catalogue.store.fresh:
            print("database: as it was left (--example-data only fills a new one)", file=out)
        elif config.example_data:
            print("example data: Facility EXAMPLE; every logged-in user may read", file=out)
        else:
            print("no rules: only root users may read or write (see --example-data)", file=out)
        if config.knobs.active:
            print(f"fault injection: {config.knobs}", file=out)
        print("Ctrl-C stops it.", file=out, flush=True)

    catalogue.serve_forever(ready=banner)
    return EXIT_OK


# --- sv7 run ------------------------------------------------------------------------------


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the service checks and benchmarks against one catalogue, write a result file",
        description="Credentials come from sv7.toml [credentials], the environment (SV7_AUTH, "
        "SV7_USER, SV7_PASSWORD) or a prompt, never from the command line. Without --target "
        "the built-in catalogue is started and used.",
    )
    p.add_argument("--config", type=Path, help="sv7.toml to read (default ./sv7.toml if present)")
    for flag, dest, parse, text in RUN_OPTIONS:
        p.add_argument(flag, dest=dest, type=typed(flag, parse), help=text)
    p.add_argument(
        "--insecure",
        dest="insecure",
        action="store_const",
        const=True,
        help="do not verify the target's certificate (say so in the report)",
    )
    p.add_argument(
        "--gzip",
        dest="gzip",
        action="store_const",
        const=True,
        help="write the result file gzip-compressed",
    )
    from igestbench.verify.options import OPTIONS

    # the service checks' own options (accounts, reference queries …), defined once over there
    checks = p.add_argument_group("service checks (part verify)")
    own = {flag for flag, *_ in RUN_OPTIONS} | {"--insecure", "--flavour", "--debug"}
    for option in OPTIONS:
        if option.flags[0] not in own:
            checks.add_argument(*option.flags, **dict(option.kwargs))


def cmd_run(args: argparse.Namespace) -> int:
    from igestbench.config import load_run_config
    from igestbench.run.progress import Progress
    from igestbench.run.runner import Runner
    from igestbench.verify.options import options_from

    cli = {dest: getattr(args, dest) for _, dest, _, _ in RUN_OPTIONS}
    cli["insecure"] = args.insecure
    cli["gzip"] = args.gzip
    # passwords of further accounts (SV7_PASSWORD_<ROLE>) are read where the command starts
    cli["verify"] = options_from({**vars(args), "target": None}, os.environ)
    config = load_run_config(cli, config_file=args.config)
    outcome = Runner(config, Progress()).run()
    for line in outcome.summary:
        print(f"sv7 run: {line}", file=sys.stderr)
    if outcome.path is not None:
        print(f"result file: {outcome.path}")
    return outcome.exit_code


# --- sv7 cleanup --------------------------------------------------------------------------


def _add_cleanup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cleanup",
        help="finish the cleanup of a run that was interrupted, from its journal file",
        description="Deletes exactly the objects listed in the journal (newest first). "
        "Credentials as for sv7 run.",
    )
    p.add_argument("--journal", type=Path, required=True, help="the run's journal (.jsonl)")
    p.add_argument("--target", required=True, help="catalogue URL or HOST[:PORT]")
    p.add_argument("--config", type=Path, help="sv7.toml to read")
    p.add_argument("--ca-file", type=Path)
    p.add_argument("--insecure", action="store_const", const=True)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from igestbench.client import ClientConfig, connect
    from igestbench.config import load_run_config
    from igestbench.workloads import Journal, cleanup

    config = load_run_config(
        {"target": args.target, "ca_file": args.ca_file, "insecure": args.insecure},
        config_file=args.config,
    )
    journal = Journal.load(args.journal)
    assert config.credentials is not None and config.target is not None
    catalogue = connect(
        ClientConfig(config.target, ca_file=config.ca_file, insecure=config.insecure)
    )
    try:
        catalogue.login(config.credentials.authenticator, config.credentials.as_login())
        report = cleanup(catalogue, journal)
        catalogue.logout()
    finally:
        catalogue.close()
    lost = f" ({report.by_name} found by the run's Facility name)" if report.by_name else ""
    print(f"sv7 cleanup: deleted {report.deleted} objects{lost}, {report.already_gone} were "
          "gone already")
    return EXIT_OK


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from igestbench.verify import add_check_arguments

    p = sub.add_parser(
        "check",
        help="probe one catalogue for monitoring: Nagios exit code and one status line",
        description="Runs the connectivity, TLS, SOAP and session checks; exit 0 OK, "
        "1 WARNING, 2 CRITICAL, 3 UNKNOWN; passwords from SV7_PASSWORD_<ROLE> or --credentials.",
    )
    add_check_arguments(p)


def cmd_check(args: argparse.Namespace) -> int:
    from igestbench.verify import cmd_check as check

    return check(args)


# --- sv7 merge and sv7 report ------------------------------------------------------------


def _add_merge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "merge",
        help="merge result files into one campaign file (the newest run per site x target)",
        description="Unreadable files are reported with their reason and skipped (exit 1); "
        "files of sites or targets not in --campaign are reported and not counted.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="RESULT", help="result .json[.gz]")
    p.add_argument(
        "--campaign",
        type=Path,
        metavar="TOML",
        help="campaign.toml: the sites, targets and parts expected (default: those the files show)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="campaign file to write")
    p.add_argument("--strict", action="store_true", help="an unreadable file is fatal")


def cmd_merge(args: argparse.Namespace) -> int:
    from igestbench.config import load_campaign_config
    from igestbench.results.campaign import dump_campaign
    from igestbench.results.merge import merge

    campaign = load_campaign_config(args.campaign) if args.campaign else None
    outcome = merge(args.files, campaign, name=args.output.name.split(".")[0])
    for skipped in outcome.skipped:
        print(f"sv7 merge: skipped {skipped.file}: {skipped.reason}", file=sys.stderr)
    for line in outcome.unexpected:
        print(f"sv7 merge: {line}", file=sys.stderr)
    if outcome.skipped and args.strict:
        raise Sv7Error(f"{len(outcome.skipped)} file(s) unreadable; nothing written (--strict)")
    dump_campaign(outcome.document, args.output)
    print(
        f"campaign file: {args.output} ({len(outcome.document['runs'])} runs, "
        f"{len(outcome.document['history'])} older, {len(outcome.skipped)} skipped)"
    )
    return EXIT_ERROR if outcome.skipped else EXIT_OK


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


COMMANDS: dict[
    str,
    tuple[
        Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
        Callable[[argparse.Namespace], int],
    ],
] = {
    "serve": (_add_serve, cmd_serve),
    "run": (_add_run, cmd_run),
    "cleanup": (_add_cleanup, cmd_cleanup),
    "check": (_add_check, cmd_check),
    "merge": (_add_merge, cmd_merge),
    "report": (_add_report, cmd_report),
}


def create_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sv7",
        description="igestbench: service verification and ingestion benchmarks for ICAT "
        "metadata catalogues",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = create_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="sv7: %(levelname)s: %(message)s",
    )
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command][1](args)
    except UsageError as exc:
        print(f"sv7 {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Sv7Error as exc:
        if args.debug:
            raise
        print(f"sv7 {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
