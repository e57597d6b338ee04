"""GPU boards (MI50, MI60, MI25): CU counts, clocks, memory, power and default boards.

A board is a processor with its CU count, clocks, memory and power; each processor has a default
board, and the seed's measurement conditions are a board at fixed clocks."""

from __future__ import annotations

from dataclasses import dataclass

from vlpc.errors import TargetError
from vlpc.targets.processors import GFX900, GFX906, Target, get_target
from vlpc.targets.timing import TimingParams


@dataclass(frozen=True)
class Board:
    """A GPU board: a target plus its CU count, clocks and memory.

    ``engine_clock_mhz`` is the shader (engine) clock the model runs at (settable: the
    seed measured at 1700/1500/1300/1100 MHz); ``memory_clock_mhz`` the HBM2 clock
    (stock 1000 MHz; the seed kept it at 800 MHz: :func:`seed_board`); bandwidth = bus
    bits x 2 (DDR) x memory clock / 8.
    """

    name: str
    target: Target
    compute_units: int
    engine_clock_mhz: float
    memory_clock_mhz: float
    hbm_bus_bits: int = 4096
    #: Shader engines (workgroups are dispatched round-robin over them): 4 on Vega 10/20
    #: (AMD "Vega" architecture whitepaper).
    shader_engines: int = 4
    timing: TimingParams = TimingParams()
    #: Static (idle) board power in watts at ``idle_clock_mhz`` (*An Alternative SGEMM on VEGA* section 3.2).
    idle_watts: float | None = None
    #: The engine clock ``idle_watts`` was measured at (None: ``engine_clock_mhz``).
    idle_clock_mhz: float | None = None
    #: The board's power limit in watts (typical board power, AMD's spec sheets: 300 W for
    #: MI25, MI50 and MI60).  Above it the board's power management lowers the engine clock;
    #: the energy model flags a modeled average power above this limit
    #: (:attr:`vlpc.runtime.timing.energy.EnergyReport.over_power_limit`).
    power_limit_watts: float | None = None

    @property
    def peak_flops_f32(self) -> float:
        """FP32 FMA peak in FLOP/s: 64 lanes x 2 x CUs x clock (spec sheets, docs/references.md)."""
        return self.target.wavefront_size * 2 * self.compute_units * self.engine_clock_mhz * 1e6

    @property
    def hbm_bytes_per_second(self) -> float:
        """The HBM2 pin rate in bytes/s: bus bits x 2 (DDR) x memory clock / 8."""
        return self.hbm_bus_bits * 2 * self.memory_clock_mhz * 1e6 / 8

    @property
    def hbm_data_bytes_per_second(self) -> float:
        """The pin rate less refresh and bus overheads (``TimingParams.hbm_refresh_fraction``,
        ``hbm_bus_efficiency``), bytes/s: what the channels move when no page activation
        stalls them (the timing model's HBM queue rate; activations cost on top)."""
        t = self.timing
        return self.hbm_bytes_per_second * (1.0 - t.hbm_refresh_fraction) * t.hbm_bus_efficiency

    @property
    def streaming_ceiling_bytes_per_second(self) -> float:
        """The HBM model's streaming ceiling in bytes/s: :attr:`hbm_data_bytes_per_second` less
        one DRAM page activation (``TimingParams.hbm_activate_ns``, spread over ``hbm_channels``)
        per 1 KiB a wave's ``global_load_dwordx4`` moves -- the best a kernel that reads every
        byte once can do under the model (modeled): the steady rate of a stream with no launch,
        ramp or drain, which the HBM efficiency parameters set to the measured large-buffer row
        hbm.stream.dwordx4's 870 GB/s (MI50; ``benchmarks/microbench/``, ``TIMING_SOURCES``)."""
        t = self.timing
        per_kib = 1024.0 / self.hbm_data_bytes_per_second + t.hbm_activate_ns * 1e-9 / t.hbm_channels
        return 1024.0 / per_kib

    def at(self, engine_clock_mhz: float | None = None, memory_clock_mhz: float | None = None,
           compute_units: int | None = None, timing: TimingParams | None = None) -> "Board":
        """The same board at other clocks / CU count / parameters."""
        from dataclasses import replace
        return replace(self, engine_clock_mhz=engine_clock_mhz or self.engine_clock_mhz,
                       memory_clock_mhz=memory_clock_mhz or self.memory_clock_mhz,
                       compute_units=compute_units or self.compute_units,
                       timing=timing or self.timing)


