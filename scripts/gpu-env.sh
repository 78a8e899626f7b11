# Sourced (not run) by scripts/gpu-check.sh and scripts/gpu-studies.sh: what both do first on a
# lent GPU machine, which is bare and offline and has its own Python 3.12 (torch, transformers,
# sentence-transformers, pandas, pyarrow, scipy, statsmodels, ...; the device tool's KINDS.md).
#
#   gpu_env_offline                       never wait on the hub; unbuffered, quiet logs
#   gpu_env_install PY MODULES SITE LOG   import MODULES (comma-separated) with PY, or install the
#                                         wheels carried in .whl/ into SITE (pip --target, no
#                                         index) and put SITE on PYTHONPATH; then reranklab from
#                                         this checkout (PYTHONPATH=src: nothing to build).
#                                         Returns 2, with one line said, when it cannot.
# The caller cds to the repository root first; its `say` function, if any, writes the lines.

gpu_env_offline() {
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1
    export TOKENIZERS_PARALLELISM=false HF_HUB_DISABLE_PROGRESS_BARS=1
}

gpu_env_say() {
    if declare -F say >/dev/null; then say "$@"; else echo "$*" >&2; fi
}

gpu_env_install() {
    local py=$1 modules=$2 site=$3 log=$4
    # Where the Python already has them, as in a dry run in this project's venv, nothing is installed.
    if ! "$py" -c "import $modules" 2>/dev/null; then
        if ! compgen -G ".whl/*.whl" >/dev/null; then
            gpu_env_say "missing modules ($modules) and no .whl/: run scripts/gpu-wheels.sh here, carry .whl"
            return 2
        fi
        gpu_env_say "installing $(find .whl -maxdepth 1 -name '*.whl' | wc -l) wheels into $site"
        "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$site" .whl/*.whl >>"$log" 2>&1 || {
            gpu_env_say "pip install failed ($log)"
            return 2
        }
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        if ! "$py" -c "import $modules" >>"$log" 2>&1; then
            gpu_env_say "still missing after the install: one of $modules ($log)"
            return 2
        fi
    fi
    export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
}
