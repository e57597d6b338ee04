"""``vlpc profile`` and ``vlpc run K.hsaco``: per-instruction stall attribution of the timing model
(:mod:`vlpc.runtime.timing.recorder`), the Chrome trace, the annotated counts, hipcc-built kernels
from the command line, and bad input.

Expected stall figures come from the model's rules (``TimingParams``: a wave issues once per
4-cycle turn of its SIMD, an f64 VALU op occupies the SIMD 8 cycles, ``s_waitcnt`` holds the wave
until the load completes, ``s_barrier`` until the workgroup's last wave arrives), not from the
recorder itself.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
import pytest
from test_runtime_support import _kernel

from vlpc import isa
from vlpc.profiler import CAUSE_HEAD, CAUSE_TEXT, chrome_trace, format_html, profile, timeline_png
from vlpc.cli import main
from vlpc.errors import VlpcError
from vlpc.runtime.timing.recorder import STALL_CAUSES
from vlpc.runtime.toolchain import assemble_and_link
from vlpc.targets import get_board

HIP = Path(__file__).parents[1] / "data" / "hip"
SGEMM = str(Path(__file__).parents[2] / "examples" / "sgemm_dynamic.mlir")
P = get_board("mi60").timing
TURN = P.issue_turn_cycles
DIRECTIVES = """\
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1"""
NO_ARGS = "      []\n"
BUF_ARG = ("      - { .name: x, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global, "
           ".type_name: 'float*' }\n")


@functools.cache
def build(name: str, body: str, args_md: str = NO_ARGS, kernarg_size: int = 0) -> bytes:
    src = _kernel(name, body, DIRECTIVES, args_md, kernarg_size=kernarg_size, vgprs=16, sgprs=16)
    return assemble_and_link(src, "gfx906", source_name=f"{name}.s")


def write(tmp_path: Path, name: str, data: bytes) -> str:
    p = tmp_path / f"{name}.hsaco"
    p.write_bytes(data)
    return str(p)


def row(kp, mnemonic_prefix: str) -> list:
    return [i for i in kp.instructions if i.text.startswith(mnemonic_prefix)]


# -- stall attribution from the model's rules ---------------------------------------------------


def test_dependent_f32_fma_chain_never_stalls():
    """One wave, a chain of dependent v_fmac_f32: a wave64 VALU op occupies the SIMD 4 cycles, one
    turn, so each issues in the next turn of its SIMD: issue 4 cycles, no stall."""
    n = 24
    body = "\n".join(["  v_mov_b32 v1, 1.0", "  v_mov_b32 v2, 0.5"]
                     + ["  v_fmac_f32 v1, v2, v1"] * n + ["  s_endpgm"])
    prof = profile(build("fmac_chain", body), grid=1, block=64)
    kp, = prof.kernels
    fmas = row(kp, "v_fmac_f32")
    assert len(fmas) == n
    for ip in fmas:
        assert ip.issues == 1 and ip.issue_cycles == TURN
        assert ip.stall_cycles == 0, ip
    assert kp.limiter.startswith("issue-bound")


def test_dependent_f64_fma_chain_waits_on_the_valu():
    """v_fma_f64 occupies the SIMD for the ISA table's issue cycles (8 on gfx906): each FMA after
    the first waits 8 - 4 cycles for the VALU, charged to valu_busy."""
    assert P.long_instruction_extra_cycles == 0  # else the wait is shared with 'fetch'
    n = 16
    body = "\n".join(["  v_mov_b32 v2, 0", "  v_mov_b32 v3, 0x3ff00000"]
                     + ["  v_fma_f64 v[2:3], v[2:3], v[2:3], v[2:3]"] * n + ["  s_endpgm"])
    kp, = profile(build("fma64_chain", body), grid=1, block=64).kernels
    fmas = row(kp, "v_fma_f64")
    assert len(fmas) == n
    wait = isa.issue_cycles("v_fma_f64", "gfx906") - TURN
    assert fmas[0].stall_cycles == 0
    for ip in fmas[1:]:
        assert ip.stalls["valu_busy"] == wait and ip.stall_cycles == wait, ip
    assert "VALU throughput" in kp.limiter


def test_scalar_load_wait_is_charged_to_the_waitcnt():
    """s_waitcnt lgkmcnt(0) after s_load_dword holds the wave until the load returns: at least the
    scalar cache's hit latency (a first access misses to L2: longer), charged as lgkmcnt_smem."""
    body = "\n".join(["  s_load_dword s4, s[0:1], 0x0", "  s_waitcnt lgkmcnt(0)", "  s_mov_b32 s5, s4",
                      "  s_endpgm"])
    kp, = profile(build("smem_wait", body, BUF_ARG, 8), grid=1, block=64, args=["x=zeros:64"]).kernels
    w, = row(kp, "s_waitcnt")
    assert w.stalls["lgkmcnt_smem"] >= P.smem_hit_cycles - TURN
    assert w.stalls["lgkmcnt_smem"] >= 0.9 * w.stall_cycles
    assert sum(i.stall_cycles for i in kp.instructions if i is not w) <= TURN  # no other wait
    assert kp.limiter.startswith("scalar-load latency") and "+0x8" in kp.limiter


