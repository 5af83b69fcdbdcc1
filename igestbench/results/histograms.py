"""The HdrHistograms in result files, decoded with every way they can be damaged named.

A result file carries latencies as HdrHistogram's compressed base64 form (V2): per benchmark
operation (``benchmarks[].ops.*.histogram``) and, from ``sv7 swarm``, per sweep step and per
worker. hdrh's own ``decode`` trusts its input: a flipped byte surfaces as ``zlib.error``,
``binascii.Error``, ``HdrLengthException``, ``ValueError`` … from deep inside it, and a header
that claims absurd settings makes it allocate accordingly. :func:`decode_histogram` checks the
envelope first (base64, both headers, the inflated size, the settings) and turns every failure
into one :class:`HistogramError` whose reason a person can read, so that ``sv7 merge`` can leave
the entry out with that reason and ``sv7 report`` never meets a histogram it cannot read.
"""

from __future__ import annotations

import base64
import binascii
import ctypes
import functools
import zlib
from typing import Any

from hdrh.codec import (
    V2_COMPRESSION_COOKIE_BASE,
    V2_ENCODING_COOKIE_BASE,
    ExternalHeader,
    HdrCookieException,
    HdrHistogramSettingsException,
    HdrLengthException,
    PayloadHeader,
    get_cookie_base,
)
from hdrh.histogram import HdrHistogram

#: The longest encoded histogram read. Ours are a few hundred characters (the counts of a
#: 1 µs .. 60 s histogram compress well); a swarm step's merged one stays far below this.
MAX_ENCODED_CHARS = 1 << 20
#: The largest inflated payload: the counts of a histogram with 5 significant digits over the
#: whole 64-bit range, as varints, are below this; more is a "zip bomb" inside a histogram.
MAX_PAYLOAD_BYTES = 32 << 20
#: The widest value range accepted (highest / lowest trackable value): 2**53 keeps every
#: value exact as a float and bounds the counts array hdrh allocates.
MAX_RANGE = 1 << 53

_EXTERNAL = ctypes.sizeof(ExternalHeader)
_PAYLOAD = ctypes.sizeof(PayloadHeader)


class HistogramError(ValueError):
    """An encoded histogram that cannot be read; ``str()`` says why, in a few words."""


def histogram_problem(text: Any, expected_count: int | None = None) -> str | None:
    """What is wrong with the encoded histogram ``text`` (None: nothing), remembered for the
    strings seen: a campaign's files are checked by merge and again by the report."""
    if not isinstance(text, str):
        return f"is {type(text).__name__}, not an encoded HdrHistogram"
    return _problem(text, expected_count)


@functools.lru_cache(maxsize=65536)
def _problem(text: str, expected_count: int | None) -> str | None:
    try:
        decode_histogram(text, expected_count)
    except HistogramError as exc:
        return str(exc)
    return None


def decode_histogram(text: Any, expected_count: int | None = None) -> HdrHistogram:
    """The histogram ``text`` encodes; :class:`HistogramError` saying what is wrong with it.

    ``expected_count``: the number of values it must hold (an operation's successful calls),
    so that a histogram that decodes but belongs to other figures is refused too.
    """
    if not isinstance(text, str):
        raise HistogramError(f"is {type(text).__name__}, not an encoded HdrHistogram")
    if len(text) > MAX_ENCODED_CHARS:
        raise HistogramError(f"is {len(text):,} characters long, more than any HdrHistogram "
                             "this tool writes")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise HistogramError("is not base64 text") from None
    if len(raw) < _EXTERNAL:
        raise HistogramError("is too short to be an HdrHistogram")
    header = ExternalHeader.from_buffer_copy(raw)
    if get_cookie_base(header.cookie) != V2_COMPRESSION_COOKIE_BASE:
        raise HistogramError("is not an HdrHistogram (no V2 compression cookie)")
    if header.length != len(raw) - _EXTERNAL:
        raise HistogramError(f"is cut or padded (its header says {header.length} bytes, "
                             f"{len(raw) - _EXTERNAL} follow)")
    payload = _inflate(raw[_EXTERNAL:])
    if len(payload) < _PAYLOAD:
        raise HistogramError("holds a payload too short for its header")
    settings = PayloadHeader.from_buffer_copy(payload)
    if get_cookie_base(settings.cookie) != V2_ENCODING_COOKIE_BASE:
        raise HistogramError("holds a payload without the V2 encoding cookie")
    if settings.payload_len != len(payload) - _PAYLOAD:
        raise HistogramError(f"holds {len(payload) - _PAYLOAD} bytes of counts where its "
                             f"header says {settings.payload_len}")
    lowest, highest = settings.lowest_trackable_value, settings.highest_trackable_value
    if not 1 <= settings.significant_figures <= 5 or lowest < 1 or highest < 2 * lowest \
            or highest // lowest > MAX_RANGE:
        raise HistogramError(f"has impossible settings (values {lowest} to {highest}, "
                             f"{settings.significant_figures} significant digits)")
    try:
        histogram = HdrHistogram.decode(text.encode("ascii"))
    except (HdrCookieException, HdrLengthException, HdrHistogramSettingsException, ValueError,
            TypeError, OverflowError, RuntimeError, AssertionError, zlib.error) as exc:
        raise HistogramError(f"cannot be decoded ({type(exc).__name__}: {exc})") from None
    count = int(histogram.get_total_count())
    if expected_count is not None and count != expected_count:
        raise HistogramError(f"holds {count} values where the figures beside it count "
                             f"{expected_count}")
    return histogram


def _inflate(compressed: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(compressed, MAX_PAYLOAD_BYTES)
    except zlib.error as exc:
        raise HistogramError(f"is damaged (its compressed counts do not inflate: {exc})") \
            from None
    if inflater.unconsumed_tail:
        raise HistogramError(f"inflates to more than {MAX_PAYLOAD_BYTES >> 20} MiB")
    if not inflater.eof:
        raise HistogramError("is cut short (its compressed counts end early)")
    return data
