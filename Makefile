# Needs only Python >= 3.11 and a C compiler (LIBLINEAR builds from source).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test lint clean

run: $(VENV)/.installed          ## set up and run the default experiment (banana, linear SVM)
	$(BIN)/llc-bench run

test: $(VENV)/.installed-dev     ## set up with the dev extras and run the test suite
	$(BIN)/pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check llc_bench tests scripts

.PHONY: tables tables-quick figures

tables: $(VENV)/.installed       ## every paper table beside the papers' numbers (full protocol: long)
	$(BIN)/llc-bench tables --profile full

tables-quick: $(VENV)/.installed ## a few-minute smoke build of every table into results/tables-quick
	$(BIN)/llc-bench tables --profile quick

figures: $(VENV)/.installed      ## the papers' figures into results/figures (PNG + PDF)
	$(BIN)/llc-bench figures --profile full

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	touch $@

$(VENV)/.installed: $(VENV)/.created pyproject.toml
	$(BIN)/pip install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.created pyproject.toml
	$(BIN)/pip install -e '.[dev]'
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