def test_barrier_wait_is_the_other_wave_s_work():
    """Two waves of one workgroup on two SIMDs; wave 0 runs 20 more VALU instructions before
    s_barrier: wave 1 waits at the barrier about 20 turns, charged to the s_barrier."""
    extra = 20
    body = "\n".join(["  v_readfirstlane_b32 s4, v0", "  s_cmp_eq_u32 s4, 0", "  s_cbranch_scc0 .Lskip"]
                     + ["  v_add_f32 v1, 1.0, v1"] * extra
                     + [".Lskip:", "  s_barrier", "  s_endpgm"])
    kp, = profile(build("barrier_wait", body), grid=1, block=128).kernels
    b, = row(kp, "s_barrier")
    assert kp.simulated["waves"] == 2 and len({w.simd for w in kp.waves}) == 2
    # wave 0's extra VALU turns, less the taken branch's penalty wave 1 paid (the model's rules)
    expect = extra * TURN - P.branch_taken_extra_cycles
    assert abs(b.stalls["barrier"] - expect) <= TURN, b.stalls
    assert b.stall_cycles == b.stalls["barrier"]
    assert "barrier" in kp.limiter


# -- accounting invariants ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reduce_profile():
    return profile(str(HIP / "lds.hsaco"), kernel="block_reduce_sum", grid="8", block="256",
                      args=["0=random:16K", "1=zeros:32", "2=4096"], max_events=10**6)


def test_counts_sum_to_the_launch_counters(reduce_profile):
    kp, = reduce_profile.kernels
    st = kp.stats
    assert sum(i.executions for i in kp.instructions) == st.instructions
    for c in ("s_barrier", "s_waitcnt"):
        assert sum(i.executions for i in kp.instructions if i.text.startswith(c)) == st.by_mnemonic[c]
    # the simulated CU replays whole traced waves: every PC of their streams issues once per occurrence
    trace = st.trace
    want: dict[int, int] = {}
    for w in kp.waves:
        for pc in trace.streams[w.key].tolist():
            want[pc] = want.get(pc, 0) + 1
    assert {i.pc: i.issues for i in kp.instructions if i.issues} == want
    # per wave: issue + stall cycles add up to its lifetime
    total = sum(i.issue_cycles + i.stall_cycles for i in kp.instructions)
    assert total == pytest.approx(kp.simulated["wave_cycles"])
    assert kp.simulated["wave_cycles"] == pytest.approx(sum(w.end - w.start for w in kp.waves))


def test_recorder_does_not_change_the_model(reduce_profile):
    kp, = reduce_profile.kernels
    assert kp.timing.cycles == kp.stats.timing.cycles
    assert kp.timing.time_us == kp.stats.timing.time_us


