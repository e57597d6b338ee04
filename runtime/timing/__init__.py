"""The timing model of gfx906 boards (MI50, MI60): modeled cycles and microseconds.

The functional emulator records traces (:mod:`.trace`); a cycle-approximate CU model
replays them (:mod:`.cu`); the GPU model adds the L2/HBM, workgroup dispatch and
launches (:mod:`.gpu`).  Every figure is *modeled*, calibrated on the seed's
measured MI60 table (1700 MHz column only; ``benchmarks/timing_calibration.py``).

Use it through the emulator device::

    dev = get_device("emulator", gpu="mi60", clock_mhz=1700)
    stats = dev.launch(...)          # stats.cycles, stats.time_us, stats.timing
"""

from .gpu import Residency, TimingReport, combine, model_kernel, residency, trace_request
from .trace import KernelTrace, TraceRequest

__all__ = ["KernelTrace", "Residency", "TimingReport", "TraceRequest", "combine", "model_kernel",
           "residency", "trace_request"]
