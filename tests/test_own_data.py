"""A collection of one's own in one config entry (``local.<name>``), and ``reranklab score``
against a study's own judgements (``--qrels``, ``--prepared``): no package edit, no download."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from reranklab.cli import main
from reranklab.config import load_params, resolve_protocol, resolve_scoring, with_defaults
from reranklab.data import get_dataset
from reranklab.data._local_files import read_local_passages, read_local_queries, read_local_run
from reranklab.data.local import LocalDataset, local_measure
from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation.evaluate import evaluate_run
from reranklab.settings.job import DatasetSpec
from reranklab.workflow.plan import StudyPlan

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "studies" / "own-data"
EXAMPLE_CONFIG = REPO / "config" / "own-data.yaml"


@pytest.fixture
def collection(tmp_path, monkeypatch):
    """A copy of the worked example in a study folder (the working directory), and its entry."""
    shutil.copytree(EXAMPLE, tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    entry = {
        "queries": "data/queries.tsv",
        "passages": "data/passages.jsonl",
        "qrels": "data/qrels.txt",
        "splits": "data/split.json",
    }
    return tmp_path, entry


def prepare(name: str, entry: dict, out: Path, capsys) -> tuple[int, str]:
    """``reranklab prepare`` as the rule runs it: its exit code and stderr's error lines."""
    spec = json.dumps({"local": entry})
    argv = ["prepare", "--dataset", name, "--raw-dir", str(out / "raw"), "--out-dir", str(out)]
    code = main([*argv, "--spec", spec])
    err = capsys.readouterr().err
    return code, "\n".join(line for line in err.splitlines() if "error:" in line)


# -- the worked example -----------------------------------------------------------------------


def test_the_example_config_defines_the_collection_in_one_entry():
    config = yaml.safe_load(EXAMPLE_CONFIG.read_text())
    assert config["datasets"] == ["faq"] and set(config["local"]) == {"faq"}
    full = with_defaults(load_params([REPO / "params.yaml", EXAMPLE_CONFIG]))
    protocol = resolve_protocol(full, "faq")
    # Its files decide the protocol (a split is given: predefined), protocol.faq tunes it.
    assert protocol["split"] == "predefined" and protocol["first_stage"] == "bm25"
    assert protocol["depth"] == 20 and protocol["negatives_per_positive"] == 3
    scoring = resolve_scoring(full, "faq")
    assert [m.name for m in scoring.measures] == ["P@1", "MAP", "MRR", "nDCG@10", "R@20"]
    assert scoring.queries == "relevant" and scoring.relevance == 1
    assert get_dataset("faq").label == "FAQ"


def test_the_prepare_step_reads_the_example_into_canonical_form(collection, capsys):
    root, entry = collection
    code, errors = prepare("own-example", entry, root / "out", capsys)
    assert code == 0, errors
    stats = json.loads((root / "out" / "stats.json").read_text())
    assert (stats["queries"], stats["passages"], stats["judgements"]) == (30, 150, 105)
    assert stats["split"] == {"train": 16, "dev": 4, "test": 10}
    assert stats["judgements_by_grade"] == {"0": 45, "1": 29, "2": 31}
    assert "q01 0 doc090 2" in (root / "out" / "qrels.txt").read_text().splitlines()


