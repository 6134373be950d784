"""Finding the files to ingest under the paths a user gave.

Folders are walked recursively. Symlinks are followed only while they stay inside the
chosen root (and never round in a loop); sockets, FIFOs and devices are skipped, and so
are kbdesk's own files (the database, its WAL and the stored originals). Hidden files
and folders are skipped unless asked for. In folders, files of a type kbdesk cannot
read are skipped; a file named explicitly is always attempted, so it fails with a
reason instead.

In folders, what the folder's ``.gitignore`` and ``.ignore`` files name is left out
(:mod:`.ignore_rules`; ``no_ignore`` reads it all), and so are files a tool generated —
lock files, minified bundles — and vendored folders (``node_modules``, ``vendor``…), each
with its reason (:mod:`.generated_files`). An ``include`` glob that matches a generated file
reads it, and one that names a vendored folder walks it.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from kbdesk.ingest.formats import format_for  # the table of formats decides what a folder holds for kbdesk
from kbdesk.ingest.generated_files import VENDORED_FOLDERS, generated_reason
from kbdesk.ingest.ignore_rules import Rules, ignored, read_rules
from kbdesk.ingest.names import as_text, display_name, source_key


@dataclass(frozen=True)
class FoundFile:
    path: Path  # where it was found (absolute, not symlink-resolved)
    name: str  # the document's filename: path relative to the root given, or the basename (as a safe line)
    size: int
    mtime: float
    source: str = ""  # the document's source path: ``path`` as storable text (see kbdesk.ingest.names)
    root: str | None = None  # the folder given that it was found under (as text), None for a file given
    content_type: str | None = None  # what it is read as, when not told by its name (a web page's)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", display_name(self.name))
        if not self.source:
            object.__setattr__(self, "source", source_key(self.path))


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", as_text(self.path))


@dataclass
class Scan:
    files: list[FoundFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)  # folders walked (for --sync)
    missing: list[str] = field(default_factory=list)  # paths given that do not exist


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    base = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(base, p) for p in patterns)


def _protected(path: Path | str, protect: Iterable[Path]) -> bool:
    text = str(path)  # string prefixes: ``path.parents`` costs more than reading a small file
    for p in protect:
        root = str(p)
        if text == root or text.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def scan(
    paths: Sequence[str | os.PathLike[str]],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    protect: Iterable[Path] = (),
    no_ignore: bool = False,
) -> Scan:
    """Files under ``paths``; globs match the path relative to its root or the basename.
    ``no_ignore``: also the files that ``.gitignore``/``.ignore`` files name."""
    out = Scan()
    protect = [Path(p).resolve() for p in protect]
    seen: set[str] = set()  # real paths
    for given in paths:
        path = Path(given).expanduser().absolute()
        try:
            st = path.stat()
        except FileNotFoundError:
            out.missing.append(str(given))
            out.skipped.append(Skipped(str(given), "no such file or folder"))
            continue
        except OSError as exc:
            out.skipped.append(Skipped(str(given), f"cannot read ({exc.strerror})"))
            continue
        if stat.S_ISDIR(st.st_mode):
            out.roots.append(path)
            _walk(path, path.resolve(), out, include, exclude, hidden, protect, seen, no_ignore)
        elif stat.S_ISREG(st.st_mode):
            if _protected(path.resolve(), protect):
                out.skipped.append(Skipped(str(path), "kbdesk's own data file"))
            elif str(path.resolve()) not in seen:
                seen.add(str(path.resolve()))
                out.files.append(FoundFile(path, path.name, st.st_size, st.st_mtime))
        else:
            out.skipped.append(Skipped(str(path), "not a regular file"))
    return out


def _walk(
    root: Path,
    real_root: Path,
    out: Scan,
    include: Sequence[str],
    exclude: Sequence[str],
    hidden: bool,
    protect: list[Path],
    seen: set[str],
    no_ignore: bool = False,
) -> None:
    """Walk ``root``; each folder is carried with its real path and its path relative to
    the root as text, so an entry that is not a symlink costs one ``stat`` and no
    ``realpath`` (which takes an ``lstat`` per component of the path)."""
    visited_dirs: set[tuple[int, int]] = set()
    # folder, its real path, rel prefix, the ignore rules that apply in it
    stack: list[tuple[str, str, str, list[Rules]]] = [(str(root), str(real_root), "", [])]
    while stack:
        folder, folder_real, prefix, rules = stack.pop()
        try:
            st = os.stat(folder)
        except OSError as exc:
            out.skipped.append(Skipped(folder, f"cannot read folder ({exc.strerror})"))
            continue
        if (st.st_dev, st.st_ino) in visited_dirs:
            out.skipped.append(Skipped(folder, "symlink loop (folder already visited)"))
            continue
        visited_dirs.add((st.st_dev, st.st_ino))
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            out.skipped.append(Skipped(folder, f"cannot list folder ({exc.strerror})"))
            continue
        if not no_ignore:
            rules = rules + read_rules(folder, prefix)
        subfolders = []
        for entry in entries:
            name = entry.name
            if name.startswith(".") and not hidden:
                continue
            rel = prefix + name
            if entry.is_symlink():
                try:
                    target = Path(entry.path).resolve(strict=True)
                except (OSError, RuntimeError):
                    out.skipped.append(Skipped(entry.path, "broken symlink or symlink loop"))
                    continue
                if target != real_root and real_root not in target.parents:
                    out.skipped.append(Skipped(entry.path, "symlink leads outside the folder"))
                    continue
                real = str(target)
            else:
                real = os.path.join(folder_real, name)
            try:
                st = entry.stat()
            except OSError as exc:
                out.skipped.append(Skipped(entry.path, f"cannot read ({exc.strerror})"))
                continue
            if _protected(real, protect):
                out.skipped.append(Skipped(entry.path, "kbdesk's own data file"))
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if rules and ignored(rules, rel, is_dir):
                continue  # named in a .gitignore or .ignore
            if is_dir:
                if name in VENDORED_FOLDERS and not any(name in p for p in include):
                    out.skipped.append(Skipped(entry.path, f"vendored folder ({name}): other people's code, not read"))
                    continue
                subfolders.append((entry.path, real, rel + "/", rules))
                continue
            if not stat.S_ISREG(st.st_mode):
                out.skipped.append(Skipped(entry.path, "not a regular file (socket, FIFO or device)"))
                continue
            if exclude and _matches(rel, exclude):
                continue
            if include and not _matches(rel, include):
                continue
            generated = generated_reason(name)
            if generated is not None and not (include and _matches(rel, include)):
                out.skipped.append(Skipped(entry.path, generated))
                continue
            if format_for(name) is None:
                kind = PurePath(name).suffix or name
                out.skipped.append(Skipped(entry.path, f"unsupported file type '{kind}'"))
                continue
            if real in seen:
                continue  # the same file reached twice (a symlink inside the root)
            seen.add(real)
            out.files.append(FoundFile(Path(entry.path), rel, st.st_size, st.st_mtime, root=as_text(str(root))))
        stack.extend(reversed(subfolders))
