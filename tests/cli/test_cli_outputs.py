"""Named outputs go *through* the path, as ``cc -o`` does (docs/cli_conventions.md "Outputs").

A regular file or a new path is written atomically (temporary file + rename); a character
device, a FIFO or a symbolic link is written through: the device or FIFO is opened and
written in place (never replaced, never unlinked), the link is followed and stays a link.
Expected outcomes come from POSIX semantics (``open(2)``, ``rename(2)``), checked with
``os.stat``, not from vlpc.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from vlpc.cli import main
from vlpc.cli_support import check_writable, write_atomic
from vlpc.errors import VlpcError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sgemm_nt.mlir"


def _null_device(tmp_path: Path) -> Path:
    """A character device with /dev/null's numbers (1, 3) in ``tmp_path`` (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root (mknod)")
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError as e:  # a container without CAP_MKNOD
        pytest.skip(f"mknod refused: {e}")
    return dev


def _fifo_reader(path: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def read():
        with open(path, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, got


def test_character_device_is_written_in_place_not_replaced(tmp_path):
    dev = _null_device(tmp_path)
    before = os.stat(dev)
    write_atomic(str(dev), b"\x7fELF code object")
    check_writable(str(dev))
    after = os.stat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert sorted(os.listdir(tmp_path)) == ["null"]  # no temporary left beside it


def test_compile_to_a_character_device_keeps_the_device(tmp_path, capsys):
    dev = _null_device(tmp_path)
    ino = os.stat(dev).st_ino
    assert main(["compile", str(EXAMPLE), "-o", str(dev)]) == 0
    st = os.stat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_ino == ino
    assert sorted(os.listdir(tmp_path)) == ["null"]


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t, got = _fifo_reader(fifo)
    write_atomic(str(fifo), "text through a pipe\n")
    t.join(timeout=30)
    assert got == [b"text through a pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


def test_compile_asm_into_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "out.s"
    os.mkfifo(fifo)
    t, got = _fifo_reader(fifo)
    assert main(["compile", str(EXAMPLE), "-o", str(fifo)]) == 0
    t.join(timeout=60)
    assert got and b".amdgcn_target" in got[0]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_symlink_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    write_atomic(str(link), "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # the target's permissions are kept
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "real.txt"]


def test_symlink_to_another_directory_writes_the_target_there(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    target = tmp_path / "b" / "out.bin"
    target.write_bytes(b"old")
    link = tmp_path / "a" / "out.bin"
    link.symlink_to(target)
    write_atomic(str(link), b"new")
    check_writable(str(link))
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert os.listdir(tmp_path / "a") == ["out.bin"] and os.listdir(tmp_path / "b") == ["out.bin"]


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link"
    link.symlink_to("made.txt")
    write_atomic(str(link), "x")
    assert link.is_symlink() and (tmp_path / "made.txt").read_text() == "x"


def test_regular_file_is_still_replaced_atomically(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    ino = os.stat(out).st_ino
    write_atomic(str(out), "new")
    assert out.read_text() == "new" and os.stat(out).st_ino != ino  # a rename, not a rewrite
    assert os.listdir(tmp_path) == ["out.txt"]


def test_directory_and_unwritable_device_are_one_line_errors(tmp_path):
    with pytest.raises(VlpcError, match="it is a directory"):
        write_atomic(str(tmp_path), "x")
    link = tmp_path / "dirlink"
    link.symlink_to(tmp_path)
    with pytest.raises(VlpcError, match="it is a directory"):
        check_writable(str(link))
