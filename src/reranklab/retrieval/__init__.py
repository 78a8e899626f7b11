"""The first stage: BM25 backends behind one interface, the dataset's own pools, injection."""

from reranklab.retrieval.base import Retriever, get_backend
from reranklab.retrieval.candidates import inject_relevant, pool_candidates

__all__ = ["Retriever", "get_backend", "inject_relevant", "pool_candidates"]
