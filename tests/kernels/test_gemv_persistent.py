"""The lane-along-K decode GEMV with persistent row blocks (passes/isel/gemv.py, ``gemv =
"persistent"``: workgroup g computes the row blocks g, g + G, ... with G the dispatch's
workgroups, read from the hidden kernel argument ``hidden_block_count_x``) and the launch's grid
rule (vlpc/kernel.py ``persistent_grid``, ``CompiledKernel.persistent_step``), on the strict
emulator: grids smaller than, equal to and larger than the row blocks, every M of the
automatic plan's tests with N not a multiple of the rows a workgroup takes and K not a multiple
of the K step, exactly sized padded buffers (NaN / garbage in the gaps, C's padding compared
bit for bit), beta = 0 over a NaN C, alpha = 0 over NaN activations and Inf weights; expected
values from NumPy (tests/kernels/test_dot_gemm.py ``run_case``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import dot_support
import vlpc
import vlpc.kernel as kernel_mod
from vlpc.dialects.gemm import ELEMENT_BYTES
from vlpc.kernel import PlanStep, persistent_grid
from vlpc.runtime import get_device
from vlpc.targets import TargetId

from dot_support import source
from test_dot_gemm import NP, run_case
from test_lane_gemv import alpha_zero_over_nan


def persistent_kernel(m, n, k, lda, ldb, ldc, ab, ct):
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct, gemv="persistent"), cache=False).kernel("g")
    li = kern.launch_info
    assert li.get("persistent") == 1 and li["macro_m"] == m and li["macro_n"] < 64, "not the persistent lane GEMV"
    assert [a[".value_kind"] for a in kern.kernargs][-1] == "hidden_block_count_x"
    return kern


@pytest.fixture
def grid_of(monkeypatch):
    """Launches on a strict emulator device with a board (MI50: the launch knows its CUs) whose
    persistent grid is ``want(blocks)``; returns the list of (blocks, CUs, resident) the rule saw."""
    seen = []

    def use(want):
        dev = get_device("emulator", strict=True, gpu="mi50", cus=2)
        monkeypatch.setattr(dot_support, "get_device", lambda *a, **kw: dev)

        def rule(blocks, cus, resident):
            seen.append((blocks, cus, resident))
            return want(blocks)
        monkeypatch.setattr(kernel_mod, "persistent_grid", rule)
        return seen
    return use


def check(kern, m, n, k, lda, ldb, ldc, ab, ct):
    """beta = 0 over a C of NaN (f16/f32), then alpha and beta nonzero."""
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)


@pytest.mark.parametrize("m, n, k, ab, ct, grid", [
    (1, 7, 1000, "f16", "f32", lambda b: 3),       # 7 blocks of one row over 3 workgroups (3, 2, 2)
    (2, 9, 1504, "i8", "i32", lambda b: b),        # a workgroup a block: one iteration each
    (3, 5, 1096, "f16", "f16", lambda b: b + 3),   # 3 workgroups past the blocks end at once; f16 C
    (4, 11, 2608, "i8", "i32", lambda b: 4),       # 11 blocks over 4
    (5, 6, 704, "f16", "f32", lambda b: 1),        # one workgroup takes every block
    (15, 6, 1200, "f16", "f32", lambda b: 2),      # N / 4 not whole: two rows a workgroup, 3 blocks
    (15, 13, 2112, "i8", "i32", lambda b: 5),      # N odd: a row a workgroup, 13 blocks over 5
    (16, 12, 1496, "f16", "f32", lambda b: b - 1),  # N not a multiple of 8: 4 rows a workgroup
    (16, 24, 3008, "i8", "i32", lambda b: 2),      # A in LDS (8 rows a workgroup): 3 blocks over 2
    (16, 40, 4096, "f16", "f32", lambda b: 2),     # A in LDS, the K loop: 5 blocks over 2
    (16, 16, 2048, "i8", "i32", lambda b: 7),      # A in LDS: 2 blocks, 5 workgroups past them
])
def test_persistent_grids(grid_of, m, n, k, ab, ct, grid):
    pad = 16 // ELEMENT_BYTES[ab]  # (rows of A and B start on 16-byte boundaries)
    lda, ldb, ldc = k + pad, k + 2 * pad, n + 3
    kern = persistent_kernel(m, n, k, lda, ldb, ldc, ab, ct)
    seen = grid_of(grid)
    check(kern, m, n, k, lda, ldb, ldc, ab, ct)
    blocks = n // kern.launch_info["macro_n"]
    assert seen and all(s[:2] == (blocks, 2) and s[2] >= 1 for s in seen)


@pytest.mark.parametrize("m, ab, ct", [(16, "f16", "f32"), (16, "i8", "i32"), (1, "f16", "f32"), (4, "i8", "i32")])
def test_persistent_alpha_zero_over_nan_inputs(grid_of, m, ab, ct):
    """alpha = 0: the products are dropped in every block (f16: NaN in A, Inf in B do not reach
    C); C = beta C."""
    n, k = 24, 2048 // ELEMENT_BYTES[ab]
    grid_of(lambda b: 2)
    alpha_zero_over_nan(persistent_kernel(m, n, k, k, k, n, ab, ct), m, n, k, ab, ct)


def test_persistent_half_rows(grid_of, monkeypatch):
    """The half-row plan (64 VGPRs, four workgroups a CU) with persistent blocks: 5 blocks over 2."""
    import vlpc.passes.isel.gemv as lane

    monkeypatch.setattr(lane, "lane_gemv_plan", lambda mm: (2, 1, 1, 64, 4, 1, 1, 2))
    m, n, k = 16, 40, 4096
    kern = persistent_kernel(m, n, k, k + 8, k, n + 1, "f16", "f32")
    assert kern.vgprs <= 64
    grid_of(lambda b: 2)
    check(kern, m, n, k, k + 8, k, n + 1, "f16", "f32")


def test_persistent_grid_rule():
    """One round on the board where that is fewer workgroups than the blocks; the blocks where
    the board is unknown."""
    assert persistent_grid(512, 60, 3) == 180     # f16 16 x 4096 x 4096 on MI50: 60 CUs x 3
    assert persistent_grid(512, 64, 4) == 256     # MI60, four a CU
    assert persistent_grid(100, 60, 3) == 100     # fewer blocks than one round: the blocks
    assert persistent_grid(512, None, 3) == 512   # no board known
    assert persistent_grid(512, 0, 3) == 512
    assert persistent_grid(512, 60, 0) == 512


def test_persistent_step_from_the_device():
    """The launch reads the CUs from the emulator's board or the HIP device's properties
    (multiProcessorCount), the workgroups a CU from the kernel's resources (77 VGPRs, 16 KiB of
    LDS, 4 waves: three a CU on gfx906); without either, or for a kernel that is not persistent,
    the step is the plan's."""
    m, n, k = 16, 4096, 4096
    kern = persistent_kernel(m, n, k, k, k, n, "f16", "f32")
    step = kern.plan(m, n, k)[0]
    assert step.grid == (512, 1, 1)
    gfx906 = TargetId.parse("gfx906")
    per_cu = 3 if kern.vgprs > 64 else 4
    emu = get_device("emulator", gpu="mi50")
    assert kern.persistent_step(step, emu).grid == (60 * per_cu, 1, 1)
    hip = SimpleNamespace(properties=SimpleNamespace(compute_units=64), target_id=gfx906)
    assert kern.persistent_step(step, hip).grid == (64 * per_cu, 1, 1)
    assert kern.persistent_step(step, get_device("emulator")) == step  # no board: the plan's grid
    plain = vlpc.compile(source(m, n, k, k, k, n, "f16", "f32"), cache=False).kernel("g")
    assert "persistent" not in plain.launch_info
    assert plain.persistent_step(PlanStep("g", (512, 1, 1), (256, 1, 1)), emu).grid == (512, 1, 1)


