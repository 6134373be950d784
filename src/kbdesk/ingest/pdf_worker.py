"""PDF text extraction in a child process that can be killed.

pypdf has no timeout, single pages have been seen to hang or eat memory, and any call
can raise on a malformed file. So the PDF never gets parsed in kbdesk's own process:
:func:`run_pdf_worker` runs this file with ``python -P`` (a fresh interpreter through
``subprocess``: no ``fork()`` of a threaded process, no ``preexec_fn``; ``python -m
kbdesk.ingest.pdf_worker`` works the same), writes the PDF bytes to its stdin and reads one JSON object from its
stdout. The parent enforces a wall-clock limit and kills the child when it is reached.
The child caps its own address space (``RLIMIT_AS``) and CPU time before it imports
pypdf, and uses pypdf's own decompression / parsing limits.

Protocol: stdin = PDF bytes; argv = memory cap in MB, CPU seconds; stdout =
``{"pages": [str, ...], "errors": [str, ...]}`` or ``{"error": str}``; exit code 0 when
JSON was written, ``EXIT_MEMORY`` when the memory cap was hit.

This module imports nothing from kbdesk, so the child stays small.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

EXIT_MEMORY = 3
# A 10 MB PDF with more text than this is hostile or broken; it also bounds the JSON
# the parent has to read back.
MAX_TEXT_CHARS = 20_000_000


class PdfWorkerError(Exception):
    """The PDF could not be extracted; the message is one readable line."""


@dataclass
class PdfPages:
    pages: list[str]  # one entry per page, "" for pages without text or that failed
    errors: list[str]  # "page 3: ..." for pages that raised; the others were kept


# ── parent side ─────────────────────────────────────────────────────────────────────


def run_pdf_worker(data: bytes, *, timeout: float, memory_mb: int) -> PdfPages:
    """Extract the text of each page of ``data`` in a child process."""
    cpu_seconds = math.ceil(timeout) + 2  # backstop if kbdesk itself dies mid-extraction
    # This very file runs as a script (it imports nothing from kbdesk), so the child
    # needs no sys.path changes; -P keeps the script's and the current directory (which
    # may hold the user's files) off sys.path.
    cmd = [sys.executable, "-P", os.path.abspath(__file__), str(memory_mb), str(cpu_seconds)]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as exc:  # e.g. a frozen app whose sys.executable is not a Python
        raise PdfWorkerError(f"cannot start the PDF reader process ({exc.strerror or exc})") from None
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise PdfWorkerError(f"PDF extraction took longer than {timeout:g} s") from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    rc = proc.returncode
    if rc == EXIT_MEMORY or (rc != 0 and b"MemoryError" in err):
        raise PdfWorkerError(f"PDF extraction used more than {memory_mb} MB of memory")
    if rc == -getattr(signal, "SIGXCPU", -1000):
        raise PdfWorkerError(f"PDF extraction took longer than {timeout:g} s")
    try:
        result = json.loads(out)
    except ValueError:
        result = None
    if rc != 0 or not isinstance(result, dict):
        how = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
        raise PdfWorkerError(f"PDF reader crashed ({how})")
    if "error" in result:
        raise PdfWorkerError(str(result["error"]))
    return PdfPages(pages=list(result["pages"]), errors=list(result["errors"]))


# ── child side ──────────────────────────────────────────────────────────────────────


class _Failure(Exception):
    pass


def _limit_resources(memory_mb: int, cpu_seconds: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: no rlimits; the parent's wall-clock kill still applies
        return
    for which, value in ((resource.RLIMIT_AS, memory_mb * 1024 * 1024),
                         (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_CORE, 0)):
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):  # e.g. macOS refuses some RLIMIT_AS values
            pass


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    return (text[:200] or type(exc).__name__).replace("\x00", "")


def _limit_message(exc: BaseException) -> str:
    if "decompress" in str(exc).lower():
        return "a compressed stream inflates past the safety limit"
    return f"exceeds a safety limit ({_one_line(exc)})"


def _out_of_memory(exc: BaseException) -> bool:
    # zlib reports a failed allocation as zlib.error, not MemoryError
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or (type(exc).__name__ == "error" and
                                            ("allocate" in text or "memory" in text))


def _clean(text: str) -> str:
    text = text.replace("\x00", "")
    # pypdf can produce lone surrogates from broken font maps; they can't be stored as UTF-8
    return text.encode("utf-8", "replace").decode("utf-8")


def extract_pages(data: bytes) -> tuple[list[str], list[str]]:
    """Child-side extraction; raises ``_Failure`` (readable) for whole-document errors."""
    import io
    import logging
    import warnings

    import pypdf
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    warnings.simplefilter("ignore")
    # pypdf's defaults bound decompression (75 MB per stream) and parsing work; never
    # shell out to jbig2dec, and skip the per-reader scan for deprecated globals.
    if hasattr(pypdf, "overwrite_configuration"):  # in pypdf 7; guarded in case an older one lacks it
        pypdf.overwrite_configuration(jbig2dec_binary=None, disable_legacy_handling=True)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
            raise _Failure("PDF is encrypted")
        count = len(reader.pages)
    except _Failure:
        raise
    except DependencyError:
        raise _Failure("PDF is encrypted with AES; reading it needs the 'cryptography' package") from None
    except FileNotDecryptedError:
        raise _Failure("PDF is encrypted") from None
    except LimitReachedError as exc:
        raise _Failure(f"PDF {_limit_message(exc)}") from None
    except RecursionError:
        raise _Failure("PDF is damaged (objects nested too deeply)") from None
    except Exception as exc:  # pypdf can raise anything on a malformed file
        if _out_of_memory(exc):
            raise MemoryError from None
        raise _Failure(f"PDF is damaged or incomplete ({_one_line(exc)})") from None
    if count == 0:
        raise _Failure("PDF has no pages")

    pages: list[str] = []
    errors: list[str] = []
    total = 0
    for number in range(1, count + 1):
        try:
            text = _clean(reader.pages[number - 1].extract_text() or "")
        except DependencyError:
            raise _Failure("PDF is encrypted with AES; reading it needs the 'cryptography' package") from None
        except FileNotDecryptedError:
            raise _Failure("PDF is encrypted") from None
        except LimitReachedError as exc:
            errors.append(f"page {number}: {_limit_message(exc)}")
            text = ""
        except RecursionError:
            errors.append(f"page {number}: objects nested too deeply")
            text = ""
        except Exception as exc:  # one broken page should not lose the other pages
            if _out_of_memory(exc):
                raise MemoryError from None
            errors.append(f"page {number}: {_one_line(exc)}")
            text = ""
        total += len(text)
        if total > MAX_TEXT_CHARS:
            raise _Failure(f"PDF has more than {MAX_TEXT_CHARS:,} characters of text")
        pages.append(text)
    return pages, errors


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    memory_mb, cpu_seconds = int(args[0]), int(args[1])
    try:
        _limit_resources(memory_mb, cpu_seconds)
        data = sys.stdin.buffer.read()
        try:
            pages, errors = extract_pages(data)
            result: dict = {"pages": pages, "errors": errors}
        except _Failure as exc:
            result = {"error": str(exc)}
        del data
        payload = json.dumps(result, ensure_ascii=False).encode("utf-8")  # _clean(): no surrogates
    except MemoryError:
        return EXIT_MEMORY
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
