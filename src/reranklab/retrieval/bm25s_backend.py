"""BM25 with bm25s (Lucene's formula), PyStemmer stemming, and a memory-mapped saved index."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from reranklab.io import Run, atomic_write_text
from reranklab.retrieval.base import Retriever

PIDS_FILE = "pids.json"
SETTINGS_FILE = "reranklab.json"


class Bm25sRetriever(Retriever):
    """bm25s backend; the index directory holds bm25s' arrays plus the pid order and settings."""

    def _tokenize(self, texts: list[str], return_ids: bool):
        import bm25s

        return bm25s.tokenize(
            texts,
            stopwords=self.settings.get("stopwords") or [],
            stemmer=self._stemmer(),
            return_ids=return_ids,
            show_progress=False,
        )

    def _stemmer(self):
        name = self.settings.get("stemmer")
        if not name:
            return None
        import Stemmer

        return Stemmer.Stemmer(name).stemWords

    def build(self, corpus: Mapping[str, str], index_dir: Path) -> dict[str, Any]:
        import bm25s

        pids = list(corpus)
        tokens = self._tokenize([corpus[pid] for pid in pids], return_ids=True)
        model = bm25s.BM25(
            method="lucene", k1=float(self.settings["k1"]), b=float(self.settings["b"])
        )
        model.index(tokens, show_progress=len(pids) > 10_000)
        # Build beside the target and rename, so a killed job never leaves a half index.
        index_dir = Path(index_dir)
        staging = index_dir.with_name(index_dir.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        model.save(str(staging), show_progress=False)
        atomic_write_text(staging / PIDS_FILE, json.dumps(pids))
        stats = {"passages": len(pids), "vocabulary": len(tokens.vocab), "settings": self.settings}
        atomic_write_text(staging / SETTINGS_FILE, json.dumps(stats, indent=2, sort_keys=True))
        shutil.rmtree(index_dir, ignore_errors=True)
        staging.rename(index_dir)
        return stats

    def search(self, index_dir: Path, queries: Mapping[str, str], depth: int) -> Run:
        import bm25s

        index_dir = Path(index_dir)
        model = bm25s.BM25.load(str(index_dir), mmap=True, show_progress=False)
        pids = json.loads((index_dir / PIDS_FILE).read_text(encoding="utf-8"))
        qids = list(queries)
        tokens = self._tokenize([queries[q] for q in qids], return_ids=False)
        k = min(depth, len(pids))
        run: Run = {}
        batch = 1024
        for start in tqdm(
            range(0, len(qids), batch), desc="bm25", unit="batch", disable=len(qids) <= batch
        ):
            chunk = tokens[start : start + batch]
            docs, scores = model.retrieve(chunk, k=k, show_progress=False, n_threads=1)
            for row, qid in enumerate(qids[start : start + batch]):
                # bm25s fills up to k with zero-score passages; Lucene returns only matches.
                run[qid] = {
                    pids[int(doc)]: float(score)
                    for doc, score in zip(docs[row], scores[row], strict=True)
                    if score > 0
                }
        return run
