"""tools/float_mode_audit.py: every float instruction of the gfx906 table (all its forms)
reads the denormal mode fields its operand and result types use, except the documented
exemptions, and every form runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def audit_mod():
    spec = importlib.util.spec_from_file_location("float_mode_audit", ROOT / "tools" / "float_mode_audit.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["float_mode_audit"] = mod   # (its dataclass looks its module up)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def findings(audit_mod):
    return audit_mod.audit()


def test_every_float_form_runs(audit_mod, findings):
    assert len({f.mnemonic for f in findings}) > 230
    assert audit_mod.unsupported(findings) == []


def test_every_float_form_reads_its_denorm_modes(audit_mod, findings):
    assert audit_mod.problems(findings) == []


def test_exactly_the_min_max_family_reads_the_ieee_mode(audit_mod):
    changed, failed = audit_mod.ieee_survey()
    expected = {a for mn, a in audit_mod.candidates() if audit_mod.IEEE_READERS.match(mn)}
    assert failed == [] and len(expected) == 26
    assert set(changed) == expected


def test_clamp_of_nan_follows_dx10_clamp_in_every_float_form(audit_mod):
    survey = audit_mod.dx10_survey()
    assert len(survey["changes"]) > 140
    for form in survey["same"]:
        assert any(form.startswith(k) for k in audit_mod.DX10_EXEMPT), form
    assert [f.split()[0] for f in survey["error"]] == ["v_cvt_pkrtz_f16_f32"]   # refused by name


def test_the_audit_bites(audit_mod, monkeypatch):
    # packed f16 math made to ignore the mode (every denorm field read as "keep") is reported
    from vlpc.runtime.emulator.semantics import vop3p
    monkeypatch.setattr(vop3p, "denorm_bits", lambda mode, ftype: 3)
    found = audit_mod.audit(["v_pk_add_f16"])
    assert ("v_pk_add_f16 v12, v4, v8", "ignores FLOAT_DENORM_MODE_16_64") in audit_mod.problems(found)


def test_exemptions_are_named(audit_mod):
    assert audit_mod.exempt_reason("v_cmp_class_f16", "f16_64")
    assert audit_mod.exempt_reason("v_cvt_f16_f32", "f32")
    assert audit_mod.exempt_reason("v_cvt_f16_f32", "f16_64") is None
    assert audit_mod.exempt_reason("v_add_f32", "f32") is None
