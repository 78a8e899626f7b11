"""The registry of first-stage backends: a ``retrieval.backend`` name to its :class:`Retriever`.

Apart from :mod:`~reranklab.retrieval.base` so that the interface does not import its
implementations (each backend module imports the interface).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.errors import ConfigError
from reranklab.retrieval.base import Retriever


def get_backend(settings: Mapping[str, Any]) -> Retriever:
    """The backend ``settings["backend"]`` names (default ``bm25s``), built with ``settings``.

    Raises:
        ConfigError: an unknown backend name.

    Example:
        >>> type(get_backend({"backend": "bm25s", "k1": 0.9, "b": 0.4})).__name__
        'Bm25sRetriever'
        >>> get_backend({"backend": "lucene"})
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: retrieval.backend: unknown backend 'lucene' (known: bm25s, elasticsearch)
    """
    # Imported here: bm25s loads only when a backend is used.
    from reranklab.retrieval.bm25s_backend import Bm25sRetriever
    from reranklab.retrieval.es_backend import ElasticsearchRetriever  # the client loads lazily

    backends: dict[str, type[Retriever]] = {
        "bm25s": Bm25sRetriever,
        "elasticsearch": ElasticsearchRetriever,
    }
    name = settings.get("backend", "bm25s")
    try:
        return backends[name](settings)
    except KeyError:
        raise ConfigError(
            f"retrieval.backend: unknown backend {name!r} (known: {', '.join(backends)})"
        ) from None
