"""Text from images (scans, screenshots, photos) through Tesseract — the parent's side.

Tesseract is found on PATH, or where ``ingest.tesseract`` in the config says; its
languages are ``ingest.ocr_languages`` (``eng+deu``), by default those installed (see
:func:`default_languages`). The binary is called directly (docs/FORMATS.md, "Text in
images", has the measurement that chose it): no Python binding, no imaging library.

The work happens in a child process (:mod:`.ocr_worker`) with the PDF reader's bounds:
``ingest.pdf_memory_mb`` of address space (tesseract inherits it) and
``ingest.pdf_timeout`` seconds of wall clock *per page or image frame*; a child that
outlives them, or whose run is cancelled, is killed with everything it started.

Results are kept in a cache keyed by the bytes' SHA-256 (and the pages, languages and
Tesseract version): a file renamed, copied or added again costs a file read, not an OCR.
Without Tesseract an image fails with :func:`not_installed`, a reason that says how to
install it; that failure is tried again by the next ``add`` once Tesseract is there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdesk.ingest.ocr_child import OcrCancelled, run_ocr_worker, running_ocr_workers
from kbdesk.ingest.sections import ExtractionError, ResourceLimit

__all__ = ["OcrCancelled", "run_ocr_worker", "running_ocr_workers"]  # from .ocr_child, used through here

# Tesseract reads a 300-dpi A4 page (8.7 million pixels) well; a 48-megapixel photo is
# scaled to this first (when Pillow is installed; a PDF's raw pixels always)
MAX_PIXELS = 16_000_000
PROBE_SECONDS = 10.0
# marks the failure of a file that needs OCR on a machine without it (tried again once it is there)
NOT_INSTALLED_MARK = "needs OCR (Tesseract), which is not installed"
SKIPPED_LANGUAGES = {"osd", "equ"}  # orientation/script detection and equations: not languages of text
_LANGUAGE = re.compile(r"[A-Za-z0-9_]{2,40}")


def not_installed(what: str = "the text of an image", why: str | None = None) -> str:
    """The one-line reason a file that needs OCR fails without Tesseract."""
    return (
        f"{what} {NOT_INSTALLED_MARK}{f' ({why})' if why else ''}: install it (Debian/Ubuntu: sudo apt install "
        "tesseract-ocr; Fedora: sudo dnf install tesseract; macOS: brew install tesseract; Windows: winget "
        "install UB-Mannheim.TesseractOCR) or set ingest.tesseract in the config; the next add reads it"
    )


class OcrUnavailable(ExtractionError):
    """Tesseract is not installed: the message says how to install it."""


class OcrMisconfigured(ResourceLimit):
    """Tesseract is there but cannot be used as configured (a language pack missing):
    the machine's fault, tried again by the next add."""


# ── finding Tesseract ───────────────────────────────────────────────────────────────


@dataclass
class Tesseract:
    binary: str | None  # None: not found
    version: str | None = None
    languages: list[str] = field(default_factory=list)  # installed language packs
    problem: str | None = None  # why it cannot be used


_probes: dict[tuple[str, float], Tesseract] = {}
_probe_lock = threading.Lock()


def find_binary(configured: str | None = None) -> str | None:
    """The tesseract executable: ``configured`` (a path or a name on PATH), else on PATH
    (and Windows' default install folder)."""
    if configured:
        path = os.path.expanduser(configured)
        if os.sep in path or (os.altsep and os.altsep in path):
            return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
        return shutil.which(path)
    found = shutil.which("tesseract")
    if found is None and sys.platform == "win32":
        default = Path(os.environ.get("PROGRAMFILES", r"C:\Program Files")) / "Tesseract-OCR" / "tesseract.exe"
        found = str(default) if default.is_file() else None
    return found


def probe(configured: str | None = None) -> Tesseract:
    """Is Tesseract usable here, which version, which languages (cached per binary and mtime)."""
    binary = find_binary(configured)
    if binary is None:
        problem = f"ingest.tesseract ({configured}) is not an executable" if configured else "tesseract is not on PATH"
        return Tesseract(None, problem=problem)
    try:
        key = (binary, os.stat(binary).st_mtime)
    except OSError:
        key = (binary, 0.0)
    with _probe_lock:
        if key in _probes:
            return _probes[key]
    found = _run_probe(binary)
    with _probe_lock:
        _probes[key] = found
    return found


