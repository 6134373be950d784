"""The readers of code, configuration, LaTeX, BibTeX and org-mode files, front matter as
YAML reads it, dates as people write them, and legacy encodings told apart."""

from __future__ import annotations

import pytest
import yaml

from kbdesk.filters import document_date
from kbdesk.ingest.charset_guess import guess_encoding
from kbdesk.ingest.extract import ExtractionError, extract_bytes
from kbdesk.ingest.front_matter import split_front_matter
from kbdesk.ingest.people_dates import iso_date
from kbdesk.textnorm import nfkc


def paths(data: str, name: str) -> list[tuple[list[str], str]]:
    """(heading path, the first line of the file's own text) of each section: a section
    with a path begins with a line naming it."""
    out = []
    for section in extract_bytes(data.encode(), name).sections:
        path = section.metadata.get("headings", [])
        lines = section.text.split("\n")
        if path:
            assert lines[0] == " › ".join(path)
            lines = lines[1:]
        out.append((path, lines[0]))
    return out


def test_code_is_cut_at_its_definitions_with_their_names_as_heading_path():
    ts = (
        "import { x } from 'y';\n\nexport class Parser {\n  private pos = 0;\n\n  parse(input: string): Node {\n"
        "    if (input) {\n      return null;\n    }\n  }\n}\n\n"
        "export const helper = (a: number) => {\n  return a;\n};\n"
    )
    assert paths(ts, "p.ts") == [
        ([], "import { x } from 'y';"),
        (["Parser"], "export class Parser {"),
        (["Parser", "parse"], "  parse(input: string): Node {"),
        (["helper"], "export const helper = (a: number) => {"),
    ]
    rust = (
        "pub struct Parser {\n    pos: usize,\n}\n\nimpl Parser {\n    /// Parse it.\n    pub fn parse(&self) {}\n}\n"
    )
    assert [p for p, _ in paths(rust, "lib.rs")] == [["Parser"], ["Parser"], ["Parser", "parse"]]
    ruby = "module Shop\n  class Cart\n    def add(item)\n      @items << item\n    end\n  end\nend\n"
    assert paths(ruby, "cart.rb")[-1][0] == ["Shop", "Cart", "add"]
    c = "/* entry */\nint\nmain(int argc, char **argv)\n{\n    return 0;\n}\n"
    assert paths(c, "main.c")[-1] == (["main"], "main(int argc, char **argv)")
    # a file that does not parse as Python is still cut at its definitions
    broken = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    assert [p for p, _ in paths(broken, "b.py")] == [["ok"], ["broken"]]


def test_a_minified_bundle_fails_with_its_reason():
    bundle = "var a=1;" * 1000
    with pytest.raises(ExtractionError, match="minified or generated code"):
        extract_bytes(bundle.encode(), "bundle.js")


def test_configuration_is_read_by_key_path():
    data = '{"name": "kb", "dependencies": {"click": ">=8.1"}, "files": [{"path": "a"}]}'
    sections = extract_bytes(data.encode(), "package.json").sections
    assert [(s.metadata["headings"], s.text) for s in sections] == [
        (["name"], "name: kb"),
        (["dependencies"], "dependencies.click: >=8.1"),
        (["files"], "files[0].path: a"),
    ]
    compose = "# the stack\nservices:\n  web:\n    image: nginx\n  # the database\n  db:\n    image: pg\nvolumes: {}\n"
    assert paths(compose, "compose.yaml") == [
        (["services"], "# the stack"),
        (["services", "web"], "  web:"),
        (["services", "db"], "  # the database"),
        (["volumes"], "volumes: {}"),
    ]
    toml = 'name = "x"\n\n[tool.ruff.lint]\nselect = ["E"]\n\n[[bin]]\nname = "y"\n'
    assert [p for p, _ in paths(toml, "pyproject.toml")] == [[], ["tool", "ruff", "lint"], ["bin"]]
    xml = '<?xml version="1.0"?><project><dependency id="d1"><artifactId>click</artifactId></dependency></project>'
    (section,) = extract_bytes(xml.encode(), "pom.xml").sections  # key paths: no path line needed
    assert section.metadata["headings"] == ["project", "dependency d1"]
    assert section.text == "dependency@id: d1\nartifactId: click"
    # entities are never expanded: the file is read as the text it is
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;&a;</x>'
    assert extract_bytes(bomb.encode(), "bomb.xml").text == bomb


