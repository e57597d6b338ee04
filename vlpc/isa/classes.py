"""Instruction classes: the ISA table's ``issue_class`` column, as the emulator counts them,
the timing model issues them and the reports list them (one list for all three).

The table (``gfx906.json``, :mod:`vlpc.isa`) gives every instruction an issue class
(``valu salu smem vmem lds branch waitcnt nop barrier message export``).  The emulator
counts executed wave-instructions by :data:`EXECUTION_CLASSES`
(``LaunchStats.by_class``): the table's class, except that the program-control
instructions without scalar ALU work (SOPP ``s_endpgm``, ``s_trap``, ``s_sendmsg``...,
the table's ``salu``/``message`` rows of the SOPP encoding) and exports are ``other``.

The timing model issues each class on one of the compute unit's instruction types
(:data:`CATEGORY`): a GCN CU's instruction arbiter issues at most one instruction per
type per cycle: VALU, scalar (SALU and SMEM), vector memory, LDS, branch, and the
"special instructions which are only sequencing and handled directly in the instruction
buffers" (``s_nop``, ``s_waitcnt``, ``s_barrier``...): AMD, "AMD Graphics Cores Next (GCN)
Architecture" white paper (2012), compute unit front-end.
"""

from __future__ import annotations

from functools import lru_cache

from vlpc.isa import table

#: The classes executed instructions are counted by, in the order reports list them.
EXECUTION_CLASSES = ("valu", "salu", "smem", "vmem", "lds", "waitcnt", "barrier", "branch", "nop", "other")

#: Execution class -> the CU's instruction type the timing model issues it as.
CATEGORY = {"valu": "valu", "salu": "scalar", "smem": "scalar", "vmem": "vmem", "lds": "lds",
            "waitcnt": "internal", "barrier": "internal", "branch": "branch", "nop": "internal",
            "other": "internal"}

#: The CU's instruction types.
CATEGORIES = ("valu", "scalar", "vmem", "lds", "branch", "internal")


@lru_cache(maxsize=None)
def _classes() -> dict[str, str]:
    out = {}
    for mn, row in table().items():
        c = row.issue_class
        if c in ("message", "export") or (row.encoding == "SOPP" and c == "salu"):
            c = "other"
        out[mn] = c
    return out


def execution_class(mnemonic: str) -> str:
    """The execution class (one of :data:`EXECUTION_CLASSES`) of a table mnemonic (without
    ``_e32``/``_e64``/``_sdwa``/``_dpp`` suffix); ``other`` for a mnemonic the table lacks."""
    return _classes().get(mnemonic, "other")


def category_of(cls: str) -> str:
    """The CU instruction type (one of :data:`CATEGORIES`) of execution class ``cls``
    (``internal`` for an unknown one)."""
    return CATEGORY.get(cls, "internal")


__all__ = ["CATEGORIES", "CATEGORY", "EXECUTION_CLASSES", "category_of", "execution_class"]
