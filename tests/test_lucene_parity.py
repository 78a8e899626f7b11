"""The bm25s backend's defaults reproduce Lucene's BM25 (the engine of Elasticsearch and Anserini).

Against Lucene's own output, recorded in tests/fixtures/lucene (see its README): the English
analyzer's tokens, and the BM25 top 20 of the sample questions with Lucene's scores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reranklab.config import schema_defaults
from reranklab.data.sample import SampleDataset
from reranklab.io import read_run, write_corpus
from reranklab.retrieval.analyzer import Analyzer
from reranklab.retrieval.backends import get_backend
from reranklab.retrieval.es_parity import overlap_at_k
from reranklab.retrieval.streamed_index import BM25S_ANALYSIS, lucene_norm_lengths

FIXTURES = Path(__file__).parent / "fixtures" / "lucene"
DEFAULTS = schema_defaults()["retrieval"]


def lucene_analysis() -> list[tuple[str, list[str]]]:
    lines = (FIXTURES / "analysis.tsv").read_text(encoding="utf-8").splitlines()
    return [(text, tokens.split()) for text, tokens in (line.split("\t") for line in lines)]


def test_defaults_are_lucenes_english_analyzer_and_norms():
    assert (DEFAULTS["tokenizer"], DEFAULTS["stemmer"], DEFAULTS["stopwords"]) == (
        "lucene",
        "porter",
        "en",
    )
    assert (DEFAULTS["k1"], DEFAULTS["b"], DEFAULTS["length_norms"]) == (0.9, 0.4, "lucene")


def test_the_analyzer_gives_lucenes_tokens():
    analyzer = Analyzer(DEFAULTS)
    differences = {}
    for text, expected in lucene_analysis():
        ours = analyzer.terms([text])[0]
        if ours != expected:
            differences[text[:20]] = (
                [t for t in ours if t not in expected],
                [t for t in expected if t not in ours],
            )
    # The known, documented differences only: PyStemmer's Porter is the original algorithm,
    # Lucene's has Porter's later "logi -> log" departure; Lucene emits each Chinese character
    # and each symbol such as the star as a token of its own.
    assert differences == {
        "Tell us as I said: t": (["technologi"], ["technolog"]),
        "Café naïve résumé — ": (["東京"], ["東", "京", "★"]),
    }


def test_the_bm25s_analysis_stays_available():
    bm25s_like = Analyzer({**DEFAULTS, **BM25S_ANALYSIS})
    assert bm25s_like.terms(["I don't pay the users' 3.5 fees"]) == [["don", "pay", "user", "fee"]]
    with pytest.raises(ValueError, match="retrieval.tokenizer: 'nltk' is not one of lucene, bm25s"):
        Analyzer({**DEFAULTS, "tokenizer": "nltk"})


def test_length_norms_are_lucenes_one_byte_lengths():
    # SmallFloat.intToByte4 then byte4ToInt: exact below 24, then 4 significant bits, rounded down.
    lengths = [0, 1, 23, 24, 25, 39, 40, 41, 100, 1000, 10_000]
    assert lucene_norm_lengths(lengths).tolist() == [0, 1, 23, 24, 25, 39, 40, 40, 96, 984, 9240]


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    prepared = SampleDataset().parse(_sample_raw(tmp_path_factory.mktemp("raw")), {})
    work = tmp_path_factory.mktemp("lucene")
    write_corpus(work / "corpus.parquet", prepared.corpus)
    retriever = get_backend(DEFAULTS)
    retriever.build(work / "corpus.parquet", work / "index")
    return retriever, work / "index", prepared.queries


def _sample_raw(out: Path) -> Path:
    from importlib.resources import files

    for name in ("questions.tsv", "passages.tsv", "qrels.txt"):
        (out / name).write_bytes((files("reranklab.data") / "sample_data" / name).read_bytes())
    return out


def test_bm25s_ranks_and_scores_as_lucene_on_sample(sample_index):
    retriever, index, queries = sample_index
    lucene = read_run(FIXTURES / "sample_top20.run")
    ours = retriever.search(index, queries, depth=20)
    assert sorted(ours) == sorted(lucene) and len(lucene) == 100
    assert overlap_at_k(ours, lucene, 10) == 1.0
    # Lucene scores in float32 too: equal up to the last bits.
    for qid, ranking in lucene.items():
        for pid, score in ranking.items():
            if pid in ours[qid]:
                assert ours[qid][pid] == pytest.approx(score, rel=2e-6), (qid, pid)