def test_latex_sections_and_bibtex_entries():
    tex = (
        "\\documentclass{article}\n\\title{On \\emph{Lighthouses}}\n% \\section{Commented out}\n"
        "\\section{Method}\nText.\n\\subsection*{Data \\& Setup}\nMore.\n\\section[Short]{Results}\nEnd.\n"
    )
    sections = extract_bytes(tex.encode(), "paper.tex").sections
    assert [s.metadata["headings"] for s in sections] == [[], ["Method"], ["Method", "Data & Setup"], ["Results"]]
    assert sections[0].metadata["title"] == "On Lighthouses"
    bib = "@string{j = {Journal}}\n@article{knuth1984,\n  title = {Literate Programming},\n}\n@book{a2,\n}\n"
    assert [p for p, _ in paths(bib, "refs.bib")] == [[], ["knuth1984"], ["a2"]]


def test_org_headings_tags_and_properties_become_the_documents():
    org = (
        ":PROPERTIES:\n:ID: 42\n:END:\n#+TITLE: Garden log\n#+FILETAGS: :home:\n#+DATE: <2024-01-05 Fri>\n\n"
        "Intro.\n* TODO [#A] Plant the roses :garden:spring:\n  :PROPERTIES:\n  :CREATED: [2024-03-01 Fri 10:00]\n"
        "  :END:\n  Dig first.\n** Water them :daily:\n   Every morning.\n* Notes\n  Nothing yet.\n"
    )
    sections = extract_bytes(org.encode(), "garden.org").sections
    assert [s.metadata["headings"] for s in sections] == [
        [],
        ["Plant the roses"],
        ["Plant the roses", "Water them"],
        ["Notes"],
    ]
    assert [s.metadata["tags"] for s in sections] == [
        ["home"],
        ["home", "garden", "spring"],
        ["home", "garden", "spring", "daily"],
        ["home"],
    ]
    first, roses = sections[0].metadata, sections[1].metadata
    assert (first["title"], first["date"], first["properties"]) == ("Garden log", "2024-01-05", {"id": "42"})
    assert roses["created"] == "2024-03-01T10:00"


FRONT = [
    'title: "Q3 plan: hiring" # draft\ntags: ["team, infra", ops]\n',
    "title: 'It''s done'\ntags:\n  - alpha  # first\n  - Beta\n",
    "title: >\n  Folded\n  title\ntags: one, two three\n",
    "title: Plain # comment\nmeta:\n  owner: ann\n  tags: [not, these]\ntags: [x]\n",
    'title: "Unicode \\u00e9t\\u00e9"\ntags: []\n',
    "title: 2024\ntags: [1, two]\n",
]


@pytest.mark.parametrize("block", FRONT)
def test_front_matter_gives_the_title_and_tags_a_yaml_reader_gives(block):
    fields, body = split_front_matter(f"---\n{block}---\nBody\n")
    expected = yaml.safe_load(block)
    assert body == "Body\n"
    assert fields.get("title") == " ".join(str(expected["title"]).split())
    tags = expected["tags"]
    want = [str(t).lower() for t in tags] if isinstance(tags, list) else tags.replace(",", " ").split()
    assert fields.get("tags", []) == want


def test_front_matter_is_bounded_and_refuses_code():
    fields, _ = split_front_matter("---\ntitle: x\nrun: !!python/object/apply:os.system ['false']\n---\nB")
    assert fields == {"title": "x"}  # read by the small reader instead; nothing ran
    aliases = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    fields, _ = split_front_matter(f"---\n{aliases}tags: [*i, real]\n---\nB")
    assert fields == {"tags": ["real"]}  # an alias bomb is never expanded into tags


