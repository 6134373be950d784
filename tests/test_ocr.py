"""Scans, screenshots and photos: their text read through Tesseract (for real, where it
is installed: CI installs tesseract-ocr), and a clear refusal where it is not (simulated
by configuration and PATH, never by a stub of the OCR result)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbdesk import open_desk
from kbdesk.cli.main import cli
from kbdesk.config import Config, IngestSettings, parse_config
from kbdesk.errors import ConfigError
from kbdesk.ingest import ocr, ocr_images, ocr_worker
from kbdesk.ingest.extract import ExtractionError, extract_bytes
from kbdesk.ingest.pdf_text import ExtractionCancelled
from kbdesk.ingest.sections import ResourceLimit
from ocr_support import TESSERACT, encoded, needs_tesseract, pdf_with_image, photo, scanned_pdf, text_image
from pdf_builders import make_pdf, text_page

MISSING = "/nonexistent/bin/tesseract"


def _folder(root: Path) -> Path:
    """A scan (two image-only pages), a screenshot, a photo and a PDF with a text layer."""
    root.mkdir()
    (root / "scan.pdf").write_bytes(
        scanned_pdf([["The lease names the marmalade clause."], ["Rent is due when the quokka sings."]])
    )
    (root / "shot.png").write_bytes(encoded(text_image(["Error 4711: the zephyrine daemon stopped."]), "PNG"))
    (root / "photo.jpg").write_bytes(photo(["Receipt: one kumquat tart, paid in cash."]))
    (root / "text.pdf").write_bytes(make_pdf([text_page("The printed brochure praises the lighthouse.")]))
    return root


def _hit(desk, words: str):
    results = desk.search(["scans"], words, mode="keyword").results
    assert results, f"nothing found for {words!r}"
    return results[0]


@pytest.mark.slow
@needs_tesseract
def test_scans_screenshots_and_photos_are_found_and_a_rename_costs_no_ocr(tmp_path, monkeypatch):
    folder = _folder(tmp_path / "docs")
    with open_desk() as desk:
        desk.create_kb("scans", keyword_only=True)
        report = desk.add("scans", [folder])
        assert sorted(report.added) == ["photo.jpg", "scan.pdf", "shot.png", "text.pdf"], report.failed
        assert all(d.status == "ready" for d in desk.documents("scans"))

        first = _hit(desk, "marmalade")
        assert first.source == "scan.pdf" and first.metadata["page"] == 1 and first.metadata["ocr"] is True
        assert 50 < first.metadata["ocr_confidence"] <= 100
        second = _hit(desk, "quokka")
        assert second.source == "scan.pdf" and second.metadata["page"] == 2
        assert _hit(desk, "zephyrine").source == "shot.png"
        assert _hit(desk, "kumquat").source == "photo.jpg"
        brochure = _hit(desk, "lighthouse")
        assert brochure.source == "text.pdf" and brochure.metadata["page"] == 1  # read as before: no OCR
        assert not {"ocr", "ocr_confidence"} & set(brochure.metadata)

        # the same bytes under other names: new documents, and not one OCR run
        runs: list[list[str]] = []
        real = ocr.run_ocr_worker

        def counted(data, args, setup, **kwargs):
            runs.append(args)
            return real(data, args, setup, **kwargs)

        monkeypatch.setattr(ocr, "run_ocr_worker", counted)
        again = tmp_path / "renamed"
        again.mkdir()
        for name in ("scan.pdf", "shot.png", "photo.jpg"):
            shutil.copy(folder / name, again / f"copy-of-{name}")
        report = desk.add("scans", [again])
        assert sorted(report.added) == ["copy-of-photo.jpg", "copy-of-scan.pdf", "copy-of-shot.png"]
        assert runs == []
        hits = desk.search(["scans"], "quokka", mode="keyword").results
        assert {h.source for h in hits} == {"scan.pdf", "copy-of-scan.pdf"}


@pytest.mark.slow
def test_without_tesseract_scans_and_images_fail_once_saying_how_to_install(tmp_path):
    folder = _folder(tmp_path / "docs")
    (folder / "note.txt").write_text("A plain note about the lighthouse keeper.")
    missing = Config(ingest=IngestSettings(tesseract=MISSING))
    with open_desk(config=missing) as desk:
        desk.create_kb("scans", keyword_only=True)
        report = desk.add("scans", [folder])
        assert sorted(report.added) == ["note.txt", "text.pdf"]  # nothing else changes
        reasons = dict(report.failed)
        assert sorted(reasons) == ["photo.jpg", "scan.pdf", "shot.png"]
        for reason in reasons.values():
            assert "\n" not in reason
            for how in ("apt install tesseract-ocr", "brew install tesseract", "dnf install tesseract", "winget"):
                assert how in reason
        assert reasons["scan.pdf"].startswith("PDF has no extractable text (scanned pages?)")

        report = desk.add("scans", [folder])  # nothing changed: not tried again
        assert report.failed == [] and report.added == []
        assert sorted(name for name, _ in report.known_failures) == ["photo.jpg", "scan.pdf", "shot.png"]
    if TESSERACT is None:
        return
    # Tesseract is there now (configured): the next add reads them, no --retry-failed needed
    with open_desk(config=Config(ingest=IngestSettings(tesseract=TESSERACT))) as desk:
        report = desk.add("scans", [folder])
        assert sorted(report.updated + report.added) == ["photo.jpg", "scan.pdf", "shot.png"], report.failed
        assert _hit(desk, "kumquat").source == "photo.jpg"


def test_tesseract_not_on_path_is_not_available(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no tesseract anywhere
    setup = ocr.setup_for(IngestSettings())
    assert not setup.available and setup.problem == "tesseract is not on PATH"
    with pytest.raises(ocr.OcrUnavailable, match="sudo apt install tesseract-ocr"):
        extract_bytes(encoded(text_image(["hello"]), "PNG"), "x.png", ocr=setup)


def _doctor(home: Path, config: str = "") -> dict:
    if config:
        (home / "config").mkdir(parents=True, exist_ok=True)
        (home / "config" / "config.toml").write_text(config)
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["ocr"]


@needs_tesseract
def test_doctor_shows_tesseract_its_version_and_languages(kbdesk_home):
    found = _doctor(kbdesk_home)
    assert TESSERACT is not None
    version = subprocess.run([TESSERACT, "--version"], capture_output=True, text=True).stdout.split()[1]
    assert found["available"] is True and found["version"] == version.lstrip("v")
    assert "eng" in found["installed_languages"] and found["languages"] == ["eng"]


def test_doctor_says_how_to_install_tesseract_when_it_is_missing(kbdesk_home):
    found = _doctor(kbdesk_home, f'[ingest]\ntesseract = "{MISSING}"\n')
    assert found["available"] is False and found["version"] is None
    assert MISSING in found["problem"] and "brew install tesseract" in found["install"]


def test_ocr_languages_are_checked_when_the_config_is_read():
    assert parse_config({"ingest": {"ocr_languages": "eng+deu"}}).ingest.ocr_languages == "eng+deu"
    for bad in ("eng; rm -rf /", "-l", "eng+", ""):
        with pytest.raises(ConfigError, match=r"ingest\.ocr_languages"):
            parse_config({"ingest": {"ocr_languages": bad}})


@needs_tesseract
def test_a_language_pack_that_is_not_installed_is_the_machines_fault_not_the_files():
    setup = ocr.setup_for(IngestSettings(ocr_languages="eng+qqq"))
    assert not setup.available and "qqq" in (setup.problem or "")
    with pytest.raises(ResourceLimit, match="tesseract-ocr-qqq"):  # tried again by the next add
        extract_bytes(encoded(text_image(["hello"]), "PNG"), "x.png", ocr=setup)


@pytest.mark.slow
@needs_tesseract
def test_webp_gif_and_every_page_of_a_tiff_are_read():
    webp = extract_bytes(encoded(text_image(["A webp about the narwhal."]), "WEBP"), "a.webp")
    assert "narwhal" in webp.text and "page" not in webp.sections[0].metadata
    assert "ocelot" in extract_bytes(encoded(text_image(["A gif about the ocelot."]), "GIF"), "a.gif").text
    first, second = text_image(["Page one: the axolotl."]), text_image(["Page two: the wombat."])
    tiff = extract_bytes(encoded(first, "TIFF", save_all=True, append_images=[second]), "fax.tif")
    assert [s.metadata["page"] for s in tiff.sections] == [1, 2]
    assert "axolotl" in tiff.sections[0].text and "wombat" in tiff.sections[1].text
    assert all(0 < s.metadata["ocr_confidence"] <= 100 for s in tiff.sections)
    # an icon is no page of text: it fails with that reason, tesseract never asked
    with pytest.raises(ExtractionError, match="16×16 pixels, too small to hold text"):
        extract_bytes(encoded(text_image(["x"]).resize((16, 16)), "PNG"), "icon.png")


# ── the child's bounds ──────────────────────────────────────────────────────────────


@pytest.mark.slow
@needs_tesseract
def test_ocr_runs_within_the_pdf_readers_memory_and_time_bounds():
    big = encoded(big_blank_image(), "PNG")  # 9000×9000 pixels in a small file
    with pytest.raises(ExtractionError, match="more than 100 MB of memory"):
        extract_bytes(big, "big.png", pdf_memory_mb=100)
    with pytest.raises(ResourceLimit, match=r"OCR took longer than 0\.05 s"):
        extract_bytes(encoded(text_image(["slow"]), "PNG"), "slow.png", pdf_timeout=0.05)
    with pytest.raises(ExtractionCancelled):
        extract_bytes(encoded(text_image(["stop"]), "PNG"), "stop.png", cancelled=lambda: True)
    assert ocr.running_ocr_workers() == []
    # and the next image is read as usual
    assert "tangerine" in extract_bytes(encoded(text_image(["A tangerine"]), "PNG"), "ok.png").text


def big_blank_image():
    from PIL import Image

    return Image.new("L", (9000, 9000), "white")


# ── what the child reads, without a process ─────────────────────────────────────────


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "TIFF", "WEBP", "BMP"])
def test_image_sizes_are_read_from_headers(fmt):
    data = encoded(text_image(["size"], width=777), fmt)
    kind = ocr_images.image_kind(data)
    assert kind is not None
    assert kind == fmt.lower() if fmt != "JPEG" else kind == "jpeg"
    assert ocr_images.image_size(data, kind) == (777, text_image(["size"], width=777).height)


def test_a_multipage_tiff_counts_its_pages():
    img = text_image(["one"])
    data = encoded(img, "TIFF", save_all=True, append_images=[img, img])
    assert ocr_images.image_frames(data) == 3
    assert ocr_images.image_frames(encoded(img, "PNG")) == 1


def test_tesseract_tsv_becomes_lines_paragraphs_and_a_confidence():
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t90\tHello",
        "5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t80\tworld",
        "5\t1\t1\t1\t2\t1\t0\t0\t1\t1\t70\tagain",
        "5\t1\t2\t1\t1\t1\t0\t0\t1\t1\t60\tNext",
        "4\t1\t2\t1\t1\t0\t0\t0\t1\t1\t-1\t",
        "5\t2\t1\t1\t1\t1\t0\t0\t1\t1\t-1\tpage2",
    ]
    parsed = ocr_worker.parse_tsv("\n".join([head, *rows]))
    assert parsed[1] == ("Hello world\nagain\n\nNext", 75.0)
    assert parsed[2] == ("page2", None)


def test_a_scan_larger_than_ocr_needs_is_scaled_down_before_tesseract_reads_it():
    import io

    import pypdf

    pdf = scanned_pdf([["cover"], ["A page of raw pixels, 1100 wide."]])
    page = pypdf.PdfReader(io.BytesIO(pdf)).pages[1]
    [xobj] = ocr_images.page_images(page)
    width, height = int(xobj["/Width"]), int(xobj["/Height"])
    blob, suffix = ocr_images.image_file(xobj, max_pixels=width * height)
    assert suffix == ".pgm" and blob.startswith(b"P5\n%d %d\n" % (width, height))
    blob, _ = ocr_images.image_file(xobj, max_pixels=width * height // 4)
    assert blob.startswith(b"P5\n%d %d\n" % (width // 2, height // 2))


@pytest.mark.slow
@needs_tesseract
def test_a_pdf_whose_pages_mostly_have_text_is_not_ocred(tmp_path):
    """Two text pages and a scanned one: read as before (its text pages), no OCR."""
    scan = scanned_pdf([["The hidden pangolin paragraph."]])
    import io

    import pypdf

    writer = pypdf.PdfWriter()
    for source in (make_pdf([text_page("First page."), text_page("Second page.")]), scan):
        for page in pypdf.PdfReader(io.BytesIO(source)).pages:
            writer.add_page(page)
    buf = io.BytesIO()
    writer.write(buf)
    extracted = extract_bytes(buf.getvalue(), "mixed.pdf")
    assert [s.metadata for s in extracted.sections] == [{"page": 1}, {"page": 2}]
    assert "pangolin" not in extracted.text
    assert os.environ.get("KBDESK_HOME")  # the cache lives in the test's own home, if anywhere


def _only_image(pdf: bytes):
    import io

    import pypdf

    [xobj] = ocr_images.page_images(pypdf.PdfReader(io.BytesIO(pdf)).pages[0])
    return xobj


@pytest.mark.parametrize("lookup", [b"<000000ffffff>", b"(\\000\\000\\000\\377\\377\\377)"])
def test_a_palette_written_as_a_string_in_the_pdf_is_read(lookup):
    """Index 0 black, 1 white, as a hex string and as a literal one."""
    pdf = pdf_with_image(
        b"/Width 32 /Height 32 /ColorSpace [/Indexed /DeviceRGB 1 " + lookup + b"] /BitsPerComponent 8",
        bytes([0, 1] * 512),
    )
    blob, suffix = ocr_images.image_file(_only_image(pdf), 16_000_000)
    assert suffix == ".ppm" and blob.startswith(b"P6\n32 32\n255\n")
    assert blob[-6:] == b"\x00\x00\x00\xff\xff\xff"


def test_an_image_wider_than_tesseract_reads_is_refused_with_that_reason():
    pdf = pdf_with_image(b"/Width 40000 /Height 30 /ColorSpace /DeviceGray /BitsPerComponent 1", b"\x00" * 16)
    with pytest.raises(ocr_images.Unreadable, match="40000×30 pixels, larger than OCR reads"):
        ocr_images.image_file(_only_image(pdf), 16_000_000)


def test_jbig2_without_jbig2dec_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    pdf = pdf_with_image(
        b"/Width 64 /Height 64 /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /JBIG2Decode", b"\x00" * 8
    )
    with pytest.raises(ocr_images.Unreadable, match="sudo apt install jbig2dec"):
        ocr_images.image_file(_only_image(pdf), 16_000_000)
