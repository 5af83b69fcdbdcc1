"""The run tag: the one name under which everything a run creates lives, and its strict form.

A run tag is ``sv7-<site>-<UTC stamp>-<hex>`` (``sv7-elettra-20261126T101500-9f3a``): the site in
lower-case letters, digits and ``-``, the second the run began (the client's clock, UTC) and a
random token. Every Facility the run creates is named after it — the tag itself, or the tag and
a suffix (``…-9f3a-full-cycle-zeep-c1-w0``) — and so is every object of the run that has no way up
to a Facility (a Rule names its Facility in its query).

Cleanup trusts no name it did not validate: a journal's tag must have exactly this form, or the
journal is refused before any request (``%``, ``sv7-``, ``PART`` or an empty tag would match
other people's names). The LIKE patterns built from a tag escape ``%`` and ``_`` all the same
(:func:`like_prefix`), so that no pattern ever depends on the validation alone.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass

from igestbench.errors import Sv7Error
from igestbench.icat.query import Condition

_SITE = re.compile(r"[^A-Za-z0-9-]+")
#: What :meth:`RunTag.name` writes, and nothing else.
TAG_PATTERN = re.compile(
    r"sv7-(?P<site>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<stamp>\d{8}T\d{6})-(?P<token>[0-9a-f]{4,32})"
)
#: A suffix of a run's Facility name after the tag (workload, flavour, level, worker …).
_SUFFIX = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
_STAMP = "%Y%m%dT%H%M%S"
#: The escape character of the LIKE patterns built here. Not a backslash: MariaDB and MySQL
#: (ICAT's usual databases) read ``'\'`` in SQL text as an escaped quote, and ICAT passes the
#: JPQL literal through to the database.
LIKE_ESCAPE = "!"


class InvalidRunTag(Sv7Error):
    """A run tag (or a Facility name of a run) that is not in the form sv7 writes."""


@dataclass(frozen=True)
class RunTag:
    """The name under which one run's objects live (the name of its own Facility)."""

    site: str
    run_id: str

    @classmethod
    def new(cls, site: str) -> RunTag:
        stamp = dt.datetime.now(dt.UTC).strftime(_STAMP)
        return cls(site, f"{stamp}-{secrets.token_hex(2)}")

    @property
    def name(self) -> str:
        site = _SITE.sub("-", self.site).strip("-").lower() or "site"
        return f"sv7-{site}-{self.run_id}"

    @classmethod
    def parse(cls, text: object) -> RunTag:
        """The tag ``text`` names; :class:`InvalidRunTag` unless it is exactly sv7's form."""
        if not isinstance(text, str) or not TAG_PATTERN.fullmatch(text):
            shown = repr(text)[:80]
            raise InvalidRunTag(
                f"{shown} is not a run tag sv7 writes (sv7-<site>-<YYYYMMDDTHHMMSS>-<hex>); "
                "nothing deleted"
            )
        match = TAG_PATTERN.fullmatch(text)
        assert match is not None
        return cls(match["site"], f"{match['stamp']}-{match['token']}")

    @classmethod
    def of_facility(cls, name: str) -> RunTag:
        """The tag of a run's Facility name (the tag, or the tag and a suffix)."""
        match = TAG_PATTERN.match(name)
        if match is not None:
            rest = name[match.end() :]
            if not rest or (rest.startswith("-") and _SUFFIX.fullmatch(rest[1:])):
                return cls.parse(match.group(0))
        raise InvalidRunTag(f"{name[:80]!r} is not the name of a run's Facility; nothing deleted")

    @property
    def started(self) -> dt.datetime:
        """When the run began by the clock of the machine that ran it (UTC, to the second)."""
        stamp = self.run_id.split("-", 1)[0]
        return dt.datetime.strptime(stamp, _STAMP).replace(tzinfo=dt.UTC)

    @property
    def scale_facility(self) -> str:
        """The name of the scale part's Facility: its tree registers Datafiles (with a location)
        whose bytes were never stored anywhere."""
        return f"{self.name}-scale"

    def owns_name(self, name: str) -> bool:
        """Whether ``name`` is one of this run's Facility names (the tag, or tag-suffix)."""
        tag = self.name
        if name == tag:
            return True
        return name.startswith(tag + "-") and bool(_SUFFIX.fullmatch(name[len(tag) + 1 :]))


def escape_like(text: str) -> str:
    """``text`` with LIKE's wildcards (and the escape character) escaped by :data:`LIKE_ESCAPE`."""
    return "".join(LIKE_ESCAPE + c if c in f"%_{LIKE_ESCAPE}" else c for c in text)


def like_prefix(prefix: str) -> Condition:
    """``LIKE '<prefix>%' ESCAPE '!'`` with ``prefix`` escaped: names that begin with it."""
    return Condition("LIKE", escape_like(prefix) + "%", escape=LIKE_ESCAPE)


def like_containing(text: str) -> Condition:
    """``LIKE '%<text>%' ESCAPE '!'``, ``text`` escaped: values that contain it."""
    return Condition("LIKE", "%" + escape_like(text) + "%", escape=LIKE_ESCAPE)
