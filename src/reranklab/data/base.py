"""What a dataset module declares: its raw files (as data), its protocol and its parser.

Each dataset lives in one module of :mod:`reranklab.data` and registers one :class:`Dataset`.
``prepare`` turns the raw files into the canonical form (see :mod:`reranklab.io`):

- ``corpus.parquet`` (pid, text), ``queries.tsv`` (qid, text), ``qrels.txt`` (integer grades);
- ``split.json``: the dataset's predefined split ``{"train": [...], "dev": [...], "test": [...]}``
  or ``null`` when it has none;
- ``pool.run``: the dataset's own candidate lists as a TREC run (empty when it has none);
- ``stats.json``: counts, for the log and ``reranklab datasets``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reranklab.errors import ConfigError
from reranklab.evaluation.protocol import Scoring, default_scoring
from reranklab.io import Qrels, Run, write_corpus, write_json, write_qrels, write_queries, write_run
from reranklab.settings.base import DatasetOptions, NoOptions
from reranklab.settings.errors import config_error
from reranklab.settings.protocol import (
    Protocol,  # declared with the settings (types, ranges, texts)
)

__all__ = ["Dataset", "Prepared", "Protocol", "RawFile"]


@dataclass(frozen=True)
class RawFile:
    """One raw file of a dataset, as it is stored in ``raw/`` and in the mirror.

    Args:
        name: file name in ``raw/`` and in the mirror folder ``<mirror>/<dataset.mirror_dir>/``.
        url: canonical URL, of the file itself or of an archive that holds it (``member``);
            ``package:<resource>`` for files shipped inside reranklab.
        sha256: checksum of the file itself (not of the archive), when known.
        size: size in bytes of the file itself, when known.
        member: path of the file inside the archive at ``url`` (zip, tar.gz, tar.bz2), if any.
        archive_size: size in bytes of the archive at ``url``, when known.
        archive_sha256: checksum of the archive at ``url``, when known.
        manual: the licence requires a manual step; this text says what to do.
        md5: MD5 of the file itself, where only that is published (checked like ``sha256``).
        archive_md5: MD5 of the archive at ``url``, where only that is published.
    """

    name: str
    url: str | None
    sha256: str | None = None
    size: int | None = None
    member: str | None = None
    archive_size: int | None = None
    archive_sha256: str | None = None
    manual: str | None = None
    md5: str | None = None
    archive_md5: str | None = None


@dataclass
class Prepared:
    """The canonical form of a dataset, in memory."""

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: Qrels
    split: dict[str, list[str]] | None = None
    pool: Run | None = None
    extra_stats: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "passages": len(self.corpus),
            "queries": len(self.queries),
            "judged_queries": len(self.qrels),
            "judgements": sum(len(v) for v in self.qrels.values()),
        }
        if self.split is not None:
            stats["split"] = {name: len(qids) for name, qids in self.split.items()}
        if self.pool is not None:
            stats["pool_pairs"] = sum(len(v) for v in self.pool.values())
        stats.update(self.extra_stats)
        return stats

    def write(self, out_dir: str | Path) -> dict[str, Any]:
        """Write the canonical files into ``out_dir`` (each atomically); returns the stats."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_corpus(out / "corpus.parquet", self.corpus)
        write_queries(out / "queries.tsv", self.queries)
        write_qrels(out / "qrels.txt", self.qrels)
        write_json(out / "split.json", self.split)
        write_run(out / "pool.run", self.pool or {}, tag="pool")
        stats = self.stats()
        write_json(out / "stats.json", stats)
        return stats


