"""What the static-word-vector variants (QA-LSTM, K-NRM) read: where their word vectors come from.

Not a variant itself (the leading underscore keeps the registry from importing it as one); kept
apart from :mod:`reranklab.models.word_model` so that loading the registry imports no torch.
"""

from __future__ import annotations

from pydantic import Field

from reranklab.settings.variant import VariantSettings


class WordVectorSettings(VariantSettings):
    """The word vectors of a static-word-vector variant (not fixed by the papers: the shared
    ``training.embeddings_path`` applies)."""

    embeddings_path: str | None = Field(
        None,
        description="a GloVe / word2vec text file (optionally .gz) of static word vectors; null = the encoder's input word-piece embedding matrix, used as static vectors (a deviation from the papers, which use word vectors)",
    )
