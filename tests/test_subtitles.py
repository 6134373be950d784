"""Subtitles and transcripts (.srt, .vtt): the words of every cue, the cue's start as the
heading a result shows, nothing of the timings, settings, notes or markup in the text.

Built on real files from webvtt-py's test suite (tests/real_files/README.md): Netflix's
Spanish subtitles with cue settings and NOTE blocks, a youtube-dl download with word
timings and rolling captions, WebVTT comments, styles and identifiers, SubRip samples."""

from __future__ import annotations

import re
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.ingest.extract import ExtractionError, extract_bytes
from kbdesk.ingest.subtitle_text import MAX_CUE_CHARS

REAL = Path(__file__).parent / "real_files" / "subtitles"
TIMING = re.compile(r"^(?:\d+:)?\d\d:\d\d[.,]\d{3} --> ", re.M)


def read(name: str, data: bytes | None = None):
    return extract_bytes(REAL.joinpath(name).read_bytes() if data is None else data, name)


def test_a_netflix_vtt_is_read_cue_by_cue_under_each_cues_start():
    raw = REAL.joinpath("netflix_chicas_del_cable.vtt").read_text(encoding="utf-8")
    got = read("netflix_chicas_del_cable.vtt")
    assert got.content_type == "text/vtt"
    # 865 cues; two neighbours both say "[teléfono]", kept once (a repeated line, see the module)
    assert len(TIMING.findall(raw)) == 865 and len(got.sections) == 864
    first, second = got.sections[:2]
    assert (first.text, first.metadata) == ("[Alba] En 1928,", {"headings": ["00:00:07"]})
    assert (second.text, second.metadata["headings"]) == ("las mujeres éramos\nalgo así como adornos", ["00:00:09"])
    # the timings, cue settings, NOTE blocks and <i> markup are not words of the film
    for left_out in ("-->", "position:", "align:middle", "NOTE", "Segment=", "<i>", "</i>", "webvtt-lssdh"):
        assert left_out not in got.text, left_out
    assert got.sections[-1].metadata["headings"][0] > "00:40:00"  # a 45-minute episode, to its end


def test_word_timings_and_rolling_captions_of_a_youtube_download_are_read_once():
    got = read("youtube_dl.vtt")
    assert [(s.metadata["headings"][0], s.text) for s in got.sections] == [
        ("00:04:46", "yeah"),
        ("00:04:46", "what"),  # "yeah" again on top of the next cue: shown twice, kept once
        ("00:05:04", "this will happen is I'm telling"),  # <00:05:04.199><c> will</c>… are markup
    ]
    assert "colorCCCCCC" not in got.text and "::cue" not in got.text and "Kind:" not in got.text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # NOTE blocks (one of several lines) and the header's title are not cues
        (
            "comments.vtt",
            [
                ("00:02:15", "- Ta en kopp varmt te.\n- Det är inte varmt."),
                ("00:02:20", "- Har en kopp te.\n- Det smakar som te."),
                ("00:02:25", "- Ta en kopp"),
            ],
        ),
        ("styles.vtt", [("00:00:00", "- Hello world.")]),  # STYLE blocks are CSS, <b> is markup
        # timings without hours, and timestamps inside a cue
        (
            "cue_tags.vtt",
            [
                ("00:00:16", "When the moon hits your eye"),
                ("00:00:18", "Like a big-a pizza pie"),
                ("00:00:20", "That's amore"),
            ],
        ),
    ],
)
def test_webvtt_notes_styles_and_tags_are_not_words(name, expected):
    got = read(name)
    assert [(s.metadata["headings"][0], s.text) for s in got.sections] == expected
    assert "translation was done by Kyle" not in got.text and "papayawhip" not in got.text


def test_identifiers_cue_numbers_and_a_bom_are_not_words():
    ids = read("using_identifiers.vtt")
    assert [s.text for s in ids.sections] == [f"Caption text #{n}" for n in range(1, 7)]
    assert "second caption" not in ids.text  # a cue's identifier
    bom = read("captions_with_bom.vtt")
    assert bom.sections[0].text == "Caption text #1" and "WEBVTT" not in bom.text
    srt = read("sample.srt")
    assert srt.content_type == "application/x-subrip"
    assert [s.metadata["headings"][0] for s in srt.sections] == [
        "00:00:00",
        "00:00:07",
        "00:00:11",
        "00:00:16",
        "00:00:21",
    ]
    assert [s.text for s in srt.sections] == [f"Caption text #{n}" for n in range(1, 6)]


def test_a_cue_whose_timing_line_is_lost_keeps_its_words_under_the_cue_before():
    got = read("missing_timeframe.srt")
    assert got.sections[0].text == "Caption text #1\nCaption text #2"  # its number "2" left out
    assert "Caption text #3" in got.text


