"""A campaign file's seal: proof that its bytes are the ones ``sv7 merge`` wrote after checking
every run, with the checks of this very code.

``sv7 merge`` checks each result file (:mod:`.loader`, :mod:`.contents`) and embeds what passed;
``sv7 report`` used to run the same checks again on every embedded document — half of a
30 x 30 campaign's load — because a campaign file may come from an older igestbench or have
been edited since. The seal tells those cases apart without repeating the work:

    {"checked":"<sha256>", ...the rest of the document...}

is written first in the file, the SHA-256 of the rest of the file's text (from its opening
brace, with the seal taken out) and of the source of the modules that decide what passes
(:data:`CHECKING_MODULES`). The loader trusts the embedded runs only when the seal matches
both: a file edited by hand or by a tool, damaged on disk, written by an older merge (no seal)
or read by an igestbench whose checks differ in any way (another seal) has every run checked
again, as before. The seal protects against accidents, not against someone forging a file: a
report never runs code from the file, and a forged one can only show wrong numbers, which an
edited value could as well.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache

#: The modules whose code decides whether a result document passes (merge's checks and the
#: campaign loader's): a change to any of them breaks every seal made before it.
CHECKING_MODULES = (
    "igestbench.results.format", "igestbench.results.loader", "igestbench.results.contents",
    "igestbench.results.histograms", "igestbench.results.campaign", "igestbench.results.seal",
)
_HEAD = '{"checked":"'
_DIGEST_LENGTH = 64


@cache
def checks_digest() -> bytes | None:
    """A digest of the checking modules' source; None when one cannot be read (a build
    without sources): then nothing is sealed and every load checks everything."""
    digest = hashlib.sha256()
    for name in CHECKING_MODULES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(".py"):
            return None
        try:
            with open(origin, "rb") as source:
                digest.update(source.read())
        except OSError:
            return None
    return digest.digest()


def _seal(body: str) -> str | None:
    code = checks_digest()
    if code is None:
        return None
    return hashlib.sha256(code + body.encode("utf-8")).hexdigest()


def with_seal(body: str) -> str:
    """``body`` (a JSON object's text, as merge writes it) with its seal as its first key; as
    it is when it cannot be sealed."""
    seal = _seal(body)
    if seal is None or not body.startswith("{") or body.startswith("{}"):
        return body
    return f'{_HEAD}{seal}",{body[1:]}'


def is_sealed(text: str) -> bool:
    """Whether ``text`` (a whole campaign file) carries a seal that matches its content and
    this igestbench's checks."""
    if not text.startswith(_HEAD):
        return False
    end = len(_HEAD) + _DIGEST_LENGTH
    if text[end:end + 2] != '",':
        return False
    seal = _seal("{" + text[end + 2:])
    return seal is not None and seal == text[len(_HEAD):end]
