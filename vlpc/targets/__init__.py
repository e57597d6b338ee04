"""Target facts for the GPUs vlpc compiles for, as data, in one place.

One module per job:


* :mod:`vlpc.targets.processors`: the processors (``gfx906``, ``gfx900``), their limits,
  occupancy rules and target ids;
* :mod:`vlpc.targets.hazards`: the GFX9 wait-state hazards;
* :mod:`vlpc.targets.timing`: the timing model's parameters and their sources;
* :mod:`vlpc.targets.boards`: the boards (MI50, MI60, MI25), clocks, memory, power, the default
  board of each processor and the seed's measurement conditions;
* :mod:`vlpc.targets.energy`: the energy model's parameters and their sources.

Every public name is re-exported here (``from vlpc.targets import get_board``).  "The seed" is
*An Alternative SGEMM on VEGA* (github.com/fsword73/SGEMM_on_VEGA), whose measured MI60 table
(1700 MHz column) and power pair the calibrated parameters are fitted on.
"""

from vlpc.errors import TargetError
from vlpc.targets.boards import (BOARDS, DEFAULT_BOARDS, SEED_CLOCKS_MHZ, SEED_MEMORY_CLOCK_MHZ, Board, board_for,
                                 default_boards_text, get_board, seed_board)
from vlpc.targets.energy import (BOARD_ENERGY, BOARD_ENERGY_NOTE, ENERGY, ENERGY_SOURCES, MI25_ENERGY,
                                 MI25_ENERGY_SOURCES, MI25_REF_CLOCK_MHZ, MI25_SAME_FREQUENCY_POWER_RATIO,
                                 MI25_SAME_POWER_PERFORMANCE_RATIO, MI60_IDLE_WATTS_1500, VEGA10_VF_CURVE,
                                 EnergyParams, derive_mi25_energy, energy_params)
from vlpc.targets.hazards import GFX9_HAZARDS, Hazard
from vlpc.targets.processors import GFX900, GFX906, TARGETS, Occupancy, Target, TargetId, get_target
from vlpc.targets.timing import TIMING_SOURCES, TimingParams

__all__ = [
    "BOARDS", "BOARD_ENERGY", "BOARD_ENERGY_NOTE", "Board", "DEFAULT_BOARDS", "ENERGY", "ENERGY_SOURCES",
    "EnergyParams", "GFX900", "GFX906", "GFX9_HAZARDS", "Hazard", "MI25_ENERGY", "MI25_ENERGY_SOURCES",
    "MI25_REF_CLOCK_MHZ", "MI25_SAME_FREQUENCY_POWER_RATIO", "MI25_SAME_POWER_PERFORMANCE_RATIO",
    "MI60_IDLE_WATTS_1500", "Occupancy", "SEED_CLOCKS_MHZ", "SEED_MEMORY_CLOCK_MHZ", "TARGETS", "TIMING_SOURCES",
    "Target", "TargetError", "TargetId", "TimingParams", "VEGA10_VF_CURVE", "board_for", "default_boards_text",
    "derive_mi25_energy", "energy_params", "get_board", "get_target", "seed_board",
]
