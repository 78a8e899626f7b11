"""The training loop learns, is seeded, saves atomically; re-ranking scores what was asked."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from reranklab.errors import FormatError
from reranklab.models.reranker import load_reranker
from reranklab.training.inference import rerank, rerank_with_model
from reranklab.training.trainer import STATS_FILE, TrainState, train_model
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    mrr,
    toy_cell,
    write_examples,
)

# Enough epochs for the tiny random BERT to memorise the eight toy questions.
LEARN = {
    "pointwise": {"epochs": 40, "learning_rate": 3e-3},
    "bertlets": {"epochs": 25, "learning_rate": 3e-3},
}


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture(scope="module")
def trained(toy_bert, tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Each variant trained once on the toy set (shared by the tests below)."""
    out = {}
    for variant, settings in LEARN.items():
        work = tmp_path_factory.mktemp(variant)
        examples = write_examples(work / "examples.parquet", variant)
        stats = train_model(
            toy_cell(variant, toy_bert, **settings),
            examples,
            QUERIES,
            CORPUS,
            work / "model",
            progress=False,
        )
        out[variant] = (work / "model", stats)
    return out


@pytest.mark.parametrize("variant", ["pointwise", "bertlets"])
def test_training_makes_the_answers_outrank_the_negatives(trained, variant):
    model_dir, stats = trained[variant]
    run = rerank(
        model_dir, candidates(), QIDS, QUERIES, CORPUS, batch_size=8, device="cpu", progress=False
    )
    assert mrr(run) >= 0.9
    assert stats["epoch_losses"][-1] < 0.5 * stats["epoch_losses"][0]


@pytest.mark.parametrize(
    ("variant", "examples", "pairs"), [("pointwise", 32, 32), ("bertlets", 24, 48)]
)
def test_train_stats(trained, variant, examples, pairs):
    model_dir, stats = trained[variant]
    epochs = LEARN[variant]["epochs"]
    steps = epochs * math.ceil(examples / 4)
    assert (stats["examples"], stats["epochs"], stats["steps"], stats["warmup_steps"]) == (
        examples,
        epochs,
        steps,
        math.ceil(0.1 * steps),
    )
    assert stats["pairs_trained"] == pairs * epochs
    assert stats["distinct_pairs"] == 32
    assert stats["train_queries"] == len(QIDS)  # every training question kept an example
    assert stats["device"] == "cpu" and stats["pairs_per_s"] > 0
    assert stats["mean_loss"] == pytest.approx(sum(stats["epoch_losses"]) / epochs)
    assert stats["final_loss"] == stats["epoch_losses"][-1]
    assert stats["loss_curve"][-1][0] == steps
    assert (model_dir / STATS_FILE).is_file()
    # The model directory is complete and nothing temporary is left beside it.
    assert load_reranker(model_dir).variant == variant
    assert [p.name for p in model_dir.parent.iterdir() if p.name.startswith(".")] == []


def test_rerank_scores_every_candidate_of_the_requested_queries_only(trained):
    model_dir, _ = trained["bertlets"]
    wanted = ["q3", "q1", "q7"]
    run = rerank(
        model_dir, candidates(), wanted, QUERIES, CORPUS, batch_size=3, device="cpu", progress=False
    )
    assert sorted(run) == sorted(wanted)
    for qid in wanted:
        assert set(run[qid]) == set(candidates()[qid])
        assert all(isinstance(score, float) and math.isfinite(score) for score in run[qid].values())
    # Batch size and batching order do not change a pair's score.
    model = load_reranker(model_dir)
    again = rerank_with_model(
        model, candidates(), ["q7"], QUERIES, CORPUS, batch_size=1, progress=False
    )
    assert again["q7"] == pytest.approx(run["q7"], abs=1e-5)