def test_download_records_each_file_with_its_checksum_and_copies_nothing(collection, capsys):
    root, entry = collection
    spec = json.dumps({"local": entry})
    code = main(["download", "--dataset", "own-dl", "--out-dir", "raw", "--spec", spec])
    assert code == 0, capsys.readouterr().err
    manifest = json.loads((root / "raw" / "manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == ["queries", "passages", "qrels", "splits"]
    assert all(len(f["sha256"]) == 64 and f["size"] > 0 for f in manifest["files"])
    assert sorted(p.name for p in (root / "raw").iterdir()) == ["manifest.json"]


# -- formats people already have ---------------------------------------------------------------


def test_queries_and_passages_in_every_format_read_the_same(tmp_path):
    queries = read_local_queries(EXAMPLE / "queries.tsv")
    passages = read_local_passages(EXAMPLE / "passages.jsonl")
    # queries: JSONL with BEIR's _id, gzipped
    beir = tmp_path / "queries.jsonl.gz"
    beir.write_bytes(
        gzip.compress(
            "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()).encode()
        )
    )
    assert read_local_queries(beir) == queries
    # passages: TSV with a header line, and Parquet with Pyserini-like columns
    tsv = tmp_path / "passages.tsv"
    tsv.write_text("docid\ttext\n" + "".join(f"{p}\t{t}\n" for p, t in passages.items()))
    assert read_local_passages(tsv) == passages
    table = pa.table({"docid": list(passages), "contents": list(passages.values())})
    pq.write_table(table, tmp_path / "passages.parquet")
    assert read_local_passages(tmp_path / "passages.parquet") == passages


def test_a_beir_title_goes_before_the_passage_text(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"_id": "d1", "title": "Cast iron", "text": "Oil it."}) + "\n")
    assert read_local_passages(path) == {"d1": "Cast iron Oil it."}


# -- bad files: one error line naming the file, the line and what is wrong -----------------------

BAD_FILES = [
    # (file key, file name, content, expected text after "<file>:<line>: ")
    (
        "queries",
        "queries.tsv",
        "q1\tWhy?\nq2\tHow?\nq1\tAgain?\n",
        (3, "duplicate query id 'q1' (first on line 1)"),
    ),
    ("queries", "queries.tsv", "q1\tWhy?\nq2\t   \n", (2, "empty query text for id 'q2'")),
    ("queries", "queries.tsv", "q1 Why?\n", (1, "expected 'query id<TAB>text', found no tab")),
    (
        "queries",
        "queries.jsonl",
        '{"id": "q1", "text": "Why?"}\n{"id": "q2", "body": "How?"}\n',
        (2, "no query text field: expected one of 'text', 'query', 'contents', found 'id', 'body'"),
    ),
    (
        "passages",
        "passages.jsonl",
        '{"id": "d1", "contents": "A."}\n{"id": "d1", "contents": "B."}\n',
        (2, "duplicate passage id 'd1' (first on line 1)"),
    ),
    (
        "passages",
        "passages.jsonl",
        '{"id": "d1", "contents": "A."}\n{"id": "d2", contents: "B."}\n',
        (2, "not a JSON object (Expecting property name enclosed in double quotes)"),
    ),
    ("passages", "passages.tsv", "d1\tA caf\xe9.\n", (1, "not valid UTF-8 (byte 0xe9 at column 9")),
    (
        "qrels",
        "qrels.txt",
        "q1 0 d1 1\nq1 0 d9 1\n",
        (2, "passage id 'd9' is not in the passages file"),
    ),
    ("qrels", "qrels.txt", "q7 0 d1 1\n", (1, "query id 'q7' is not in the queries file")),
    (
        "qrels",
        "qrels.txt",
        "q1 d1 1\n",
        (1, "wrong columns: expected 4 fields 'qid iteration docid grade' (TREC qrels), got 3"),
    ),
    ("qrels", "qrels.txt", "q1 0 d1 high\n", (1, "relevance grade 'high' is not an integer")),
    (
        "first_stage_run",
        "bm25.run",
        "q1 Q0 d1 1 3.5 bm25\nq1 Q0 d5 2 2.5 bm25\n",
        (2, "passage id 'd5' is not in the passages file"),
    ),
]


@pytest.mark.parametrize(("key", "name", "content", "expected"), BAD_FILES)
def test_a_bad_file_is_one_error_line_naming_file_and_line(
    tmp_path, capsys, key, name, content, expected
):
    files = {
        "queries": ("queries.tsv", "q1\tWhy do cats purr?\n"),
        "passages": ("passages.tsv", "d1\tCats purr when content.\n"),
        "qrels": ("qrels.txt", "q1 0 d1 1\n"),
    }
    files[key] = (name, content)
    entry = {}
    for field, (file_name, text) in files.items():
        path = tmp_path / file_name
        if "\xe9" in text:
            path.write_bytes(text.encode("latin-1"))
        else:
            path.write_text(text)
        entry[field] = str(path)
    code, errors = prepare("bad-coll", entry, tmp_path / "out", capsys)
    line, problem = expected
    assert code == 2 and len(errors.splitlines()) == 1, errors
    assert errors.startswith("reranklab prepare: error: ")
    assert f"{tmp_path / name}:{line}: {problem}" in errors


