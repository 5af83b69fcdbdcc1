"""The options of ``sv7 run``, each defined once: flag, RunConfig field, parser and help.

The CLI builds its parser from this table, and :func:`igestbench.config.load_run_config` parses
every value — from the command line, an ``SV7_<OPTION>`` variable or the ``[run]`` table of
sv7.toml — with the same function, before any work starts. A bad value is one
:class:`~igestbench.errors.UsageError` line naming where it came from (``--concurrency``,
``SV7_CONCURRENCY``, ``sv7.toml [run] concurrency``), never Python's own exception text.
Adding an option is one entry here and one field in :class:`igestbench.config.RunConfig`.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError

PARTS = ("verify", "full-cycle", "single-query", "burst", "multi-query", "sweep", "scale", "ids")
#: Parts that run against a --target only when --parts names them: scale builds big trees, ids
#: writes into the facility's storage.
NAMED_ONLY_ON_TARGET = ("scale", "ids")
#: Catalogue sizes (Datafiles) of the scale part; above the limit a --target needs --yes.
SCALE_SIZES = (1_000, 10_000, 100_000)
SCALE_SIZES_WITHOUT_YES = 100_000
#: The largest file --file-sizes may ask for (the IDS part writes one of each size).
MAX_FILE_SIZE = 16 * 1024**3
FLAVOUR_NAMES = ("zeep", "python-icat", "lean", "rest")
#: ICAT's two interfaces over one entity manager: SOAP (/ICATService/ICAT) and REST (/icat/...).
INTERFACES = ("soap", "rest")
#: The operations a load sweep can mix (igestbench.run.load_sweep builds one function each).
MIX_OPERATIONS = ("search", "concise", "get", "create")
MAX_CONCURRENCY = 256

#: What a run measures unless told otherwise: ``quick`` tours every part in about a minute (the
#: default), ``full`` is the campaign's measurement. A profile only sets defaults: any option
#: given — on the command line, as SV7_<OPTION> or in sv7.toml [run] — wins over it.
PROFILES = ("quick", "full")
DEFAULT_PROFILE = "quick"
#: The values each profile sets, by RunConfig field; ``full`` is RunConfig's own defaults.
#: quick: one flavour, two levels, a quarter of the counts or less and a sweep of three
#: one-second steps to 40/s — each part runs and is written like a full run's, in under a
#: minute on a busy 2-core machine (README, Quick start).
PROFILE_SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "quick": {"flavours": ("zeep",), "concurrency": (1, 2), "cycles": 3, "files": 50,
              "queries": 50, "batch_size": 10, "max_rate": 40.0, "duration": 1.0,
              "warmup": 0.25, "scale_sizes": (300, 1_000), "file_sizes": (1024, 1024**2)},
    "full": {},
}


class OptionError(ValueError):
    """What is wrong with one value; the caller adds where the value came from."""


def argparse_type(parse: Callable[[object], object]) -> Callable[[str], object]:
    """An argparse ``type`` from one of these parsers: its OptionError becomes argparse's
    one-line error about the option."""

    def convert(value: str) -> object:
        try:
            return parse(value)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


Parse = Callable[[object], Any]


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else str(value)


def whole(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    """A whole number in [minimum, maximum]: from text, or an int of a TOML file."""
    wanted = (
        f"a whole number from {minimum} to {maximum}"
        if maximum is not None
        else f"a whole number of at least {minimum}"
    )

    def parse(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise OptionError(f"expected {wanted}, not {value!r}")
        if isinstance(value, str) and not re.fullmatch(r"[+-]?\d+", value.strip()):
            raise OptionError(f"expected {wanted}, not {value!r}")
        number = int(value)
        if number < minimum or (maximum is not None and number > maximum):
            raise OptionError(f"expected {wanted}, not {number}")
        return number

    return parse


def number(minimum: float, *, above: bool) -> Callable[[object], float]:
    """A finite number > minimum (``above``) or >= minimum."""
    wanted = f"a number {'greater than' if above else 'of at least'} {minimum:g}"

    def parse(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise OptionError(f"expected {wanted}, not {value!r}")
        try:
            result = float(value)
        except ValueError:
            raise OptionError(f"expected {wanted}, not {value!r}") from None
        if not math.isfinite(result) or result < minimum or (above and result == minimum):
            raise OptionError(f"expected {wanted}, not {_text(value)}")
        return result

    return parse


#: How sv7 names the unit of a demanded or answered rate (results/sweeps.py: RATE_UNIT).
RATE_WORDS = "requests per second"


def rate(value: object) -> float:
    """A demanded rate in requests per second: a finite number > 0; its errors say the unit."""
    try:
        return number(0, above=True)(value)
    except OptionError as exc:
        raise OptionError(f"expected a rate in {RATE_WORDS} (requests/s), a number greater "
                          f"than 0, not {_text(value)}") from exc


def _items(value: object, separator: str = ",") -> list[str]:
    """The items of a list option: ``a,b`` text, or a TOML array."""
    if isinstance(value, str):
        raw: Iterable[object] = value.split(separator)
    elif isinstance(value, list | tuple):
        raw = value
    else:
        raise OptionError(f"expected a list, not {value!r}")
    return [_text(item) for item in raw if _text(item)]


def levels(value: object) -> tuple[int, ...]:
    level = whole(1, MAX_CONCURRENCY)
    items = _items(value)
    if not items:
        raise OptionError(f"expected levels from 1 to {MAX_CONCURRENCY}, e.g. 1,2,4")
    try:
        return tuple(level(item) for item in items)
    except OptionError:
        raise OptionError(
            f"expected levels from 1 to {MAX_CONCURRENCY} separated by commas (e.g. 1,2,4), "
            f"not {_text(value)!r}"
        ) from None


def sizes(value: object) -> tuple[int, ...]:
    """Catalogue sizes in Datafiles, rising: ``1000,10000`` (``10_000`` and ``1e5`` read too)."""
    wanted = "sizes in Datafiles, rising, separated by commas (e.g. 1000,10000,100000)"
    found: list[int] = []
    for item in _items(value):
        text = item.replace("_", "")
        try:
            size = float(text) if re.fullmatch(r"\d+(\.\d*)?[eE]\d+", text) else int(text)
        except ValueError:
            raise OptionError(f"expected {wanted}, not {_text(value)!r}") from None
        if size != int(size) or not 1 <= size <= 100_000_000:
            raise OptionError(f"expected {wanted} from 1 to 100000000, not {item}")
        found.append(int(size))
    if not found:
        raise OptionError(f"expected {wanted}")
    if any(b <= a for a, b in itertools.pairwise(found)):
        raise OptionError(f"expected {wanted}: each size on top of the last, not {_text(value)!r}")
    return tuple(found)


_SIZE = re.compile(r"([0-9]+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3,
               "kb": 1000, "mb": 1000**2, "gb": 1000**3}  # fmt: skip


def file_sizes(value: object) -> tuple[int, ...]:
    """``1KiB,1MiB,100MiB`` (or bytes; KB/MB/GB are powers of 1000) → sizes in bytes."""
    items = _items(value)
    sizes = []
    for item in items:
        found = _SIZE.fullmatch(str(item).strip())
        size = int(found.group(1)) * _SIZE_UNITS[(found.group(2) or "b").lower()] if found else 0
        if not found or not 0 < size <= MAX_FILE_SIZE:
            raise OptionError(
                "expected file sizes separated by commas, e.g. 1KiB,1MiB,100MiB (bytes, or with "
                f"B, KiB, MiB, GiB, KB, MB, GB; at most 16 GiB), not {_text(value)!r}"
            )
        sizes.append(size)
    if not sizes:
        raise OptionError("expected file sizes, e.g. 1KiB,1MiB,100MiB")
    return tuple(dict.fromkeys(sizes))


def unknown(what: str, bad: Sequence[str], choices: Sequence[str]) -> str:
    """``unknown part 'scal' (did you mean 'scale'?); choose from verify, …``: a value that is
    none of ``choices``, read as a sentence, with the likely one where a typo is plain."""

    def named(word: str) -> str:
        close = difflib.get_close_matches(word, choices, n=1)
        return f"{word!r} (did you mean {close[0]!r}?)" if close else repr(word)

    plural = "s" if len(bad) > 1 else ""
    return f"unknown {what}{plural} {', '.join(map(named, bad))}; choose from {', '.join(choices)}"


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``maxrate (did you mean max-rate?)``, or just the word when nothing is close: for a list
    of choices too long to print (the keys of sv7.toml's [run]). Only a near miss is offered:
    of thirty keys some one is always a little alike ('colour' and 'flavour')."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    return f"{word} (did you mean {close[0]}?)" if close else word


def names(choices: tuple[str, ...], what: str) -> Parse:
    """Some of ``choices`` (each a ``what``), separated by commas."""

    def parse(value: object) -> tuple[str, ...]:
        items = _items(value)
        bad = [i for i in items if i not in choices]
        if bad:
            raise OptionError(unknown(what, bad, choices))
        if not items:
            raise OptionError(f"no {what} given; choose from {', '.join(choices)}")
        return tuple(items)

    return parse


def choice(choices: tuple[str, ...], what: str) -> Callable[[object], str]:
    """One of ``choices`` (a ``what``)."""

    def parse(value: object) -> str:
        word = _text(value)
        if word not in choices:
            raise OptionError(unknown(what, [word], choices))
        return word

    return parse


def mix(value: object) -> dict[str, int]:
    """``search=21,get=8,create=1`` (or a TOML table) → {"search": 21, "get": 8, "create": 1}."""
    weight = whole(0)
    pairs: list[tuple[str, object]]
    if isinstance(value, Mapping):
        pairs = [(str(k), v) for k, v in value.items()]
    else:
        pairs = []
        for part in _items(value):
            name, sep, text = part.partition("=")
            pairs.append((name.strip(), text if sep else "1"))
    result: dict[str, int] = {}
    for name, raw in pairs:
        if name not in MIX_OPERATIONS:
            raise OptionError(f"{unknown('operation', [name], MIX_OPERATIONS)} "
                              "(NAME=WEIGHT, e.g. search=21,get=8,create=1)")
        try:
            result[name] = weight(raw)
        except OptionError:
            raise OptionError(f"{name}={_text(raw)}: a weight is a whole number >= 0") from None
    if not any(result.values()):
        raise OptionError("needs at least one operation with a positive weight, e.g. search=1")
    return result


def thresholds(value: object) -> tuple[str, ...]:
    from igestbench.run.thresholds import parse_threshold

    items = tuple(_items(value, ";"))
    for item in items:
        try:
            parse_threshold(item)
        except UsageError as exc:
            raise OptionError(str(exc).removeprefix("--fail-on ")) from None
    return items


def text(value: object) -> str:
    if isinstance(value, Path):  # a path argparse already made one of (sv7 cleanup --ca-file)
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise OptionError(f"expected a non-empty text, not {value!r}")
    return value.strip()


def target(value: object) -> str:
    from igestbench.icat.endpoint import endpoint_of

    url = text(value)
    try:
        endpoint_of(url)
    except UsageError as exc:
        raise OptionError(str(exc)) from None
    return url


def directory(value: object) -> Path:
    path = Path(text(value)).expanduser()
    if path.exists() and not path.is_dir():
        raise OptionError(f"{path} exists and is not a directory")
    return path


def existing_file(value: object) -> Path:
    path = Path(text(value)).expanduser()
    if not path.is_file():
        raise OptionError(f"{path}: no such file")
    return path


def boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    word = _text(value).lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise OptionError(f"expected true or false, not {value!r}")


@dataclass(frozen=True)
class RunOption:
    flag: str
    field: str
    parse: Parse
    help: str
    #: A switch (no value on the command line; true/false in the environment or sv7.toml).
    switch: bool = False

    @property
    def variable(self) -> str:
        """Its environment variable: ``--max-rate`` → ``SV7_MAX_RATE``."""
        return "SV7_" + self.flag.lstrip("-").replace("-", "_").upper()

    def convert(self, value: object, source: str) -> Any:
        """``value`` parsed, or a UsageError saying ``source: what is wrong``."""
        try:
            return self.parse(value)
        except OptionError as exc:
            raise UsageError(f"{source}: {exc}") from None


#: Each option of sv7 run, defined once.
RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("--profile", "profile", choice(PROFILES, "profile"),
              "quick: every part in about a minute (the default); full: the campaign's "
              "measurement. Options given win over the profile's values"),
    RunOption("--target", "target", target,
              "catalogue URL or HOST[:PORT] (default: the built-in one)"),
    RunOption("--site", "site", text,
              "name of the site running the suite (default: local on the built-in catalogue, "
              "this machine's short host name with --target)"),
    RunOption("--flavour", "flavours", names(FLAVOUR_NAMES, "flavour"),
              "client flavours: zeep, python-icat, lean over SOAP; rest over REST "
              "(quick: zeep; full: zeep,python-icat)"),
    RunOption("--interface", "interfaces", names(INTERFACES, "interface"),
              "interfaces to measure: soap, rest (default: what the target serves; "
              "SOAP with the --flavour clients, REST with the rest client)"),
    RunOption("--parts", "parts", names(PARTS, "part"),
              "verify,full-cycle,single-query,burst,multi-query,sweep,scale,ids (default: all; "
              "with --target all but scale and ids, which build big trees and write into the "
              "facility's storage)"),
    RunOption("--concurrency", "concurrency", levels,
              "parallel clients per level, e.g. 1,2,4,8 (default 1,2)"),
    RunOption("--cycles", "cycles", whole(1),
              "NeXus files each client ingests in the full cycle (quick 3, full 10)"),
    RunOption("--files", "files", whole(1),
              "Datafiles per client in burst and multi-query (quick 50, full 200)"),
    RunOption("--queries", "queries", whole(1),
              "single-result queries per client (quick 50, full 200)"),
    RunOption("--batch-size", "batch_size", whole(1),
              "createMany batch size (quick 10: five calls, so that createMany has warm calls "
              "to measure; full 100)"),
    RunOption("--page-size", "page_size", whole(1),
              "LIMIT page size of the paged query (default 100)"),
    RunOption("--payload-bytes", "payload_bytes", whole(0),
              "data payload in each NeXus file (default 0)"),
    RunOption("--file-sizes", "file_sizes", file_sizes,
              "sizes of the files the ids part uploads, --cycles of each per client "
              "(quick 1KiB,1MiB; full 1KiB,1MiB,100MiB)"),
    RunOption("--max-rate", "max_rate", rate,
              f"highest demanded rate of the load sweep, in {RATE_WORDS} (requests/s; "
              "quick 40, full 200)"),
    RunOption("--duration", "duration", number(0, above=True),
              "seconds per sweep step (quick 1, full 3)"),
    RunOption("--slo-ms", "slo_ms", number(0, above=True),
              "latency objective of the sustained rate (default 50)"),
    RunOption("--repeat", "repeat", whole(1), "repetitions of each sweep step (default 1)"),
    RunOption("--warmup", "warmup", number(0, above=False),
              "seconds of warm-up before each sweep step (quick 0.25, full 0.5)"),
    RunOption("--calls-per-connection", "calls_per_connection", whole(0),
              "0: one persistent connection per client; N: reconnect after every N calls"),
    RunOption("--mix", "mix", mix,
              f"operation mix of the sweep ({', '.join(MIX_OPERATIONS)}), "
              "e.g. search=21,get=8,create=1"),
    RunOption("--scale-sizes", "scale_sizes", sizes,
              "Datafiles in the scale part's tree at each size, rising (quick 300,1000; "
              "full 1000,10000,100000; above 100000 a --target needs --yes)"),
    RunOption("--yes", "yes", boolean,
              "agree to what needs agreeing to: --scale-sizes above 100000 on a --target",
              switch=True),
    RunOption("--fail-on", "fail_on", thresholds,
              "thresholds, ';'-separated, e.g. 'single-query.p99<50ms;sweep.sustained>=100/s' "
              "(the sweep's sustained rate, in requests/s)"),
    RunOption("--outage-wait", "outage_wait", number(0, above=False),
              "seconds to wait for a silent target (default 120)"),
    RunOption("--out", "out", directory, "directory of the result file (default reports/)"),
    RunOption("--ca-file", "ca_file", existing_file,
              "PEM file of the CA(s) to trust for the target"),
    RunOption("--timeout", "timeout", number(0, above=True),
              "the longest one call to the target may take, from connecting to the last byte of "
              "the answer, in seconds (default 30)"),
    RunOption("--insecure", "insecure", boolean,
              "do not verify the target's certificate (said once on stderr and in the file)",
              switch=True),
    RunOption("--gzip", "gzip", boolean, "write the result file gzip-compressed", switch=True),
)  # fmt: skip

BY_FIELD: Mapping[str, RunOption] = {o.field: o for o in RUN_OPTIONS}

#: sv7 check's whole probe ends within this many seconds unless told otherwise: Nagios gives a
#: service check 60 s (service_check_timeout), and Python's start and the logouts after the
#: deadline need some of them.
DEFAULT_CHECK_DEADLINE = 40.0
#: sv7 check's own options (the verification options it shares with sv7 run are in
#: igestbench/verify/options.py): from the command line, SV7_<OPTION>, the [check] table of
#: sv7.toml, then defaults (igestbench.config.CheckConfig).
CHECK_OPTIONS: tuple[RunOption, ...] = (
    RunOption("--deadline", "deadline", number(0, above=True),
              "the longest the whole probe may take, in seconds (default 40, under the 60 s "
              "Nagios gives a service check): then no check starts, a call in flight is ended, "
              "what was opened is logged out, and the line is CRITICAL saying what was checked"),
    RunOption("--warning-ms", "warning_ms", number(0, above=True),
              "a call slower than this many milliseconds (rtt, wsdl, login, rest_login, "
              "ids_ping in the perfdata) makes the probe WARNING (default: none)"),
    RunOption("--critical-ms", "critical_ms", number(0, above=True),
              "a call slower than this many milliseconds makes the probe CRITICAL (default: "
              "none)"),
)  # fmt: skip


def file_key(key: str, known: Sequence[RunOption] = RUN_OPTIONS) -> RunOption | None:
    """The option a key of sv7.toml's [run] table (or another table of ``known`` options)
    means: its field or flag name."""
    wanted = key.replace("-", "_")
    return next(
        (o for o in known if wanted in (o.field, o.flag.lstrip("-").replace("-", "_"))),
        None,
    )
