"""``kbdesk doctor``: where things are, what this machine can do, and whether the
database file is sound (``PRAGMA quick_check``, bounded in time)."""

from __future__ import annotations

import platform
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from kbdesk import __version__
from kbdesk.cli.output import plain, print_json, stdout, table
from kbdesk.cli.state import CliState
from kbdesk.errors import KbdeskError
from kbdesk.textsafe import inert_line


def damaged_advice(path: Path, problems: list[str]) -> str:
    """One line: what is wrong with the file at ``path`` and what to do about it."""
    first = problems[0] if problems else "damaged"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    db = shlex.quote(str(path))
    rescued = shlex.quote(str(path) + ".recovered")
    return (
        f"{path} is damaged: {first}{more}. Stop writing to it and restore it from a backup; or copy what "
        f"SQLite can still read into a new file: sqlite3 {db} .recover | sqlite3 {rescued} "
        f"(then kbdesk --db {rescued} doctor), or kbdesk --db {db} export KB --to FILE for each KB "
        "that still reads"
    )


def _integrity(state: Any, paths: Any, config: Any, report: dict[str, Any], seconds: float) -> bool:
    """Check the SQLite file's pages before anything opens it; False when it is damaged."""
    from kbdesk.config import vector_backend_override
    from kbdesk.paths import resolve_db
    from kbdesk.store import check_sqlite_file, choose_driver, is_server_uri

    chosen = state.db if state.db is not None else (config.storage.db if config is not None else None)
    if is_server_uri(chosen):
        return True  # the server looks after its own pages
    path = resolve_db(paths, chosen)
    report["paths"]["db"] = str(path)
    if not path.is_file():
        return True  # created on first use
    backend = vector_backend_override() or (config.vector.backend if config is not None else "auto")
    try:
        check = check_sqlite_file(path, choose_driver(backend), seconds=seconds)
    except KbdeskError as exc:
        report["integrity"] = {"status": "error", "problems": [str(exc)]}
        report["problems"].append(str(exc))
        report["ok"] = False
        return True
    report["integrity"] = check.to_dict()
    if check.status == "damaged":
        report["ok"] = False
        report["problems"].append(damaged_advice(path, check.problems))
        report["database"] = {"path": str(path), "error": "damaged"}
        return False
    return True


def gather(state: Any, check_seconds: float = 5.0) -> dict[str, Any]:
    from kbdesk.config import load_config, vector_backend_override
    from kbdesk.paths import get_paths, resolve_db

    report: dict[str, Any] = {
        "kbdesk": __version__,
        "python": platform.python_version(),
        "ok": True,
        "problems": [],
        "warnings": [],
    }
    paths = get_paths(state.home)
    report["paths"] = {
        "config_file": str(paths.config_file),
        "data_dir": str(paths.data_dir),
        "cache_dir": str(paths.cache_dir),
    }
    config = None
    try:
        config = load_config(paths.config_file)
        report["config"] = "ok" if paths.config_file.exists() else "defaults (no config file)"
    except KbdeskError as exc:
        report["config"] = "invalid"
        report["problems"].append(str(exc))
    report["ocr"] = _ocr(config)
    if not _integrity(state, paths, config, report, check_seconds):
        return report  # a damaged file is not opened: opening may write to it
    try:
        desk = state.desk()
    except KbdeskError as exc:
        report["ok"] = False
        report["problems"].append(str(exc))
        from kbdesk.store import choose_driver

        try:
            driver = choose_driver(vector_backend_override() or "auto")
            report["database"] = {"path": str(resolve_db(paths, state.db)), "error": str(exc)}
            report.update(_driver(driver))
        except KbdeskError as inner:
            report["problems"].append(str(inner))
        return report
    health = desk.health()
    report["paths"]["db"] = str(desk.db_path)
    report["paths"]["files"] = str(desk.files_dir)
    report["database"] = {
        "path": str(desk.db_path),
        "schema_version": health.schema_version,
        "knowledge_bases": len(desk.list_kbs()),
        "read_only": health.read_only_reason,
    }
    report.update(_driver(health.driver))
    if health.read_only and report["vector_backend"]["active"] != "numpy":
        report["vector_backend"]["active"] = "numpy"
        report["vector_backend"]["reason"] = (
            "the database is read-only: numpy reads the stored vectors "
            "(sqlite-vec's index may need rebuilding first, which is a write)"
        )
    if health.exact_search is not None:
        report["vector_backend"]["exact_search"] = health.exact_search
    report["fts5"] = health.fts5
    if not report["fts5"]:
        report["ok"] = False
        report["problems"].append("this SQLite has no FTS5: keyword search is unavailable")
    report["providers"] = _providers(desk.config, report["warnings"])
    return report