def test_rerank_skips_queries_without_candidates(trained):
    model_dir, _ = trained["pointwise"]
    run = rerank(
        model_dir,
        {"q1": candidates()["q1"], "q2": {}},
        ["q1", "q2", "q9"],
        QUERIES,
        CORPUS,
        8,
        progress=False,
    )
    assert list(run) == ["q1"]
    # Raw margins l1 - l0 (not probabilities): any finite float.
    assert all(isinstance(score, float) and math.isfinite(score) for score in run["q1"].values())


def test_training_is_seeded(toy_bert, tmp_path):
    examples = write_examples(tmp_path / "examples.parquet", "bertlets")
    cell = toy_cell("bertlets", toy_bert, epochs=2, learning_rate=1e-3)
    first = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
    # Training again into the same directory replaces it (atomically).
    second = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
    assert first["loss_curve"] == second["loss_curve"]
    other = train_model(
        dict(cell, seed=2), examples, QUERIES, CORPUS, tmp_path / "other", progress=False
    )
    assert other["loss_curve"] != first["loss_curve"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["examples.parquet", "model", "other"]


def test_deterministic_training_does_not_depend_on_the_threads_it_is_given(toy_bert, tmp_path):
    # torch splits CPU sums by thread count: deterministic mode pins it, whatever --threads
    # (or snakemake --cores) gives the job, so 1 and 2 threads train the very same model.
    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    cell = toy_cell(
        "pointwise", toy_bert, epochs=3, learning_rate=3e-3, deterministic=True, threads=0
    )
    enabled = torch.are_deterministic_algorithms_enabled()
    try:
        stats = {
            n: train_model(
                cell, examples, QUERIES, CORPUS, tmp_path / f"t{n}", threads=n, progress=False
            )
            for n in (1, 2)
        }
    finally:
        torch.use_deterministic_algorithms(enabled)
    assert stats[1]["threads"] == stats[2]["threads"] == 1
    weights = {
        n: {p.name: p.read_bytes() for p in sorted((tmp_path / f"t{n}").glob("*.safetensors"))}
        for n in (1, 2)
    }
    assert weights[1] and weights[1] == weights[2]
    assert stats[1]["loss_curve"] == stats[2]["loss_curve"]


def test_checkpointer_hooks_see_every_step_and_can_resume(toy_bert, tmp_path):
    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    cell = toy_cell("pointwise", toy_bert, epochs=2, learning_rate=1e-3)

    class Resume:
        def __init__(self):
            self.steps: list[tuple[int, int]] = []

        def restore(self, state: TrainState) -> None:
            # Pretend the first epoch and one step of the second were restored.
            state.epoch, state.step_in_epoch, state.global_step = 1, 1, 9
            state.losses = [0.0] * 9

        def step_done(self, state: TrainState) -> None:
            self.steps.append((state.epoch, state.step_in_epoch))

        def finished(self, state: TrainState, model_dir: Path) -> None:
            self.finished_at = (state.global_step, model_dir)

    hook = Resume()
    stats = train_model(
        cell, examples, QUERIES, CORPUS, tmp_path / "model", checkpointer=hook, progress=False
    )
    assert hook.steps == [(1, step) for step in range(2, 9)]
    assert hook.finished_at == (16, tmp_path / "model")
    assert stats["steps"] == 16 and stats["pairs_trained"] == 7 * 4


def _write(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize(
    ("variant", "columns", "message"),
    [
        ("pointwise", {"qid": ["q1"], "pid": ["p1"]}, r"missing column\(s\) label"),
        (
            "pointwise",
            {"qid": ["q1", "q1"], "pid": ["p1", "p2"], "label": [1, 3]},
            "row 1: label must be 0 or 1",
        ),
        (
            "pointwise",
            {"qid": ["q1"], "pid": ["nope"], "label": [1]},
            "row 0: pid 'nope' is not in the corpus",
        ),
        (
            "bertlets",
            {"qid": ["q42"], "pos_pid": ["p1"], "neg_pid": ["p2"]},
            "row 0: query 'q42' is not in the queries",
        ),
        (
            "bertlets",
            {"qid": ["q1"], "pos_pid": ["p1"], "neg_pid": ["p1"]},
            "row 0: positive and negative passage are the same",
        ),
    ],
)
def test_bad_examples_name_the_file_and_row(toy_bert, tmp_path, variant, columns, message):
    path = _write(tmp_path / "bad.parquet", columns)
    with pytest.raises(FormatError, match=message) as error:
        train_model(
            toy_cell(variant, toy_bert), path, QUERIES, CORPUS, tmp_path / "model", progress=False
        )
    assert str(path) in str(error.value)
    assert not (tmp_path / "model").exists()


def test_a_training_job_reads_only_the_passages_its_examples_name(tmp_path):
    from reranklab.training.trainer import passages_to_read

    triplets = tmp_path / "triplets.parquet"
    pq.write_table(
        pa.table({"qid": ["q1", "q2"], "pos_pid": ["p1", "p2"], "neg_pid": ["p3", "p1"]}), triplets
    )
    assert passages_to_read({"variant": "bertlets"}, triplets) == {"p1", "p2", "p3"}
    points = write_examples(tmp_path / "pointwise.parquet", "pointwise")
    assert passages_to_read({"variant": "pointwise"}, points) == set(
        pq.read_table(points).column("pid").to_pylist()
    )
    # The word baselines build their vocabulary from the whole collection.
    assert passages_to_read({"variant": "qa_lstm"}, triplets) is None
    assert passages_to_read({"variant": "knrm"}, triplets) is None


def _hand_written_schedule_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """The factor of reranklab's own schedule before it used transformers' (the reference)."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


@pytest.mark.parametrize(
    ("warmup", "total"), [(0, 12), (3, 12), (12, 12), (10_000, 95), (1, 1), (0, 1)]
)
def test_the_learning_rate_schedule_is_unchanged(warmup, total):
    from reranklab.training.trainer import linear_schedule

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=3e-5)
    scheduler = linear_schedule(optimizer, warmup, total)
    rates = [optimizer.param_groups[0]["lr"]]
    for _ in range(total + 2):  # and past the end: it stays at 0
        optimizer.step()
        scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
    assert rates == [
        3e-5 * _hand_written_schedule_factor(step, warmup, total) for step in range(total + 3)
    ]


def test_the_loop_alone_trains_as_train_model_does(toy_bert, tmp_path):
    # `reranklab bench` times build_plan + run_loop with only a Throughput callback: the same
    # steps, losses and word pieces as a train job, whose callbacks read the losses more often.
    from reranklab.training.callbacks import Throughput
    from reranklab.training.loop import run_loop
    from reranklab.training.plan import build_plan
    from reranklab.training.trainer import epoch_losses

    examples = write_examples(tmp_path / "examples.parquet", "bertlets")
    cell = toy_cell("bertlets", toy_bert, epochs=2, learning_rate=1e-3, micro_batch_size=2)
    stats = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
    plan = build_plan(cell, examples, QUERIES, CORPUS, progress=False)
    speed = Throughput()
    state = run_loop(plan, [speed])
    assert epoch_losses(state.losses, plan.steps_per_epoch, plan.epochs) == stats["epoch_losses"]
    assert (state.global_step, speed.pairs, speed.tokens, speed.padded_tokens) == (
        stats["steps"],
        stats["pairs_trained"],
        stats["tokens_trained"],
        stats["tokens_padded"],
    )
    assert [e["steps"] for e in speed.epoch_speed] == [s["steps"] for s in stats["epoch_speed"]]
    # Each epoch's pairs, so that models trained at different batch sizes compare per pair.
    assert sum(e["pairs"] for e in stats["epoch_speed"]) == stats["pairs_trained"]
    assert all(e["pairs_per_s"] > 0 for e in stats["epoch_speed"])
