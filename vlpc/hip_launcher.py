"""``vlpc compile --emit hip-launcher``: a C header and source that run a compiled plan through HIP.

A C or C++ host (llama.cpp-style) gets what :meth:`vlpc.kernel.CompiledKernel.execute` does
for Python, with no Python at run time: ``-o gemm_launch`` (the stem; a ``.h`` or ``.c``
suffix is dropped) writes ``gemm_launch.h`` and ``gemm_launch.c``.  The source embeds the
code object (one ELF holding every kernel of the module: main kernels and their plan
companions) as a byte array and, per main kernel ``NAME``, defines::

    hipError_t vlpc_NAME_launch(const void *A, const void *B, void *C, int M, int N, int K,
                                int lda, int ldb, int ldc, T alpha, T beta, hipStream_t stream);
    hipError_t vlpc_NAME_launch_workspace(..., T beta, void *workspace, size_t workspace_bytes,
                                          hipStream_t stream);
    hipError_t vlpc_NAME_plan(int M, int N, int K, int lda, int ldb, int ldc,
                              vlpc_plan_step steps[VLPC_MAX_STEPS], int *nsteps, size_t *workspace_bytes);

``T`` is the type of the kernel's ``alpha``/``beta`` arguments: ``float`` (f32, f16 and
dequantized int8 products), ``double`` (f64), ``int`` (int8 -> i32).  Sizes and leading
dimensions are in elements of the stored, row-major matrices, as in :func:`vlpc.run`.

``_launch`` checks the sizes (the values the IR fixed, at least 1, the leading dimensions'
minimum, the row-narrow companion an M below the macro tile needs, whole tiles for a kernel
without edge handling, the 32-bit byte offsets and the dot kernels' 4-byte row alignment:
``hipErrorInvalidValue`` before any HIP call), loads the module on the current device once
(``hipModuleLoadData`` on the embedded bytes, ``hipModuleGetFunction`` per kernel; no device:
``hipErrorNoDevice`` from ``hipGetDeviceCount``), allocates the plan's workspace
(``hipMalloc``, zeroed with ``hipMemsetAsync`` as vlpc's devices zero every allocation),
launches every kernel of :meth:`~vlpc.kernel.CompiledKernel.plan` in order on ``stream`` with
``hipModuleLaunchKernel`` (the kernarg segment packed at the offsets of the code object's
metadata, ``HIP_LAUNCH_PARAM_BUFFER_POINTER``), then waits for the stream and frees the
workspace.  ``_launch_workspace`` takes a caller's workspace instead (at least the bytes
``_plan`` gives; nothing is allocated and nothing waits).  Every HIP status other than
``hipSuccess`` is returned as it is.

The plan logic (grids, the row-narrow choice, workspace bytes) is generated from the
compiled kernels' launch information and tested against
:meth:`~vlpc.kernel.CompiledKernel.plan` / :meth:`~vlpc.kernel.CompiledKernel.workspace_bytes`
(``tests/runtime/test_hip_launcher.py``).  A kernel compiled with launch-time plan variants
(:mod:`vlpc.launch_variants`) is launched as its first kernel, correct for every size: the
per-launch choice of a variant by the plan model is the Python runtime's only.  Kernels taking more than A, B, C, M, N, K, lda, ldb, ldc,
alpha, beta and the workspace (strided batches, bias epilogues, W8A8 scales) are refused with
a :class:`~vlpc.errors.VlpcError`: run those through :func:`vlpc.run` /
:meth:`~vlpc.kernel.CompiledKernel.execute`.  See ``docs/hip.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

from vlpc.errors import VlpcError
from vlpc.kernel import CompiledKernel, CompiledModule

#: The explicit kernel arguments the launcher passes, by metadata name.
POINTERS = ("A", "B", "C", "workspace")
INTS = ("M", "N", "K", "lda", "ldb", "ldc")
SCALARS = ("alpha", "beta")
#: C types of ``alpha``/``beta`` by the metadata's ``.type_name`` and ``.size``.
SCALAR_TYPES = {("float", 4): "float", ("double", 8): "double", ("int", 4): "int"}
#: Bytes per element (A/B types and C types).
ELEMENT_BYTES = {"f16": 2, "f32": 4, "f64": 8, "i8": 1, "i32": 4}
#: Most launches a plan makes (copies of A and B, the main kernel, its reduce or scale kernel).
MAX_STEPS = 4
#: The kernels' 32-bit byte offsets (``vlpc.dialects.gemm.BYTE_OFFSET_LIMIT``).
OFFSET_LIMIT = 2 ** 32


def output_paths(output: str) -> tuple[Path, Path]:
    """The header and source of ``-o output``: ``output`` names the stem (``gemm_launch`` ->
    ``gemm_launch.h``, ``gemm_launch.c``); a ``.h`` or ``.c`` suffix is dropped first."""
    p = Path(output)
    if p.suffix in (".h", ".c"):
        p = p.with_suffix("")
    if not p.name or p.name in (".", ".."):
        raise VlpcError(f"-o {output}: --emit hip-launcher needs a file stem such as gemm_launch "
                        "(it writes STEM.h and STEM.c)")
    return p.with_name(p.name + ".h"), p.with_name(p.name + ".c")


def c_identifier(name: str) -> str:
    """A C identifier for a kernel's symbol name (other characters become ``_``)."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return ident if not ident[:1].isdigit() else "_" + ident


