# The two commands of the README, plus what they need. Everything installs itself.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
# Two stamps: what serving needs (the package and its runtime dependencies), and the
# whole development set (tests, lint, docs, the conformance tools) that make test needs.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed

.PHONY: serve test lint typecheck bench bench-gateway system-deps conformance docs docs-screenshots

$(RUNTIME_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(RUNTIME_STAMP)

## Start the example "everything" server on http://$(HOST):$(PORT)/mcp (in-memory defaults).
## Installs only what serving needs; make test adds the development tools.
serve: $(RUNTIME_STAMP)
	$(PY) -m examples.everything --host $(HOST) --port $(PORT)

## Lint, type-check and run the whole test suite with branch coverage of mcpcore/, auth/
## and conformance/ (fails below the floor in pyproject.toml). Installs Redis, nginx, the
## official suite.
test: $(STAMP) system-deps
	$(VENV)/bin/ruff check .
	$(PY) scripts/typecheck.py
	$(VENV)/bin/pytest --cov --cov-report=term

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(PY) scripts/typecheck.py

system-deps:
	scripts/system-deps.sh

## The official conformance suite against examples.everything, for 2026-07-28 and 2025-11-25.
conformance: $(STAMP)
	$(PY) scripts/conformance.py

bench: $(STAMP)
	$(PY) bench/run.py

## The gateway next to calling the upstream directly, FastMCP's proxy and ContextForge
## (installed on first use into their own venvs under ~/.cache/mcpcore/bench-venvs/).
## BENCH_ARGS="--duration 3 --warmup 1" for a quick run; docs/performance.md.
BENCH_ARGS ?=
bench-gateway: $(STAMP)
	$(PY) bench/bench_gateway_side_by_side.py $(BENCH_ARGS)

## Build the documentation site into site/ (MkDocs, API reference from the docstrings).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

## Screenshots of the built site (landing page, API reference) with headless Chromium.
docs-screenshots: $(STAMP)
	scripts/docs-screenshots.sh
