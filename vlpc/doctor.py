"""``vlpc doctor``: what the HIP path would use on this machine, and whether it fits.

Reports, one line each: vlpc and Python; the assembler/linker vlpc uses
(``runtime/toolchain.py``) and, for every target vlpc compiles for (``gfx906``,
``gfx900``: :data:`vlpc.targets.TARGETS`), whether it is ready: a probe of the
instructions vlpc's SGEMM/DGEMM kernels need (``v_fma_f32``/``v_fma_f64`` with an SGPR
source, ``s_load_dwordx16``, ``global_load_dwordx4``, and ``v_dot2_f32_f16`` where the
target has it) assembles and links, the code object's ELF ``e_flags`` are the target's
(0x52f for gfx906, 0x12c for gfx900: AMDGPUUsage "ELF Header"), and the assembler
refuses ``v_fmac_f32`` for a target without it (gfx900), so ``-mcpu`` is honoured;
hip-python's version and the ROCm it was built for; the HIP runtime library found,
its version (``hipRuntimeGetVersion``) and the driver's (``hipDriverGetVersion``);
whether hip-python matches the runtime; every device with its name and target id
(``gcnArchName``) and whether vlpc's code objects for that processor (built with no
features: they load on either ``sramecc``/``xnack`` setting) run on it, with the
``--target`` to compile for.  A line starting with ``!`` says what does not fit and
what to do.

Exit status: 0 when HIP is usable with at least one device that runs vlpc's code
objects and no line starts with ``!``; 4 (a device problem) otherwise -- on a
machine without a GPU that is the expected answer, and vlpc runs on its emulator.

Matching hip-python to ROCm: hip-python's version starts with the ROCm version it
was generated from (``6.2.0.499.16`` is for ROCm 6.2.0), and it must match the
runtime's major.minor (``docs/hip.md``).  PyPI has no hip-python for ROCm 5.x
(the oldest is 6.2.0); with a ROCm 5 runtime (ROCm 5.7 is the last official
release for gfx906; Debian 12 ships 5.2) the 6.2 bindings are the closest, and vlpc
works around the one call that differs (``hipGetDeviceProperties``).
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from typing import Any

from vlpc.errors import EXIT_DEVICE, EXIT_OK
from vlpc.version import __version__

#: What vlpc builds for by default: the target id of its code objects (no features: "any").
COMPILE_TARGET = "gfx906"

#: The probe each target must assemble: the instructions vlpc's SGEMM/DGEMM kernels
#: need on every target, and (``dot``) those only targets with dot instructions have.
PROBE_COMMON = ("v_fma_f32 v0, s0, v1, v0", "v_fma_f64 v[0:1], s[0:1], v[2:3], v[0:1]",
                "s_load_dwordx16 s[0:15], s[4:5], 0x0", "global_load_dwordx4 v[0:3], v[4:5], off")
PROBE_DOT = ("v_dot2_f32_f16 v0, v1, v2, v0",)
#: An instruction a target without ``has_fmac_f32`` must be refused (LLVM ``FeatureDLInsts``).
PROBE_MISSING = "v_fmac_f32 v0, v1, v2"

#: The oldest hip-python on PyPI (ROCm 6.2.0); older runtimes get no exact match.
OLDEST_HIP_PYTHON = (6, 2)


@dataclass
class Line:
    """One line of the report: ``label``, ``text``, and ``problem`` for a ``!`` line."""

    label: str
    text: str
    problem: bool = False

    def __str__(self) -> str:
        mark = "!" if self.problem else " "
        return f"{mark} {self.label + ':':<13} {self.text}"


@dataclass
class Report:
    """The doctor's findings.  ``usable``: HIP works and a device runs vlpc's code objects."""

    lines: list[Line] = field(default_factory=list)
    usable: bool = False
    runtime_version: str | None = None
    hip_python_version: str | None = None
    hip_python_rocm: str | None = None
    devices: list[dict] = field(default_factory=list)

    def add(self, label: str, text: str, problem: bool = False) -> None:
        self.lines.append(Line(label, text, problem))

    @property
    def problems(self) -> list[Line]:
        return [ln for ln in self.lines if ln.problem]

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.usable and not self.problems else EXIT_DEVICE

    def text(self) -> str:
        return "\n".join(str(ln) for ln in self.lines)


def _major_minor(version: str | None) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def version_match(hip_python_rocm: str | None, runtime: str | None) -> tuple[bool, bool, str]:
    """Whether hip-python (built for ROCm ``hip_python_rocm``) fits the HIP ``runtime``.

    Returns ``(problem, exact, text)``.  Equal major.minor: a match.  A ROCm 5 runtime
    with hip-python built for 6.2: no exact match exists on PyPI and this is the
    closest pair, so it is reported without a problem.  Anything else is a problem
    whose text names the ``pip install`` that fixes it.
    """
    want, have = _major_minor(hip_python_rocm), _major_minor(runtime)
    if want is None or have is None:
        return False, False, (f"cannot compare (hip-python built for ROCm {hip_python_rocm or '?'}, "
                              f"HIP runtime {runtime or '?'})")
    pin = f"hip-python~={have[0]}.{have[1]}.0"
    if want == have:
        return False, True, f"match: hip-python is built for ROCm {want[0]}.{want[1]}, the runtime is HIP {runtime}"
    if have < OLDEST_HIP_PYTHON:
        if want == OLDEST_HIP_PYTHON:
            return False, False, (f"closest pair: no hip-python exists for ROCm {have[0]}.{have[1]} (the "
                                  f"oldest is for 6.2); vlpc uses hip-python 6.2 with the HIP {runtime} "
                                  f"runtime and reads ROCm 5's hipGetDeviceProperties itself (checked "
                                  f"against ROCm 5.2 without a GPU)")
        return True, False, (f"hip-python is built for ROCm {want[0]}.{want[1]} but the runtime is HIP "
                             f"{runtime}, older than any hip-python: pip install 'hip-python~=6.2.0' "
                             f"(the closest; docs/hip.md)")
    return True, False, (f"hip-python is built for ROCm {want[0]}.{want[1]} but the runtime is HIP "
                         f"{runtime}: pip install '{pin}' (docs/hip.md)")


def check_toolchain(rep: Report, toolchain: Any = None) -> None:
    """Add the ``toolchain`` line and one line per target of :data:`vlpc.targets.TARGETS`
    (see the module docstring); a failure is a ``!`` line naming the target and what the
    assembler, linker or ELF header said.  ``toolchain`` substitutes a
    :class:`vlpc.runtime.toolchain.Toolchain` (tests)."""
    import struct

    from vlpc.errors import VlpcError
    from vlpc.targets import TARGETS, TargetId

    if toolchain is None:
        from vlpc.runtime.toolchain import find_toolchain
        try:
            toolchain = find_toolchain()
        except VlpcError as e:
            rep.add("toolchain", f"{e}; nothing can be compiled", problem=True)
            return
    rep.add("toolchain", toolchain.describe())
    for name, target in TARGETS.items():
        tid = TargetId.parse(name)
        probe = PROBE_COMMON + (PROBE_DOT if target.has_dot_insts else ())
        asm = f'.amdgcn_target "{tid.directive}"\n.text\n' + "".join(f"{ln}\n" for ln in probe) + "s_endpgm\n"
        try:
            code = toolchain.link(toolchain.assemble(asm, tid, f"doctor-{name}.s"))
        except (VlpcError, OSError) as e:
            rep.add(name, f"the assembler/linker fails on vlpc's instructions for {name}: "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}", problem=True)
            continue
        (flags,) = struct.unpack_from("<I", code, 48) if len(code) >= 52 else (None,)
        if flags != tid.e_flags():
            got = "no ELF header" if flags is None else f"e_flags 0x{flags:x}"
            rep.add(name, f"the linked probe has {got}, not {name}'s 0x{tid.e_flags():x}: this assembler "
                          f"does not build {name} code objects", problem=True)
            continue
        text = (f"ready: {', '.join(ln.split()[0] for ln in probe)} assemble and link "
                f"(e_flags 0x{flags:x}, --target {name})")
        if not target.has_fmac_f32:
            try:
                toolchain.assemble(f"{PROBE_MISSING}\n", tid, f"doctor-{name}-missing.s")
            except VlpcError:
                text += f"; {PROBE_MISSING.split()[0]} refused, as {name} lacks it"
            else:
                rep.add(name, f"the assembler accepts {PROBE_MISSING.split()[0]} for {name}, which lacks it: "
                              f"it does not honour the processor", problem=True)
                continue
        rep.add(name, text)


def diagnose(_hip: Any = None, *, library: str | None = None,
             hip_python: tuple[str, str] | None = None, toolchain: Any = None) -> Report:
    """Collect the report.  Never raises for a missing or broken HIP set-up: that is
    what it reports.  ``_hip``/``library``/``hip_python`` (version, ROCm it was built
    for) substitute a stand-in ``hip`` module for tests without a GPU; ``toolchain``
    an assembler/linker (:func:`check_toolchain`)."""
    from vlpc.errors import DeviceError
    from vlpc.runtime import hip as hipmod
    from vlpc.targets import TARGETS, TargetError, TargetId

    rep = Report()
    rep.add("vlpc", f"{__version__} (Python {platform.python_version()})")
    check_toolchain(rep, toolchain)
    if _hip is None:
        try:
            mod = hipmod._load()
        except DeviceError as e:
            rep.add("hip-python", str(e), problem=True)
            rep.add("verdict", "HIP is not usable here; vlpc runs kernels on its emulator")
            return rep
        _hip, library = mod.hip, mod.library
        hip_python = (mod.hip_python_version, mod.hip_python_rocm)
    library = library or "<injected>"
    hp_version, hp_rocm = hip_python or ("unknown", "unknown")
    rep.hip_python_version, rep.hip_python_rocm = hp_version, hp_rocm
    rep.add("hip-python", f"{hp_version} (built for ROCm {hp_rocm})")

    runtime = hipmod._runtime_version(_hip)
    rep.runtime_version = None if runtime == "unknown" else runtime
    try:
        driver = str(hipmod._call(_hip, "hipDriverGetVersion"))
    except DeviceError:
        driver = "unknown"
    if rep.runtime_version is None:
        rep.add("HIP runtime", f"{library}: hipRuntimeGetVersion failed; the library may not be "
                               f"a ROCm HIP runtime", problem=True)
    else:
        rep.add("HIP runtime", f"{runtime} ({library}; driver {driver})")
    problem, _, text = version_match(hp_rocm, rep.runtime_version)
    rep.add("versions", text, problem=problem)

    try:
        count = int(hipmod._call(_hip, "hipGetDeviceCount"))
    except hipmod.HipError as e:
        why = (" (usual causes: no AMD GPU, no amdgpu driver (/dev/kfd), or a user outside the "
               "render/video groups)" if e.code == hipmod.HIP_ERROR_NO_DEVICE else "")
        rep.add("devices", f"none: hipGetDeviceCount returned {e.status_name} ({e.code}){why}", problem=True)
        rep.add("verdict", "HIP is not usable here; vlpc runs kernels on its emulator")
        return rep
    except DeviceError as e:
        rep.add("devices", f"cannot be counted: {e}", problem=True)
        rep.add("verdict", "HIP is not usable here; vlpc runs kernels on its emulator")
        return rep
    if count == 0:
        rep.add("devices", "none: hipGetDeviceCount reports 0", problem=True)
    runs = 0
    for index in range(count):
        try:
            p = hipmod.device_properties(_hip, library, index)
        except DeviceError as e:
            rep.add(f"device {index}", f"properties unavailable: {e}", problem=True)
            continue
        entry = {"index": index, "name": p.name, "gcn_arch_name": p.gcn_arch_name,
                 "compute_units": p.compute_units, "runs_vlpc": False}
        rep.devices.append(entry)
        head = f"{p.name}, target id {p.gcn_arch_name}, {p.compute_units} CUs"
        try:
            tid = TargetId.parse(p.gcn_arch_name)
        except TargetError:
            rep.add(f"device {index}", f"{head}: not a {' or '.join(TARGETS)}; vlpc has no target for it and "
                                       f"refuses to launch there", problem=True)
            continue
        want = TargetId.parse(tid.target.name)  # vlpc's code objects: no features ("any")
        if want.compatible_with(tid):
            entry["runs_vlpc"] = True
            runs += 1
            flag = "" if tid.target.name == COMPILE_TARGET else f" (--target {tid.target.name})"
            rep.add(f"device {index}", f"{head}: runs vlpc's {tid.target.name} code objects{flag}")
        else:  # not reachable with "any" features, kept for other compile targets
            rep.add(f"device {index}", f"{head}: does not match vlpc's {want} code objects", problem=True)
    rep.usable = runs > 0
    if rep.usable:
        rep.add("verdict", f"HIP is usable: {runs} device(s) run vlpc's code objects (vlpc run --device hip)")
    else:
        rep.add("verdict", "HIP is not usable for vlpc here; vlpc runs kernels on its emulator")
    return rep


def cmd_doctor(args: Any) -> int:
    """Print :func:`diagnose`'s report; its exit code (``vlpc doctor``, vlpc/commands/doctor.py)."""
    rep = diagnose()
    print(rep.text())
    return rep.exit_code