def test_a_file_whose_format_cannot_be_told_is_named(tmp_path, capsys):
    (tmp_path / "queries.csv").write_text("q1,Why?\n")
    entry = {"queries": str(tmp_path / "queries.csv"), "passages": "p.tsv", "qrels": "r.txt"}
    code, errors = prepare("bad-suffix", entry, tmp_path / "out", capsys)
    assert code == 2 and f"{tmp_path / 'queries.csv'}: cannot tell the format" in errors


def test_parquet_without_a_text_column_names_its_columns(tmp_path):
    pq.write_table(pa.table({"id": ["d1"], "body": ["x"]}), tmp_path / "p.parquet")
    with pytest.raises(
        FormatError, match=r"p.parquet: wrong columns: a text column .* the file has id, body"
    ):
        read_local_passages(tmp_path / "p.parquet")


def test_a_split_naming_an_unknown_query_or_several_folds_is_refused(collection, capsys):
    root, entry = collection
    (root / "bad.json").write_text(json.dumps({"train": ["q01"], "test": ["q01x"]}))
    code, errors = prepare("bad-split", {**entry, "splits": "bad.json"}, root / "o1", capsys)
    assert code == 2 and "bad.json: test[0]: query id 'q01x' is not in the queries file" in errors
    folds = {
        "dataset": "x",
        "kind": "cv",
        "folds": [{"name": f"f{i}", "train": [], "dev": [], "test": []} for i in range(2)],
    }
    (root / "folds.json").write_text(json.dumps(folds))
    code, errors = prepare("bad-folds", {**entry, "splits": "folds.json"}, root / "o2", capsys)
    assert code == 2 and "folds.json: a folds file with 2 folds" in errors


def test_a_folds_file_with_one_fold_is_a_predefined_split(collection, capsys):
    root, entry = collection
    split = json.loads((root / "data" / "split.json").read_text())
    folds = {"dataset": "faq", "kind": "predefined", "folds": [{"name": "fold0", **split}]}
    (root / "folds.json").write_text(json.dumps(folds))
    code, errors = prepare("one-fold", {**entry, "splits": "folds.json"}, root / "out", capsys)
    assert code == 0, errors
    assert json.loads((root / "out" / "split.json").read_text()) == split


# -- the config entry ---------------------------------------------------------------------------


def study(tmp_path: Path, **extra) -> Path:
    config = {
        "study": "mine",
        "datasets": ["mycoll"],
        "local": {"mycoll": {"queries": "q.tsv", "passages": "p.jsonl", "qrels": "r.txt"}},
        **extra,
    }
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_wrong_key_in_the_entry_is_named(tmp_path):
    path = study(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["local"]["mycoll"]["querys"] = "q.tsv"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"mine.yaml: .*local\.mycoll\.querys"):
        load_params([path])


def test_a_measure_that_is_not_trec_eval_s_is_named(tmp_path):
    path = study(tmp_path)
    config = yaml.safe_load(path.read_text())
    config["local"]["mycoll"]["scoring"] = {"measures": ["MAP", "F1"]}
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"local\.mycoll\.scoring\.measures\.1"):
        load_params([path])


def test_an_undefined_collection_and_a_builtin_name_are_refused(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump({"datasets": ["nosuchcoll"]}))
    with pytest.raises(ConfigError, match="unknown dataset 'nosuchcoll'"):
        load_params([path])
    path.write_text(
        yaml.safe_dump({"local": {"wikiqa": {"queries": "q", "passages": "p", "qrels": "r"}}})
    )
    with pytest.raises(
        ConfigError, match="local.wikiqa: 'wikiqa' is the name of a built-in dataset"
    ):
        load_params([path])


