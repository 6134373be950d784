"""A folder of what people keep beside their documents — code, configuration, LaTeX,
BibTeX, org-mode notes, text in legacy encodings — is read whole: every file ready, a
word planted in each found by keyword search in that file; the code under the names it
is defined by; what .gitignore names, lock files and vendored folders left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_support import write_files
from kbdesk import open_desk

# One file per suffix, each with its own planted word (made of letters only).
CODE = {
    "app/parser.py": "import re\n\n\nclass Parser:\n    def parse(self, text):\n        return 'zebrafinch'\n",
    "web/main.js": "export function start() {\n  return 'okapiwalk';\n}\n",
    "web/App.jsx": "export const App = () => {\n  return <div>quokkajump</div>;\n};\n",
    "web/types.ts": "export interface Shape {\n  // narwhalfin\n  sides: number;\n}\n",
    "web/View.tsx": "export function View() {\n  return <p>axolotlgill</p>;\n}\n",
    "srv/main.go": 'package main\n\n// Serve serves.\nfunc Serve() string {\n\treturn "pangolinscale"\n}\n',
    "srv/lib.rs": 'pub fn run() -> &\'static str {\n    "wombatburrow"\n}\n',
    "srv/Main.java": "public class Main {\n    public static void main(String[] a) {\n"
    '        System.out.println("capybarabath");\n    }\n}\n',
    "srv/tool.c": '#include <stdio.h>\n\nint main(void)\n{\n    puts("lemurleap");\n    return 0;\n}\n',
    "srv/tool.h": "/* tapirsnout */\nint helper(int x);\n",
    "srv/tool.cpp": 'void Tool::run() {\n    log("meerkatwatch");\n}\n',
    "srv/tool.hpp": "class Tool {\n  // ibexclimb\n  void run();\n};\n",
    "srv/app.rb": "class App\n  def call\n    'dingohowl'\n  end\nend\n",
    "srv/index.php": "<?php\nfunction greet() {\n    return 'gerbilnest';\n}\n",
    "srv/Program.cs": 'class Program {\n    static void Main() {\n        Log("ocelotspot");\n    }\n}\n',
    "srv/App.kt": 'fun main() {\n    println("manateeswim")\n}\n',
    "srv/App.swift": 'func greet() -> String {\n    return "koalanap"\n}\n',
    "srv/init.lua": "local function setup()\n  return 'lorisblink'\nend\n",
    "srv/stats.r": "summarise <- function(x) {\n  'bisongraze'\n}\n",
    "srv/solve.m": "function y = solve(x)\n  % jackalcall\n  y = x;\nend\n",
    "srv/tool.pl": "sub greet {\n    return 'marmotwhistle';\n}\n",
    "ops/deploy.sh": "#!/bin/sh\ndeploy() {\n  echo 'walrustusk'\n}\n",
    "ops/schema.sql": "CREATE TABLE users (\n  id int -- puffinbeak\n);\n",
    "conf/settings.json": '{"server": {"host": "localhost", "banner": "toucanbill"}}',
    "conf/compose.yaml": "services:\n  web:\n    image: nginx # flamingostand\n",
    "conf/ci.yml": "jobs:\n  test:\n    name: herontide\n",
    "conf/pyproject.toml": "[tool.ruff]\nline-length = 120 # ospreydive\n",
    "conf/app.ini": "[database]\nname = kestrelhover\n",
    "conf/setup.cfg": "[metadata]\nname = vulturecircle\n",
    "conf/nginx.conf": "[server]\nroot = /srv/albatrossglide\n",
    "conf/pom.xml": "<project><name>pelicanpouch</name></project>",
    "paper/main.tex": "\\documentclass{article}\n\\title{Paper}\n\\begin{document}\n"
    "\\section{Method}\nWe measure the cormorantdive.\n\\end{document}\n",
    "paper/refs.bib": "@article{knuth1984,\n  title = {Literate Programming and the magpiehoard},\n}\n",
    "notes/inbox.org": "#+TITLE: Inbox\n* TODO Call the plumber :home:\n  About the sparrowchirp.\n",
}
# The same text in the legacy encodings people's tools still write, none declared.
LEGACY = {
    "legacy/shiftjis.csv": (
        "商品コード,商品名,価格設定\n1001,りんごジュース,150\n1002,緑茶ペットボトル,120\n",
        "cp932",
        "価格設定",
    ),
    "legacy/gbk.txt": ("会议记录：下周一讨论预算。这是一个测试文件，用于检查编码。\n", "gbk", "讨论预算"),  # noqa: RUF001
    "legacy/euckr.txt": ("회의록: 다음 주 월요일에 예산을 논의합니다. 인코딩 테스트입니다.\n", "euc_kr", "예산을"),
    "legacy/cp1251.txt": ("Протокол совещания: бюджет обсудим в понедельник.\n", "cp1251", "понедельник"),
    "legacy/koi8.txt": ("Отчёт о погоде: завтра ожидается снегопад и сильный ветер.\n", "koi8_r", "снегопад"),  # noqa: RUF001
    "legacy/latin1.txt": ("Le café était fermé; nous avons mangé une crème brûlée à côté.\n", "latin-1", "brûlée"),
}


PLANTED = [
    "zebrafinch",
    "okapiwalk",
    "quokkajump",
    "narwhalfin",
    "axolotlgill",
    "pangolinscale",
    "wombatburrow",
    "capybarabath",
    "lemurleap",
    "tapirsnout",
    "meerkatwatch",
    "ibexclimb",
    "dingohowl",
    "gerbilnest",
    "ocelotspot",
    "manateeswim",
    "koalanap",
    "lorisblink",
    "bisongraze",
    "jackalcall",
    "marmotwhistle",
    "walrustusk",
    "puffinbeak",
    "toucanbill",
    "flamingostand",
    "herontide",
    "ospreydive",
    "kestrelhover",
    "vulturecircle",
    "albatrossglide",
    "pelicanpouch",
    "cormorantdive",
    "magpiehoard",
    "sparrowchirp",
]


def _planted(text: str) -> str:
    (word,) = [w for w in PLANTED if w in text]
    return word


@pytest.fixture
def kb_desk():
    desk = open_desk()
    desk.create_kb("folder")
    yield desk
    desk.close()


def test_a_folder_of_code_configuration_notes_and_legacy_text_is_all_ready_and_found(kb_desk, tmp_path):
    folder = write_files(tmp_path / "kept", dict(CODE))
    for name, (text, encoding, _word) in LEGACY.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text.encode(encoding))
    report = kb_desk.add("folder", [folder])
    assert report.failed == [] and report.skipped == []
    docs = {d.path: d for d in kb_desk.documents("folder")}
    assert set(docs) == set(CODE) | set(LEGACY)
    assert {d.status for d in docs.values()} == {"ready"}

    def found(word: str) -> list[str]:
        response = kb_desk.search(["folder"], word, mode="keyword", limit=5)
        return [r.source for r in response.results]

    for name, text in CODE.items():
        assert found(_planted(text))[:1] == [name], name
    for name, (_text, _encoding, word) in LEGACY.items():
        assert found(word)[:1] == [name], name
    # the encoding it was read in is the document's own property
    assert docs["legacy/shiftjis.csv"].properties["encoding"] == "cp932"
    assert docs["legacy/koi8.txt"].properties["encoding"] == "koi8_r"
    assert docs["legacy/latin1.txt"].properties["encoding"] == "cp1252"
    assert "encoding" not in docs["app/parser.py"].properties  # UTF-8: nothing to record


def test_a_definition_is_found_under_the_names_it_is_defined_by(kb_desk, tmp_path):
    folder = write_files(
        tmp_path / "proj",
        {
            "parser.py": "import re\n\n\nclass Parser:\n    '''Reads text.'''\n\n    @staticmethod\n"
            "    def parse(text):\n        return re.split(' ', text)\n\n    def reset(self):\n        pass\n",
            "server.go": "package srv\n\n// Handle answers a request.\nfunc (s *Server) Handle(r string) {\n"
            "\tprintln(r)\n}\n",
        },
    )
    kb_desk.add("folder", [folder])
    top = kb_desk.search(["folder"], "parse", mode="keyword", limit=3).results[0]
    assert top.source == "parser.py" and top.metadata["headings"] == ["Parser", "parse"]
    assert top.content.startswith("Parser › parse\n    @staticmethod\n    def parse(text):")
    top = kb_desk.search(["folder"], "Handle", mode="keyword", limit=3).results[0]
    assert top.metadata["headings"] == ["Server", "Handle"]
    assert top.content.startswith("Server › Handle\n// Handle answers a request.\nfunc (s *Server) Handle")


IGNORED = {
    ".gitignore": "*.secret.txt\nbuild/\n!keep.secret.txt\n",
    "notes.txt": "The public lighthouse notes.\n",
    "api.secret.txt": "The lighthouse password is hunter2.\n",
    "keep.secret.txt": "Not a secret after all: the lighthouse.\n",
    "build/out.txt": "Generated lighthouse output.\n",
    "sub/.gitignore": "local.py\n",
    "sub/local.py": "LIGHTHOUSE = 'local'\n",
    "sub/shared.py": "LIGHTHOUSE = 'shared'\n",
    "package-lock.json": '{"name": "lighthouse"}',
    "web/app.min.js": "var lighthouse=1;",
    "node_modules/lib/index.js": "module.exports = 'lighthouse';\n",
}


def test_files_named_in_gitignore_and_generated_files_are_not_indexed(kb_desk, tmp_path):
    folder = write_files(tmp_path / "repo", IGNORED)
    report = kb_desk.add("folder", [folder])
    assert report.failed == []
    paths = sorted(d.path for d in kb_desk.documents("folder"))
    assert paths == ["keep.secret.txt", "notes.txt", "sub/shared.py"]
    reasons = {Path(p).name: r for p, r in report.skipped}
    assert reasons == {
        "package-lock.json": "lock file (generated by a package manager)",
        "app.min.js": "minified or bundled code (generated)",
        "node_modules": "vendored folder (node_modules): other people's code, not read",
    }
    hits = kb_desk.search(["folder"], "hunter2", mode="keyword", limit=5).results
    assert hits == []
    # an include glob reads a generated file; --no-ignore what .gitignore names, and a
    # sync removes a file once .gitignore names it
    kb_desk.add("folder", [folder], include=["package-lock.json"])
    assert "package-lock.json" in {d.path for d in kb_desk.documents("folder")}
    report = kb_desk.add("folder", [folder], no_ignore=True)
    assert {"api.secret.txt", "build/out.txt", "sub/local.py"} <= {d.path for d in kb_desk.documents("folder")}
    (folder / ".gitignore").write_text("*.txt\n")
    kb_desk.add("folder", [folder], sync=True)
    assert not any(d.path.endswith(".txt") for d in kb_desk.documents("folder"))


def test_watch_wakes_for_an_edited_gitignore_but_not_other_hidden_files(tmp_path):
    from kbdesk.ingest.watch import _relevant

    keep = _relevant(tmp_path, (), hidden=False)
    assert keep(None, str(tmp_path / ".gitignore")) and keep(None, str(tmp_path / "sub" / ".ignore"))
    assert not keep(None, str(tmp_path / ".git" / "index"))
    assert not keep(None, str(tmp_path / ".env"))
    # a build writing into a folder .gitignore names makes no pass; the ignore file is
    # read again once it changes
    (tmp_path / ".gitignore").write_text("build/\n")
    assert keep(None, str(tmp_path / ".gitignore"))
    assert not keep(None, str(tmp_path / "build" / "out.o"))
    assert keep(None, str(tmp_path / "src" / "main.c"))
    assert _relevant(tmp_path, (), hidden=False, no_ignore=True)(None, str(tmp_path / "build" / "out.o"))


def test_cli_add_no_ignore_takes_what_gitignore_names(tmp_path):
    from click.testing import CliRunner

    from kbdesk.cli.main import cli

    folder = write_files(tmp_path / "repo", {".gitignore": "secret.txt\n", "a.txt": "alpha", "secret.txt": "beta"})
    runner = CliRunner()
    assert runner.invoke(cli, ["kb", "create", "x"]).exit_code == 0
    result = runner.invoke(cli, ["add", "x", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["add", "x", str(folder), "--no-ignore", "--json"])
    assert result.exit_code == 0, result.output
    desk = open_desk()
    try:
        assert sorted(d.path for d in desk.documents("x")) == ["a.txt", "secret.txt"]
    finally:
        desk.close()


def test_a_gitignore_pattern_that_would_backtrack_without_end_is_left_out(tmp_path):
    from kbdesk.ingest.folders import scan

    folder = write_files(
        tmp_path / "hostile",
        {".gitignore": "*a*a*a*a*a*a*a*a*a*a*b\n*.log\n", "xaxaxaxaxaxaxaxaxaxab.txt": "x", "a.log": "y", "b.txt": "z"},
    )
    found = sorted(f.name for f in scan([folder]).files)
    assert found == ["b.txt", "xaxaxaxaxaxaxaxaxaxab.txt"]  # the bounded rule (*.log) still holds


def test_the_one_expression_prefilter_agrees_with_gits_rules(tmp_path):
    import itertools

    from kbdesk.ingest.ignore_rules import Rules, ignored, read_rules

    (tmp_path / ".gitignore").write_text(
        "*.log\n!keep.log\nbuild/\n/top.txt\ndocs/**/draft*\na?c.md\n[ab]x.py\n**/cache\n!src/cache\n"
    )
    (fast,) = read_rules(str(tmp_path), "")
    assert fast.any_match is not None
    slow = Rules(fast.prefix, fast.spec, None)
    names = ["x.log", "keep.log", "build", "top.txt", "draft1.md", "abc.md", "ax.py", "cache", "main.c"]
    folders = ["", "src/", "docs/a/", "build/", "deep/er/"]
    for folder, name, is_dir in itertools.product(folders, names, (False, True)):
        rel = folder + name
        assert ignored([fast], rel, is_dir) == ignored([slow], rel, is_dir), rel
