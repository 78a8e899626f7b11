"""``reranklab score``: score run files of any origin on one split of a dataset, from any folder.

It needs no workflow and no ``params.yaml``: the raw files that the split needs (its queries and
judgements, never a collection) are fetched into a cache through the mirror or the download,
the split's qrels are read from them (:meth:`~reranklab.data.base.Dataset.split_judgements`),
and each run is evaluated under a scoring protocol of the dataset (default: the official one)
by :func:`~reranklab.evaluation.evaluate.evaluate_run`.

Run formats, told apart by their columns:

- a TREC run, ``qid Q0 pid rank score tag`` (6 fields), as ``trec_eval`` reads it; the
  ``emnlp-table/*.rank`` runs of the WikiQA release are such files;
- a SemEval 2016/2017 Task 3 prediction file, ``qid aid rank score label`` (5 fields, label
  ``true``/``false``), as the task's scorer reads it: ranked by score, the label unused.

Rank columns are ignored: passages are ranked by score, ties broken by a seeded hash of
(qid, pid) (``--tie-seed``), never by file order. Only to reproduce a figure an official tool
computed on a run *with ties* does ``--ties official`` (or ``trec_eval`` / ``file``) apply that
tool's order instead (:mod:`reranklab.evaluation.ties`); the output names the rule and the ties. A run may also use another numbering the
dataset knows (:meth:`~reranklab.data.base.Dataset.run_aliases`: WikiQA's ``.ref`` numbering,
questions 1..N by their position in the split's file, sentences 0..k-1 within the question);
a run written wholly in it is mapped to the canonical ids.

A study's own judgements need no download at all (:func:`score_with_qrels`): ``--qrels FILE``
scores against a TREC qrels file (a study's ``results/data/<dataset>/qrels.txt``, or any), and
``--prepared results/data/<dataset>`` against a prepared dataset folder, its ``split.json``
giving the queries of ``--split``; ``--queries-from-run`` counts only the queries a run ranks
(as ``trec_eval`` without ``-c``). The scoring is then the named dataset's (``--dataset``, or the
prepared folder's dataset: a registered one, or the collection of one's own its manifest
records), else the re-ranking papers' default.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reranklab.data.base import Dataset
from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation.evaluate import evaluate_run
from reranklab.evaluation.protocol import DROP_REASONS, Scoring
from reranklab.evaluation.ties import RULES, official_rule, untie
from reranklab.io import Qrels, Run, read_json, read_qrels, read_queries
from reranklab.io.cache_dir import cache_root as shared_cache_root
from reranklab.io.text import text_lines
from reranklab.io.trec import EMPTY_RUN, TIE_SEED, add_score

log = logging.getLogger(__name__)

TREC, SEMEVAL = "trec", "semeval"
_FIELDS = {TREC: "qid Q0 pid rank score tag", SEMEVAL: "qid aid rank score label"}
_SEMEVAL_LABELS = ("true", "false")
Aliases = dict[str, tuple[str, dict[str, str]]]


# -- run files ---------------------------------------------------------------------------------


def run_format(path: str | os.PathLike[str], fields: list[str], lineno: int) -> str:
    """The format of a run line, told by its columns: ``trec`` or ``semeval``.

    Raises:
        FormatError: (path, line) when the line is neither.

    Example:
        >>> run_format("run.txt", "Q1_R1 Q1_R1_C1 0 0.5 true".split(), 1)
        'semeval'
    """
    if len(fields) == 6:
        return TREC
    if len(fields) == 5 and fields[4].lower() in _SEMEVAL_LABELS:
        return SEMEVAL
    raise FormatError(
        path,
        lineno,
        f"expected a TREC run line ({_FIELDS[TREC]}: 6 fields) or a SemEval prediction line "
        f"({_FIELDS[SEMEVAL]}: 5 fields, label true/false), got {len(fields)} field(s): {' '.join(fields)[:80]!r}",
    )


def read_any_run(path: str | os.PathLike[str]) -> tuple[Run, str]:
    """Read a TREC run or a SemEval prediction file (see the module docstring).

    Every line must have the format of the first; a (qid, pid) pair may appear once.

    Returns:
        ``(run, format)`` with ``run = {qid: {pid: score}}``.

    Raises:
        FormatError: (path, line) for a line of neither format or of another format than the
            first, a score that is not a finite number, or a repeated (qid, pid) pair.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "dev.pred"
        >>> _ = path.write_text("Q1_R1 Q1_R1_C1 0 0.9 true\\nQ1_R1 Q1_R1_C2 0 0.2 false\\n")
        >>> read_any_run(path)
        ({'Q1_R1': {'Q1_R1_C1': 0.9, 'Q1_R1_C2': 0.2}}, 'semeval')
    """
    run: Run = {}
    kind: str | None = None
    for lineno, line in text_lines(path):
        fields = line.split()
        this = run_format(path, fields, lineno)
        if kind is None:
            kind = this
        elif this != kind:
            raise FormatError(
                path,
                lineno,
                f"a {this} line in a {kind} file (its first line is {kind}: {_FIELDS[kind]})",
            )
        qid, pid, score = (
            (fields[0], fields[2], fields[4]) if kind == TREC else (fields[0], fields[1], fields[3])
        )
        try:
            value = float(score)
        except ValueError:
            raise FormatError(path, lineno, f"score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise FormatError(path, lineno, f"score {score!r} is not a finite number")
        add_score(run, path, lineno, qid, pid, value)  # a pair listed twice: as `evaluate`
    if kind is None:
        raise FormatError(path, None, EMPTY_RUN)
    return run, kind


def canonical_ids(
    run: Run, path: str | os.PathLike[str], qids: Sequence[str], aliases: Aliases | None, what: str
) -> tuple[Run, str, int]:
    """``run`` with the split's canonical ids, mapping it from the dataset's other numbering.

    Args:
        run: the run as read.
        path: its file, for messages.
        qids: the split's queries.
        aliases: the dataset's other numbering of the split (:meth:`Dataset.run_aliases`).
        what: ``"<dataset> <split>"``, for messages.

    Returns:
        ``(run, numbering, ignored)``: numbering ``canonical`` or ``aliases``; ``ignored`` counts
        the run's queries that are not queries of the split (left out of the scoring).

    Raises:
        FormatError: the run shares no query with the split, mixes the two numberings, or
            names a question or sentence number that does not exist.

    Example:
        >>> canonical_ids({"1": {"0": 2.0}}, "r", ["Q0"], {"1": ("Q0", {"0": "D0-0"})}, "wikiqa test")
        ({'Q0': {'D0-0': 2.0}}, 'aliases', 0)
    """
    known = set(qids)
    outside = [qid for qid in run if qid not in known]
    if not outside:
        return run, "canonical", 0
    if aliases:
        if len(outside) == len(run) and all(qid in aliases for qid in run):
            return _map_aliases(run, path, aliases, what), "aliases", 0
        # Numbers that are not canonical ids: the other numbering, but not wholly or not fitting it.
        numeric = [qid for qid in outside if qid.isdigit()]
        unfit = [qid for qid in numeric if qid not in aliases]
        if unfit:
            raise FormatError(
                path,
                None,
                f"query ids {_preview(unfit)} fit neither the ids of {what} (e.g. {_preview(qids, 2)}) "
                f"nor its .ref numbering (1..{len(aliases)})",
            )
        if numeric:
            others = [qid for qid in run if qid not in aliases]
            raise FormatError(
                path,
                None,
                f"the run mixes .ref numbers ({_preview(numeric)}) with other ids ({_preview(others)}); "
                f"write it wholly in the ids of {what} or wholly in its .ref numbering",
            )
    if len(outside) == len(run):
        raise FormatError(
            path,
            None,
            f"none of the run's {len(run)} queries ({_preview(outside)}) is a query of {what} (e.g. {_preview(qids, 2)})",
        )
    return run, "canonical", len(outside)


def _map_aliases(run: Run, path: str | os.PathLike[str], aliases: Aliases, what: str) -> Run:
    mapped: Run = {}
    for alias, scores in run.items():
        qid, sentences = aliases[alias]
        unknown = [pid for pid in scores if pid not in sentences]
        if unknown:
            raise FormatError(
                path,
                None,
                f"question {alias} ({qid} of {what}) has sentences 0..{len(sentences) - 1}, "
                f"not {_preview(unknown)}",
            )
        mapped[qid] = {sentences[pid]: score for pid, score in scores.items()}
    return mapped


def _preview(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(map(str, list(ids)[:limit]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


# -- the split's judgements --------------------------------------------------------------------


def cache_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """Where ``reranklab score`` keeps raw files (:func:`reranklab.io.cache_dir.cache_root`);
    each dataset's files go to ``<root>/<dataset>/raw``.

    Example:
        >>> cache_root("/tmp/c")
        PosixPath('/tmp/c')
    """
    return shared_cache_root(cache)


def mirror_folder(flag: str | None) -> str | None:
    """``--mirror`` if given (a flag wins over the environment), else ``$RERANKLAB_MIRROR``, else ``None``.

    Example:
        >>> mirror_folder("~/datasets") == os.path.expanduser("~/datasets")
        True
    """
    from reranklab.data.download import MIRROR_ENV

    for value in (flag, os.environ.get(MIRROR_ENV)):
        if value is not None and value.strip():
            return os.path.expanduser(value.strip())
    return None


def fetch_split(
    dataset: Dataset,
    split: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    mirror: str | None = None,
    options: dict[str, Any] | None = None,
    progress: bool = False,
) -> Path:
    """Fetch the raw files that scoring ``split`` needs into the cache; returns their folder.

    Raises:
        ConfigError: an unknown split; DownloadError: a file could not be fetched.
    """
    from reranklab.data.download import fetch_dataset

    files = dataset.raw_files(options or {}, [split])
    raw_dir = cache_root(cache) / dataset.name / "raw"
    log.info(
        "%s %s: %s into %s (mirror: %s)",
        dataset.name,
        split,
        ", ".join(f.name for f in files) or "no file",
        raw_dir,
        mirror or "none",
    )
    if files:
        fetch_dataset(dataset, raw_dir, mirror, files=files, progress=progress)
    return raw_dir


def resolve_scoring(dataset: Dataset, name: str | None) -> Scoring:
    """The scoring called ``name`` (default: the dataset's official one).

    Raises:
        ConfigError: naming ``--protocol`` and the dataset's scorings.
    """
    try:
        return dataset.scoring(name)
    except ConfigError:
        known = ", ".join(s.name for s in dataset.scorings) or dataset.scoring().name
        raise ConfigError(
            f"--protocol {name!r}: {dataset.name} has no such scoring (its scorings: {known})"
        ) from None


# -- scoring -----------------------------------------------------------------------------------


def score_runs(
    dataset_name: str,
    split: str,
    runs: Sequence[str | os.PathLike[str]],
    *,
    protocol: str | None = None,
    mirror: str | None = None,
    cache: str | os.PathLike[str] | None = None,
    tie_seed: int = TIE_SEED,
    ties: str = "hash",
    progress: bool = False,
    queries_from_run: bool = False,
) -> list[dict[str, Any]]:
    """Score each run file on ``split`` of ``dataset_name`` (see the module docstring).

    Args:
        dataset_name: a registered dataset.
        split: one of its splits (``Dataset.split_names()``).
        queries_from_run: count only the split's queries the run ranks (trec_eval without
            ``-c``), not every judged query of the split.
        runs: run files (TREC or SemEval format).
        protocol: a scoring name of the dataset; ``None`` = the official one.
        mirror: local mirror folder, or ``None`` to download.
        cache: cache root (see :func:`cache_root`).
        tie_seed: seed of the tie-breaking hash.
        ties: ``hash`` (reranklab's rule), or to reproduce an official tool's figure on a run
            with ties: ``official`` (the dataset's tool's rule), ``trec_eval`` or ``file``.
        progress: show download progress bars.

    Returns:
        One result per run: ``{"run", "dataset", "split", "scoring", "format", "ids",
        "queries", "dropped", "missing", "ignored", "ties", "measures"}``: ``queries`` counted,
        ``dropped`` by reason, ``missing`` = counted queries without candidates in the run,
        ``ignored`` = run queries outside the split; ``measures`` maps the scoring's display
        names to full-precision means (``None`` when no query counts).

    Raises:
        ConfigError: an unknown dataset, split or protocol; FormatError: a malformed run;
        DownloadError: a raw file could not be fetched.

    Example:
        >>> import tempfile
        >>> run = Path(tempfile.mkdtemp()) / "my.run"
        >>> _ = run.write_text("S001 Q0 P0630 1 2.0 mine\\nS001 Q0 P0681 2 1.0 mine\\n")
        >>> result = score_runs("sample", "all", [run], cache=tempfile.mkdtemp())[0]  # the shipped dataset
        >>> result["queries"], result["measures"]["MRR"]  # one of the 100 questions answered first
        (100, 0.01)
    """
    from reranklab.data import get_dataset

    dataset = get_dataset(dataset_name)
    dataset.check_splits([split])
    scoring = resolve_scoring(dataset, protocol)
    if ties not in RULES:
        raise ConfigError(f"--ties {ties!r} is not one of {list(RULES)}")
    rule = official_rule(dataset.name) if ties == "official" else ties
    # Read the runs first: a malformed one fails before anything is fetched.
    read = [(str(path), *read_any_run(path)) for path in runs]
    raw_dir = fetch_split(dataset, split, cache=cache, mirror=mirror, progress=progress)
    qids, qrels = dataset.split_judgements(raw_dir, split)
    aliases = dataset.run_aliases(raw_dir, split)
    return [
        _score_one(
            path,
            run,
            kind,
            dataset.name,
            split,
            qids,
            qrels,
            aliases,
            scoring,
            tie_seed,
            rule,
            queries_from_run,
        )
        for path, run, kind in read
    ]


# -- a study's own judgements: no download -----------------------------------------------------

RUN_QUERIES = "run queries"


def prepared_judgements(folder: str | os.PathLike[str], split: str) -> tuple[list[str], Qrels]:
    """The queries of ``split`` and the qrels of a prepared dataset folder (``results/data/<name>``).

    Args:
        folder: holds ``qrels.txt``, ``queries.tsv`` and ``split.json`` (the prepare step's).
        split: ``train``, ``dev`` or ``test`` of its predefined split, or ``all`` (every query).

    Raises:
        ConfigError: the folder is not a prepared dataset, or has no such split.

    Example:
        >>> qids, qrels = prepared_judgements("results/data/insuranceqa", "test")  # doctest: +SKIP
        >>> len(qids)  # doctest: +SKIP
        100
    """
    folder = Path(folder)
    missing = [n for n in ("qrels.txt", "queries.tsv", "split.json") if not (folder / n).is_file()]
    if missing:
        raise ConfigError(
            f"--prepared {folder}: not a prepared dataset folder (no {', '.join(missing)}; the prepare step writes results/data/<dataset>/)"
        )
    qrels = read_qrels(folder / "qrels.txt")
    if split == "all":
        return list(read_queries(folder / "queries.tsv")), qrels
    splits = read_json(folder / "split.json") or {}
    if split not in splits:
        have = ", ".join(splits) or "none: its folds are cross-validation folds, score --split all"
        raise ConfigError(f"--prepared {folder}: no {split} split (its splits: {have})")
    return [str(q) for q in splits[split]], qrels


def prepared_dataset(folder: str | os.PathLike[str]) -> Dataset | None:
    """The dataset a prepared folder (``results/data/<name>``) was made from, for its scoring:
    a registered dataset of that name, or the collection of one's own its manifest records
    (``local.<name>``); ``None`` when neither.

    Example:
        >>> prepared_dataset("results/data/wikiqa").name
        'wikiqa'
    """
    from reranklab.data import dataset_names, get_dataset

    folder = Path(folder)
    if folder.name in dataset_names():
        return get_dataset(folder.name)
    manifest = folder / "raw" / "manifest.json"
    if manifest.is_file():
        recorded = read_json(manifest)
        if isinstance(recorded, dict) and recorded.get("source") == "local" and "entry" in recorded:
            return get_dataset(str(recorded["dataset"]), local=recorded["entry"])
    return None


def score_with_qrels(
    runs: Sequence[str | os.PathLike[str]],
    qrels: Qrels,
    qids: Sequence[str] | None,
    scoring: Scoring,
    *,
    name: str,
    split: str,
    tie_seed: int = TIE_SEED,
    ties: str = "hash",
) -> list[dict[str, Any]]:
    """Score each run file against ``qrels`` (no download): what :func:`score_runs` returns.

    Args:
        runs: run files (TREC or SemEval format).
        qrels: the judgements (e.g. ``read_qrels("results/data/wikiqa/qrels.txt")``).
        qids: the queries that may count; ``None`` = the queries each run ranks.
        scoring: which of them count, and the measures.
        name: what the results call the judgements (a dataset name or the qrels file).
        split: what the results call the queries (``test``, ``all``, ``run queries``).
        tie_seed: seed of the tie-breaking hash.
        ties: ``hash``, ``trec_eval`` or ``file`` (``official`` needs a dataset: resolved before).

    Raises:
        FormatError: a malformed run, or one that shares no query with ``qids``.

    Example:
        >>> import tempfile
        >>> run = Path(tempfile.mkdtemp()) / "my.run"
        >>> _ = run.write_text("q1 Q0 d2 1 2.0 mine\\nq1 Q0 d1 2 1.0 mine\\n")
        >>> qrels = {"q1": {"d1": 1}, "q2": {"d3": 1}}
        >>> from reranklab.evaluation.protocol import default_scoring
        >>> result = score_with_qrels([run], qrels, None, default_scoring(), name="qrels", split=RUN_QUERIES)[0]
        >>> result["queries"], result["measures"]["MAP"]
        (1, 0.5)
    """
    if ties not in RULES or ties == "official":
        raise ConfigError(f"--ties {ties!r}: with --qrels give hash, trec_eval or file")
    results = []
    for path in runs:
        run, kind = read_any_run(path)
        wanted = list(run) if qids is None else list(qids)
        results.append(
            _score_one(
                str(path), run, kind, name, split, wanted, qrels, None, scoring, tie_seed, ties
            )
        )
    return results


def _score_one(
    path: str,
    run: Run,
    kind: str,
    dataset: str,
    split: str,
    qids: list[str],
    qrels: Qrels,
    aliases: Aliases | None,
    scoring: Scoring,
    tie_seed: int,
    rule: str = "hash",
    queries_from_run: bool = False,
) -> dict[str, Any]:
    # An official tool's tie order is taken on the ids as the file writes them, before mapping.
    untied = untie(run, rule) if rule != "hash" else None
    where = f"{dataset} {split}"
    run, numbering, ignored = canonical_ids(run, path, qids, aliases, where)
    if queries_from_run:  # trec_eval without -c: only the split's queries the run ranks
        qids = [qid for qid in qids if qid in run]
        split = f"{split}, {RUN_QUERIES}"
    result = evaluate_run(run, qrels, qids, scoring=scoring, tie_seed=tie_seed)
    if untied is not None:
        tied = result["ties"]
        result = evaluate_run(
            canonical_ids(untied, path, qids, aliases, where)[0], qrels, qids, scoring=scoring
        )
        result["ties"] = tied
    return {
        "run": path,
        "dataset": dataset,
        "split": split,
        "scoring": scoring.name,
        "format": kind,
        "ids": numbering,
        "queries": result["n_queries"],
        "dropped": result["dropped"],
        # Counted queries the run has no candidate for (they score 0 under `missing: zero`).
        "missing": sum(1 for qid in result["per_query"] if not run.get(qid)),
        "ignored": ignored,
        "ties": result["ties"],
        "tie_rule": rule,
        "measures": result["aggregate"],
    }


def format_text(result: dict[str, Any], scoring: Scoring | None = None) -> str:
    """One run's result as a few readable lines (measures to four decimals, as trec_eval).

    Example:
        >>> print(format_text({"run": "r", "dataset": "d", "split": "test", "scoring": "s", "format": "trec",
        ...     "ids": "canonical", "queries": 2, "dropped": {}, "ignored": 0, "ties": {"queries": 0, "passages": 0},
        ...     "measures": {"MAP": 0.5}}))
        r: d test, scoring s (trec run)
          queries counted  2
          ties             none
          MAP              0.5000
    """
    ids = ", .ref numbering mapped to canonical ids" if result["ids"] == "aliases" else ""
    lines = [
        f"{result['run']}: {result['dataset']} {result['split']}, scoring {result['scoring']} ({result['format']} run{ids})"
    ]
    if scoring is not None and scoring.description:
        lines.append(f"  ({scoring.description})")
    lines.append(f"  {'queries counted':16s} {result['queries']}")
    for reason, n in result["dropped"].items():
        lines.append(f"  {'dropped':16s} {n}: {DROP_REASONS.get(reason, reason)}")
    if result.get("missing"):
        lines.append(
            f"  {'not in the run':16s} {result['missing']} of the counted queries (they score 0;"
            " --queries-from-run counts only the run's queries)"
        )
    if result["ignored"]:
        lines.append(
            f"  {'ignored':16s} {result['ignored']} run queries that are not {result['split']} queries"
        )
    ties = result["ties"]
    rule = result.get("tie_rule", "hash")
    how = {
        "hash": "broken by a seeded hash; an official tool may order them otherwise: --ties official",
        "trec_eval": "ordered as trec_eval does: pid descending",
        "file": "kept in the run file's order, as the SemEval scorer does",
    }[rule]
    tied = (
        f"{ties['passages']} passages in {ties['queries']} queries ({how})"
        if ties["queries"]
        else "none"
    )
    lines.append(f"  {'ties':16s} {tied}")
    for name, value in result["measures"].items():
        lines.append(f"  {name:16s} {'n/a' if value is None else f'{value:.4f}'}")
    return "\n".join(lines)


# -- from Python: reranklab.evaluate ------------------------------------------------------------


def evaluate_frame(
    run: Run,
    qrels: Qrels,
    protocol: str | Scoring | None = None,
    *,
    qids: Sequence[str] | None = None,
    measures: Sequence[str] | None = None,
    relevance: int = 1,
    ties: str = "hash",
    tie_seed: int = TIE_SEED,
) -> Any:
    """Per-query values of ``run`` as a pandas frame (``reranklab.evaluate``).

    Args:
        run: ``{qid: {pid: score}}``.
        qrels: ``{qid: {pid: grade}}`` with integer grades.
        protocol: a dataset's scoring: ``"wikiqa"`` (its official one), ``"wikiqa:raw"`` (a
            named one, see ``reranklab datasets``), a :class:`Scoring`, or ``None``
            (trec_eval's: queries with a relevant passage, every measure at ``relevance``).
        qids: the queries to score (default: the run's).
        measures: without ``protocol``, the display names to compute (default: all).
        relevance: without ``protocol``, the smallest grade that counts as relevant.
        ties: ``hash`` (reranklab's seeded hash, as its studies score), ``official`` (the
            dataset's official tool's rule), ``trec_eval`` or ``file``.
        tie_seed: the seed of the hash rule.

    Returns:
        A ``DataFrame`` indexed by ``qid`` with one column per measure; ``frame.attrs`` holds
        ``aggregate`` (the means), ``scoring``, ``excluded`` and ``ties``.

    Example:
        >>> frame = evaluate_frame({"q1": {"a": 0.9, "b": 0.5}}, {"q1": {"b": 1}}, measures=["P@1", "MRR"])
        >>> frame.loc["q1"].to_dict(), frame.attrs["aggregate"]
        ({'P@1': 0.0, 'MRR': 0.5}, {'P@1': 0.0, 'MRR': 0.5})
    """
    import pandas as pd

    from reranklab.evaluation.protocol import ALL, default_scoring

    rule = ties
    if isinstance(protocol, Scoring):
        scoring = protocol
    elif protocol is None:
        scoring = default_scoring(relevance, measures or ALL)
    else:
        from reranklab.data import get_dataset

        name, _, scoring_name = str(protocol).partition(":")
        dataset = get_dataset(name)
        scoring = resolve_scoring(dataset, scoring_name or None)
        rule = official_rule(dataset.name) if ties == "official" else ties
    if rule not in RULES or rule == "official":
        raise ConfigError(
            f"ties {ties!r}: expected one of {list(RULES)} (official needs a dataset)"
        )
    scored = untie(run, rule) if rule != "hash" else run
    result = evaluate_run(scored, qrels, qids, scoring=scoring, tie_seed=tie_seed)
    frame = pd.DataFrame.from_dict(result["per_query"], orient="index", columns=result["measures"])
    frame.index.name = "qid"
    frame.attrs.update(
        aggregate=result["aggregate"],
        scoring=result["scoring"],
        excluded=result["excluded"],
        ties=result["ties"],
    )
    return frame
