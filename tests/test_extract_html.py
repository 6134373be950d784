"""Main-content HTML extraction on pages shaped like DocBook's and Sphinx's (tests/html_pages/)."""

from pathlib import Path

import pytest

from kbdesk.ingest.extract import extract_bytes
from kbdesk.ingest.html_text import extract_html

PAGES = Path(__file__).parent / "html_pages"
CHROME = (
    "Prev",
    "Next",
    "Home",
    "Report a Bug",
    "Show Source",
    "Copyright",
    "Last updated",
    "Navigation",
    "Quick search",
    "Table of Contents",
    "This Page",
    "modules",
    "¶",
)


def page(name: str):
    return extract_bytes((PAGES / name).read_bytes(), name)


def test_docbook_page_keeps_its_text_without_navigation_bars_or_mini_toc():
    result = page("docbook_section.html")
    text = result.text
    for word in ("Prev", "Up", "Home", "Next", "4.3. Harvest", "Chapter 4. Care"):
        assert word not in text, word
    assert text.count("4.2.1. Pruning Basics") == 1  # the heading, not the mini-TOC's link too
    for sentence in (
        "An orchard needs tending",
        "Prune apple trees in late winter",
        "Sterilise the shears",
        "thin the water shoots",
        "deep soak",
        "collar rot",
    ):
        assert sentence in text


def test_admonition_titles_do_not_replace_the_section_in_the_heading_path():
    sections = page("docbook_section.html").sections
    by_text = {s.text.split("\n")[0]: s.metadata["headings"] for s in sections}
    assert by_text["4.2.1. Pruning Basics"] == ["4.2. Tending the Orchard", "4.2.1. Pruning Basics"]
    assert all("Tip" not in path and "Warning" not in path for path in by_text.values())
    after_tip = next(s for s in sections if "thin the water shoots" in s.text)
    assert after_tip.metadata["headings"] == ["4.2. Tending the Orchard", "4.2.1. Pruning Basics"]
    assert "Tip\n\nSterilise the shears" in after_tip.text  # the box's title stays a line of its text
    rot = next(s for s in sections if "collar rot" in s.text)
    assert rot.metadata["headings"] == ["4.2. Tending the Orchard", "4.2.2. Watering"]


def test_sphinx_page_reads_its_main_content_only():
    result = page("sphinx_page.html")
    text = result.text
    for word in CHROME:
        assert word not in text, word
    assert text.startswith("kiln — Firing schedules — Pottery 2.1 documentation\n\nkiln — Firing schedules")
    for sentence in (
        "plans how fast a kiln heats",
        "Bisque firings need a slower ramp",
        "kiln.ramp(degrees_per_hour)",
        "until the cone bends",
        "slumps at a known heat",
    ):  # the footnote (an <aside> in main) stays
        assert sentence in text
    ramps = next(s for s in result.sections if s.text.startswith("Ramps"))
    assert ramps.metadata["headings"] == ["kiln — Firing schedules", "Ramps"]
    note = next(s for s in result.sections if "Bisque" in s.text)
    assert note.metadata["headings"] == ["kiln — Firing schedules"]


@pytest.mark.parametrize(
    "name, kind, title",
    [
        ("docbook_bookindex.html", "index", "Index"),
        ("sphinx_genindex.html", "index", "Index — Pottery 2.1 documentation"),
        ("sphinx_search.html", "search", "Search — Pottery 2.1 documentation"),
    ],
)
def test_index_and_search_pages_are_indexed_by_their_title_alone(name, kind, title):
    result = page(name)
    assert [s.text for s in result.sections] == [title]
    assert result.sections[0].metadata["page_kind"] == kind
    assert "pruning" not in result.text.lower() and "ramp" not in result.text


def test_a_page_of_links_is_flagged_and_a_page_of_prose_with_links_is_not():
    links = "".join(f'<li><a href="p{i}.html">Topic number {i}</a></li>' for i in range(40))
    toc = extract_html(f"<html><head><title>Contents</title></head><body><ul>{links}</ul></body></html>")
    assert [s.text for s in toc] == ["Contents"] and toc[0].metadata["page_kind"] == "index"
    prose = "".join(
        f'<p>Paragraph {i} explains the matter at length, see <a href="p{i}.html">topic {i}</a>.</p>' for i in range(40)
    )
    page_ = extract_html(f"<html><head><title>Guide</title></head><body>{prose}</body></html>")
    assert "page_kind" not in page_[0].metadata and "Paragraph 39 explains" in page_[-1].text


