"""The peer kernels of ``benchmarks/peers.py`` (issue 33) are correct on the strict emulator.

Each peer code object under ``tests/data/peers/`` (the Triton matmul's committed configurations,
compiled by Triton's AMD backend for gfx906; the plain HIP tiled GEMM, compiled by Debian's hipcc)
runs NT SGEMMs ``C = alpha A B^T + beta C`` on ``get_device("emulator", strict=True)`` and is
compared with NumPy (float64 reference): exactly sized buffers (the last row ends at its last
element) whose padding between rows holds NaN, which must stay out of C and keep its bits in C;
beta = 0 over a NaN C; alpha = 0 over NaN A and B.  Triton is not needed (its code objects are
committed with their source, version and configuration); the hipcc rebuild is skipped without hipcc.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_wrong_answers import exact, unpack  # exactly sized buffers, NaN padding

from vlpc.runtime.code_object import load_code_object
from vlpc.runtime import get_device

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parents[1] / "data" / "peers"
CONFIGS = json.loads((DATA / "triton" / "configs.json").read_text())["configs"]


@pytest.fixture(scope="module")
def emu():
    return get_device("emulator", strict=True)


def run_gemm(emu, co, kernel: str, grid, block, lds: int, m: int, n: int, k: int, pads=(0, 0, 0),
             alpha=1.0, beta=0.0, nan_c=False, nan_ab=False, extra=(), seed=0):
    """Run one NT SGEMM; returns (C as read back, the float64 reference, C's padding as read back)."""
    r = np.random.default_rng(seed)
    lda, ldb, ldc = k + pads[0], k + pads[1], n + pads[2]
    A = r.standard_normal((m, k)).astype(np.float32)
    B = r.standard_normal((n, k)).astype(np.float32)
    C0 = np.full((m, n), np.nan, np.float32) if nan_c else r.standard_normal((m, n)).astype(np.float32)
    if nan_ab:
        A[:] = np.nan
        B[:] = np.nan
    c_flat = exact(C0, ldc)
    a, b, c = emu.upload(exact(A, lda)), emu.upload(exact(B, ldb)), emu.upload(c_flat)
    emu.launch(co, kernel, grid=grid, block=block, dynamic_lds=lds,
               args=[a, b, c, np.int32(m), np.int32(n), np.int32(k), np.int32(lda), np.int32(ldb), np.int32(ldc),
                     np.float32(alpha), np.float32(beta), *extra])
    out = emu.download(c, np.float32, c_flat.shape)
    if alpha == 0:
        ref = beta * C0.astype(np.float64) if beta != 0 else np.zeros((m, n))
    else:
        ref = alpha * (A.astype(np.float64) @ B.T.astype(np.float64))
        if beta != 0:
            ref = ref + beta * C0.astype(np.float64)
    pad_mask = np.ones(c_flat.shape, bool)
    for row in range(m):
        pad_mask[row * ldc:row * ldc + n] = False
    return unpack(out, m, n, ldc), ref, out[pad_mask]


def check(got, ref, pad, k):
    assert np.isfinite(got).all()
    bound = 1e-6 * (k + 2) * max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=0, atol=bound)
    assert np.isnan(pad).all()  # the padding between C's rows keeps its NaN


CASES = [  # (m, n, k, pads, alpha, beta, nan_c, nan_ab)
    pytest.param(1, 1, 1, (0, 0, 0), 1.0, 0.0, True, False, id="1x1x1"),
    pytest.param(70, 45, 13, (3, 1, 5), 1.0, 0.0, True, False, id="ragged-beta0-nanC"),
    pytest.param(130, 67, 33, (0, 0, 0), 1.5, -0.5, False, False, id="alpha-beta"),
    pytest.param(33, 129, 24, (4, 8, 3), 0.0, 2.0, False, True, id="alpha0-nanAB"),
    pytest.param(20, 30, 17, (1, 2, 0), 0.0, 0.0, True, True, id="alpha0-beta0-all-nan"),
]


# -- the plain HIP tiled GEMM ------------------------------------------------------------------


