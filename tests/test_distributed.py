"""DDP: gradient averaging and batch sharding over gloo processes on CPU, and the torchrun launch.

Multi-GPU runs (NCCL) cannot be tested on a CPU machine; the same code path runs here with
the gloo backend.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from reranklab.errors import ConfigError
from reranklab.training import distributed
from tests.conftest import tool_env

X = torch.tensor([[1.0, 2.0, 0.5], [0.0, -1.0, 2.0], [3.0, 0.5, -1.0], [-2.0, 1.0, 1.0]])
Y = torch.tensor([[1.0], [0.0], [2.0], [-1.0]])


def _loss(model: nn.Module, rows: list[int]) -> torch.Tensor:
    return (model(X[rows]) - Y[rows]).pow(2).mean()


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.manual_seed(
            100 + rank
        )  # different on purpose: prepare() must give every rank rank 0's weights
        model = nn.Linear(3, 1)
        collate = distributed.prepare(model, lambda rows: list(rows))
        initial = {k: v.clone() for k, v in model.state_dict().items()}
        shard = collate([0, 1, 2, 3])  # this rank's share of the global batch
        _loss(model, shard).backward()  # the hooks average the gradients over the ranks
        torch.save(
            {
                "initial": initial,
                "shard": shard,
                "grads": [p.grad.clone() for p in model.parameters()],
            },
            Path(out_dir, f"rank{rank}.pt"),
        )
    finally:
        dist.destroy_process_group()


def test_ranks_start_from_rank_0_and_average_gradients(tmp_path):
    mp.spawn(_worker, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(2)]
    torch.manual_seed(100)
    reference = nn.Linear(3, 1)  # rank 0's initialisation
    for got in ranks:
        assert all(torch.equal(got["initial"][k], v) for k, v in reference.state_dict().items())
    assert [got["shard"] for got in ranks] == [[0, 2], [1, 3]]
    # DDP's gradient: the mean over ranks of each rank's mean loss gradient (= the full batch's here).
    expected = []
    for rows in ([0, 2], [1, 3]):
        reference.zero_grad()
        _loss(reference, rows).backward()
        expected.append([p.grad.clone() for p in reference.parameters()])
    averaged = [(a + b) / 2 for a, b in zip(*expected, strict=True)]
    reference.zero_grad()
    _loss(reference, [0, 1, 2, 3]).backward()
    for got in ranks:
        for grad, want, full in zip(
            got["grads"], averaged, [p.grad for p in reference.parameters()], strict=True
        ):
            torch.testing.assert_close(grad, want, rtol=0, atol=1e-6)
            torch.testing.assert_close(grad, full, rtol=0, atol=1e-6)


def test_sharding_and_settings():
    assert distributed.shard(list(range(7)), 0, 3) == [0, 3, 6]
    assert distributed.shard([4, 5], 2, 3) == [5]  # a short last batch: every rank still steps
    assert distributed.wants_ddp({"distributed": "ddp", "gpus": 4})
    assert not distributed.wants_ddp(
        {"distributed": "ddp", "gpus": 1}
    )  # one process: nothing to launch
    with pytest.raises(ConfigError, match="distributed: ddp"):
        distributed.wants_ddp({"distributed": "none", "gpus": 2})
    assert (
        not distributed.is_worker()
        and distributed.world_size() == 1
        and distributed.is_main_process()
    )


@pytest.mark.integration
def test_reranklab_train_runs_as_two_torchrun_workers_on_cpu(tmp_path):
    """The launch path end to end: ``training.distributed: ddp`` with 2 processes (gloo, CPU)."""
    import pandas as pd

    # Imported here: the spawned workers above import this module and need none of it.
    from tests.helpers_models import (
        CORPUS,
        QUERIES,
        build_toy_bert,
        model_spec,
        toy_cell,
        write_examples,
    )

    bert = build_toy_bert(tmp_path / "bert")
    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        tmp_path / "corpus.parquet", index=False
    )
    cell = toy_cell("pointwise", bert, epochs=2, distributed="ddp", gpus=2, threads=1)
    command = [
        "reranklab",
        "train",
        "--examples",
        str(examples),
        "--queries",
        str(tmp_path / "queries.tsv"),
        "--corpus",
        str(tmp_path / "corpus.parquet"),
        "--out-dir",
        str(tmp_path / "model"),
        "--threads",
        "1",
        "--checkpoint-dir",
        str(tmp_path / "checkpoints"),
        "--checkpoint-every",
        "3",
        "--spec",
        model_spec(cell),
    ]
    result = subprocess.run(command, env=tool_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((tmp_path / "model" / "train_stats.json").read_text())
    # The global batch stays 4 (2 examples per rank): the same 16 steps as one process.
    assert (stats["world_size"], stats["steps"], stats["pairs_trained"]) == (2, 16, 64)
    assert result.stderr.count("saved pointwise to") == 1  # rank 0 alone writes the model
    assert not (tmp_path / "checkpoints").exists()
