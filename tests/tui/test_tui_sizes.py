"""Nothing a person needs is cut at the sizes terminals open at (80×24, 120×40): every key
in a footer is whole, and a name too long for its column shows that it is cut (…)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from kbdesk.tui.app import make_app
from kbdesk.tui.widgets.fit_line import HINT, fit
from kbdesk.tui.widgets.keys_footer import KeysFooter
from tui_chat_support import screen_text
from tui_support import before, settle, type_text

LONG_KB = "Product documentation for the whole support team"
LONG_FILE = "a-very-long-file-name-of-a-meeting-note-from-last-year-about-backups.md"


def whole_keys(app) -> list[str]:
    """The keys the footer shows; each must lie inside the screen."""
    footer = app.screen.query_one(KeysFooter)
    keys = list(footer.query(FooterKey))
    assert keys, "a footer without keys"
    for key in keys:
        assert key.region.right <= app.size.width, f"'{key.key_display} {key.description}' runs off the screen"
    return [key.description for key in keys]


@pytest.fixture
def long_names(tui_desk, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / LONG_FILE).write_text("# Backups\n\nWe restore backups with the snapshot tool every night.\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 " + b"x" * 40)
    tui_desk.create_kb(LONG_KB, description="What support answers from, kept up to date by the docs group")
    tui_desk.add(LONG_KB, [folder])
    return tui_desk


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_footers_hold_whole_keys_and_long_names_show_they_are_cut(long_names, size):
    app = make_app(long_names)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert "New" in whole_keys(app) and "palette" in whole_keys(app)
        await pilot.press("enter")  # the KB screen
        await settle(pilot)
        assert "Open" in whole_keys(app)
        await pilot.press("slash")
        await settle(pilot)
        await type_text(pilot, "restore backups")
        await pilot.press("enter")
        await settle(pilot)
        whole_keys(app)
        shown = screen_text(app)
        row = next(r for r in shown.splitlines() if "✓ result" in r)
        assert LONG_FILE[:20] in row and "…" in row  # the source, cut visibly
        kbs = next(r for r in shown.splitlines() if "KBs:" in r)
        assert kbs.rstrip().endswith("…") or LONG_KB in kbs
        if size[0] >= 120:  # room for more of the name at 120 columns
            assert LONG_FILE[:45] in row


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_kb_info_line_and_the_chat_status_line_are_never_cut(long_names, size):
    app = make_app(long_names)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the KB screen: its name and description on one line, then the info line
        await settle(pilot)
        lines = screen_text(app).splitlines()
        head = next(line for line in lines if LONG_KB in line and "What support" in line)
        assert head.rstrip().endswith("…") or head.rstrip().endswith("docs group")
        info = next(line for line in lines if "keyword only" in line)
        assert info.rstrip().endswith("2 documents, 1 chunks, 115 B")
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("c")  # the chat: model, KBs (cut first) and how they are searched
        await settle(pilot)
        status = next(line for line in screen_text(app).splitlines() if "KBs:" in line)
        assert status.rstrip().endswith("· search: auto") and "no chat model" in status
        assert LONG_KB in status or "…" in status


def test_a_status_line_gives_way_in_order_and_never_runs_over():
    parts = [
        ("gpt-4o-mini-2024-07-18", "", 1),
        (" · KBs: ", "", 0),
        ("Product documentation for the whole support team, Wiki", "", 2),
        (" · search: auto", "", 0),
        (" (ctrl+o)", "", HINT),
    ]
    assert fit(parts, 0).plain == "".join(text for text, _, _ in parts)  # no width yet: nothing cut
    assert fit(parts, 200).plain.endswith("Wiki · search: auto (ctrl+o)")
    assert fit(parts, 80).plain == "gpt-4o-mini-2024-07-18 · KBs: Product documentation for the whol… · search: auto"
    assert fit(parts, 40).plain == "gpt-4o-mini… · KBs: Prod… · search: auto"  # both cut, neither gone
    for width in range(30, 120):
        assert fit(parts, width).cell_len <= width


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_kb_screen_with_a_long_description(snap_compare, long_names, size):
    """The name and description on one line (cut with …), the info line whole below it."""
    assert snap_compare(make_app(long_names), terminal_size=size, run_before=before(lambda p: p.press("enter")))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_chat_status_with_a_long_kb_name(snap_compare, long_names, size):
    """The status line keeps how the KBs are searched; the KB's name gives way (…)."""
    assert snap_compare(make_app(long_names), terminal_size=size, run_before=before(lambda p: p.press("c")))
