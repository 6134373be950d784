"""Uploads and runs from disk on one KB at once: one document per name, and an upload
another run holds up is answered "try again" with the reason."""

from __future__ import annotations

import collections
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from serve_support import KBDESK, ServeProcess, app_client, make_token

from kbdesk import open_desk
from kbdesk.serve import uploads
from kbdesk.store.claims import end_claim, new_claim
from kbdesk.store.doc_types import NewDocument


@pytest.fixture
def desk(kbdesk_home):
    d = open_desk()
    yield d
    d.close()


def test_an_upload_of_a_file_another_run_is_indexing_is_answered_409_with_retry_after(desk, monkeypatch):
    monkeypatch.setattr(uploads, "BUSY_WAIT", 0.3)  # (5 s in a server: long enough for most runs to end)
    client, auth = app_client(desk)
    with client:
        client.headers.update(auth)
        kb = client.post("/knowledge-bases", json={"name": "notes"}).json()
        # `kbdesk add` (another run, alive) has claimed the file of that name and is indexing it
        other = new_claim()
        spec = NewDocument(kb["id"], "guide.md", "text/markdown", 20, source_path="/home/me/notes/guide.md")
        [held] = desk.store.take_versions([spec], other)
        answer = client.post(
            f"/knowledge-bases/{kb['id']}/documents", files={"file": ("guide.md", b"# Guide\n\nUploaded text.\n")}
        )
        assert answer.status_code == 409
        assert answer.headers["retry-after"] == str(uploads.BUSY_RETRY_AFTER)
        message = answer.json()["message"]
        assert message.startswith("'guide.md' was not added: 'guide.md' is being indexed by kbdesk process ")
        assert message.endswith("; try again shortly")
        assert [d.id for d in desk.store.list_documents(kb["id"])] == [held.id]  # nothing stored beside it
        # that run ends: the same upload is now a new version of the same document
        desk.store.release_claims(other)
        end_claim(other)
        again = client.post(
            f"/knowledge-bases/{kb['id']}/documents", files={"file": ("guide.md", b"# Guide\n\nUploaded text.\n")}
        )
        assert again.status_code == 202 and again.json()["id"] == held.id
        assert len(desk.store.list_documents(kb["id"])) == 1


RETRY = {409, 503}  # the statuses that mean "try again", each with Retry-After


@pytest.mark.slow
def test_uploads_racing_kbdesk_add_of_the_same_names_never_leave_two_documents(tmp_path, kbdesk_home):
    """``kbdesk serve`` takes uploads of f000.md…f059.md while ``kbdesk add`` indexes a
    folder of the same names into the same (fresh) KB, for several rounds: every name
    ends as one document, and every refused upload says why with a "try again" status."""
    token = make_token("--user", "me")
    server = ServeProcess(tmp_path)
    folder = tmp_path / "notes"
    folder.mkdir()
    names = [f"f{i:03d}.md" for i in range(60)]
    refused: list[tuple[int, str | None, str]] = []
    try:
        with server.client(token) as api:
            for rnd in range(3):
                kb = api.post("/knowledge-bases", json={"name": f"race{rnd}"}).json()
                for i, name in enumerate(names):
                    (folder / name).write_text(f"# Note {i}\n\nRound {rnd}, from disk: heron {i}.\n")
                add = subprocess.Popen(
                    [*KBDESK, "add", f"race{rnd}", str(folder)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )

                def upload(i: int, kb_id: str = kb["id"], rnd: int = rnd) -> tuple[int, str | None, str]:
                    with server.client(token) as own:
                        body = f"# Note {i}\n\nRound {rnd}, uploaded: egret {i}.\n".encode()
                        answer = own.post(f"/knowledge-bases/{kb_id}/documents", files={"file": (names[i], body)})
                        return answer.status_code, answer.headers.get("retry-after"), answer.text

                with ThreadPoolExecutor(8) as pool:
                    answers = list(pool.map(upload, range(60)))
                _, err = add.communicate(timeout=300)
                assert add.returncode == 0, err
                refused += [a for a in answers if a[0] != 202]
                docs = api.get(f"/knowledge-bases/{kb['id']}/documents", params={"limit": 200}).json()["data"]
                counts = collections.Counter(d["filename"] for d in docs)
                assert sorted(counts) == names and set(counts.values()) == {1}, counts
    finally:
        assert server.stop() == 0
    for status, retry_after, text in refused:  # each refusal: "try again", and why
        assert status in RETRY and retry_after, (status, text)
        assert "was not added: " in text or "try again" in text
    with open_desk() as desk:  # and in the database itself
        rows = desk.store.connection().execute(
            "SELECT kb_id, filename, count(*) FROM kb_documents GROUP BY kb_id, filename HAVING count(*) > 1"
        )
        assert rows.fetchall() == []
