"""The kernel cache (vlpc/cache.py) and the compile-speed switches of issue 18.

Each test uses its own cache directory (``VLPC_CACHE_DIR`` under ``tmp_path``), so nothing
depends on what other tests compiled.
"""

import multiprocessing
import os
import subprocess
import sys
import time

import pytest

import vlpc
from vlpc import cache as cache_mod
from vlpc.cache import KernelCache, make_key

# A small SGEMM with a small tile (16 x 64, K step 8 and a K tail): quick to compile.
SMALL = """builtin.module {
  func.func @g(%a: memref<16x28xf32>, %b: memref<64x28xf32>, %c: memref<16x64xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<16x28xf32>, memref<64x28xf32>, memref<16x64xf32>, f32, f32
    func.return
  }
}
"""
OPTS = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8, split_k=1)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "vlpc-cache"
    monkeypatch.setenv("VLPC_CACHE_DIR", str(d))
    monkeypatch.delenv("VLPC_CACHE", raising=False)
    return d


@pytest.fixture
def count_builds(monkeypatch):
    """How many times the pass pipeline runs (a cache hit runs none)."""
    import importlib

    pl = importlib.import_module("vlpc.compiler")
    real = pl.run_passes
    calls = []

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(pl, "run_passes", counting)
    return calls


def entries(d):
    return sorted(d.rglob("*.vlpck"))


def same_module(x, y):
    assert x.asm == y.asm and x.code_object == y.code_object
    assert x.target_id == y.target_id and x.toolchain == y.toolchain
    assert list(x.kernels) == list(y.kernels)
    for name, kx in x.kernels.items():
        ky = y.kernels[name]
        assert (kx.name, kx.metadata, kx.launch_info, kx.vgprs, kx.sgprs) == \
               (ky.name, ky.metadata, ky.launch_info, ky.vgprs, ky.sgprs)
        assert kx.asm == ky.asm and kx.code_object == ky.code_object and kx.target_id == ky.target_id
        assert list(kx.companions) == list(ky.companions)
        for c in kx.companions:
            assert kx.companions[c].launch_info == ky.companions[c].launch_info


def test_second_compile_is_a_hit_with_the_same_result(cache_dir, count_builds):
    first = vlpc.compile(SMALL, **OPTS)
    assert len(count_builds) == 1 and len(entries(cache_dir)) == 1
    t = time.perf_counter()
    second = vlpc.compile(SMALL, **OPTS)
    hit_s = time.perf_counter() - t
    assert len(count_builds) == 1, "a hit must not run the pipeline"
    same_module(first, second)
    fresh = vlpc.compile(SMALL, cache=False, **OPTS)
    assert len(count_builds) == 2
    same_module(first, fresh)
    assert second.kernel().launch(16, 64, 28) == fresh.kernel().launch(16, 64, 28)
    assert hit_s < 0.5, f"a cache hit took {hit_s:.3f} s"  # (the goal is 50 ms; loose for a loaded machine)


def test_split_plan_companions_come_back_from_the_cache(cache_dir, count_builds):
    text = SMALL.replace("28xf32", "256xf32")
    first = vlpc.compile(text, **dict(OPTS, split_k=2))
    second = vlpc.compile(text, **dict(OPTS, split_k=2))
    assert len(count_builds) == 1
    same_module(first, second)
    k = second.kernel()
    assert k.split_k == 2 and list(k.companions) == ["g_reduce"]
    assert k.plan(16, 64, 256) == first.kernel().plan(16, 64, 256)


@pytest.mark.parametrize("change", ["text", "option", "target", "filename"])
def test_key_covers_input_options_and_target(cache_dir, count_builds, change):
    vlpc.compile(SMALL, **OPTS)
    if change == "text":
        vlpc.compile(SMALL.replace("%beta {", "%beta  {"), **OPTS)  # one more space
    elif change == "option":
        vlpc.compile(SMALL, **dict(OPTS, split_k=2))
    elif change == "target":
        vlpc.compile(SMALL, "gfx906:sramecc+:xnack-", **OPTS)
    else:
        vlpc.compile(SMALL, filename="other.mlir", **OPTS)
    assert len(count_builds) == 2 and len(entries(cache_dir)) == 2


