"""Text from images through Tesseract, in a child process that can be killed.

Run by :func:`kbdesk.ingest.ocr.run_ocr_worker` as ``python -P ocr_worker.py`` (a fresh
interpreter, as the PDF reader's child): the bytes of an image file, or of a PDF and the
numbers of its pages that have no text layer, come on stdin; one JSON object goes to
stdout. The child caps its own address space and CPU time before it reads anything, and
the ``tesseract`` processes it starts inherit those caps (and die with it on Linux).

Protocol: argv = memory cap in MB, CPU seconds, parent pid, ``image`` or ``pdf``, the
tesseract binary, languages (``eng+deu``), max pixels per image, and for ``pdf`` the page
numbers (``1,2,5``); stdout = ``{"pages": [{"page": n, "text": str, "confidence": float |
null}], "errors": [str]}`` or ``{"error": str}``.

Images are handed to tesseract as they are (it reads PNG, JPEG, TIFF with all its pages,
WebP, GIF, BMP and JPEG 2000 through Leptonica), so no imaging library is needed. An
image over the pixel cap is scaled down first: by Pillow when it is installed; a PDF's raw
pixels by numpy (a kbdesk dependency). This module imports nothing from kbdesk.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

EXIT_MEMORY = 3
MAX_TEXT_CHARS = 20_000_000
TESSERACT_ERROR_CHARS = 200


class _Failure(Exception):
    pass


def _sibling(name: str) -> Any:
    """A module beside this file, loaded by path (the child has no kbdesk on sys.path)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location(f"_kbdesk_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# ── tesseract ───────────────────────────────────────────────────────────────────────


def _preexec() -> None:  # pragma: no cover - runs in the forked tesseract process
    """tesseract dies with this child (Linux), so a killed child leaves nothing running."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def tesseract_tsv(binary: str, languages: str, path: str) -> str:
    """Tesseract's TSV output for the image at ``path`` (all pages of a TIFF)."""
    env = dict(os.environ, OMP_THREAD_LIMIT="1")  # kbdesk runs several documents at once
    cmd = [binary, path, "stdout", "-l", languages, "--psm", "3", "tsv"]
    try:
        proc = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            check=False,
            preexec_fn=_preexec if sys.platform.startswith("linux") else None,  # this child has no threads
        )
    except OSError as exc:
        raise _Failure(f"cannot run tesseract ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace")
        if "out of memory" in said.lower() or "alloc" in said.lower() or proc.returncode == -6:
            raise MemoryError  # the cap this process (and so tesseract) runs under
        if proc.returncode < 0:
            raise _Failure(f"tesseract stopped (signal {-proc.returncode})")
        lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
        why = lines[-1][:TESSERACT_ERROR_CHARS] if lines else f"exit code {proc.returncode}"
        raise _Failure(f"tesseract could not read the image ({why})")
    return proc.stdout.decode("utf-8", "replace")


def parse_tsv(tsv: str) -> dict[int, tuple[str, float | None]]:
    """Tesseract TSV → {page number (1-based): (text, mean word confidence)}: words
    joined by spaces, lines by newlines, paragraphs and blocks by blank lines."""
    pages: dict[int, list[list[str]]] = {}  # page → paragraphs → lines
    confs: dict[int, list[float]] = {}
    last: dict[int, tuple[str, str, str]] = {}
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        word = cols[11].strip().replace("\x00", "")
        if not word:
            continue
        page = int(cols[1])
        key = (cols[2], cols[3], cols[4])  # block, paragraph, line
        paragraphs = pages.setdefault(page, [])
        prev = last.get(page)
        if prev is None or prev[:2] != key[:2]:
            paragraphs.append([word])
        elif prev[2] != key[2]:
            paragraphs[-1].append("\n" + word)
        else:
            paragraphs[-1].append(" " + word)
        last[page] = key
        try:
            conf = float(cols[10])
        except ValueError:
            conf = -1.0
        if conf >= 0:
            confs.setdefault(page, []).append(conf)
    out: dict[int, tuple[str, float | None]] = {}
    for page, paragraphs in pages.items():
        text = "\n\n".join("".join(p) for p in paragraphs)
        values = confs.get(page)
        out[page] = (text, round(sum(values) / len(values), 1) if values else None)
    return out


def ocr_image_bytes(data: bytes, suffix: str, binary: str, languages: str, workdir: str) -> dict[int, tuple]:
    path = os.path.join(workdir, "image" + suffix)
    with open(path, "wb") as f:
        f.write(data)
    try:
        return parse_tsv(tesseract_tsv(binary, languages, path))
    finally:
        os.unlink(path)


images = _sibling("ocr_images")


