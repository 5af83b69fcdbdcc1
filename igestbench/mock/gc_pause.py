"""Python's cyclic garbage collector held off while one request builds many objects at once.

Decoding and storing a createMany of 10,000 Datafiles makes some 100,000 container objects
(Beans, their value dicts, lists) that live until the request ends, and the collector, run
every 700 new ones, walks them again and again (a fifth of the decoding's time). They form no
cycles: reference counting frees them when the request ends. So such a request holds the
collector off while it runs; it runs again on the next allocations after the last holder
leaves. The collector is process-wide: holders are counted, and the state it had before the
first one is restored after the last.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """No cyclic garbage collection while the block runs (in this thread or any other)."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
