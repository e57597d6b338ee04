"""The tuning database: what ``vlpc tune`` found, per problem, in an embedded SQLite file.

As rocBLAS ships tuned solutions per size (Tensile's logic files) and Triton's autotuner
caches its choice per key, ``vlpc tune`` records each problem's winner here, and
:func:`vlpc.compile` (so ``vlpc compile``, ``run``, ``bench`` and the Python API) uses an
exact match when no plan option is given (:func:`tuned_options`).

**Where**: ``--db FILE`` (``vlpc tune``), else ``$VLPC_TUNE_DB``, else ``tune.sqlite3`` in the
kernel cache's folder (:func:`vlpc.cache.default_directory`).  ``VLPC_TUNE_DB=off`` turns the
database off: nothing is recorded and no compilation looks it up.

**Key** (:class:`Key`): target, board, engine clock (MHz) and compute units; the element types
(A/B and C, e.g. ``f16->f32``; a weight format when the kernel has one); layout; M, N, K and
the batch count (0: none); the fused epilogue.  **Value**: the winning options (those of
:func:`vlpc.compile`; ``{}`` when the automatic plan won), its label, its modeled time, the
automatic plan's modeled time, vlpc's version and the time of the run (UTC).  One entry per
key and vlpc version (a re-run replaces it, keeping its number).

Each candidate measured is also kept (``candidates``), per key and version, so that an
interrupted ``vlpc tune`` resumes where it stopped.  An entry made by another vlpc version, or
for another board, clock or CU count, is never used: the lookup names it and says why.

All times are **modeled** (vlpc's timing model), never measured.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from vlpc.cache import default_directory
from vlpc.errors import VlpcError
from vlpc.targets import TargetId
from vlpc.version import __version__

#: File name of the default database, in the kernel cache's folder.
DEFAULT_NAME = "tune.sqlite3"
#: ``$VLPC_TUNE_DB`` values that turn the database off.
OFF = ("0", "off", "none", "no", "false")
#: Format tag of ``vlpc tune export`` files.
EXPORT_FORMAT = "vlpc-tune-db 1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  target TEXT NOT NULL, board TEXT NOT NULL, clock_mhz REAL NOT NULL, cus INTEGER NOT NULL,
  types TEXT NOT NULL, layout TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
  batch INTEGER NOT NULL, epilogue TEXT NOT NULL,
  options TEXT NOT NULL, label TEXT NOT NULL, modeled_us REAL, default_us REAL,
  version TEXT NOT NULL, created TEXT NOT NULL,
  UNIQUE (target, board, clock_mhz, cus, types, layout, m, n, k, batch, epilogue, version)
);
CREATE TABLE IF NOT EXISTS candidates (
  key TEXT NOT NULL, version TEXT NOT NULL, candidate TEXT NOT NULL, result TEXT NOT NULL,
  PRIMARY KEY (key, version, candidate)
);
"""


class TuneDBError(VlpcError):
    """An unreadable database or export file (a one-line user error)."""


@dataclass(frozen=True)
class Key:
    """What a tuned entry is for (see the module docstring)."""

    target: str
    board: str
    clock_mhz: float
    cus: int
    types: str
    layout: str
    m: int
    n: int
    k: int
    batch: int = 0
    epilogue: str = ""

    def problem(self) -> tuple:
        """The problem alone (target, types, layout, sizes, epilogue): no board or clock."""
        return (self.target, self.types, self.layout, self.m, self.n, self.k, self.batch, self.epilogue)

    def machine(self) -> str:
        return f"{self.board} ({self.cus} CUs, {self.clock_mhz:g} MHz)"

    def text(self) -> str:
        b = f" batch {self.batch}" if self.batch else ""
        e = f" +{self.epilogue}" if self.epilogue else ""
        return f"{self.m}x{self.n}x{self.k}{b} {self.types} {self.layout}{e}"

    def json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass
class Entry:
    """One row of the database."""

    id: int
    key: Key
    options: dict
    label: str
    modeled_us: float | None
    default_us: float | None
    version: str
    created: str

    def as_dict(self) -> dict:
        return {**asdict(self.key), "options": self.options, "label": self.label, "modeled_us": self.modeled_us,
                "default_us": self.default_us, "version": self.version, "created": self.created}


def version() -> str:
    """vlpc's version, as entries record it."""
    return __version__


def default_path() -> Path | None:
    """``$VLPC_TUNE_DB``, else ``tune.sqlite3`` in the kernel cache's folder; None when off."""
    env = os.environ.get("VLPC_TUNE_DB")
    if env is not None and env.strip().lower() in OFF:
        return None
    if env:
        return Path(env).expanduser()
    return default_directory() / DEFAULT_NAME


def key_of(kernel, m: int, n: int, k: int, batch: int | None, target: str, board, clock_mhz: float | None = None,
           cus: int | None = None) -> Key:
    """The :class:`Key` of ``kernel`` (a :class:`vlpc.kernel.CompiledKernel`) launched at ``m x n x k``
    (``batch``: a strided batch's count, else None/0) on ``board`` (a :class:`vlpc.targets.Board`)."""
    li = kernel.launch_info
    dtype = str(li.get("dtype", "f32"))
    c = str(li.get("c_dtype", "") or dtype)
    types = f"{dtype}->{c}"
    fmt = li.get("b_format")  # GGUF block-quantized weights (q8_0, q4_0, q4_k), when the kernel has them
    if fmt:
        types += f" {fmt}"
    return Key(TargetId.parse(target).target.name, board.name.lower(), float(clock_mhz or board.engine_clock_mhz),
               int(cus or board.compute_units), types, str(li.get("layout", "NT")), int(m), int(n), int(k),
               int(batch or 0), str(li.get("epilogue", "") or ""))


