"""How fast vlpc compiles, next to iree-compile, in one run (issue 18).

    python benchmarks/compile_speed.py [--repeat 5] [--json out.json]

Measures, each ``--repeat`` times (median and minimum reported):

* ``import vlpc``: CPU seconds inside a fresh interpreter (``time.process_time``
  around the import), and ``python -c pass`` as a process for reference;
* ``vlpc --help``: wall seconds of the command;
* cold compiles as commands, ``vlpc compile FILE -o k.hsaco --no-cache``: CPU
  seconds of the process and everything it runs (assembler, linker), from
  ``getrusage(RUSAGE_CHILDREN)``: the default SGEMM (``examples/sgemm_nt.mlir``,
  256 x 512 x 640, split-K auto), the same shape as DGEMM, and a split-K plan
  (``--split-k 4``: main and reduce kernels);
* the same SGEMM compiled in-process by ``vlpc.compile(text, cache=False)`` after the
  imports (CPU of the process and its assembler/linker children);
* a cache hit: ``vlpc.compile`` of the same text a second time (wall seconds, in a
  process whose first call filled a temporary cache), and the command
  ``vlpc compile`` run again on a filled cache (process CPU);
* ``iree-compile`` (from ``pip install iree-base-compiler``) of the same product as a
  ``linalg.matmul`` on tensors for ROCm: CPU seconds of the process.  IREE releases
  that no longer know gfx906 are given the nearest target they do know (gfx908, the
  next GCN/CDNA generation); the table says which.

``--passes`` prints instead where an in-process SGEMM compile spends its CPU time: parsing,
each pass, the final verification (also timed on its own), printing, assembling and linking
(the median over ``--repeat`` compiles after a warm-up one).

vlpc's sources are byte-compiled first (``__pycache__``, as any first import would; with
``PYTHONDONTWRITEBYTECODE`` set a stale ``.pyc`` would be compiled again in every process).
The cache directory is a temporary one (never the user's).  The figures depend on
the machine and its load: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SGEMM = ROOT / "examples" / "sgemm_nt.mlir"
M, N, K = 256, 512, 640

IREE_MATMUL = f"""func.func @sgemm(%a: tensor<{M}x{K}xf32>, %b: tensor<{N}x{K}xf32>, %c: tensor<{M}x{N}xf32>)
    -> tensor<{M}x{N}xf32> {{
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
       ins(%a, %b : tensor<{M}x{K}xf32>, tensor<{N}x{K}xf32>) outs(%c : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  return %r : tensor<{M}x{N}xf32>
}}
"""


def dgemm_text() -> str:
    return SGEMM.read_text().replace("f32", "f64").replace("@sgemm", "@dgemm")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_cpu(argv: list[str], env: dict, cwd: str | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(CPU seconds of the process and its descendants, wall seconds, result)."""
    c0, w0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    return _children_cpu() - c0, time.perf_counter() - w0, proc


def vlpc_command() -> list[str]:
    exe = Path(sys.executable).with_name("vlpc")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "vlpc.cli"]


def iree_command() -> list[str] | None:
    exe = Path(sys.executable).with_name("iree-compile")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("iree-compile")
    return [found] if found else None


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, list[float], str]] = []

    def add(self, name: str, unit: str, values: list[float], note: str = "") -> None:
        self.rows.append((name, unit, values, note))

    def median(self, name: str) -> float | None:
        for n, _, v, _ in self.rows:
            if n == name and v:
                return statistics.median(v)
        return None

    def print(self) -> None:
        w = max(len(r[0]) for r in self.rows)
        print(f"{'measurement':<{w}}  {'median':>9}  {'min':>9}  unit       note")
        for name, unit, values, note in self.rows:
            if values:
                print(f"{name:<{w}}  {statistics.median(values):9.4f}  {min(values):9.4f}  {unit:<9}  {note}")
            else:
                print(f"{name:<{w}}  {'-':>9}  {'-':>9}  {unit:<9}  {note}")


IN_PROCESS = r"""
import json, os, resource, sys, time
def cpu():
    a = resource.getrusage(resource.RUSAGE_SELF); b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
import vlpc
text = open(sys.argv[1]).read()
vlpc.compile(text, cache=False)  # imports every pass and the toolchain; not timed
out = {"cold_cpu": [], "hit_wall": [], "hit_cpu": []}
for _ in range(int(sys.argv[2])):
    c = cpu(); vlpc.compile(text, cache=False); out["cold_cpu"].append(cpu() - c)
vlpc.compile(text)  # fills the (temporary) cache
for _ in range(int(sys.argv[2])):
    c, w = cpu(), time.perf_counter(); vlpc.compile(text)
    out["hit_wall"].append(time.perf_counter() - w); out["hit_cpu"].append(cpu() - c)
print(json.dumps(out))
"""