def _plan_kernels(k: CompiledKernel) -> list[CompiledKernel]:
    """Every kernel a plan of ``k`` may launch: its plan's and its row-narrow companions."""
    names = [x for x in str(k.launch_info.get("plan", k.name)).split(",") if x]
    names += [x for x in str(k.launch_info.get("small_m", "")).split(",") if x and x in k.companions]
    out = []
    for n in names:
        kern = k if n == k.name else k.companions[n]
        if kern not in out:
            out.append(kern)
    return out


def _check_supported(k: CompiledKernel) -> str:
    """The C type of alpha/beta; a :class:`VlpcError` for a kernel the launcher cannot run."""
    if k.launch_info.get("batch", 0) != 0:
        raise VlpcError(f"--emit hip-launcher: kernel {k.name} is a strided batched GEMM; the launcher runs "
                        "plain GEMMs (run batches through vlpc.run or CompiledKernel.execute)")
    scalar = None
    for kern in _plan_kernels(k):
        for a in kern.kernargs:
            name, kind, size = a.get(".name"), a.get(".value_kind"), a.get(".size")
            if str(kind).startswith("hidden_"):  # left 0: a persistent GEMV then strides by N / rows, its grid here
                continue
            if name in POINTERS and kind == "global_buffer" and size == 8:
                continue
            if name in INTS and kind == "by_value" and size == 4:
                continue
            if name in SCALARS and kind == "by_value":
                t = SCALAR_TYPES.get((a.get(".type_name"), size))
                if t is not None and scalar in (None, t):
                    scalar = t
                    continue
            raise VlpcError(f"--emit hip-launcher: kernel {kern.name} takes argument '{name}' ({kind}, "
                            f"{a.get('.type_name')}, {size} bytes); the launcher passes A, B, C, M, N, K, lda, ldb, "
                            "ldc, alpha, beta and the workspace only (bias epilogues, W8A8 scales and batches: "
                            "run them through vlpc.run or CompiledKernel.execute)")
    if scalar is None:  # alpha and beta both fixed by the IR: the C signature takes f32's
        scalar = {"f64": "double", "i8": "int" if k.launch_info.get("c_dtype", "i32") == "i32" else "float"}.get(
            str(k.launch_info.get("dtype", "f32")), "float")
    return scalar


def _launch_args(t: str) -> str:
    return (f"const void *A, const void *B, void *C, int M, int N, int K, int lda, int ldb, int ldc, "
            f"{t} alpha, {t} beta")


