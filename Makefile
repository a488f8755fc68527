# ctxbench: two entry points (see README Quickstart).
#   make demo  - create .venv, install, run the quickstart job, print where the output is
#   make test  - create .venv, install dev extras, run ruff, mypy and the test suite but its
#                slowest tests (make test-slow runs those; CI runs both)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= reports/quickstart

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test test-slow lint typecheck bench parity clean venv

$(VENV)/.core-installed: pyproject.toml
	@echo "setting up $(VENV) (ctxbench and its parquet extra: the demo's sweep writes parquet)" >&2
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@$(BIN)/pip install --quiet -e ".[parquet]" >&2
	@touch $@

$(VENV)/.all-installed: pyproject.toml
	@echo "setting up $(VENV) (ctxbench with every extra: parquet, pandas, hf, dask, browser, dev)" >&2
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@$(BIN)/pip install --quiet -e ".[all]" >&2
	@touch $@ $(VENV)/.core-installed

venv: $(VENV)/.core-installed

demo: $(VENV)/.core-installed
	$(BIN)/ctxbench demo -o $(OUT)

lint: $(VENV)/.all-installed
	$(BIN)/ruff check ctxbench tests benchmarks
	$(BIN)/ruff format --check ctxbench tests benchmarks

typecheck: $(VENV)/.all-installed
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest -q -m "not slow" tests

# the slowest tests, which `make test` leaves out (tests/conftest.py: SLOW); .ci/run runs both
test-slow: $(VENV)/.all-installed
	$(BIN)/pytest -q -m slow tests

# issue 43's table, cold, each figure with its goal: one JSON object on stdout (progress on
# stderr); BENCH="sweep_vs_replay workers_cpu_2_vs_1" runs some rows, BENCH=--modules the older ones
bench: $(VENV)/.all-installed
	@$(BIN)/python -m benchmarks $(BENCH)

# Each reproduction against its release on every trace and scenario at 8k-64k (PARITY: options).
parity: $(VENV)/.all-installed
	@$(BIN)/python -m benchmarks.parity_table $(PARITY)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
