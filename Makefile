# gpukit: every target creates .venv on first use (Python 3.11+ and pip; torch pinned to 2.13.0, its CPU build
# with PIP_ARGS below).
# lab, run and bench install requirements.txt (the course); test and test-quick add requirements-dev.txt.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# PIP_ARGS: extra pip options, e.g. PIP_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu" for the CPU torch
PIP_ARGS ?=
PIP := $(PY) -m pip install -q --disable-pip-version-check $(PIP_ARGS)
STAMP := $(VENV)/.gpukit-installed
DEV_STAMP := $(VENV)/.gpukit-dev-installed
PORT ?= 8888
# JupyterLab refuses to run as root without --allow-root (containers, Binder-like pods)
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab run test test-quick bench clean distclean

# The venv: check the Python first (one line, before anything is created), and never leave a
# half-made .venv behind (a failed `venv` removes it; `make distclean` removes a broken one).
$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
	  { echo "gpukit needs Python 3.11 or newer: '$(PYTHON)' is $$($(PYTHON) --version 2>/dev/null || echo not found); run make PYTHON=python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

$(STAMP): $(PY) requirements.txt pyproject.toml
	$(PIP) -r requirements.txt
	$(PIP) --no-deps -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(PIP) -r requirements-dev.txt
	touch $(DEV_STAMP)

## make lab: the course in JupyterLab (notebooks/)
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(ROOT_ARGS) $(LAB_ARGS)

## make run: every notebook headless with papermill into build/notebooks, then a summary
run: $(STAMP)
	$(PY) -m gpukit.course.runbook --out build/notebooks $(RUN_ARGS)

## make test: the whole suite (unit, property, measured-vs-predicted, notebooks, the installed wheel)
test: $(DEV_STAMP)
	MPLBACKEND=Agg TQDM_DISABLE=1 $(PY) -m pytest -q $(TEST_ARGS)

## make test-quick: the development tier (under 2 minutes on 2 cores): no notebooks, binder, browser,
## netlab, spawned ranks, fault injection or wheel install (marker slow), and a tenth of the fuzz examples
test-quick: $(DEV_STAMP)
	GPUKIT_TEST_QUICK=1 MPLBACKEND=Agg TQDM_DISABLE=1 $(PY) -m pytest -q -m "not slow and not browser and not netlab" $(TEST_ARGS)

## make bench: predicted-vs-measured tables and benchmark figures (not part of the tests)
bench: $(STAMP)
	$(PY) -m gpukit.cli.benchreport $(BENCH_ARGS)

## make clean: build outputs and caches; make distclean: also the virtual environment (a fresh start)
clean:
	rm -rf build dist .pytest_cache .hypothesis .ruff_cache .import_linter_cache *.egg-info

distclean: clean
	rm -rf $(VENV)
