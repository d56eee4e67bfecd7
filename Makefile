# One entry point for the checks CI runs (.ci/run does the same, after installing things).
# `make check` stops at the first failing stage: lint, then types, then tests.
PYTHON ?= python3

.PHONY: check lint types test

check: lint types test

lint:
	$(PYTHON) -m ruff check .

types:
	$(PYTHON) -m mypy

test:
	$(PYTHON) -m pytest -q
