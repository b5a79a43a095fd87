# `make demo` / `make test` set everything up on a fresh machine: they create the virtual
# environment with the running python3 when it is missing and install the package (editable)
# with its test extra. VENV selects the environment (CI uses one per Python version).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean readme-table conformance

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/train_mlp.py

test: $(STAMP)
	@# one worker per core (pytest-xdist): the suite's time is mostly numba compiles, one core each;
	@# at most 8: each worker holds numba and the kernels it compiled (300 MB after 50 numba tests);
	@# worksteal: a worker that runs out takes tests queued for another, so a long test near the
	@# end of one queue does not leave the other cores idle
	$(BIN)/python -m pytest -q -n auto --maxprocesses=8 --dist worksteal

conformance: $(STAMP)
	@# CPython's own Lib/test modules (of the venv's Python) with every test method compiled on the
	@# eager backend; lists the tests that pass plainly and fail compiled. Slow (tens of minutes):
	@# not part of make test. Another Python: make conformance VENV=.venv-312 PYTHON=python3.12
	$(BIN)/python -m tests.conformance.runner

lint: $(STAMP)
	$(BIN)/python -m ruff check npdynamo tests benchmarks examples tools
	$(BIN)/lint-imports
	@# no exec outside npdynamo/generated.py, NPDYNAMO_* read only in config, files <= 600 lines
	$(BIN)/python tools/house_rules.py

readme-table: $(STAMP)
	$(BIN)/python -m npdynamo.ops docs/capture.md

bench: $(STAMP)
	@# the bench extra: scipy, which numba's np.linalg in the hand-written anchors needs.
	@# torch.compile is measured side by side when the torch extra installs; without it the
	@# tables leave its column out
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	-$(BIN)/python -m pip install --quiet -e '.[torch]' \
	  || echo "torch could not be installed: make bench runs without torch.compile"
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf .venv .venv-* build *.egg-info
