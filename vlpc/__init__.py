"""vlpc: a GEMM compiler for AMD GCN (gfx906) on xDSL, with the A operand in SGPRs.

Python API::

    import vlpc
    result = vlpc.compile(open("gemm.mlir").read(), target="gfx906")
    result.asm, result.code_object, result.kernel().launch(m, n, k)
    passes = vlpc.pipeline("gfx906", macro_tile=(64, 128))   # xDSL ModulePass objects
    r = vlpc.run(text, a, b, c)          # compile, launch (emulator by default), verify
    r.c, r.launch, r.stats, r.max_abs_error

Inputs: the ``gemm`` dialect, linalg matrix products on memrefs, or an upstream
MLIR module (:mod:`vlpc.interop`).  ``vlpc.run`` is :func:`vlpc.api.run`; the
``vlpc run`` command's module stays importable as ``from vlpc.run import ...``.

The runtime (code objects, the GCN emulator, HIP) is :mod:`vlpc.runtime`.
"""

__version__ = "0.1.0"

# In the source tree dialects/, passes/ and runtime/ sit next to this folder (pyproject's package-dir
# installs them as vlpc.dialects...).  When this folder is imported from the repository root (python
# started there, cwd first on sys.path, shadowing an installed vlpc), find the submodules there too.
import os as _os  # noqa: E402

_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "dialects")) and all(
        _os.path.isfile(_os.path.join(_root, d, "__init__.py")) for d in ("dialects", "passes", "runtime")):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
del _os, _root

from vlpc.pipeline import (CompiledKernel, CompiledModule, LaunchConfig, compile, parse, pipeline,  # noqa: E402
                           pipeline_options, pipeline_spec)

# `vlpc.run` names the function below; the `vlpc run` command's submodule is imported first,
# so that `from vlpc.run import cmd_run` keeps working (it finds the module in sys.modules).
from vlpc import run as _run_command  # noqa: E402,F401
from vlpc.api import RunResult, VerificationError, run  # noqa: E402
from vlpc.errors import DiagnosticError, VlpcError  # noqa: E402

__all__ = ["CompiledKernel", "CompiledModule", "DiagnosticError", "LaunchConfig", "RunResult", "VerificationError",
           "VlpcError", "compile", "parse", "pipeline", "pipeline_options", "pipeline_spec", "run", "__version__"]
