"""Instruction semantics by family, each module registering its instructions by the
names of the gfx906 table (:mod:`vlpc.isa`).

A family module defines ``BUILDERS: dict[mnemonic, builder]`` where
``builder(ins, batch, prepared)`` returns the closure ``fn(batch, group)`` that
executes the instruction for a group of waves (the same contract as the builders
in :mod:`..core`), or ``None`` when the operand form is not handled.
:func:`builder` finds the one for a mnemonic; :func:`names` lists them all (for
the coverage report).
"""

from __future__ import annotations

import importlib

from .. import isa as _isa

#: the family modules, in lookup order
FAMILIES = ("float_mode", "vop_float", "vop3_int", "i16", "div", "sdwa_dpp", "f16", "vop3p", "ds", "smem", "salu_extra", "convert", "vmem_d16", "vmem_format", "scratch", "misc_vop3")

_REGISTRY: dict | None = None


def _registry() -> dict:
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict = {}
        for fam in FAMILIES:
            mod = importlib.import_module(f"{__name__}.{fam}")
            for mn, fn in mod.BUILDERS.items():
                if mn in reg:
                    raise RuntimeError(f"{mn} is registered by two semantics modules")
                reg[mn] = fn
        _REGISTRY = reg
    return _REGISTRY


def builder_for(ins, core_builders: dict):
    """The builder :func:`..core.compile_instr` uses for ``ins``.

    A family module's builder for the mnemonic comes first; otherwise the core's
    builder of the encoding class, but only for the mnemonics the core was written
    for (:data:`..isa.CORE_EXECUTED`, plain forms: SDWA/DPP forms and VOP3P need a
    family module).  None means "no semantics" (the core raises
    UnsupportedInstruction naming the mnemonic and address).
    """
    if "sdwa" in ins.f or "dpp" in ins.f:
        fam = _sdwa_dpp_or_none(ins)
        return None if fam is None else _guarded(fam)
    fam = _registry().get(ins.mnemonic)
    if fam is not None:
        return _guarded(fam)
    if ins.mnemonic not in _isa.CORE_EXECUTED:
        return None
    return core_builders.get(ins.encoding)


def _guarded(build):
    """A family builder whose EmulatorFault (e.g. an unsupported operand form found while
    compiling) is raised when the instruction executes, so the core locates it (kernel,
    pc, wave) like any other fault."""
    def guarded(ins, b, p):
        from ..errors import EmulatorFault
        try:
            return build(ins, b, p)
        except EmulatorFault as e:
            def _raise_later(b, g, _e=e):
                raise _e
            return _raise_later
    return guarded


def _sdwa_dpp_or_none(ins):
    if "sdwa_dpp" not in FAMILIES:
        return None
    from . import sdwa_dpp
    return sdwa_dpp.builder(ins)


def waitcnt_violation(batch, group, key, fault):
    """A missing s_waitcnt found by the core's checker: see :mod:`.race`."""
    from .race import waitcnt_violation as handle
    handle(batch, group, key, fault)


def builder(mnemonic: str):
    """The registered builder of ``mnemonic`` (table name), or None."""
    return _registry().get(mnemonic)


def names() -> frozenset:
    """Every mnemonic a family module registers."""
    return frozenset(_registry())
