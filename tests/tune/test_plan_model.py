"""The plan surrogate (vlpc/plan_model.py): its structure and the properties plan choice relies on.

Its error against the timing model is measured by benchmarks/plan_surrogate.py (report), not here."""

import pytest

from vlpc import plan_model
from vlpc.plan_model import choose, estimate, plan_board
from vlpc.targets import TargetError, get_board

MI60 = get_board("mi60")


def cost(m, n, k, dtype="f32", macro=(64, 256), k_step=16, split=1, board=MI60, mode="workspace"):
    return estimate(m, n, k, dtype, 8 if dtype == "f64" else 4, macro, k_step, split, 1, mode, board).seconds


def test_the_fit_covers_the_default_kernels(monkeypatch):
    fit = plan_model.fitted()
    assert "timing model" in fit["fitted_on"]
    for key in ("f32 32x256 k16",):  # the default SGEMM kernel's
        v = fit["variants"][key]
        assert v["fixed"] >= 0 and v["latency"] >= 0 and v["per_wave_ratio"] >= 1 and v["wgs_per_cu"] >= 1
    assert 0 < fit["reduce_efficiency"] <= 1
    # without an f64 fit (the fit has none: vlpc/benchmarking/plan_runs.py F64_VARIANTS), f64 is derived from the nearest f32 fit (same macro N, then M, then A dwords
    # per row and K step): latency in proportion to the A dwords of a K step (16 rows x 16 dwords:
    # half of 32 x 16), same occupancy, its own VALU cycles
    no_f64 = fit | {"variants": {k: v for k, v in fit["variants"].items() if not k.startswith("f64 ")}}
    monkeypatch.setattr(plan_model, "fitted", lambda: no_f64)
    f32 = plan_model.variant("f32", (32, 256), 16, MI60)
    f64 = plan_model.variant("f64", (16, 256), 8, MI60)  # the default DGEMM kernel's tile
    assert f64.latency == pytest.approx(f32.latency / 2) and f64.wgs_per_cu == f32.wgs_per_cu
    assert f64.per_wave / plan_model.valu_cycles("f64", 16, 8, MI60) == pytest.approx(
        f32.per_wave / plan_model.valu_cycles("f32", 32, 16, MI60))


def test_rounds_are_steps_a_partial_round_costs_a_workgroup():
    v = plan_model.variant("f32", (64, 256), 16, MI60)
    full = MI60.compute_units * v.wgs_per_cu  # workgroups of one full round
    rows = full // (4096 // 256) * 64  # M giving exactly `full` tiles of 64x256 with N = 4096
    t_full = cost(rows, 4096, 640)
    t_more = cost(rows + 64, 4096, 640)  # 16 more workgroups: a second, partial round
    t_less = cost(rows - 64, 4096, 640)
    assert v.wgs_per_cu == 3  # 64-row tiles: 82 VGPRs, 3 waves per SIMD
    assert t_more > t_full * 1.2 and t_less <= t_full


