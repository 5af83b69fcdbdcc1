"""``sv7 serve``: the local ICAT catalogue in the foreground, its banner, Ctrl-C stops it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from igestbench.commands.common import EXIT_OK
from igestbench.options import argparse_type, number, whole


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        help="friendly name getAuthenticatorInfo gives a mechanism (repeatable; default none, "
        "as an ICAT without authn.<mech>.friendly)",
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
    d = p.add_argument_group("ICAT Data Service (/ids/, as ids.server 2.1.1)")
    d.add_argument(
        "--ids-storage",
        metavar="DIR",
        help="folder of the IDS's files, kept across restarts (default: a temporary folder "
        "removed when the server stops)",
    )
    d.add_argument(
        "--ids-single-level",
        action="store_true",
        help="a single-level IDS: archive, restore and write answer NotImplemented (default: "
        "two-level with an emulated archive, every file always ONLINE)",
    )
    d.add_argument("--no-ids", action="store_true", help="serve no IDS")
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
        ids=not args.no_ids,
        ids_storage=args.ids_storage,
        ids_two_level=not args.ids_single_level,
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
        if catalogue.ids is not None:
            where = "a temporary folder" if catalogue.ids.temporary else str(catalogue.ids.root)
            levels = "two-level, archive emulated" if config.ids_two_level else "single-level"
            print(f"IDS: {catalogue.ids_url} ({levels}; files in {where})", file=out)
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
