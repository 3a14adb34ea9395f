# Needs only Python >= 3.11 and a C compiler (LIBLINEAR builds from source).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test mutation lint clean

# `make run` trains for real into a scratch store (gitignored), never into the committed
# results/: a second `make run` finds its records there and says "(cached)".
SCRATCH ?= results-scratch

run: $(VENV)/.installed          ## set up and run the default experiment: LL-SVM beside the linear SVM on banana (offline, seconds)
	$(BIN)/llc-bench run -m model=linear,llsvm results_dir=$(SCRATCH) data.download=false
	@echo "records: $(BIN)/llc-bench results --results-dir $(SCRATCH)"

test: $(VENV)/.installed-dev     ## set up with the dev extras and run the test suite
	$(BIN)/pytest -n 2 --dist loadfile

mutation: $(VENV)/.installed-dev ## plant known bugs in a temporary copy: the fast tests must catch each
	$(BIN)/python scripts/mutation_smoke.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check llc_bench tests scripts

.PHONY: tables tables-quick figures docs docs-figures

tables: $(VENV)/.installed       ## every paper table beside the papers' numbers (full protocol: long)
	$(BIN)/llc-bench tables --profile full

tables-quick: $(VENV)/.installed ## a few-minute smoke build of every table into results/tables-quick
	$(BIN)/llc-bench tables --profile quick

figures: $(VENV)/.installed      ## the papers' figures into results/figures (PNG + PDF)
	$(BIN)/llc-bench figures --profile full

docs: $(VENV)/.installed-dev     ## the docs site (docs/, mkdocs.yml) into site/
	$(BIN)/mkdocs build --strict

docs-figures: $(VENV)/.installed ## the docs' pictures into docs/img: LL-SVM's regions and anchors on banana
	$(BIN)/llc-bench figures --regions banana --out docs/img

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
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache results-scratch site
