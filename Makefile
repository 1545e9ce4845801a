# gossamer: `make demo` crawls the bundled local site, `make test` runs the checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck pytest system-deps clean

install: $(STAMP)

$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		echo "python3-venv missing; installing it with apt-get"; \
		apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

system-deps:
	@bash scripts/system-deps.sh

pytest: $(STAMP) system-deps
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV) crawl-out demo-out .mypy_cache .pytest_cache .ruff_cache
