"""The ``sv7`` command: a parser, one ``cmd_<name>()`` per subcommand, and exit codes."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from igestbench import __version__
from igestbench.errors import Sv7Error, UsageError

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
    from igestbench.mock.auth import DEFAULT_ACCOUNTS, load_accounts, parse_account
    from igestbench.mock.catalogue import LocalCatalogue

    accounts = [parse_account(spec) for spec in args.user]
    if args.users:
        accounts += load_accounts(args.users)
    config = ServeConfig(
        host=args.host,
        port=args.port,
        db=args.db,
        profile=args.profile,
        accounts=tuple(accounts) or DEFAULT_ACCOUNTS,
        tls=args.tls,
        lifetime_minutes=args.session_minutes,
        max_entities=args.max_entities,
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
        if config.knobs.active:
            print(f"fault injection: {config.knobs}", file=out)
        print("Ctrl-C stops it.", file=out, flush=True)

    catalogue.serve_forever(ready=banner)
    return EXIT_OK


COMMANDS: dict[
    str,
    tuple[
        Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
        Callable[[argparse.Namespace], int],
    ],
] = {
    "serve": (_add_serve, cmd_serve),
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
