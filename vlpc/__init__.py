"""vlpc: a GEMM compiler for AMD GCN (gfx906) on xDSL, with the A operand in SGPRs.

Python API::

    import vlpc
    result = vlpc.compile(open("gemm.mlir").read(), target="gfx906")
    result.asm, result.code_object, result.kernel().plan(m, n, k)   # the launches of the plan
    passes = vlpc.pipeline("gfx906", macro_tile=(64, 128))   # xDSL ModulePass objects
    r = vlpc.run(text, a, b, c)          # compile, launch (emulator by default), verify
    r.c, r.plan, r.stats, r.max_abs_error

Inputs: the ``gemm`` dialect, linalg matrix products on memrefs, or an upstream
MLIR module (:mod:`vlpc.interop`).  ``vlpc.run`` is :func:`vlpc.api.run` (the ``vlpc run``
command's module is :mod:`vlpc.commands.run`); ``vlpc.profile``
is :func:`vlpc.profiler.profile` (modeled per-instruction stalls, docs/profile.md), e.g.
``vlpc.profile("k.hsaco", grid=4, block=64, args=["0=250", "1=2.0", "2=random:1000", "3=zeros:1000"])``.

The runtime (code objects, the GCN emulator, HIP) is :mod:`vlpc.runtime`.
"""


# In the source tree dialects/, passes/ and runtime/ sit next to this folder (pyproject's package-dir
# installs them as vlpc.dialects...).  When this folder is imported from the repository root (python
# started there, cwd first on sys.path, shadowing an installed vlpc), find the submodules there too.
import os as _os  # noqa: E402

_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "dialects")) and all(
        _os.path.isfile(_os.path.join(_root, d, "__init__.py")) for d in ("dialects", "passes", "runtime")):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
del _os, _root

from vlpc.version import __version__  # noqa: E402

# The public names load on first use (PEP 562), so that `import vlpc` and `vlpc --help` import
# neither xDSL nor NumPy nor any dialect or pass: see _LAZY.  The functions `vlpc.pipeline` and
# `vlpc.profile` live in vlpc/compiler.py and vlpc/profiler.py: no submodule has their names, so
# importing one never rebinds them.
_LAZY = {
    "compile": "vlpc.compiler", "compile_file": "vlpc.compiler", "parse": "vlpc.compiler", "pipeline": "vlpc.compiler",
    "pipeline_options": "vlpc.compiler", "pipeline_spec": "vlpc.compiler", "profile": "vlpc.profiler",
    "CompiledKernel": "vlpc.kernel", "CompiledModule": "vlpc.kernel", "LaunchConfig": "vlpc.kernel",
    "RunResult": "vlpc.api", "VerificationError": "vlpc.api", "DiagnosticError": "vlpc.errors",
    "VlpcError": "vlpc.errors", "run": "vlpc.api",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vlpc' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["CompiledKernel", "CompiledModule", "DiagnosticError", "LaunchConfig", "RunResult", "VerificationError",
           "VlpcError", "compile", "compile_file", "parse", "pipeline", "pipeline_options", "pipeline_spec", "profile", "run", "__version__"]
