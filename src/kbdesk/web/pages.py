"""What a fetched body is: the format kbdesk reads it as, its links, a sitemap's pages.

The format is told by the Content-Type the server sent and by the bytes themselves (a
PDF is a PDF whatever the header says; ``application/octet-stream`` is read by the URL's
suffix); a body of a type kbdesk does not read (an image, a video) is skipped with the
type named.
"""

from __future__ import annotations

import contextlib
from html.parser import HTMLParser

from kbdesk.ingest.extract import content_type_for
from kbdesk.ingest.formats import media_types
from kbdesk.ingest.sections import ExtractionError
from kbdesk.ingest.xml_tree import parse
from kbdesk.web.urls import MAX_URL, normalise

_MEDIA = media_types()  # what each Content-Type is read as: declared with the formats (.ingest.formats)
_GENERIC = ("application/octet-stream", "binary/octet-stream", "application/zip", "")
MAX_LINKS = 10_000  # links read from one page
MAX_SITEMAP_URLS = 50_000  # the sitemap protocol's own limit per file


def kind_of(media_type: str, body: bytes, url: str) -> str | None:
    """The content type kbdesk reads ``body`` as (see :mod:`kbdesk.ingest.extract`), or
    None when it reads no such thing."""
    head = body[:1024].lstrip()
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if media_type in _MEDIA:
        return _MEDIA[media_type]
    if media_type.startswith("application/vnd.") or media_type in _GENERIC:
        path = url.split("?", 1)[0].split("#", 1)[0]
        return content_type_for(path.rsplit("/", 1)[-1])
    if media_type.startswith("text/"):
        return "text/html" if head[:15].lower().startswith((b"<!doctype html", b"<html")) else "text/plain"
    return None


def is_sitemap(media_type: str, body: bytes, url: str) -> bool:
    """Whether ``body`` is a sitemap (``<urlset>`` or ``<sitemapindex>``)."""
    if media_type not in ("application/xml", "text/xml", "") and not url.endswith(".xml"):
        return False
    head = body[:2048]
    return b"<urlset" in head or b"<sitemapindex" in head


def sitemap_urls(body: bytes, base: str) -> tuple[list[str], list[str]]:
    """(pages, nested sitemaps) a sitemap lists; raises ExtractionError when it is not XML
    kbdesk reads (an entity declaration is refused, as in every XML kbdesk reads)."""
    root = parse(body, "sitemap")
    locs = [(n.text_content() or "").strip() for n in root.iter("loc")][:MAX_SITEMAP_URLS]
    found = [normalise(u, base) for u in locs if u and len(u) <= MAX_URL]
    return ([], found) if root.tag == "sitemapindex" else (found, [])


class _Links(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.links: list[str] = []
        self.nofollow = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.links) >= MAX_LINKS:
            return
        values = dict(attrs)
        if tag == "base" and values.get("href"):
            self.base = normalise(values["href"] or "", self.base)
        elif tag == "meta" and (values.get("name") or "").lower() == "robots":
            self.nofollow = "nofollow" in (values.get("content") or "").lower()
        elif tag in ("a", "area") and values.get("href"):
            if "nofollow" in (values.get("rel") or "").lower():
                return
            href = (values["href"] or "").strip()
            if href and len(href) <= MAX_URL and not href.startswith(("#", "javascript:", "mailto:")):
                with contextlib.suppress(ValueError):  # a link with a broken port or host
                    self.links.append(normalise(href, self.base))


def links_of(html: str, base: str) -> list[str]:
    """The links of a page (absolute, without fragments, in order, each once); none when
    the page asks robots not to follow them (``<meta name="robots" content="nofollow">``)."""
    parser = _Links(base)
    try:
        parser.feed(html)
        parser.close()
    except (ExtractionError, ValueError, AssertionError):
        pass
    if parser.nofollow:
        return []
    return list(dict.fromkeys(parser.links))
