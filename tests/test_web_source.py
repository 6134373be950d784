"""``kbdesk add KB URL``: pages fetched from a real loopback site, their links followed,
robots.txt honoured, chrome left out, results cited by URL, and re-checked with
conditional requests."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kbdesk.cli.main import cli
from web_site import Site

pytestmark = pytest.mark.slow  # a server on loopback


@pytest.fixture
def run():
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(cli, [str(a) for a in args])
        assert "Traceback" not in result.output
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return invoke


def texts(run, kb: str) -> dict[str, str]:
    """Each document's indexed text by its name."""
    from kbdesk import open_desk

    desk = open_desk()
    try:
        found = desk.kb(kb)
        return {d.filename: desk.store.document_text(d.id) or "" for d in desk.documents(found.id)}
    finally:
        desk.close()


def test_a_site_is_added_to_depth_one_without_chrome_and_re_checked_conditionally(run):
    run("kb", "create", "Web")
    with Site() as site:
        start = f"{site.base}/index.html"
        r = run("add", "Web", start, "--depth", "1", "--json")
        assert r.exit_code == 0, r.output
        summary = json.loads(r.stdout)
        linked = ["/cones.html", "/notes.txt", "/about.html"]  # the about page: from the navigation
        assert sorted(summary["added"]) == sorted([start, *(site.base + p for p in linked)])
        assert {"path": f"{site.base}/private.html", "reason": "robots.txt does not allow it"} in summary["skipped"]
        # robots.txt first; the disallowed page, the other site and the page two links away never asked for
        paths = site.paths()
        assert paths[0] == "/robots.txt"
        assert "/private.html" not in paths and "/deep.html" not in paths
        assert paths.count("/cones.html") == 1  # the same page under another fragment: once
        ua = site.requests[1][2]["user-agent"]
        assert ua.startswith("kbdesk/") and "+http" in ua

        docs = texts(run, "Web")
        assert set(docs) == set(summary["added"])
        everything = "\n".join(docs.values())
        for chrome in ("Pottery shop menu", "Copyright Kiln Works", "newsletter", "Popular posts", "Kiln Works"):
            assert chrome not in everything, chrome
        assert "drives out the water bound in clay" in docs[start]
        assert "witness cone slumps" in docs[f"{site.base}/cones.html"]
        assert "cobalt" not in everything

        hits = json.loads(run("search", "Web", "witness cone slumps", "--json").stdout)["results"]
        assert hits and hits[0]["source"] == f"{site.base}/cones.html"

        # again: every page asked with its validators, answered 304, nothing changes
        before = len(site.requests)
        r = run("add", "Web", start, "--depth", "1", "--json")
        assert r.exit_code == 0, r.output
        again = json.loads(r.stdout)
        assert sorted(again["unchanged"]) == sorted(summary["added"]) and not again["added"] and not again["updated"]
        pages = [(p, h) for _, p, h in site.requests[before:] if p != "/robots.txt"]
        assert sorted(p for p, _ in pages) == ["/about.html", "/cones.html", "/index.html", "/notes.txt"]
        for path, headers in pages:
            assert headers.get("if-none-match", "").startswith('"'), path
            assert headers.get("if-modified-since") == "Tue, 14 Nov 2023 22:13:20 GMT", path
        assert texts(run, "Web") == docs


def test_a_changed_page_is_updated_and_a_gone_one_removed_with_sync(run):
    run("kb", "create", "Web")
    with Site() as site:
        start = f"{site.base}/index.html"
        run("add", "Web", start, "--depth", "1")
        ctype, _ = site.pages["/cones.html"]
        site.pages["/cones.html"] = (
            ctype,
            b"<html><body><main><p>Cones now bend at cone six.</p></main></body></html>",
        )
        site.gone.add("/notes.txt")
        r = run("add", "Web", start, "--depth", "1", "--json")
        summary = json.loads(r.stdout)
        assert summary["updated"] == [f"{site.base}/cones.html"]
        assert summary["failed"] == [{"file": f"{site.base}/notes.txt", "error": "the page is gone (HTTP 410)"}]
        assert r.exit_code == 3
        assert f"{site.base}/notes.txt" in texts(run, "Web")  # kept until --sync

        summary = json.loads(run("add", "Web", start, "--depth", "1", "--sync", "--json").stdout)
        assert summary["removed"] == [f"{site.base}/notes.txt"]
        docs = texts(run, "Web")
        assert f"{site.base}/notes.txt" not in docs and "bend at cone six" in docs[f"{site.base}/cones.html"]


def test_a_sitemap_adds_its_pages(run):
    with Site() as site:
        urls = "".join(f"<url><loc>{site.base}{p}</loc></url>" for p in ("/cones.html", "/deep.html"))
        site.pages["/sitemap.xml"] = (
            "application/xml",
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode(),
        )
        run("kb", "create", "Web")
        summary = json.loads(run("add", "Web", f"{site.base}/sitemap.xml", "--json").stdout)
        assert sorted(summary["added"]) == [f"{site.base}/cones.html", f"{site.base}/deep.html"]


@pytest.mark.parametrize(
    "url, reason",
    [
        ("file:///etc/passwd", "'file:' URLs are not fetched"),
        ("ftp://example.org/x", "'ftp:' URLs are not fetched"),
        ("http://user:secret@127.0.0.1/", "a URL with a user name or password is not fetched"),
    ],
)
def test_urls_kbdesk_will_not_fetch_fail_with_a_reason(run, url, reason):
    run("kb", "create", "Web")
    r = run("add", "Web", url)
    assert r.exit_code == 3
    assert reason in r.stderr
    assert "secret" not in r.output


def test_a_redirect_to_another_scheme_or_a_private_address_is_not_followed(run):
    with Site() as site:
        site.pages["/go-file.html"] = ("text/html", b"")
        site.pages["/go-private.html"] = ("text/html", b"")
        # redirects, answered by the site
        handler = site.handler
        original = handler.do_GET

        def do_get(self):
            targets = {"/go-file.html": "file:///etc/passwd", "/go-private.html": "http://10.1.2.3/admin"}
            if self.path in targets:
                site.requests.append(("GET", self.path, {}))
                self.send_response(302)
                self.send_header("Location", targets[self.path])
                self.end_headers()
                return
            original(self)

        handler.do_GET = do_get
        run("kb", "create", "Web")
        r = run("add", "Web", f"{site.base}/go-file.html", f"{site.base}/go-private.html", "--json")
        failed = {f["file"]: f["error"] for f in json.loads(r.stdout)["failed"]}
        assert "'file:' URLs are not fetched" in failed[f"{site.base}/go-file.html"]
        assert "private-network address" in failed[f"{site.base}/go-private.html"]


def test_watch_re_checks_a_url_and_removes_a_page_that_is_gone(run):
    run("kb", "create", "Web")
    with Site() as site:
        start = f"{site.base}/index.html"
        run("add", "Web", start, "--depth", "1")
        site.gone.add("/about.html")
        before = len(site.requests)
        r = run("watch", "Web", start, "--depth", "1", "--passes", "1", "--json")
        assert r.exit_code == 0, r.output
        events = [json.loads(line) for line in r.stdout.splitlines()]
        assert {"kind": "removed", "name": f"{site.base}/about.html"} in [
            {"kind": e["kind"], "name": e["name"]} for e in events
        ]
        asked = [h for _, p, h in site.requests[before:] if p == "/cones.html"]
        assert asked and asked[0].get("if-none-match")  # a conditional request
        assert f"{site.base}/about.html" not in texts(run, "Web")
