# Two entry points for a fresh machine (see README):
#   make quickstart   install, then run the offline quick-start study (CPU, minutes)
#   make regress      the quick start, graded against studies/*.yaml (fails on a FAIL line)
#   make readme-tables  the generated tables: README's quick start, docs/'s matrix and findings
#   make docs         the documentation site (docs/, mkdocs.yml) into site/, offline, strict
#   make quickstart-record  the quick start from scratch, timed and recorded for the README
#   make test         install, then run the test suite
#   make minilm-studies  the papers' studies with MiniLM on CPU, recorded in studies/results/minilm-cpu/
#   make soak N=50    the fault soak: a small study killed N times at random and resumed, checked
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# Every package pinned with its hashes (all extras; torch: the CPU build): `make lock` writes it.
LOCK := requirements/lock.txt
CORES ?= 2
export PATH := $(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export DVC_NO_ANALYTICS := 1

.PHONY: install lock quickstart quickstart-record quickstart-seeds regress readme-tables docs dvc-lock test lint clean soak

# The locked set exactly (pip refuses a file whose hash is not in the lock), then reranklab
# itself without resolving anything again: the same versions on every machine.
$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

install: $(VENV)/.installed

# Refresh requirements/lock.txt after changing a dependency in pyproject.toml (tests/test_lock.py
# fails until then): uv resolves pyproject.toml with all its extras and requirements/lock.in for
# Python 3.11+ on every platform (markers where they differ), keeping the versions already locked
# where they still fit (`make lock LOCK_UPGRADE=--upgrade`: the newest). uv reads no pip
# configuration: LOCK_SOURCES names where torch's CPU wheel is (here /opt/wheels).
UV ?= uv==0.13.9
LOCK_SOURCES ?= $(if $(wildcard /opt/wheels),--find-links /opt/wheels,--find-links https://download.pytorch.org/whl/cpu/torch/)
LOCK_UPGRADE ?=
lock:
	test -x $(VENV)/tools/bin/pip || $(PYTHON) -m venv $(VENV)/tools
	$(VENV)/tools/bin/pip install --quiet "$(UV)"
	$(VENV)/tools/bin/uv pip compile pyproject.toml requirements/lock.in --all-extras --universal \
	  --python-version 3.11 --generate-hashes $(LOCK_SOURCES) $(LOCK_UPGRADE) \
	  --custom-compile-command "make lock" --quiet -o $(LOCK)

quickstart: install
	$(BIN)/snakemake --cores $(CORES) --resources gpu=1 --configfile config/quickstart.yaml
	$(BIN)/snakemake --cores 1 --configfile config/quickstart.yaml --report results/report.html --quiet all
	@cat results/summary.md
	@# The results into DVC's cache (dvc.lock is the quick start's): `dvc status` is then clean, and
	@# `git diff dvc.lock` says whether this machine's results differ from the committed ones.
	@$(BIN)/dvc commit --force --quiet && echo "DVC: results recorded (git diff dvc.lock shows any difference from the committed run)" || echo "DVC: not recorded (not a git checkout?)"
	@echo "Report (tables and figures): $(CURDIR)/results/report.html"

# The quick start, timed, then kept in studies/results/quickstart-cpu/quickstart/ (summary, per-query
# values, wall time, machine): the README's quick-start table is written from it by readme-tables.
quickstart-record: install
	@git diff --quiet HEAD -- config/quickstart.yaml src workflow Snakefile params.yaml \
	  || { echo "commit config/quickstart.yaml and the code first: a record names the commit it started from"; exit 1; }
	rm -rf results .snakemake
	commit=$$(git rev-parse HEAD); start=$$(date +%s); $(MAKE) --no-print-directory quickstart; end=$$(date +%s); \
	$(BIN)/reranklab record --summary results/summary.json --out studies/results/quickstart-cpu/quickstart \
	  --command "make quickstart CORES=$(CORES)" --wall-seconds $$((end - start)) \
	  --study-file config/quickstart.yaml --commit $$commit
	$(MAKE) --no-print-directory readme-tables

# The quick start with three seeds (negative sampling, initialisation, data order): its summary
# gives each cell's mean ± std over seeds and the spread of the fine-tuned cross-encoder. In its
# own folder (reranklab init), so results/ of the quick start is left alone. About 10 minutes.
QUICKSTART_SEEDS_WORK ?= $(CURDIR)/results/quickstart-seeds
quickstart-seeds: install
	rm -rf "$(QUICKSTART_SEEDS_WORK)"
	$(BIN)/reranklab init "$(QUICKSTART_SEEDS_WORK)" > /dev/null
	cd "$(QUICKSTART_SEEDS_WORK)" && $(BIN)/snakemake --cores $(CORES) --resources gpu=1 \
	  --configfile config/quickstart.yaml --config 'seeds=[42, 1, 2]'
	@cat "$(QUICKSTART_SEEDS_WORK)/results/summary.md"

# The quick start, then its grade against studies/*.yaml: fails on any FAIL line (the DAG's
# regress rule writes results/regression.md without failing).
regress: quickstart
	$(BIN)/reranklab regress --summary results/summary.json --out results/regression.md

# The generated tables, graded from the recorded results (studies/results/*/*): the README's
# quick start, docs/'s matrix and findings; then docs/reference/ (settings from the schema, the
# CLI from --help). Written by the commands, never by hand (tests/test_docs.py checks them).
RECORDED := $(sort $(wildcard studies/results/*/*/summary.json))
readme-tables: install
	$(BIN)/reranklab regress --summary $(dir $(RECORDED)) --readme README.md --docs docs --exit-zero > /dev/null
	$(BIN)/reranklab docs-reference --out docs/reference

# The documentation site, built offline into site/; --strict: a broken link or anchor fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The papers' findings checked with the packaged MiniLM on CPU (studies/minilm/README.md): each
# study in its own fresh folder made by `reranklab init` (MINILM_WORK/<paper>, under the ignored
# results/), timed, then recorded in studies/results/minilm-cpu/<paper>/ for `reranklab regress`.
# bertdmn2021 reads InsuranceQA's V2 files, markedbert2020 WikiQA, bertsel2020 WikiQA and TrecQA:
# set RERANKLAB_MIRROR to a folder holding them (e.g. ../shared/datasets) or have network;
# InsuranceQA elsewhere comes from the insuranceqa_data package. The recorded runs took 7.8 h in all on 2 cores (each study's in docs/studies.md),
# 3 seeds each (studies/minilm/README.md).
# One study alone: make minilm-bertdmn2021 (or -markedbert2020, -monobert2019, -mass2019, -bertsel2020,
# -biencoder: a variant of no paper's, recorded to show that it learns).
# On cores shared with other work, say what ran (SHARED='the test suite'): the record keeps it.
# A re-record whose claims were graded before on the same test questions counts its looks
# (LOOKS=3 LOOKS_NOTE='...'): the claims then grade it at alpha / LOOKS.
MINILM_STUDIES := bertdmn2021 markedbert2020 monobert2019 monobert2019-dev monobert2019-sizes mass2019 mass2019-lengths mass2019-chunks bertsel2020 biencoder
MINILM_TARGETS := $(addprefix minilm-,$(MINILM_STUDIES))
MINILM_WORK ?= $(CURDIR)/results/minilm
MINILM_OUT := studies/results/minilm-cpu
.PHONY: minilm-studies $(MINILM_TARGETS)
minilm-studies: $(MINILM_TARGETS)

$(MINILM_TARGETS): minilm-%: install
	@git diff --quiet HEAD -- studies/minilm/$*.yaml src workflow Snakefile params.yaml \
	  || { echo "commit studies/minilm/$*.yaml and the code first: a record names the commit it started from"; exit 1; }
	mkdir -p "$(MINILM_WORK)" && git rev-parse HEAD > "$(MINILM_WORK).$*.commit"
	rm -rf "$(MINILM_WORK)/$*"
	$(BIN)/reranklab init "$(MINILM_WORK)/$*" > /dev/null
	cd "$(MINILM_WORK)/$*" && start=$$(date +%s) \
	  && $(BIN)/snakemake --cores $(CORES) --resources gpu=1 --configfile studies/minilm/$*.yaml \
	  && echo $$(( $$(date +%s) - start )) > wall-seconds
	$(BIN)/reranklab record --summary "$(MINILM_WORK)/$*/results/summary.json" --out $(MINILM_OUT)/$* \
	  --wall-seconds $$(cat "$(MINILM_WORK)/$*/wall-seconds") $(if $(SHARED),--shared "$(SHARED)") \
	  $(if $(LOOKS),--looks $(LOOKS) --looks-note "$(LOOKS_NOTE)") \
	  --study-file studies/minilm/$*.yaml --commit $$(cat "$(MINILM_WORK).$*.commit") \
	  --command "make minilm-$* CORES=$(CORES) (reranklab init <dir>; cd <dir>; snakemake --cores $(CORES) --resources gpu=1 --configfile studies/minilm/$*.yaml)"

# The fault soak (scripts/soak.py): N seeded random kills (SIGKILL or SIGTERM, to the whole run
# or to one job) of a small study, each resumed with --unlock and --rerun-incomplete and checked:
# results byte-identical to an uninterrupted run, nothing temporary left, no MLflow run RUNNING,
# no process surviving. About a minute a kill on 2 idle cores; CI runs N=3 (.ci/run). The long
# run the docs show: make soak N=50 SOAK_DOCS=docs/development.md
N ?= 10
SOAK_SEED ?= 0
SOAK_DOCS ?=
soak: install
	$(BIN)/python scripts/soak.py --kills $(N) --seed $(SOAK_SEED) --cores $(CORES) \
	  --work results/soak --report results/soak/report.json $(if $(SOAK_DOCS),--docs $(SOAK_DOCS))

# dvc.lock records the quick start (params.yaml's dvc.configfiles): re-record it after changing
# the code, the rules or the configs, so that `make quickstart` leaves `dvc status` clean.
dvc-lock: quickstart
	$(BIN)/dvc status

# lint-imports: the import contracts of pyproject.toml (layers, no cycle); ruff: lint and format
# checked (CI fails on unformatted code); pytest also runs the docstrings' examples of src/reranklab,
# in one pytest-xdist worker per core, a test file per worker at a time (its module fixtures
# are made once), saying why each skipped test skipped; `pytest -n 0` runs in one process.
test: install
	$(BIN)/lint-imports
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/python -m pytest -q -rs -n auto --dist loadfile

lint: install
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/lint-imports

clean:
	rm -rf results .snakemake

# A study's probes (studies/probes/<PROBE_STUDY>/, the quick start's by default): each probe file
# layered on the study's configuration (PROBE_CONFIG) and on the folder's dev.yaml (its dev
# questions scored, the test questions left out), run in its own folder, its summary kept in
# studies/probes/<PROBE_STUDY>/results/; then the probe table (the folder's README.md) is
# rewritten from every kept summary. E.g. make probes PROBE_STUDY=monobert2019
# PROBE_CONFIG=studies/minilm/monobert2019.yaml.
PROBE_STUDY ?= quickstart
PROBE_CONFIG ?= config/quickstart.yaml
PROBE_DIR := studies/probes/$(PROBE_STUDY)
PROBES := $(basename $(notdir $(filter-out %/dev.yaml,$(wildcard $(PROBE_DIR)/*.yaml))))
PROBES_WORK ?= $(CURDIR)/results/probes/$(PROBE_STUDY)
.PHONY: probes $(addprefix probe-,$(PROBES)) probe-table
probes: $(addprefix probe-,$(PROBES))

$(addprefix probe-,$(PROBES)): probe-%: install
	rm -rf "$(PROBES_WORK)/$*"
	$(BIN)/reranklab init "$(PROBES_WORK)/$*" > /dev/null
	cd "$(PROBES_WORK)/$*" && start=$$(date +%s) \
	  && $(BIN)/snakemake --cores $(CORES) --resources gpu=1 --configfile $(PROBE_CONFIG) \
	     $(CURDIR)/$(PROBE_DIR)/dev.yaml $(CURDIR)/$(PROBE_DIR)/$*.yaml \
	  && echo $$(( $$(date +%s) - start )) > wall-seconds
	$(BIN)/python scripts/probe_table.py --folder $(PROBE_DIR) --keep "$(PROBES_WORK)/$*" --name $*

probe-table: install
	$(BIN)/python scripts/probe_table.py --folder $(PROBE_DIR)