def test_srt_markup_voices_and_entities():
    data = (
        b"1\r\n00:01:02,500 --> 00:01:04,000 X1:100 X2:200\r\n"
        b"{\\an8}<font color=#ff0000>Alarm</font> &amp; <b>exit</b>\r\n\r\n"
        b"2\n01:00:00,000 --> 01:00:02,000\nx < y and y > z\n\n"
        b"WEBVTT has no place here\n"
    )
    got = read("talk.srt", data)
    assert [(s.metadata["headings"][0], s.text) for s in got.sections] == [
        ("00:01:02", "Alarm & exit"),
        ("01:00:00", "x < y and y > z\nWEBVTT has no place here"),  # not a tag; text broken by a blank line
    ]
    vtt = b"WEBVTT\n\n00:00.000 --> 00:02.000\n<v Roger Bingham>We are in New York City\n"
    assert read("talk.vtt", vtt).text == "Roger Bingham: We are in New York City"


# ── hostile and broken files: each fails alone, with its reason ───────────────────


def test_a_file_without_cues_fails_saying_it_has_none():
    with pytest.raises(ExtractionError, match="no subtitle cues"):
        read("invalid_format2.srt")  # "some text": no timing line
    with pytest.raises(ExtractionError, match="no text"):
        read("timings.vtt", b"WEBVTT\n\n00:00.000 --> 00:01.000\n\n00:01.000 --> 00:02.000\n<i></i>\n")


def test_a_huge_cue_fails_the_file_with_its_time():
    huge = b"1\n00:10:00,000 --> 00:10:05,000\n" + b"word " * (MAX_CUE_CHARS // 5 + 10) + b"\n"
    with pytest.raises(ExtractionError, match=r"the cue at 00:10:00 holds more than 20,000 characters"):
        read("huge.srt", huge)
    one_line = b"WEBVTT\n\n00:00.000 --> 00:01.000\n" + b"<" * 300_000 + b"\n"  # markup that never closes
    with pytest.raises(ExtractionError, match="the cue at 00:00:00"):
        read("angles.vtt", one_line)


def test_garbage_and_other_formats_under_a_subtitle_name_are_refused_as_such():
    with pytest.raises(ExtractionError, match="binary file"):
        read("noise.srt", bytes(range(256)) * 64)
    archive = BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("episode.srt", "1\n00:00:01,000 --> 00:00:02,000\nhi\n")
    with pytest.raises(ExtractionError, match="the file is a zip archive, not subtitles"):
        read("season.srt", archive.getvalue())
    with pytest.raises(ExtractionError, match=r"OLE compound file .* not subtitles"):
        read("old.vtt", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))


def test_subtitles_in_another_encoding_are_read_and_the_encoding_kept():
    text = REAL.joinpath("comments.vtt").read_text(encoding="utf-8")
    latin = read("comments.vtt", text.encode("cp1252"))  # WebVTT says UTF-8; old tools write cp1252
    assert latin.sections[0].text == "- Ta en kopp varmt te.\n- Det är inte varmt."
    assert latin.sections[0].metadata["encoding"] == "cp1252"
    wide = read("comments.vtt", text.encode("utf-16"))  # with its BOM
    assert wide.sections[0].text == latin.sections[0].text and "encoding" not in wide.sections[0].metadata


# ── in a knowledge base ───────────────────────────────────────────────────────────


def test_a_folder_of_subtitles_is_searched_and_a_result_says_when(tmp_path):
    huge = b"1\n00:10:00,000 --> 00:10:05,000\n" + b"word " * MAX_CUE_CHARS + b"\n"
    folder = write_files(tmp_path / "talks", {"broken.srt": b"\x00\x01\x02\x03" * 64, "huge.srt": huge})
    for name in ("netflix_chicas_del_cable.vtt", "sample.srt"):
        (folder / name).write_bytes(REAL.joinpath(name).read_bytes())
    desk = open_desk()
    try:
        desk.create_kb("talks")
        report = desk.add("talks", [folder])
        failed = dict(report.failed)
        assert report.skipped == [] and sorted(failed) == ["broken.srt", "huge.srt"]  # each alone, with its reason
        assert "binary" in failed["broken.srt"] and "the cue at 00:10:00 holds more than" in failed["huge.srt"]
        docs = {d.path: d.status for d in desk.documents("talks")}
        assert docs["netflix_chicas_del_cable.vtt"] == "ready" and docs["sample.srt"] == "ready"
        top = desk.search(["talks"], "adornos", mode="keyword", limit=3).results[0]
        assert top.source == "netflix_chicas_del_cable.vtt"
        # where in the recording: the start of the chunk's first cue, and of every cue in it
        starts = [s["headings"][0] for s in top.metadata.get("sections", [])] or top.metadata["headings"]
        assert "00:00:09" in starts and all(re.fullmatch(r"\d\d:\d\d:\d\d", s) for s in starts)
        assert "-->" not in top.content
    finally:
        desk.close()
