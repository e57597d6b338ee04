"""A flat 64-bit device address space backed by one host buffer.

Device address ``a`` lives at byte ``a - BASE`` of one NumPy ``uint8`` array.
Allocations are placed first-fit with unmapped red zones before and after each
one (as AddressSanitizer places them): :func:`redzone` bytes, at least :data:`GUARD`
and as large as the allocation itself up to :data:`REDZONE_MAX`, so an overrun of up to
a whole buffer lands in no allocation and is reported as
:class:`~.errors.OutOfBoundsAccess` (the way compute-sanitizer's memcheck would).

An overrun that still reaches another live allocation (past the red zone, or through a
wrong base) is caught by the per-instruction buffer check: during a dispatch, every
kernel memory access names its instruction (``site``: the dispatch's kernarg address and
the program counter), and all the accesses of one instruction must stay inside one
allocation, the buffer the instruction's base points into.  A GEMM kernel's loads of A
only ever read A; one that reads A for most workgroups and B for the last row tile has
gone past A, and the fault names both buffers (their tags, e.g. the kernel argument).

Bounds checks are vectorised: the common case (every lane inside one
allocation) costs a min, a max and one ``searchsorted``.
"""

from __future__ import annotations

import mmap
import threading
from dataclasses import dataclass

import numpy as np

from .errors import OutOfBoundsAccess

BASE = 0x1_0000_0000
GUARD = 4096
#: The largest red zone: an allocation of n bytes gets min(max(n, GUARD), REDZONE_MAX)
#: unmapped bytes on each side (they cost address space, not host memory: untouched pages
#: of the anonymous mapping are never backed).
REDZONE_MAX = 1 << 20
_GROW = 1 << 20


def redzone(nbytes: int) -> int:
    """Unmapped bytes kept on each side of an allocation of ``nbytes`` bytes."""
    return min(max(int(nbytes), GUARD), REDZONE_MAX)


@dataclass(frozen=True)
class Allocation:
    address: int
    size: int
    tag: str = ""

    @property
    def end(self) -> int:
        return self.address + self.size

    @property
    def redzone(self) -> int:
        return redzone(self.size)

    def describe(self, argument: str = "") -> str:
        tag = f" '{self.tag}'" if self.tag else ""
        arg = f" (kernel argument {argument})" if argument else ""
        return f"allocation{tag}{arg} [0x{self.address:x}, 0x{self.end:x}) ({self.size} bytes)"


