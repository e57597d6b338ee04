"""``paused_gc()``: a context with Python's cyclic garbage collector off, restored after.

Used where vlpc allocates hundreds of thousands of small objects at once (a compilation's
IR in :mod:`vlpc.compiler`, the emulator's prepared instructions in
``runtime/emulator/core.py``): the collections they would trigger scan the whole heap
over and over (about 15 % of a compile, half of the emulator's instruction preparation
with the compiler's IR alive in the same process).  Reference counting still frees
everything as usual; cycles are collected once the collector is back on.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused_gc():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
