"""The ``sv7`` command: a parser, one ``cmd_<name>()`` per subcommand, and exit codes."""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from igestbench import __version__, redaction
from igestbench.errors import Sv7Error, UsageError
from igestbench.options import RUN_OPTIONS, argparse_type, number, whole
from igestbench.swarm.command import add_swarm, cmd_swarm, patch_for_swarm

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


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


def _interactive_prompt() -> Callable[[str], str] | None:
    """getpass at a terminal; elsewhere (cron, CI, a pipe) nothing is asked."""
    return getpass.getpass if sys.stdin.isatty() else None


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from igestbench.icat.schema import PROFILE_NAMES
    from igestbench.mock.tls import TLS_MODES

    p = sub.add_parser(
        "serve",
        help="run the local ICAT catalogue (wire-compatible SOAP service) on loopback",
        description="Start the local ICAT catalogue and print its WSDL URL. Ctrl-C stops it.",
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    p.add_argument(
        "--port", type=argparse_type(whole(0, 65535)), default=0,
        help="port; 0 picks a free one (default)",
    )
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
        "--session-minutes",
        type=argparse_type(number(0, above=True)),
        default=120.0,
        help="session lifetime (default 120)",
    )
    p.add_argument(
        "--max-entities",
        type=argparse_type(whole(1)),
        default=10_000,
        help="most objects one search may return or one createMany may create (default 10000)",
    )
    p.add_argument(
        "--query-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the SQL of one request is stopped after this long, with an INTERNAL fault "
        "(default 30)",
    )
    p.add_argument(
        "--max-elements",
        type=int,
        default=250_000,
        metavar="N",
        help="most XML elements in one request body, checked while parsing (default 250000)",
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
    g.add_argument(
        "--latency-ms",
        type=argparse_type(number(0, above=False)),
        default=0.0,
        help="added to every SOAP answer",
    )
    g.add_argument(
        "--stall-every",
        type=argparse_type(whole(0)),
        default=0,
        metavar="N",
        help="every Nth SOAP request stalls for --stall-seconds",
    )
    g.add_argument("--stall-seconds", type=argparse_type(number(0, above=False)), default=0.0)
    g.add_argument(
        "--error-rate",
        type=argparse_type(number(0, above=False)),
        default=0.0,
        metavar="P",
        help="fraction of requests answered with an INTERNAL fault",
    )
    g.add_argument(
        "--drop-rate",
        type=argparse_type(number(0, above=False)),
        default=0.0,
        metavar="P",
        help="fraction of requests whose connection is closed without an answer",
    )
    g.add_argument("--seed", type=argparse_type(whole(0)), default=0,
                   help="seed of the injected faults")


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
        query_timeout_s=args.query_timeout,
        max_elements=args.max_elements,
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
        if config.profile != "4.3":  # ICAT 4.3 had no REST API
            print(f"REST: {catalogue.rest_url}", file=out)
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
        description="The default account comes from the environment (SV7_AUTH, SV7_USER, "
        "SV7_PASSWORD), sv7.toml [credentials] or a prompt at a terminal, never from the command "
        "line; --account adds role accounts for the checks. Without --target the built-in "
        "catalogue is started and used. Every option (also from SV7_<OPTION> and sv7.toml [run]) "
        "is checked before anything starts.",
        epilog="exit status: 0 ok, 1 error, 2 usage, 3 a --fail-on threshold failed, 4 target "
        "unreachable (DNS, refused, timeout), 5 TLS failed (a certificate not trusted: "
        "--ca-file or --insecure; or https:// to a plain-HTTP port: http://), 6 a service check "
        "failed or ended in an error (before 3 when both), 130/143/129 interrupted by "
        "SIGINT/SIGTERM/SIGHUP",
    )
    p.add_argument("--config", type=Path, help="sv7.toml to read (default ./sv7.toml if present)")
    for option in RUN_OPTIONS:
        if option.switch:
            p.add_argument(option.flag, dest=option.field, action="store_const", const=True,
                           help=option.help)
        else:
            p.add_argument(option.flag, dest=option.field, help=option.help)
    from igestbench.verify.options import OPTIONS

    # the service checks' own options (accounts, reference queries …), defined once over there
    checks = p.add_argument_group("service checks (part verify)")
    own = {o.flag for o in RUN_OPTIONS} | {"--flavour", "--debug", "--config"}
    for check in OPTIONS:
        if check.flags[0] not in own:
            checks.add_argument(*check.flags, **dict(check.kwargs))