class Memory:
    """Device memory: ``alloc``/``free``/``write``/``read`` for the host, ``load``/``store``/``atomic`` for kernels."""

    def __init__(self, initial_bytes: int = 1 << 20):
        cap = max(_GROW, _round_up(initial_bytes, 4096))
        self._buf = _shared_zeros(cap)
        self._buf32 = self._buf.view(np.uint32)
        self._allocs: dict[int, Allocation] = {}
        self._starts = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)
        self._sorted: list[Allocation] = []
        self.lock = threading.Lock()
        #: per dispatch (its kernarg address): instruction pc -> the allocation it accesses
        self._sites: dict[int, dict[int, Allocation]] = {}
        #: allocation address -> the kernel argument pointing into it (fault messages)
        self._arguments: dict[int, str] = {}

    def name_arguments(self, pointers: dict[str, int]) -> None:
        """Name, for fault messages, the allocations the kernel arguments ``pointers``
        (argument name -> device address) point into; replaces the previous launch's names."""
        self._arguments = {}
        for name, address in pointers.items():
            a = self.find(int(address))
            if a is not None:
                self._arguments.setdefault(a.address, name)

    def _describe(self, a: Allocation) -> str:
        return a.describe(self._arguments.get(a.address, ""))

    # -- allocation ----------------------------------------------------------

    def alloc(self, nbytes: int, align: int = 256, tag: str = "") -> int:
        """Reserve ``nbytes`` (zero-filled); returns the device address."""
        if nbytes < 0:
            raise ValueError("negative allocation size")
        if align <= 0 or align & (align - 1):
            raise ValueError(f"alignment {align} is not a power of two")
        size = max(1, int(nbytes))
        rz = redzone(nbytes)
        prev_end, prev_rz = BASE, GUARD
        addr = None
        for a in self._sorted:
            cand = _round_up(prev_end + max(prev_rz, rz), align)
            if cand + size + max(rz, a.redzone) <= a.address:
                addr = cand
                break
            prev_end, prev_rz = a.end, a.redzone
        if addr is None:
            addr = _round_up(prev_end + max(prev_rz, rz), align)
        need = addr - BASE + size + rz
        if need > self._buf.size:
            newcap = _round_up(max(need, self._buf.size * 2), _GROW)
            nb = _shared_zeros(newcap)
            nb[: self._buf.size] = self._buf
            self._buf = nb
            self._buf32 = nb.view(np.uint32)
        self._buf[addr - BASE: addr - BASE + size] = 0
        al = Allocation(addr, int(nbytes), tag)
        self._allocs[addr] = al
        self._reindex()
        return addr

    def free(self, address: int) -> None:
        """Release an allocation made by :meth:`alloc` (its bytes become unmapped)."""
        if address not in self._allocs:
            raise ValueError(f"0x{address:x} is not the start of a live allocation")
        del self._allocs[address]
        self._sites.pop(address, None)  # a dispatch's kernarg segment: the dispatch is over
        self._reindex()

    def allocations(self) -> list[Allocation]:
        """Live allocations, sorted by address."""
        return list(self._sorted)

    def _reindex(self) -> None:
        self._sorted = sorted(self._allocs.values(), key=lambda a: a.address)
        self._starts = np.array([a.address for a in self._sorted], np.uint64)
        # zero-size allocations own no byte
        self._ends = np.array([a.address + a.size for a in self._sorted], np.uint64)

    # -- host access -----------------------------------------------------------

    def write(self, address: int, data) -> None:
        """Copy ``data`` (bytes or any NumPy array, raw bytes) to ``address``."""
        if isinstance(data, np.ndarray):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            raw = np.frombuffer(bytes(data), np.uint8)
        self._check_range(address, raw.size, "host write")
        off = address - BASE
        self._buf[off: off + raw.size] = raw

    def read(self, address: int, nbytes: int) -> np.ndarray:
        """A copy of ``nbytes`` bytes at ``address`` as ``uint8``."""
        self._check_range(address, nbytes, "host read")
        off = address - BASE
        return self._buf[off: off + nbytes].copy()

    def _check_range(self, address: int, nbytes: int, what: str) -> None:
        if nbytes == 0:
            return
        a = self.find(address)
        if a is None or address + nbytes > a.end:
            raise OutOfBoundsAccess(f"{what} of {nbytes} bytes at 0x{address:x}: {self.describe_near(address)}",
                                    fault_address=address, size=nbytes)

    def find(self, address: int) -> Allocation | None:
        """The allocation containing ``address``, or None."""
        i = int(np.searchsorted(self._starts, np.uint64(max(address, 0)), side="right")) - 1
        if i >= 0:
            a = self._sorted[i]
            if a.address <= address < a.end:
                return a
        return None

    def describe_near(self, address: int) -> str:
        if not self._sorted:
            return "no allocation is live"
        best = min(self._sorted, key=lambda a: 0 if a.address <= address < a.end
                   else min(abs(address - a.address), abs(address - (a.end - 1))))
        if address < best.address:
            rel = f"{best.address - address} bytes before"
        elif address >= best.end:
            rel = f"{address - best.end} bytes past the end of"
        else:
            rel = f"at offset {address - best.address} of"
        return f"{rel} {self._describe(best)}"

    # -- kernel access (vectorised over lanes) -----------------------------------

    def check(self, addresses: np.ndarray, nbytes: int, what: str = "access",
              site: tuple[int, int] | None = None) -> np.ndarray:
        """Byte offsets into the backing store for ``addresses`` (uint64), or raise.

        Every byte ``[a, a + nbytes)`` of every lane must lie in one live allocation.
        ``site`` = (dispatch key, pc) of a kernel's instruction: then all its lanes, and
        all its accesses during the dispatch, must be in the same allocation (see the
        module docstring); the dispatch key is an allocation (the kernarg segment) whose
        :meth:`free` ends the record.
        """
        addresses = np.asarray(addresses, np.uint64)
        if addresses.size == 0:
            return np.zeros(0, np.int64)
        lo = int(addresses.min())
        hi = int(addresses.max())
        i = int(np.searchsorted(self._starts, np.uint64(lo), side="right")) - 1
        if i >= 0 and hi + nbytes <= int(self._ends[i]):
            if site is not None:
                self._check_site(site, self._sorted[i], lo, nbytes, what)
            return (addresses - np.uint64(BASE)).astype(np.int64)
        idx = np.searchsorted(self._starts, addresses, side="right").astype(np.int64) - 1
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        if self._ends.size:
            ends = self._ends[safe]
            # ``addresses < ends`` also rejects addresses near 2^64 whose end wraps around
            ok &= (addresses < ends) & ((addresses + np.uint64(nbytes)) <= ends)
        else:
            ok[:] = False
        if not ok.all():
            bad = np.flatnonzero(~ok)
            a = int(addresses[bad[0]])
            raise OutOfBoundsAccess(
                f"{what} of {nbytes} bytes at 0x{a:x} ({bad.size} element(s) out of bounds): "
                f"{self.describe_near(a)}", fault_address=a, size=nbytes, bad_elements=bad)
        if site is not None:  # every lane is inside some allocation: one and the same?
            first = int(idx[0])
            other = np.flatnonzero(idx != first)
            if other.size:
                j = int(other[0])
                a = int(addresses[j])
                raise OutOfBoundsAccess(
                    f"{what} at pc 0x{site[1]:x}: one instruction's lanes access two buffers, "
                    f"{self._describe(self._sorted[first])} and, at 0x{a:x}, {self._describe(self._sorted[int(idx[j])])} "
                    f"({other.size} element(s) outside the buffer of the first lane)",
                    fault_address=a, size=nbytes, bad_elements=other)
            self._check_site(site, self._sorted[first], int(addresses[0]), nbytes, what)
        return (addresses - np.uint64(BASE)).astype(np.int64)

    def _check_site(self, site: tuple[int, int], alloc: Allocation, address: int, nbytes: int,
                    what: str) -> None:
        """Record (or check) that instruction ``site`` accesses ``alloc`` in this dispatch."""
        key, pc = site
        per = self._sites.get(key)
        if per is None:
            per = self._sites[key] = {}
        seen = per.get(pc)
        if seen is None:
            per[pc] = alloc
        elif seen is not alloc:
            raise OutOfBoundsAccess(
                f"{what} at pc 0x{pc:x} of {nbytes} bytes at 0x{address:x} is outside the buffer the "
                f"instruction accessed before in this dispatch: it reached {self._describe(alloc)}, "
                f"earlier accesses were in {self._describe(seen)} (an overrun into another buffer)",
                fault_address=address, size=nbytes)

    def load(self, addresses: np.ndarray, nbytes: int, what: str = "load",
             site: tuple[int, int] | None = None) -> np.ndarray:
        """Per-lane loads of ``nbytes`` (a multiple of 4): ``uint32`` array ``(n, nbytes // 4)``."""
        off = self.check(addresses, nbytes, what, site)
        k = nbytes // 4
        if not (off & 3).any():
            idx = (off >> 2)[:, None] + np.arange(k, dtype=np.int64)
            return self._buf32[idx]
        idx = off[:, None] + np.arange(nbytes, dtype=np.int64)
        return self._buf[idx].view(np.uint32).reshape(-1, k)

    def load_bytes(self, addresses: np.ndarray, nbytes: int, what: str = "load",
                   site: tuple[int, int] | None = None) -> np.ndarray:
        """Per-lane loads of ``nbytes`` bytes: ``uint8`` array ``(n, nbytes)``."""
        off = self.check(addresses, nbytes, what, site)
        return self._buf[off[:, None] + np.arange(nbytes, dtype=np.int64)]

    def store(self, addresses: np.ndarray, values: np.ndarray, what: str = "store",
              site: tuple[int, int] | None = None) -> None:
        """Per-lane stores of ``values`` (``uint32`` ``(n, k)``); later lanes win on overlap."""
        values = np.asarray(values, np.uint32)
        if values.ndim == 1:
            values = values[:, None]
        k = values.shape[1]
        off = self.check(addresses, 4 * k, what, site)
        if not (off & 3).any():
            self._buf32[(off >> 2)[:, None] + np.arange(k, dtype=np.int64)] = values
        else:
            self._buf[off[:, None] + np.arange(4 * k, dtype=np.int64)] = \
                np.ascontiguousarray(values).view(np.uint8).reshape(-1, 4 * k)

    def store_bytes(self, addresses: np.ndarray, values: np.ndarray, what: str = "store",
                    site: tuple[int, int] | None = None) -> None:
        values = np.asarray(values, np.uint8)
        nb = values.shape[1]
        off = self.check(addresses, nb, what, site)
        self._buf[off[:, None] + np.arange(nb, dtype=np.int64)] = values

    def atomic(self, op: str, addresses: np.ndarray, data: np.ndarray, cmp: np.ndarray | None = None,
               width: int = 1, site: tuple[int, int] | None = None) -> np.ndarray:
        """Atomic read-modify-write, lane by lane in lane order; returns the old values.

        ``op``: swap, cmpswap, add, sub, smin, umin, smax, umax, and, or, xor, inc, dec.
        ``width``: 1 (32-bit) or 2 (64-bit); ``data``/``cmp`` are ``uint32`` ``(n, width)``.
        For cmpswap the memory word becomes ``data`` when it equals ``cmp``.
        """
        nbytes = 4 * width
        with self.lock:
            off = self.check(addresses, nbytes, f"atomic_{op}", site)
            if (off & (nbytes - 1)).any():
                bad = int(addresses[np.flatnonzero(off & (nbytes - 1))[0]])
                raise OutOfBoundsAccess(f"misaligned atomic at 0x{bad:x}", fault_address=bad, size=nbytes)
            dt = np.uint32 if width == 1 else np.uint64
            mem = self._buf.view(dt)
            widx = off // nbytes
            d = np.ascontiguousarray(data, np.uint32).view(dt).reshape(-1)
            c = None if cmp is None else np.ascontiguousarray(cmp, np.uint32).view(dt).reshape(-1)
            uniq = np.unique(widx)
            if uniq.size == widx.size:
                old = mem[widx].copy()
                mem[widx] = _rmw(op, old, d, c, dt)
            else:
                old = np.empty(widx.size, dt)
                n = widx.size
                # each lane's rank among the earlier lanes of its address: the lanes of one
                # rank have distinct addresses, and rank by rank is lane order per address
                order = np.argsort(widx, kind="stable")
                sw = widx[order]
                first = np.ones(n, bool)
                first[1:] = sw[1:] != sw[:-1]
                starts = np.flatnonzero(first)
                rank = np.empty(n, np.int64)
                rank[order] = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
                rounds = int(rank.max()) + 1
                if rounds * 8 <= n:
                    for r in range(rounds):
                        sel = np.flatnonzero(rank == r)
                        w = widx[sel]
                        o = mem[w]
                        old[sel] = o
                        mem[w] = _rmw(op, o, d[sel], None if c is None else c[sel], dt)
                    return old.view(np.uint32).reshape(-1, width)
                for i in range(widx.size):
                    o = mem[widx[i]]
                    old[i] = o
                    mem[widx[i]] = _rmw(op, np.array([o], dt), d[i:i + 1],
                                        None if c is None else c[i:i + 1], dt)[0]
            return old.view(np.uint32).reshape(-1, width)