def _read(blob: bytes, suffix: str, binary: str, languages: str, workdir: str) -> dict[int, tuple]:
    """An image of a PDF page read by tesseract; one its reader refuses (some JPEG 2000) is
    converted by Pillow, when installed, and read again."""
    try:
        return ocr_image_bytes(blob, suffix, binary, languages, workdir)
    except _Failure as exc:
        png = images.pillow_png(blob) if str(exc).startswith("tesseract could not read") else None
        if png is None:
            raise
        return ocr_image_bytes(png, ".png", binary, languages, workdir)


def ocr_pdf(data: bytes, numbers: list[int], binary: str, languages: str, max_pixels: int) -> dict:
    import io
    import logging
    import warnings

    import pypdf

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    if hasattr(pypdf, "overwrite_configuration"):  # jbig2dec, when installed, runs under this child's caps
        pypdf.overwrite_configuration(jbig2dec_binary=images.jbig2dec(), disable_legacy_handling=True)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            reader.decrypt("")
        count = len(reader.pages)
    except Exception as exc:  # the text pass read it: anything here is this pass's failure
        if isinstance(exc, MemoryError):
            raise
        raise _Failure(f"PDF could not be read for OCR ({_one_line(exc)})") from None
    pages: list[dict] = []
    errors: list[str] = []
    total = 0
    with tempfile.TemporaryDirectory(prefix="kbdesk-ocr-") as workdir:
        for number in numbers:
            if not 1 <= number <= count:
                continue
            try:
                texts, confs = [], []
                for xobj in images.page_images(reader.pages[number - 1]):
                    blob, suffix = images.image_file(xobj, max_pixels)
                    for text, conf in _read(blob, suffix, binary, languages, workdir).values():
                        if text.strip():
                            texts.append(text)
                            if conf is not None:
                                confs.append(conf)
                text = "\n\n".join(texts)
                total += len(text)
                if total > MAX_TEXT_CHARS:
                    raise _Failure(f"OCR gave more than {MAX_TEXT_CHARS:,} characters of text")
                if text.strip():
                    conf = round(sum(confs) / len(confs), 1) if confs else None
                    pages.append({"page": number, "text": text, "confidence": conf})
            except _Failure as exc:
                if str(exc).startswith("OCR gave more"):
                    raise
                errors.append(f"page {number}: {exc}")
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - one broken page should not lose the others
                errors.append(f"page {number}: {_one_line(exc)}")
    return {"pages": pages, "errors": errors}


def ocr_image(data: bytes, binary: str, languages: str, max_pixels: int) -> dict:
    kind = images.image_kind(data)
    if kind is None:
        raise _Failure("not an image kbdesk reads (PNG, JPEG, TIFF, WebP, GIF)")
    size = images.image_size(data, kind)
    if size is not None and (size[0] < images.MIN_SIDE or size[1] < images.MIN_SIDE):
        raise _Failure(f"image is {size[0]}×{size[1]} pixels, too small to hold text")
    if size is not None and max(size) > images.MAX_SIDE:
        raise _Failure(f"image is {size[0]}×{size[1]} pixels, larger than OCR reads")
    suffix = "." + ("tif" if kind == "tiff" else kind)
    if size is None or size[0] * size[1] > max_pixels:  # scaled when Pillow is there, else read as it is
        smaller = images.pillow_downscale(data, max_pixels)
        if smaller is not None:
            data, suffix = smaller, (".tif" if smaller[:2] in (b"II", b"MM") else ".png")
    with tempfile.TemporaryDirectory(prefix="kbdesk-ocr-") as workdir:
        found = ocr_image_bytes(data, suffix, binary, languages, workdir)
    pages = [
        {"page": number, "text": text, "confidence": conf}
        for number, (text, conf) in sorted(found.items())
        if text.strip()
    ]
    if sum(len(p["text"]) for p in pages) > MAX_TEXT_CHARS:
        raise _Failure(f"OCR gave more than {MAX_TEXT_CHARS:,} characters of text")
    return {"pages": pages, "errors": []}


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    return (text[:200] or type(exc).__name__).replace("\x00", "")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    memory_mb, cpu_seconds, parent = int(args[0]), int(args[1]), int(args[2])
    mode, binary, languages, max_pixels = args[3], args[4], args[5], int(args[6])
    numbers = [int(n) for n in args[7].split(",") if n] if len(args) > 7 else []
    base = _sibling("pdf_worker")  # the PDF reader's child: the same caps, the same end with the parent
    base._die_with_parent(parent)
    try:
        base._limit_resources(memory_mb, cpu_seconds)
        data = sys.stdin.buffer.read()
        try:
            if mode == "pdf":
                result = ocr_pdf(data, numbers, binary, languages, max_pixels)
            else:
                result = ocr_image(data, binary, languages, max_pixels)
        except _Failure as exc:
            result = {"error": str(exc)}
        del data
        payload = json.dumps(result, ensure_ascii=False).encode("utf-8", "replace")
    except MemoryError:
        return EXIT_MEMORY
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
