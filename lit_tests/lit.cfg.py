# lit configuration for vlpc's FileCheck tests.
# Run with:  lit lit_tests   (the README's test command runs it)
import os
import shutil
import sys

import lit.formats

config.name = "vlpc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".s"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

bindir = os.path.dirname(sys.executable)
# Make the vlpc, filecheck and xdsl-opt of the running environment win.
config.environment["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
for var in ("HOME", "VLPC_TOOLCHAIN", "VLPC_LLVM_DIR", "ROCM_PATH", "TMPDIR", "VLPC_CACHE_DIR", "VLPC_CACHE",
            "VLPC_CACHE_MAX_SIZE", "VLPC_VERIFY_EACH", "XDG_CACHE_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

if shutil.which("filecheck", path=config.environment["PATH"]) is None:
    lit_config.fatal("filecheck not found: pip install 'vlpc[test]'")

# Tests that need a real gfx906 are marked `REQUIRES: gfx906`.  VLPC_LIT_GFX906=1/0 gives the
# answer (tests/passes/test_lit.py probes HIP once for its many lit runs); else HIP is asked.
if os.environ.get("VLPC_LIT_GFX906") in ("0", "1"):
    ok = os.environ["VLPC_LIT_GFX906"] == "1"
else:
    try:
        from vlpc.runtime.hip import hip_available
        ok, _ = hip_available()
    except Exception:
        ok = False
if ok:
    config.available_features.add("gfx906")
