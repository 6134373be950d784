"""kbdesk: a local-first knowledge desk.

The core (this package minus ``kbdesk.cli`` and ``kbdesk.tui``) never imports a UI
toolkit. Library use starts with :func:`open_desk`::

    from kbdesk import open_desk
    with open_desk() as desk:
        kb = desk.kbs.create("notes")
"""

from kbdesk.errors import KbdeskError

__version__ = "0.1.0"

__all__ = ["KbdeskError", "__version__", "open_desk"]


def open_desk(*args, **kwargs):
    """Open the desk (config, paths, store, services). See :func:`kbdesk.desk.open_desk`."""
    from kbdesk.desk import open_desk as _open

    return _open(*args, **kwargs)
