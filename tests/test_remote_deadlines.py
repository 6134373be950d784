"""A remote that trickles, stays silent or answers with the wrong types costs a search its
budget once — then the breaker's moment — and never the local results: each call has one
deadline for connection, headers and body together (a server sending a byte at a time
never trips a per-read timeout), is cancelled when its time is up (the server sees the
connection closed; no thread is left behind), and a malformed KB or result is left out
with a note. Real HTTP on loopback: small servers that misbehave on purpose."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from deadline_support import answers
from kbdesk import open_desk
from kbdesk.config import Config
from kbdesk.providers.breaker import forget_breakers
from kbdesk.remote.settings import RemoteSettings

BUDGET = 0.3
pytestmark = pytest.mark.slow  # loopback servers, and budgets waited out


class Misbehaving:
    """A loopback HTTP server whose every connection runs ``handle(conn)``; it records
    the connections it saw and which of them the client closed."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.connections = 0
        self.closed_by_client = threading.Semaphore(0)
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/api"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self.handle(conn, self._stop)
        except OSError:
            self.closed_by_client.release()
        finally:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            raise OSError("closed")
        data += piece
    return data


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    """Headers, then one byte of a never-ending body every 50 ms (each read is quick)."""
    _read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
    while not stop.is_set():
        conn.sendall(b" ")
        time.sleep(0.05)


def silent(conn: socket.socket, stop: threading.Event) -> None:
    _read_request(conn)
    while not stop.is_set():  # the client closing is seen as an empty read
        conn.settimeout(0.05)
        try:
            if conn.recv(1) == b"":
                raise OSError("closed")
        except TimeoutError:
            continue


def answering(kbs: list, results: list | None = None):
    def handle(conn: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            request = _read_request(conn)
            head, _, rest = request.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(rest) < length:
                rest += conn.recv(65536)
            path = head.split(b" ")[1].decode()
            body = {"data": kbs} if path.endswith("/knowledge-bases") else {"data": results or [], "mode": "keyword"}
            payload = json.dumps(body).encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(payload)).encode()
                + b"\r\n\r\n"
                + payload
            )

    return handle


@pytest.fixture
def desk_with(kbdesk_home):
    made = []

    def make(server: Misbehaving, budget: float = BUDGET):
        forget_breakers()
        config = Config(remotes={"team": RemoteSettings(url=server.url, token="kbd_x", budget=budget)})
        desk = open_desk(config=config)
        kb = desk.create_kb("Notes")
        desk.add_document(kb.id, "notes.md", ["Backups run on Fridays to the external disk."])
        made.append((desk, server))
        return desk

    yield make
    for desk, server in made:
        desk.close()
        server.stop()
    forget_breakers()


def _search(desk):
    return answers(desk.search, ["Notes", "team:*"], "backups")


@pytest.mark.parametrize("behaviour", [trickle, silent], ids=["trickling", "silent"])
def test_a_slow_remote_costs_its_budget_once_then_the_breaker_answers(desk_with, behaviour):
    server = Misbehaving(behaviour)
    desk = desk_with(server)
    first = _search(desk)
    assert [r.source for r in first.results] == ["notes.md"]
    (state,) = first.remotes
    # the call ends itself at its deadline ("did not answer"); on a machine too busy to run
    # it at once, the search may stop waiting a moment before that and say "slow"
    assert (state.state, state.reason) in (
        ("unreachable", f"did not answer within {BUDGET:g} s"),
        ("slow", f"no answer within {BUDGET:g} s"),
    ), state
    assert answers(server.closed_by_client.acquire)  # the abandoned call was cancelled: its connection closed
    for _ in range(20):  # the breaker is open: no one asks the remote, the local results come back
        again = _search(desk)
        assert [r.source for r in again.results] == ["notes.md"]
        assert again.remotes[0].state == "unreachable" and "is not asked again" in again.remotes[0].reason
    assert server.connections == 1


def test_no_thread_is_left_behind_by_a_trickling_remote(desk_with):
    server = Misbehaving(trickle)
    desk = desk_with(server)
    _search(desk)  # the process's remote-call loop starts with the first call
    before = threading.active_count()
    for _ in range(8):
        forget_breakers()  # every search reaches the trickling server
        response = _search(desk)
        assert [r.source for r in response.results] == ["notes.md"]
        assert response.remotes[0].state in ("unreachable", "slow")
    for _ in range(100):
        _search(desk)
    assert server.connections == 9
    for _ in range(9):
        assert answers(server.closed_by_client.acquire)  # every call cancelled, its connection closed
    assert threading.active_count() <= before + 1  # the server's own handler threads wind down too


@pytest.mark.parametrize(
    ("kb", "says"),
    [
        ({"id": "kb-1", "name": "Docs", "document_count": "lots"}, "a document_count that is not a count ('lots')"),
        ({"id": "kb-1", "name": ["Docs"]}, "a name that is not text (list)"),
        ({"id": 7, "name": "Docs"}, "a knowledge base without a usable id"),
        ("Docs", "a knowledge base that is not an object"),
    ],
    ids=["count", "name", "id", "not-an-object"],
)
def test_a_malformed_kb_is_left_out_with_a_note_and_the_local_results_stay(desk_with, kb, says):
    good = {"id": "kb-2", "name": "Handbook", "document_count": 3, "chunk_count": 9}
    result = {"content": "Backups nightly.", "source": "handbook.md", "kb_id": "kb-2", "similarity": 0.5}
    desk = desk_with(Misbehaving(answering([kb, good], [result])), budget=10)
    response = _search(desk)
    assert sorted(r.source for r in response.results) == ["handbook.md", "notes.md"]
    assert response.remotes[0].state == "searched" and response.remotes[0].kbs == ["team:Handbook"]
    assert f"remote 'team': a knowledge base left out: its list gave {says}" in response.notes


def test_malformed_results_are_left_out_and_the_rest_are_merged(desk_with):
    kbs = [{"id": "kb-2", "name": "Handbook"}]
    results = [
        "just text",
        {"content": 7, "source": "x.md"},
        {"content": "Backups nightly.", "source": "a.md", "similarity": "high"},
        {"content": "Backups weekly.", "source": "b.md", "similarity": float("nan"), "score": {"cosine": "x"}},
        {"content": "Backups kept 30 days.", "source": "c.md", "kb_id": ["kb-2"], "chunk_index": "3", "metadata": 5},
    ]
    desk = desk_with(Misbehaving(answering(kbs, results)), budget=10)
    response = _search(desk)
    assert sorted(r.source for r in response.results) == ["c.md", "notes.md"]
    assert "remote 'team': 4 results left out: its answer gave a result that is not an object" in response.notes
    c = next(r for r in response.results if r.source == "c.md")
    assert c.chunk_index is None and c.metadata["remote_kb_id"] is None