@pytest.mark.parametrize(
    ("written", "iso"),
    [
        ("2024/01/05", "2024-01-05"),
        ("January 5, 2024", "2024-01-05"),
        ("5 Jan 2024", "2024-01-05"),
        ("Fri, 5 January 2024", "2024-01-05"),
        ("2024-01-05T14:30:00Z", "2024-01-05T14:30:00Z"),
        ("2024-01-05 14:30", "2024-01-05 14:30"),
        ("[2024-01-05 Fri 14:30]", "2024-01-05T14:30"),
        ("01/05/2024", None),
        ("soon", None),
    ],
)
def test_dates_in_the_forms_people_write(written, iso):
    assert iso_date(written) == iso
    quoted = f"'{written}'" if written.startswith("[") else written  # YAML: [..] is a list
    fields, _ = split_front_matter(f"---\ndate: {quoted}\n---\nB")
    assert (document_date(fields) is not None) == (iso is not None)


TEXTS = {
    "cp932": "商品コード,商品名,価格\n1001,りんごジュース,150\n",
    "gbk": "会议记录，下周一讨论预算。这是一个测试文件。\n",  # noqa: RUF001
    "cp949": "회의록: 다음 주 월요일에 예산을 논의합니다.\n",
    "euc_jp": "会議の記録、来週の月曜日に予算を話し合います。\n",
    "big5": "這是一個測試檔案，我們在這裡寫一些中文內容。\n",  # noqa: RUF001
    "cp1251": "Протокол совещания: бюджет обсудим в понедельник.\n",
    "koi8_r": "Отчёт о погоде: завтра снегопад.\n",  # noqa: RUF001
    "latin-1": "Le café était fermé; crème brûlée à côté. Größe über Maß.\n",
}


@pytest.mark.parametrize("encoding", TEXTS)
def test_a_legacy_encoding_is_told_from_its_bytes(encoding):
    text = TEXTS[encoding]
    data = text.encode(encoding)
    guessed = guess_encoding(data)
    assert data.decode(guessed) == text
    assert extract_bytes(data, "note.txt").text == nfkc(text.strip())


def test_a_line_too_long_to_be_a_definition_is_text():
    """Definition lines are matched only up to MAX_DEFINITION_LINE characters (which keeps
    the rules' matching bounded on hostile lines); such a line stays in the text."""
    from kbdesk.ingest.code_text import MAX_DEFINITION_LINE

    long_def = "function f(" + "a, " * (MAX_DEFINITION_LINE // 3) + "z) {\n  return 1;\n}\n"
    sections = extract_bytes(("const x = 1;\n\n" + long_def).encode(), "long.js").sections
    assert [s.metadata["headings"] for s in sections] == [[]]
    assert "return 1" in sections[0].text


def test_json_whose_key_paths_would_dwarf_it_is_read_as_its_text():
    from kbdesk.ingest.config_text import MAX_GROWTH

    deep = "k" * 200
    data = '{"' + deep + '": {"' + deep + '": [' + ",".join(["1"] * 20000) + "]}}"
    assert len(deep) * 2 * 20000 > MAX_GROWTH * len(data) + 1_000_000  # the lines would be that long
    (section,) = extract_bytes(data.encode(), "wide.json").sections
    assert section.text == data


def test_xml_whose_element_paths_would_dwarf_it_is_read_as_its_text():
    data = "<r>" + "<a>" * 500 + "<b>x</b>" * 3000 + "</a>" * 500 + "</r>"
    (section,) = extract_bytes(data.encode(), "deep.xml").sections
    assert section.text == data


def test_a_call_with_a_callback_is_not_a_method():
    js = (
        "describe('router', function () {\n  it('routes', function (done) {\n    done();\n  });\n});\n\n"
        "class Router {\n  handle(req, res) {\n    next(createError(406, {\n      types: []\n    }));\n  }\n}\n"
    )
    assert [p for p, _ in paths(js, "router.test.js")] == [[], ["Router"], ["Router", "handle"]]


def test_a_latex_titles_plain_pdf_form_is_its_heading():
    tex = "\\section{\\texorpdfstring{$\\func{Mint}$}{Mint}}\nText.\n\\section{Costs in \\$ for $O(n)$}\nMore.\n"
    assert [p for p, _ in paths(tex, "spark.tex")] == [["Mint"], ["Costs in $ for O(n)"]]