class TuneDB:
    """The database at ``path`` (created with its folder on the first write)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None

    def _db(self, create: bool = True) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.path.exists():
                if not create:
                    return None
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise TuneDBError(f"tuning database {self.path}: {e.strerror}") from None
            try:
                conn = sqlite3.connect(self.path, timeout=30)
                conn.executescript(_SCHEMA)
            except sqlite3.DatabaseError as e:
                raise TuneDBError(f"tuning database {self.path}: {e} (remove it or give another with --db)") from None
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> TuneDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- entries --------------------------------------------------------------------------------

    def record(self, key: Key, options: dict, label: str, modeled_us: float | None, default_us: float | None,
               ver: str | None = None, created: str | None = None) -> int:
        """Store (or replace) the entry of ``key`` for vlpc ``ver`` (default: this one); its number."""
        db = self._db()
        ver = ver or version()
        created = created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        k = asdict(key)
        cols = ", ".join(k)
        with db:
            db.execute(f"INSERT INTO entries ({cols}, options, label, modeled_us, default_us, version, created) "
                       f"VALUES ({', '.join('?' * (len(k) + 6))}) "
                       "ON CONFLICT (target, board, clock_mhz, cus, types, layout, m, n, k, batch, epilogue, version) "
                       "DO UPDATE SET options = excluded.options, label = excluded.label, "
                       "modeled_us = excluded.modeled_us, default_us = excluded.default_us, created = excluded.created",
                       (*k.values(), json.dumps(options, sort_keys=True), label, modeled_us, default_us, ver, created))
            row = db.execute(f"SELECT id FROM entries WHERE {' AND '.join(f'{c} = ?' for c in k)} AND version = ?",
                             (*k.values(), ver)).fetchone()
        return int(row[0])

    def _rows(self, where: str = "", params: tuple = ()) -> list[Entry]:
        db = self._db(create=False)
        if db is None:
            return []
        names = [f.name for f in fields(Key)]
        cur = db.execute(f"SELECT id, {', '.join(names)}, options, label, modeled_us, default_us, version, created "
                         f"FROM entries {where} ORDER BY id", params)
        out = []
        for row in cur:
            key = Key(*row[1:1 + len(names)])
            rest = row[1 + len(names):]
            out.append(Entry(row[0], key, json.loads(rest[0]), rest[1], rest[2], rest[3], rest[4], rest[5]))
        return out

    def entries(self) -> list[Entry]:
        return self._rows()

    def get(self, number: int) -> Entry | None:
        rows = self._rows("WHERE id = ?", (number,))
        return rows[0] if rows else None

    def same_problem(self, key: Key) -> list[Entry]:
        """Entries for ``key``'s problem on any board, clock or vlpc version."""
        return self._rows("WHERE target = ? AND types = ? AND layout = ? AND m = ? AND n = ? AND k = ? AND batch = ? "
                          "AND epilogue = ?", key.problem())

    def lookup(self, key: Key) -> tuple[Entry | None, list[str]]:
        """The entry of exactly ``key`` made by this vlpc version, and notes on the entries for
        the same problem that are not used (another board, clock, CU count or vlpc version)."""
        hit, notes = None, []
        ver = version()
        for e in self.same_problem(key):
            if e.key == key and e.version == ver:
                hit = e
                continue
            why = []
            if e.version != ver:
                why.append(f"made by vlpc {e.version}, this is {ver}")
            if e.key != key:
                why.append(f"for {e.key.machine()}, this plan is for {key.machine()}")
            notes.append(f"tuned entry #{e.id} not used: {'; '.join(why)}")
        return hit, notes

    def clear(self) -> int:
        db = self._db(create=False)
        if db is None:
            return 0
        with db:
            n = db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            db.execute("DELETE FROM entries")
            db.execute("DELETE FROM candidates")
        return int(n)

    # -- measured candidates (resume) --------------------------------------------------------------

    def measured(self, key: Key) -> dict[str, dict]:
        """Candidates already measured for ``key`` by this vlpc version: options JSON -> result dict."""
        db = self._db(create=False)
        if db is None:
            return {}
        cur = db.execute("SELECT candidate, result FROM candidates WHERE key = ? AND version = ?",
                         (key.json(), version()))
        return {c: json.loads(r) for c, r in cur}

    def save_measured(self, key: Key, items: list[tuple[str, dict]]) -> None:
        """Keep measured candidates (options JSON, result dict) of ``key``."""
        if not items:
            return
        db = self._db()
        with db:
            db.executemany("INSERT OR REPLACE INTO candidates (key, version, candidate, result) VALUES (?, ?, ?, ?)",
                           [(key.json(), version(), c, json.dumps(r, sort_keys=True)) for c, r in items])

    # -- export / import --------------------------------------------------------------------------

    def export(self) -> str:
        """Every entry as JSON text (``vlpc tune export``)."""
        return json.dumps({"format": EXPORT_FORMAT, "note": "times are modeled by vlpc's timing model, not measured",
                           "entries": [e.as_dict() for e in self.entries()]}, indent=1) + "\n"

    def import_text(self, text: str, source: str = "<input>") -> int:
        """Add the entries of an export (a newer entry for the same key and version replaces an
        older one; an older is skipped).  Returns the entries added or replaced."""
        try:
            data = json.loads(text)
        except ValueError as e:
            raise TuneDBError(f"{source}: not a `vlpc tune export` file ({e})") from None
        if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT or not isinstance(data.get("entries"), list):
            raise TuneDBError(f"{source}: not a `vlpc tune export` file (no '{EXPORT_FORMAT}' format tag)")
        names = [f.name for f in fields(Key)]
        count = 0
        for i, row in enumerate(data["entries"]):
            try:
                key = Key(**{n: row[n] for n in names})
                ver, created = str(row["version"]), str(row["created"])
                opts, label = dict(row["options"]), str(row["label"])
            except (KeyError, TypeError, ValueError) as e:
                raise TuneDBError(f"{source}: entry {i + 1} is incomplete ({e})") from None
            old = [x for x in self.same_problem(key) if x.key == key and x.version == ver]
            if old and old[0].created >= created:
                continue
            self.record(key, opts, label, row.get("modeled_us"), row.get("default_us"), ver, created)
            count += 1
        return count


