"""The docs say what the code does: claims a first reader acts on, checked against the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_hip_md_names_as_xfail_only_the_kernels_the_emulator_cannot_run():
    """docs/hip.md's foreign-kernel notes: a kernel said to need an instruction the emulator
    lacks must be one tests/runtime/test_foreign_kernels.py runs as an xfail (its UNSUPPORTED)."""
    from test_foreign_kernels import UNSUPPORTED

    text = (ROOT / "docs" / "hip.md").read_text()
    table = text[text.index("## Foreign kernels"):]
    kernels = set(re.findall(r"`(\w+)`", table.split("\n\n")[2]))  # the table's kernel names
    assert {"int_mix", "ddiv_sqrt", "row_dot"} <= kernels
    claimed = {k for k in kernels if re.search(rf"`{k}` \(needs", table)}
    assert claimed == set(UNSUPPORTED), (claimed, UNSUPPORTED)


def test_runtime_md_names_the_encoding_classes_the_emulator_does_not_run():
    """docs/runtime.md: the classes it says are not emulated are exactly those of
    which `python -m vlpc.runtime.emulator.coverage` finds no instruction executable."""
    from vlpc.runtime.emulator.coverage import coverage

    text = " ".join((ROOT / "docs" / "runtime.md").read_text().split())
    said = re.search(r"not emulated: ([A-Z, ]+(?:and [A-Z]+|and scratch))\)", text)
    assert said is not None
    named = {w.upper() for w in re.findall(r"[A-Za-z]+", said.group(1)) if w != "and"}
    assert named == {cls for cls, c in coverage().items() if c.executable == 0}


def test_docs_name_test_files_that_exist():
    """A test file the docs (or the generator of docs/cli.md) send the reader to exists."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "vlpc" / "docs.py"]:
        for name in set(re.findall(r"tests/((?:\w+/)?test_\w+\.py)", path.read_text())):
            assert (ROOT / "tests" / name).exists(), (path.name, name)


def test_bench_is_described_as_modeling_on_the_emulator(capsys):
    """vlpc bench on the emulator prints modeled times (counters only with --no-model): its help,
    docs/cli.md and the README's quickstart say so."""
    from vlpc.cli import main

    dyn = str(ROOT / "examples" / "sgemm_dynamic.mlir")
    assert main(["bench", dyn, "-m", "64", "-n", "64", "-k", "16", "-q"]) == 0
    assert "modeled time (us)" in capsys.readouterr().out
    cli_md = (ROOT / "docs" / "cli.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "modeled by the timing model on the emulator" in cli_md
    assert "executed-instruction counters (emulator)" not in cli_md
    assert "emulator: counters" not in readme and "emulator modeled" in readme


#: A citation of a file outside the repository (the project's private reference folder or seed
#: file names) instead of the public source docs/references.md lists.
_PRIVATE_CITATION = re.compile(r"shared/(?:reference|seeds)|seed_mi60_sgemm|gfx906_microbench|\bgfx906\.md\b|"
                               r"\bseeds?/00\d|\b[Ss]eed 00\d")
#: A git commit named in prose (git log keeps history; the docs state current facts).
_COMMIT = re.compile(r"(?<![0-9A-Za-z_.#/-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![0-9A-Za-z_])")


def test_docs_cite_public_sources_and_no_commits():
    """README and docs/ name public sources (docs/references.md), never a path outside the
    repository, and no commit hashes; the code's docstrings and comments cite no private path."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        assert not _PRIVATE_CITATION.search(text), (path.name, _PRIVATE_CITATION.search(text).group())
        assert not _COMMIT.search(text), (path.name, _COMMIT.search(text).group())
    for folder in ("vlpc", "dialects", "passes", "runtime", "benchmarks", "tools", "tests", "lit_tests", "examples"):
        for path in (ROOT / folder).rglob("*"):
            # vlpc/benchmarking/seed.py (seed_table, for benchmarks/timing_calibration.py and
            # seed_sweep.py) reads the seed's table from beside the checkout at run time (its file
            # name is code there, not a citation).
            if path.suffix in (".py", ".mlir", ".md", ".hip", ".s") and path.relative_to(ROOT).as_posix() not in (
                    "tests/docs/test_walkthrough_docs.py", "benchmarks/timing_calibration.py", "vlpc/benchmarking/seed.py"):
                found = _PRIVATE_CITATION.search(path.read_text(errors="replace"))
                assert not found, (str(path.relative_to(ROOT)), found.group())
    refs = (ROOT / "docs" / "references.md").read_text()
    for source in ("An Alternative SGEMM on VEGA", "SGEMM_on_VEGA", "AMDGPUUsage", "SISchedule.td", "CLRX",
                   "Vega ISA guide", "gcnasm", "GGUF", "XeTLA", "AMD GPU Hardware Basics"):
        assert source in refs, source
