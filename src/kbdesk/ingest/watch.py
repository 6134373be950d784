"""Keeping a KB in step with a folder: OS file events, polling only as a fallback.

:func:`watch_folder` runs one ingestion pass at start, then one per debounced batch of
file events (``watchfiles``: inotify, FSEvents, ReadDirectoryChangesW). A pass is an
ordinary ``Ingestor.add(kb, [folder], sync=True)``: unchanged files cost a ``stat``,
new and changed ones are indexed, vanished ones removed; a file that failed is not
retried until it changes (the ingestor remembers failures — this loop has no retry of
its own). When the system refuses file events (the inotify watch limit, a filesystem
without events) the loop says so and polls instead; ``poll=True`` polls from the start.

Core module: no click, rich or Textual. Everything a person should see comes out as
:class:`WatchEvent` values through the ``on_event`` callback.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kbdesk.desk_api import DeskApi
from kbdesk.errors import KbdeskError
from kbdesk.ingest.formats import format_for
from kbdesk.ingest.ignore_rules import IGNORE_FILES, IgnoredUnder

# Events are grouped until the folder has been quiet for QUIET_MS, or for at most
# DEBOUNCE_MS: a copy of many files makes a few passes, not one per file.
DEBOUNCE_MS = 1600
QUIET_MS = 300
# How often the watcher hands control back when nothing happens: the first wake-up runs
# the initial pass (with the watcher already listening, so nothing slips between).
WAKE_MS = 250


class WatchError(KbdeskError):
    """The folder cannot be watched any more (gone, unreadable); one readable line."""


@dataclass(frozen=True)
class WatchEvent:
    """One line for a person.

    kind: ``watching`` (started; ``detail`` says how: file events or polling),
    ``fallback`` (file events unavailable, polling from now on; ``detail`` says why),
    ``added``, ``updated``, ``resumed``, ``removed`` (``name`` is the document), ``failed``
    (``detail`` is the reason), ``pass`` (a pass ended; ``detail`` counts what it did).
    """

    kind: str
    name: str = ""
    detail: str = ""
    at: datetime = field(default_factory=datetime.now)


def watch_folder(
    ingestor: Any,
    kb: str,
    folder: str | os.PathLike[str],
    *,
    stop: threading.Event,
    on_event: Callable[[WatchEvent], None],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    hidden: bool = False,
    poll: bool = False,
    poll_interval: float = 2.0,
    max_passes: int | None = None,
    watcher: Callable[..., Any] | None = None,
    checksum: bool = False,
    no_ignore: bool = False,
) -> int:
    """Keep ``kb`` in step with ``folder`` until ``stop`` is set; returns the passes run.

    ``max_passes`` stops after that many passes (tests, one-shot use). ``watcher`` is
    ``watchfiles.watch`` unless given (same signature). ``checksum``: every pass
    compares the files' contents, not only their size and mtime. ``no_ignore``: also
    the files the folder's ``.gitignore``/``.ignore`` files name (an edit of one of those
    files makes a pass, so what it names now leaves the KB).
    """
    if watcher is None:
        from watchfiles import watch

        watcher = watch
    root = Path(folder).expanduser().absolute()
    if not root.is_dir():
        raise WatchError(f"{root} is not a folder")
    keep = _relevant(root, _own_paths(ingestor.desk, root), hidden, no_ignore)
    passes = 0
    pass_due = True  # the initial pass, made once the watcher listens (so nothing slips between)
    with closing(_changes(watcher, root, keep, stop, poll, poll_interval, on_event)) as stream:
        for changes in stream:
            if changes is None:  # fell back to polling: events may have been lost meanwhile
                pass_due = True
            if not (changes or pass_due):
                continue
            pass_due = False
            if not root.is_dir():
                raise WatchError(f"{root} is gone; stopped watching")
            _one_pass(ingestor, kb, root, include, exclude, hidden, on_event, checksum, no_ignore)
            passes += 1
            if (max_passes is not None and passes >= max_passes) or stop.is_set():
                break
    return passes


def _changes(
    watcher: Callable[..., Any],
    root: Path,
    keep: Callable[[Any, str], bool],
    stop: threading.Event,
    polling: bool,
    poll_interval: float,
    on_event: Callable[[WatchEvent], None],
) -> Generator[set[Any] | None, None, None]:
    """Batches of changes (an empty set on each idle wake-up) until ``stop`` is set;
    None once after falling back to polling."""
    announced = False
    while not stop.is_set():
        try:
            batches = watcher(
                root,
                watch_filter=keep,
                debounce=DEBOUNCE_MS,
                step=QUIET_MS,
                stop_event=stop,
                rust_timeout=WAKE_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=polling,
                poll_delay_ms=max(int(poll_interval * 1000), 50),
                ignore_permission_denied=True,
            )
            try:
                for changes in batches:
                    if not announced:
                        announced = True
                        on_event(
                            WatchEvent(
                                "watching",
                                str(root),
                                f"polling every {poll_interval:g} s" if polling else "file events",
                            )
                        )
                    yield changes
            finally:
                batches.close()
            return  # the watcher ends when the stop event is set
        except (OSError, RuntimeError) as exc:  # RuntimeError: watchfiles' internal error
            if polling or not root.is_dir():
                raise WatchError(
                    f"{root} is gone; stopped watching"
                    if not root.is_dir()
                    else f"cannot watch {root}: {_one_line(exc)}"
                ) from None
            polling = announced = True
            on_event(
                WatchEvent(
                    "fallback",
                    str(root),
                    f"file events are unavailable ({_one_line(exc)}); polling every {poll_interval:g} s instead",
                )
            )
            yield None


def _one_pass(
    ingestor: Any,
    kb: str,
    root: Path,
    include: Sequence[str],
    exclude: Sequence[str],
    hidden: bool,
    on_event: Callable[[WatchEvent], None],
    checksum: bool = False,
    no_ignore: bool = False,
) -> None:
    report = ingestor.add(
        kb,
        [root],
        include=include,
        exclude=exclude,
        hidden=hidden,
        sync=True,
        **({"checksum": True} if checksum else {}),
        **({"no_ignore": True} if no_ignore else {}),
    )
    for kind in ("added", "updated", "resumed", "removed"):
        for name in getattr(report, kind):
            on_event(WatchEvent(kind, name))
    for name, reason in report.failed:
        on_event(WatchEvent("failed", name, reason))
    on_event(
        WatchEvent(
            "pass",
            str(root),
            f"{len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.removed)} removed, {len(report.failed)} failed",
        )
    )


def _relevant(root: Path, own: tuple[str, ...], hidden: bool, no_ignore: bool = False) -> Callable[[Any, str], bool]:
    """Which changed paths deserve a pass: not kbdesk's own files (the database may live
    inside the folder: its writes must not wake the watcher), not hidden ones unless
    asked for, not those the folder's ignore files name (a build writing into an ignored
    folder makes no passes), not files in a format kbdesk does not read; an edited ignore
    file always does."""
    ignore = [None if no_ignore else IgnoredUnder([root])]

    def keep(_change: Any, path: str) -> bool:
        if own and (path in own or path.startswith(tuple(p + os.sep for p in own))):
            return False
        if not hidden:
            try:
                rel = os.path.relpath(path, root)
            except ValueError:  # another drive (Windows)
                return True
            parts = rel.split(os.sep)
            if parts[-1] in IGNORE_FILES and not any(p.startswith(".") for p in parts[:-1]):
                if ignore[0] is not None:
                    ignore[0] = IgnoredUnder([root])  # what is ignored may have changed
                return True
            if any(part.startswith(".") and part not in (".", "..") for part in parts):
                return False
        if ignore[0] is not None and ignore[0](Path(path)):
            return False
        # a file kbdesk does not read (a build's .o, a download's .part: the table of formats
        # says) makes no pass; a path that is gone may have been a folder or a document
        return os.path.basename(path) in IGNORE_FILES or format_for(path) is not None or not os.path.isfile(path)

    return keep


def _own_paths(desk: DeskApi, root: Path) -> tuple[str, ...]:
    """kbdesk's database and stored files, except any that holds the watched folder."""
    found: set[str] = set()
    db = Path(desk.db_path)
    for path in (
        db,
        db.with_name(db.name + "-wal"),
        db.with_name(db.name + "-shm"),
        db.with_name(db.name + "-journal"),
        Path(desk.files_dir),
        Path(desk.paths.data_dir),
    ):
        for form in (path.absolute(), path.resolve()):
            if form != root and form not in root.parents and form not in root.resolve().parents:
                found.add(str(form))
    return tuple(sorted(found))


def _one_line(exc: BaseException) -> str:
    """watchfiles' messages end in a debug dump of paths: keep the sentence."""
    lines = str(exc).strip().splitlines()
    text = (lines[0].strip() if lines else "") or type(exc).__name__
    if "watch limit" in text.lower():
        return "the system's limit on watched folders is reached (Linux: fs.inotify.max_user_watches)"
    for cut in (" about [", " (Error {"):
        text = text.split(cut, 1)[0]
    return text.rstrip(". ")