def test_generic_page_chrome_is_dropped_but_an_article_header_stays():
    html = """<html><head><title>Post</title></head><body>
    <header><a href="/">Site name</a> <a href="/about">About us</a></header>
    <nav class="breadcrumbs"><a href="/">Home</a> / <a href="/blog">Blog</a></nav>
    <article><header><h1>Glazes that crawl</h1><p>By a potter</p></header>
    <p>Crawling happens when glaze pulls away from dusty bisque.</p>
    <footer>Filed under glazes</footer></article>
    <aside>Popular posts: one, two</aside>
    <footer>All rights reserved. <a href="/edit">Edit this page</a></footer></body></html>"""
    text = "\n".join(s.text for s in extract_html(html))
    for chrome in ("Site name", "About us", "Blog", "Popular posts", "All rights reserved", "Edit this page"):
        assert chrome not in text, chrome
    for kept in ("Glazes that crawl", "By a potter", "pulls away from dusty bisque", "Filed under glazes"):
        assert kept in text, kept


def test_a_chapter_page_keeps_its_table_of_contents_and_a_section_page_does_not():
    entries = "".join(
        f'<dt><span class="refentrytitle"><a href="sql-{w}.html">{w.upper()}</a></span> — '
        f'<span class="refpurpose">{purpose}</span></dt>'
        for w, purpose in [("abort", "abort the current transaction"), ("vacuum", "garbage-collect a database")] * 20
    )
    chapter = (
        '<html><head><meta name="generator" content="DocBook XSL Stylesheets"><title>SQL Commands</title></head>'
        '<body><div class="navheader">Prev Up Home Next</div><div class="reference"><h1>SQL Commands</h1>'
        "<p>This part holds the reference for the SQL commands.</p>"
        f'<div class="toc"><p><strong>Table of Contents</strong></p><dl class="toc">{entries}</dl></div>'
        "</div></body></html>"
    )
    result = extract_bytes(chapter.encode(), "sql-commands.html")
    assert "VACUUM — garbage-collect a database" in result.text  # the list is the page's content
    assert "Table of Contents" not in result.text and "Prev" not in result.text
    assert "page_kind" not in result.sections[0].metadata
    # a page with text of its own: its mini-TOC only repeats its headings
    assert page("docbook_section.html").text.count("4.2.1. Pruning Basics") == 1


def test_open_web_pages_lose_their_menus_related_links_and_comments():
    from kbdesk.ingest.html_main import extract_page

    story = "".join(
        f"<p>The harbour council met on day {i} and agreed that the old breakwater must be rebuilt before "
        f"the winter storms, at a cost the town will share with the region over ten years.</p>"
        for i in range(12)
    )
    related = "".join(f'<li><a href="/news/{i}">Celebrity chef opens restaurant number {i}</a></li>' for i in range(15))
    html = f"""<html><head><title>Breakwater to be rebuilt</title></head><body>
    <div class="top"><a href="/">Home</a> <a href="/sport">Sport</a> <a href="/weather">Weather</a></div>
    <div class="content"><h1>Breakwater to be rebuilt</h1>{story}</div>
    <div class="more"><h3>More stories</h3><ul>{related}</ul></div>
    <div class="comments"><p>Comment by Bob: first! Click here to subscribe to our newsletter today.</p></div>
    <div class="bottom">All rights reserved. Terms of use. Cookie settings.</div></body></html>"""
    sections = extract_page(html)
    text = "\n".join(s.text for s in sections)
    assert "old breakwater must be rebuilt" in text and "on day 11 and agreed" in text
    for chrome in ("Celebrity chef", "Sport", "first!", "All rights reserved", "Cookie settings"):
        assert chrome not in text, chrome
    assert sections[0].metadata["title"] == "Breakwater to be rebuilt"
