"""The variant registry: each re-ranker variant registers a :class:`VariantSpec` by name.

The DAG, the training loop and the evaluation only ever look variants up here, so adding a
variant is adding a module to :mod:`reranklab.models.variants` (every module there is imported
by :func:`_load_builtin`, which makes it register itself). No variant name appears in the
trainer, the inference or the workflow.

Hook contract (what the trainer and the inference call; every hook but ``build`` is optional
and its default is the plain cross-encoder's behaviour):

``build(encoder, training, max_length) -> model``
    A fresh, trainable model. ``training`` is the resolved training block of the cell
    (schema defaults < ``training`` < the paper's ``settings`` < ``variants.<name>``); a variant
    reads its own settings typed, ``MySettings.from_training(training)``. Whatever the
    featurizer needs at inference time (e.g. ``query_max_length``, ``chunks``) must be read
    here and kept on the model, because re-ranking only gets the saved model.
``loss(model, training) -> nn.Module``
    Its ``forward(batch)`` takes a batch of the collator of ``example_kind`` and returns a
    scalar: point-wise ``{"features": inputs, "labels": [B]}``, triplet
    ``{"positive": inputs, "negative": inputs}``, where ``inputs`` is what
    ``PairFeatures.batch`` returns (so the loss calls ``model(**inputs)``).
``featurize(model, id_pairs, queries, corpus, *, progress=True) -> PairFeatures``
    Turns ``(qid, pid)`` pairs (duplicates allowed) into model inputs, once per job, the same
    way in training (before the first step, model in train mode, already on its device) and
    re-ranking (loaded model, eval mode). It may preprocess texts (marking), make several
    sequences per pair (chunks), compute and cache frozen-encoder features, or build
    word-level inputs. Default (``None``):
    :func:`reranklab.features.featurize.token_features`, ``[CLS] q [SEP] p [SEP]`` with the
    model's tokenizer at ``model.max_length`` (honouring ``model.inputs["query_max_length"]``).
    The result follows :class:`reranklab.features.types.PairFeatures`:
    ``len(f)`` distinct pairs; ``f[qid, pid]`` their row; ``f.lengths`` (``[n]`` ints, a pair's
    cost, for length grouping and length-sorted inference); ``f.batch(rows,
    pad_to_multiple_of=None)`` the model inputs of those rows, a dict of tensors with first
    dimension ``len(rows)``; ``f.summary()`` a flat dict of counts for ``train_stats.json``.
``load(directory, device=None) -> model``
    Restores a model written by ``model.save(directory)``, in eval mode. Default (``None``):
    :func:`reranklab.models.reranker.load_reranker`. :func:`load_model` picks the loader from
    the ``variant`` recorded in the directory's ``reranker.json``.
``fine_tunes(training) -> bool``
    Whether a cell with these settings trains at all (default: always). A model that ranks
    as it is built (a pre-trained bi-encoder, zero-shot) returns False: its train step then
    runs no step and saves the built model, so it still goes through train and rerank.
``encode(model, id_pairs, queries, corpus, out_dir, *, device="cpu", progress=True) -> dict``
    Only for variants on a frozen encoder whose features are precomputed (the lite variants):
    runs the frozen encoder once over one fold's training pairs and test candidates and
    writes what the model reads into ``out_dir`` (atomically); returns a description of what
    it wrote. ``reranklab encode`` (rule ``encode``, ``gpu=1``) calls it with a freshly built
    model; the rules make ``train`` and ``rerank`` depend on that directory only for
    variants that have this hook (:attr:`VariantSpec.needs_cache`), and the trainer and the
    inference then call ``featurize(..., frozen_features=out_dir)``: such a featurizer takes
    that extra keyword (``None`` = no cache; it must then compute what is missing itself).

The model itself is an ``nn.Module`` with ``variant`` (its registered name), ``device``,
``forward(**inputs)`` (logits ``[B, k]``), ``score(inputs)`` (ranking scores ``[B]``, higher =
more relevant) and ``save(directory)``, which writes ``reranker.json`` with at least
``{"variant": name}`` (:func:`reranklab.models.saved.variant_meta`).

Aliases: a study may name a second configuration of a registered variant (``variants:
{bertsel_epoch5: {base: bertsel, epochs: 5}}``, resolved by :func:`reranklab.config.resolve_variant`).
Its resolved cell names the alias as ``variant`` and the registered variant as ``base``;
:func:`cell_spec` gives a job the spec to call. A model trained for an alias records the base as
its ``variant`` (which loads it) and the alias as ``alias`` (which its card names).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reranklab.errors import ConfigError
from reranklab.settings.variant import VariantSettings

ExampleKind = Literal["pointwise", "triplet"]
# The ``encoder`` of a summary row whose model reads a static word-vector file (GloVe, say), and
# the ``model`` of a published number measured so (studies/published.yaml: QA-LSTM, K-NRM).
STATIC_WORD_VECTORS = "word-vectors"


@dataclass(frozen=True)
class VariantSpec:
    """A registered re-ranker variant.

    Args:
        name: the name used in ``params.yaml: grid.variant``.
        example_kind: which sampled examples it trains on: ``pointwise`` (qid, pid, label)
            or ``triplet`` (qid, positive pid, negative pid).
        description: one line for ``reranklab variants`` and the report.
        build: ``build(encoder, training, max_length)`` returns a fresh, trainable model.
        settings: the variant's settings class (its own settings and the paper's values of
            shared ones, :class:`~reranklab.settings.variant.VariantSettings`); its preset
            (:attr:`defaults`) wins over the user's ``training`` block, ``variants.<name>``
            over it.
        loss: ``loss(model, training)`` returns the training loss, an ``nn.Module`` whose
            ``forward(batch)`` takes a batch of the collator of ``example_kind`` and returns
            a scalar (see :mod:`reranklab.models.losses`).
        featurize: ``featurize(model, id_pairs, queries, corpus, *, progress)`` returns the
            model inputs of the pairs (a ``PairFeatures``); ``None`` = tokenised
            ``[CLS] q [SEP] p [SEP]`` pairs (see the module docstring).
        load: ``load(directory, device=None)`` restores a saved model; ``None`` =
            :func:`reranklab.models.reranker.load_reranker`.
        encode: ``encode(model, id_pairs, queries, corpus, out_dir, *, device, progress)``
            writes a fold's frozen-encoder features (see the module docstring); ``None`` = the
            variant needs no precomputed features.
        reads_collection: its training featurizer reads every passage of the collection (e.g.
            to build a vocabulary), so the training job loads the whole corpus; otherwise jobs
            load only the passages their pairs name.
        fine_tunes: ``fine_tunes(training)``: whether a cell with these settings is trained;
            ``None`` = always (see the module docstring).
        cross_encoder: a pre-trained encoder reads the question and the passage together and
            is fine-tuned (BERT[PW], monoBERT, BERT-DMN, ...): such a cell must rank above its
            first stage to count as learned; any other trained model (a head on a frozen
            encoder, word vectors trained from scratch, a bi-encoder) above a random ordering
            (:mod:`reranklab.grading.learned`).
    """

    name: str
    example_kind: ExampleKind
    description: str
    build: Callable[..., Any]
    settings: type[VariantSettings] = VariantSettings
    loss: Callable[..., Any] | None = None
    featurize: Callable[..., Any] | None = None
    load: Callable[..., Any] | None = None
    encode: Callable[..., Any] | None = None
    reads_collection: bool = False
    fine_tunes: Callable[[Mapping[str, Any]], bool] | None = None
    cross_encoder: bool = False

    @property
    def defaults(self) -> dict[str, Any]:
        """The paper's settings (the preset layer of :func:`reranklab.config.resolve_training`).

        Example:
            >>> get_variant("knrm").defaults
            {'learning_rate': 0.001, 'weight_decay': 0.0, 'warmup_ratio': 0.0, 'margin': 1.0}
        """
        return self.settings.preset()

    @property
    def needs_cache(self) -> bool:
        """Whether training and re-ranking read a frozen-feature cache made by ``reranklab encode``."""
        return self.encode is not None

    def featurize_options(self, frozen_features: str | Path | None = None) -> dict[str, Any]:
        """Extra keyword arguments of the featurize call: the fold's frozen-feature cache, if any.

        Raises:
            ConfigError: a cache is given to a variant that reads none.

        Example:
            >>> get_variant("pointwise").featurize_options(None)
            {}
        """
        if frozen_features is None:
            return {}
        if not self.needs_cache:
            raise ConfigError(
                f"variant {self.name!r} reads no frozen-feature cache (got {frozen_features})"
            )
        return {"frozen_features": frozen_features}

    def representations(self, training: Mapping[str, Any]) -> str:
        """What a cell's text representations come from, as its summary row names it
        (``encoder``; :mod:`reranklab.grading.regress` matches a published entry's ``model`` to
        it): the encoder, or :data:`STATIC_WORD_VECTORS` for a static-word-vector variant
        (QA-LSTM, K-NRM) given a vector file (``training.embeddings_path``). Without one such a
        variant reads the encoder's word-piece embeddings, so the encoder is named.

        Example:
            >>> get_variant("qa_lstm").representations({"encoder": "bert-base-uncased", "embeddings_path": "glove.txt"})
            'word-vectors'
            >>> get_variant("pointwise").representations({"encoder": "bert-base-uncased", "embeddings_path": "glove.txt"})
            'bert-base-uncased'
        """
        reads_vectors = "embeddings_path" in self.settings.model_fields
        if reads_vectors and training.get("embeddings_path"):
            return STATIC_WORD_VECTORS
        return str(training["encoder"])

    def trains(self, training: Mapping[str, Any]) -> bool:
        """Whether a cell with the resolved ``training`` settings runs training steps.

        Example:
            >>> get_variant("pointwise").trains({}), get_variant("biencoder_zeroshot").trains({})
            (True, False)
        """
        return True if self.fine_tunes is None else bool(self.fine_tunes(training))

    def featurizer(self) -> Callable[..., Any]:
        """The featurize hook, or the default token-pair featurizer."""
        if self.featurize is not None:
            return self.featurize
        from reranklab.features.featurize import token_features

        return token_features

    def loader(self) -> Callable[..., Any]:
        """The load hook, or :func:`reranklab.models.reranker.load_reranker`."""
        if self.load is not None:
            return self.load
        from reranklab.models.reranker import load_reranker

        return load_reranker


_VARIANTS: dict[str, VariantSpec] = {}
_LOADED = False


def register_variant(spec: VariantSpec) -> VariantSpec:
    if spec.name in _VARIANTS:
        raise ValueError(f"variant {spec.name!r} registered twice")
    _VARIANTS[spec.name] = spec
    return spec


def get_variant(name: str) -> VariantSpec:
    _load_builtin()
    try:
        return _VARIANTS[name]
    except KeyError:
        raise ConfigError(
            f"unknown variant {name!r}; known variants: {', '.join(sorted(_VARIANTS))}"
        ) from None


def variant_names() -> list[str]:
    _load_builtin()
    return sorted(_VARIANTS)


def cross_encoders() -> dict[str, bool]:
    """Whether each registered variant is a fine-tuned cross-encoder (``VariantSpec.cross_encoder``).

    Example:
        >>> known = cross_encoders()
        >>> known["monobert"], known["dmn"], known["dmn_lite"], known["knrm"]
        (True, True, False, False)
    """
    _load_builtin()
    return {name: spec.cross_encoder for name, spec in sorted(_VARIANTS.items())}


def cell_spec(cell: Mapping[str, Any]) -> VariantSpec:
    """The registered variant a resolved cell's job builds, trains and featurizes with: its
    ``base`` when the cell is an alias's (:func:`reranklab.config.resolve_variant`), else its
    ``variant``.

    Example:
        >>> cell_spec({"variant": "bertsel_epoch5", "base": "bertsel"}).name, cell_spec({"variant": "dmn"}).name
        ('bertsel', 'dmn')
    """
    return get_variant(str(cell.get("base") or cell["variant"]))


def alias_of_cell(cell: Mapping[str, Any]) -> str | None:
    """The alias a resolved cell is of, ``None`` for a registered variant's cell (for the model's
    ``alias``, :func:`reranklab.models.saved.variant_meta`).

    Example:
        >>> alias_of_cell({"variant": "bertsel_epoch5", "base": "bertsel"}), alias_of_cell({"variant": "dmn"})
        ('bertsel_epoch5', None)
    """
    return str(cell["variant"]) if cell.get("base") else None


def load_model(directory: str | Path, device: Any = None) -> Any:
    """Restore the model saved in ``directory`` with its variant's ``load`` hook.

    Args:
        directory: a model directory written by ``model.save`` (holds ``reranker.json``).
        device: where to put it (default: CPU).

    Example:
        >>> import tempfile
        >>> from reranklab.models.chunked import ChunkedReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = ChunkedReranker(*tiny_encoder(["who"]), variant="chunked", num_outputs=1, score="logit",
        ...     max_length=16, inputs={"chunks": 2, "chunk_length": 16}).save(tempfile.mkdtemp())
        >>> model = load_model(saved)
        >>> model.variant, type(model).__name__
        ('chunked', 'ChunkedReranker')
    """
    from reranklab.errors import FormatError
    from reranklab.io.json_io import read_json

    meta_path = Path(directory) / "reranker.json"
    if not meta_path.is_file():
        raise FormatError(meta_path, None, "not a saved re-ranker (reranker.json is missing)")
    meta = read_json(meta_path)
    variant = meta.get("variant")
    if not isinstance(variant, str):
        raise FormatError(meta_path, None, "no variant name recorded")
    model = get_variant(variant).loader()(directory, device=device)
    if isinstance(meta.get("alias"), str):  # trained for an alias: saved again, it keeps it
        model.alias = meta["alias"]
    return model


def _load_builtin() -> None:
    # Importing every module of reranklab.models.variants registers it (modules whose name starts
    # with "_" are helpers, not variants).
    global _LOADED
    if _LOADED:
        return
    # Set first: a variant module may look another variant up while it is being imported.
    _LOADED = True
    # Found by path, not by importing the package: the variant modules import this registry,
    # and the registry depends on none of them (the import graph has no cycle).
    package = f"{__name__.rpartition('.')[0]}.variants"
    try:
        for module in pkgutil.iter_modules([str(Path(__file__).parent / "variants")]):
            if not module.name.startswith("_"):
                importlib.import_module(f"{package}.{module.name}")
    except BaseException:
        _LOADED = False
        raise