def _run_probe(binary: str) -> Tesseract:
    def run(*args: str) -> str:
        proc = subprocess.run(
            [binary, *args], capture_output=True, timeout=PROBE_SECONDS, stdin=subprocess.DEVNULL, check=False
        )
        return (proc.stdout + proc.stderr).decode("utf-8", "replace")

    try:
        version_text = run("--version")
        langs_text = run("--list-langs")
    except (OSError, subprocess.SubprocessError) as exc:
        return Tesseract(binary, problem=f"Tesseract at {binary} does not run ({exc})")
    match = re.search(r"tesseract\s+v?(\d+\.\d+[\w.\-]*)", version_text)
    if match is None:
        return Tesseract(binary, problem=f"{binary} does not answer like Tesseract")
    languages = [ln.strip() for ln in langs_text.splitlines()[1:] if _LANGUAGE.fullmatch(ln.strip())]
    return Tesseract(binary, version=match[1], languages=languages)


def default_languages(installed: list[str]) -> list[str]:
    """What is read when ``ingest.ocr_languages`` is not set: every installed language
    pack when there are at most three (each one more slows OCR down), else English and
    the language of this machine's locale, when they are installed."""
    usable = [lang for lang in installed if lang not in SKIPPED_LANGUAGES]
    if len(usable) <= 3:
        return usable
    chosen = [lang for lang in ("eng", _locale_language()) if lang in usable]
    return list(dict.fromkeys(chosen)) or usable[:1]


_ISO639 = {  # the locale's two-letter code → Tesseract's three-letter one, for common locales
    "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "nl": "nld", "sv": "swe", "da": "dan",
    "nb": "nor", "no": "nor", "fi": "fin", "pl": "pol", "cs": "ces", "ru": "rus", "uk": "ukr", "tr": "tur",
    "el": "ell", "ja": "jpn", "zh": "chi_sim", "ko": "kor", "ar": "ara", "he": "heb", "hi": "hin", "hu": "hun",
}  # fmt: skip


def _locale_language() -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value and value not in ("C", "POSIX") and not value.startswith("C."):
            return _ISO639.get(value[:2].lower(), "eng")
    return "eng"


def parse_languages(value: str) -> list[str]:
    """``eng+deu`` (or commas, spaces) → ['eng', 'deu']; raises ValueError on a bad name."""
    names = [n for n in re.split(r"[+,\s]+", value.strip()) if n]
    bad = [n for n in names if not _LANGUAGE.fullmatch(n)]
    if bad or not names:
        raise ValueError(f"'{value}' is not a list of Tesseract language codes (e.g. eng+deu)")
    return names


# ── what a run uses ─────────────────────────────────────────────────────────────────


@dataclass
class OcrSetup:
    """Tesseract as a run uses it: the binary, the languages, the result cache."""

    binary: str | None
    languages: list[str]
    version: str | None = None
    problem: str | None = None  # set when OCR cannot run: the files that need it fail with it
    cache_dir: Path | None = None
    max_pixels: int = MAX_PIXELS

    @property
    def available(self) -> bool:
        return self.binary is not None and self.problem is None


def setup_for(ingest: Any = None, cache_dir: Path | None = None) -> OcrSetup:
    """OCR as the config's ``[ingest]`` table (or the defaults) says, on this machine."""
    configured = getattr(ingest, "tesseract", None)
    wanted = getattr(ingest, "ocr_languages", None)
    found = probe(configured)
    if found.problem is not None or found.binary is None:
        return OcrSetup(None, [], problem=found.problem, cache_dir=cache_dir)
    languages = parse_languages(wanted) if wanted else default_languages(found.languages)
    missing = [lang for lang in languages if lang not in found.languages]
    problem = None
    if missing:
        problem = (
            f"Tesseract has no language pack for {', '.join(missing)} (ingest.ocr_languages); installed: "
            f"{', '.join(found.languages) or 'none'} (Debian/Ubuntu: sudo apt install tesseract-ocr-{missing[0]})"
        )
    elif not languages:
        problem = "Tesseract has no language packs installed (Debian/Ubuntu: sudo apt install tesseract-ocr-eng)"
    return OcrSetup(found.binary, languages, found.version, problem, cache_dir)


