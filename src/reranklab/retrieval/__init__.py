"""The first stage: BM25 backends behind one interface, the dataset's own pools, injection."""

from reranklab.retrieval.backends import get_backend
from reranklab.retrieval.base import Retriever
from reranklab.retrieval.candidates import inject_relevant, pool_candidates

__all__ = ["Retriever", "get_backend", "inject_relevant", "pool_candidates"]
