"""A folder of broken files: each fails alone with a reason, every good file is ready."""

import os

from ingest_support import GOOD_FILES, write_files
from kbdesk import open_desk
from pdf_builders import bomb_page, encrypt, lines_page, make_pdf, text_page

GOOD_PDF = make_pdf(
    [lines_page(["Quarterly report", "Revenue grew twelve percent."]), lines_page(["Page two", "Costs fell."])]
)


def test_broken_files_fail_alone_with_reasons(tmp_path):
    outside = write_files(tmp_path / "outside", {"secret.txt": "outside the root"})
    folder = write_files(
        tmp_path / "mixed",
        {
            **GOOD_FILES,
            "report.pdf": GOOD_PDF,
            "truncated.pdf": GOOD_PDF[: len(GOOD_PDF) // 2],
            "garbage.pdf": b"%PDF-1.4\n" + os.urandom(3000),
            "locked.pdf": encrypt(make_pdf([text_page("secret plans")]), "hunter2"),
            "bomb.pdf": make_pdf([bomb_page()]),
            "scanned.pdf": make_pdf([b"<< /Length 0 >>\nstream\n\nendstream"]),
            "program.txt": b"\x7fELF\x02\x01\x01" + os.urandom(4000),
            "empty.md": b"",
            "huge.txt": b"a" * (11 * 1024 * 1024),
            "legacy.csv": "name;city\nRené;Zürich\nZoë;Málaga\n".encode("cp1252"),
            "wide.txt": "Unicode sixteen text about kites".encode("utf-16"),
            "nul.txt": b"A log line with nul bytes inside\x00 the text. " * 5 + b"\x00",
        },
    )
    os.symlink(folder, folder / "loop")
    os.symlink(outside / "secret.txt", folder / "escape.txt")
    os.mkfifo(folder / "pipe.txt")

    with open_desk() as desk:
        desk.create_kb("mixed")
        report = desk.add("mixed", [folder])
        docs = {d.filename: d for d in desk.store.list_documents(desk.kb("mixed").id)}

        ready = {n for n, d in docs.items() if d.status == "ready"}
        assert ready == set(GOOD_FILES) | {"report.pdf", "legacy.csv", "wide.txt", "nul.txt"}
        reasons = {n: d.error for n, d in docs.items() if d.status == "error"}
        expected = {
            "truncated.pdf": "PDF",
            "garbage.pdf": "PDF",
            "locked.pdf": "encrypted",
            "bomb.pdf": "",
            "scanned.pdf": "no extractable text",
            "program.txt": "binary file",
            "empty.md": "empty",
            "huge.txt": "over the 10 MB limit",
        }
        assert set(reasons) == set(expected)
        for name, fragment in expected.items():
            reason = reasons[name]
            assert reason and fragment in reason, (name, reason)
            assert "\n" not in reason and "Traceback" not in reason
        assert sorted(n for n, _ in report.failed) == sorted(expected)

        skipped = {os.path.basename(p): r for p, r in report.skipped}
        assert "outside the folder" in skipped["escape.txt"]
        assert "not a regular file" in skipped["pipe.txt"]
        assert "loop" in skipped["loop"]
        assert all("secret" not in d for d in docs)  # nothing from outside the root

        # the good ones really are searchable, decoded right
        assert desk.search(["mixed"], "Zürich", mode="keyword").results[0].source == "legacy.csv"
        assert desk.search(["mixed"], "kites", mode="keyword").results[0].source == "wide.txt"
        hit = desk.search(["mixed"], "costs fell", mode="keyword").results[0]
        assert hit.source == "report.pdf" and hit.metadata["page"] == 2
        nul = desk.search(["mixed"], "nul bytes", mode="keyword").results[0]
        assert "\x00" not in nul.content
        # no error document is half-indexed
        conn = desk.store.connection()
        assert (
            conn.execute(
                "SELECT count(*) FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id WHERE d.status != 'ready'"
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
