#!/usr/bin/env bash
# reranklab's bm25s backend against Lucene itself (the engine inside Elasticsearch and Anserini),
# on sample, WikiQA and the quick start's InsuranceQA: the "Large collections" table of the README.
#
#   RERANKLAB_MIRROR=../shared/datasets bash scripts/lucene_parity/run.sh [WORK_DIR]
#
# Needs a JDK 11+ (Debian: apt-get install openjdk-17-jdk-headless) and PyPI: the Lucene side is
# the Anserini 0.24.0 fatjar inside the pyserini 0.24.0 wheel (Lucene 9.9.1), used as is:
# IndexCollection with its default analyzer (= Lucene's EnglishAnalyzer = Elasticsearch's
# `english`), then Search.java (plain Lucene BM25Similarity(0.9, 0.4), unrounded scores: Anserini's
# SearchCollection rounds them to 4 decimals and breaks those ties by docid). About 5 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(realpath -m "${1:-results/lucene_parity}")
mkdir -p "$work/jars" "$work/classes"
jar="$work/jars/anserini-0.24.0-fatjar.jar"
if [ ! -f "$jar" ]; then
  python -m pip download pyserini==0.24.0 --no-deps --quiet -d "$work/wheels"
  unzip -o -j -q "$work/wheels/pyserini-0.24.0-py3-none-any.whl" 'pyserini/resources/jars/anserini-0.24.0-fatjar.jar' -d "$work/jars"
fi
javac -cp "$jar" -d "$work/classes" "$here/Search.java" "$here/Analyze.java"
iqa='{"options": {"source": "package", "train_questions": 200, "dev_questions": 50, "test_questions": 100}}'
datasets=()
for ds in sample wikiqa insuranceqa; do
  params='{}'; [ "$ds" = insuranceqa ] && params="$iqa"
  reranklab download --dataset "$ds" --out-dir "$work/raw/$ds" --params "$params"
  reranklab prepare --dataset "$ds" --raw-dir "$work/raw/$ds" --out-dir "$work/data/$ds" --params "$params"
  python "$here/to_anserini.py" "$work/data/$ds" "$work/$ds"
  rm -rf "$work/$ds/index"
  java -cp "$jar" io.anserini.index.IndexCollection -collection JsonCollection \
    -generator DefaultLuceneDocumentGenerator -input "$work/$ds/docs" -index "$work/$ds/index" \
    -threads 1 > "$work/$ds/index.log" 2>&1
  java -cp "$jar:$work/classes" Search "$work/$ds/index" "$work/$ds/topics.tsv" "$work/$ds/lucene.run" 0.9 0.4 1000
  java -cp "$jar:$work/classes" Analyze "$work/$ds/texts.txt" "$work/$ds/lucene_tokens.txt"
  datasets+=("$work/data/$ds")
done
python "$here/compare.py" "$work" "${datasets[@]}" | tee "$work/parity.md"
