"""The bench scripts' shared harness: everything a benchmark needs that is not what it measures.

- ``paths``: the repository, ``bench/results/`` (gitignored), scratch folders, the SciFact data;
- ``timing``: one timed call, interleaved rounds over several methods, best-of runs, p50/p95;
- ``memory``: current and peak RSS, ``malloc_trim``, file sizes;
- ``blas``: the BLAS numpy uses (threadpoolctl when installed), its thread count;
- ``machine``: one dict describing the machine and the software under test, and one line of it;
- ``child``: run a function in a fresh interpreter and get its JSON back; kbdesk's CLI as a process;
- ``tables``: Markdown tables rendered from lists of dicts;
- ``docs``: rewrite a generated part of a ``docs/BENCHMARKS*.md`` file, keeping the hand-written part;
- ``results``: JSON result files under ``bench/results/``;
- ``cli``: the argument parser every script starts from (``--quick``) and the command line it reports.

The scripts run as ``.venv/bin/python bench/NAME.py``, so ``bench/`` is on ``sys.path`` and
``from harness import ...`` works without installing anything.
"""

from harness.child import kbdesk_cli, run_in_child
from harness.cli import command_line, parser
from harness.docs import kept_section, replace_section
from harness.machine import machine_info, machine_line
from harness.memory import file_mb, malloc_trim, peak_rss_mb, rss_mb, rss_now
from harness.paths import RESULTS, ROOT, results_dir, scifact_dir, scratch_dir
from harness.results import load_result, save_result
from harness.tables import fmt_ms, markdown_table
from harness.timing import best_of, paired_ratios, repeat, summary, timed, timed_rounds

__all__ = [
    "RESULTS",
    "ROOT",
    "best_of",
    "command_line",
    "file_mb",
    "fmt_ms",
    "kbdesk_cli",
    "kept_section",
    "load_result",
    "machine_info",
    "machine_line",
    "malloc_trim",
    "markdown_table",
    "paired_ratios",
    "parser",
    "peak_rss_mb",
    "repeat",
    "replace_section",
    "results_dir",
    "rss_mb",
    "rss_now",
    "run_in_child",
    "save_result",
    "scifact_dir",
    "scratch_dir",
    "summary",
    "timed",
    "timed_rounds",
]