def test_key_covers_vlpc_and_toolchain_versions(monkeypatch):
    parts = dict(ir=SMALL, filename="f", target="gfx906", options={}, vlpc="0.1.0+a", toolchain="t1")
    base = make_key(**parts)
    assert make_key(**dict(parts, vlpc="0.1.0+b")) != base
    assert make_key(**dict(parts, toolchain="t2")) != base
    assert make_key(**parts) == base and len(base) == 64


def test_toolchain_fingerprint_follows_the_executables(tmp_path):
    from vlpc.runtime.toolchain import Toolchain

    exe = tmp_path / "ld.lld"
    exe.write_bytes(b"x")
    tc = Toolchain("llvm", (str(exe),), "llvm-mc", (str(exe),))
    before = cache_mod.toolchain_fingerprint(tc)
    cache_mod._FINGERPRINTS.clear()
    exe.write_bytes(b"xy")  # a new build of the tool
    assert cache_mod.toolchain_fingerprint(tc) != before
    cache_mod._FINGERPRINTS.clear()


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_corrupt_entry_is_rebuilt_never_loaded(cache_dir, count_builds, damage):
    good = vlpc.compile(SMALL, **OPTS)
    (path,) = entries(cache_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01  # one bit in the compressed payload
    elif damage == "truncate":
        data = data[: len(data) * 2 // 3]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"\x93\x01" * 100)
    path.write_bytes(bytes(data))
    assert KernelCache(cache_dir).get(path.stem) is None  # detected ...
    assert not path.exists()  # ... and dropped
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    again = vlpc.compile(SMALL, **OPTS)
    assert len(count_builds) == 2, "a damaged entry must be rebuilt"
    same_module(good, again)
    assert KernelCache(cache_dir).get(path.stem) is not None  # the rebuilt entry is whole


def test_entry_under_another_key_is_not_loaded(cache_dir):
    kc = KernelCache(cache_dir)
    kc.put("a" * 64, {"asm": "x"})
    kc.path("a" * 64).replace(kc.path("a" * 63 + "b").parent.mkdir(parents=True, exist_ok=True) or kc.path("a" * 63 + "b"))
    assert kc.get("a" * 63 + "b") is None


def test_cache_off_by_env_and_by_argument(cache_dir, count_builds, monkeypatch):
    vlpc.compile(SMALL, cache=False, **OPTS)
    assert entries(cache_dir) == []
    monkeypatch.setenv("VLPC_CACHE", "0")
    vlpc.compile(SMALL, **OPTS)
    vlpc.compile(SMALL, **OPTS)
    assert entries(cache_dir) == [] and len(count_builds) == 3


def test_default_directory_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("VLPC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_mod.default_directory() == tmp_path / "xdg" / "vlpc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_mod.default_directory() == tmp_path / "home" / ".cache" / "vlpc"


def test_size_parsing():
    assert cache_mod.parse_size("1024") == 1024
    assert cache_mod.parse_size("2K") == 2048 and cache_mod.parse_size("512M") == 512 << 20
    assert cache_mod.parse_size("1G") == cache_mod.parse_size("1GiB") == 1 << 30
    with pytest.raises(cache_mod.CacheError):
        cache_mod.parse_size("lots")


def test_least_recently_used_entries_are_evicted(tmp_path):
    kc = KernelCache(tmp_path, max_size=10 ** 9)
    keys = [f"{i:064x}" for i in range(6)]
    blob = os.urandom(4000)  # incompressible: each entry is about 4 kB
    for i, k in enumerate(keys):
        kc.put(k, {"blob": blob, "i": i})
        os.utime(kc.path(k), ns=(10 ** 18 + i * 10 ** 9, 10 ** 18 + i * 10 ** 9))  # written in order
    size = kc.info().size_bytes
    assert kc.info().entries == 6
    assert kc.get(keys[0])["i"] == 0  # the oldest is used again: now the most recent
    kc.max_size = size * 5 // 6 + 10  # room for five entries at most (90 %: four)
    kc.evict()
    left = {p.stem for p in entries(tmp_path)}
    assert keys[0] in left, "a recently used entry was evicted"
    assert keys[1] not in left and keys[2] not in left, "the least recently used entries were kept"
    assert kc.info().size_bytes <= kc.max_size


def test_info_and_clear(tmp_path):
    kc = KernelCache(tmp_path, max_size=1 << 20)
    for i in range(3):
        kc.put(f"{i:064x}", {"i": i})
    info = kc.info()
    assert info.entries == 3 and info.size_bytes > 0 and info.directory == tmp_path
    assert any("entries: 3" in line for line in info.lines())
    assert kc.clear() == 3
    assert kc.info().entries == 0 and kc.get(f"{0:064x}") is None


def test_unwritable_cache_is_skipped(tmp_path, monkeypatch, count_builds):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("VLPC_CACHE_DIR", str(blocker / "cache"))
    a = vlpc.compile(SMALL, **OPTS)
    b = vlpc.compile(SMALL, **OPTS)
    assert a.code_object == b.code_object and len(count_builds) == 2


def _hammer(directory: str, worker: int, rounds: int, out) -> None:
    """Write and read the same keys as the other workers; report any partial record."""
    kc = KernelCache(directory, max_size=1 << 30)
    bad = 0
    for r in range(rounds):
        for k in range(4):
            key = f"{k:064x}"
            payload = bytes([k]) * (20000 + 1000 * k)
            if (r + worker) % 2:
                kc.put(key, {"payload": payload, "k": k})
            got = kc.get(key)
            if got is not None and (got["payload"] != payload or got["k"] != k):
                bad += 1
    out.put(bad)


def test_concurrent_processes_never_see_a_partial_entry(tmp_path):
    ctx = multiprocessing.get_context("spawn" if sys.platform == "win32" else "fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), w, 25, out)) for w in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == [0, 0, 0, 0]
    kc = KernelCache(tmp_path)
    assert kc.info().entries == 4
    assert not list(tmp_path.rglob("*.tmp")), "temporary files were left behind"
    for k in range(4):
        assert kc.get(f"{k:064x}")["k"] == k


# -- verification once at the end, or after each pass ------------------------------------------


def _breaking_pipeline():
    """The default passes with one in the middle that leaves the IR invalid (a bug in vlpc)."""
    from dataclasses import dataclass

    from xdsl.dialects.arith import ConstantOp
    from xdsl.dialects.builtin import IntegerAttr, i32
    from xdsl.passes import ModulePass

    from vlpc.compiler import pipeline

    @dataclass(frozen=True)
    class BreakIR(ModulePass):
        name = "break-ir"

        def apply(self, ctx, op):
            # an arith.constant whose value's type disagrees with its result's: invalid IR
            op.body.block.add_op(ConstantOp.create(properties={"value": IntegerAttr(1, 64)}, result_types=[i32]))

    passes = pipeline("gfx906", **OPTS)
    return passes[:3] + [BreakIR()] + passes[3:]


def test_verification_at_the_end_and_after_each(monkeypatch):
    from vlpc.compiler import InternalError, make_context, parse, run_passes

    for verify_each, named in ((True, "'break-ir'"), (False, "'gcn-emit-descriptor' or an earlier one")):
        ctx = make_context()
        module = parse(SMALL, "small.mlir", ctx)
        with pytest.raises(InternalError) as e:
            run_passes(module, _breaking_pipeline(), ctx, verify_each=verify_each)
        assert named in str(e.value), str(e.value)
        if not verify_each:
            assert "--verify-each" in str(e.value)
    monkeypatch.setenv("VLPC_VERIFY_EACH", "1")
    ctx = make_context()
    with pytest.raises(InternalError, match="'break-ir'"):
        run_passes(parse(SMALL, "small.mlir", ctx), _breaking_pipeline(), ctx)


def test_verification_once_gives_the_same_assembly(monkeypatch, cache_dir):
    monkeypatch.setenv("VLPC_VERIFY_EACH", "0")
    once = vlpc.compile(SMALL, cache=False, **OPTS)
    monkeypatch.setenv("VLPC_VERIFY_EACH", "1")
    each = vlpc.compile(SMALL, cache=False, **OPTS)
    assert once.asm == each.asm and once.code_object == each.code_object


# -- lazy imports ----------------------------------------------------------------------------


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True, cwd="/",
                         env=dict(os.environ, PYTHONSAFEPATH="1"))
    return set(out.stdout.split())


HELP = ("import contextlib, io\nfrom vlpc.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(['--help'])\n    except SystemExit: pass")


@pytest.mark.parametrize("code", ["import vlpc", HELP])
def test_import_and_help_load_no_pass_dialect_xdsl_or_numpy(code):
    """``import vlpc`` and ``vlpc --help`` load neither xDSL nor NumPy nor any pass or dialect."""
    mods = _modules_after(code)
    heavy = sorted(m for m in mods if m.split(".")[0] in ("xdsl", "numpy")
                   or m.startswith(("vlpc.passes", "vlpc.dialects", "vlpc.runtime", "vlpc.compiler")))
    assert heavy == [], heavy


def test_lazy_names_are_the_real_objects():
    import importlib

    api, pl, kernel, errors = (importlib.import_module(m) for m in ("vlpc.api", "vlpc.compiler", "vlpc.kernel",
                                                                     "vlpc.errors"))
    assert vlpc.compile is pl.compile and vlpc.pipeline is pl.pipeline and vlpc.run is api.run
    assert vlpc.CompiledKernel is kernel.CompiledKernel and vlpc.VlpcError is errors.VlpcError
    from vlpc.commands.run import cmd_run  # noqa: F401  (the vlpc run command's module)
    assert vlpc.run is api.run and callable(vlpc.pipeline)
    assert set(vlpc.__all__) <= set(dir(vlpc))
    with pytest.raises(AttributeError):
        vlpc.no_such_name  # noqa: B018


# -- the command line ------------------------------------------------------------------------


def _cli(argv, capsys):
    from vlpc.cli import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_compile_uses_the_cache_and_no_cache_bypasses_it(cache_dir, count_builds, tmp_path, capsys):
    src = tmp_path / "small.mlir"
    src.write_text(SMALL)
    opts = ["--macro-tile", "16x64", "--micro-tile", "16x1", "--k-step", "8", "--split-k", "1"]
    outs = [tmp_path / f"{x}.hsaco" for x in "abcd"]
    assert _cli(["compile", str(src), "-o", str(outs[0]), *opts], capsys)[0] == 0
    assert _cli(["compile", str(src), "-o", str(outs[1]), *opts], capsys)[0] == 0
    assert len(count_builds) == 1 and len(entries(cache_dir)) == 1
    assert _cli(["compile", str(src), "-o", str(outs[2]), "--no-cache", "--verify-each", *opts], capsys)[0] == 0
    assert _cli(["compile", str(src), "-o", str(outs[3]), "-v", *opts], capsys)[0] == 0  # -v: the full driver
    assert len(count_builds) == 3 and len(entries(cache_dir)) == 1
    assert os.environ.get("VLPC_CACHE") is None, "--no-cache leaked out of the command"
    first = outs[0].read_bytes()
    assert first[:4] == b"\x7fELF" and all(o.read_bytes() == first for o in outs[1:])
    # the cache's entry is the module vlpc.compile builds
    assert vlpc.compile(SMALL, filename=str(src), **OPTS).code_object == first and len(count_builds) == 3


def test_cli_cache_info_and_clear(cache_dir, capsys):
    vlpc.compile(SMALL, **OPTS)
    rc, out, _ = _cli(["cache", "info"], capsys)
    assert rc == 0 and f"directory: {cache_dir}" in out and "entries: 1" in out
    rc, out, _ = _cli(["cache", "clear"], capsys)
    assert rc == 0 and "removed 1 entries" in out
    assert entries(cache_dir) == []
    rc, out, _ = _cli(["cache", "info"], capsys)
    assert "entries: 0" in out


def test_cli_bad_cache_size_is_a_one_line_error(cache_dir, capsys, monkeypatch):
    monkeypatch.setenv("VLPC_CACHE_MAX_SIZE", "lots")
    rc, _, err = _cli(["cache", "info"], capsys)
    assert rc == 1 and err.startswith("vlpc: VLPC_CACHE_MAX_SIZE='lots'") and "Traceback" not in err


def test_cli_cache_hit_loads_no_xdsl_pass_or_dialect(cache_dir, tmp_path):
    """``vlpc compile`` on a filled cache writes the cached code object without importing xDSL,
    a dialect or a pass (vlpc.options; a cache hit is then about python's start-up)."""
    src = tmp_path / "small.mlir"
    src.write_text(SMALL)
    opts = ["--macro-tile", "16x64", "--micro-tile", "16x1", "--k-step", "8", "--split-k", "1"]
    outs = [tmp_path / "cold.hsaco", tmp_path / "hit.hsaco"]
    code = ("from vlpc.cli import main\nimport sys\nrc = main({argv!r})\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl' or "
            "m.startswith(('vlpc.passes', 'vlpc.dialects', 'vlpc.compiler')))\n"
            "print(rc, len(heavy), heavy[:3])")
    runs = []
    for out in outs:
        argv = ["compile", str(src), "-o", str(out), *opts]
        proc = subprocess.run([sys.executable, "-c", code.format(argv=argv)], capture_output=True, text=True,
                              check=True, cwd="/", env=dict(os.environ, PYTHONSAFEPATH="1"))
        runs.append(proc.stdout.split(None, 2))
    assert runs[0][0] == "0" and int(runs[0][1]) > 0  # the cold compile needs them
    assert runs[1][:2] == ["0", "0"], runs[1]
    assert outs[1].read_bytes() == outs[0].read_bytes() and outs[0].read_bytes()[:4] == b"\x7fELF"
    assert len(entries(cache_dir)) == 1


def test_source_fingerprint_covers_vlpc_not_the_repository(monkeypatch):
    """The fingerprint of vlpc's sources walks its package folders (vlpc, dialects, passes,
    runtime), never a folder above them (a source checkout puts the repository root on
    vlpc.__path__; its walk took a tenth of a second per process), and follows a change of
    a source file's size or time."""
    walked = []
    real_walk = os.walk

    def walk(top, *a, **k):
        walked.append(os.path.abspath(top))
        return real_walk(top, *a, **k)

    monkeypatch.setattr(os, "walk", walk)
    first = cache_mod._source_fingerprint()
    pkg = os.path.dirname(os.path.abspath(cache_mod.__file__))
    assert pkg in walked and len(walked) == 4
    assert not any(pkg.startswith(d + os.sep) for d in walked), walked
    real_stat = os.stat
    touched = os.path.abspath(cache_mod.__file__)

    def stat(path, *a, **k):  # vlpc/cache.py as if saved a second later
        st = real_stat(path, *a, **k)
        if os.path.abspath(path) != touched:
            return st
        return type("Stat", (), {"st_size": st.st_size, "st_mtime_ns": st.st_mtime_ns + 1_000_000_000})()

    monkeypatch.setattr(os, "stat", stat)
    assert cache_mod._source_fingerprint() != first
