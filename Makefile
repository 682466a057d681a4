# p4fabric — every target installs what it needs (system packages as root, .venv, pip deps).
# Plain `make` lists the targets; `make demo` is the showcase; `make test` runs the whole suite
# (as CI does).

VENV   ?= .venv
PY     := $(VENV)/bin/python
SETUP  := scripts/setup.sh
PYTEST_ARGS ?=

.PHONY: all demo demo-batch calibrate experiment test lint bench bench-target setup setup-dev clean help topo topo-check stop shell clean-fabric fidelity tofino

# make topo / topo-check: the emulated fabric (python -m topo --help lists every option)
TOPO   ?= fattree
K      ?= 4
TARGET ?= p4switch
# experiment/calibrate: --target only when TARGET is given (else the file's parameters.target)
TARGET_ARG = $(if $(filter command line environment,$(origin TARGET)),--target $(TARGET))
# the demo (and calibrating its file): the kernel data plane where it can run, else p4switch
DEMO_TARGET_ARG = $(or $(TARGET_ARG),--target auto)
BW     ?=
SCHEME ?= ecmp
SW     ?= edge1
PRIORITY ?=
TDF    ?=
LOOPS  ?=
TOPO_ARGS = --topo $(TOPO) --k $(K) --target $(TARGET) --scheme $(SCHEME) $(if $(BW),--bw $(BW)) \
            $(if $(TDF),--tdf $(TDF)) $(if $(LOOPS),--loops $(LOOPS)) \
            $(if $(PRIORITY),--switch-priority $(PRIORITY))
P4TOOLS_PATH := $(if $(wildcard /opt/p4tools/bin),/opt/p4tools/bin:)

all: help

help:
	@echo "make setup   install the system packages (as root) and .venv with the runtime; no-root simulator run after it:"
	@echo "             .venv/bin/python -m experiments.run experiments/configs/demo.yaml --backend sim"
	@echo "make demo    (root) k=4 fat-tree (eBPF switches where the kernel can load them, else p4switch; TARGET= to choose): ring AllReduce + MoE AllToAll under the 5 schemes, table + report"
	@echo "make demo-batch  no root: p4src/fabric.p4 on one p4switch in batch mode, each scheme"
	@echo "make calibrate  (root) the time-dilation factor this machine runs the demo's fabric at (cached; FORCE=1 measures again)"
	@echo "make experiment CONFIG=experiments/configs/X.yaml   run any experiment file"
	@echo "make test    install everything (the test tools and Ray too) and run the test suite (lint included)"
	@echo "make bench   run the benchmarks (prints figures and same-run ratios)"
	@echo "make bench-target  issue 10's k=16 simulator run (1,024 hosts, 1e7 hops) per scheme, each split over 2 processes: ~35 min"
	@echo "make fidelity  (root) the same k=4 runs on Mininet and in the simulator: LB counters and CCT ranking compared"
	@echo "make topo    launch the fabric + controller and open its CLI (TOPO= K= TARGET=p4switch|bmv2|ebpf SCHEME= TDF=auto|N BW= LOOPS= PRIORITY=realtime|nice|none)"
	@echo "make topo-check  bring up k=4, ping all host pairs, one-line summary, tear down"
	@echo "make stop    stop leftover fabric processes/interfaces recorded under /tmp/p4fabric"
	@echo "make shell SW=edge1   p4runtime-shell on one switch of the running fabric"
	@echo "make tofino  compile p4src/tna/fabric.p4 for Tofino 1 and 2 (bf-p4c or p4c-barefoot on PATH) and print the resource summary"
	@echo "make clean   remove the venv, caches and results (runs make stop first)"

# make tofino: the TNA port through the Tofino compiler (not installed by setup: docs/tofino.md)
TOFINO_OUT ?= build/tofino
TOFINO_CHIPS ?= tofino,tofino2
tofino:
	@python3 scripts/tofino.py --out $(TOFINO_OUT) --chips $(TOFINO_CHIPS)

# setup: the runtime (make demo, topo, experiments); setup-dev adds the test tools and Ray
setup:
	@bash $(SETUP)

setup-dev:
	@P4FABRIC_EXTRAS=dev,sweep bash $(SETUP)

DEMO_CONFIG ?= experiments/configs/demo.yaml
CONFIG ?= $(DEMO_CONFIG)

demo:
	$(if $(filter 0,$(shell id -u)),,$(error make demo needs root (a Mininet fabric of 20 P4 switches: sudo make demo); make demo-batch runs without root))
	@t0=$$(date +%s.%N); $(MAKE) --no-print-directory setup && \
	  $(PY) -m experiments.run $(DEMO_CONFIG) --beside-sim --since $$t0 $(DEMO_TARGET_ARG)

# the smallest time-dilation factor this machine keeps the demo's fabric link-bound at
# (cached in ~/.cache/p4fabric; make demo calibrates by itself when nothing is cached)
calibrate: setup
	$(if $(filter 0,$(shell id -u)),,$(error make calibrate needs root (it runs the Mininet fabric): sudo make calibrate))
	@$(PY) -m experiments.calibrate $(CONFIG) $(if $(FORCE),--force) \
	  $(if $(filter $(DEMO_CONFIG),$(CONFIG)),$(DEMO_TARGET_ARG),$(TARGET_ARG))

demo-batch: setup
	@$(PY) -m experiments.demo

experiment: setup
	@PATH=$(P4TOOLS_PATH)$$PATH $(PY) -m experiments.run $(CONFIG) $(TARGET_ARG)

test: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

lint: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

fidelity: setup
	$(if $(filter 0,$(shell id -u)),,$(error make fidelity needs root (a Mininet fabric): sudo make fidelity))
	@$(PY) -m experiments.fidelity --vs-mininet

bench: setup-dev
	@for b in bench/*.py; do [ $$b = bench/sim_target.py ] && continue; \
	  echo "== $$b"; $(PY) $$b || exit 1; done

bench-target: setup
	@$(PY) bench/sim_target.py

topo: setup
	PATH=$(P4TOOLS_PATH)$$PATH $(PY) -m topo $(TOPO_ARGS)

topo-check: setup
	PATH=$(P4TOOLS_PATH)$$PATH $(PY) -m topo $(TOPO_ARGS) --check

stop:
	@if [ -x $(PY) ]; then $(PY) -m topo.stop $(if $(FORCE),--force); fi

clean-fabric:
	@if [ -x $(PY) ]; then $(PY) -m topo.stop --remove-dirs $(if $(FORCE),--force); fi

shell: setup
	$(PY) -m topo.shell $(SW)

clean: clean-fabric
	rm -rf $(VENV) .pytest_cache .ruff_cache results out *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
