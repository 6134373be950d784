"""A query for a function, class or section name finds the chunk that defines it first,
on every engine: the heading path is a field of its own in keyword ranking
(kbdesk.store.headings), and the chunks a query names are found by their last heading
even when BM25 ranks them past its candidates. Small repositories shaped like the real
ones measured in docs/BENCHMARKS.md (itsdangerous, a LaTeX paper, org notes)."""

from __future__ import annotations

from pathlib import Path

from kbdesk.desk import Desk
from kbdesk.store.headings import heading_match

ENCODING = '''\
"""Text and bytes."""

import base64


def want_bytes(s, encoding="utf-8", errors="strict"):
    """Return ``s`` as bytes: text is encoded with ``encoding``, bytes are returned as
    they are. Signers and serializers call this on every key, salt and value they are
    given, so that callers may pass either kind."""
    if isinstance(s, str):
        s = s.encode(encoding, errors)
    return s


def base64_encode(string):
    """URL-safe base64 without padding."""
    string = want_bytes(string)
    return base64.urlsafe_b64encode(string).rstrip(b"=")
'''

TEST_ENCODING = """\
from pkg.encoding import want_bytes


def test_want_bytes():
    assert want_bytes("x") == b"x"
    assert want_bytes(b"x") == b"x"
    assert want_bytes("\\u00e9", "latin-1") == b"\\xe9"
"""

SERIALIZER = '''\
import json


class Serializer:
    """Serializes values and signs them with a Signer; reads them back."""

    def load_payload(self, payload):
        return json.loads(payload)

    def loads(self, s, salt=None):
        """Reverse of dumps. Raises BadSignature if the signature does not match."""
        return self.load_payload(self.make_signer(salt).unsign(s))

    def load(self, f, salt=None):
        """Like loads, but reads from a file: load the file, then loads what it holds.
        The file is read whole; loads checks the signature; load returns the value."""
        return self.loads(f.read(), salt)

    def _loads_unsafe_impl(self, s, salt):
        """Loads without checking the signature; loads the payload as loads would."""
        return self.load_payload(s)
'''


def _signer_module() -> str:
    lines = [
        "import hmac",
        "",
        "",
        "class Signer:",
        '    """Signs bytes with a secret key and checks signatures. The key is derived',
        "    from the secret and a salt; the signature is appended after a separator.",
        "    Every value that leaves the application and comes back should be signed, and",
        "    unsigned on the way in; the separator must not occur in the key derivation.",
        '    """',
        "",
        "    def __init__(self, secret_key, salt=b'itsdangerous.Signer', sep=b'.'):",
        "        self.secret_key = secret_key",
        "        self.salt = salt",
        "        self.sep = sep",
    ]
    return "\n".join(lines) + "\n"


def _signer_tests(n: int = 70) -> str:
    """Many tests that each mention the signer a few times: BM25's top candidates for
    "Signer" are all tests, the class itself far below them."""
    parts = ["import pytest", "from pkg.signer import Signer", "", ""]
    parts += ["@pytest.fixture", "def signer():", "    return Signer('secret')", "", ""]
    for i in range(n):
        parts += [
            f"def test_signer_case_{i}(signer):",
            f"    signed = signer.sign(b'value {i}')",
            "    assert signer.unsign(signed)",
            "    assert Signer('other').validate(signed) is False",
            "",
            "",
        ]
    return "\n".join(parts)


PAPER = r"""\documentclass{llncs}
\title{A private payment protocol}
\begin{document}
\maketitle
\section{Introduction}
We describe a payment protocol and argue its security.
\section{Payment System Security}
The security of the payment system rests on the security of its parts: security of
the commitments, security of the proofs, and security against double spends. We show
the security of each, and then the security of the whole payment system.
\section{Security}
Definitions used by the proofs.
\section{Payment Proofs}
A payment proof shows that a payment was made.
\section{View Keys and Payment Proofs}
View keys reveal incoming payments; payment proofs reveal one payment; payment proofs
and view keys are both given to an auditor, who checks the payment proofs.
\end{document}
"""

