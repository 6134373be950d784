"""The ``kbdesk`` console script. ``kbdesk --version`` answers here, before click or any
command is imported (scripts and shell prompts ask it often); everything else goes to
:func:`kbdesk.cli.main.main`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from kbdesk import __version__

        print(f"kbdesk, version {__version__}")
        return
    from kbdesk.cli.main import main as run

    run()