def test_the_plan_passes_the_entry_and_file_stamps_and_names_a_missing_file(collection):
    root, entry = collection
    path = root / "study.yaml"
    path.write_text(yaml.safe_dump({"datasets": ["planned"], "local": {"planned": entry}}))
    plan = StudyPlan(with_defaults(load_params([path])))
    spec = DatasetSpec.parse(plan.dataset_spec(SimpleNamespace(dataset="planned")))
    assert spec.local["queries"] == "data/queries.tsv"  # as written: relative to the study folder
    assert set(spec.stamps) == {"queries", "passages", "qrels", "splits"}
    before = spec.stamps["qrels"]
    with open(root / "data" / "qrels.txt", "a") as handle:
        handle.write("q01 0 doc001 1\n")  # a changed file changes the spec: the jobs re-run
    again = DatasetSpec.parse(plan.dataset_spec(SimpleNamespace(dataset="planned")))
    assert again.stamps["qrels"] != before
    (root / "data" / "queries.tsv").unlink()
    with pytest.raises(
        ConfigError, match=r"local\.planned\.queries: no such file data/queries.tsv"
    ):
        plan.dataset_spec(SimpleNamespace(dataset="planned"))


def test_a_first_stage_run_makes_the_pool_the_first_stage(collection, capsys):
    root, entry = collection
    (root / "first.run").write_text("q01 Q0 doc001 1 9.5 mine\nq01 Q0 doc002 2 7.0 mine\n")
    dataset = LocalDataset("pooled", {**entry, "first_stage_run": "first.run"})
    assert dataset.protocol.first_stage == "pool" and dataset.protocol.depth is None
    code, errors = prepare(
        "pooled", {**entry, "first_stage_run": "first.run"}, root / "out", capsys
    )
    assert code == 0, errors
    assert (root / "out" / "pool.run").read_text().split()[:3] == ["q01", "Q0", "doc001"]


def test_measures_at_any_cutoff_are_trec_eval_s():
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
    run = {"q1": {"b": 3.0, "a": 2.0, "d": 1.5, "c": 1.0}}
    dataset = LocalDataset(
        "cut",
        {
            "queries": "q",
            "passages": "p",
            "qrels": "r",
            "scoring": {"measures": ["P@2", "R@3", "nDCG@3", "MAP@2", "MRR@1"]},
        },
    )
    result = evaluate_run(run, qrels, ["q1"], scoring=dataset.scoring())
    assert result["aggregate"] == pytest.approx(
        {
            "P@2": 0.5,
            "R@3": 0.5,
            "nDCG@3": result["aggregate"]["nDCG@3"],
            "MAP@2": 0.25,
            "MRR@1": 0.0,
        }
    )
    assert 0 < result["aggregate"]["nDCG@3"] < 1
    assert local_measure("nDCG@20").trec_name == "ndcg_cut_20"


# -- reranklab score against a study's own judgements -------------------------------------------


@pytest.fixture
def prepared(collection, capsys):
    """The example prepared as the workflow does, and a run of its test queries."""
    root, entry = collection
    entry = {**entry, "scoring": {"measures": ["MAP", "MRR", "R@5"]}}
    spec = json.dumps({"local": entry})
    raw = "results/data/scored/raw"
    assert main(["download", "--dataset", "scored", "--out-dir", raw, "--spec", spec]) == 0
    assert prepare("scored", entry, root / "results/data/scored", capsys)[0] == 0
    split = json.loads((root / "results/data/scored/split.json").read_text())
    qrels = (root / "results/data/scored/qrels.txt").read_text().split("\n")
    relevant = {}
    for line in filter(None, qrels):
        qid, _, pid, grade = line.split()
        if int(grade) >= 1:
            relevant.setdefault(qid, pid)
    # The first relevant passage of each test query at rank 2, a passage at rank 1.
    lines = []
    for qid in split["test"]:
        lines.append(f"{qid} Q0 doc150 1 2.0 mine")
        lines.append(f"{qid} Q0 {relevant[qid]} 2 1.0 mine")
    (root / "test.run").write_text("\n".join(lines) + "\n")
    return root, split


