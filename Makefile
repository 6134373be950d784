# Benchmarks (never part of the test run). `make bench` is the quick pass (a few
# minutes); `make bench-full` the full one (an hour or more on 2 cores). Both need
# `pip install -e '.[bench,postgres]'`. Results and discussion: docs/BENCHMARKS.md.
PY ?= .venv/bin/python

.PHONY: check test test-fast test-pg bench bench-full

# everything CI runs: lint, format, types, the wheel, the whole suite (scripts/check)
check:
	scripts/check

test:
	$(PY) -m pytest -q

# the fast lane (under two minutes): no real processes, kills, terminals, TUI or PostgreSQL
test-fast:
	$(PY) -m pytest -q -m "not slow and not postgres"

# the tests against a real PostgreSQL (the tests start it themselves)
test-pg:
	$(PY) -m pytest -q -m postgres

bench:
	$(PY) bench/bench_chunker.py --mb 5
	$(PY) bench/bench_extract.py --quick
	$(PY) bench/bench_ingest.py --quick
	$(PY) bench/bench_search.py --quick
	$(PY) bench/bench_scale.py --quick
	$(PY) bench/eval_beir.py

bench-full:
	$(PY) bench/bench_chunker.py
	$(PY) bench/bench_extract.py
	$(PY) bench/bench_ingest.py
	$(PY) bench/bench_search.py
	$(PY) bench/bench_scale.py
	$(PY) bench/bench_postgres.py
	$(PY) bench/eval_beir.py --tune