def now_available(configured: str | None = None) -> bool:
    """Tesseract can be found now (a failure for its absence is worth trying again)."""
    return probe(configured).problem is None


def status(ingest: Any = None) -> dict[str, Any]:
    """For ``kbdesk doctor``: available, version, installed languages, those used, why not."""
    setup = setup_for(ingest)
    found = probe(getattr(ingest, "tesseract", None))
    out: dict[str, Any] = {
        "available": setup.available,
        "binary": found.binary,
        "version": found.version,
        "installed_languages": found.languages,
        "languages": setup.languages,
    }
    if not setup.available:
        out["problem"] = setup.problem or "Tesseract is not usable"
        out["install"] = not_installed().split(": ", 1)[1]
    return out


# ── the cache ───────────────────────────────────────────────────────────────────────


def _cache_path(setup: OcrSetup, data: bytes, what: str) -> Path | None:
    if setup.cache_dir is None:
        return None
    key = hashlib.sha256(data).hexdigest()
    variant = hashlib.sha256(f"{what}|{'+'.join(setup.languages)}|{setup.version}".encode()).hexdigest()[:16]
    return setup.cache_dir / key[:2] / f"{key}-{variant}.json"


def _cache_get(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        found = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("pages"), list) else None


def _cache_put(path: Path | None, result: dict) -> None:
    if path is None:
        return
    with contextlib.suppress(OSError):  # a cache that cannot be written costs the next OCR, nothing else
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(result, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)


# ── what extraction calls ───────────────────────────────────────────────────────────


def _refuse(setup: OcrSetup, what: str) -> None:
    if setup.binary is not None and setup.problem:
        raise OcrMisconfigured(setup.problem)
    configured = setup.problem if setup.problem and setup.problem.startswith("ingest.tesseract") else None
    raise OcrUnavailable(not_installed(what, configured))


@dataclass
class OcrPage:
    page: int
    text: str
    confidence: float | None


def _pages(result: dict) -> list[OcrPage]:
    return [
        OcrPage(int(p["page"]), str(p["text"]), p.get("confidence"))
        for p in result.get("pages", [])
        if isinstance(p, dict) and str(p.get("text", "")).strip()
    ]


def ocr_image(
    data: bytes, setup: OcrSetup, *, timeout: float, memory_mb: int, cancelled: Callable[[], bool] | None = None
) -> tuple[list[OcrPage], list[str]]:
    """The text of an image file, a page per frame (a TIFF's pages); cached by content."""
    from kbdesk.ingest.ocr_images import image_frames

    if not setup.available:
        _refuse(setup, "the text of an image")
    path = _cache_path(setup, data, "image")
    result = _cache_get(path)
    if result is None:
        frames = image_frames(data)
        result = run_ocr_worker(
            data, ["image"], setup, timeout=timeout * max(1, frames), memory_mb=memory_mb, cancelled=cancelled
        )
        _cache_put(path, result)
    return _pages(result), [str(e) for e in result.get("errors", [])]


def ocr_pdf_pages(
    data: bytes,
    numbers: list[int],
    setup: OcrSetup,
    *,
    timeout: float,
    memory_mb: int,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[list[OcrPage], list[str]]:
    """The text of the images on pages ``numbers`` of a PDF (those without a text layer)."""
    if not setup.available:
        _refuse(setup, "PDF has no extractable text (scanned pages?): reading it")
    pages = ",".join(str(n) for n in numbers)
    path = _cache_path(setup, data, f"pdf:{pages}")
    result = _cache_get(path)
    if result is None:
        result = run_ocr_worker(
            data, ["pdf", pages], setup, timeout=timeout * len(numbers), memory_mb=memory_mb, cancelled=cancelled
        )
        _cache_put(path, result)
    return _pages(result), [str(e) for e in result.get("errors", [])]
