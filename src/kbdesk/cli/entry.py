"""The ``kbdesk`` console script. ``kbdesk --version`` and ``kbdesk --help`` answer here,
before click or any command is imported (scripts, shell prompts and people ask them often:
the help page comes from :mod:`kbdesk.cli.help_page`); everything else goes to
:func:`kbdesk.cli.main.main`."""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:
        from kbdesk import __version__

        print(f"kbdesk, version {__version__}")
        return
    if args in (["--help"], ["-h"]):
        from kbdesk.cli.help_page import help_width, page

        sys.stdout.write(page(help_width()))
        return
    from kbdesk.cli.main import main as run

    run()
