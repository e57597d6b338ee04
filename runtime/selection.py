"""Device selection: :func:`get_device` builds the emulator's or HIP's :class:`~vlpc.runtime.device.Device`
by name (``"emulator"``, ``"hip"``, ``"auto"``).

Apart from :mod:`vlpc.runtime.device` (the base class the devices derive from), so that the base
module imports neither device: the emulator's and HIP's devices import the base, this module
imports them.
"""

from __future__ import annotations

import inspect
from typing import Any

from vlpc.errors import DeviceError, VlpcError
from vlpc.runtime.device import MODEL_OPTIONS, Device
from vlpc.targets import GFX906, TargetError, TargetId


def _emulator(options: dict[str, Any]) -> Device:
    from vlpc.runtime.emulator.device import EmulatorDevice

    return EmulatorDevice(**options)


def _hip(options: dict[str, Any], *, filter_options: bool = False) -> Device:
    try:
        import vlpc.runtime.hip as hip_mod  # noqa: PLC0415 (lazy: needs ROCm at import)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("vlpc.runtime.hip"):
            raise DeviceError("HIP device unavailable: vlpc.runtime.hip is not installed") from None
        raise DeviceError(f"HIP device unavailable: {e}") from None
    except VlpcError as e:
        raise DeviceError(f"HIP device unavailable: {e}") from None
    except Exception as e:  # hip-python raises various errors without ROCm
        raise DeviceError(f"HIP device unavailable: {type(e).__name__}: {e}") from None
    factory = getattr(hip_mod, "HipDevice", None) or getattr(hip_mod, "get_device", None)
    if factory is None:
        raise DeviceError("HIP device unavailable: vlpc.runtime.hip has no HipDevice")
    if filter_options:  # "auto": the timing model's options are the emulator's; a GPU is measured
        options = {k: v for k, v in options.items() if k not in MODEL_OPTIONS}
        try:
            params = inspect.signature(factory).parameters
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                options = {k: v for k, v in options.items() if k in params}
        except (TypeError, ValueError):
            options = {}
    try:
        dev = factory(**options)
    except DeviceError as e:
        msg = str(e)
        raise DeviceError(msg if msg.startswith("HIP device unavailable")
                          else f"HIP device unavailable: {msg}") from None
    except Exception as e:
        raise DeviceError(f"HIP device unavailable: {type(e).__name__}: {e}") from None
    return dev


def get_device(name: str = "auto", **options: Any) -> Device:
    """A :class:`Device` by name: ``"emulator"``, ``"hip"`` or ``"auto"``.

    ``options`` go to the device's constructor (emulator: ``target``,
    ``strict``, ``instruction_budget``, ``max_waves_in_flight``, and the timing
    model's :data:`MODEL_OPTIONS` ``gpu``, ``clock_mhz``, ``cus``, ``timing_only``).
    ``"auto"`` tries HIP with the options it accepts (the timing model's are left
    out: a GPU is measured) and keeps it only when its target is
    gfx906-compatible (with ``target`` when given); otherwise it quietly uses the
    emulator.  ``device.selection_reason`` records the choice.  Unknown names and
    an unavailable HIP (for ``"hip"``) raise :class:`DeviceError`.
    """
    key = (name or "auto").strip().lower()
    if key == "emulator":
        dev = _emulator(options)
        dev.selection_reason = "emulator requested"
        return dev
    if key == "hip":
        dev = _hip(options)
        dev.selection_reason = "HIP requested"
        return dev
    if key != "auto":
        raise DeviceError(f"unknown device '{name}' (choose emulator, hip or auto)")
    want_text = options.get("target") or GFX906.name
    try:
        want = TargetId.parse(str(want_text))
    except TargetError as e:
        raise DeviceError(str(e)) from None
    try:
        hip_dev = _hip(options, filter_options=True)
    except DeviceError as e:
        why = str(e).removeprefix("HIP device unavailable: ")
        dev = _emulator(options)
        dev.selection_reason = f"auto: HIP unavailable ({why}); using the emulator"
        return dev
    if want.compatible_with(hip_dev.target_id) and hip_dev.target_id.compatible_with(want):
        ignored = sorted(k for k in options if k in MODEL_OPTIONS)
        hip_dev.selection_reason = (f"auto: HIP device {hip_dev.target_id} is {want}-compatible"
                                    + (f"; timing-model option(s) {', '.join(ignored)} ignored: the GPU is "
                                       "measured, not modeled" if ignored else ""))
        return hip_dev
    close = getattr(hip_dev, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            pass
    dev = _emulator(options)
    dev.selection_reason = (f"auto: HIP device is {hip_dev.target_id}, not {want}-compatible; "
                            f"using the emulator")
    return dev