def _shared_zeros(nbytes: int) -> np.ndarray:
    """Zeroed bytes in an anonymous shared mapping (visible to forked worker processes)."""
    try:
        mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_ANONYMOUS", 0x20))
    except (AttributeError, OSError, ValueError):
        return np.zeros(nbytes, np.uint8)
    return np.frombuffer(mm, np.uint8)


def _rmw(op: str, old: np.ndarray, d: np.ndarray, c: np.ndarray | None, dt) -> np.ndarray:
    sdt = np.int32 if dt == np.uint32 else np.int64
    if op == "swap":
        return d.copy()
    if op == "cmpswap":
        return np.where(old == c, d, old)
    if op == "add":
        return old + d
    if op == "sub":
        return old - d
    if op == "smin":
        return np.minimum(old.view(sdt), d.view(sdt)).view(dt)
    if op == "smax":
        return np.maximum(old.view(sdt), d.view(sdt)).view(dt)
    if op == "umin":
        return np.minimum(old, d)
    if op == "umax":
        return np.maximum(old, d)
    if op == "and":
        return old & d
    if op == "or":
        return old | d
    if op == "xor":
        return old ^ d
    if op == "inc":
        return np.where(old >= d, dt(0), old + dt(1))
    if op == "dec":
        return np.where((old == 0) | (old > d), d, old - dt(1))
    raise ValueError(f"unknown atomic op {op}")


def _round_up(x: int, g: int) -> int:
    return -(-x // g) * g