class Dataset(ABC):
    """A registered dataset: raw files as data, a protocol, and a parser to canonical form."""

    name: str
    title: str
    source: str  # where the data comes from (paper / site), for `reranklab datasets`
    licence: str
    citation: str
    files: tuple[RawFile, ...]
    protocol: Protocol
    mirror_dir: str | None = None  # folder name in the mirror; defaults to ``name``
    # The dataset's own options (protocol.<name>.options), typed: validated with the config.
    options_model: type[DatasetOptions] = NoOptions
    # Named scoring protocols, the official one first; none declared = the papers' default
    # (queries with a relevant passage, trec_eval measures at the relevance threshold).
    scorings: tuple[Scoring, ...] = ()

    @property
    def mirror_folder(self) -> str:
        return self.mirror_dir or self.name

    @property
    def label(self) -> str:
        """How messages call the dataset: its title up to the colon (``nfL6``, ``WikiQA``)."""
        return self.title.split(":")[0]

    def scoring_names(self) -> list[str]:
        """The names of its scoring protocols, the official one first."""
        return [s.name for s in self.scorings] or [
            default_scoring(self.protocol.relevance_threshold).name
        ]

    def read_options(self, options: dict[str, Any] | None = None) -> Any:
        """``options`` over the protocol's, typed by :attr:`options_model`.

        Raises:
            ConfigError: an unknown option or a wrong value (``protocol.<name>.options.<key>``).

        Example:
            >>> get_dataset("insuranceqa").read_options({"pool_size": 500}).pool_size  # doctest: +SKIP
            500
        """
        merged = {**self.protocol.options, **(options or {})}
        try:
            return self.options_model.model_validate(merged, strict=True)
        except ValidationError as exc:
            where = ("protocol", self.name, "options")
            raise config_error(
                exc, self.options_model, where=where, labels={self.name: self.label}
            ) from None

    def scoring(self, name: str | None = None, relevance: int | None = None) -> Scoring:
        """The scoring protocol called ``name`` (default: the official one).

        Args:
            name: a name from :attr:`scorings`; ``None`` = ``protocol.scoring`` or the first.
            relevance: for a dataset without declared scorings, the relevance level of the
                default one (default: ``protocol.relevance_threshold``).

        Raises:
            ConfigError: ``name`` is not one of the dataset's scorings (they are listed).
        """
        declared = self.scorings or (
            default_scoring(self.protocol.relevance_threshold if relevance is None else relevance),
        )
        wanted = name or self.protocol.scoring or declared[0].name
        for scoring in declared:
            if scoring.name == wanted:
                return scoring
        known = ", ".join(s.name for s in declared)
        raise ConfigError(
            f"protocol.{self.name}.scoring: {wanted!r} is not a scoring of {self.name} (known: {known})"
        )

    @abstractmethod
    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the raw files in ``raw_dir``; malformed input raises FormatError(file, line)."""

    # -- what one split needs (``reranklab score``, option-aware downloads) ----------------------

    def split_names(self) -> tuple[str, ...]:
        """The splits :meth:`split_judgements` takes: ``train``, ``dev``, ``test`` for a
        predefined split, and ``all`` (every query of the dataset) for any dataset.

        Example:
            >>> get_dataset("wikiqa").split_names()  # doctest: +SKIP
            ('train', 'dev', 'test', 'all')
        """
        return (
            ("train", "dev", "test", "all")
            if getattr(self.protocol, "split", None) == "predefined"
            else ("all",)
        )

    def check_splits(self, splits: Collection[str]) -> None:
        """ConfigError naming the splits of ``splits`` that this dataset does not have.

        Example:
            >>> get_dataset("wikiqa").check_splits(["test"])  # doctest: +SKIP
        """
        unknown = [s for s in splits if s not in self.split_names()]
        if unknown:
            raise ConfigError(
                f"{self.name} has no split {', '.join(map(repr, unknown))} (its splits: {', '.join(self.split_names())})"
            )

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """The raw files that ``options`` and ``splits`` need (default: every file in :attr:`files`).

        Args:
            options: the dataset's options (merged over ``protocol.options``); a dataset whose
                options choose between files (TrecQA's ``train``) fetches only the chosen ones.
            splits: ``None`` = what :meth:`prepare` reads; else only what scoring these splits
                needs (their queries and judgements: no collection), see :meth:`split_judgements`.

        Raises:
            ConfigError: an unknown split or option value.

        Example:
            >>> [f.name for f in get_dataset("wikiqa").raw_files({}, ["test"])]  # doctest: +SKIP
            ['WikiQA-test.tsv']
        """
        if splits is not None:
            self.check_splits(splits)
        return self.files

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """The queries of ``split`` (in file order) and their judgements, read from ``raw_dir``.

        This default parses the whole dataset (:meth:`parse`); datasets override it to read only
        the split's files (the ones :meth:`raw_files` names for it).

        Args:
            raw_dir: folder holding at least ``raw_files(options, [split])``.
            split: one of :meth:`split_names`.
            options: the dataset's options, merged over ``protocol.options``.

        Returns:
            ``(qids, qrels)``: ``qrels`` holds the judged queries of ``qids`` only.

        Raises:
            ConfigError: an unknown split, or a split without queries.
            DownloadError, FormatError: a missing or malformed raw file.

        Example:
            >>> qids, qrels = get_dataset("wikiqa").split_judgements("raw/wikiqa", "test")  # doctest: +SKIP
            >>> len(qids)  # doctest: +SKIP
            633
        """
        self.check_splits([split])
        prepared = self.parse(Path(raw_dir), {**self.protocol.options, **(options or {})})
        return self._split_of(prepared.split, prepared.qrels, split, list(prepared.queries))

    def _split_of(
        self,
        split_ids: dict[str, list[str]] | None,
        qrels: Qrels,
        split: str,
        every_query: list[str] | None = None,
    ) -> tuple[list[str], Qrels]:
        """``(qids, qrels)`` of ``split`` from a parsed split (helper of :meth:`split_judgements`).

        ``all`` is every query: the splits' queries in order, or ``every_query`` (default: the
        judged ones) where the dataset has no predefined split.

        Raises:
            ConfigError: the split has no queries.
        """
        if split == "all":
            qids = (
                [q for ids in split_ids.values() for q in ids]
                if split_ids
                else list(every_query or qrels)
            )
        else:
            qids = list((split_ids or {}).get(split) or [])
        if not qids:
            raise ConfigError(f"the {split} split of {self.name} has no queries")
        return qids, {qid: qrels[qid] for qid in qids if qid in qrels}

    def run_aliases(
        self, raw_dir: str | Path, split: str
    ) -> dict[str, tuple[str, dict[str, str]]] | None:
        """Another numbering that published runs of ``split`` use, or ``None`` (the default).

        Returns:
            ``{alias qid: (qid, {alias pid: pid})}``, e.g. WikiQA's ``.ref`` numbering
            (``"1"`` -> ``("Q0", {"0": "D0-0", ...})``); ``reranklab score`` maps a run written
            entirely in it to the canonical ids.
        """
        return None

    def prepare(
        self, raw_dir: str | Path, out_dir: str | Path, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        merged = {**self.protocol.options, **(options or {})}
        return self.parse(Path(raw_dir), merged).write(out_dir)