PER_PASS = r"""
import json, os, resource, statistics, sys, time
os.environ.pop("VLPC_VERIFY_EACH", None)
import vlpc.compiler
P = sys.modules["vlpc.compiler"]
from vlpc.dialects.gcn import KernelOp
from vlpc.dialects.gcn_asm import print_assembly
from vlpc.runtime.toolchain import find_toolchain
from vlpc.targets import TargetId
from vlpc.passes.gcn_emit_descriptor import kernel_resources
resources_of = getattr(P, "_described_resources", kernel_resources)  # (older revisions walk the kernel)
text, n = open(sys.argv[1]).read(), int(sys.argv[2])
def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN); return r.ru_utime + r.ru_stime
rows = {}
def add(name, seconds): rows.setdefault(name, []).append(seconds * 1000)
import gc
gc.disable()  # as vlpc.compile does while it builds (pipeline._no_gc)
for i in range(n + 1):
    gc.collect()
    t = time.process_time(); ctx = P.make_context(); m = P.parse(text, "sgemm_nt.mlir", ctx)
    parsed = time.process_time()
    passes = P.pipeline("gfx906", linalg=False)
    marks = {}
    P.run_passes(m, passes, ctx, before_each=lambda p, _: marks.__setitem__(p.name, time.process_time()),
                 after_each=lambda p, _: marks.__setitem__(p.name, time.process_time() - marks[p.name]))
    t1 = time.process_time(); m.verify(); verify = time.process_time() - t1
    t2 = time.process_time()
    res = {k: resources_of(k) for k in m.walk() if isinstance(k, KernelOp)}
    asm = print_assembly(m, "gfx906", P.header_lines(m, "gfx906", res))
    printed = time.process_time() - t2
    c0, t3 = children(), time.process_time()
    tc = find_toolchain(); tc.link(tc.assemble(asm, TargetId.parse("gfx906")))
    toolchain = time.process_time() - t3 + children() - c0
    if i == 0:
        continue  # warm-up: first-use imports and caches
    add("parse", parsed - t)
    for p in passes:
        add(p.name + (" (+ final verify)" if p is passes[-1] else ""), marks[p.name])
    add("final verify (again, on its own)", verify)
    add("resources + header + print assembly", printed)
    add("assemble + link (with the tools' CPU)", toolchain)
print(json.dumps({k: statistics.median(v) for k, v in rows.items()}))
"""


def per_pass(n: int) -> int:
    """Print the in-process CPU milliseconds of each step of an SGEMM compile."""
    env = dict(os.environ, PYTHONSAFEPATH="1")
    proc = subprocess.run([sys.executable, "-c", PER_PASS, str(SGEMM), str(n)], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"per-pass measurement failed: {proc.stderr.strip()}")
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    w = max(map(len, rows))
    print(f"{'step (examples/sgemm_nt.mlir, in process)':<{w}}  CPU ms (median of {n})")
    for name, ms in rows.items():
        print(f"{name:<{w}}  {ms:8.1f}")
    return 0


