"""``kbdesk doctor``: where things are and what this machine can do."""

from __future__ import annotations

import platform
import sys
from typing import Any

import click
from rich.text import Text

from kbdesk import __version__
from kbdesk.cli.output import print_json, stdout, table
from kbdesk.errors import KbdeskError


def gather(state: Any) -> dict[str, Any]:
    from kbdesk.config import load_config, vector_backend_override
    from kbdesk.paths import get_paths, resolve_db

    report: dict[str, Any] = {"kbdesk": __version__, "python": platform.python_version(), "ok": True,
                              "problems": []}
    paths = get_paths(state.home)
    report["paths"] = {"config_file": str(paths.config_file), "data_dir": str(paths.data_dir),
                       "cache_dir": str(paths.cache_dir)}
    try:
        load_config(paths.config_file)
        report["config"] = "ok" if paths.config_file.exists() else "defaults (no config file)"
    except KbdeskError as exc:
        report["config"] = "invalid"
        report["problems"].append(str(exc))
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
    store = desk.store
    report["paths"]["db"] = str(desk.db_path)
    report["paths"]["files"] = str(desk.files_dir)
    report["database"] = {"path": str(desk.db_path), "schema_version": store.schema_version(),
                          "knowledge_bases": len(desk.list_kbs())}
    report.update(_driver(store.driver))
    report["fts5"] = store.fts5_available()
    if not report["fts5"]:
        report["ok"] = False
        report["problems"].append("this SQLite has no FTS5: keyword search is unavailable")
    return report


def _driver(driver: Any) -> dict[str, Any]:
    return {
        "sqlite": {"driver": driver.name, "version": driver.sqlite_version},
        "vector_backend": {"active": driver.backend, "reason": driver.reason,
                           "sqlite_vec": driver.vec_version},
    }


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def doctor_command(state, as_json) -> None:
    """Report paths, SQLite, the vector backend in use and why, and FTS5."""
    report = gather(state)
    if as_json:
        print_json(report)
    else:
        t = table("check", "result")
        t.add_row("kbdesk", f"{report['kbdesk']} on Python {report['python']} ({sys.platform})")
        for key, value in report["paths"].items():
            t.add_row(key.replace("_", " "), Text(value))
        t.add_row("config", report.get("config", "?"))
        if "database" in report:
            db = report["database"]
            if "schema_version" in db:
                t.add_row("database", f"schema {db['schema_version']}, {db['knowledge_bases']} knowledge bases")
        if "sqlite" in report:
            t.add_row("sqlite", f"{report['sqlite']['version']} via {report['sqlite']['driver']}")
            vb = report["vector_backend"]
            t.add_row("vector backend", Text(f"{vb['active']}: {vb['reason']}"))
        if "fts5" in report:
            t.add_row("keyword search", "FTS5 available" if report["fts5"] else "FTS5 missing")
        stdout().print(t)
        for problem in report["problems"]:
            click.echo(f"problem: {problem}", err=True)
    if not report["ok"]:
        raise SystemExit(1)
