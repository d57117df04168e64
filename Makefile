# gpukit: every target creates .venv on first use (Python 3.11 + pip; torch is the pinned CPU wheel).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.gpukit-installed
PORT ?= 8888
# JupyterLab refuses to run as root without --allow-root (containers, Binder-like pods)
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab run test test-quick bench clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

## make lab: the course in JupyterLab (notebooks/)
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(ROOT_ARGS) $(LAB_ARGS)

## make run: every notebook headless with papermill into build/notebooks, then a summary
run: $(STAMP)
	$(PY) -m gpukit.course.runbook --out build/notebooks $(RUN_ARGS)

## make test: the whole suite (unit, property, measured-vs-predicted, notebooks)
test: $(STAMP)
	MPLBACKEND=Agg TQDM_DISABLE=1 $(PY) -m pytest -q $(TEST_ARGS)

## make test-quick: the development tier (under 2 minutes on 2 cores): no notebooks, binder, browser,
## netlab, spawned ranks or fault injection (marker slow), and a tenth of the fuzz examples
test-quick: $(STAMP)
	GPUKIT_TEST_QUICK=1 MPLBACKEND=Agg TQDM_DISABLE=1 $(PY) -m pytest -q -m "not slow and not browser and not netlab" $(TEST_ARGS)

## make bench: predicted-vs-measured tables and benchmark figures (not part of the tests)
bench: $(STAMP)
	$(PY) -m gpukit.cli.benchreport $(BENCH_ARGS)

clean:
	rm -rf build .pytest_cache
