"""The gfx906 instruction set as data: one row per instruction.

The table (``gfx906.json`` beside this file) was generated once by
``tools/gen_isa_table.py``, which enumerates every opcode of every encoding
class through LLVM's disassembler (``llvm-mc-19 --disassemble -mcpu=gfx906``);
``tests/isa/test_isa_table.py`` re-assembles every row with LLVM
(``llvm-mc -show-encoding``) and checks its encoding class and opcode.

Each :class:`Instruction` row gives:

* ``mnemonic`` (LLVM's spelling, without the ``_e32``/``_e64``/``_sdwa``/``_dpp``
  suffix), ``encoding`` (``SOP1 SOP2 SOPK SOPC SOPP SMEM VOP1 VOP2 VOPC VOP3a VOP3b
  VOP3P VINTRP DS FLAT GLOBAL SCRATCH MUBUF MTBUF MIMG EXP``) and ``opcode`` (the
  value of that encoding's opcode field);
* ``vop3_opcode``: the VOP3 (``_e64``) opcode of a VOP1/VOP2/VOPC/VINTRP instruction;
  ``sdwa`` / ``dpp``: whether LLVM decodes its SDWA / DPP form;
* ``operands``: ``(kind, dwords)`` per operand as LLVM prints them (``v`` VGPRs,
  ``s`` scalar registers, ``imm`` immediates/fields, ``off``), destination first;
  derived from the disassembly of one sample encoding (``asm``), so register
  widths are exact, and ``imm`` stands for whatever that sample held;
* ``counters``: the wait counters the instruction increments (``vmcnt``,
  ``lgkmcnt``, ``expcnt``; FLAT both ``vmcnt`` and ``lgkmcnt`` since it may address
  LDS) and ``in_order``: whether results return in issue order (VMEM and LDS do;
  SMEM and FLAT do not, so only a count of 0 retires a given one).  Sources:
  AMD "Vega Instruction Set Architecture" guide section 4.4 (s_waitcnt), LLVM
  ``SIInsertWaitcnts.cpp``;
* ``issue_class`` (``valu salu smem vmem lds branch waitcnt nop barrier message
  export``) and ``cycles``: issue cycles of one wave64 instruction on its unit.
  VALU: 4 (64 lanes on a SIMD16); f64 and other 64-bit VALU operations: 8
  (gfx906 runs f64 at half rate: LLVM ``AMDGPU.td`` ``FeatureHalfRate64Ops`` for
  gfx906, ``SISchedule.td`` ``Write64Bit``/``WriteDouble``); 32-bit integer
  multiplies ``v_mul_lo/hi_u32``, ``v_mul_hi_i32`` and ``v_swap_b32``: 8 (half rate,
  measured on MI50: 3.2e12 against 6.2e12 lane-instructions/s, carlushuang/gcnasm
  ``measure_ips_bench``; LLVM's ``WriteIntMul`` says quarter rate); transcendentals
  (``v_rcp/rsq/sqrt/exp/log/sin/cos`` in every precision, measured at 1.6e12) and
  ``v_mad_u64_u32``/``v_mad_i64_i32``: 16 (quarter rate, ``SISchedule.td``
  ``WriteTrans32``/``WriteIntMul``).  Scalar, memory and branch instructions: 1 issue
  cycle (their latency is the timing model's own parameter, not a table fact).  Another
  target's differences are in its own file (``gfx900.json`` ``cycles``: f64 at 1/16
  rate, 64); :func:`issue_cycles` reads both, and the timing model, ``Target`` and the
  plan model read :func:`issue_cycles`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

ENCODINGS = ("SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "SMEM", "VOP2", "VOP1", "VOPC", "VOP3a", "VOP3b",
             "VOP3P", "VINTRP", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "MIMG", "EXP")

_SUFFIXES = ("_e32", "_e64", "_sdwa", "_dpp")

#: The VGPRs of every row's sample instruction (``asm``, ``sample``): ``tools/gen_isa_table.py``
#: puts the address in v4, the data in v8, the second data in v16 and the result in v12, so
#: the sample tells which fields an instruction uses and how wide they are (the emulator's
#: decoder reads memory instructions' operand widths so).
SAMPLE_ADDR, SAMPLE_DATA, SAMPLE_DATA1, SAMPLE_DST = 4, 8, 16, 12


@dataclass(frozen=True)
class Instruction:
    """One gfx906 instruction (see the module docstring for the fields)."""

    mnemonic: str
    encoding: str
    opcode: int
    operands: tuple[tuple[str, int], ...]
    counters: tuple[str, ...]
    in_order: bool
    issue_class: str
    cycles: int
    asm: str
    vop3_opcode: int | None = None
    asm_e64: str | None = None
    sdwa: bool = False
    dpp: bool = False
    #: machine code of the sample instruction ``asm`` (and of its _e64/SDWA/DPP forms),
    #: followed by one dword (0x00003c00) that literal-taking forms read as their literal
    sample: bytes = b""
    sample_e64: bytes | None = None
    sample_sdwa: bytes | None = None
    sample_dpp: bytes | None = None


def _hex(h: str | None) -> bytes | None:
    return None if h is None else bytes.fromhex(h)


@lru_cache(maxsize=None)
def _load() -> tuple[dict, dict[str, Instruction]]:
    text = resources.files(__package__).joinpath("gfx906.json").read_text()
    data = json.loads(text)
    rows: dict[str, Instruction] = {}
    for r in data["instructions"]:
        rows[r["mnemonic"]] = Instruction(
            mnemonic=r["mnemonic"], encoding=r["encoding"], opcode=r["opcode"],
            operands=tuple((k, w) for k, w in r["operands"]), counters=tuple(r["counters"]),
            in_order=r["in_order"], issue_class=r["issue_class"], cycles=r["cycles"], asm=r["asm"],
            vop3_opcode=r.get("vop3_opcode"), asm_e64=r.get("asm_e64"), sdwa=r.get("sdwa", False),
            dpp=r.get("dpp", False), sample=bytes.fromhex(r["bytes"]),
            sample_e64=_hex(r.get("bytes_e64")), sample_sdwa=_hex(r.get("bytes_sdwa")),
            sample_dpp=_hex(r.get("bytes_dpp")))
    meta = {k: v for k, v in data.items() if k != "instructions"}
    return meta, rows


def table() -> dict[str, Instruction]:
    """Every gfx906 instruction, by mnemonic (1,175 rows)."""
    return _load()[1]


def base_mnemonic(mnemonic: str) -> str:
    """``mnemonic`` without an ``_e32``/``_e64``/``_sdwa``/``_dpp`` suffix."""
    for s in _SUFFIXES:
        if mnemonic.endswith(s):
            return mnemonic[: -len(s)]
    return mnemonic


def lookup(mnemonic: str) -> Instruction:
    """The row of ``mnemonic`` (suffixes ``_e32``/``_e64``/``_sdwa``/``_dpp`` allowed).

    Raises ``KeyError`` naming the mnemonic when gfx906 has no such instruction.
    """
    rows = _load()[1]
    row = rows.get(mnemonic) or rows.get(base_mnemonic(mnemonic))
    if row is None:
        raise KeyError(f"{mnemonic!r} is not a gfx906 instruction (vlpc/isa/gfx906.json)")
    return row


def lookup_form(mnemonic: str) -> Instruction:
    """The row of ``mnemonic`` when gfx906 has that exact form: a bare mnemonic, or one
    with ``_e32`` (a VOP1/VOP2/VOPC instruction), ``_e64`` (one with a VOP3 encoding),
    ``_sdwa`` or ``_dpp`` (one LLVM decodes in that form).

    Raises ``KeyError`` naming the mnemonic (and the missing form) otherwise.
    """
    rows = _load()[1]
    row = rows.get(mnemonic)
    if row is not None:
        return row
    base = base_mnemonic(mnemonic)
    row = rows.get(base)
    if row is None:
        raise KeyError(f"{mnemonic!r} is not a gfx906 instruction (vlpc/isa/gfx906.json)")
    suffix = mnemonic[len(base):]
    has = {"_e32": row.encoding in ("VOP1", "VOP2", "VOPC"),
           "_e64": row.vop3_opcode is not None or row.encoding in ("VOP3a", "VOP3b", "VOP3P"),
           "_sdwa": row.sdwa, "_dpp": row.dpp}[suffix]
    if not has:
        raise KeyError(f"{mnemonic!r}: gfx906's {base} ({row.encoding}) has no {suffix[1:]} form "
                       "(vlpc/isa/gfx906.json)")
    return row


#: Encoding classes whose stores and atomics write memory, and the index of the data
#: operand in their operand list (``Instruction.operands``; LLVM's ``vdata``).
_STORE_DATA_INDEX = {"FLAT": 1, "GLOBAL": 1, "SCRATCH": 1, "MUBUF": 0, "MTBUF": 0, "MIMG": 0}


def store_data(row: Instruction) -> tuple[int, int] | None:
    """``(operand index, dwords)`` of the data a vector-memory store or atomic writes
    (LLVM ``mayStore``: ``*_store_*`` and ``*_atomic_*``; an atomic's data holds both the
    new and, for ``cmpswap``, the expected value); None for any other instruction.

    The hazard ``gcn-insert-hazard-nops`` checks for stores of more than 8 bytes reads
    it (LLVM ``GCNHazardRecognizer::createsVALUHazard``).
    """
    idx = _STORE_DATA_INDEX.get(row.encoding)
    if idx is None or not ("_store" in row.mnemonic or "_atomic_" in row.mnemonic):
        return None
    kind, dwords = row.operands[idx]
    return (idx, dwords) if kind == "v" else None


@lru_cache(maxsize=None)
def opcodes(encoding: str) -> dict[int, str]:
    """``{opcode: mnemonic}`` of one encoding class (``VOP3`` means VOP3a + VOP3b's own
    opcodes, without the ``_e64`` forms of VOP1/VOP2/VOPC)."""
    if encoding == "VOP3":
        return {r.opcode: r.mnemonic for r in table().values() if r.encoding in ("VOP3a", "VOP3b")}
    if encoding not in ENCODINGS:
        raise KeyError(f"unknown encoding class {encoding!r}; one of {', '.join(ENCODINGS)}")
    return {r.opcode: r.mnemonic for r in table().values() if r.encoding == encoding}


@lru_cache(maxsize=None)
def vop3_opcodes() -> dict[int, str]:
    """Every VOP3 opcode (0..0x37f): the ``_e64`` forms of VOPC/VOP2/VOP1/VINTRP and the
    VOP3-only instructions."""
    out = {r.vop3_opcode: r.mnemonic for r in table().values() if r.vop3_opcode is not None}
    out.update(opcodes("VOP3"))
    return out


def llvm_version() -> str:
    """The LLVM that generated the table (as ``llvm-mc --version`` printed it)."""
    return _load()[0].get("llvm", "")


# Which of these instructions each target has (gfx900 lacks some: vlpc/isa/availability.py).
from vlpc.isa.availability import available, issue_cycles, missing, unavailable_reason  # noqa: E402

__all__ = ["ENCODINGS", "Instruction", "available", "base_mnemonic", "issue_cycles", "llvm_version", "lookup",
           "lookup_form", "missing", "opcodes", "store_data", "table", "unavailable_reason", "vop3_opcodes"]
