"""What a URL source may reach and how much it may take: schemes, credentials, private
addresses, globs, and the limits of a page and a run (a real server on loopback)."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli
from kbdesk.web.fetch import Fetcher, FetchFailed
from kbdesk.web.pages import kind_of, links_of
from kbdesk.web.urls import UrlRefused, check, check_address, glob_match, redact, scope_of, wanted
from web_site import Site


@pytest.mark.parametrize(
    "url, reason",
    [
        ("file:///etc/passwd", "'file:' URLs are not fetched"),
        ("javascript:alert(1)", "'javascript:' URLs are not fetched"),
        ("https://me:pw@example.org/", "user name or password"),
        ("https://me@example.org/", "user name or password"),
        ("http://example.org:99999/", "not a valid URL"),
        ("http:///nohost", "no host"),
    ],
)
def test_urls_that_are_refused(url, reason):
    with pytest.raises(UrlRefused, match=reason):
        check(url)


def test_a_url_is_known_without_its_fragment_and_with_a_lower_case_host():
    assert check("HTTP://Example.ORG:80/a/b.html#part") == "http://example.org/a/b.html"
    assert scope_of("https://h.org/docs/intro.html") == "https://h.org/docs/"
    assert redact("https://me:secret@h.org/x") == "https://me:***@h.org/x"
    # control characters (which could drive a terminal) and spaces are escaped, as a browser sends them
    assert check("https://h.org/a b/\x1b]0;x\x07.html?q=a b") == "https://h.org/a%20b/%1B%5D0;x%07.html?q=a%20b"
    assert check("https://h.org/caf%C3%A9.html") == "https://h.org/caf%C3%A9.html"


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.0.8", "192.168.1.1", "169.254.169.254", "[::1]", "localhost"])
def test_private_addresses_only_when_the_user_named_the_host(host):
    with pytest.raises(UrlRefused, match="add it by its own URL"):
        check_address(check(f"http://{host}/x"), named_hosts=set())
    check_address(check(f"http://{host}/x"), named_hosts={host.strip("[]")})  # named: allowed


def test_globs_match_urls_and_paths_without_backtracking_blowups():
    assert glob_match("https://h.org/docs/a.html", "*/docs/*.html")
    assert not glob_match("https://h.org/blog/a.html", "*/docs/*")
    assert glob_match("abc", "a?c") and not glob_match("abd", "a?c")
    assert glob_match("x" * 4000, "*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x")
    assert not glob_match("x" * 4000 + "y", "*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*xz")
    assert wanted("https://h.org/docs/a.html", include=["/docs/*"], exclude=[])
    assert not wanted("https://h.org/docs/old/a.html", include=["/docs/*"], exclude=["*/old/*"])


def test_what_a_body_is_read_as():
    assert kind_of("text/html", b"<p>x", "https://h/a") == "text/html"
    assert kind_of("application/octet-stream", b"%PDF-1.7 ...", "https://h/a") == "application/pdf"
    assert kind_of("text/html", b"%PDF-1.7 ...", "https://h/a") == "application/pdf"
    assert kind_of("application/octet-stream", b"x", "https://h/notes.md?v=2") == "text/markdown"
    assert kind_of("image/png", b"\x89PNG", "https://h/a.png") is None


def test_links_are_absolute_once_each_and_nofollow_is_honoured():
    html = '<base href="https://h.org/d/"><a href="a.html#x">A</a><a href="a.html">A</a><a href="mailto:x@y">m</a>'
    assert links_of(html, "https://h.org/") == ["https://h.org/d/a.html"]
    assert links_of('<meta name="robots" content="noindex, nofollow"><a href="/a">A</a>', "https://h.org/") == []
    assert links_of('<a rel="nofollow" href="/a">A</a>', "https://h.org/") == []


@pytest.mark.slow
def test_a_page_over_the_size_limit_and_a_redirect_loop_fail_alone():
    with Site() as site:
        site.pages["/big.html"] = ("text/html", b"<p>" + b"word " * 50_000 + b"</p>")
        handler = site.handler
        original = handler.do_GET

        def do_get(self):
            if self.path.startswith("/loop"):
                site.requests.append(("GET", self.path, {}))
                self.send_response(302)
                self.send_header("Location", f"/loop{len(self.path)}")
                self.end_headers()
                return
            original(self)

        handler.do_GET = do_get
        fetcher = Fetcher({"127.0.0.1"}, max_bytes=100_000, interval=0)
        try:
            with pytest.raises(FetchFailed, match="over the"):
                fetcher.get(f"{site.base}/big.html")
            with pytest.raises(FetchFailed, match="more than 5 redirects"):
                fetcher.get(f"{site.base}/loop")
            assert sum(p.startswith("/loop") for p in site.paths()) == 6
            assert fetcher.get(f"{site.base}/cones.html").status == 200
        finally:
            fetcher.close()


@pytest.mark.slow
def test_a_server_that_trickles_is_cut_at_the_whole_request_deadline():
    with Site() as site:
        handler = site.handler

        def do_get(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            for _ in range(40):  # a byte every 0.1 s: no single read ever times out
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)

        handler.do_GET = do_get
        fetcher = Fetcher({"127.0.0.1"}, max_bytes=1_000_000, timeout=1.0, interval=0)
        try:
            with pytest.raises(FetchFailed, match="took longer than 1 s"):
                fetcher.get(f"{site.base}/slow.html")
        finally:
            fetcher.close()


@pytest.mark.slow
def test_max_pages_and_url_globs_bound_a_crawl():
    runner = CliRunner()
    runner.invoke(cli, ["kb", "create", "Web"])
    with Site() as site:
        start = f"{site.base}/index.html"
        r = runner.invoke(cli, ["add", "Web", start, "--depth", "1", "--max-pages", "2", "--json"])
        summary = json.loads(r.stdout)
        assert len(summary["added"]) == 2
        limited = [s for s in summary["skipped"] if "limit of 2 pages" in s["reason"]]
        assert len(limited) == 3  # the linked pages not reached (robots.txt not even asked about them)
        r = runner.invoke(cli, ["add", "Web", start, "--depth", "1", "--exclude", "*.txt", "--json"])
        summary = json.loads(r.stdout)
        assert f"{site.base}/notes.txt" not in summary["added"] + summary["unchanged"]
        assert "/notes.txt" not in site.paths()
