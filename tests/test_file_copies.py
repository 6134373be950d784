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


def test_the_binary_check_counts_control_bytes_and_tolerates_a_few_nuls():
    rng = random.Random(5)
    controls = sorted(_CONTROL)
    for _ in range(200):
        size = rng.randrange(1, 9000)
        share = rng.random() * 0.1
        data = bytes(rng.choice(controls) if rng.random() < share else rng.randrange(32, 127) for _ in range(size))
        sample = data[:8192]
        nuls = sample.count(0)
        others = sum(1 for b in sample if b in _CONTROL) - nuls
        if not others and nuls > 0.4 * len(sample):
            continue  # every other byte NUL: read as UTF-16 (below)
        expected = others > 0.05 * len(sample) or nuls > max(4, 0.1 * len(sample))
        assert is_binary(data) == expected
    # a short CSV with two stray NULs is text, and so is UTF-16 without a BOM
    assert not is_binary(b"name,city\nAda,Paris\x00\nBo,Rome\x00\n")
    assert not is_binary(("text " * 300).encode("utf-16-le"))
    assert not is_binary(("text " * 300).encode("utf-16-be"))
    assert is_binary(b"\x89PNG\r\n\x1a\n" + b"text" * 100)
    assert not is_binary(b"ansi \x1b[31mred\x1b[0m and tabs\t\n" * 50)
    utf16 = "\ufeff".encode("utf-16-le") + ("text " * 300).encode("utf-16-le")
    assert not is_binary(utf16)
    assert is_binary("\ufeff".encode("utf-16-le") + ("\x01\x02" * 300).encode("utf-16-le"))


def _items(folder, count, fresh=True):
    return [(folder / f"d{i}_note{i}.md", f"note {i} ".encode() * (i + 1), fresh) for i in range(count)]


def test_the_helper_writes_a_batch_and_says_which_copy_failed(tmp_path):
    from kbdesk.ingest.helper import MIN_FILES, Helper

    folder = tmp_path / "kb" / "k1"
    items = _items(folder, MIN_FILES + 4)
    blocked = tmp_path / "not-a-folder"
    blocked.write_bytes(b"a file where a folder should be")
    items[3] = (blocked / "d3_note3.md", b"never", True)
    copier = Helper()
    try:
        errors = copier.write(items)
        assert copier._proc is not None and copier._proc.poll() is None  # it went through the helper
        assert [i for i, e in enumerate(errors) if e is not None] == [3]
        error = errors[3]
        assert error is not None and error.errno is not None and "d3_note3.md" in str(error)
        for n, (path, data, _) in enumerate(items):
            if n != 3:
                assert path.read_bytes() == data
        again = [(p, d + b" v2", False) for p, d, _ in items if p.parent == folder]  # new versions: renamed over
        assert copier.write(again) == [None] * len(again)
        assert all(p.read_bytes() == d for p, d, _ in again)
        assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p, _, _ in again)  # no temporaries
    finally:
        copier.close()
    assert copier._proc is None


def test_a_small_batch_is_written_here_and_a_dead_helper_is_not_waited_for(tmp_path):
    from kbdesk.ingest.helper import MIN_FILES, Helper

    copier = Helper()
    try:
        small = _items(tmp_path / "small", MIN_FILES - 1)
        assert copier.write(small) == [None] * len(small) and copier._proc is None
        first = _items(tmp_path / "a", MIN_FILES)
        assert copier.write(first) == [None] * MIN_FILES
        assert copier._proc is not None  # that batch started the helper
        copier._proc.kill()  # the helper dies between two batches
        copier._proc.wait()
        second = _items(tmp_path / "b", MIN_FILES * 2)
        assert copier.write(second) == [None] * len(second)
        assert all(p.read_bytes() == d for p, d, _ in first + second)
        assert copier._here
    finally:
        copier.close()


def test_an_ingestion_run_stores_every_copy_and_leaves_no_helper(tmp_path):
    from kbdesk import open_desk

    folder = tmp_path / "notes"
    folder.mkdir()
    files = {f"n{i:03d}.md": f"# Note {i}\n\nabout tides {i}\n" for i in range(120)}
    for name, text in files.items():
        (folder / name).write_text(text)
    with open_desk(home=tmp_path / "home") as desk:
        desk.create_kb("notes")
        report = desk.add("notes", [folder], workers=2)
        assert len(report.added) == 120 and not report.failed
        for doc in desk.documents(desk.kb("notes").id):
            assert (desk.files_dir / doc.storage_key).read_text() == files[doc.filename]
    children = [
        p
        for p in os.listdir("/proc")
        if p.isdigit() and _parent_of(p) == os.getpid() and "kbdesk.ingest.helper" in _cmdline(p)
    ]
    assert children == []


def _parent_of(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