def open_default() -> TuneDB | None:
    """The database of :func:`default_path` (None when off)."""
    p = default_path()
    return None if p is None else TuneDB(p)


#: Options of :func:`vlpc.compile` that choose the plan: given any of them, the tuning
#: database is not consulted (an explicit flag wins).
PLAN_OPTIONS = {"macro_tile": None, "micro_tile": None, "k_step": None, "waves_per_simd": None, "split_k": "auto",
                "split_mode": "workspace", "local_split": 1, "strategy": "sqc", "schedule": "default",
                "forwarding": True, "a_transpose": "auto"}


def explicit_plan(options: dict) -> list[str]:
    """The plan options of ``options`` that differ from their defaults."""
    return [k for k, d in PLAN_OPTIONS.items() if k in options and options[k] != d]


def tuned_options(kernel, target: str, options: dict, m: int | None = None, n: int | None = None,
                  k: int | None = None, batch: int | None = None, db: TuneDB | None = None) -> tuple[dict | None, list[str]]:
    """The tuned options for ``kernel`` (compiled with the automatic plan; sizes from its IR,
    or ``m``/``n``/``k``/``batch`` for dynamic ones) under ``options`` (their ``gpu`` and ``cus``
    name the board, else the target's default board), and notes for ``-v``: ``plan: tuned
    entry #N`` on a hit, why entries for the same problem were not used.  ``(None, notes)``
    without a usable entry, with an explicit plan option, or with the database off."""
    db = db or open_default()
    if db is None or not db.path.exists():
        return None, []
    li = kernel.launch_info
    sizes = []
    for name, given in (("m", m), ("n", n), ("k", k)):
        static = li.get(f"static_{name}", -1)
        v = static if static is not None and static >= 0 else given
        if v is None:
            return None, []
        sizes.append(int(v))
    b = int(li.get("batch", 0) or 0)  # 0: no batch, > 0: its static count, < 0: given at launch
    if b < 0:
        if not batch:
            return None, []
        b = int(batch)
    from vlpc.plan_model import plan_board

    board = plan_board(str(target).split(":")[0], options.get("gpu") or "", 0)
    key = key_of(kernel, *sizes, b, target, board, None, options.get("cus") or board.compute_units)
    hit, notes = db.lookup(key)
    if hit is None:
        return None, notes
    given = explicit_plan(options)
    if given:
        return None, notes + [f"plan: tuned entry #{hit.id} not used: explicit plan option(s) "
                              f"{', '.join(x.replace('_', '-') for x in given)}"]
    return dict(hit.options), notes + [f"plan: tuned entry #{hit.id} ({hit.label}, modeled {hit.modeled_us:,.1f} us "
                                       f"on {key.machine()})"]


def lookup_enabled() -> bool:
    """Whether a compilation looks the database up: it is on and its file exists (cheap: no
    SQLite is opened otherwise)."""
    p = default_path()
    return p is not None and p.is_file()


def print_notes(notes: list[str], verbose: bool) -> None:
    """The lookup's notes on standard error as the CLI gives them: an entry not used always (never
    silently), the entry used under ``-v``."""
    import sys

    for note in notes:
        if verbose or "not used" in note:
            print(f"vlpc: {note}", file=sys.stderr)


def iter_lines(entries: list[Entry]) -> Iterator[str]:
    """``vlpc tune list``'s table (Markdown)."""
    yield "| # | problem | board | winner | modeled us | automatic plan us | vlpc | made (UTC) |"
    yield "|---:|---|---|---|---:|---:|---|---|"
    for e in entries:
        d = "" if e.default_us is None else f"{e.default_us:,.1f}"
        t = "" if e.modeled_us is None else f"{e.modeled_us:,.1f}"
        yield (f"| {e.id} | {e.key.text()} | {e.key.machine()} | {e.label} | {t} | {d} | {e.version} | "
               f"{e.created} |")


__all__ = ["Entry", "Key", "TuneDB", "TuneDBError", "default_path", "explicit_plan", "key_of", "open_default",
           "lookup_enabled", "tuned_options", "version"]
