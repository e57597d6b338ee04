"""The emulator's device memory."""

import struct

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import OutOfBoundsAccess
from vlpc.runtime.emulator.memory import BASE, Memory


def test_alloc_write_read_free_and_guard_gaps():
    m = Memory()
    a = m.alloc(100, tag="a")
    b = m.alloc(4096, align=4096, tag="b")
    assert a >= BASE and b % 4096 == 0 and b >= a + 100 + 1
    m.write(a, np.arange(25, dtype=np.uint32))
    np.testing.assert_array_equal(m.read(a, 100).view(np.uint32), np.arange(25))
    with pytest.raises(OutOfBoundsAccess):
        m.read(a + 96, 8)            # crosses the end of a
    with pytest.raises(OutOfBoundsAccess):
        m.load(np.array([a + 100], np.uint64), 4)   # first byte after a: guard gap
    m.free(a)
    with pytest.raises(OutOfBoundsAccess) as ei:
        m.read(a, 4)
    assert "b" in str(ei.value) or "allocation" in str(ei.value)
    assert [x.tag for x in m.allocations()] == ["b"]
    c = m.alloc(50)
    assert not m.read(c, 50).any()  # zero-filled


def test_vector_load_store_atomic():
    m = Memory()
    a = m.alloc(1024)
    addrs = (a + 16 * np.arange(8)).astype(np.uint64)
    vals = np.arange(32, dtype=np.uint32).reshape(8, 4)
    m.store(addrs, vals)
    np.testing.assert_array_equal(m.load(addrs, 16), vals)
    # an unaligned dword at +2 of row i: bytes 2-3 of dword 4i (zero) and bytes 0-1 of dword 4i+1
    # (little endian), i.e. (4i + 1) << 16; written out with struct, not Memory.read
    want = [struct.unpack_from("<I", struct.pack("<4I", *range(4 * i, 4 * i + 4)), 2)[0] for i in range(8)]
    assert want == [(4 * i + 1) << 16 for i in range(8)]
    np.testing.assert_array_equal(m.load(addrs + np.uint64(2), 4)[:, 0], want)
    same = np.full(10, a + 512, np.uint64)
    old = m.atomic("add", same, np.ones((10, 1), np.uint32))
    np.testing.assert_array_equal(old[:, 0], np.arange(10))
    assert m.read(a + 512, 4).view(np.uint32)[0] == 10
    bad = addrs.copy()
    bad[5] = a + 1024
    with pytest.raises(OutOfBoundsAccess) as ei:
        m.load(bad, 4)
    assert list(ei.value.bad_elements) == [5]
