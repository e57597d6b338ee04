"""How much of the gfx906 ISA the emulator decodes and executes.

    python -m vlpc.runtime.emulator.coverage [--missing CLASS]

For every row of the instruction table (:mod:`vlpc.isa`, 1,175 mnemonics) and
its ``_e64``/SDWA/DPP forms, the row's machine-code sample is decoded
(*decoded*: the decoder names it with the table's mnemonic) and compiled for a
one-wave batch (*executable*: the emulator has semantics for it, i.e. compiling
does not yield an "unsupported instruction" fault).  Prints one line per
encoding class; ``--missing CLASS`` lists the mnemonics of that class without
semantics.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

import vlpc.isa as isa_table

from .core import Batch, DispatchConfig, _Run, compile_instr
from .decode import decode_at
from .memory import Memory


@dataclass
class ClassCoverage:
    total: int = 0
    decoded: int = 0
    executable: int = 0
    missing: list = field(default_factory=list)


def _batch(code: bytes) -> Batch:
    cfg = DispatchConfig(kernel_name="coverage", code=code, code_address=0x1000, entry_address=0x1000,
                         grid=(1, 1, 1), block=(64, 1, 1), vgpr_count=256, sgpr_count=102,
                         lds_bytes=65536)
    return Batch(_Run(Memory(), cfg), [(0, 0, 0)])


def _check(sample: bytes, mnemonic: str) -> tuple[bool, bool]:
    ins = decode_at(sample, 0)
    decoded = ins.mnemonic == mnemonic
    if not (decoded and ins.supported):
        return decoded, False
    try:
        p = compile_instr(ins, _batch(sample))
    except Exception:  # noqa: BLE001 - a builder that crashes is not executable
        return decoded, False
    q = getattr(p.fn, "__qualname__", "")
    return decoded, not (q.startswith("_raise") or "_raise_later" in q)


def coverage() -> dict[str, ClassCoverage]:
    """``{encoding class: ClassCoverage}`` plus ``"SDWA"``, ``"DPP"``, ``"VOP3 (e64 forms)"``."""
    from . import semantics
    semantics.names()  # a registry conflict is an error, not "not executable"
    out: dict[str, ClassCoverage] = {}
    for r in isa_table.table().values():
        forms = [(r.encoding, r.sample)]
        if r.sample_e64 is not None:
            forms.append(("VOP3 (e64 forms)", r.sample_e64))
        if r.sample_sdwa is not None:
            forms.append(("SDWA", r.sample_sdwa))
        if r.sample_dpp is not None:
            forms.append(("DPP", r.sample_dpp))
        for cls, sample in forms:
            c = out.setdefault(cls, ClassCoverage())
            d, e = _check(sample, r.mnemonic)
            c.total += 1
            c.decoded += d
            c.executable += e
            if not e:
                c.missing.append(r.mnemonic)
    return out


_ORDER = (*isa_table.ENCODINGS, "VOP3 (e64 forms)", "SDWA", "DPP")


def report(cov: dict[str, ClassCoverage]) -> str:
    lines = [f"{'class':<18}{'mnemonics':>10}{'decoded':>10}{'executable':>12}"]
    tot = ClassCoverage()
    base = ClassCoverage()
    for k in _ORDER:
        c = cov.get(k)
        if c is None:
            continue
        lines.append(f"{k:<18}{c.total:>10}{c.decoded:>10}{c.executable:>12}")
        for t in (tot,) + ((base,) if k in isa_table.ENCODINGS else ()):
            t.total += c.total
            t.decoded += c.decoded
            t.executable += c.executable
    graphics = sum(cov[k].total for k in ("MIMG", "VINTRP", "EXP") if k in cov)
    lines.append(f"{'base mnemonics':<18}{base.total:>10}{base.decoded:>10}{base.executable:>12}"
                 f"   ({100 * base.executable / max(1, base.total - graphics):.1f} % executable "
                 f"without MIMG/VINTRP/EXP)")
    lines.append(f"{'all forms':<18}{tot.total:>10}{tot.decoded:>10}{tot.executable:>12}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlpc.runtime.emulator.coverage",
                                 description="gfx906 ISA coverage of the emulator (decoded / executable)")
    ap.add_argument("--missing", metavar="CLASS", help="list the mnemonics of CLASS without semantics")
    a = ap.parse_args(argv)
    cov = coverage()
    if a.missing:
        if a.missing not in cov:
            print(f"error: unknown class {a.missing!r}; one of {', '.join(cov)}", file=sys.stderr)
            return 2
        print("\n".join(cov[a.missing].missing))
        return 0
    print(report(cov))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BrokenPipeError:  # `... | head`: the reader is gone (no traceback, as vlpc's commands)
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