NOTES = """\
#+title: Machine learning notes

* Probabilistic Graphical Models
Graphs that encode conditional independence.
** Bayesian networks
Directed probabilistic graphical models; the models factor along the graph.
Probabilistic models of this kind: graphical models with directed edges.
** Markov random fields
Undirected probabilistic graphical models: graphical models over cliques.
"""


def _repo(root: Path) -> Path:
    files = {
        "src/pkg/encoding.py": ENCODING,
        "src/pkg/serializer.py": SERIALIZER,
        "src/pkg/signer.py": _signer_module(),
        "tests/test_encoding.py": TEST_ENCODING,
        "tests/test_signer.py": _signer_tests(),
        "paper/main.tex": PAPER,
        "notes/ml.org": NOTES,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _first(desk: Desk, query: str, mode: str | None = None) -> tuple[str, list[str]]:
    top = desk.search(["code"], query, limit=3, mode=mode).results[0]
    return top.source, top.metadata.get("headings") or []


def test_a_definition_or_section_name_finds_its_chunk_first_on_every_engine(engine_desk: Desk, tmp_path: Path) -> None:
    engine_desk.create_kb("code", keyword_only=True)
    report = engine_desk.add("code", [_repo(tmp_path / "repo")])
    assert not report.failed
    # an identifier whole: not the test named after it that calls it three times
    assert _first(engine_desk, "want_bytes", mode="keyword") == ("src/pkg/encoding.py", ["want_bytes"])
    # not stemmed into "load", nor its unsafe twin
    assert _first(engine_desk, "loads", mode="keyword") == ("src/pkg/serializer.py", ["Serializer", "loads"])
    assert _first(engine_desk, "load", mode="keyword") == ("src/pkg/serializer.py", ["Serializer", "load"])
    # the class, not the fixture "signer", though 70 tests mention it before BM25 reaches it
    assert _first(engine_desk, "Signer", mode="keyword") == ("src/pkg/signer.py", ["Signer"])
    assert _first(engine_desk, "signer", mode="keyword") == ("tests/test_signer.py", ["signer"])
    # a short section over the long one that repeats its words
    assert _first(engine_desk, "Security", mode="keyword") == ("paper/main.tex", ["Security"])
    assert _first(engine_desk, "Payment Proofs", mode="keyword") == ("paper/main.tex", ["Payment Proofs"])
    # a parent heading over its children, which say its words more often
    assert _first(engine_desk, "Probabilistic Graphical Models", mode="keyword") == (
        "notes/ml.org",
        ["Probabilistic Graphical Models"],
    )
    # a path named by its words
    assert _first(engine_desk, "Serializer loads", mode="keyword")[1] == ["Serializer", "loads"]


def test_a_named_chunk_outside_the_filter_stays_out(engine_desk: Desk, tmp_path: Path) -> None:
    engine_desk.create_kb("code", keyword_only=True)
    engine_desk.add("code", [_repo(tmp_path / "repo")])
    results = engine_desk.search(["code"], "Signer", mode="keyword", limit=5, filters="path:tests/**").results
    assert results and all(r.source.startswith("tests/") for r in results)
    assert results[0].metadata.get("headings") == ["signer"]
    if engine_desk.store.kind == "postgres":  # the lookup's expression is the index's
        from kbdesk.store.postgres.schema_steps import LAST_HEADING

        conn = engine_desk.store.connection()
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            f"EXPLAIN SELECT seq FROM kb_chunks WHERE {LAST_HEADING} = lower(%s) AND kb_id = ANY(%s::uuid[])",
            ("Signer", [engine_desk.kb("code").id]),
        ).fetchall()
        conn.execute("RESET enable_seqscan")
        assert "idx_kbchunk_heading" in " ".join(str(row[0]) for row in plan)


