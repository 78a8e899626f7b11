#!/usr/bin/env bash
# Download the wheels that scripts/gpu-check.sh installs on a lent GPU machine (offline, its own
# Python 3.12) into .whl/ (ignored by git; carried with the device call), from the pinned list
# scripts/gpu-wheels.txt, and check that what travels stays under the device's 64 MiB limit.
#
#   scripts/gpu-wheels.sh            # here, with network to PyPI; then carry: [".whl"]
#
# WHEEL_DIR (default .whl) and PYTHON (default python3, any version: the wheels are chosen for
# CPython 3.12 by pip's --python-version) may be changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
DEST=${WHEEL_DIR:-.whl}
# WHEEL_LISTS: the pin lists (scripts/gpu-studies.sh adds scripts/gpu-studies-wheels.txt).
LISTS=${WHEEL_LISTS:-scripts/gpu-wheels.txt}
LIMIT_MIB=64
# pip matches manylinux tags exactly: the device README's list, plus a few newer glibc levels.
PLATFORMS=()
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
    PLATFORMS+=(--platform "${tag}_x86_64")
done

mkdir -p "$DEST"
rm -f "$DEST"/*.whl # one version of each: two of one package stop the install there
# shellcheck disable=SC2086 # one argument per list
pins=$(cat $LISTS | grep -v '^[[:space:]]*#' | awk NF)
# shellcheck disable=SC2086 # one argument per pin
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLATFORMS[@]}" -d "$DEST" $pins

wanted=$(echo "$pins" | wc -l)
got=$(find "$DEST" -maxdepth 1 -type f -name '*.whl' | wc -l)
if [[ $got -ne $wanted ]]; then
    echo "gpu-wheels: $got wheels in $DEST for $wanted pins" >&2
    exit 1
fi
wheels=$(du -sb "$DEST" | cut -f1)
# What travels besides: tracked files and untracked ones git does not ignore.
tree=$(git ls-files -z --cached --others --exclude-standard |
    xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((wheels + tree))
awk -v n="$got" -v w="$wheels" -v t="$total" -v l="$LIMIT_MIB" 'BEGIN {
    printf "gpu-wheels: %d wheels, %.1f MiB; with the working tree %.1f MiB (limit %d MiB)\n",
        n, w / 1048576, t / 1048576, l }'
if ((total > LIMIT_MIB * 1048576)); then
    echo "gpu-wheels: over the device's limit; carry less" >&2
    exit 1
fi