def _header(module: CompiledModule, guard: str, unload: str, entries: list[tuple[str, str]]) -> str:
    out = [f"/* Generated by vlpc (vlpc compile --emit hip-launcher) for {module.target_id}: do not edit.",
           " * Runs vlpc's compiled GEMM plans through HIP's module API (docs/hip.md). */",
           f"#ifndef {guard}", f"#define {guard}", "",
           "#include <stddef.h>",
           "#include <hip/hip_runtime_api.h>", "",
           "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
           "/* One launch of a plan: the kernel's symbol, its grid (workgroups) and block (work-items). */",
           "typedef struct vlpc_plan_step {", "    const char *kernel;", "    unsigned grid[3];",
           "    unsigned block[3];", "} vlpc_plan_step;", "",
           f"#define VLPC_MAX_STEPS {MAX_STEPS}", ""]
    for ident, t in entries:
        out += [f"/* {ident}: sizes in elements of the row-major matrices as stored (vlpc.run's convention). */",
                f"hipError_t vlpc_{ident}_plan(int M, int N, int K, int lda, int ldb, int ldc,",
                "        vlpc_plan_step steps[VLPC_MAX_STEPS], int *nsteps, size_t *workspace_bytes);",
                f"hipError_t vlpc_{ident}_launch({_launch_args(t)}, hipStream_t stream);",
                f"hipError_t vlpc_{ident}_launch_workspace({_launch_args(t)},",
                "        void *workspace, size_t workspace_bytes, hipStream_t stream);", ""]
    out += ["/* Unload the module from every device it was loaded on (hipModuleUnload). */",
            f"hipError_t vlpc_{unload}_unload(void);", "",
            "#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(out)


def _bytes_array(data: bytes) -> str:
    rows = []
    for i in range(0, len(data), 20):
        rows.append("    " + ",".join(f"0x{b:02x}" for b in data[i:i + 20]) + ",")
    return "\n".join(rows)


def _plan_function(k: CompiledKernel, ident: str) -> str:
    """The C body of ``vlpc_<ident>_plan``: :meth:`CompiledKernel.check_sizes`,
    :meth:`~CompiledKernel.plan`, :meth:`~CompiledKernel.workspace_bytes` and the offset
    checks of :func:`vlpc.dialects.gemm.offset_errors`, specialised to ``k``."""
    li = k.launch_info
    lay = k.layout
    dtype = str(li.get("dtype", "f32"))
    c_dtype = str(li.get("c_dtype", dtype))
    esz, c_esz = ELEMENT_BYTES[dtype], ELEMENT_BYTES[c_dtype]
    ws_esz = 8 if dtype == "f64" else 4
    pre, bpre = k.transpose_kernel(), k.b_copy_kernel()
    L = ["    long long m = M, n = N, k = K, a_rows, a_cols, b_rows, b_cols;",
         "    size_t ws = 0;", "    int s = 0, i;", "    unsigned mx, my;",
         "    if (M < 1 || N < 1 || K < 1 || lda < 1 || ldb < 1 || ldc < 1) return hipErrorInvalidValue;"]
    for dim in ("M", "N", "K", "lda", "ldb", "ldc"):  # values the IR fixed (check_static)
        static = li.get(f"static_{dim.lower()}", -1)
        if static is not None and static >= 0:
            L.append(f"    if ({dim} != {static}) return hipErrorInvalidValue;  /* static in the IR */")
    ldb_min = 'N' if lay[1] == 'N' else 'K'
    if li.get("b_format") and li.get("static_k", -1) >= 0:  # quantized B: N rows of the format's bytes
        from vlpc.dialects.gemm import quant_row_bytes
        ldb_min = str(quant_row_bytes(str(li["b_format"]), int(li["static_k"])))
    L.append(f"    if (lda < {'K' if lay[0] == 'N' else 'M'} || ldb < {ldb_min} || ldc < N) "
             "return hipErrorInvalidValue;")
    if li.get("full_tiles_only"):
        L.append(f"    if (M % {li['macro_m']} || N % {li['macro_n']} || K % {li['k_step']}) return hipErrorInvalidValue;")
    pack = {"f16": 2, "i8": 4}.get(dtype, 1)
    if pack > 1:  # the dot kernels' packed loads: rows start on 4-byte boundaries (offset_errors)
        if lay[0] == "N" and pre is None:
            L.append(f"    if (lda % {pack}) return hipErrorInvalidValue;")
        if lay[1] == "T" and bpre is None:
            L.append(f"    if (ldb % {pack}) return hipErrorInvalidValue;")
    L += [f"    a_rows = {'m' if lay[0] == 'N' else 'k'}; a_cols = {'k' if lay[0] == 'N' else 'm'};",
          f"    b_rows = {'k' if lay[1] == 'N' else 'n'}; b_cols = {'n' if lay[1] == 'N' else 'k'};",
          f"    if ((long long)lda * {esz} >= {OFFSET_LIMIT}LL || ((a_rows - 1) * lda + a_cols) * {esz} > {OFFSET_LIMIT}LL"
          f" || (long long)ldb * {esz} >= {OFFSET_LIMIT}LL || ((b_rows - 1) * ldb + b_cols) * {esz} > {OFFSET_LIMIT}LL"
          f" || (long long)ldc * {c_esz} >= {OFFSET_LIMIT}LL || ((m - 1) * ldc + n) * {c_esz} > {OFFSET_LIMIT}LL)",
          "        return hipErrorInvalidValue;  /* the kernels' 32-bit byte offsets */",
          f"    mx = (unsigned)((n + {li['macro_n']} - 1) / {li['macro_n']}); "
          f"my = (unsigned)((m + {li['macro_m']} - 1) / {li['macro_m']});"]

    def step(kern: CompiledKernel, grid: tuple[str, str, str], wg: int) -> list[str]:
        return [f'    steps[s].kernel = "{kern.name}"; steps[s].grid[0] = {grid[0]}; steps[s].grid[1] = {grid[1]}; '
                f"steps[s].grid[2] = {grid[2]};",
                f"    steps[s].block[0] = {wg}; steps[s].block[1] = 1; steps[s].block[2] = 1; s++;"]

    copies: dict[str, list[str]] = {}
    first: list[str] = []
    for c, rows_of in ((pre, "m"), (bpre, "n")):
        if c is not None:
            pli = c.launch_info
            copies[c.name] = step(c, (f"(unsigned)(({rows_of} + {pli['tile_m']} - 1) / {pli['tile_m']})",
                                      f"(unsigned)((k + {pli['tile_k']} - 1) / {pli['tile_k']})", "1"),
                                  pli["workgroup_size"])
            first += copies[c.name]
    # the workspace (CompiledKernel.workspace_bytes)
    if pre is None and bpre is None:
        ws_main = (f"    ws = (size_t){k.split_k} * (size_t)m * (size_t)ldc * {ws_esz};"
                   if k.split_mode == "workspace" else "")
        ws_rows = ""
    else:
        pli = (pre or bpre).launch_info
        kp = int(pli["k_pack"])
        rows = " + ".join(x for x, c in (("m", pre), ("n", bpre)) if c is not None)
        partial = (f"(size_t){int(pli['ws_split'])} * (size_t)m * (size_t)ldc * {ws_esz} + "
                   if int(pli["ws_split"]) > 1 else "")
        ws_main = (f"    ws = {partial}(size_t)({rows}) * (size_t)((k + {kp} - 1) / {kp} * {kp}) * "
                   f"{1 if pli['dtype'] == 'i8' else 2};")
        if "pack_bytes" in pli:  # the activations' quantization: bytes a row and pack of K (passes/isel/quant_act.py)
            ws_main = f"    ws = (size_t)({rows}) * (size_t)((k + {kp} - 1) / {kp}) * {int(pli['pack_bytes'])};"
        ws_rows = ws_main
    # the row-narrow companions (CompiledKernel.rows_kernel), most rows first
    small = sorted((k.companions[x] for x in str(li.get("small_m", "")).split(",") if x in k.companions
                    and k.companions[x].launch_info["macro_m"] > 0), key=lambda c: -c.launch_info["macro_m"])
    if li.get("static_m", 0) < 0:
        L.append(f"    if (M < {li['macro_m']}) {{  /* a row-narrow companion alone, unsplit */")
        for c in small:
            cli = c.launch_info
            L.append(f"        if (M >= {cli['macro_m']}) {{")
            L += ["        " + x for x in first]
            L += ["        " + x for x in step(c, (f"(unsigned)((n + {cli['macro_n']} - 1) / {cli['macro_n']})",
                                                    f"(unsigned)((m + {cli['macro_m']} - 1) / {cli['macro_m']})",
                                                    str(c.split_k)), cli["workgroup_size"])]
            if ws_rows:
                L.append("        " + ws_rows)
            L.append("            goto planned;")
            L.append("        }")
        L.append("        return hipErrorInvalidValue;  /* no row-narrow companion for this M */")
        L.append("    }")
    for name in str(li.get("plan", k.name)).split(","):
        if name == k.name:
            L += step(k, ("mx", "my", str(k.split_k)), li["workgroup_size"])
        elif name in copies:
            L += copies[name]
        else:
            other = k.companions[name]
            L += step(other, ("mx", "my", "1"), other.launch_info["workgroup_size"])
    if ws_main:
        L.append(ws_main)
    L += (["planned:"] if small and li.get("static_m", 0) < 0 else []) + [
          f"    if (ws >= {OFFSET_LIMIT}ULL) return hipErrorInvalidValue;  /* 32-bit byte offsets of the workspace */",
          "    for (i = 0; i < s; i++)  /* HIP's grid limit: grid x block work-items in 32 bits */",
          "        if ((unsigned long long)steps[i].grid[0] * steps[i].block[0] > 0xffffffffULL"
          " || (unsigned long long)steps[i].grid[1] * steps[i].block[1] > 0xffffffffULL"
          " || (unsigned long long)steps[i].grid[2] * steps[i].block[2] > 0xffffffffULL) return hipErrorInvalidValue;",
          "    *nsteps = s;", "    *workspace_bytes = ws;", "    return hipSuccess;"]
    body = "\n".join(L)
    return (f"hipError_t vlpc_{ident}_plan(int M, int N, int K, int lda, int ldb, int ldc,\n"
            f"        vlpc_plan_step steps[VLPC_MAX_STEPS], int *nsteps, size_t *workspace_bytes)\n{{\n{body}\n}}\n")


def _pack_function(kern: CompiledKernel, ident: str, idx: int) -> str:
    """``vlpc_pack_<ident>_<idx>``: the kernarg segment of ``kern`` (explicit arguments at the
    metadata's offsets, as :func:`vlpc.runtime.kernargs.pack_kernargs` lays them out) from the
    launch's ``vlpc_<ident>_args``."""
    size = int(kern.metadata.get(".kernarg_segment_size", 0))
    lines = [f"static void vlpc_pack_{ident}_{idx}(unsigned char *kernargs, const vlpc_{ident}_args *a)", "{",
             f"    memset(kernargs, 0, {max(size, 1)});"]
    for arg in kern.kernargs:
        if str(arg.get(".value_kind", "")).startswith("hidden_"):  # (the memset's 0)
            continue
        name, off = arg[".name"], int(arg[".offset"])
        field = "ws" if name == "workspace" else name
        lines.append(f"    memcpy(kernargs + {off}, &a->{field}, sizeof a->{field});  /* {name} */")
    lines.append("}")
    return "\n".join(lines) + "\n"


def generate(module: CompiledModule, stem: str, source: str = "") -> tuple[str, str]:
    """(header text, source text) of the launcher for every kernel of ``module``; ``stem``
    is the header's file name without ``.h`` (the source includes it); ``source`` names the
    input in the comment.  Raises :class:`VlpcError` for kernels it cannot launch."""
    unload = c_identifier(Path(stem).name)
    guard = unload.upper() + "_H"
    entries, kernels = [], []
    idents: dict[str, str] = {}
    for k in module.kernels.values():
        ident = c_identifier(k.name)
        if ident in idents:
            raise VlpcError(f"--emit hip-launcher: kernels {idents[ident]} and {k.name} have the same C name "
                            f"vlpc_{ident}_launch")
        idents[ident] = k.name
        entries.append((ident, _check_supported(k)))
        kernels.append(k)
    all_kernels: list[CompiledKernel] = []
    for k in kernels:
        for kern in _plan_kernels(k):
            if kern.name not in [x.name for x in all_kernels]:
                all_kernels.append(kern)
    index = {kern.name: i for i, kern in enumerate(all_kernels)}
    seg = max(int(kern.metadata.get(".kernarg_segment_size", 0)) for kern in all_kernels)
    src = [f"/* Generated by vlpc (vlpc compile --emit hip-launcher) from {source or 'MLIR'} for "
           f"{module.target_id}: do not edit.",
           " * The code object is vlpc's output; see docs/hip.md. */",
           f'#include "{Path(stem).name}.h"', "",
           "#include <string.h>", "",
           f"/* The code object (ELF, {len(module.code_object)} bytes): every kernel below. It stays at this address",
           " * while loaded: the HIP runtime keeps the pointer without copying. */",
           f"static const unsigned char vlpc_code_object[{len(module.code_object)}] __attribute__((aligned(4096))) = {{",
           _bytes_array(module.code_object), "};", "",
           f"#define VLPC_KERNELS {len(all_kernels)}",
           "#define VLPC_MAX_DEVICES 64",
           "static const char *const vlpc_kernel_names[VLPC_KERNELS] = {"
           + ", ".join(f'"{kern.name}"' for kern in all_kernels) + "};",
           "static hipModule_t vlpc_modules[VLPC_MAX_DEVICES];",
           "static hipFunction_t vlpc_functions[VLPC_MAX_DEVICES][VLPC_KERNELS];", "",
           "/* The module on the current device, loaded on first use (not thread-safe: load it once from one",
           " * thread, e.g. by a first launch, before launching from several). */",
           "static hipError_t vlpc_load(hipFunction_t **functions)",
           "{",
           "    int dev = -1, count = 0, i;",
           "    hipError_t e = hipGetDevice(&dev);",
           "    if (e != hipSuccess) {  /* no usable device: hipGetDeviceCount says why (hipErrorNoDevice) */",
           "        hipError_t c = hipGetDeviceCount(&count);",
           "        return c != hipSuccess ? c : (count == 0 ? hipErrorNoDevice : e);",
           "    }",
           "    if (dev < 0 || dev >= VLPC_MAX_DEVICES) return hipErrorInvalidDevice;",
           "    if (vlpc_modules[dev] == NULL) {",
           "        hipModule_t mod;",
           "        e = hipModuleLoadData(&mod, vlpc_code_object);",
           "        if (e != hipSuccess) return e;",
           "        for (i = 0; i < VLPC_KERNELS; i++) {",
           "            e = hipModuleGetFunction(&vlpc_functions[dev][i], mod, vlpc_kernel_names[i]);",
           "            if (e != hipSuccess) {",
           "                (void)hipModuleUnload(mod);",
           "                return e;",
           "            }",
           "        }",
           "        vlpc_modules[dev] = mod;",
           "    }",
           "    *functions = vlpc_functions[dev];",
           "    return hipSuccess;",
           "}", "",
           f"hipError_t vlpc_{unload}_unload(void)",
           "{",
           "    hipError_t first = hipSuccess;",
           "    int d;",
           "    for (d = 0; d < VLPC_MAX_DEVICES; d++) {",
           "        if (vlpc_modules[d] != NULL) {",
           "            int prev = 0;",
           "            hipError_t e = hipGetDevice(&prev);",
           "            if (e == hipSuccess) e = hipSetDevice(d);",
           "            if (e == hipSuccess) e = hipModuleUnload(vlpc_modules[d]);",
           "            (void)hipSetDevice(prev);",
           "            if (e == hipSuccess) vlpc_modules[d] = NULL;",
           "            else if (first == hipSuccess) first = e;",
           "        }",
           "    }",
           "    return first;",
           "}", "",
           "#ifdef VLPC_LAUNCHER_DRY_RUN  /* a test hook: called instead of hipModuleLaunchKernel, no module loaded */",
           "hipError_t VLPC_LAUNCHER_DRY_RUN(const char *kernel, const unsigned grid[3], const unsigned block[3],",
           "                                 const unsigned char *kernargs, size_t size);",
           "#endif", "",
           "static int vlpc_kernel_index(const char *name)",
           "{",
           "    int i;",
           "    for (i = 0; i < VLPC_KERNELS; i++)",
           "        if (strcmp(vlpc_kernel_names[i], name) == 0) return i;",
           "    return -1;",
           "}", ""]
    for k, (ident, t) in zip(kernels, entries):
        sub = _plan_kernels(k)
        src += [f"/* ---- {k.name}: plan {_plan_text(k)} ---- */",
                "typedef struct {",
                "    const void *A, *B;", "    void *C, *ws;",
                "    int M, N, K, lda, ldb, ldc;",
                f"    {t} alpha, beta;",
                f"}} vlpc_{ident}_args;", ""]
        for kern in sub:
            src.append(_pack_function(kern, ident, index[kern.name]))
        src.append(_plan_function(k, ident))
        fixed = [f"{x} != ({t}){getattr(k, x)!r}" for x in SCALARS if getattr(k, x) is not None]
        src += [f"hipError_t vlpc_{ident}_launch_workspace({_launch_args(t)},",
                "        void *workspace, size_t workspace_bytes, hipStream_t stream)",
                "{",
                "    vlpc_plan_step steps[VLPC_MAX_STEPS];",
                f"    vlpc_{ident}_args a;",
                f"    unsigned char kernargs[{max(seg, 1)}] __attribute__((aligned(16)));",
                "    size_t need = 0, size;",
                "    hipFunction_t *fn;",
                "    int nsteps = 0, i;",
                f"    hipError_t e = vlpc_{ident}_plan(M, N, K, lda, ldb, ldc, steps, &nsteps, &need);",
                "    if (e != hipSuccess) return e;",
                "    if (need > 0 && (workspace == NULL || workspace_bytes < need)) return hipErrorInvalidValue;"]
        if fixed:
            src.append(f"    if ({' || '.join(fixed)}) return hipErrorInvalidValue;  /* fixed by the IR */")
        src += ["    if ((A == NULL || B == NULL || C == NULL)) return hipErrorInvalidValue;",
                "#ifdef VLPC_LAUNCHER_DRY_RUN",
                "    fn = NULL;",
                "#else",
                "    e = vlpc_load(&fn);",
                "    if (e != hipSuccess) return e;",
                "#endif",
                "    a.A = A; a.B = B; a.C = C; a.ws = workspace;",
                "    a.M = M; a.N = N; a.K = K; a.lda = lda; a.ldb = ldb; a.ldc = ldc;",
                "    a.alpha = alpha; a.beta = beta;",
                "    for (i = 0; i < nsteps; i++) {",
                "        int which = vlpc_kernel_index(steps[i].kernel);",
                "        void *extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, kernargs, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,",
                "                         HIP_LAUNCH_PARAM_END};",
                "        switch (which) {"]
        for kern in sub:
            j = index[kern.name]
            src += [f"        case {j}: vlpc_pack_{ident}_{j}(kernargs, &a); "
                    f"size = {int(kern.metadata.get('.kernarg_segment_size', 0))}; break;"]
        src += ["        default: return hipErrorInvalidValue;",
                "        }",
                "#ifdef VLPC_LAUNCHER_DRY_RUN",
                "        (void)fn; (void)extra; (void)stream;",
                "        e = VLPC_LAUNCHER_DRY_RUN(steps[i].kernel, steps[i].grid, steps[i].block, kernargs, size);",
                "#else",
                "        e = hipModuleLaunchKernel(fn[which], steps[i].grid[0], steps[i].grid[1], steps[i].grid[2],",
                "                                  steps[i].block[0], steps[i].block[1], steps[i].block[2], 0, stream, NULL, extra);",
                "#endif",
                "        if (e != hipSuccess) return e;",
                "    }",
                "    return hipSuccess;",
                "}", "",
                f"hipError_t vlpc_{ident}_launch({_launch_args(t)}, hipStream_t stream)",
                "{",
                "    vlpc_plan_step steps[VLPC_MAX_STEPS];",
                "    size_t ws_bytes = 0;",
                "    void *ws = NULL;",
                "    int nsteps = 0;",
                "    hipFunction_t *fn;",
                f"    hipError_t e = vlpc_{ident}_plan(M, N, K, lda, ldb, ldc, steps, &nsteps, &ws_bytes), e2;",
                "    if (e != hipSuccess) return e;",
                "    if (ws_bytes == 0)",
                f"        return vlpc_{ident}_launch_workspace(A, B, C, M, N, K, lda, ldb, ldc, alpha, beta, NULL, 0, stream);",
                "    e = vlpc_load(&fn);  /* (no device: its status, before any allocation) */",
                "    if (e != hipSuccess) return e;",
                "    e = hipMalloc(&ws, ws_bytes);",
                "    if (e != hipSuccess) return e;",
                "    e = hipMemsetAsync(ws, 0, ws_bytes, stream);",
                "    if (e == hipSuccess)",
                f"        e = vlpc_{ident}_launch_workspace(A, B, C, M, N, K, lda, ldb, ldc, alpha, beta, ws, ws_bytes, stream);",
                "    e2 = hipStreamSynchronize(stream);  /* the workspace is freed after the plan has run */",
                "    if (e == hipSuccess) e = e2;",
                "    e2 = hipFree(ws);",
                "    return e != hipSuccess ? e : e2;",
                "}", ""]
    return _header(module, guard, unload, entries), "\n".join(src)


def _plan_text(k: CompiledKernel) -> str:
    """The kernels of ``k``'s plan, in order, for a comment."""
    return str(k.launch_info.get("plan", k.name)).replace(",", " -> ")


def write_launcher(module: CompiledModule, output: str, source: str = "") -> tuple[Path, Path]:
    """Write the launcher of ``module`` as ``output``'s header and source (:func:`output_paths`);
    both are generated before either is written, and each is replaced atomically."""
    from vlpc.cli_support import write_atomic

    header_path, source_path = output_paths(output)
    header, src = generate(module, str(header_path.with_suffix("")), source)
    write_atomic(str(header_path), header)
    write_atomic(str(source_path), src)
    return header_path, source_path


__all__ = ["c_identifier", "generate", "output_paths", "write_launcher"]
