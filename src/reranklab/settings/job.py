"""The typed job specs: what one Snakemake job asks of its ``reranklab <step>``.

The rules are the boundary between the study's configuration and the steps. On the Snakemake
side :mod:`reranklab.workflow.plan` builds one spec per job from the validated config; the rule
passes it as ``--spec`` (its JSON, sorted, so Snakemake's params trigger re-runs exactly the jobs
whose spec changed); the step reads it back with :meth:`JobSpec.parse`, validated again, and
works on the typed object. A spec holds only what changes a job's output: how a job runs
(device, threads, GPU slots, inference batch, checkpoints) is its :class:`RunOptions`, passed as
command-line options that no trigger sees.

One spec per kind of job:

- :class:`DatasetSpec`: ``download``, ``prepare`` (the dataset's options);
- :class:`IndexSpec`, :class:`RetrieveSpec`: the first stage;
- :class:`SplitSpec`, :class:`SampleSpec`: folds and training examples;
- :class:`ModelSpec`: ``train``, ``encode``, ``rerank`` (the cell: dataset, variant with its
  resolved training settings, max length, seed; the fingerprint, the model card and MLflow
  record it);
- :class:`ScoringSpec`: ``evaluate``, ``aggregate``;
- :class:`RecordSpec`: ``track``, ``track-seeds`` (the cell's full resolved settings);
- :class:`SummarySpec`: ``summarize``.

A spec is also what a person types to re-run one step by hand: the rule's command, as the job's
log shows it, or ``--spec @spec.json``.

Example:
    >>> spec = SplitSpec(protocol={"split": "cv", "folds": 5}, seed=42)
    >>> spec.to_json()
    '{"protocol": {"folds": 5, "split": "cv"}, "seed": 42}'
    >>> SplitSpec.parse(spec.to_json()) == spec
    True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import Self

from reranklab.errors import ReranklabError
from reranklab.settings.cell import Cell


class JobSpec(BaseModel):
    """The base of every spec: closed (an unknown key is an error), frozen, and written as
    sorted JSON without the unset optional keys (so adding an optional field re-runs nothing)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> str:
        """The spec as the rule passes it: sorted keys, ``None`` left out."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), sort_keys=True)

    @classmethod
    def parse(cls, text: str) -> Self:
        """The spec of ``--spec TEXT``: JSON, or ``@FILE`` holding it.

        Raises:
            ReranklabError: the file cannot be read, the text is not JSON, or a key is unknown,
                missing or of the wrong type (each is named).
        """
        source = "--spec"
        if text.startswith("@"):
            source = text[1:]
            try:
                text = Path(source).read_text(encoding="utf-8")
            except OSError as exc:
                raise ReranklabError(f"--spec {source}: {exc.strerror or exc}") from None
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or '(spec)'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ReranklabError(f"{source}: not a {cls.__name__} ({problems})") from None


class DatasetSpec(JobSpec):
    """``download`` and ``prepare``: the dataset's options (``protocol.<dataset>.options``);
    for a collection of one's own, its ``local.<name>`` entry and each file's size and
    modification time (``stamps``: a changed file re-runs the jobs)."""

    options: dict[str, Any] = Field(default_factory=dict)
    local: dict[str, Any] | None = None
    stamps: dict[str, str] | None = None


class IndexSpec(JobSpec):
    """``index``: the first-stage backend's settings (only the chosen backend's)."""

    retrieval: dict[str, Any]


class FirstStage(JobSpec):
    """The part of a dataset's protocol that decides its candidates."""

    first_stage: Literal["bm25", "pool"]
    depth: int | None = Field(None, ge=1)  # None: every candidate (of the pool)
    inject_relevant: bool = False
    relevance_threshold: int = 1


class RetrieveSpec(JobSpec):
    """``retrieve``: the first stage, and the backend's settings when it is BM25."""

    protocol: FirstStage
    retrieval: dict[str, Any] | None = None


class SplitSpec(JobSpec):
    """``split``: predefined or cross-validation folds, their seed, and the held-out dev share."""

    protocol: dict[Literal["split", "folds", "scored"], Any]
    seed: int
    dev_fraction: float | None = None


