"""Instruction semantics by family, each module registering its instructions by the
names of the gfx906 table (:mod:`vlpc.isa`).

A module defines ``BUILDERS`` and/or ``BASE_BUILDERS``: ``dict[mnemonic, builder]``
where ``builder(ins, batch, prepared)`` returns the closure ``fn(batch, group)`` that
executes the instruction for a group of waves, or ``None`` when the operand form is
not handled.  ``BASE_BUILDERS`` are the generic builders of the plain forms of each
encoding class (:data:`BASE`: vector ALU with the bit-function tables of :mod:`.vint`,
:mod:`.f32`, :mod:`.f64` and :mod:`.convert`; scalar ALU; program control; vector
memory; and the SMEM and DS basics in :mod:`.smem` and :mod:`.ds`); ``BUILDERS`` add
instructions and forms, and where one registers a mnemonic that has a base builder too,
it is the one used (the float-mode modules run the base builder as their fast path in
the default mode).
:mod:`..core` keeps the wave state, scheduling and checking machinery only.
:func:`builder` finds the one for a mnemonic; :func:`names` lists them all (for
the coverage report).
"""

from __future__ import annotations

import importlib


#: the family modules, in lookup order
FAMILIES = ("float_mode", "vop_float", "vop3_int", "i16", "div", "sdwa_dpp", "f16", "vop3p", "ds", "smem", "salu_extra", "convert", "vmem_d16", "vmem_format", "scratch", "misc_vop3")

#: the base modules: the generic builders of the plain forms of each encoding class
#: (vector ALU and its bit-function tables, scalar ALU, program control, vector memory)
BASE = ("valu", "vint", "f32", "f64", "salu", "control", "memory")

_REGISTRY: dict | None = None


def _registry() -> dict:
    """Every module's ``BASE_BUILDERS`` (the generic builders of the base forms, each module
    declaring the gfx906 table's mnemonics its builder runs), overridden by any module's ``BUILDERS`` entry for the
    same mnemonic; a mnemonic in two ``BUILDERS`` (or two ``BASE_BUILDERS``) is an error."""
    global _REGISTRY
    if _REGISTRY is None:
        family: dict = {}
        base: dict = {}
        for name in FAMILIES + BASE:
            mod = importlib.import_module(f"{__name__}.{name}")
            for reg, attr in ((family, "BUILDERS"), (base, "BASE_BUILDERS")):
                for mn, fn in getattr(mod, attr, {}).items():
                    if mn in reg:
                        raise RuntimeError(f"{mn} is registered twice in the semantics modules' {attr}")
                    reg[mn] = fn
        _REGISTRY = {**base, **family}
    return _REGISTRY


def builder_for(ins):
    """The builder :func:`..core.compile_instr` uses for ``ins``: the registered one of its
    mnemonic (SDWA/DPP forms: :mod:`.sdwa_dpp`'s).  None means "no semantics" (the core
    raises UnsupportedInstruction naming the mnemonic and address)."""
    if "sdwa" in ins.f or "dpp" in ins.f:
        fam = _sdwa_dpp_or_none(ins)
        return None if fam is None else _guarded(fam)
    build = _registry().get(ins.mnemonic)
    return None if build is None else _guarded(build)


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
            _raise_later.fault = e  # (the core keeps no copy: the fault is located for one launch)
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
