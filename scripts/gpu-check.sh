#!/usr/bin/env bash
# The GPU benchmark suite (src/reranklab/bench/suites/gpu.yaml) in one command on a lent GPU
# machine: bare, offline, with its own Python 3.12 (torch, transformers, sentence-transformers,
# accelerate, pandas, pyarrow; no pydantic, bm25s, datasets, ...). It installs what that Python
# lacks from the wheels carried in .whl/ (scripts/gpu-wheels.sh downloads them here), runs
# reranklab from this checkout (PYTHONPATH=src: nothing to build), and writes under $OUT:
#
#   table.md      the BENCHMARKS.md section (between the bench-suite:gpu markers)
#   results.json  every run's full report, one JSON list (--from-json makes the table again)
#   env.txt       the machine: GPU, Python, package versions
#   log.txt       everything the suite logged
#
# No hub: bert-base-uncased gets random weights from its shipped config unless a local copy
# exists (throughput does not depend on weight values; the table says so). No mirror: the pairs
# are the shipped `sample` collection's, each query repeated.
#
# Time: at most about 7.5 minutes (one H100): ~15 s to install, ~15 s of checks, the suite under
# `timeout` (GPU_CHECK_SUITE_TIMEOUT, 400 s; it starts no run after GPU_CHECK_BUDGET_S, 300 s, and
# keeps what it measured when stopped), then the table. The device call:
#   run(command="bash scripts/gpu-check.sh", carry=[".whl"], timeout_s=480)
#
# --dry-run: the same steps on CPU with tiny shapes and a few steps (the test
# tests/test_bench_gpu_check.py runs it, so the script, the wheel list and the suite cannot rot).
# PYTHON (default python3) is the interpreter; OUT defaults to ./gpu-check-out.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0
if [[ ${1:-} == --dry-run ]]; then DRY_RUN=1; fi
PY=${PYTHON:-python3}
OUT=${OUT:-$PWD/gpu-check-out}
SITE=${GPU_CHECK_SITE:-/tmp/site}
SUITE_TIMEOUT=${GPU_CHECK_SUITE_TIMEOUT:-400}
BUDGET_S=${GPU_CHECK_BUDGET_S:-300}
# The modules of scripts/gpu-wheels.txt the bench path imports (a missing one: install them all).
NEEDED=pydantic,annotated_types,typing_inspection,cbor2,pytrec_eval,tenacity,bm25s,Stemmer,datasets,dill,multiprocess
# Nothing outside the machine can be reached: never wait on the hub (scripts/gpu-env.sh).
# shellcheck source=scripts/gpu-env.sh
. scripts/gpu-env.sh
gpu_env_offline

mkdir -p "$OUT"
: >"$OUT/log.txt"
say() { echo "gpu-check: $*" | tee -a "$OUT/log.txt" >&2; }

# 1. What the device's Python lacks, from the carried wheels (where it already has them, as in
#    the dry run here, nothing is installed).
gpu_env_install "$PY" "$NEEDED" "$SITE" "$OUT/log.txt" || exit 2

# 2. The machine, and every import the suite needs, before minutes are spent on it.
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
    "$PY" - <<'PYTHON'
import importlib.metadata as md
import platform

import torch

import reranklab.bench.run  # noqa: F401 - the whole bench path imports (else: stop here)
from reranklab.bench.peers import PEERS, peer_import_error

for peer in PEERS:  # a peer that does not import is left out of the runs, not fatal
    print("peer", peer, peer_import_error(peer) or "ok")

print("python", platform.python_version(), "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "-")
for name in ("torch", "transformers", "sentence-transformers", "accelerate", "datasets",
             "pydantic", "bm25s", "numpy", "pandas", "pyarrow", "huggingface-hub", "fsspec"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
PYTHON
} >"$OUT/env.txt" 2>>"$OUT/log.txt" || {
    say "the bench path does not import (env.txt, log.txt)"
    exit 3
}
cat "$OUT/env.txt" >&2

# 3. The suite. The dry run changes every run to tiny shapes on CPU (--set) but parses and runs
#    the suite's own runs, peers included; compiling is left out (a minute of CPU per run).
SET=()
if ((DRY_RUN)); then
    for field in device=cpu encoder=tiny-bert-uncased max_length=64 pairs=8 copies=1 \
        repeats=1 batch_size=8 eval_batch_size=8 compile=false threads=2; do
        SET+=(--set "$field")
    done
elif ! grep -q "cuda True" "$OUT/env.txt"; then
    say "no GPU seen by torch (env.txt): nothing measured"
    exit 3
fi
JSON=$(mktemp -d)
say "bench-suite gpu ${SET[*]} (budget ${BUDGET_S} s, stopped after ${SUITE_TIMEOUT} s)"
timeout "$SUITE_TIMEOUT" "$PY" -m reranklab.cli bench-suite gpu "${SET[@]}" --json "$JSON" \
    --budget-s "$BUDGET_S" --keep-going >>"$OUT/log.txt" 2>&1
status=$?
if ((status == 124)); then say "suite stopped at ${SUITE_TIMEOUT} s; the table has what finished"; fi

# 4. The table and the reports from what was measured (also after a stop).
"$PY" -m reranklab.cli bench-suite gpu "${SET[@]}" --from-json "$JSON" \
    --reports "$OUT/results.json" >"$OUT/table.md" 2>>"$OUT/log.txt" || {
    say "no run was measured (log.txt)"
    exit 4
}
rm -rf "$JSON"
cat "$OUT/table.md"
say "done (suite exit status $status): $OUT/table.md, results.json, env.txt, log.txt"
exit "$status"
