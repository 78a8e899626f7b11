"""Collections of one's own: a dataset declared by one ``local.<name>`` entry of the config.

A study brings its own queries, passages and qrels (and optionally a predefined split and a
first-stage run) without writing a dataset module::

    datasets: [faq]
    local:
      faq:
        queries: data/faq/queries.tsv          # id<TAB>text, or JSONL {id|_id|qid, text|query}
        passages: data/faq/passages.jsonl      # Pyserini/BEIR JSONL, TSV or Parquet; .gz allowed
        qrels: data/faq/qrels.txt              # TREC qrels
        protocol: {depth: 50, folds: 5}        # any protocol key, as a dataset module declares it
        scoring: {queries: relevant, measures: [P@1, MAP, nDCG@10]}

Paths are relative to the working directory (the study folder Snakemake runs in). The entry is
checked with the config (:class:`~reranklab.settings.local.LocalCollection`); the files are
checked when the plan is made (each must exist) and read by the ``prepare`` step, whose every
error names the file, the line and what is wrong (:mod:`reranklab.data._local_files`). The
``download`` step copies nothing: it records each file's size and SHA-256 in the manifest.

Its protocol follows the files: the first stage is the given run (``pool``) or BM25 top 100,
the split the given one (``predefined``) or 5-fold cross-validation; the entry's ``protocol``
sets any other key (depth, folds, negatives, ...), and ``protocol.<name>`` overrides it as for
any dataset (e.g. from another config file). Its one scoring protocol, ``default``, is the
entry's ``scoring``.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from reranklab.data._local_files import (
    read_local_passages,
    read_local_qrels,
    read_local_queries,
    read_local_run,
    read_local_split,
)
from reranklab.data.base import Dataset, Prepared, Protocol
from reranklab.errors import ConfigError
from reranklab.evaluation.measures import BY_NAME, Measure
from reranklab.evaluation.protocol import Scoring
from reranklab.io import write_json
from reranklab.settings.errors import config_error
from reranklab.settings.local import LocalCollection
from reranklab.settings.protocol import Measure as HeadlineMeasure

SCORING = "default"
FILE_KEYS = ("queries", "passages", "qrels", "splits", "first_stage_run")
# trec_eval's measure at a cut-off k, by the prefix of its display name (MRR@k: a cut run).
_AT_K = {"P": "P_{k}", "nDCG": "ndcg_cut_{k}", "R": "recall_{k}", "MAP": "map_cut_{k}"}


def local_measure(name: str) -> Measure:
    """The measure a display name of ``local.<name>.scoring.measures`` means.

    Example:
        >>> local_measure("nDCG@20").trec_name, local_measure("MRR@100").cutoff
        ('ndcg_cut_20', 100)
        >>> local_measure("MAP") is BY_NAME["MAP"]
        True
    """
    if name in BY_NAME:
        return BY_NAME[name]
    prefix, _, k = name.partition("@")
    if not k.isdigit() or int(k) < 1 or prefix not in (*_AT_K, "MRR"):
        raise ConfigError(
            f"unknown measure {name!r}: MAP, MRR, or P, nDCG, R, MAP, MRR at a cut-off (P@5, nDCG@20)"
        )
    if prefix == "MRR":
        return Measure(name, "recip_rank", cutoff=int(k), description=f"MRR within the top {k}")
    return Measure(name, _AT_K[prefix].format(k=k), description=f"trec_eval {prefix} at {k}")


class LocalDataset(Dataset):
    """A collection of one's own, from its ``local.<name>`` entry (see the module docstring).

    Args:
        name: the name ``datasets`` gives it.
        entry: the entry, as the config holds it or checked.

    Raises:
        ConfigError: a wrong entry (the key ``local.<name>.<key>``).

    Example:
        >>> faq = LocalDataset("faq", {"queries": "q.tsv", "passages": "p.tsv", "qrels": "r.txt"})
        >>> faq.protocol.first_stage, faq.protocol.split, faq.scoring().relevance
        ('bm25', 'cv', 1)
    """

    licence = "the collection's own"
    files = ()

    def __init__(self, name: str, entry: LocalCollection | Mapping[str, Any]) -> None:
        if not isinstance(entry, LocalCollection):
            try:
                entry = LocalCollection.model_validate(entry, strict=True)
            except ValidationError as exc:
                raise config_error(exc, LocalCollection, where=("local", name)) from None
        self.name = name
        self.entry = entry
        self.title = entry.title or name
        self.source = f"local files ({entry.queries}, {entry.passages}, {entry.qrels})"
        self.citation = f"{self.title}: a collection of one's own (local.{name})"
        measures = entry.scoring.measures
        for measure in measures:
            local_measure(measure)
        # What the files give, then the entry's own protocol (its non-null keys).
        given = {
            key: value
            for key, value in entry.protocol.model_dump().items()
            if value is not None and key != "options"
        }
        first_stage = given.get("first_stage") or ("pool" if entry.first_stage_run else "bm25")
        # The headline measures a dataset protocol can name, in the scoring's order.
        headline = [m for m in measures if m in get_args(HeadlineMeasure)]
        self.protocol = Protocol(
            **{
                "first_stage": first_stage,
                "depth": None if first_stage == "pool" else 100,
                "split": "predefined" if entry.splits else "cv",
                "metrics": tuple(headline) or ("P@1", "MAP", "MRR"),
                **given,
            }
        )

    def paths(self) -> dict[str, Path]:
        """``{key: path}`` of the entry's files (relative ones against the working directory)."""
        given = {key: getattr(self.entry, key) for key in FILE_KEYS}
        return {key: Path(os.path.expanduser(p)) for key, p in given.items() if p}

    def job_fields(self) -> dict[str, Any]:
        """What the ``download`` and ``prepare`` jobs are given: the entry, and each file's size
        and modification time, so that Snakemake re-runs them when a file changes.

        Raises:
            ConfigError: a file does not exist (naming its key and the working directory).
        """
        stamps = {}
        for key, path in self.paths().items():
            try:
                stat = path.stat()
            except OSError:
                raise ConfigError(
                    f"local.{self.name}.{key}: no such file {path} (a relative path is relative to the working directory, {Path.cwd()})"
                ) from None
            stamps[key] = f"{stat.st_size}:{stat.st_mtime_ns}"
        return {"local": self.entry.model_dump(mode="json"), "stamps": stamps}

    def scoring_names(self) -> list[str]:
        return [SCORING]

    def scoring(self, name: str | None = None, relevance: int | None = None) -> Scoring:
        """The collection's one scoring protocol, ``default`` (its entry's ``scoring``).

        Raises:
            ConfigError: another name.
        """
        wanted = name or self.protocol.scoring or SCORING
        if wanted != SCORING:
            raise ConfigError(
                f"protocol.{self.name}.scoring: {wanted!r} is not a scoring of {self.name} (known: {SCORING})"
            )
        given = self.entry.scoring
        level = given.relevance or (
            self.protocol.relevance_threshold if relevance is None else relevance
        )
        return Scoring(
            SCORING,
            f"{given.queries} queries, relevant from grade {level}; trec_eval measures",
            measures=tuple(local_measure(m) for m in given.measures),
            queries=given.queries,
            relevance=int(level),
            missing=given.missing,
            source=f"local.{self.name}.scoring (trec_eval by pytrec_eval)",
        )

    def fetch(self, raw_dir: str | Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record the files in ``raw_dir/manifest.json`` (size, SHA-256); nothing is copied.

        Raises:
            ConfigError: a file does not exist.
        """
        files = []
        for key, path in self.paths().items():
            if not path.is_file():
                raise ConfigError(f"local.{self.name}.{key}: no such file {path}")
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            files.append(
                {
                    "name": key,
                    "path": str(path),
                    "size": path.stat().st_size,
                    "sha256": digest.hexdigest(),
                    "source": "local",
                }
            )
        manifest = {
            "dataset": self.name,
            "source": "local",
            # The entry itself: `reranklab score --prepared` scores with its scoring.
            "entry": self.entry.model_dump(mode="json"),
            "fetched": [f"{f['name']} {f['path']}" for f in files],
            "files": files,
        }
        Path(raw_dir).mkdir(parents=True, exist_ok=True)
        write_json(Path(raw_dir) / "manifest.json", manifest)
        return manifest

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Read and check the entry's files (``raw_dir`` holds only the manifest).

        Raises:
            FormatError: a malformed file (its path, line and what is wrong).
        """
        self.read_options(options)
        paths = self.paths()
        queries = read_local_queries(paths["queries"])
        corpus = read_local_passages(paths["passages"])
        qrels = read_local_qrels(paths["qrels"], queries, corpus)
        split = read_local_split(paths["splits"], queries) if "splits" in paths else None
        pool = (
            read_local_run(paths["first_stage_run"], queries, corpus)
            if "first_stage_run" in paths
            else None
        )
        grades = Counter(grade for judged in qrels.values() for grade in judged.values())
        return Prepared(
            corpus=corpus,
            queries=queries,
            qrels=qrels,
            split=split,
            pool=pool,
            extra_stats={
                "files": {key: str(path) for key, path in paths.items()},
                "judgements_by_grade": {str(g): grades[g] for g in sorted(grades)},
            },
        )
