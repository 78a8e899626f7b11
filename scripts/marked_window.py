"""How much of each passage MarkedBERT sees in its window, against the Base model, on a finished study.

MarkedBERT's markers ([e_k] ... [/e_k], two word pieces per marked occurrence) count towards
``max_length``: at 64 word pieces they take room the Base model gives to the passage. This
script tokenises a study's test candidates (its first-stage run, the test questions of its
split) both ways, with the workflow's own cut (:func:`reranklab.features.tokenize.encode_text_pairs`,
the passage truncated, never the question) and the study's own marker settings, and prints the
mean passage word pieces kept in the window, plain and marked, and the mean marker tokens.

Usage (from a finished ``make minilm-markedbert2020`` folder; studies/minilm/README.md quotes it)::

    cd results/minilm/markedbert2020
    HF_HUB_OFFLINE=1 python ../../../scripts/marked_window.py insuranceqa wikiqa
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from reranklab.features.tokenize import encode_text_pairs
from reranklab.io import read_corpus, read_json, read_queries, read_run
from reranklab.models.marking import Marker, resolve_stopwords
from reranklab.models.registry import load_model


def _test_pairs(results: Path, dataset: str) -> list[tuple[str, str]]:
    test = read_json(results / "data" / dataset / "split.json")["test"]
    run = read_run(results / "first_stage" / dataset / "candidates.run")
    return [(query, passage) for query in test for passage in run.get(query, {})]


def _passage_pieces(encoded, markers: set[int]) -> np.ndarray:
    """Word pieces of segment B (the passage) in each pair, markers and the last [SEP] not counted."""
    kept = []
    for i in range(len(encoded)):
        ids = np.asarray(encoded.ids(i))
        types = encoded.token_type_ids[encoded.offsets[i] : encoded.offsets[i + 1]]
        passage = ids[types == 1][:-1]
        kept.append(int(sum(1 for token in passage if int(token) not in markers)))
    return np.array(kept)


def measure(results: Path, dataset: str) -> dict[str, float]:
    """The means over the test candidates of ``dataset`` in the study's ``results`` folder."""
    model_dir = next((results / "models" / dataset).glob("marked-L*/*/fold*"))
    model = load_model(model_dir)
    tokenizer, max_length = model.tokenizer, int(model.max_length)
    marker = Marker(
        tokenizer,
        int(model.inputs["markers"]),
        resolve_stopwords(model.inputs.get("marker_stopwords")),
    )
    markers = {i for token, i in tokenizer.get_vocab().items() if token.startswith(("[e", "[/e"))}
    queries = read_queries(results / "data" / dataset / "queries.tsv")
    texts = read_corpus(results / "data" / dataset / "corpus.parquet")
    pairs = [(queries[q], texts[p]) for q, p in _test_pairs(results, dataset)]
    plain = encode_text_pairs(tokenizer, pairs, max_length, progress=False)
    marked = encode_text_pairs(
        tokenizer, [marker(q, p) for q, p in pairs], max_length, progress=False
    )
    marker_counts = [sum(int(t) in markers for t in marked.ids(i)) for i in range(len(marked))]
    whole = [len(tokenizer(p, add_special_tokens=False)["input_ids"]) for _, p in pairs]
    return {
        "pairs": len(pairs),
        "max_length": max_length,
        "passage_pieces": float(np.mean(whole)),
        "kept_plain": float(np.mean(_passage_pieces(plain, markers))),
        "kept_marked": float(np.mean(_passage_pieces(marked, markers))),
        "marker_tokens": float(np.mean(marker_counts)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--results", type=Path, default=Path("results"))
    args = parser.parse_args()
    for dataset in args.datasets:
        m = measure(args.results, dataset)
        fewer = 1 - m["kept_marked"] / m["kept_plain"]
        print(
            f"{dataset}: {m['pairs']} test pairs at {m['max_length']} word pieces; passages "
            f"{m['passage_pieces']:.1f} pieces on average; in the window: plain {m['kept_plain']:.1f}, "
            f"marked {m['kept_marked']:.1f} ({fewer:.0%} fewer), {m['marker_tokens']:.1f} marker tokens"
        )


if __name__ == "__main__":
    main()
