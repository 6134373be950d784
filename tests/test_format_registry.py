"""One table of formats (kbdesk.ingest.formats): what it declares is what every part of
kbdesk reads, and what docs/FORMATS.md says kbdesk reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import format_builders as fb
from kbdesk.ingest import batch, extract
from kbdesk.ingest.folders import scan
from kbdesk.ingest.formats import FORMATS, OWN_PROCESS, SUPPORTED_SUFFIXES, format_for
from kbdesk.web.pages import kind_of

DOCS = Path(__file__).parent.parent / "docs" / "FORMATS.md"


def _documented_suffixes() -> dict[str, str]:
    """Suffix → the row of docs/FORMATS.md's table of formats that names it."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index("| format | suffixes | module | what a chunk's metadata holds | structure kept |")
    found: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row, suffixes = line.split("|")[1].strip(), line.split("|")[2]
        for suffix in re.findall(r"(?<![\w*])\.[a-z0-9]+\b", suffixes):
            assert suffix not in found, f"{suffix} is in the rows {found.get(suffix)!r} and {row!r}"
            found[suffix] = row
    return found


def test_every_registered_suffix_is_documented_and_every_documented_one_is_read():
    documented = _documented_suffixes()
    assert sorted(SUPPORTED_SUFFIXES - documented.keys()) == [], "read but not in docs/FORMATS.md's table"
    assert sorted(documented.keys() - SUPPORTED_SUFFIXES) == [], "in docs/FORMATS.md's table but not read"


def test_each_suffix_and_content_type_is_declared_once():
    suffixes = [s for fmt in FORMATS for s in fmt.suffixes]
    assert len(suffixes) == len(set(suffixes)) and all(re.fullmatch(r"\.[a-z0-9]+", s) for s in suffixes)
    types = [fmt.content_type for fmt in FORMATS]
    assert len(types) == len(set(types))
    assert all(format_for("A" + s.upper()) is fmt for fmt in FORMATS for s in fmt.suffixes)


def test_what_is_read_outside_the_helper_process_is_what_the_table_says():
    # the PDF reader's and OCR's child processes: never the helper, never on the budget's clock
    assert batch.OWN_PROCESS is OWN_PROCESS
    pdf_and_images = {"application/pdf", "image/png", "image/jpeg", "image/tiff", "image/webp", "image/gif"}
    assert pdf_and_images == OWN_PROCESS


def test_a_folder_walk_takes_the_suffixes_of_the_table_and_names_the_others(tmp_path):
    for name in ("talk.vtt", "movie.srt", "notes.md", "song.mp3", "Makefile"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    found = scan([tmp_path])
    assert sorted(f.name for f in found.files) == ["movie.srt", "notes.md", "talk.vtt"]
    assert sorted(s.reason for s in found.skipped) == [
        "unsupported file type '.mp3'",
        "unsupported file type 'Makefile'",
    ]


def test_a_fetched_page_is_read_as_the_format_its_content_type_declares():
    assert kind_of("text/vtt", b"WEBVTT\n", "https://example.org/talk") == "text/vtt"
    assert kind_of("application/x-subrip", b"1\n", "https://example.org/talk") == "application/x-subrip"
    assert kind_of("text/tab-separated-values", b"a\tb\n", "https://example.org/t") == "text/csv"
    assert kind_of("image/png", b"\x89PNG", "https://example.org/logo.png") is None  # images are not fetched
    assert extract.typed_name("https://example.org/talk", "text/vtt") == "page.vtt"


def test_the_table_s_sniffers_work_under_any_name_including_a_new_format_s():
    """A Word file named .srt is read as Word: the sniffers are the table's, not a format's."""
    got = extract.extract_bytes(fb.docx("quokka survey"), "episode.srt")
    assert got.content_type == format_for("x.docx").content_type and "quokka survey" in got.text  # type: ignore[union-attr]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_every_format_refuses_an_empty_file_and_names_its_suffix_type(fmt):
    assert extract.content_type_for("x" + fmt.suffixes[0]) == fmt.content_type
    with pytest.raises(extract.ExtractionError, match="empty file"):
        extract.extract_bytes(b"", "x" + fmt.suffixes[-1])


def test_watch_makes_no_pass_for_a_file_in_a_format_kbdesk_does_not_read(tmp_path):
    from kbdesk.ingest.watch import _relevant

    for name in ("clip.srt", "notes.md", "build.o", "Makefile", ".gitignore", "download.part"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "photos.d").mkdir()
    for hidden in (False, True):
        keep = _relevant(tmp_path, (), hidden=hidden)
        assert keep(None, str(tmp_path / "clip.srt")) and keep(None, str(tmp_path / "notes.md"))
        assert keep(None, str(tmp_path / ".gitignore"))  # an edited ignore file still makes a pass
        assert not keep(None, str(tmp_path / "build.o")) and not keep(None, str(tmp_path / "download.part"))
        assert not keep(None, str(tmp_path / "Makefile"))
        assert keep(None, str(tmp_path / "photos.d"))  # a folder: what it holds may be read
        assert keep(None, str(tmp_path / "gone.o"))  # gone: a folder or a document once, a pass tells


def test_an_xml_file_is_read_in_the_encoding_it_declares():
    """XML's entry reads it as markup (its declaration honoured), not as text whose
    encoding is guessed: KOI8-R guessed would be read as cp1252 ("ðÒÉ×ÅÔ")."""
    data = '<?xml version="1.0" encoding="koi8-r"?>\n<note><title>Привет мир, как дела</title></note>\n'
    got = extract.extract_bytes(data.encode("koi8-r"), "note.xml")
    assert got.content_type == "application/xml" and got.text == "title: Привет мир, как дела"
    assert "encoding" not in got.sections[0].metadata  # declared by the file: nothing guessed to record
