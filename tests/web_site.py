"""A small web site on loopback for the URL-source tests: pages with navigation and
footers, a robots.txt, ETag and Last-Modified, and a record of every request it got."""

from __future__ import annotations

import hashlib
import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)
NAV = '<nav><a href="/index.html">Home</a> <a href="/about.html">Pottery shop menu</a></nav>'
FOOTER = "<footer>Copyright Kiln Works. Subscribe to our newsletter.</footer>"


def page(title: str, body: str, links: str = "") -> bytes:
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body>"
        f'<header><a href="/index.html">Kiln Works</a> {NAV}</header>'
        f"<main><article><h1>{title}</h1>{body}{links}</article></main>"
        f'<aside class="sidebar">Popular posts: glaze recipes</aside>{FOOTER}</body></html>'
    ).encode()


def default_pages() -> dict[str, tuple[str, bytes]]:
    """path → (content type, body)."""
    return {
        "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /private.html\n"),
        "/index.html": (
            "text/html; charset=utf-8",
            page(
                "Kiln firing guide",
                "<p>Bisque firing drives out the water bound in clay before glazing.</p>",
                '<ul><li><a href="/cones.html">Cones</a></li><li><a href="/notes.txt">Notes</a></li>'
                '<li><a href="/private.html">Private</a></li><li><a href="https://example.org/x">Away</a></li>'
                '<li><a href="/cones.html#top">Cones again</a></li></ul>',
            ),
        ),
        "/cones.html": (
            "text/html",
            page(
                "Pyrometric cones",
                "<p>A witness cone slumps when the heat work is done.</p>",
                '<a href="/deep.html">Deeper</a>',
            ),
        ),
        "/notes.txt": ("text/plain; charset=utf-8", b"Candling keeps the kiln just under boiling overnight."),
        "/about.html": ("text/html", page("About the studio", "<p>The studio fires a gas kiln every week.</p>")),
        "/private.html": ("text/html", page("Private", "<p>The secret stash of cobalt oxide.</p>")),
        "/deep.html": ("text/html", page("Deep", "<p>Reduction firing starves the flame of oxygen.</p>")),
    }


class Site:
    """``pages``: path → (content type, body), changeable while it runs; ``requests``:
    (method, path, headers) of each request received."""

    def __init__(self, pages: dict[str, tuple[str, bytes]] | None = None) -> None:
        self.pages = pages if pages is not None else default_pages()
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.gone: set[str] = set()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):  # quiet
                pass

            def do_GET(self):
                headers = {k.lower(): v for k, v in self.headers.items()}
                site.requests.append(("GET", self.path, headers))
                if self.path in site.gone:
                    self.send_response(410)
                    self.end_headers()
                    return
                if self.path not in site.pages:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                ctype, body = site.pages[self.path]
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if headers.get("if-none-match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", LAST_MODIFIED)
                self.end_headers()
                self.wfile.write(body)

        self.handler: type[Any] = Handler  # a test may replace its do_GET to script an answer
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]