def test_split_k_pays_for_small_mn_with_long_k_not_for_a_full_gpu():
    assert cost(256, 256, 8192, split=16) < 0.5 * cost(256, 256, 8192)
    assert cost(4096, 4096, 640, split=2) > cost(4096, 4096, 640)
    best, cands = choose(256, 256, 8192, "f32", 4, 64, (64, 128, 256), 16, tuple(range(1, 33)), 1, "workspace",
                         MI60, min_k_per_split=256)
    assert best.split_k > 1 and best.seconds == min(c.seconds for c in cands)
    assert all(c.split_k == 1 or -(-8192 // c.split_k) >= 256 for c in cands)


def test_more_cus_and_a_faster_clock_never_cost_time():
    for shape in ((1024, 1024, 640), (4096, 4096, 640), (256, 256, 8192)):
        base = cost(*shape)
        assert cost(*shape, board=MI60.at(compute_units=32)) >= base
        assert cost(*shape, board=MI60.at(engine_clock_mhz=1100)) >= base


def test_f64_costs_the_target_rate():
    mi25 = get_board("mi25")
    t906 = cost(2048, 2048, 640, "f64", (32, 256), 8)
    t900 = cost(2048, 2048, 640, "f64", (32, 256), 8, board=mi25)
    assert t900 > 4 * t906  # f64 at 1/16 rate on gfx900, half rate on gfx906
    assert cost(2048, 2048, 640, "f64", (32, 256), 8) > cost(2048, 2048, 640)  # DGEMM slower than SGEMM


def test_plan_board():
    assert plan_board("gfx906").name == "mi50" and plan_board("gfx906").compute_units == 60
    assert plan_board("gfx906", "mi60").compute_units == 64
    assert plan_board("gfx906", "mi60", 32).compute_units == 32
    assert plan_board("gfx900").name == "mi25"
    with pytest.raises(TargetError, match="mi25 is a gfx900"):
        plan_board("gfx906", "mi25")


def test_unfitted_variants_fall_back_to_the_nearest_fit():
    v = plan_model.variant("f32", (16, 64), 8, MI60)
    ref = plan_model.variant("f32", (32, 256), 16, MI60)
    assert v.wgs_per_cu >= ref.wgs_per_cu  # narrower workgroups: at least as many resident
    assert v.per_wave >= plan_model.valu_cycles("f32", 16, 8, MI60)


def test_local_wave_scale_charges_the_competing_waves_of_local_splits_only(monkeypatch):
    """Issue 33: the competing-waves cost of a local split's K step is scaled by a factor fitted on
    R / L resident workgroups (``local_wave_scale``); plans without a local split keep theirs."""
    data = dict(plan_model.fitted())
    args = (512, 4096, 4096, "f16", 2, (32, 64), 16, 1)

    def est(local, scale):
        monkeypatch.setattr(plan_model, "fitted", lambda: data | {"local_wave_scale": {"f16": scale}})
        return estimate(*args, local, "workspace", get_board("mi50"), c_esize=4)

    assert est(1, 1.5).seconds == est(1, 1.0).seconds
    base, scaled = est(8, 1.0), est(8, 1.5)
    assert scaled.seconds > base.seconds * 1.2  # two resident 8-wave workgroups: the competing term binds
    assert plan_model.local_wave_scale("f64", 8) == 1.0  # no f64 nor f32 figure: 1
    monkeypatch.setattr(plan_model, "fitted", lambda: data | {"local_wave_scale": {"f32": 1.3}})
    assert plan_model.local_wave_scale("f64", 8) == 1.3 and plan_model.local_wave_scale("f64", 1) == 1.0


def _plan_surrogate_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "plan_surrogate.py"
    spec = importlib.util.spec_from_file_location("plan_surrogate_script", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fit_missing_runs_only_the_variants_the_fit_lacks(monkeypatch, tmp_path):
    """``plan_surrogate.py fit --missing`` (the fit extended by a variant, or resumed): only the
    variants and local split types the fit file lacks are run; everything else is kept as it is."""
    import json

    script = _plan_surrogate_script()
    old = json.loads(json.dumps(plan_model.fitted()))
    old["variants"].pop("f32 32x64 k16")
    old["local_reduce_cycles_per_row"].pop("f16", None)
    out = tmp_path / "plan_model.json"
    out.write_text(json.dumps(old))
    ran, cache = [], {}

    def fake_run_all(jobs, procs):  # a timing model that grows with K and the workgroups per CU; the whole cache
        ran.extend(j[0] for j in jobs)
        cache.update({j[0]: {"us": 50.0 + j[1][0] * j[1][2] / 4000, "parts_us": [1.0], "wgs_per_cu": 4,
                             "error": None} for j in jobs})
        return cache

    monkeypatch.setattr(script, "OUT", out)
    monkeypatch.setattr(script, "run_all", fake_run_all)
    monkeypatch.setattr(script, "VARIANTS", [("f32", 32, 256, 16), ("f32", 32, 64, 16)])
    monkeypatch.setattr(script, "DOT_VARIANTS", [("f16", 32, 64, 16)])
    monkeypatch.setattr(script, "LOCAL_TYPES", ("f32", "f16"))
    script.fit(1, missing=True)
    new = json.loads(out.read_text())
    assert {k for k in ran if not k.startswith("local-")} == {
        "f32-32x64-k16-256x512x640", "f32-32x64-k16-256x512x1280", "f32-32x64-k16-1024x512x640"}
    assert "f32 32x64 k16" in new["variants"]
    assert {k: v for k, v in new["variants"].items() if k != "f32 32x64 k16"} == old["variants"]
    assert new["reduce_efficiency"] == old["reduce_efficiency"]
    assert "f16" in new["local_reduce_cycles_per_row"]
    assert new["local_reduce_cycles_per_row"]["i8"] == old["local_reduce_cycles_per_row"]["i8"]