def hip_launch(m, n):
    return (-(-n // 128), -(-m // 128), 1), (256, 1, 1)


@pytest.mark.parametrize("m,n,k,pads,alpha,beta,nan_c,nan_ab", CASES)
def test_hip_tiled_sgemm(emu, m, n, k, pads, alpha, beta, nan_c, nan_ab):
    co = load_code_object(DATA / "hip_tiled_sgemm.hsaco")
    grid, block = hip_launch(m, n)
    got, ref, pad = run_gemm(emu, co, "sgemm_nt_tiled", grid, block, 0, m, n, k, pads, alpha, beta, nan_c, nan_ab)
    check(got, ref, pad, k)


def test_hip_tiled_sgemm_vector_path(emu):
    """Leading dimensions multiples of 4 take the float4 loads (a whole 128 x 128 tile and a partial one)."""
    co = load_code_object(DATA / "hip_tiled_sgemm.hsaco")
    m, n, k = 136, 128, 40
    grid, block = hip_launch(m, n)
    got, ref, pad = run_gemm(emu, co, "sgemm_nt_tiled", grid, block, 0, m, n, k, (4, 0, 4), 1.0, 0.0, True)
    check(got, ref, pad, k)


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc not installed (apt-get install hipcc)")
def test_hip_tiled_sgemm_rebuilt_with_hipcc(emu, tmp_path):
    proc = subprocess.run(["bash", str(DATA / "build.sh"), str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    co = load_code_object(tmp_path / "hip_tiled_sgemm.hsaco")
    assert co.target_id.target.name == "gfx906"
    d = co.kernels["sgemm_nt_tiled"].descriptor
    assert d.private_segment_fixed_size == 0  # no scratch: spill-free
    m, n, k = 70, 45, 13
    got, ref, pad = run_gemm(emu, co, "sgemm_nt_tiled", *hip_launch(m, n), 0, m, n, k, (3, 1, 5), 1.0, 0.0, True)
    check(got, ref, pad, k)


# -- the Triton matmul ---------------------------------------------------------------------------


def tri_launch(cfg, m, n):
    return (-(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"]), 1, 1), (64 * cfg["num_warps"], 1, 1)


def test_triton_configs_are_committed_and_spill_free():
    meta = json.loads((DATA / "triton" / "configs.json").read_text())
    assert meta["triton_version"] and CONFIGS
    for cfg in CONFIGS:
        co = load_code_object(DATA / "triton" / cfg["even_k_file"])
        assert co.target_id.target.name == "gfx906"
        d = co.kernels["sgemm_nt"].descriptor
        assert d.private_segment_fixed_size == 0
        assert cfg["even_k_spills"] == [0, 0, 0]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c["name"] for c in CONFIGS])
@pytest.mark.parametrize("m,n,k,pads,alpha,beta,nan_c,nan_ab", CASES)
def test_triton_sgemm_masked(emu, cfg, m, n, k, pads, alpha, beta, nan_c, nan_ab):
    co = load_code_object(DATA / "triton" / cfg["file"])
    got, ref, pad = run_gemm(emu, co, "sgemm_nt", *tri_launch(cfg, m, n), cfg["masked_shared"], m, n, k, pads,
                             alpha, beta, nan_c, nan_ab, extra=(0, 0))
    check(got, ref, pad, k)


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c["name"] for c in CONFIGS])
@pytest.mark.parametrize("beta", [0.0, 0.75])
def test_triton_sgemm_even_k(emu, cfg, beta):
    """The code object the benchmark models: K a multiple of BLOCK_K, leading dimensions multiples of 16
    (C's with NaN padding), M and N not multiples of the tile."""
    m, n, k = cfg["BLOCK_M"] + 5, cfg["BLOCK_N"] + 3, 2 * cfg["BLOCK_K"]
    co = load_code_object(DATA / "triton" / cfg["even_k_file"])
    got, ref, pad = run_gemm(emu, co, "sgemm_nt", *tri_launch(cfg, m, n), cfg["even_k_shared"], m, n, k,
                             (16, 0, 16 - n % 16), 1.25, beta, beta == 0.0, extra=(0, 0))
    check(got, ref, pad, k)


# -- the benchmark's helpers ---------------------------------------------------------------------


def _script(path: Path):
    """The benchmark script at ``path`` loaded as a module of its file's name (not run as __main__; nothing
    put on sys.path)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def _peers():
    return _script(ROOT / "benchmarks" / "peers.py")


def test_first_round_l2_miss_matches_seed_sweep_estimate():
    from vlpc.benchmarking.seed import l2_miss_estimate

    peers = _peers()

    for m, n, tile, fr in [(4096, 4096, (32, 64), 512), (256, 256, (64, 256), 64), (16384, 1024, (128, 128), 128)]:
        gx, gy = -(-n // tile[1]), -(-m // tile[0])
        ours = peers.first_round_l2_miss(peers.xfast_tiles(gx, gy, 1, fr), *tile, 640, line=64)
        assert ours == pytest.approx(l2_miss_estimate(m, n, 640, tile, 4, fr, line=64), rel=1e-12)


def test_grouped_order():
    """Triton's grouped program order (the tutorial's GROUP_SIZE_M swizzle) as the benchmark computes
    it, against the order worked by hand for 11 x 3 tiles in groups of 8 rows: down a group's rows
    column by column, the last group 3 rows high."""
    peers = _peers()

    order = list(peers.grouped_tiles(11, 3, 8, 33))
    assert sorted(order) == sorted((i, j, 0) for i in range(11) for j in range(3))
    assert order[:9] == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 0),
                         (0, 1, 0)]
    assert order[24:] == [(8, 0, 0), (9, 0, 0), (10, 0, 0), (8, 1, 0), (9, 1, 0), (10, 1, 0), (8, 2, 0), (9, 2, 0),
                          (10, 2, 0)]


def test_bad_sizes_are_one_line_errors(capsys):
    peers = _peers()

    assert peers.main(["--sizes", "4096x0x640"]) == 2
    assert peers.main(["--boards", "mi70"]) == 2
    err = capsys.readouterr().err
    assert "error: size '4096x0x640'" in err and "unknown board 'mi70'" in err


def test_cached_points_are_reused_only_under_the_same_model_and_kernel(tmp_path):
    """A cached point stands only under the model version, clocks and kernel it was modeled with; a CSV
    written before versions were kept gives the points of the peers not modeled in this run."""
    peers = _peers()

    ver, hip_id = peers.model_version(), peers.kernel_id("hip", 4096, 4096, 640, "mi60")
    assert len(ver) == 12 and ver == peers.model_version()
    row = {"model_version": ver, "kernel_id": hip_id, "clock_mhz": 1800.0, "memory_clock_mhz": 1000.0}
    args = ("hip", 4096, 4096, 640, "mi60")
    assert peers.reusable(dict(row), *args, {})
    assert not peers.reusable(dict(row, model_version="0" * 12), *args, {})
    assert not peers.reusable(dict(row, kernel_id="0" * 12), *args, {})
    assert not peers.reusable(dict(row, clock_mhz=1700.0), *args, {})
    assert not peers.reusable(dict(row, error="x"), *args, {})
    assert not peers.reusable({"clock_mhz": 1800.0}, *args, {})  # a cache row without a version
    old = tmp_path / "old.csv"
    old.write_text("board,clock_mhz,memory_clock_mhz,m,n,k,peer,config,modeled_us,tflops_modeled,"
                   "peak_share_modeled,vgprs,l2_miss,method\n"
                   "mi60,1800,1000,256,256,640,vlpc,a,1.0,2.0,0.1,50,0.2,replay\n"
                   "mi60,1800,1000,256,256,640,hip,b,3.0,4.0,0.3,96,0.5,replay\n")
    got = peers.read_csv_rows(old, ["vlpc"])
    assert list(got) == ["hip|mi60|256x256x640"]
    assert peers.reusable(got["hip|mi60|256x256x640"], "hip", 256, 256, 640, "mi60", {})


def test_triton_code_objects_rebuild_byte_for_byte(tmp_path):
    """The committed Triton code objects are what their source, configuration and Triton version make."""
    triton = pytest.importorskip("triton")
    meta = json.loads((DATA / "triton" / "configs.json").read_text())
    if triton.__version__ != meta["triton_version"]:
        pytest.skip(f"triton {triton.__version__} installed, the code objects were made by {meta['triton_version']}")
    triton_sgemm = _script(DATA / "triton_sgemm.py")

    names = ",".join(c["name"] for c in CONFIGS)
    assert triton_sgemm.main(["--grid", str(tmp_path), "--configs", names]) == 0
    for cfg in CONFIGS:
        for key in ("file", "even_k_file"):
            assert (tmp_path / cfg[key]).read_bytes() == (DATA / "triton" / cfg[key]).read_bytes(), cfg[key]
