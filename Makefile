# The only install path. `make test` builds .venv/ once (a stamp file skips it afterwards).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_VERSION := 2.13.0
FAIRSEQ := fairseq-fixed==0.12.3.1
SHARED ?= ../shared
WORK ?= work
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
# pytest-xdist workers for `make test`, whole files per worker (--dist loadfile: a module's fixtures are built once),
# handed out in collection order (the slowest files first: tests/conftest.py); TEST_WORKERS=0: one process
TEST_WORKERS ?= 2

.PHONY: venv test test-fast lint demo bench clean browser mutation

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	# torch first and pinned: any other version pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==$(TORCH_VERSION)
	$(BIN)/pip install -q -r requirements.txt -r requirements-dev.txt torch==$(TORCH_VERSION)
	# fairseq-fixed is an sdist with C++ extensions that import torch at build time.
	$(BIN)/pip install -q --no-build-isolation --no-deps $(FAIRSEQ)
	$(BIN)/pip install -q --no-build-isolation --no-deps -e .
	$(BIN)/python -c "import fairseq, fairseq_tree, stanza, torch; print('fairseq', fairseq.__version__, 'torch', torch.__version__)"
	touch $(STAMP)

# everything, as CI runs it: tests/integration (the real CLIs, training, the recipes, the installed package) and
# tests/unit; the files marked slow are handed to the workers first (tests/conftest.py)
test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests

# headless Chromium for tests/integration/test_view_browser.py (Debian's package; root, as CI runs): .ci/run calls it
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
	chromium --version

# the unit tests only (no CLI, no training run): the loop to run while editing
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests/unit

# ruff.toml: pyflakes, pycodestyle, import order, bugbear; part of `make test`, so CI runs it.
lint: $(STAMP)
	$(BIN)/ruff check .

demo: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH bash scripts/recipes/demo.sh $(SHARED) $(WORK)

# one-line bugs applied one at a time to a copy of the checkout, each module's covering test files run against each
# (scripts/mutation/modules.toml; docs/development.md, "Mutation testing"); e.g.
# make mutation MUTATION_ARGS="--modules fairseq_tree/utils/devices.py --max-mutants 20"
MUTATION_ARGS ?= --max-mutants 5
mutation: $(STAMP)
	$(BIN)/python scripts/mutation/run.py $(MUTATION_ARGS)

bench: $(STAMP)
	$(BIN)/python scripts/benchmarks/bench_preprocess.py --quick

clean:
	rm -rf $(VENV) build *.egg-info