def test_chrome_trace_format(reduce_profile, tmp_path):
    doc = chrome_trace(reduce_profile)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    back = json.loads(path.read_text())
    events = back["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert xs and all(e["ph"] in ("X", "M") for e in events)
    tracks: dict = {}
    for e in xs:
        for key in ("name", "cat", "pid", "tid", "ts", "dur"):
            assert key in e, e
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    kp, = reduce_profile.kernels
    assert len([k for k in tracks if k[1] > 0]) == kp.simulated["waves"]  # a thread per wave
    assert {e["cat"] for e in xs} == {"issue", "stall", "valu"}
    names = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(tracks) <= names
    for evs in tracks.values():
        ends = 0.0
        for e in evs:  # monotonic and not overlapping
            assert e["ts"] >= ends - 1e-9
            ends = e["ts"] + e["dur"]
    # microseconds: the last event ends when the simulated CU does (cycles / MHz)
    last = max(e["ts"] + e["dur"] for e in xs)
    assert last == pytest.approx(kp.simulated["cycles"] / reduce_profile.clock_mhz)
    issues = sum(1 for e in xs if e["cat"] == "issue")
    assert issues == sum(i.issues for i in kp.instructions)


def test_html_and_png(reduce_profile):
    page = format_html(reduce_profile)
    assert page.startswith("<!DOCTYPE html>") and "class=hot" in page and "modeled" in page
    png = timeline_png(reduce_profile)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


# -- hipcc-built kernels from the command line ------------------------------------------------------


def test_profile_hipcc_kernel_from_the_cli(tmp_path, capsys):
    trace, html_, png = tmp_path / "t.json", tmp_path / "p.html", tmp_path / "p.png"
    rc = main(["profile", str(HIP / "saxpy.hsaco"), "--kernel", "saxpy", "--grid", "4", "--block", "64",
               "--arg", "0=250", "--arg", "1=2.0", "--arg", "2=random:1000", "--arg", "3=zeros:1000",
               "--gpu", "mi50", "--clock", "1500", "--memory-clock", "900",
               "--trace", str(trace), "--html", str(html_), "--timeline", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "MODELED" in out and "on mi50 @ 1500 MHz engine, 900 MHz memory" in out
    assert "of the HBM peak (922 GB/s)" in out  # 4096 bits x 2 x 900 MHz / 8
    # the streaming ceiling at 900 MHz: the pin rate less refresh and bus efficiency, plus one DRAM
    # page activation (spread over the channels) per KiB a wave's global_load_dwordx4 reads
    data = 4096 * 2 * 900e6 / 8 * (1 - P.hbm_refresh_fraction) * P.hbm_bus_efficiency
    ceiling = 1024 / (1024 / data + P.hbm_activate_ns * 1e-9 / P.hbm_channels)
    assert f"of the modeled streaming ceiling ({ceiling / 1e9:.0f} GB/s)" in out
    assert "limiter:" in out and "occupancy:" in out and "GB/s" in out
    assert "global_load_dword" in out and "s_waitcnt" in out
    assert json.loads(trace.read_text())["traceEvents"]
    assert html_.read_text().startswith("<!DOCTYPE html>") and png.read_bytes()[:4] == b"\x89PNG"


def test_profile_a_kernel_built_by_hipcc_here(tmp_path, capsys):
    """A kernel built by hipcc in the test (skipped without hipcc), run and profiled from the CLI with
    its arguments from the metadata (hipcc leaves them unnamed: positions)."""
    import shutil
    import subprocess

    hipcc = shutil.which("hipcc")
    if hipcc is None:
        pytest.skip("hipcc not on PATH")
    src = tmp_path / "k.hip"
    src.write_text('#include <hip/hip_runtime.h>\nextern "C" __global__ void scale(float* y, const float* x, '
                   'float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }\n')
    out = tmp_path / "k.hsaco"
    r = subprocess.run([hipcc, "--offload-arch=gfx906", "--cuda-device-only", "--no-gpu-bundle-output", "-O3", "-c",
                        "-o", str(out), str(src)], env={**os.environ, "HIP_PLATFORM": "amd"},
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"hipcc failed: {r.stderr.strip()[:200]}")
    x = np.arange(100, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "out.npz"
    rc = main(["run", str(out), "--grid", "2", "--block", "64", "--arg", "0=nan:400",
               "--arg", f"1={tmp_path / 'x.npy'}", "--arg", "2=3.0", "--arg", "3=100", "--save-output", str(saved)])
    assert rc == 0
    got = np.load(saved)
    np.testing.assert_array_equal(got["0"], 3.0 * x)  # every NaN of the padding-free buffer overwritten
    assert main(["profile", str(out), "--grid", "2", "--block", "64", "--arg", "0=zeros:400",
                 "--arg", f"1={tmp_path / 'x.npy'}", "--arg", "2=3.0", "--arg", "3=100"]) == 0
    assert "v_mul_f32" in capsys.readouterr().out


def test_run_code_object_saves_buffers(tmp_path, capsys):
    x = np.linspace(-1, 1, 250, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "out.npz"
    rc = main(["run", str(HIP / "saxpy.hsaco"), "--kernel", "saxpy", "--grid", "4", "--block", "64",
               "--arg", "0=250", "--arg", "1=2.0", "--arg", f"2={tmp_path / 'x.npy'}", "--arg", "3=zeros:1000",
               "--save-output", str(saved)])
    assert rc == 0
    assert "findings: none" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(saved)["3"], np.float32(2.0) * x)


# -- findings ----------------------------------------------------------------------------------------


RACE_BODY = "\n".join(["  s_load_dwordx2 s[4:5], s[0:1], 0x0", "  s_waitcnt lgkmcnt(0)",
                       "  v_lshlrev_b32 v1, 2, v0", "  global_load_dword v2, v1, s[4:5]",
                       "  v_add_f32 v3, v2, v2", "  s_waitcnt vmcnt(0)", "  global_store_dword v1, v3, s[4:5]",
                       "  s_endpgm"])


def test_race_is_a_finding_unless_strict(tmp_path, capsys):
    path = write(tmp_path, "race", build("race", RACE_BODY, BUF_ARG, 8))
    prof = profile(path, grid=1, block=64, args=["x=zeros:256"])
    assert prof.kernels and [f.kind for f in prof.findings] == ["race"]
    assert "v_add_f32" in prof.findings[0].message
    assert main(["profile", path, "--arg", "x=zeros:256", "--strict"]) == 4
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "s_waitcnt violation" in err


def test_uninitialised_read_of_a_hipcc_kernel_is_a_finding(capsys):
    """row_dot's `v_mad_u64_u32` adds the undefined high half of its 64-bit addend (see
    tests/runtime/test_foreign_kernels.py): a finding, and the profile is still made."""
    rc = main(["profile", str(HIP / "loops.hsaco"), "--kernel", "row_dot", "--grid", "2", "--block", "64",
               "--arg", "0=random:2600", "--arg", "1=random:40", "--arg", "2=zeros:400", "--arg", "3=65",
               "--arg", "4=10", "--flops", "1300"])
    out = capsys.readouterr().out
    assert rc == 0 and "uninitialised-read: " in out and "v_mad_u64_u32" in out
    assert "TFLOP/s modeled" in out and "annotated assembly of row_dot" in out


def test_out_of_bounds_is_a_fatal_finding(tmp_path, capsys):
    path = write(tmp_path, "race", build("race", RACE_BODY, BUF_ARG, 8))
    trace = tmp_path / "t.json"
    rc = main(["profile", path, "--arg", "x=zeros:16", "--trace", str(trace)])  # 64 lanes, 4 floats
    captured = capsys.readouterr()
    assert rc == 4 and "out-of-bounds (launch stopped)" in captured.out
    assert "Traceback" not in captured.err and not trace.exists()
    rc = main(["run", path, "--arg", "x=zeros:16"])
    assert rc == 4 and "out-of-bounds" in capsys.readouterr().out


# -- bad input: one line, nothing written -------------------------------------------------------------


@pytest.mark.parametrize("argv,message", [
    (["--kernel", "nope", "--arg", "0=1"], "kernel 'nope' not found"),
    (["--kernel", "saxpy", "--arg", "0=250", "--arg", "1=2.0", "--arg", "2=zeros:1000"], "needs argument #3"),
    (["--kernel", "saxpy", "--arg", "0=250", "--arg", "1=2.0", "--arg", "2=zeros:0", "--arg", "3=zeros:8"],
     "must be positive"),
    (["--kernel", "saxpy", "--arg", "0=250", "--arg", "1=2.0", "--arg", "2=zeros:1x", "--arg", "3=zeros:8"],
     "not a number of bytes"),
    (["--kernel", "saxpy", "--arg", "0=zeros:4", "--arg", "1=2.0", "--arg", "2=zeros:8", "--arg", "3=zeros:8"],
     "passed by value"),
    (["--kernel", "saxpy", "--arg", "0=1", "--arg", "1=2.0", "--arg", "2=7", "--arg", "3=zeros:8"], "takes zeros:BYTES"),
    (["--kernel", "saxpy", "--arg", "9=1"], "has no argument '9'"),
    (["--kernel", "saxpy", "--grid", "0"], "--grid"),
    (["--kernel", "saxpy", "--seed", "-1"], "--seed must be a non-negative integer"),
    (["--kernel", "saxpy", "--arg", "0"], "expected KEY=VALUE"),
    (["--kernel", "saxpy", "--arg", "0=1", "--arg", "0=2"], "is given twice"),
    ([], "holds 2 kernels"),
    (["-m", "64", "--kernel", "saxpy"], "-m/-n/-k"),
])
@pytest.mark.parametrize("command", ["profile", "run"])
def test_bad_input_one_line_nothing_written(tmp_path, capsys, command, argv, message):
    out = tmp_path / "out"
    out.mkdir()
    extra = (["--trace", str(out / "t.json"), "--html", str(out / "p.html"), "--timeline", str(out / "p.png")]
             if command == "profile" else ["--save-output", str(out / "o.npz")])
    rc = main([command, str(HIP / "saxpy.hsaco"), *argv, *extra])
    err = capsys.readouterr().err
    assert rc == 1
    assert len(err.strip().splitlines()) == 1 and err.startswith("vlpc: ") and message in err, err
    assert list(out.iterdir()) == []


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(VlpcError, match="no such file"):
        profile(str(tmp_path / "k.hsaco"))


def test_wrong_buffer_size_for_a_typed_pointer(tmp_path, capsys):
    path = write(tmp_path, "race", build("race", RACE_BODY, BUF_ARG, 8))
    with pytest.raises(VlpcError, match="1001 bytes is not a whole number of float32 elements"):
        profile(path, args=["x=random:1001"])
    INT_ARG = BUF_ARG.replace("'float*'", "'int*'")
    ipath = write(tmp_path, "iraces", build("iraces", RACE_BODY, INT_ARG, 8))
    with pytest.raises(VlpcError, match="points to int32, which has no NaN"):
        profile(ipath, args=["x=nan:256"])
    with pytest.raises(VlpcError, match="not a whole number of int32 elements"):
        profile(ipath, args=["x=zeros:6"])
    np.save(tmp_path / "d.npy", np.zeros(4, np.float64))
    with pytest.raises(VlpcError, match="holds float64, argument 'x' .* points to float32"):
        profile(path, args=[f"x={tmp_path / 'd.npy'}"])


def test_mlir_profile_names_the_gemm(capsys):
    rc = main(["profile", SGEMM, "-m", "64", "-n", "256", "-k", "16", "--top", "5"])
    out = capsys.readouterr().out
    assert rc == 0 and "M=64 N=256 K=16" in out and "TFLOP/s modeled" in out and "FP32 FMA peak" in out
    assert "findings: none" in out
    assert main(["profile", SGEMM, "-m", "64", "-n", "256", "-k", "16",
                 "--arg", "0=1"]) == 1
    assert "--arg is for a code object" in capsys.readouterr().err


def test_split_k_plan_profiles_each_kernel():
    prof = profile(SGEMM, m=64, n=256, k=64, split_k=2)
    assert [k.name for k in prof.kernels] == ["sgemm_dyn", "sgemm_dyn_reduce"]
    assert prof.time_us == pytest.approx(sum(k.timing.time_us for k in prof.kernels))
    assert prof.flops == 2 * 64 * 256 * 64 and not prof.findings
    doc = chrome_trace(prof)
    pids = {e["pid"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert pids <= set(range(1, 9)) and pids & {1, 2, 3, 4} and pids & {5, 6, 7, 8}
    first_end = max(e["ts"] + e["dur"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] <= 4)
    second_start = min(e["ts"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] > 4)
    assert second_start >= first_end - 1e-9  # the plan's kernels run one after the other


def test_board_and_target_must_agree(capsys):
    assert main(["profile", SGEMM, "-m", "64", "-n", "64", "-k", "64", "--gpu", "mi25"]) == 1
    assert "--gpu mi25 is a gfx900 board; the kernel is compiled for gfx906" in capsys.readouterr().err


@pytest.mark.parametrize("cause", STALL_CAUSES)
def test_every_cause_has_a_heading_and_a_sentence(cause):
    assert cause in CAUSE_HEAD and cause in CAUSE_TEXT
