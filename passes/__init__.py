"""vlpc's passes, one module each, registered by name (``vlpc opt -p NAME{opt=val}``)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> a function returning the pass class (imported lazily)."""

    def linalg_to_gemm():
        from vlpc.passes.convert_linalg_to_gemm import ConvertLinalgToGemmPass
        return ConvertLinalgToGemmPass

    def tile():
        from vlpc.passes.gemm_tile import GemmTilePass
        return GemmTilePass

    def map_wg():
        from vlpc.passes.gemm_map_workgroups import GemmMapWorkgroupsPass
        return GemmMapWorkgroupsPass

    def map_sg():
        from vlpc.passes.gemm_map_subgroups import GemmMapSubgroupsPass
        return GemmMapSubgroupsPass

    def split_k():
        from vlpc.passes.gemm_split_k import GemmSplitKPass
        return GemmSplitKPass

    def to_gcn():
        from vlpc.passes.isel.dispatch import ConvertGemmToGcnPass
        return ConvertGemmToGcnPass

    def regalloc():
        from vlpc.passes.gcn_allocate_registers import GcnAllocateRegistersPass
        return GcnAllocateRegistersPass

    def waitcnt():
        from vlpc.passes.gcn_insert_waitcnt import GcnInsertWaitcntPass
        return GcnInsertWaitcntPass

    def hazards():
        from vlpc.passes.gcn_insert_hazard_nops import GcnInsertHazardNopsPass
        return GcnInsertHazardNopsPass

    def descriptor():
        from vlpc.passes.gcn_emit_descriptor import GcnEmitDescriptorPass
        return GcnEmitDescriptorPass

    return {
        "convert-linalg-to-gemm": linalg_to_gemm,
        "gemm-tile": tile,
        "gemm-map-workgroups": map_wg,
        "gemm-map-subgroups": map_sg,
        "gemm-split-k": split_k,
        "convert-gemm-to-gcn": to_gcn,
        "gcn-allocate-registers": regalloc,
        "gcn-insert-waitcnt": waitcnt,
        "gcn-insert-hazard-nops": hazards,
        "gcn-emit-descriptor": descriptor,
    }
