"""kbdesk: a local-first knowledge desk.

The core (this package minus its faces: ``kbdesk.cli``, ``kbdesk.tui``, ``kbdesk.serve``
and ``kbdesk.mcp``) never imports a UI toolkit. Library use starts with
:func:`open_desk` (``home`` moves every path, as ``KBDESK_HOME`` does; without it the
desk is the user's own):

>>> import tempfile
>>> from kbdesk import open_desk
>>> with open_desk(home=tempfile.mkdtemp()) as desk:
...     kb = desk.create_kb("notes")
...     doc = desk.add_document("notes", "minutes.md", ["We decided to ship on Friday."])
...     [hit.source for hit in desk.search(["notes"], "when do we ship").results]
['minutes.md']

``desk.add("notes", ["~/Documents/notes"])`` indexes files and folders;
``desk.chat()`` asks the knowledge bases (see :class:`kbdesk.desk.Desk`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbdesk.errors import KbdeskError

if TYPE_CHECKING:
    from kbdesk.desk import Desk

__version__ = "0.1.0"

__all__ = ["KbdeskError", "__version__", "open_desk"]


def open_desk(*args: Any, **kwargs: Any) -> Desk:
    """Open the desk (config, paths, store, services). See :func:`kbdesk.desk.open_desk`."""
    from kbdesk.desk import open_desk as _open

    return _open(*args, **kwargs)
