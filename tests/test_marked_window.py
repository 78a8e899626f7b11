"""scripts/marked_window.py: how many passage word pieces MarkedBERT's markers leave in the window
(the numbers studies/minilm/README.md quotes for the markedbert2020 run)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reranklab.io import write_json
from reranklab.models.marking import add_marker_tokens
from reranklab.models.reranker import CrossEncoderReranker
from reranklab.models.tiny import tiny_encoder
from tests.helpers_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "marked_window.py"
WORDS = ["ghost", "town", "urban", "area", "an", "old", "meaning", "of", "a", "word"]


@pytest.fixture(scope="module")
def script():
    return load_script(SCRIPT, "marked_window_script")


def _study(root: Path, max_length: int) -> Path:
    """A finished study's files for one dataset: data, split, first-stage run, a saved MarkedBERT."""
    results = root / "results"
    data = results / "data" / "d"
    data.mkdir(parents=True)
    (data / "queries.tsv").write_text("q1\tghost town\nq2\tmeaning of a word\n", encoding="utf-8")
    texts = {"p1": "ghost town an old ghost area", "p2": "an urban area", "p3": "old word"}
    pd.DataFrame({"pid": list(texts), "text": list(texts.values())}).to_parquet(
        data / "corpus.parquet"
    )
    write_json(data / "split.json", {"train": ["q2"], "dev": [], "test": ["q1"]})
    run = results / "first_stage" / "d" / "candidates.run"
    run.parent.mkdir(parents=True)
    lines = [f"{q} Q0 {p} {r} {10 - r} bm25" for q in ("q1", "q2") for r, p in enumerate(texts, 1)]
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    encoder, tokenizer = tiny_encoder(WORDS)
    add_marker_tokens(tokenizer, encoder, 4)
    model = CrossEncoderReranker(
        encoder,
        tokenizer,
        variant="marked",
        num_outputs=2,
        score="p_relevant",
        max_length=max_length,
        inputs={"markers": 4, "marker_stopwords": None},
    )
    model.save(results / "models" / "d" / "marked-L16" / "seed42" / "fold0")
    return results


def test_markers_take_room_from_the_passage(script, tmp_path):
    # q1 "ghost town" over its three candidates; q2 is a training question and is not counted.
    m = script.measure(_study(tmp_path, 16), "d")
    assert m["pairs"] == 3 and m["max_length"] == 16
    # Plain, every passage fits: [CLS] ghost town [SEP] + 6, 3 and 2 pieces + [SEP].
    assert m["passage_pieces"] == m["kept_plain"] == pytest.approx((6 + 3 + 2) / 3)
    # Marked, p1 becomes [CLS] [e1] ghost [/e1] [e2] town [/e2] [SEP] [e1] ghost [/e1] [e2] town
    # [/e2] an [SEP]: 8 markers, and 3 of its 6 passage pieces left; p2 and p3 match nothing.
    assert m["kept_marked"] == pytest.approx((3 + 3 + 2) / 3)
    assert m["marker_tokens"] == pytest.approx(8 / 3)


def test_the_command_prints_one_line_a_dataset(script, tmp_path, capsys, monkeypatch):
    results = _study(tmp_path, 16)
    monkeypatch.setattr("sys.argv", ["marked_window.py", "d", "--results", str(results)])
    script.main()
    line = capsys.readouterr().out.strip()
    assert line.startswith("d: 3 test pairs at 16 word pieces;") and "fewer" in line
