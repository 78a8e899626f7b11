"""Re-ranker models: encoders, the cross-encoder, its losses and the registered variants.

This package stays import-light on purpose: :mod:`reranklab.config` imports the registry to
validate variant names, and that must not pull in torch or transformers. Import the heavy
modules directly (``reranklab.models.reranker``, ``reranklab.models.encoder``, ...).
"""

from reranklab.models.registry import VariantSpec, get_variant, register_variant, variant_names

__all__ = ["VariantSpec", "get_variant", "register_variant", "variant_names"]
