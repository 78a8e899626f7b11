"""What the subcommands share: the options several steps take (``--spec``, ``--threads``, the
GPU lease), the typed run options, and the help texts of the common paths.

Every step adds its job spec with one call to :func:`add_spec` and reads it as ``args.spec``,
typed (:mod:`reranklab.settings.job`).
"""

from __future__ import annotations

import argparse

from reranklab.errors import ReranklabError
from reranklab.settings.job import JobSpec, RunOptions

THREADS = "CPU threads (0 = all available)"
FOLD = "the fold's index in --folds (0-based)"
FOLDS = "folds.json of the dataset (the split step's output)"
QUERIES = "queries.tsv of the dataset (qid, text; the prepare step's output)"
QRELS = "qrels.txt of the dataset (TREC relevance judgements; the prepare step's output)"
CORPUS = "corpus.parquet of the dataset (pid, text; the prepare step's output)"
CANDIDATES = "the first-stage run: candidates per query (the retrieve step's output)"
EXAMPLES = "the fold's training examples (pointwise.parquet or triplets.parquet; sample's output)"
DATASET = "a registered dataset name (reranklab datasets lists them)"
MIRROR = "local mirror folder of the raw files (wins over env RERANKLAB_MIRROR)"
CONFIG_MIRROR = (
    "the study's data.mirror (what the workflow passes; env RERANKLAB_MIRROR wins over it)"
)
FROZEN = "the fold's cache of reranklab encode (lite variants; may be empty)"
TRACKING = "MLflow tracking URI (e.g. sqlite:///results/mlflow.db)"
EXPERIMENT = "MLflow experiment name (the study's)"


# The inputs several steps read, by option name: each is a required path, but --fold (an index).
INPUTS = {
    "dataset": DATASET,
    "examples": EXAMPLES,
    "candidates": CANDIDATES,
    "qrels": QRELS,
    "folds": FOLDS,
    "queries": QUERIES,
    "corpus": CORPUS,
    "fold": FOLD,
    "tracking-uri": TRACKING,
    "experiment": EXPERIMENT,
}


def add_inputs(parser: argparse.ArgumentParser, *names: str) -> None:
    """The required options ``--<name>`` of :data:`INPUTS`, in the order given, with their help.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_inputs(parser, "qrels", "fold")
        >>> parser.parse_args(["--qrels", "q.txt", "--fold", "1"])
        Namespace(qrels='q.txt', fold=1)
    """
    for name in names:
        kind = {"type": int} if name == "fold" else {}
        parser.add_argument(f"--{name}", required=True, help=INPUTS[name], **kind)


def add_spec(parser: argparse.ArgumentParser, model: type[JobSpec], required: bool = True) -> None:
    """``--spec``: the job's typed spec (:mod:`reranklab.settings.job`), JSON or ``@file.json``.

    Read into ``args.spec`` as an instance of ``model``; a bad spec is one error line naming
    the key (:meth:`~reranklab.settings.job.JobSpec.parse`).
    """

    def parse(text: str) -> JobSpec:
        # argparse turns only its own error type into a usage error (one line, exit 2).
        try:
            return model.parse(text)
        except ReranklabError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument(
        "--spec",
        type=parse,
        required=required,
        help=f"the job's {model.__name__} as JSON, or @file.json (what its Snakemake rule passes)",
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    """How a model job runs (its command-line options), typed: never part of its spec."""
    values = {
        "threads": getattr(args, "threads", 0),
        "eval_batch_size": getattr(args, "eval_batch_size", None),
        "gpu_slots": getattr(args, "gpu_slots", 1),
        "gpu_share": getattr(args, "gpu_share", 0) or None,
        "checkpoint_dir": getattr(args, "checkpoint_dir", None),
    }
    return RunOptions(**values)


def add_threads(parser: argparse.ArgumentParser) -> None:
    """``--threads``: how the job runs (the rule's threads), not a setting."""
    parser.add_argument("--threads", type=int, default=0, help=THREADS)


def add_gpu_lease(parser: argparse.ArgumentParser) -> None:
    """``--gpu-slots`` and ``--gpu-share``: the GPU slots a model job leases."""
    parser.add_argument(
        "--gpu-slots",
        type=int,
        default=1,
        help="slots each GPU is split into (training.gpu_slots; default 1)",
    )
    parser.add_argument(
        "--gpu-share",
        type=int,
        default=0,
        help="slots of one GPU this job leases (training.gpu_share); 0 = a whole GPU",
    )