def test_hidden_count_left_zero():
    """A host that leaves ``hidden_block_count_x`` 0 (the C launcher packs explicit arguments
    only) launching N / rows workgroups: the kernel strides by N / rows, one block each."""
    from vlpc.runtime import LaunchGeometry, load_code_object, pack_kernargs

    from dot_support import assert_close, exact, operands, reference, rows_of

    m, n, k = 16, 24, 2048
    kern = persistent_kernel(m, n, k, k, k, n, "f16", "f32")
    a, b, c, pad_ab, pad_c = operands(m, n, k, "f16", "f32", np.random.default_rng(5))
    af, bf, cf = exact(a, k, pad_ab), exact(b, k, pad_ab), exact(c, n, pad_c)
    dev = get_device("emulator", strict=True)
    co = load_code_object(kern.code_object)
    bufs = [dev.upload(np.ascontiguousarray(x)) for x in (af, bf, cf)]
    try:
        blocks = n // kern.launch_info["macro_n"]
        geo = LaunchGeometry((blocks, 1, 1), (256, 1, 1))
        args = [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(1.5), np.float32(0.25)]
        seg = bytearray(pack_kernargs(co.kernel("g"), args, geo))
        off = next(x[".offset"] for x in kern.kernargs if x[".value_kind"] == "hidden_block_count_x")
        assert int.from_bytes(seg[off:off + 4], "little") == blocks  # (what the runtime fills)
        seg[off:off + 4] = bytes(4)
        dev.launch(co, "g", grid=geo.grid, block=geo.block, args=bytes(seg))
        out = dev.download(bufs[2], np.float32, cf.shape)
    finally:
        for x in bufs:
            dev.free(x)
    exp, bound = reference(a, b, c, 1.5, 0.25)
    assert_close(rows_of(out, m, n, n), exp, bound)


def test_hip_launcher_leaves_the_hidden_count_zero():
    """``vlpc compile --emit hip-launcher`` takes a persistent kernel: its pack function writes
    the explicit arguments only (the segment's memset leaves hidden_block_count_x 0, so the
    kernel strides by N / rows, the launcher's grid: test_hidden_count_left_zero)."""
    from vlpc.hip_launcher import generate

    mod = vlpc.compile(source(16, 64, 4096, 4096, 4096, 64, "f16", "f32", gemv="persistent"), cache=False)
    _, c_text = generate(mod, "g")
    packs = [line for line in c_text.splitlines() if "memcpy(kernargs" in line]
    assert len(packs) == 11 and not any("hidden" in line for line in packs)


def test_persistent_needs_code_object_v5():
    """A v4 runtime never fills ``hidden_block_count_x`` (LLVM AMDGPUUsage: a code object v5
    kind), so a persistent GEMV compiled for code object v4 is refused, located, naming it."""
    src = source(1, 256, 512, 512, 512, 256, "f16", "f32", gemv="persistent")
    with pytest.raises(vlpc.VlpcError, match=r":\d+:\d+: error: .*hidden_block_count_x.*code object v5"):
        vlpc.compile(src, cache=False, code_object_version=4)
    assert vlpc.compile(src, cache=False, code_object_version=5).kernel("g").launch_info["persistent"] == 1
