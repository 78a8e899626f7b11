"""A prepared reranklab dataset as Anserini inputs (see run.sh).

usage: python scripts/lucene_parity/to_anserini.py DATASET_DIR OUT_DIR

OUT_DIR/docs/docs.jsonl  JsonCollection lines {"id", "contents"}, in corpus order
OUT_DIR/topics.tsv       qid<TAB>text (TsvString topics: tabs and line breaks become spaces)
OUT_DIR/texts.txt        one text per line (passages, then queries in qid order), for Analyze.java
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from reranklab.io import iter_corpus, read_queries

LINE_BREAKS = re.compile(r"[\t\r\n\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85]")


def main(data: Path, out: Path) -> None:
    (out / "docs").mkdir(parents=True, exist_ok=True)
    with (
        open(out / "docs" / "docs.jsonl", "w", encoding="utf-8") as docs,
        open(out / "texts.txt", "w", encoding="utf-8") as texts,
    ):
        for chunk in iter_corpus(data / "corpus.parquet", 10_000):
            for pid, text in chunk:
                docs.write(json.dumps({"id": pid, "contents": text}, ensure_ascii=False) + "\n")
                texts.write(LINE_BREAKS.sub(" ", text) + "\n")
        queries = read_queries(data / "queries.tsv")
        with open(out / "topics.tsv", "w", encoding="utf-8") as topics:
            for qid in sorted(queries):
                topics.write(f"{qid}\t{LINE_BREAKS.sub(' ', queries[qid])}\n")
                texts.write(LINE_BREAKS.sub(" ", queries[qid]) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
