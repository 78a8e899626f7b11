"""The first stage: BM25 backends behind one interface, the dataset's own pools, injection."""

from reranklab.retrieval.backends import get_backend
from reranklab.retrieval.base import Retriever
from reranklab.retrieval.candidates import (
    first_stage_record,
    inject_relevant,
    pool_candidates,
    recall_at_depth,
)

__all__ = [
    "Retriever",
    "first_stage_record",
    "get_backend",
    "inject_relevant",
    "pool_candidates",
    "recall_at_depth",
]
