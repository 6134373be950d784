"""kbdesk's terminal UI (Textual), a thin face over the same core the CLI uses.

Start it with ``kbdesk`` (no arguments) or build it with :func:`kbdesk.tui.app.make_app`.
Nothing outside this package imports it, so the core stays free of Textual.
"""
