"""CRC-32, ids.server's checksum of a file (``java.util.zip.CRC32``: the zlib polynomial).

ISA-L's (python-isal) where it is installed — it is a dependency; its SIMD code computes the
same value ten times as fast as zlib's here (12 GB/s against 1.2 GB/s on the 2-core dev
machine), which decides how fast the local IDS can take a file — else zlib's.
"""

from __future__ import annotations

from collections.abc import Callable

crc32: Callable[[bytes | bytearray | memoryview, int], int]
try:
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal has wheels for the platforms sv7 runs on
    from zlib import crc32

__all__ = ["crc32"]
