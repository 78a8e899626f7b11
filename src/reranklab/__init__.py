"""reranklab: BERT passage re-ranking studies for (non-factoid) QA, from raw data to results."""

__version__ = "0.1.0"
