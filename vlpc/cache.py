"""The kernel cache: compiled modules on disk, keyed by everything that determines them.

As Triton's and ccache's caches do, :func:`vlpc.compile` (and ``vlpc compile``, ``run``,
``bench``) looks a compilation up before running the pipeline and stores what it
built.  The key is a SHA-256 over

* the input IR text (for an xDSL or upstream MLIR module: its printed form) and the
  file name it is reported under (diagnostics and the assembler's source name),
* every code generation option (:class:`vlpc.compiler.Options`, normalised) and the
  target id,
* vlpc's version and a fingerprint of its installed source files (name, size and
  modification time of every ``.py`` of the package, so an edited checkout never
  reuses stale kernels),
* the toolchain: its kind and commands, the size and modification time of its
  executables and, for the ``ziglang`` wheel, its version.

Layout: ``$VLPC_CACHE_DIR`` (default ``$XDG_CACHE_HOME/vlpc``, i.e. ``~/.cache/vlpc``)
holds ``<key[:2]>/<key>.vlpck`` files.  Each entry is ``MAGIC``, then the SHA-256 of the
payload (64 hex digits and a newline), then the payload (a zlib-compressed msgpack
record).  A reader recomputes the checksum: a corrupt or truncated entry is deleted and
treated as a miss (the caller rebuilds it), never loaded.

Writes go to a temporary file in the entry's directory and are renamed over the entry
(atomic on POSIX and Windows), so concurrent processes never see a partial entry; two
processes building the same kernel both write a complete, identical entry.  A hit
refreshes the entry's modification time; after each store, when the entries exceed the
size bound (``$VLPC_CACHE_MAX_SIZE``, bytes with an optional K/M/G suffix, default
1 GiB), the least recently used are deleted until they fill at most 90 % of it.

``VLPC_CACHE=0`` (or ``vlpc ... --no-cache``, ``vlpc.compile(..., cache=False)``)
bypasses the cache.  ``vlpc cache info`` and ``vlpc cache clear`` inspect and empty it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from vlpc.errors import VlpcError
from vlpc.version import __version__

MAGIC = b"VLPC-KERNEL-CACHE 1\n"
SUFFIX = ".vlpck"
DEFAULT_MAX_SIZE = 1 << 30
_HEX = 64


class CacheError(VlpcError):
    """A malformed cache setting (``$VLPC_CACHE_MAX_SIZE``): a user error."""


def enabled_by_env() -> bool:
    """False when ``$VLPC_CACHE`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("VLPC_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def default_directory() -> Path:
    """``$VLPC_CACHE_DIR``, else ``$XDG_CACHE_HOME/vlpc``, else ``~/.cache/vlpc``."""
    d = os.environ.get("VLPC_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "vlpc"


def parse_size(text: str) -> int:
    """``"512M"`` -> 536870912 (suffixes K, M, G, T: powers of 1024; plain digits: bytes)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = 1
    if t and t[-1] in "KMGT":
        scale = 1024 ** ("KMGT".index(t[-1]) + 1)
        t = t[:-1]
    try:
        value = float(t)
    except ValueError:
        raise CacheError(f"VLPC_CACHE_MAX_SIZE={text!r}: expected bytes, e.g. 1073741824, 512M or 2G") from None
    if value < 0:
        raise CacheError(f"VLPC_CACHE_MAX_SIZE={text!r}: the size must not be negative")
    return int(value * scale)


def _source_fingerprint() -> str:
    """Name, size and mtime of every source file of the installed vlpc (and its dialects,
    passes and runtime, which may live in other folders of a source checkout), hashed."""
    import importlib.util

    h = hashlib.sha256()
    # vlpc's own folder (not its __path__: run from a source checkout that also holds the
    # repository root, whose walk, .venv and .git included, took a tenth of a second)
    dirs: set[str] = {os.path.dirname(os.path.abspath(__file__))}
    for name in ("vlpc.dialects", "vlpc.passes", "vlpc.runtime"):
        spec = importlib.util.find_spec(name)  # (imports no package but vlpc itself)
        dirs.update(spec.submodule_search_locations or [] if spec is not None else [])
    for d in sorted(dirs):
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(x for x in subdirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith((".py", ".json")):
                    p = os.path.join(root, f)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


_FINGERPRINTS: dict[str, str] = {}


def vlpc_fingerprint() -> str:
    """vlpc's version and a hash of its source files (computed once per process)."""
    fp = _FINGERPRINTS.get("vlpc")
    if fp is None:
        fp = _FINGERPRINTS["vlpc"] = f"{__version__}+{_source_fingerprint()[:16]}"
    return fp


def toolchain_fingerprint(tc) -> str:
    """The toolchain's kind, commands, executables' sizes and mtimes (and ziglang's version)."""
    key = tc.describe()
    fp = _FINGERPRINTS.get(key)
    if fp is not None:
        return fp
    parts = [key]
    import shutil

    exes = {cmd[0] for cmd in (getattr(tc, "assembler", ()), getattr(tc, "linker", ())) if cmd}
    for exe in sorted(exes):
        path = exe if os.path.isabs(exe) else shutil.which(exe)
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        parts.append(f"{exe}:{st.st_size}:{st.st_mtime_ns}" if st else f"{exe}:?")
    if getattr(tc, "kind", None) == "zig":
        parts.append(f"ziglang {_ziglang_version()}")
    fp = _FINGERPRINTS[key] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return fp


def _ziglang_version() -> str:
    """The installed ziglang wheel's version: from the name of its ``.dist-info`` folder next to
    the package (as ``importlib.metadata`` finds it, without importing that: a tenth of a
    cache hit), else ``importlib.metadata``; ``?`` when not installed."""
    import importlib.util

    spec = importlib.util.find_spec("ziglang")
    for d in (spec.submodule_search_locations or []) if spec is not None else []:
        parent = os.path.dirname(os.path.abspath(d))
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        found = sorted(n[len("ziglang-"):-len(".dist-info")] for n in names
                       if n.startswith("ziglang-") and n.endswith(".dist-info"))
        if len(found) == 1:
            return found[0]
    from importlib import metadata

    try:
        return metadata.version("ziglang")
    except metadata.PackageNotFoundError:
        return "?"


def make_key(**parts) -> str:
    """The SHA-256 (hex) of ``parts`` as canonical JSON (sorted keys; tuples as lists)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class CacheInfo:
    """What ``vlpc cache info`` prints."""

    directory: Path
    entries: int
    size_bytes: int
    max_size_bytes: int
    enabled: bool

    def lines(self) -> list[str]:
        return [f"directory: {self.directory}",
                f"entries: {self.entries}",
                f"size: {_human(self.size_bytes)} of {_human(self.max_size_bytes)} "
                f"(least recently used entries are evicted above that)",
                f"enabled: {'yes' if self.enabled else 'no (VLPC_CACHE=0)'}"]


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


class KernelCache:
    """Compiled-module records on disk (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike | None = None, max_size: int | None = None):
        self.directory = Path(directory) if directory is not None else default_directory()
        if max_size is None:
            env = os.environ.get("VLPC_CACHE_MAX_SIZE")
            max_size = parse_size(env) if env else DEFAULT_MAX_SIZE
        self.max_size = max_size

    # -- entries ---------------------------------------------------------------------------
    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{SUFFIX}"

    def get(self, key: str) -> dict | None:
        """The record stored under ``key``, or None (missing, or corrupt: then deleted)."""
        p = self.path(key)
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            return None
        record = _decode(data, key)
        if record is None:
            self._remove(p)  # corrupt or truncated: the caller rebuilds it
            return None
        try:
            os.utime(p)  # least recently *used*
        except OSError:
            pass
        return record

    def put(self, key: str, record: dict) -> None:
        """Store ``record`` under ``key`` (atomically), then evict down to the size bound.
        A cache that cannot be written (read-only, full disk) is skipped silently."""
        data = _encode(dict(record, key=key))
        p = self.path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=p.parent)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, p)
        except OSError:
            self._remove(Path(tmp))
            return
        self.evict()

    # -- maintenance -----------------------------------------------------------------------
    def _entries(self) -> list[tuple[Path, os.stat_result]]:
        out = []
        try:
            subdirs = list(os.scandir(self.directory))
        except OSError:
            return out
        for d in subdirs:
            if not d.is_dir(follow_symlinks=False):
                continue
            try:
                files = list(os.scandir(d.path))
            except OSError:
                continue
            for f in files:
                if f.name.endswith(SUFFIX):
                    try:
                        out.append((Path(f.path), f.stat(follow_symlinks=False)))
                    except OSError:  # removed by another process meanwhile
                        continue
        return out

    def evict(self) -> int:
        """Delete least recently used entries while the total exceeds the bound (down to 90 %
        of it); returns how many were deleted.  Stale temporary files (an hour old) go too."""
        entries = self._entries()
        total = sum(st.st_size for _, st in entries)
        removed = 0
        if total > self.max_size:
            goal = self.max_size * 9 // 10
            for p, st in sorted(entries, key=lambda e: e[1].st_mtime_ns):
                if total <= goal:
                    break
                if self._remove(p):
                    removed += 1
                total -= st.st_size
        now = time.time()
        for d in self._subdirs():
            for f in d.glob(".*.tmp"):
                try:
                    if now - f.stat().st_mtime > 3600:
                        f.unlink()
                except OSError:
                    pass
        return removed

    def _subdirs(self) -> list[Path]:
        try:
            return [Path(d.path) for d in os.scandir(self.directory) if d.is_dir(follow_symlinks=False)]
        except OSError:
            return []

    def info(self) -> CacheInfo:
        entries = self._entries()
        return CacheInfo(self.directory, len(entries), sum(st.st_size for _, st in entries), self.max_size,
                         enabled_by_env())

    def clear(self) -> int:
        """Delete every entry (and stale temporary file); returns how many entries."""
        n = 0
        for p, _ in self._entries():
            n += self._remove(p)
        for d in self._subdirs():
            for f in d.glob(".*.tmp"):
                self._remove(f)
            try:
                d.rmdir()
            except OSError:
                pass
        return n

    @staticmethod
    def _remove(p: Path) -> bool:
        try:
            p.unlink()
            return True
        except OSError:
            return False


def _encode(record: dict) -> bytes:
    import msgpack

    payload = zlib.compress(msgpack.packb(record, use_bin_type=True), 1)
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _decode(data: bytes, key: str) -> dict | None:
    """The record in ``data`` if it is whole (magic, checksum, format, key), else None."""
    head = len(MAGIC)
    if not data.startswith(MAGIC) or len(data) < head + _HEX + 1 or data[head + _HEX:head + _HEX + 1] != b"\n":
        return None
    payload = data[head + _HEX + 1:]
    if hashlib.sha256(payload).hexdigest().encode() != data[head:head + _HEX]:
        return None
    try:
        import msgpack

        record = msgpack.unpackb(zlib.decompress(payload), raw=False)
    except Exception:  # noqa: BLE001 - a checksummed but unreadable entry (other format): a miss
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    return record


def open_cache(enabled: bool | None = None) -> KernelCache | None:
    """The cache to use: None when ``enabled`` is False, or it is None and ``$VLPC_CACHE``
    turns the cache off.  Raises :class:`CacheError` for a bad ``$VLPC_CACHE_MAX_SIZE``."""
    if enabled is False or (enabled is None and not enabled_by_env()):
        return None
    return KernelCache()
