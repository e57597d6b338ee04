"""vlpc's runtime: code objects, devices and launches.

Public API::

    from vlpc.runtime import load_code_object, get_device, pack_kernargs
    co = load_code_object("kernel.hsaco")          # CodeObject (or bytes)
    dev = get_device("emulator")                   # or "hip" / "auto"
    a = dev.upload(np.arange(256, dtype=np.float32))
    stats = dev.launch(co, "vadd", grid=(4, 1, 1), block=(64, 1, 1), args=[a, b, c, np.int32(256)])
    out = dev.download(c, np.float32, 256)

``LaunchStats`` is re-exported from the emulator core on first use, so importing
this package never depends on the emulator being importable.
"""

from __future__ import annotations

from typing import Any

# The names load on first use, so that the compiler's `from vlpc.runtime.toolchain import ...`
# imports neither NumPy nor pyelftools (issue 18: compile time).
_LAZY = {
    **dict.fromkeys(("CodeObject", "CodeObjectError", "Kernel", "KernelArg", "KernelDescriptor", "KernelMetadata",
                     "load_code_object"), "vlpc.runtime.code_object"),
    **dict.fromkeys(("Buffer", "Device", "LaunchError"), "vlpc.runtime.device"),
    "get_device": "vlpc.runtime.selection",
    **dict.fromkeys(("HiddenValues", "KernargError", "LaunchGeometry", "build_dispatch_packet", "pack_kernargs"),
                    "vlpc.runtime.kernargs"),
    "LaunchStats": "vlpc.runtime.emulator.core",  # lazy: the core may be absent
}

__all__ = [
    "Buffer", "CodeObject", "CodeObjectError", "Device", "HiddenValues", "KernargError", "Kernel",
    "KernelArg", "KernelDescriptor", "KernelMetadata", "LaunchError", "LaunchGeometry",
    "LaunchStats", "build_dispatch_packet", "get_device", "load_code_object", "pack_kernargs",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vlpc.runtime' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    if name != "LaunchStats":
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
