"""Code generation options and kernel-cache records, without xDSL (issue 18, compile speed).

:class:`Options` (the options of :func:`vlpc.compile` / :func:`vlpc.compiler.pipeline`, see
:mod:`vlpc.compiler`), the kernel cache's key of a compilation (:func:`cache_key`) and the
:class:`~vlpc.kernel.CompiledModule` of a cached build record (:func:`module_from_record`)
live here so that a cache hit (:func:`cached`; ``vlpc compile`` looks there first) imports
neither xDSL nor any dialect or pass: those are a quarter of a second of every command.
:mod:`vlpc.compiler` re-exports them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from vlpc.cache import make_key, open_cache, toolchain_fingerprint, vlpc_fingerprint
from vlpc.errors import VlpcError
from vlpc.kernel import CompiledKernel, CompiledModule
from vlpc.targets import GFX906


@dataclass
class Options:
    """Code generation options (see :mod:`vlpc.compiler`'s docstring)."""

    macro_tile: tuple[int, int] | None = None  # None: 64x256 for f32, 32x256 for f64
    micro_tile: tuple[int, int] | None = None  # None: 64x1 for f32, 32x1 for f64
    k_step: int | None = None  # None: 16 for f32, 8 for f64
    waves_per_simd: int | None = None  # None: vlpc.compiler.DEFAULT_WAVES_PER_SIMD[strategy]
    split_k: int | str = "auto"
    strategy: str = "sqc"
    split_mode: str = "workspace"
    local_split: int = 1
    cus: int | None = None
    gpu: str | None = None  # board the automatic plan is modeled on (mi50, mi60; None: the target's smallest)
    code_object_version: int = 5  # 4: for ROCm releases before 5.3 (gcn-emit-descriptor)
    schedule: str = "default"  # strategy sqc: "default", "cover" or "seed" (the seed's 64x256 loop; no split-K)
    forwarding: bool = True  # False: K-major FMAs, no accumulator forwarding (the seed's sum_no_reuse)
    # f16/int8 with A stored K x M: "auto" (passes/isel/transpose.py's rule), "pre" (copy A
    # first), "in-kernel" (SALU packing where the kernel can do it, else the copy)
    a_transpose: str = "auto"
    # the grouped workgroup order's group height in tile rows (gemm-tile's wg-group; None: automatic, 1: off)
    wg_group: int | None = None

    @staticmethod
    def from_kwargs(kwargs: dict) -> Options:
        known = {f for f in Options.__dataclass_fields__}
        unknown = set(kwargs) - known
        if unknown:
            raise VlpcError(f"unknown option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
        o = Options(**kwargs)
        o.macro_tile = parse_tile(o.macro_tile, "macro_tile")
        o.micro_tile = parse_tile(o.micro_tile, "micro_tile")
        for name in ("k_step", "waves_per_simd", "wg_group"):
            value = getattr(o, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                if name == "waves_per_simd" and isinstance(value, int) and not isinstance(value, bool):
                    raise VlpcError(f"waves-per-simd={value}: {GFX906.name} runs 1 to "
                                    f"{GFX906.max_waves_per_simd} waves per SIMD")
                raise VlpcError(f"{name} must be a positive integer, got {value!r}")
        return o


def parse_tile(value, name: str = "macro_tile") -> tuple[int, int] | None:
    """A tile given as ``"MxN"`` (``"64x128"``), a pair of ints, or None (the default).

    Raises :class:`VlpcError` for anything else (e.g. ``"64*128"``, ``(64,)``, ``(0, 128)``)."""
    if value is None:
        return None
    pair = value
    if isinstance(value, str):
        parts = value.lower().replace(" ", "").split("x")
        pair = tuple(int(x) for x in parts) if len(parts) == 2 and all(x.isdigit() for x in parts) else None
    elif isinstance(value, list | tuple) and len(value) == 2 and not any(isinstance(x, bool) for x in value):
        try:
            pair = (operator.index(value[0]), operator.index(value[1]))
        except TypeError:
            pair = None
    else:
        pair = None
    if pair is None or min(pair) < 1:
        raise VlpcError(f"{name} must be 'MxN' (e.g. '64x256') or a pair of positive integers, got {value!r}")
    return pair  # type: ignore[return-value]


def cache_key(text: str, target: str, filename: str, toolchain, options: dict):
    """(key, toolchain) of a compilation in the kernel cache (see :mod:`vlpc.cache`)."""
    import dataclasses

    from vlpc.runtime.toolchain import find_toolchain

    o = Options.from_kwargs(options)  # unknown option names are refused before any lookup
    tc = toolchain or find_toolchain()
    key = make_key(ir=text, filename=filename, target=target, options=dataclasses.asdict(o),
                   vlpc=vlpc_fingerprint(), toolchain=toolchain_fingerprint(tc))
    return key, tc


def module_from_record(record: dict) -> CompiledModule:
    """The :class:`CompiledModule` of a build record (fresh, or from the kernel cache)."""
    asm, code = record["asm"], record["code_object"]
    result = CompiledModule(asm, code, record["target_id"], toolchain=record["toolchain"])
    companions: dict[str, CompiledKernel] = {}
    for k in record["kernels"]:
        meta, li = k["metadata"], k["launch_info"]
        ck = CompiledKernel(k["name"], meta, li, k["vgprs"], meta[".sgpr_count"], asm, code, result.target_id)
        if "role" in li:  # a companion (split-K plan, small M): reached through its main kernel
            companions[k["name"]] = ck
        else:
            result.kernels[k["name"]] = ck
    # a main kernel's companions (and a launch-time variant's own: vlpc.launch_variants)
    for ck in [*result.kernels.values(), *(c for c in companions.values() if c.launch_info["role"] == "variant")]:
        names = [*str(ck.launch_info.get("plan", ck.name)).split(","),
                 *str(ck.launch_info.get("small_m", "")).split(","),
                 *str(ck.launch_info.get("variants", "")).split(",")]
        for name in names:
            if name and name != ck.name:
                ck.companions[name] = companions[name]
    # a row companion's own plan (the quantized prefill GEMM's pre-kernel: passes/isel/quant_gemm.py)
    for ck in companions.values():
        if ck.launch_info["role"] == "rows":
            for name in str(ck.launch_info.get("plan", "")).split(","):
                if name in companions and name != ck.name:
                    ck.companions[name] = companions[name]
    return result


def cached(text: str, target: str, filename: str, options: dict, cache: bool | None = None) -> CompiledModule | None:
    """The compiled module of MLIR ``text`` from the kernel cache, or None (not there, the cache
    is off (``cache=False``, ``$VLPC_CACHE=0``), or the record is of another layout).  Raises
    :class:`VlpcError` for unknown option names and for a cache directory that cannot be used,
    as :func:`vlpc.compile` does."""
    kc = open_cache(cache)
    if kc is None:
        return None
    record = kc.get(cache_key(text, target, filename, None, options)[0])
    if record is None:
        return None
    try:
        return module_from_record(record)
    except (KeyError, TypeError, ValueError):
        return None