class SampleSpec(JobSpec):
    """``sample``: negatives per positive, the relevance threshold, and the seed of the job."""

    protocol: dict[Literal["negatives_per_positive", "relevance_threshold", "positives"], Any]
    seed: int


class ModelSpec(JobSpec):
    """``train``, ``encode`` and ``rerank``: one cell of the grid on one fold's data.

    Args:
        variant: the registered variant (an alias keeps its own name; ``base`` names its base).
        base: an alias's base variant; ``None`` for a registered variant.
        max_length: the cell's max length (tokens of a query-passage pair).
        dataset: the dataset whose fold the job works on.
        seed: the seed of training (``None`` for ``rerank`` and ``encode``).
        training: the variant's resolved training block: the shared settings and its own.
            Each rule keeps only the keys that change its output.
        scoring: the dataset's scoring protocol, for a train job that selects its epoch on dev.
    """

    variant: str
    base: str | None = None
    max_length: int = Field(ge=1)
    dataset: str
    seed: int | None = None
    training: dict[str, Any]
    scoring: dict[str, Any] | None = None

    def cell(self) -> Cell:
        """The grid cell this job belongs to (without its seed part)."""
        return Cell(self.dataset, self.variant, self.max_length)

    def resolved(self, run: RunOptions | None = None) -> dict[str, Any]:
        """The resolved-cell mapping that the training and inference code reads, with the
        run options that change no model (the inference batch) put back into ``training``."""
        cell = self.model_dump(mode="json", exclude_none=True)
        if run is not None and run.eval_batch_size:
            cell["training"] = {**cell["training"], "eval_batch_size": run.eval_batch_size}
        return cell


class RunOptions(BaseModel):
    """How a model job runs, never what it makes: changing one re-runs nothing.

    The rules pass these as command-line options (``--threads``, ``--gpu-slots``, ...);
    :func:`reranklab.cli._options.run_options` reads them into this model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    threads: int = Field(0, ge=0)
    eval_batch_size: int | None = Field(None, ge=1)
    gpu_slots: int = Field(1, ge=1)
    gpu_share: int | None = Field(None, ge=1)
    checkpoint_dir: Path | None = None

    def lease(self, ddp: bool = False) -> dict[str, int | None]:
        """The GPU slots the job leases (``gpu_binding``'s arguments): its share of one GPU,
        or whole GPUs (always for a DDP job).

        Example:
            >>> RunOptions(gpu_slots=4, gpu_share=1).lease(), RunOptions(gpu_share=1).lease(ddp=True)
            ({'slots': 4, 'share': 1}, {'slots': 1, 'share': None})
        """
        return {"slots": self.gpu_slots, "share": None if ddp else self.gpu_share}


class ScoringSpec(JobSpec):
    """``evaluate`` and ``aggregate``: the dataset's whole scoring definition."""

    scoring: dict[str, Any]


class RecordSpec(JobSpec):
    """``track`` and ``track-seeds``: a summary row's full resolved settings, as MLflow records
    them (a first-stage row has no ``max_length`` and no ``training``)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    study: str
    dataset: str
    variant: str
    seed: int
    max_length: int | None = None
    seeds: list[int] | None = None


class SummaryCell(JobSpec):
    """One row of the summary: where its metrics are and what ``regress`` matches it by."""

    dataset: str
    variant: str
    max_length: int | None = None
    metrics_path: str
    study: str
    paper: str | None = None
    claims: list[str] | None = None  # the paper's claims the study grades (paper.claims)
    # the questions scored where they are not the test questions (protocol.<dataset>.scored)
    scored: Literal["dev"] | None = None
    encoder: str | None = None
    epochs: int | None = None
    base: str | None = None  # an alias's registered variant (variants.<alias>.base)


class SummarySpec(JobSpec):
    """``summarize``: every row of the study (first stages first), its title and the tests."""

    cells: list[SummaryCell]
    title: str
    significance: dict[str, Any] | None = None
    # dataset -> its first stage's record (first_stage.json of the retrieve step).
    first_stages: dict[str, str] = {}
