# p4fabric — every target installs what it needs (system packages as root, .venv, pip deps).
# `make demo` is the main job; `make test` runs the whole suite (as CI does).

VENV   ?= .venv
PY     := $(VENV)/bin/python
SETUP  := scripts/setup.sh
PYTEST_ARGS ?=

.PHONY: all demo test lint bench setup clean help

all: demo

help:
	@echo "make demo    run p4src/fabric.p4 on p4switch with each load-balancing scheme"
	@echo "make test    install everything and run the test suite (lint included)"
	@echo "make bench   run the benchmarks (prints figures and same-run ratios)"
	@echo "make clean   remove the venv, caches and results"

setup:
	@bash $(SETUP)

demo: setup
	@$(PY) -m experiments.demo

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache results out *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