def _providers(config: Any, warnings: list[str]) -> dict[str, Any]:
    """The providers the model roles use: which server each URL answers like, and a
    warning when that is not the kind it is registered as (a server that does not answer
    is not a problem here: it may simply not be running)."""
    from kbdesk.providers.server_kind import detect, mismatch

    used = [r.provider for r in (config.roles.chat, config.roles.embedding) if r.provider]
    out: dict[str, Any] = {}
    for name in dict.fromkeys(used):
        settings = config.providers.get(name)
        if settings is None or settings.kind == "local":
            continue
        found = detect(name, settings, timeout=2.0)
        out[name] = {"kind": settings.kind, "answers_like": found.kind if found else None}
        warning = mismatch(name, settings, found)
        if warning:
            out[name]["kind_mismatch"] = warning
            warnings.append(warning)
    return out


def _ocr(config: Any) -> dict[str, Any]:
    """Whether scans, screenshots and photos can be read here: Tesseract, its version and languages."""
    from kbdesk.ingest.ocr import status

    return status(config.ingest if config is not None else None)


def _ocr_row(ocr: dict[str, Any]) -> str:
    if ocr["available"]:
        return (
            f"Tesseract {ocr['version']}: reads {'+'.join(ocr['languages'])} "
            f"(installed: {', '.join(ocr['installed_languages'])})"
        )
    return f"not available: {ocr['problem']}; {ocr['install']}"


def _driver(driver: Any) -> dict[str, Any]:
    return {
        "sqlite": {"driver": driver.name, "version": driver.sqlite_version},
        "vector_backend": {"active": driver.backend, "reason": driver.reason, "sqlite_vec": driver.vec_version},
    }


@click.command("doctor")
@click.option(
    "--check-seconds",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Time the database check may take before it stops and says so.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doctor_command(state: CliState, check_seconds: float, as_json: bool) -> None:
    """Report paths, SQLite, the vector backend in use and why, FTS5, OCR (Tesseract, its
    version and languages), and whether the database file is sound (exit 1 when something
    is wrong)."""
    report = gather(state, check_seconds)
    if as_json:
        print_json(report)
    else:
        t = table("check", "result")
        t.add_row("kbdesk", f"{report['kbdesk']} on Python {report['python']} ({sys.platform})")
        for key, value in report["paths"].items():
            t.add_row(key.replace("_", " "), plain(value))
        t.add_row("config", report.get("config", "?"))
        if "database" in report:
            db = report["database"]
            if "schema_version" in db:
                t.add_row("database", f"schema {db['schema_version']}, {db['knowledge_bases']} knowledge bases")
            if db.get("read_only"):
                t.add_row("access", plain(f"read-only: {db['read_only']}"))
        if "integrity" in report:
            check = report["integrity"]
            verdict = {
                "ok": "pages ok (quick_check)",
                "damaged": "DAMAGED (see below)",
                "unfinished": f"not finished within {check_seconds:g} s (--check-seconds allows more)",
            }
            t.add_row("integrity", verdict.get(check["status"], check["status"]))
        if "sqlite" in report:
            t.add_row("sqlite", f"{report['sqlite']['version']} via {report['sqlite']['driver']}")
            vb = report["vector_backend"]
            t.add_row("vector backend", plain(f"{vb['active']}: {vb['reason']}"))
            if "exact_search" in vb:
                t.add_row("exact search", plain(vb["exact_search"]))
        if "fts5" in report:
            t.add_row("keyword search", "FTS5 available" if report["fts5"] else "FTS5 missing")
        t.add_row("OCR (scans, images)", plain(_ocr_row(report["ocr"])))
        for name, info in report.get("providers", {}).items():
            like = info["answers_like"] or "no known server answered"
            t.add_row(plain(f"provider {name}"), plain(f"kind {info['kind']}; answers like: {like}"))
        stdout().print(t)
        for warning in report["warnings"]:
            click.echo(f"warning: {inert_line(warning)}", err=True)
        for problem in report["problems"]:
            click.echo(f"problem: {inert_line(problem)}", err=True)
    if not report["ok"]:
        raise SystemExit(1)
