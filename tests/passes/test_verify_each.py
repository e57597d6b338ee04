"""When the compiler verifies the IR (vlpc.compiler.run_passes): after every pass or once at the
end, and the test suite's setting for launch-time variants (VLPC_VERIFY_EACH=main)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.dialects.func import ReturnOp
from xdsl.passes import ModulePass

from vlpc import compiler
from vlpc.compiler import InternalError, make_context, parse, run_passes, verify_each_default, verify_each_variant

TEXT = """builtin.module {
  func.func @f() {
    func.return
  }
}"""


@dataclass(frozen=True)
class DropReturn(ModulePass):
    """Breaks the IR: the function's block loses its terminator."""
    name = "drop-return"

    def apply(self, ctx, op) -> None:
        for o in list(op.walk()):
            if isinstance(o, ReturnOp):
                o.detach()
                o.erase()


@dataclass(frozen=True)
class Nothing(ModulePass):
    name = "nothing"

    def apply(self, ctx, op) -> None:
        pass


def _module():
    return parse(TEXT, "<test>", make_context())


@pytest.mark.parametrize("each,named", [(True, "drop-return"), (False, "nothing")])
def test_the_broken_pass_is_named_only_when_verifying_each(each, named):
    with pytest.raises(InternalError) as e:
        run_passes(_module(), [DropReturn(), Nothing()], verify_each=each)
    assert e.value.pass_name.startswith(named), e.value.pass_name


@pytest.mark.parametrize("env,each,variant", [("", False, False), ("0", False, False), ("1", True, True),
                                              ("main", True, False)])
def test_the_environment_setting(monkeypatch, env, each, variant):
    monkeypatch.setenv("VLPC_VERIFY_EACH", env)
    assert verify_each_default() is each
    assert verify_each_variant() is variant


DYNAMIC = """builtin.module {
  func.func @g(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
    func.return
  }
}"""


@pytest.mark.parametrize("env,variant_each", [("1", True), ("main", False)])
def test_launch_variants_follow_the_setting(monkeypatch, env, variant_each):
    """The module's own pipeline verifies every pass under both settings; its variants' pipelines
    only under VLPC_VERIFY_EACH=1."""
    monkeypatch.setenv("VLPC_VERIFY_EACH", env)
    seen = []
    real = compiler.run_passes

    def spy(module, passes, ctx=None, after_each=None, verify_each=None, before_each=None):
        seen.append(verify_each_default() if verify_each is None else verify_each)
        return real(module, passes, ctx, after_each=after_each, verify_each=verify_each, before_each=before_each)

    monkeypatch.setattr(compiler, "run_passes", spy)
    import vlpc
    k = vlpc.compile(DYNAMIC, target="gfx906", cache=False)
    assert k is not None
    assert len(seen) >= 2, seen  # the module's pipeline and at least one variant's
    assert seen[0] is True
    assert all(v is variant_each for v in seen[1:]), seen