def test_a_sections_later_chunk_without_the_words_is_not_a_keyword_match(engine_desk: Desk, tmp_path: Path) -> None:
    """The heading index finds every chunk under a section named by the query; one that
    holds none of the query's words is left out, not shown with similarity 0 above real
    matches."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "# Backups\n\nBackups run every night at two.\n\n" + "Restore with the snapshot name. " * 400,
        encoding="utf-8",
    )
    (folder / "faq.md").write_text("# Office\n\nOur backups are kept for thirty days.\n", encoding="utf-8")
    engine_desk.create_kb("notes", keyword_only=True)
    engine_desk.add("notes", [folder])
    kb = engine_desk.kb("notes")
    texts = [text for _, text in engine_desk.store.chunk_texts(kb.id)]
    assert any("backups" not in t.lower() for t in texts)  # the section is cut; later chunks lack the word
    results = engine_desk.search(["notes"], "Backups", mode="keyword", limit=5, threshold=0.0).results
    assert [r.source for r in results][:1] == ["guide.md"]
    assert {r.source for r in results} == {"guide.md", "faq.md"}
    assert all("backups" in r.content.lower() for r in results)
    assert all(r.similarity > 0 for r in results)


def test_text_without_headings_ranks_by_bm25_alone(desk: Desk, tmp_path: Path) -> None:
    folder = tmp_path / "prose"
    folder.mkdir()
    texts = [
        "The tide rose over the harbour wall and the boats lifted on their moorings.",
        "Tide tables give the times of high water; the harbour master posts them weekly.",
        "A harbour is a sheltered body of water where ships may moor; tide and harbour.",
        "Boats and ships: the harbour held forty boats at the spring tide.",
    ]
    for i, text in enumerate(texts):
        (folder / f"note{i}.txt").write_text(text, encoding="utf-8")
    desk.create_kb("prose", keyword_only=True)
    desk.add("prose", [folder])
    kb = desk.kb("prose")
    for query in ("harbour tide", "boats", "Tide"):
        hits = desk.store.keyword_candidates([kb.id], query, 10)
        assert hits, query
        bm25 = desk.store.keyword_scores([kb.id], query, [seq for seq, _ in hits])
        assert [(seq, round(score, 9)) for seq, score in hits] == [(seq, round(bm25[seq], 9)) for seq, _ in hits], query


def test_the_heading_field(tmp_path: Path) -> None:
    assert heading_match("want_bytes", ["want_bytes"]) > heading_match("want_bytes", ["test_want_bytes"]) == 0
    assert heading_match("Signer", ["Signer"]) > heading_match("Signer", ["signer"]) > 0
    path = ["Parser", "parse"]
    assert heading_match("Parser parse", path) > heading_match("Parser parse", ["Parser", "parse_file"]) == 0
    assert heading_match("Parser parse", path) > heading_match("Parser parse", ["Lexer", *path]) > 0
    assert heading_match("the results of the trial", ["Results"]) == 0
    assert heading_match("Security", ["Payment System Security"]) == 0
    assert heading_match("anything", []) == 0


def test_an_older_file_gets_the_heading_index(tmp_path: Path) -> None:
    from kbdesk import open_desk
    from kbdesk.store import choose_driver
    from kbdesk.store.sqlite.migrations import MIGRATIONS, migrate

    path = tmp_path / "old.db"
    conn = choose_driver("auto").module.connect(str(path), isolation_level=None)
    migrate(conn, MIGRATIONS[:16])  # the file as kbdesk wrote it before the index
    conn.close()
    desk = open_desk(path)
    try:
        desk.create_kb("code", keyword_only=True)
        desk.add("code", [_repo(tmp_path / "repo")])
        assert _first(desk, "Signer", mode="keyword") == ("src/pkg/signer.py", ["Signer"])
        conn = desk.store.connection()
        plan = " ".join(
            str(row[-1])
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT seq FROM kb_chunks "
                "WHERE lower(json_extract(metadata, '$.headings[#-1]')) = lower(?) AND kb_id IN (?)",
                ("Signer", desk.kb("code").id),
            ).fetchall()
        )
        assert "idx_kbchunk_heading" in plan
    finally:
        desk.close()
