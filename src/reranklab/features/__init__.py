"""Featurisation: (query, passage) pairs to padded model inputs, shared by models and training.

The modules import one way only (kept by the import-linter contracts in ``pyproject.toml``)::

    featurize   the default featurize hook: (qid, pid) pairs -> PairIndex
      -> cache      content-addressed cache of tokenised pairs (the model step's scope)
        -> tokenize   text pairs -> EncodedPairs (query cut, passage truncation)
    batch       collators, length-grouped sampling, device moves
    types       EncodedPairs, PairFeatures, KeyedPairs, PairIndex (every module above imports it)

Nothing here imports :mod:`reranklab.models` or :mod:`reranklab.training`; both import this.
"""
