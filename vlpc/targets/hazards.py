"""The GFX9 wait-state hazards, as data (LLVM ``GCNHazardRecognizer.cpp``).

The pairs of instruction kinds the hazard pass (``passes/gcn_insert_hazard_nops.py``) separates
with ``s_nop``.  Source: LLVM ``GCNHazardRecognizer.cpp`` for GFX9 (docs/references.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hazard:
    """A pair of instruction kinds that needs ``wait_states`` between them.

    ``producer`` and ``consumer`` are kind names the hazard pass understands
    (see ``passes/gcn_insert_hazard_nops.py``); ``via`` says which operand
    carries the dependence.  Source: LLVM ``GCNHazardRecognizer.cpp`` for GFX9.
    """

    name: str
    producer: str
    consumer: str
    via: str
    wait_states: int



GFX9_HAZARDS = (
    Hazard("valu-sgpr-then-vmem", "valu_writes_sgpr", "vmem_reads_sgpr", "sgpr", 5),
    Hazard("valu-sgpr-then-lane-select", "valu_writes_sgpr", "readlane_lane_select", "sgpr", 4),
    Hazard("valu-vcc-then-div-fmas", "valu_writes_vcc", "v_div_fmas", "vcc", 4),
    Hazard("valu-exec-then-dpp", "valu_writes_exec", "dpp", "exec", 5),
    Hazard("valu-vgpr-then-dpp", "valu_writes_vgpr", "dpp_reads_vgpr", "vgpr", 2),
    Hazard("wide-store-then-valu-overwrite", "store_wider_than_8_bytes", "valu_writes_store_data", "vgpr", 1),
    Hazard("salu-m0-then-lds", "salu_writes_m0", "lds_or_sendmsg_or_movrel", "m0", 1),
    Hazard("setreg-then-getreg", "s_setreg", "s_getreg", "hwreg", 2),
)
