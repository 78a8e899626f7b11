# Two entry points for a fresh machine (see README):
#   make quickstart   install, then run the offline quick-start study (CPU, minutes)
#   make test         install, then run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# torch first, pinned: on CPU-only machines this is the CPU wheel; an unpinned torch pulls GBs of CUDA.
TORCH ?= torch==2.13.0
CORES ?= 2
export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export DVC_NO_ANALYTICS := 1

.PHONY: install quickstart test lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH)"
	echo "$(TORCH)" > $(VENV)/constraints.txt
	$(BIN)/pip install --quiet -c $(VENV)/constraints.txt -e ".[test]"
	touch $@

install: $(VENV)/.installed

quickstart: install
	$(BIN)/snakemake --cores $(CORES) --resources gpu=1 --configfile config/quickstart.yaml
	@cat results/summary.md

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests

clean:
	rm -rf results .snakemake
