"""The BLAS numpy links: what it is (threadpoolctl when installed, else OpenBLAS through ctypes) and
its thread count, which a measurement can set around one call (``with blas.threads(1): ...``)."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class OpenBlas:
    """The OpenBLAS that numpy loaded, called through ctypes: setting its threads this way costs
    microseconds, so it can wrap a single timed query."""

    def __init__(self) -> None:
        import numpy  # noqa: F401  (loads the library this looks for)

        self.lib: Any = None
        self.prefix = self.suffix = self.path = ""
        with open("/proc/self/maps") as fh:
            libs = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "64_"), ("openblas_", "")):
                if hasattr(lib, f"{prefix}get_num_threads{suffix}"):
                    self.lib, self.prefix, self.suffix, self.path = lib, prefix, suffix, path
                    break
            if self.lib:
                break

    def _fn(self, name: str) -> Any:
        return getattr(self.lib, f"{self.prefix}{name}{self.suffix}")

    def get_threads(self) -> int | None:
        return int(self._fn("get_num_threads")()) if self.lib else None

    def set_threads(self, n: int) -> None:
        if self.lib:
            self._fn("set_num_threads")(ctypes.c_int(n))

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        before = self.get_threads()
        self.set_threads(n)
        try:
            yield
        finally:
            if before:
                self.set_threads(before)

    def info(self) -> dict[str, Any]:
        if not self.lib:
            return {"found": False}
        config = self._fn("get_config")
        config.restype = ctypes.c_char_p
        core = self._fn("get_corename")
        core.restype = ctypes.c_char_p
        return {
            "found": True,
            "api": "openblas",
            "library": Path(self.path).name,
            "config": config().decode().strip(),
            "corename": core().decode().strip(),
            "threads": self.get_threads(),
        }


def blas_info() -> dict[str, Any]:
    """What BLAS numpy uses: threadpoolctl's account when it is installed (any BLAS), merged with
    OpenBLAS's own build string when the library is OpenBLAS."""
    out = OpenBlas().info()
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401
        from threadpoolctl import threadpool_info

        for lib in threadpool_info():
            if lib.get("user_api") == "blas":
                out.update(
                    {
                        "found": True,
                        "api": lib.get("internal_api"),
                        "version": lib.get("version"),
                        "threads": lib.get("num_threads"),
                        "threading_layer": lib.get("threading_layer"),
                        "corename": out.get("corename") or lib.get("architecture"),
                        "via": "threadpoolctl",
                    }
                )
                break
    out.setdefault("via", "ctypes")
    return out


def blas_line(info: dict[str, Any]) -> str:
    """One phrase: ``OpenBLAS `0.3.27 DYNAMIC_ARCH ...` core Haswell, 2 threads``."""
    if not info.get("found"):
        return "BLAS not identified"
    name = f"`{info['config']}`" if info.get("config") else f"{info.get('api')} {info.get('version') or ''}".strip()
    return (
        f"{'OpenBLAS ' if info.get('api') == 'openblas' else ''}{name} core {info.get('corename') or '?'}, "
        f"{info.get('threads')} threads"
    )