def score_json(capsys, *args: str) -> dict:
    assert main(["score", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_score_with_the_prepared_folder_counts_its_split_and_fetches_nothing(
    prepared, capsys, monkeypatch
):
    root, split = prepared
    monkeypatch.setenv("RERANKLAB_CACHE", str(root / "cache"))
    result = score_json(capsys, "--prepared", "results/data/scored", "--split", "test", "test.run")
    assert result["queries"] == len(split["test"]) and result["missing"] == 0
    assert result["measures"]["MRR"] == pytest.approx(0.5)
    # The collection's own scoring, from the entry its manifest records.
    assert result["dataset"] == "scored" and list(result["measures"]) == ["MAP", "MRR", "R@5"]
    assert not (root / "cache").exists()


def test_score_with_qrels_counts_every_judged_query_unless_told_the_run_s(prepared, capsys):
    root, split = prepared
    every = score_json(capsys, "--qrels", "results/data/scored/qrels.txt", "test.run")
    assert every["queries"] == 30 and every["missing"] == 30 - len(split["test"])
    own = score_json(
        capsys, "--qrels", "results/data/scored/qrels.txt", "--queries-from-run", "test.run"
    )
    assert own["queries"] == len(split["test"]) and own["split"] == "run queries"
    assert own["measures"]["MRR"] == pytest.approx(0.5)
    assert own["measures"]["MAP"] > every["measures"]["MAP"]


def test_score_errors_are_one_line(prepared, capsys):
    code = main(
        ["score", "--qrels", "results/data/scored/qrels.txt", "--split", "test", "test.run"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        code == 2 and len(err) == 1 and "--split with --qrels needs the split's queries" in err[0]
    )
    code = main(["score", "--prepared", "nowhere", "test.run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        code == 2
        and len(err) == 1
        and "--prepared nowhere: not a prepared dataset folder" in err[0]
    )
    code = main(["score", "test.run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "give --dataset and --split" in err[0]


def test_the_entry_s_protocol_is_the_dataset_s_and_protocol_name_overrides_it(tmp_path):
    entry = {"queries": "q.tsv", "passages": "p.jsonl", "qrels": "r.txt"}
    entry["protocol"] = {"depth": 30, "folds": 3, "relevance_threshold": 2}
    path = tmp_path / "layers.yaml"
    config = {"datasets": ["layered"], "local": {"layered": entry}}
    config["protocol"] = {"layered": {"folds": 4}}
    path.write_text(yaml.safe_dump(config))
    full = with_defaults(load_params([path]))
    protocol = resolve_protocol(full, "layered")
    assert (protocol["depth"], protocol["folds"], protocol["split"]) == (30, 4, "cv")
    # The scoring's relevance follows the protocol's threshold unless the entry sets its own.
    assert resolve_scoring(full, "layered").relevance == 2
    config["local"]["layered"]["protocol"]["folds"] = 1
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"local\.layered\.protocol\.folds"):
        load_params([path])


def test_an_empty_or_missing_file_is_named(tmp_path):
    (tmp_path / "queries.tsv").write_text("\n")
    with pytest.raises(FormatError, match=r"queries.tsv: no queries in the file"):
        read_local_queries(tmp_path / "queries.tsv")
    with pytest.raises(FormatError, match=r"nowhere.jsonl: no such passages file"):
        read_local_passages(tmp_path / "nowhere.jsonl")


def test_a_first_stage_run_listing_a_pair_twice_names_its_line(tmp_path):
    run = tmp_path / "bm25.run"
    run.write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 d1 2 1.0 bm25\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bm25.run:2: query q1 lists passage d1 a second time"):
        read_local_run(run, {"q1": "?"}, {"d1": "."})
