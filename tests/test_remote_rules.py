"""Remote KBs' rules without a server: names and refs, URLs and tokens, the merge of
rankings, and a remote that accepts the connection but never answers."""

from __future__ import annotations

import socket
import threading

import pytest

from kbdesk.config import parse_config
from kbdesk.errors import ConfigError, InvalidInputError
from kbdesk.models import SearchResult
from kbdesk.remote.federation import FederatedResponse
from kbdesk.remote.names import RemoteRef, check_remote_name, split_refs
from kbdesk.remote.ranking import BY_RANK, BY_SCORE, Ranked, Ranking, merge
from kbdesk.remote.settings import RemoteSettings, check_url, resolve_token, token_source


def test_refs_are_remote_only_when_they_start_with_a_configured_remote():
    local, remote = split_refs(["Notes", "team:Product Docs", "Q3: plans", "TEAM:*"], ["team"])
    assert local == ["Notes", "Q3: plans"]
    assert remote == [RemoteRef("team", "Product Docs"), RemoteRef("team", "*")]
    with pytest.raises(InvalidInputError, match="team:NAME"):
        split_refs(["team:"], ["team"])
    for bad in ("Team", "local", "all", "a b", "x" * 33, "1st", ""):
        with pytest.raises(InvalidInputError):
            check_remote_name(bad)


def test_urls_need_tls_except_to_this_machine():
    assert check_url("https://kb.example.org/api/") == "https://kb.example.org/api"
    for url in ("http://127.0.0.1:8700/api", "http://localhost/api", "http://[::1]:8700/api"):
        assert check_url(url) == url
    with pytest.raises(InvalidInputError, match="unencrypted"):
        check_url("http://kb.example.org/api")
    assert check_url("http://kb.lan/api", allow_http=True) == "http://kb.lan/api"
    for bad in ("https://me:pw@kb.example.org/api", "ftp://kb/api", "https://kb/api?token=x"):
        with pytest.raises(InvalidInputError):
            check_url(bad)


def test_config_remotes_are_checked_and_never_repr_their_token(monkeypatch):
    config = parse_config({"remotes": {"team": {"url": "https://kb.example.org/api", "token": "kbd_secret123"}}})
    assert "kbd_secret123" not in repr(config)
    assert token_source(config.remotes["team"]) == "config.toml"
    with pytest.raises(ConfigError, match=r"remotes\.lab"):
        parse_config({"remotes": {"lab": {"url": "http://10.0.0.5/api"}}})
    with pytest.raises(ConfigError, match=r"remotes\.Bad"):
        parse_config({"remotes": {"Bad": {"url": "https://kb.example.org/api"}}})
    monkeypatch.setenv("TEAM_TOKEN", "kbd_fromenv")
    s = RemoteSettings(url="https://kb.example.org/api", token_env="TEAM_TOKEN", token="kbd_stored")
    assert resolve_token(s) == "kbd_fromenv" and token_source(s) == "$TEAM_TOKEN (set)"


def _ranking(leg, items, *, mode="hybrid", models=(("m", 4),), best=10.0, alpha=0.7, fusion="convex"):
    ranked = [
        Ranked(SearchResult(f"{leg}-{i}", f"{leg}.md", leg, cos, {}), i, cos, kw, None)
        for i, (cos, kw) in enumerate(items, start=1)
    ]
    return Ranking(leg, ranked, mode, fusion, alpha, 0.3, best, list(models))


def test_comparable_sides_merge_by_score_with_the_best_keyword_score_of_all():
    # local: strong keyword match, weaker cosine; remote: the best keyword score overall
    local = _ranking("local", [(0.50, 10.0), (0.45, 0.0)], best=10.0)
    remote = _ranking("team", [(0.60, 20.0), (0.40, 0.0)], best=20.0)
    results, rule = merge([local, remote], 3)
    assert rule == BY_SCORE
    # team-1: .7*.6+.3*1 = .72; local-1: .7*.5+.3*.5 = .50; local-2: .315; team-2: .28 < floor .21? no: kept
    assert [r.content for r in results] == ["team-1", "local-1", "local-2"]
    vector = merge([_ranking("a", [(0.9, None)], mode="vector"), _ranking("b", [(0.95, None)], mode="vector")], 2)
    assert [r.content for r in vector[0]] == ["b-1", "a-1"]


def test_incomparable_sides_merge_by_rank():
    local = _ranking("local", [(0.9, 1.0), (0.8, 1.0)], models=(("m", 4),))
    other = _ranking("team", [(0.2, 1.0), (0.1, 1.0)], models=(("other", 8),))
    results, rule = merge([local, other], 4)
    assert rule == BY_RANK
    assert [r.content for r in results] == ["local-1", "team-1", "local-2", "team-2"]
    assert merge([local, _ranking("team", [(0.2, 1.0)], mode="keyword")], 2)[1] == BY_RANK


def test_a_remote_that_never_answers_leaves_the_local_results(kbdesk_home):
    from kbdesk import open_desk
    from kbdesk.config import Config

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    port = listener.getsockname()[1]
    config = Config(remotes={"team": RemoteSettings(url=f"http://127.0.0.1:{port}/api", token="kbd_x", budget=0.5)})
    desk = open_desk(config=config)
    try:
        desk.add_document(desk.create_kb("Notes").id, "notes.md", ["Backups run on Fridays."])
        response = desk.search(["Notes", "team:Docs"], "backups")
        assert [r.source for r in response.results] == ["notes.md"]
        # the budget or the read timeout ends it first: either way it is named and left out
        assert isinstance(response, FederatedResponse)  # a remote KB took part
        assert [(s.remote, s.state in ("slow", "unreachable")) for s in response.remotes] == [("team", True)]
        assert any("remote 'team' was not searched" in n for n in response.notes)
        with pytest.raises(InvalidInputError, match="read-only"):
            desk.delete_kb("team:Docs")
        with pytest.raises(InvalidInputError, match="remote 'team'"):
            desk.create_kb("team:mine")
    finally:
        desk.close()
        listener.close()
        for conn in held:
            conn.close()


def test_a_server_that_is_not_kbdesk_is_one_line_and_never_read_whole():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from kbdesk.remote.client import RemoteClient, RemoteUnavailableError

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            if self.path.endswith("/me"):
                self.wfile.write(b"<html>not kbdesk</html>")
                return
            try:
                for _ in range(40):
                    self.wfile.write(b"[" * 1_000_000)
            except OSError:
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        client = RemoteClient("team", RemoteSettings(url=url, token="kbd_secret-token"), timeout=10)
        with pytest.raises(
            RemoteUnavailableError, match="does not answer as kbdesk serve does: its answer is not JSON"
        ):
            client.me()
        with pytest.raises(RemoteUnavailableError, match="over 16 MB") as caught:
            client.list_kbs()
        assert "kbd_secret-token" not in str(caught.value) and "\n" not in str(caught.value)
        client.close()
    finally:
        server.shutdown()
