"""The campaign file (``campaign.toml``): what a campaign expected, read by ``sv7 merge``.

Coverage and participation in the merged campaign count against it; a bad file is a
:class:`~igestbench.errors.UsageError` naming the file and the table at fault.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError
from igestbench.icat.endpoint import endpoint_of
from igestbench.options import NAMED_ONLY_ON_TARGET, PARTS, unknown
from igestbench.results.format import BUILT_IN_TARGET

#: The parts a campaign expects when campaign.toml names none: what ``sv7 run --target`` runs
#: unless told otherwise (the scale part runs against a target only when --parts names it, so
#: expecting it would count every site short of a part it was never asked to run).
DEFAULT_PARTS = tuple(p for p in PARTS if p not in NAMED_ONLY_ON_TARGET)


@dataclass(frozen=True)
class CampaignSite:
    name: str
    country: str = ""


@dataclass(frozen=True)
class CampaignTarget:
    """A catalogue of the campaign: its display name, its URL and the site that runs it."""

    name: str
    url: str
    operator: str | None = None

    def is_local_to(self, site: str) -> bool:
        """Whether ``site`` testing this catalogue is a local connection: the site runs it, or
        it is the built-in catalogue, which every site runs on its own machine."""
        return self.operator == site or self.name == BUILT_IN_TARGET


@dataclass(frozen=True)
class CampaignConfig:
    """What a campaign expected (``campaign.toml``): coverage and participation count against it.

    ::

        [campaign]
        name = "sv7-2026-11"
        title = "SV7 service verification, November 2026"   # optional
        parts = ["verify", "full-cycle"]                      # optional, default: all but scale

        [[site]]
        name = "ELETTRA"
        country = "IT"

        [[target]]
        name = "ESRF ICAT"
        url = "https://icat.esrf.fr/ICATService/ICAT"
        operator = "ESRF"                                     # optional, one of the sites
    """

    name: str
    sites: tuple[CampaignSite, ...]
    targets: tuple[CampaignTarget, ...]
    parts: tuple[str, ...] = DEFAULT_PARTS
    title: str = ""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise UsageError("campaign: the name must not be empty")
        for kind, names in (("site", [s.name for s in self.sites]),
                            ("target", [t.name for t in self.targets])):
            # sites match result files case-insensitively, so names may not differ by case only
            folded = [n.casefold() for n in names]
            twice = sorted({n for n in names if folded.count(n.casefold()) > 1})
            if twice:
                raise UsageError(f"campaign: {kind} {', '.join(twice)} listed more than once")
        bad = [p for p in self.parts if p not in PARTS]
        if bad:
            raise UsageError(f"campaign: {unknown('part', bad, PARTS)}")
        known = {s.name for s in self.sites}
        for target in self.targets:
            if target.operator is not None and target.operator not in known:
                raise UsageError(f"campaign: target {target.name}: operator {target.operator} "
                                 "is not one of the [[site]] names")


def _table_list(data: Mapping[str, Any], key: str, path: Path) -> list[Mapping[str, Any]]:
    items = data.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise UsageError(f"{path}: [[{key}]] must be an array of tables")
    return items


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = table.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise UsageError(f"{where}: {key} must be a non-empty string")
    return value


def load_campaign_config(path: Path) -> CampaignConfig:
    """The campaign that ``path`` (a campaign.toml) describes; UsageError naming what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the campaign ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    head = data.get("campaign", {})
    if not isinstance(head, dict):
        raise UsageError(f"{path}: [campaign] must be a table")
    parts = head.get("parts", list(DEFAULT_PARTS))
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise UsageError(f"{path}: [campaign] parts must be a list of part names")
    sites = tuple(
        CampaignSite(_text(t, "name", f"{path} [[site]] {i + 1}"),
                     _text(t, "country", f"{path} [[site]] {i + 1}", required=False))
        for i, t in enumerate(_table_list(data, "site", path))
    )
    targets = []
    for i, table in enumerate(_table_list(data, "target", path)):
        where = f"{path} [[target]] {i + 1}"
        operator = _text(table, "operator", where, required=False)
        url = _text(table, "url", where)
        try:
            endpoint_of(url)  # not an ICAT address, or one holding credentials
        except UsageError as exc:
            raise UsageError(f"{where} url: {exc}") from None
        targets.append(CampaignTarget(_text(table, "name", where), url, operator or None))
    try:
        return CampaignConfig(
            name=_text(head, "name", f"{path} [campaign]"),
            title=_text(head, "title", f"{path} [campaign]", required=False),
            parts=tuple(parts),
            sites=sites,
            targets=tuple(targets),
        )
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