def _write_bytecode() -> None:
    """Byte-compile vlpc's sources (``__pycache__``, as the first import of each file does): with
    ``PYTHONDONTWRITEBYTECODE`` set, a file edited since its ``.pyc`` was written is compiled
    again by every process, which a user's installed vlpc never pays (a few to tens of ms)."""
    import compileall

    for d in ("vlpc", "dialects", "passes", "runtime"):
        if (ROOT / d).is_dir():
            compileall.compile_dir(str(ROOT / d), quiet=2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (default: %(default)s)")
    ap.add_argument("--json", help="also write the measurements as JSON")
    ap.add_argument("--passes", action="store_true", help="print the CPU time of each step of an in-process "
                    "SGEMM compile instead")
    args = ap.parse_args(argv)
    n = max(1, args.repeat)
    if args.passes:
        _write_bytecode()
        return per_pass(n)
    t = Table()
    _write_bytecode()
    with tempfile.TemporaryDirectory(prefix="vlpc-compile-speed-") as tmp:
        env = dict(os.environ, VLPC_CACHE_DIR=str(Path(tmp) / "cache"), PYTHONSAFEPATH="1")
        env.pop("VLPC_CACHE", None)
        env.pop("VLPC_VERIFY_EACH", None)
        dgemm = Path(tmp) / "dgemm_nt.mlir"
        dgemm.write_text(dgemm_text())
        vlpc = vlpc_command()

        # -- start-up
        cpu = [float(subprocess.run([sys.executable, "-c", "import time; t = time.process_time(); import vlpc; "
                                     "print(time.process_time() - t)"], env=env, cwd=tmp, capture_output=True,
                                    text=True, check=True).stdout) for _ in range(n)]
        t.add("import vlpc", "s CPU", cpu, "in a fresh interpreter (goal <= 0.15)")
        t.add("python -c pass", "s CPU", [run_cpu([sys.executable, "-c", "pass"], env, tmp)[0] for _ in range(n)],
              "interpreter start-up, for reference")
        t.add("vlpc --help", "s wall", [run_cpu([*vlpc, "--help"], env, tmp)[1] for _ in range(n)],
              "the command (goal <= 0.25)")

        # -- cold compiles as commands
        def cold(name: str, src: Path, extra: list[str], note: str) -> None:
            values = []
            for i in range(n):
                c, _, proc = run_cpu([*vlpc, "compile", str(src), "-o", str(Path(tmp) / f"k{i}.hsaco"),
                                      "--no-cache", *extra], env, tmp)
                if proc.returncode != 0:
                    raise SystemExit(f"vlpc compile failed: {proc.stderr.strip()}")
                values.append(c)
            t.add(name, "s CPU", values, note)

        cold("vlpc compile SGEMM (cold)", SGEMM, [], f"examples/sgemm_nt.mlir {M}x{N}x{K} -> .hsaco (goal <= 0.45)")
        cold("vlpc compile DGEMM (cold)", dgemm, [], "the same shape in f64 (goal: within 1.5x of SGEMM)")
        cold("vlpc compile SGEMM split-K 4", SGEMM, ["--split-k", "4"],
             "main + reduce kernels (goal: within 1.5x of SGEMM)")

        # -- in process: cold compile after the imports, and cache hits
        proc = subprocess.run([sys.executable, "-c", IN_PROCESS, str(SGEMM), str(n)], env=env, cwd=tmp,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"in-process measurement failed: {proc.stderr.strip()}")
        inproc = json.loads(proc.stdout.strip().splitlines()[-1])
        t.add("vlpc.compile SGEMM (cold, in process)", "s CPU", inproc["cold_cpu"],
              "after the imports; includes assembler and linker")
        t.add("vlpc.compile SGEMM (cache hit)", "s wall", inproc["hit_wall"], "second call (goal <= 0.05)")
        out = str(Path(tmp) / "hit.hsaco")
        run_cpu([*vlpc, "compile", str(SGEMM), "-o", out], env, tmp)  # fills the cache
        t.add("vlpc compile SGEMM (cache hit)", "s CPU",
              [run_cpu([*vlpc, "compile", str(SGEMM), "-o", out], env, tmp)[0] for _ in range(n)],
              "the command on a filled cache")

        # -- iree-compile
        iree = iree_command()
        note = "not installed (pip install iree-base-compiler)"
        values: list[float] = []
        if iree:
            src = Path(tmp) / "matmul.mlir"
            src.write_text(IREE_MATMUL)
            for target in ("gfx906", "gfx908"):
                argv_ = [*iree, str(src), "--iree-hal-target-device=hip", f"--iree-rocm-target={target}",
                         "-o", str(Path(tmp) / "m.vmfb")]
                first = run_cpu(argv_, env, tmp)
                if first[2].returncode == 0:
                    values = [first[0]] + [run_cpu(argv_, env, tmp)[0] for _ in range(n - 1)]
                    version = subprocess.run([*iree, "--version"], capture_output=True, text=True).stdout
                    ver = next((x.split("version", 1)[1].split("@")[0].strip() for x in version.splitlines()
                                if "compiler version" in x), "?")
                    note = f"linalg.matmul on tensors, target {target}, IREE {ver}"
                    if target != "gfx906":
                        note += " (this IREE does not know gfx906)"
                    break
                note = f"failed: {first[2].stderr.strip().splitlines()[0] if first[2].stderr.strip() else '?'}"
        t.add("iree-compile SGEMM", "s CPU", values, note)

    t.print()
    cold_s, iree_s = t.median("vlpc compile SGEMM (cold)"), t.median("iree-compile SGEMM")
    print()
    if cold_s and iree_s:
        print(f"vlpc cold / iree-compile: {cold_s / iree_s:.2f}x "
              f"({'vlpc faster' if cold_s < iree_s else 'iree-compile faster'})")
    for name in ("vlpc compile DGEMM (cold)", "vlpc compile SGEMM split-K 4"):
        v = t.median(name)
        if v and cold_s:
            print(f"{name.replace('vlpc compile ', '')} / SGEMM: {v / cold_s:.2f}x")
    hit = t.median("vlpc.compile SGEMM (cache hit)")
    cold_in = t.median("vlpc.compile SGEMM (cold, in process)")
    if hit and cold_in:
        print(f"cache hit / cold compile (in process): 1/{cold_in / hit:.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({r[0]: {"unit": r[1], "values": r[2], "note": r[3]} for r in t.rows},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
