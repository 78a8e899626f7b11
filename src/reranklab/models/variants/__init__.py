"""Registered re-ranker variants, one module each.

A variant module registers a :class:`~reranklab.models.registry.VariantSpec`: the examples it
trains on (``pointwise`` or ``triplet``), how to build its model and its loss, and the paper's
training settings, and optionally how pairs become model inputs (``featurize``) and how a
saved model is restored (``load``); see :mod:`reranklab.models.registry` for the contract.
The training loop picks the collator from ``example_kind`` and never names a variant, so a
new variant is a new module here: :func:`reranklab.models.registry._load_builtin` imports
every module of this package whose name does not start with ``_``.

Variant modules import torch/transformers lazily (inside ``build`` and ``loss``) so that
validating a config, which imports the registry, stays fast.
"""