#: Boards the timing model knows, at their stock clocks.  MI60: 64 CUs, 1800 MHz peak engine
#: clock; MI50: 60 CUs, 1725 MHz; both HBM2 4096-bit at 1000 MHz, 1,024 GB/s (AMD Radeon
#: Instinct MI50 / MI60 spec sheets).  The seed measured its MI60 at fixed engine clocks and
#: 800 MHz memory: a condition of its table (:func:`seed_board`), not the board's default.
BOARDS: dict[str, Board] = {
    "mi60": Board("mi60", GFX906, 64, 1800.0, 1000.0, idle_watts=42.0, idle_clock_mhz=1700.0,
                  power_limit_watts=300.0),
    "mi50": Board("mi50", GFX906, 60, 1725.0, 1000.0, power_limit_watts=300.0),
    # MI25 (gfx900): 64 CUs, 1500 MHz peak engine clock, HBM2 2048-bit at 945 MHz (484 GB/s),
    # AMD Radeon Instinct MI25 spec sheet; f64 at 1/16 rate (the ISA table's gfx900 cycles:
    # v_fma_f64 64).  No idle power is published: the energy model falls back to
    # EnergyParams.idle_ref_watts.
    "mi25": Board("mi25", GFX900, 64, 1500.0, 945.0, hbm_bus_bits=2048, power_limit_watts=300.0),
}


#: The one default board of each processor: what every command (compile, run, bench, report,
#: tune, profile) and the Python API (``vlpc.compile``, ``vlpc.run``, ``get_device``) plan and
#: model for when no board is named (``--gpu``, ``gpu=``).  gfx906: the MI50, the board most
#: gfx906 owners have (the MI60 is the seed's measured board: name it with ``--gpu mi60``);
#: gfx900: the MI25, its only one.  The reason is written in docs/cli_conventions.md.
DEFAULT_BOARDS: dict[str, str] = {"gfx906": "mi50", "gfx900": "mi25"}


def board_for(target: str | Target) -> str:
    """The default board (:data:`DEFAULT_BOARDS`) of a processor or target id: ``mi50`` for
    gfx906, ``mi25`` for gfx900.  Raises :class:`TargetError` for an unknown target or one
    without a board."""
    t = target if isinstance(target, Target) else get_target(str(target))
    try:
        return DEFAULT_BOARDS[t.name]
    except KeyError:
        raise TargetError(f"no board of target {t.name} is known") from None


def default_boards_text() -> str:
    """:data:`DEFAULT_BOARDS` as the options' help names them: ``mi50 for gfx906, mi25 for gfx900``."""
    return ", ".join(f"{board} for {proc}" for proc, board in DEFAULT_BOARDS.items())


#: The seed's measurement conditions (*An Alternative SGEMM on VEGA* sections 3.1 and 3.2): an MI60 with the engine
#: clock fixed at each column's value (1700/1500/1300/1100 MHz) and HBM2 at 800 MHz.
SEED_CLOCKS_MHZ: tuple[float, ...] = (1700.0, 1500.0, 1300.0, 1100.0)
SEED_MEMORY_CLOCK_MHZ: float = 800.0


def seed_board(clock_mhz: float = 1700.0) -> "Board":
    """The MI60 under the seed's conditions: engine ``clock_mhz``, HBM2 at
    :data:`SEED_MEMORY_CLOCK_MHZ` (what the calibration and the seed sweep model)."""
    return get_board("mi60", clock_mhz=clock_mhz, memory_clock_mhz=SEED_MEMORY_CLOCK_MHZ)


def get_board(name: str | Board, *, clock_mhz: float | None = None,
              memory_clock_mhz: float | None = None, cus: int | None = None) -> Board:
    """A :class:`Board` by name (``mi50``, ``mi60``), optionally at other clocks or CU count.

    Raises :class:`TargetError` naming the boards that exist.
    """
    if isinstance(name, Board):
        board = name
    else:
        try:
            board = BOARDS[str(name).lower()]
        except KeyError:
            raise TargetError(f"unknown board '{name}' (known boards: {', '.join(sorted(BOARDS))})") from None
    if clock_mhz is not None and not 100 <= float(clock_mhz) <= 3000:
        raise TargetError(f"engine clock {clock_mhz} MHz is outside 100..3000 MHz")
    if memory_clock_mhz is not None and not 100 <= float(memory_clock_mhz) <= 3000:
        raise TargetError(f"memory clock {memory_clock_mhz} MHz is outside 100..3000 MHz")
    return board.at(engine_clock_mhz=clock_mhz, memory_clock_mhz=memory_clock_mhz, compute_units=cus)

