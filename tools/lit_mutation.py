"""Mutation check for the lit tests' CHECK-NOT directives: does each one bite?

A ``CHECK-NOT`` only guards the span of output between the match of the positive
directive before it and the match of the one after it (FileCheck's rule).  A NOT placed
after the match it should guard, or at the end of the file, passes whatever is printed
where it was meant to look.  For every ``PREFIX-NOT: pattern`` of every RUN line whose
output goes to ``filecheck``, this script

1. runs the RUN line's command (lit substitutions %s, %inputs, %python, %t) and keeps its
   output (what filecheck reads);
2. finds the output lines the surrounding positive directives match (by truncating the
   output and the directives: the smallest output prefix the directives up to one pass);
3. inserts a line made of the NOT's pattern at the start, the middle and the end of the
   span it guards, and runs filecheck on each mutated output: each must fail.

It prints each NOT with the span it guards (insertion points in the output, and the
neighbouring directives) and exits 1 if any NOT does not bite (or cannot be checked), 0
otherwise.  A NOT after the last positive directive whose pattern is not also NOT'd in
every earlier gap is a warning (``WARN ... guards only the tail``): it cannot see anything
printed before the match it follows (a Traceback before an error line, an s_nop before the
load it follows).  Placement is the author's intent, which no tool knows: the span printed
for each NOT is what to read.

Usage:  python tools/lit_mutation.py [lit_tests/...mlir ...]     (default: every lit test)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIT = ROOT / "lit_tests"
DIRECTIVE = re.compile(r"(?P<prefix>[A-Za-z0-9_-]+?)(?P<kind>-NEXT|-SAME|-NOT|-LABEL|-DAG|-EMPTY|-COUNT-\d+)?:(?P<body>.*)$")


@dataclass
class Directive:
    line: int          # 0-based line in the test file
    kind: str          # "", "-NEXT", "-NOT", ...
    pattern: str


def run_filecheck(check_text: str, output: str, args: list[str]) -> bool:
    """True when filecheck (the Python package, in process) accepts ``output``."""
    from filecheck.matcher import Matcher
    from filecheck.options import parse_argv_options

    with tempfile.TemporaryDirectory() as tmp:
        check = Path(tmp) / "check.mlir"
        inp = Path(tmp) / "input.txt"
        check.write_text(check_text)
        inp.write_text(output)
        opts = parse_argv_options(["filecheck", str(check), "--input-file", str(inp), *args])
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            try:
                return Matcher.from_opts(opts).run() == 0
            except SystemExit as e:
                return e.code == 0


def directives(text: str, prefix: str) -> list[Directive]:
    out = []
    for i, line in enumerate(text.splitlines()):
        idx = line.find(prefix)
        while idx >= 0:
            m = DIRECTIVE.match(line[idx:])
            if m and m.group("prefix") == prefix and (idx == 0 or not (line[idx - 1].isalnum() or line[idx - 1] in "-_")):
                out.append(Directive(i, m.group("kind") or "", m.group("body").strip()))
                break
            idx = line.find(prefix, idx + 1)
    return out


def keep_only(text: str, keep: set[int], prefix: str, all_dirs: list[Directive]) -> str:
    """The check file with every directive not in ``keep`` (line numbers) disabled, lines kept."""
    lines = text.splitlines()
    for d in all_dirs:
        if d.line not in keep:
            lines[d.line] = "//"
    return "\n".join(lines) + "\n"


def match_line(text: str, prefix: str, dirs: list[Directive], upto: int, output_lines: list[str],
               args: list[str]) -> int | None:
    """The number of output lines needed for the positive directives dirs[:upto + 1] to pass
    (so the line index + 1 of dirs[upto]'s match); None if they never pass."""
    keep = {d.line for d in dirs[:upto + 1] if d.kind != "-NOT"}
    check = keep_only(text, keep, prefix, dirs)
    lo, hi = 1, len(output_lines)
    if not run_filecheck(check, "\n".join(output_lines) + "\n", args):
        return None
    while lo < hi:  # smallest prefix that passes
        mid = (lo + hi) // 2
        if run_filecheck(check, "\n".join(output_lines[:mid]) + "\n", args):
            hi = mid
        else:
            lo = mid + 1
    return lo


def literal_for(pattern: str) -> str | None:
    """A line the NOT pattern matches: literal text as is, {{regex}} replaced by a sample."""
    if "[[" in pattern:
        return None
    parts = re.split(r"(\{\{.*?\}\})", pattern)
    out = []
    rx = []
    for part in parts:
        if part.startswith("{{") and part.endswith("}}"):
            body = part[2:-2]
            sample = next((s for s in ("", "0", "1", "v1", "s1", "x", " ") if re.fullmatch(body, s)), None)
            if sample is None:
                return None
            out.append(sample)
            rx.append(body)
        else:
            out.append(part)
            rx.append(re.escape(part))
    text = "".join(out)
    return text if re.search("".join(rx), text) else None


def substitute(cmd: str, test: Path, tmp: str) -> str:
    return (cmd.replace("%python", shlex.quote(sys.executable)).replace("%inputs", str(LIT / "Inputs"))
            .replace("%s", str(test)).replace("%t", os.path.join(tmp, "t")))


def run_lines(text: str) -> list[str]:
    return [line.split("RUN:", 1)[1].strip() for line in text.splitlines() if "RUN:" in line]


def gaps(dirs: list[Directive], j: int) -> list[tuple[int, int]]:
    """Index ranges of the directives in each gap between positive directives up to ``j``
    (a gap closed by a -NEXT/-SAME/-EMPTY directive holds no whole line and is left out)."""
    out, lo = [], 0
    for i, d in enumerate(dirs[:j + 1]):
        if d.kind != "-NOT":
            if d.kind not in ("-NEXT", "-SAME", "-EMPTY"):
                out.append((lo, i))
            lo = i + 1
    out.append((lo, j + 1))
    return out


warnings: list[str] = []


def check_run_line(test: Path, text: str, run: str, verbose: bool) -> list[str]:
    """Problems of the NOT directives exercised by one RUN line."""
    if "| filecheck" not in run:
        return []
    cmd, fc = run.rsplit("| filecheck", 1)
    fc_args = shlex.split(fc)
    prefix = "CHECK"
    args = []
    for a in fc_args:
        if a.startswith("--check-prefix="):
            prefix = a.split("=", 1)[1]
        elif a != "%s":
            args.append(a)
    dirs = directives(text, prefix)
    nots = [i for i, d in enumerate(dirs) if d.kind == "-NOT"]
    if not nots:
        return []
    if "REQUIRES: gfx906" in text:
        return []
    cmd = cmd.strip()
    if cmd.startswith("not "):
        cmd = cmd[4:]
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "PYTHONSAFEPATH": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["bash", "-c", substitute(cmd, test, tmp)], capture_output=True, text=True, env=env,
                              cwd=tmp)
    output = proc.stdout + (proc.stderr if "2>&1" in cmd else "")
    lines = output.splitlines()
    problems = []
    name = os.path.relpath(test, ROOT)
    if not run_filecheck(text, output, args + [f"--check-prefix={prefix}"] if prefix != "CHECK" else args):
        return [f"{name}: {prefix}: the unmutated output already fails filecheck"]
    pargs = args + ([f"--check-prefix={prefix}"] if prefix != "CHECK" else [])
    cache: dict[int, int | None] = {}

    def line_of(i: int) -> int | None:
        if i not in cache:
            cache[i] = match_line(text, prefix, dirs, i, lines, pargs)
        return cache[i]

    for j in nots:
        d = dirs[j]
        where = f"{name}:{d.line + 1}: {prefix}-NOT: {d.pattern}"
        before = next((i for i in range(j - 1, -1, -1) if dirs[i].kind != "-NOT"), None)
        after = next((i for i in range(j + 1, len(dirs)) if dirs[i].kind != "-NOT"), None)
        start = 0 if before is None else line_of(before)       # insert at index >= start
        end = len(lines) if after is None else (line_of(after) or 0) - 1  # ... and <= end
        bad = literal_for(d.pattern)
        if bad is None:
            problems.append(f"{where}: cannot make a line its pattern matches (variables or regex); check it by hand")
            continue
        if start is None or end < start:
            problems.append(f"{where}: empty span (lines {start}..{end}); it can never fire")
            continue
        tail = ""
        if after is None and before is not None:
            covered = all(any(dirs[i].kind == "-NOT" and dirs[i].pattern == d.pattern for i in range(lo_, hi_))
                          for lo_, hi_ in gaps(dirs, j))
            tail = "" if covered else " [tail: guards only from a match to the end of the output]"
            if tail:
                warnings.append(f"{where}: guards only the tail (after line {dirs[before].line + 1}'s match); "
                                "if the pattern must not appear anywhere, repeat the NOT in every gap")
        spots = sorted({start, (start + end) // 2, end})
        missed = []
        for at in spots:
            mutated = lines[:at] + [bad] + lines[at:]
            if run_filecheck(text, "\n".join(mutated) + "\n", pargs):
                missed.append(at)
        span = (f"insertion points {start}..{end} of {len(lines)} output lines (after the match of "
                f"{'nothing' if before is None else f'line {dirs[before].line + 1}'}, before the match of "
                f"{'nothing' if after is None else f'line {dirs[after].line + 1}'})")
        if missed:
            problems.append(f"{where}: does not bite: inserting {bad!r} at insertion point(s) {missed} "
                            f"still passes; {span}")
        elif verbose:
            print(f"ok   {where}: bites at {spots}; {span}{tail}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", nargs="*", help="lit test files (default: every test under lit_tests/)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only the problems")
    ns = ap.parse_args(argv)
    tests = [Path(t).resolve() for t in ns.tests] or sorted(
        p for p in LIT.rglob("*.mlir") if "Inputs" not in p.parts and "Output" not in p.parts)
    problems = []
    for test in tests:
        text = test.read_text()
        for run in run_lines(text):
            problems += check_run_line(test, text, run, not ns.quiet)
    for w in warnings:
        print(f"WARN {w}")
    for p in problems:
        print(f"FAIL {p}")
    print(f"lit_mutation: {len(problems)} problem(s) in {len(tests)} file(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