def cmd_run(args: argparse.Namespace) -> int:
    from igestbench.config import load_run_config
    from igestbench.icat.credentials import Logins
    from igestbench.run.next_steps import end_of_run
    from igestbench.run.progress import Progress
    from igestbench.run.runner import Runner
    from igestbench.verify.options import options_from

    # the checks' own options first (files, parts), then the run's and the accounts: all
    # checked before the password prompt and before anything starts
    verify = options_from({**vars(args), "target": None}, Logins())
    config = load_run_config(
        {o.field: getattr(args, o.field) for o in RUN_OPTIONS},
        config_file=args.config,
        prompt=_interactive_prompt(),
        accounts=args.account,
        credentials_file=args.credentials,
    )
    verify = dataclasses.replace(verify, accounts=config.accounts)
    config = dataclasses.replace(config, verify=verify)
    outcome = Runner(config, Progress()).run()
    for line in outcome.summary:
        print(f"sv7 run: {line}", file=sys.stderr)
    if outcome.path is not None:
        print("\n".join(end_of_run(config, outcome.path, outcome.completed)))
    return outcome.exit_code


# --- sv7 cleanup --------------------------------------------------------------------------


def _add_cleanup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cleanup",
        help="finish the cleanup of runs that were stopped hard, from their journals",
        description="Finds the journals (*.journal.jsonl) in a directory such as reports/, or "
        "takes journal files, and deletes what they list at the catalogue each names - only "
        "what the server shows is still the run's (below its Facility); anything else is "
        "reported and left alone. A journal is removed once its cleanup is complete. "
        "Credentials as for sv7 run. Exit 0: all clean; 1: something refused or left.",
    )
    p.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="a journal file or a directory of them"
    )
    p.add_argument("--journal", type=Path, help="a journal file (same as giving it as PATH)")
    p.add_argument(
        "--target",
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
                prompt=_interactive_prompt(),
            )
            assert config.credentials is not None and config.target is not None
            logins[url] = (
                ClientConfig(config.target, ca_file=config.ca_file, insecure=config.insecure),
                config.credentials,
            )
        return logins[url]

    outcomes = list(clean_all(paths, args.target, client))
    for outcome in outcomes:
        for line in outcome.lines:
            print(f"sv7 cleanup: {line}", file=sys.stdout if outcome.complete else sys.stderr)
    if not outcomes:
        print(f"sv7 cleanup: no journal in {', '.join(map(str, paths))}: nothing to clean up")
    return EXIT_OK if all(o.complete for o in outcomes) else EXIT_ERROR


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from igestbench.verify import add_check_arguments

    p = sub.add_parser(
        "check",
        help="probe one catalogue for monitoring: Nagios exit code and one status line",
        description="Runs the connectivity, TLS, SOAP and session checks; exit 0 OK, "
        "1 WARNING, 2 CRITICAL, 3 UNKNOWN. Logs in with the default account (SV7_AUTH, "
        "SV7_USER, SV7_PASSWORD or sv7.toml [credentials]) and any --account ROLE=MECH/NAME "
        "(password from SV7_PASSWORD_<ROLE> or --credentials).",
    )
    add_check_arguments(p)


def cmd_check(args: argparse.Namespace) -> int:
    from igestbench.verify import cmd_check as check

    return check(args)


# --- sv7 merge and sv7 report ------------------------------------------------------------


def _output_file(path: Path) -> None:
    """A file to write must not be a directory (found before reading anything)."""
    if path.is_dir():
        raise UsageError(f"-o {path}: is a directory; name the file to write")


def _add_merge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "merge",
        help="merge result files into one campaign file (the newest run per site x target)",
        description="Unreadable files are reported with their reason and skipped (exit 1); "
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
    p.add_argument("--strict", action="store_true", help="an unreadable file is fatal")
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

    _output_file(args.output)
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
    if outcome.skipped and args.strict:
        raise Sv7Error(f"{len(outcome.skipped)} file(s) unreadable; nothing written (--strict)")
    dump_campaign(outcome.document, args.output)
    runs = len(outcome.document["runs"])
    print(
        f"campaign file: {args.output} ({runs} run{'' if runs == 1 else 's'}, "
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

    _output_file(args.output)
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
