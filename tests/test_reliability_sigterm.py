"""SIGTERM at any moment of a training job with a live MLflow run (Snakemake stopping the job,
scancel, a preemption) ends the run KILLED, and the job's log ends with one line, exit 143.

The moments that used to leave the run RUNNING are inside LiveRun.finish: the child process
holds there (a hook on the store call) until the test has sent SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from reranklab.io import write_qrels
from tests.conftest import tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    model_spec,
    negatives,
    positive,
    toy_cell,
)

mlflow = pytest.importorskip("mlflow")
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import ViewType  # noqa: E402

EXPERIMENT = "sigterm"
REPO = Path(__file__).resolve().parents[1]

# The train command, run by reranklab.cli.main, with the first store call named by argv[1]
# held until the file argv[2] exists (it prints HOLDING first).
_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from reranklab.tracking import live
    where, go = sys.argv[1], Path(sys.argv[2])
    real = live._retry

    def held(call, *args, **kwargs):
        if getattr(call, "__name__", "") == where and not go.exists():
            print("HOLDING", flush=True)
            while not go.exists():
                time.sleep(0.02)
        return real(call, *args, **kwargs)

    live._retry = held
    from reranklab.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("sigterm")
    data = work / "data" / "toy"
    data.mkdir(parents=True)
    (data / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        data / "corpus.parquet", index=False
    )
    write_qrels(data / "qrels.txt", {qid: {positive(qid): 1} for qid in QIDS})
    rows: dict[str, list[Any]] = {"qid": [], "pid": [], "label": []}
    for qid in QIDS[:2]:
        for pid, label in [(positive(qid), 1), (negatives(qid)[0], 0)]:
            rows["qid"].append(qid)
            rows["pid"].append(pid)
            rows["label"].append(label)
    pd.DataFrame(rows).to_parquet(work / "examples.parquet", index=False)
    return {"work": work, "data": data, "bert": build_toy_bert(work / "bert")}


def _train(toy: dict[str, Path], uri: str, out: Path) -> list[str]:
    cell = toy_cell("pointwise", toy["bert"], epochs=1, threads=1)
    cell = {**cell, "study": None, "protocol": None, "retrieval": None}
    data = toy["data"]
    return [
        "train",
        "--examples",
        str(toy["work"] / "examples.parquet"),
        "--queries",
        str(data / "queries.tsv"),
        "--corpus",
        str(data / "corpus.parquet"),
        "--out-dir",
        str(out),
        "--threads",
        "1",
        "--tracking-uri",
        uri,
        "--experiment",
        EXPERIMENT,
        "--cell-key",
        "toy/pointwise/L32",
        "--fold",
        "0",
        "--spec",
        model_spec(cell),
    ]


# set_tag: the first call of logging the model (a finished training); set_terminated: the end.
@pytest.mark.parametrize("where", ["set_tag", "set_terminated"])
def test_sigterm_while_the_live_run_is_finished_ends_it_killed_with_one_line(toy, tmp_path, where):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    go = tmp_path / "go"
    env = {**tool_env(), "RERANKLAB_GPU_BINDING": "0"}
    command = [sys.executable, "-c", _CHILD, where, str(go), *_train(toy, uri, tmp_path / "m")]
    job = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert job.stdout is not None
    line = job.stdout.readline()
    assert line == "HOLDING\n", job.communicate()[1][-3000:]
    job.send_signal(signal.SIGTERM)
    go.touch()
    _, err = job.communicate(timeout=300)

    assert job.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "reranklab train: stopped by signal SIGTERM"
    assert err.count("stopped by signal") == 1
    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == EXPERIMENT]
    (run,) = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)
    assert run.info.status == "KILLED"


def test_finish_is_idempotent(tmp_path):
    from reranklab.tracking.live import LiveRun

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cell = toy_cell("pointwise", tmp_path / "bert")
    with LiveRun(uri, EXPERIMENT, cell, "k", 0, system_metrics=False) as run:
        pass
    run.finish("FAILED")  # a second call changes nothing
    assert MlflowClient(uri).get_run(run.run_id).info.status == "FINISHED"
