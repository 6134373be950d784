"""Claims tell a live runner from a dead one: this process's runs, other processes on
this host (a reused pid is not mistaken for the dead runner), and other hosts."""

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from ingest_support import write_files
from kbdesk import open_desk
from kbdesk.store.claims import _start_of, claim_alive, end_claim, new_claim

HOST = socket.gethostname()


def test_a_run_of_this_process_is_alive_until_it_ends():
    claim = new_claim()
    assert claim_alive(claim)
    other = new_claim()  # another run (thread) of the same process: told apart by its token
    end_claim(claim)
    assert not claim_alive(claim) and claim_alive(other)
    end_claim(other)


def test_another_process_is_alive_while_it_runs_and_not_after():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        claim = f"{HOST}:{child.pid}:{_start_of(child.pid)}:t"
        assert claim_alive(claim)
        assert not claim_alive(f"{HOST}:{child.pid}:someone-else.1:t")  # the pid, reused by another process
        assert claim_alive(f"{HOST}:{child.pid}")  # host:pid from an older kbdesk: the pid decides
    finally:
        child.kill()
        child.wait()
    assert not claim_alive(claim)


def test_claims_from_other_hosts_and_older_kbdesks():
    recent = datetime.now(UTC) - timedelta(minutes=2)
    silent = datetime.now(UTC) - timedelta(minutes=40)
    assert claim_alive("elsewhere:123:x:t", recent)
    assert claim_alive("elsewhere:123:x:t", recent.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    assert not claim_alive("elsewhere:123:x:t", silent)  # silent too long: taken for dead
    assert not claim_alive(f"{HOST}:{os.getpid()}")  # host:pid from an older kbdesk: never this process
    assert not claim_alive(None) and not claim_alive("garbage")


def test_work_a_silent_runner_on_another_host_left_is_taken_over(tmp_path):
    folder = write_files(tmp_path / "c", {"a.txt": "alpha words", "b.txt": "beta words"})
    with open_desk(tmp_path / "kb.db") as desk:
        desk.create_kb("docs", keyword_only=True)
        desk.add("docs", [folder])
        (folder / "a.txt").write_text("alpha words, second version")
        with desk.store.write() as conn:  # another machine claimed the new version, then went silent
            conn.execute(
                "UPDATE kb_documents SET status = 'embedding', claimed_by = 'laptop:42:x:t', "
                "updated_at = '2020-01-01T00:00:00.000Z' WHERE filename = 'a.txt'"
            )
        report = desk.add("docs", [folder])
        assert report.updated == ["a.txt"] and report.by_other == []
        assert {d.status for d in desk.store.list_documents(desk.kb("docs").id)} == {"ready"}
        assert desk.search(["docs"], "second version", mode="keyword").results
