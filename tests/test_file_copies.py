"""Reading a file and writing its stored copy with few system calls, without losing what
the slower path guaranteed; and the binary check on the bytes it reads."""

from __future__ import annotations

import os
import random

import pytest

from kbdesk.ingest.copies import read_at_most, write_copy
from kbdesk.ingest.text_decode import _CONTROL, is_binary


def test_reads_what_the_file_holds_whatever_the_scan_saw(tmp_path):
    path = tmp_path / "note.md"
    data = os.urandom(300_000)
    path.write_bytes(data)
    assert read_at_most(path, len(data), 10_000_000) == data
    assert read_at_most(path, 1_000, 10_000_000) == data  # it grew after the scan
    assert read_at_most(path, 900_000, 10_000_000) == data  # it shrank
    assert read_at_most(path, len(data), 1001) == data[:1001]  # never past the limit: the caller sees it is over
    path.write_bytes(b"")
    assert read_at_most(path, 0, 100) == b""


def test_a_new_copy_is_written_in_place_and_a_replacement_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "kb" / "k1" / "d1_note.md"
    write_copy(path, b"first version", fresh=True)  # its folder is made
    assert path.read_bytes() == b"first version"
    write_copy(path, b"second")
    assert path.read_bytes() == b"second"
    assert sorted(p.name for p in path.parent.iterdir()) == ["d1_note.md"]  # no temporary file left


    def failing_write(fd, view):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", failing_write)
    with pytest.raises(OSError) as err:
        write_copy(path, b"third, never written")
    assert err.value.errno == 28
    monkeypatch.undo()
    assert path.read_bytes() == b"second"  # the older copy stays
    assert sorted(p.name for p in path.parent.iterdir()) == ["d1_note.md"]


def test_the_binary_check_counts_control_bytes_as_before():
    rng = random.Random(5)
    controls = sorted(_CONTROL)
    for _ in range(200):
        size = rng.randrange(1, 9000)
        share = rng.random() * 0.1
        data = bytes(rng.choice(controls) if rng.random() < share else rng.randrange(32, 127) for _ in range(size))
        sample = data[:8192]
        expected = sum(1 for b in sample if b in _CONTROL) > 0.05 * len(sample)
        assert is_binary(data) == expected
    assert is_binary(b"\x89PNG\r\n\x1a\n" + b"text" * 100)
    assert not is_binary("ansi \x1b[31mred\x1b[0m and tabs\t\n".encode() * 50)
    utf16 = "\ufeff".encode("utf-16-le") + ("text " * 300).encode("utf-16-le")
    assert not is_binary(utf16)
    assert is_binary("\ufeff".encode("utf-16-le") + ("\x01\x02" * 300).encode("utf-16-le"))
